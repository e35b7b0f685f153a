# shellcheck shell=bash
# Debian sid through a private apt dir: the host's apt setup is untouched.
# SID_SUITE names another suite (trixie) for a dir of its own.
# Sourced by tests/vm/prepare.sh (the current world), tools/fetch-protos.sh and
# tools/kubectl.sh.
# Needs SID (the cache dir that holds apt/) and the functions log, die, need_root.

sid_apt_opts() {
	echo "-o Dir::Etc::sourcelist=$SID/apt/sources.list -o Dir::Etc::sourceparts=-" \
		"-o Dir::State::Lists=$SID/apt/lists -o Dir::Cache=$SID/apt/cache" \
		"-o Dir::State::status=$SID/apt/status -o Acquire::Check-Valid-Until=false" \
		"-o APT::Sandbox::User=root"
}

# The mirror is the host's own (its debian.sources or sources.list), suite sid.
sid_mirror() {
	local m
	m=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)\/*$/\1/p' \
		/etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)
	[ -n "$m" ] || m=$(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]*\/debian\)\/*[[:space:]].*/\2/p' \
		/etc/apt/sources.list 2>/dev/null | head -n 1)
	[ -n "$m" ] || die "no Debian mirror in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list"
	echo "$m"
}

sid_lists() {
	[ -f "$SID/apt/.updated" ] && return 0
	need_root "fetching sid's package lists"
	mkdir -p "$SID/apt/lists/partial" "$SID/apt/cache/archives/partial"
	: >"$SID/apt/status"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $(sid_mirror) ${SID_SUITE:-sid} main" \
		>"$SID/apt/sources.list"
	log "fetching ${SID_SUITE:-sid}'s package lists"
	# shellcheck disable=SC2046
	apt-get $(sid_apt_opts) update -qq >&2 || die "apt-get update (sid, private lists) failed"
	touch "$SID/apt/.updated"
}

# sid_download DIR PKG...: the packages' .debs from sid into DIR (fresh lists and
# one more try when the lists name versions the archive no longer has)
sid_download() {
	local dir=$1
	shift
	sid_lists
	# shellcheck disable=SC2046
	(cd "$dir" && apt-get $(sid_apt_opts) download -q "$@" >&2) && return 0
	rm -f "$SID/apt/.updated"
	sid_lists
	# shellcheck disable=SC2046
	(cd "$dir" && apt-get $(sid_apt_opts) download -q "$@" >&2) ||
		die "apt-get download of $* from sid failed"
}
