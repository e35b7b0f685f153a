#!/bin/sh
# Run by the DaemonSet's init container with the host's paths mounted under
# /host: installs the CNI plugins, the OCI hook definition and a CDI spec on
# the node, and, when RDMANS_PERSIST_EXCLUSIVE=true, the modprobe.d option
# that makes ib_core start in exclusive netns mode at the next boot.
set -eu
host=${RDMANS_HOST_ROOT:-/host}
cni_bin=${RDMANS_CNI_BIN_DIR:-/opt/cni/bin}
src=/usr/lib/rdmans

install_file() { # install_file SRC DEST MODE: atomic, so a running kubelet never sees half a file
	mkdir -p "$(dirname "$2")"
	cp "$1" "$2.rdmans-new"
	chmod "$3" "$2.rdmans-new"
	mv -f "$2.rdmans-new" "$2"
	echo "installed $2"
}

install_file "$src/cni/rdma-netns" "$host$cni_bin/rdma-netns" 0755
install_file "$src/cni/rdma-netns-ipam" "$host$cni_bin/rdma-netns-ipam" 0755
# The hook runs on the host, from the path its JSON names.
install_file /usr/libexec/rdmans/rdmans-hook "$host/usr/local/libexec/rdmans/rdmans-hook" 0755
for d in /etc/containers/oci/hooks.d /usr/share/containers/oci/hooks.d; do
	if [ -d "$host$d" ]; then
		sed 's|"path": *"[^"]*"|"path": "/usr/local/libexec/rdmans/rdmans-hook"|' \
			/usr/share/containers/oci/hooks.d/rdmans-hook.json >"$host$d/rdmans-hook.json.rdmans-new"
		mv -f "$host$d/rdmans-hook.json.rdmans-new" "$host$d/rdmans-hook.json"
		echo "installed $host$d/rdmans-hook.json"
	fi
done
# containerd has no hooks.d: CDI carries the device nodes, env and the hook.
mkdir -p "$host/etc/cdi"
/usr/sbin/rdmans cdi generate --hook /usr/local/libexec/rdmans/rdmans-hook \
	--output "$host/etc/cdi/rdmans.json.rdmans-new"
mv -f "$host/etc/cdi/rdmans.json.rdmans-new" "$host/etc/cdi/rdmans.json"
echo "installed $host/etc/cdi/rdmans.json"
if [ "${RDMANS_PERSIST_EXCLUSIVE:-false}" = true ]; then
	RDMANS_CONFIG_ROOT=$host /usr/sbin/rdmans system set netns exclusive --persist
fi
/usr/sbin/rdmans system || true
