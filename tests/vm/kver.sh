#!/bin/sh
# Prints the Debian kernel version the VM suite boots (e.g. 6.1.0-56-amd64):
# $RDMANS_VM_KVER if set, else what Debian's linux-image-amd64 depends on.
set -eu
if [ -n "${RDMANS_VM_KVER:-}" ]; then
	echo "$RDMANS_VM_KVER"
	exit 0
fi
apt-cache depends linux-image-amd64 2>/dev/null |
	sed -n 's/.*Depends: linux-image-\([0-9].*-amd64\)$/\1/p' | head -n 1 | grep . ||
	{ echo "kver.sh: cannot find linux-image-amd64's kernel; run 'apt-get update' first" >&2; exit 1; }
