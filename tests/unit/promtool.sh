#!/bin/bash
# TAP: `promtool check metrics` (Debian's prometheus package) accepts the
# exporter's text for a fake sysfs tree (prom-sample). Without promtool the
# test reports SKIP, never a pass.
set -u
sample=$1
if ! command -v promtool >/dev/null; then
	echo "1..0 # SKIP promtool not installed (apt-get install prometheus)"
	exit 0
fi
echo "1..2"
out=$("$sample") || { echo "not ok 1 - prom-sample renders"; echo "not ok 2 - promtool check metrics # not run"; exit 1; }
echo "ok 1 - prom-sample renders ($(printf '%s\n' "$out" | grep -vc '^#') samples)"
if res=$(printf '%s\n' "$out" | promtool check metrics 2>&1); then
	echo "ok 2 - promtool check metrics accepts it"
else
	echo "not ok 2 - promtool check metrics accepts it"
	printf '%s\n' "$res" | sed 's/^/# /'
	exit 1
fi
