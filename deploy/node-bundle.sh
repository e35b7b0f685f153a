#!/bin/sh
# Makes the node tree: the binaries deploy/node-install.sh puts on hosts,
# with the dynamic loader and every library they load, so that they run on
# any x86_64 Linux whatever its libc and libraries (or none at all).
#
#   node-bundle.sh --prefix HOSTPREFIX --out DIR [--dlopen LIB]...
#                  [--machine M --loader LD [--libdir LIBDIR] [--strip STRIP]] BINARY...
#
# DIR (under $DESTDIR; meson install runs this with -Dnode_bundle=true) gets
#   bin/BINARY...       PT_INTERP HOSTPREFIX/lib-ID/LD (ld-linux-x86-64.so.2),
#                       DT_RPATH HOSTPREFIX/lib-ID (patchelf)
#   lib-ID/             the loader and libraries of this build's system, and
#                       those of each --dlopen LIB (libcurl for the etcd store)
#   prefix              HOSTPREFIX, for node-install.sh
#   machine             M, `uname -m` of the hosts it runs on (x86_64)
# A cross build (the binaries for another machine) gives LIBDIR, that
# machine's library directory (/usr/lib/aarch64-linux-gnu): ldd would run the
# binaries' own loader, so their DT_NEEDED are followed with readelf there;
# STRIP is that machine's strip.
# ID is a hash of the libraries: a new set gets a new directory, so an
# upgrade never changes a file a running plugin has mapped, and a binary
# never meets a loader and libc from different builds.
# Why not static: Debian ships no libmnl.a, and its libcurl.a needs
# Kerberos, LDAP, RTMP, SSH and PSL archives it does not ship either.
set -eu
prefix='' out='' dlopen='' machine=x86_64 loader=ld-linux-x86-64.so.2 libdir='' strip=strip
while [ $# -gt 0 ]; do
	case $1 in
	--prefix) prefix=$2 && shift 2 ;;
	--out) out=$2 && shift 2 ;;
	--dlopen) dlopen="$dlopen $2" && shift 2 ;;
	--machine) machine=$2 && shift 2 ;;
	--loader) loader=$2 && shift 2 ;;
	--libdir) libdir=$2 && shift 2 ;;
	--strip) strip=$2 && shift 2 ;;
	*) break ;;
	esac
done
case $prefix in /*) ;; *) echo "node-bundle: --prefix must be absolute, got '$prefix'" >&2 && exit 2 ;; esac
[ -n "$out" ] && [ $# -gt 0 ] || { echo "usage: node-bundle.sh --prefix P --out DIR [--dlopen LIB]... BINARY..." >&2 && exit 2; }
command -v patchelf >/dev/null || { echo "node-bundle: patchelf is needed (apt-get install patchelf)" >&2 && exit 1; }
out=${DESTDIR:-}$out
tmp=$out.new
rm -rf "$tmp"
mkdir -p "$tmp/bin" "$tmp/lib"

for f in "$@" $dlopen; do
	[ -e "$f" ] || { echo "node-bundle: $f does not exist" >&2 && exit 1; }
done
# needed FILE...: "NAME PATH" for each library FILE... need, transitively,
# found in $libdir (a cross build)
needed() {
	seen=''
	while [ $# -gt 0 ]; do
		for n in $(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
			case " $seen " in *" $n "*) continue ;; esac
			[ -e "$libdir/$n" ] || { echo "node-bundle: $n, which $1 needs, is not in $libdir" >&2 && return 1; }
			seen="$seen $n"
			echo "$n $libdir/$n"
			set -- "$@" "$libdir/$n"
		done
		shift
	done
}
if [ -n "$libdir" ]; then
	needed "$@" $dlopen >"$tmp/needed"
else
	# "NAME => PATH (addr)", "PATH (addr)" (the loader) or "NAME (addr)" (vdso)
	for f in "$@" $dlopen; do
		ldd "$f" || { echo "node-bundle: ldd $f failed" >&2 && exit 1; }
	done >"$tmp/ldd"
	if grep -q 'not found' "$tmp/ldd"; then
		echo "node-bundle: unresolved libraries:" >&2 && grep 'not found' "$tmp/ldd" >&2 && exit 1
	fi
	awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 } $1 ~ /^\// { print $1, $1 }' "$tmp/ldd" >"$tmp/needed"
	rm "$tmp/ldd"
fi
sort -u "$tmp/needed" | while read -r name path; do
	cp -L "$path" "$tmp/lib/${name##*/}"
done
rm "$tmp/needed"
for f in $dlopen; do
	cp -L "$f" "$tmp/lib/${f##*/}"
done
[ -e "$tmp/lib/$loader" ] || { echo "node-bundle: no $loader among the libraries" >&2 && exit 1; }
chmod 0755 "$tmp"/lib/*
id=$(cd "$tmp/lib" && ls | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-12)
mv "$tmp/lib" "$tmp/lib-$id"
for f in "$@"; do
	b=$tmp/bin/${f##*/}
	cp "$f" "$b"
	"$strip" --strip-unneeded "$b" 2>/dev/null || true
	patchelf --set-interpreter "$prefix/lib-$id/$loader" --force-rpath --set-rpath "$prefix/lib-$id" "$b"
	chmod 0755 "$b"
done
echo "$prefix" >"$tmp/prefix"
echo "$machine" >"$tmp/machine"
rm -rf "$out"
mv "$tmp" "$out"
echo "node tree ($machine): $out (bin: $(ls "$out/bin" | tr '\n' ' '); lib-$id: $(ls "$out/lib-$id" | wc -l) files, $(du -sh "$out" | cut -f1))"
