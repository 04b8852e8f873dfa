#!/bin/sh
# Unpacks lwIP from Debian's source package into $1 (build/lwip), once: when
# $1/src/core/tcp.c exists nothing is fetched.  `apt-get source` needs a
# deb-src line for the archive the machine already uses; as root this adds one
# (/etc/apt/sources.list.d/microscope-src.sources, a copy of the deb entries
# with Types: deb-src) and runs apt-get update once; not root, it prints the
# command instead.  The kernel's port files live in modules/net/, never here.
set -eu
out=$1
[ -f "$out/src/core/tcp.c" ] && exit 0

srcs=/etc/apt/sources.list.d/microscope-src.sources
add_deb_src() {
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && [ "$f" != "$srcs" ] || continue
		sed -n '/^Types:.*\bdeb\b/,/^$/p' "$f" | sed 's/^Types:.*/Types: deb-src/'
		echo
	done >"$srcs.tmp"
	if [ -f /etc/apt/sources.list ]; then
		grep -E '^deb ' /etc/apt/sources.list | sed 's/^deb /deb-src /' \
			>/etc/apt/sources.list.d/microscope-src.list || true
	fi
	mv "$srcs.tmp" "$srcs"
	apt-get update -qq >/dev/null
}

if ! apt-cache showsrc lwip >/dev/null 2>&1 || [ -z "$(apt-cache showsrc lwip 2>/dev/null)" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "fetch-lwip: apt has no deb-src line for lwip; as root run:"
		echo "  sh $0 $out"
		exit 1
	fi
	echo "  DEPS   adding deb-src lines ($srcs)"
	add_deb_src
fi

tmp=$out.tmp
rm -rf "$tmp" && mkdir -p "$tmp"
(cd "$tmp" && apt-get source -qq lwip >fetch.log 2>&1) ||
	{ cat "$tmp/fetch.log"; echo "fetch-lwip: apt-get source lwip failed"; exit 1; }
dir=$(find "$tmp" -mindepth 1 -maxdepth 1 -type d -name 'lwip-*' | head -n 1)
[ -n "$dir" ] && [ -f "$dir/src/core/tcp.c" ] || { echo "fetch-lwip: no lwip-*/src in $tmp"; exit 1; }
rm -rf "$out"
mv "$dir" "$out"
rm -rf "$tmp"
echo "  LWIP   $(basename "$dir") in $out"
