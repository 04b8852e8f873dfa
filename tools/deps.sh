#!/bin/sh
# Installs what the build needs from Debian's packages, and nothing when all
# of it is already there.  Not root: prints the one command to run instead.
set -eu
pkgs="build-essential gcc binutils make python3 qemu-system-x86 grub-pc-bin
grub-efi-amd64-bin grub-common xorriso mtools ovmf cpio clang-format
console-setup-linux newlib-source curl wrk busybox-static clang libclang-rt-14-dev
babeltrace2 python3-bt2 prometheus e2fsprogs chromium"

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done
# Node.js and npm (the Latency Explorer's build and test): Debian's, unless a
# node with its own npm is already installed (nodejs packages that bundle
# npm conflict with Debian's npm package).
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
[ -z "$missing" ] && exit 0

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
	echo "microScope needs:$missing"
	echo "run:  sudo sh -c 'apt-get update && $cmd'"
	exit 1
fi
echo "  DEPS   installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends $missing >/dev/null
