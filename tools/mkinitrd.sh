#!/bin/sh
# Builds the initial RAM disk: a newc cpio archive of
#   /sbin/init, /bin/<every other program>  (debug information stripped)
#   userland/rootfs/*                         (/etc/rc, text files, /www, ...)
#   /www/1mib.txt                             (generated: httpd's large test file)
#   /www/explorer/*                           ($EXPLORER_WWW: the Latency Explorer)
#   /aspects/*.o                              (the aspect objects of the build,
#                                             and those $EXTRA_ASPECTS names:
#                                             make run ASPECTS="a.o ...")
#   /fuzz/                                    ($FUZZ_CORPUS: the crash corpus,
#                                             replayed by sysfuzz as init)
#   /tmp                                      (an empty directory, mode 1777; /dev is
#                                             devfs, mounted by the kernel)
# Usage: mkinitrd.sh <out.cpio> <staging dir> <rootfs dir> <program>...
# Names in the archive are relative ("bin/sh"), owner root, as Linux's are.
set -eu
out=$1
stage=$2
rootfs=$3
shift 3
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/sbin" "$stage/aspects" "$stage/tmp"
chmod 1777 "$stage/tmp" # every user may make files there, only owners remove them
cp -R "$rootfs"/. "$stage"/
# httpd's large test file: 1 MiB, generated here (never committed); every line
# differs, so a block lost, repeated or reordered in transit shows.
mkdir -p "$stage/www"
seq -f '%015.0f microScope httpd test data' 1 40000 | head -c 1048576 >"$stage/www/1mib.txt"
# The Latency Explorer's page and charting library ($EXPLORER_WWW, from the
# build), served by httpd at /explorer.
if [ -n "${EXPLORER_WWW:-}" ] && [ -d "$EXPLORER_WWW" ]; then
	mkdir -p "$stage/www/explorer"
	cp "$EXPLORER_WWW"/* "$stage/www/explorer/"
fi
# The aspect objects the build made next to the archive ($(BUILD)/aspects/*.o).
for object in "$(dirname "$out")"/aspects/*.o; do
	[ -e "$object" ] && cp "$object" "$stage/aspects/"
done
# Objects built on the host: each must be an x86_64 relocatable ELF object.
for object in ${EXTRA_ASPECTS:-}; do
	if ! od -An -tx1 -N18 "$object" | tr -d ' \n' | grep -q '^7f454c46020101.*0100$'; then
		echo "mkinitrd: $object is not an ELF64 relocatable object" >&2
		exit 1
	fi
	cp "$object" "$stage/aspects/"
done
if [ -n "${FUZZ_CORPUS:-}" ]; then
	mkdir -p "$stage/fuzz"
	cp -R "$FUZZ_CORPUS"/. "$stage/fuzz/"
fi
for program in "$@"; do
	name=$(basename "$program")
	dir=bin
	[ "$name" = init ] && dir=sbin
	strip --strip-debug -o "$stage/$dir/$name" "$program"
	chmod 755 "$stage/$dir/$name"
done
tmp=$out.tmp
(cd "$stage" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort |
	cpio -o -H newc -R 0:0 --quiet) >"$tmp"
mv "$tmp" "$out"
