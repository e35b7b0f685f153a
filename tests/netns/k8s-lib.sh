# shellcheck shell=bash
# A real Kubernetes API server for the kubernetes store's tests: Debian's
# k8s.io/apiextensions-apiserver (the custom-resource server kube-apiserver
# runs), built once and cached by tools/apiserver.sh, over sid's etcd, on
# loopback, with certificates made here. Source after ipam-lib.sh.
#   k8s_start              PKI, etcd (K8S_ETCD_MEMBERS members, default 1), the
#                          server, the CRD from deploy/ (K8S_URL, K8S_PID)
#   k8s_stop / k8s_restart the server alone (etcd keeps running)
#   k8s_kubeconfig F USER  a kubeconfig for client certificate USER (admin: system:masters;
#                          sa: the ServiceAccount deploy/rbac.yaml binds; node: no binding)
#   k8s_tokens LINE...     the bearer tokens the server accepts, from now on: lines
#                          "TOKEN USERNAME [GROUP,...]" (none before the first call)
#   k8s_curl ARGS...       curl as admin against $K8S_URL
#   k8s_requests           the server's count of requests on rdmaaddresses (its /metrics)

K8S_TOP=$(cd "${BASH_SOURCE[0]%/*}/../.." && pwd)
K8S_BIN=$("$K8S_TOP/tools/apiserver.sh") || vm_fail "no API server (tools/apiserver.sh failed)"
K8S_PKI=$IPAM_TMP/pki
# the authorizer reads it at each TokenReview: rewriting it revokes or adds tokens
K8S_TOKENS=$IPAM_TMP/tokens
K8S_PID=
K8S_ETCD_PID=
K8S_AUTHZ_PID=

k8s_cleanup() {
	local pid
	for pid in "$K8S_PID" "$K8S_ETCD_PID" "$K8S_AUTHZ_PID"; do
		[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done
	ipam_cleanup
}
trap k8s_cleanup EXIT

# k8s_cert NAME CN [O]: NAME.crt/NAME.key signed by the test CA (client certificate)
k8s_cert() {
	if ! openssl req -new -newkey rsa:2048 -nodes -keyout "$K8S_PKI/$1.key" -out "$K8S_PKI/$1.csr" \
		-subj "/CN=$2${3:+/O=$3}" 2>/dev/null ||
		! openssl x509 -req -in "$K8S_PKI/$1.csr" -CA "$K8S_PKI/ca.crt" -CAkey "$K8S_PKI/ca.key" \
			-CAcreateserial -days 2 -out "$K8S_PKI/$1.crt" ${4:+-extfile "$4"} 2>/dev/null; then
		vm_fail "openssl could not make certificate $1"
	fi
}

k8s_pki() {
	mkdir -p "$K8S_PKI"
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$K8S_PKI/ca.key" -out "$K8S_PKI/ca.crt" \
		-days 2 -subj "/CN=rdmans-test-ca" 2>/dev/null || vm_fail "openssl could not make a CA"
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$K8S_PKI/server.ext"
	k8s_cert server 127.0.0.1 "" "$K8S_PKI/server.ext"
	k8s_cert admin admin system:masters
	# the DaemonSet's ServiceAccount as deploy/rbac.yaml binds it, and a user no binding names
	k8s_cert sa system:serviceaccount:rdmans-system:rdmans system:serviceaccounts
	k8s_cert node system:node:node-x system:nodes
}

# k8s_kubeconfig FILE USER: YAML as kubectl writes it; the CA as a file, the
# client certificate and key inline (-data), as a ServiceAccount-less node has them
k8s_kubeconfig() {
	cat >"$1" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: test
		  cluster:
		    server: $K8S_URL
		    certificate-authority: $K8S_PKI/ca.crt
		users:
		- name: $2
		  user:
		    client-certificate-data: $(base64 -w0 <"$K8S_PKI/$2.crt")
		    client-key-data: $(base64 -w0 <"$K8S_PKI/$2.key")
		contexts:
		- name: test
		  context:
		    cluster: test
		    user: $2
		current-context: test
	EOF
}

k8s_tokens() {
	printf '%s\n' "$@" >"$K8S_TOKENS.new" && mv -f "$K8S_TOKENS.new" "$K8S_TOKENS"
}

k8s_curl() {
	curl -sS --max-time 10 --cacert "$K8S_PKI/ca.crt" --cert "$K8S_PKI/admin.crt" \
		--key "$K8S_PKI/admin.key" "$@"
}

k8s_server() {
	"$K8S_BIN/apiextensions-apiserver" --etcd-servers "$K8S_ETCD" --secure-port "$K8S_PORT" \
		--bind-address 127.0.0.1 --tls-cert-file "$K8S_PKI/server.crt" \
		--tls-private-key-file "$K8S_PKI/server.key" --client-ca-file "$K8S_PKI/ca.crt" \
		--authentication-skip-lookup --authentication-kubeconfig "$IPAM_TMP/authz.kubeconfig" \
		--authentication-token-webhook-cache-ttl 0s \
		--authorization-kubeconfig "$IPAM_TMP/authz.kubeconfig" \
		--kubeconfig "$IPAM_TMP/admin.kubeconfig" \
		--disable-admission-plugins NamespaceLifecycle,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,MutatingAdmissionPolicy,ValidatingAdmissionPolicy \
		>>"$IPAM_TMP/apiserver.log" 2>&1 &
	K8S_PID=$!
	local i
	# /healthz is "ok" once the CRD controllers run (/readyz never is: it waits on built-in types)
	for ((i = 0; i < 600; i++)); do
		if [ "$(k8s_curl --max-time 1 "$K8S_URL/healthz" 2>/dev/null)" = ok ]; then
			# a restarted server is healthy a moment before it serves the CRD it already has
			[ -z "${K8S_CRD_STATUS:-}" ] || k8s_crd_served && return 0
			break
		fi
		kill -0 "$K8S_PID" 2>/dev/null || break
		sleep 0.1
	done
	vm_diag "$(tail -5 "$IPAM_TMP/apiserver.log")"
	vm_fail "the API server did not become healthy"
}

# k8s_crd_served: waits (at most 30 s) until the server serves RdmaAddresses
k8s_crd_served() {
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(k8s_curl -o /dev/null -w '%{http_code}' "$K8S_URL/apis/rdmans.io/v1alpha1/rdmaaddresses")" = 200 ] &&
			return 0
		sleep 0.1
	done
	return 1
}

k8s_stop() {
	kill -9 "$K8S_PID" 2>/dev/null
	wait "$K8S_PID" 2>/dev/null
	K8S_PID=
}

k8s_restart() {
	k8s_stop
	k8s_server
}

k8s_start() {
	local i cport pport
	k8s_pki
	free_port
	cport=$PORT
	free_port
	pport=$PORT
	free_port
	K8S_PORT=$PORT
	K8S_URL=https://127.0.0.1:$K8S_PORT
	K8S_ETCD=http://127.0.0.1:$cport
	if [ "${K8S_ETCD_MEMBERS:-1}" -gt 1 ]; then
		# a cluster the server reaches through every member (ETCD_CLIENT, ETCD_PIDS)
		ETCD_BIN=$K8S_BIN/etcd etcd_cluster "$K8S_ETCD_MEMBERS"
		K8S_ETCD=$(IFS=,; echo "${ETCD_CLIENT[*]}")
	else
		"$K8S_BIN/etcd" --name k8s --data-dir "$IPAM_TMP/etcd-k8s" --listen-client-urls "$K8S_ETCD" \
			--advertise-client-urls "$K8S_ETCD" --listen-peer-urls "http://127.0.0.1:$pport" \
			--initial-advertise-peer-urls "http://127.0.0.1:$pport" \
			--initial-cluster "k8s=http://127.0.0.1:$pport" >"$IPAM_TMP/etcd-k8s.log" 2>&1 &
		K8S_ETCD_PID=$!
		for ((i = 0; i < 100; i++)); do
			curl -fsS --max-time 1 "$K8S_ETCD/health" 2>/dev/null | grep -q '"health":"true"' && break
			sleep 0.1
		done
	fi
	k8s_kubeconfig "$IPAM_TMP/admin.kubeconfig" admin
	# bearer tokens from $K8S_TOKENS and RBAC from deploy/rbac.yaml: the server asks
	# TokenReviews and SubjectAccessReviews of another server; client certificates it
	# checks itself (--client-ca-file). No token cache: a revoked token fails at once.
	free_port
	: >"$K8S_TOKENS"
	"$K8S_TOP/tests/netns/rbac-authorizer.py" "$PORT" --tokens "$K8S_TOKENS" "$K8S_TOP/deploy/rbac.yaml" \
		>"$IPAM_TMP/authz.log" 2>&1 &
	K8S_AUTHZ_PID=$!
	printf 'apiVersion: v1\nkind: Config\nclusters:\n- name: authz\n  cluster:\n    server: %s\n%s\n' \
		"http://127.0.0.1:$PORT" "contexts:
- name: authz
  context:
    cluster: authz
current-context: authz" >"$IPAM_TMP/authz.kubeconfig"
	k8s_server
	# the CRD as deploy/ ships it, through REST (this server serves no /api for kubectl)
	K8S_CRD_STATUS=$(k8s_curl -o "$IPAM_TMP/crd.json" -w '%{http_code}' -X POST \
		-H 'Content-Type: application/yaml' --data-binary @"$K8S_TOP/deploy/rdmaaddress-crd.yaml" \
		"$K8S_URL/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
	k8s_crd_served && return 0
	vm_diag "$(cat "$IPAM_TMP/crd.json")"
	vm_fail "the CRD was not served (create said $K8S_CRD_STATUS)"
}

# k8s_requests: how many requests on rdmaaddresses the server has answered, every verb
k8s_requests() {
	k8s_curl "$K8S_URL/metrics" | awk '/^apiserver_request_total\{/ && /resource="rdmaaddresses"/ { n += $NF } END { print n + 0 }'
}

# k8s_objects: the RdmaAddress objects, as JSON lines {address, pod, node, attachment}
k8s_objects() {
	k8s_curl "$K8S_URL/apis/rdmans.io/v1alpha1/rdmaaddresses" | jq -c '.items[].spec | {address, pod, node, attachment}'
}

# k8s_conf_of I: $CONF as client I sends it, posing as node-a (odd I) or node-b (even I);
# CONF's node_name must be node-a
k8s_conf_of() {
	local node=node-a
	[ $(($1 % 2)) = 0 ] && node="node-b"
	printf '%s' "${CONF/\"node_name\":\"node-a\"/\"node_name\":\"$node\"}"
}

# k8s_adds_start N: N ADDs at once from clients posing as two nodes (k8s_conf_of):
# containers parI, pods ns/pod-I; each one's "EXIT-STATUS RESULT" in $IPAM_TMP/par.I;
# K8S_JOBS their PIDs, to wait on
k8s_adds_start() {
	local i
	rm -f "$IPAM_TMP"/par.*
	K8S_JOBS=()
	for i in $(seq 1 "$1"); do
		(CONF=$(k8s_conf_of "$i")
		ipam_run ADD "par$i" net1 "ns/pod-$i"
		echo "$? $IPAM_OUT" >"$IPAM_TMP/par.$i") &
		K8S_JOBS+=($!)
	done
}
