#!/bin/bash
# rdmans answers -h and --help on every object with that object's usage and
# exit 0, wherever the flag stands among its arguments; a bad flag is still a
# usage error (exit 2). The objects are those `rdmans help` lists, so a new
# one is covered when it is documented. The man pages name no source-tree
# path and each names the others in SEE ALSO. No root: nothing is run.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
R=${RDMANS_BUILD_DIR:?}/src/cli/rdmans
tap_require_exec "$R"

objects=$("$R" help | awk '/^  [a-z]/ { print $1 }' | sort -u)
vm_check "rdmans help lists the objects" test "$(echo "$objects" | wc -l)" -ge 11
for o in $objects; do
	for flag in --help -h; do
		rc=0
		out=$(timeout 10 "$R" "$o" "$flag" 2>&1) || rc=$?
		vm_check "rdmans $o $flag: exit 0" vm_expect_eq 0 "$rc" "exit status ($out)"
		vm_check "rdmans $o $flag: its own usage, no other object's" sh -c \
			'printf "%s\n" "$1" | grep -q "^  $2 " && ! printf "%s\n" "$1" | grep -E "^  [a-z]" | grep -qv "^  $2 "' \
			_ "$out" "$o"
	done
done
# after other arguments, as in `rdmans ping 10.0.0.1 --help`
rc=0
out=$(timeout 10 "$R" ping 10.0.0.1 --count 3 --help 2>&1) || rc=$?
vm_check "rdmans ping ADDRESS --count 3 --help: exit 0" vm_expect_eq 0 "$rc"
vm_check "  the usage, not '--help needs a value'" vm_expect_contains "$out" "ping ADDRESS"
rc=0
out=$(timeout 10 "$R" env --no-such-flag 2>&1) || rc=$?
vm_check "rdmans env --no-such-flag: still a usage error (exit 2)" vm_expect_eq 2 "$rc"
rc=0
timeout 10 "$R" --help >/dev/null 2>&1 || rc=$?
vm_check "rdmans --help: exit 0" vm_expect_eq 0 "$rc"

# the manuals meson installs: they name no file of this source tree (an installed
# page has none to point at), and each names every other in SEE ALSO
pages=$(cd "$here/../../man" && ls ./*.8 | sed 's|^\./||; s|\.8$||')
vm_check "the man pages are there" test "$(echo "$pages" | wc -l)" -ge 6
for p in $pages; do
	f=$here/../../man/$p.8
	vm_check "$p(8) names no source-tree path" vm_expect_eq "" \
		"$(grep -noE '(^|[ (])(deploy|tests|src|tools|examples|cni-conf|bench|include)/[A-Za-z]' "$f")" "lines"
	vm_check "$p(8) has a SEE ALSO naming every other page" sh -c '
		see=$(sed -n "/^\.SH SEE ALSO/,/^\.SH/p" "$1")
		shift
		for o in "$@"; do printf "%s" "$see" | grep -q "$o" || { echo "no $o"; exit 1; }; done' \
		_ "$f" $(echo "$pages" | grep -vx "$p")
done
vm_done
