#!/bin/bash
# DEL converges: every input ADD refuses, run through ADD and then
# through DEL with the same input. ADD must fail; DEL must succeed and leave
# the node as it was, because a runtime whose DEL fails retries it forever
# (containerd#10507). Then the same for rdma-netns-ipam alone. And DEL with
# such input still refuses when a state file of that container and
# interface exists (an ADD with other input left something to undo).
# Root, veths on the host kernel. Every name here starts with "rndt".
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/cni-lib.sh"
IPAM=$RDMANS_BUILD_DIR/src/ipam/rdma-netns-ipam
cni_netns_start rndt "$IPAM"

cni_veth_pod rndt "$(jq -nc --arg d "$tmp/ri" '{type: "rdma-netns-ipam", range: "10.194.0.0/24", dataDir: $d}')"
snap() { cni_netns_snap rndt && cni_scratch_files state devinfo ri; }
baseline=$(snap)
long=$(printf 'c%.0s' $(seq 300))
huge=$(printf 'c%.0s' $(seq 1100))

# NAME|ENV (VAR=VALUE,..., VAR= unsets)|jq filter on the config
table=(
	"interface name '.'|CNI_IFNAME=.|."
	"interface name '..'|CNI_IFNAME=..|."
	"interface name with '/'|CNI_IFNAME=a/b|."
	"interface name with ':'|CNI_IFNAME=a:b|."
	"interface name of 16 bytes|CNI_IFNAME=abcdefghijklmnop|."
	"interface name with a space|CNI_IFNAME=a b|."
	"no CNI_IFNAME|CNI_IFNAME=|."
	"container ID with '/'|CNI_CONTAINERID=a/b|."
	"container ID starting with '-'|CNI_CONTAINERID=-x|."
	"container ID of 1100 bytes|CNI_CONTAINERID=$huge|."
	"no CNI_CONTAINERID|CNI_CONTAINERID=|."
	"relative CNI_NETNS|CNI_NETNS=run/netns/x|."
	"CNI_ARGS that is not K=V|CNI_ARGS=garbage|."
	"network name with '/'||.name = \"a/b\""
	"network name starting with '.'||.name = \".net\""
	"cniVersion 0.2.0||.cniVersion = \"0.2.0\""
	"cniVersion 9.9.9||.cniVersion = \"9.9.9\""
	"a config that is not JSON||\"{\""
	"a device that is no string||.device = 5"
	"a netns that does not exist|CNI_NETNS=/var/run/netns/rndt-nosuch|."
	"no such device||.device = \"rndt-nosuch\""
	"an IPAM range that is no CIDR||.ipam.range = \"10.1.2.3/99\""
)
bad=0
for row in "${table[@]}"; do
	IFS='|' read -r name envs filter <<<"$row"
	if [ "$filter" = '"{"' ]; then c='{'; else c=$(jq -c "$filter" <<<"$conf"); fi
	IFS=',' read -r -a vars <<<"$envs"
	cni_run ADD "$c" "${vars[@]}"
	if [ "$RC" = 0 ]; then
		vm_not_ok "$name: ADD is refused"
		cni_diag_run
		cni_run DEL "$c" "${vars[@]}"
		continue
	fi
	add_out=$OUT
	cni_run DEL "$c" "${vars[@]}"
	now=$(snap)
	if [ "$RC" = 0 ] && [ "$now" = "$baseline" ]; then
		vm_ok "$name: ADD refused ($(jq -r .code <<<"$add_out" 2>/dev/null)), DEL succeeds, nothing left"
	else
		vm_not_ok "$name: ADD refused, DEL succeeds, nothing left"
		vm_diag "ADD: $add_out"
		cni_diag_run
		[ "$now" = "$baseline" ] || vm_diag "$(diff <(echo "$baseline") <(echo "$now"))"
		bad=$((bad + 1))
	fi
done

# the refusal stands where something is left to undo: an ADD of this container and interface
cni_expect_ok "a good ADD" ADD "$conf"
cni_run DEL "$(jq -c '.cniVersion = "0.2.0"' <<<"$conf")"
vm_check "DEL with a refused cniVersion while this attachment's state exists still fails" test "$RC" != 0
cni_expect_ok "DEL with the ADD's input" DEL "$conf"
vm_check "the node is as before" vm_expect_eq "$baseline" "$(snap)"

# ---- rdma-netns-ipam alone ----
IPAM_CONF=$(jq -c '.ipam.range = "10.195.0.0/24"' <<<"$conf")
ipam() { # ipam CMD [VAR=VALUE...]: as cni_run, the plugin alone with IPAM_CONF
	local kv k
	local -A e=([CNI_COMMAND]=$1 [CNI_CONTAINERID]=rndt-c1 [CNI_IFNAME]=net1
		[CNI_NETNS]=/var/run/netns/none [CNI_PATH]=/nonexistent
		[CNI_ARGS]="K8S_POD_NAMESPACE=ns;K8S_POD_NAME=a")
	local -a args=(-u CNI_COMMAND -u CNI_CONTAINERID -u CNI_NETNS -u CNI_IFNAME -u CNI_PATH -u CNI_ARGS)
	for kv in "${@:2}"; do e[${kv%%=*}]=${kv#*=}; done
	for k in "${!e[@]}"; do [ -z "${e[$k]}" ] || args+=("$k=${e[$k]}"); done
	RC=0
	OUT=$(env "${args[@]}" "$IPAM" <<<"$IPAM_CONF" 2>"$tmp/ipam.err") || RC=$?
}
for row in "no CNI_IFNAME|CNI_IFNAME=" "no CNI_CONTAINERID|CNI_CONTAINERID=" \
	"CNI_ARGS that is not K=V|CNI_ARGS=garbage" "a 300-byte container ID and no pod|CNI_CONTAINERID=$long,CNI_ARGS=IgnoreUnknown=1"; do
	IFS='|' read -r name envs <<<"$row"
	IFS=',' read -r -a vars <<<"$envs"
	ipam ADD "${vars[@]}"
	add_rc=$RC add_out=$OUT
	ipam DEL "${vars[@]}"
	if [ "$add_rc" != 0 ] && [ "$RC" = 0 ] && [ "$(snap)" = "$baseline" ]; then
		vm_ok "rdma-netns-ipam, $name: ADD refused, DEL succeeds, nothing left"
	else
		vm_not_ok "rdma-netns-ipam, $name: ADD refused, DEL succeeds, nothing left"
		vm_diag "ADD exit $add_rc: $add_out; DEL exit $RC: $OUT"
	fi
done
vm_done
