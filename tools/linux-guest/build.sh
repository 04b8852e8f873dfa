#!/bin/sh
# Builds the Linux guest that `make bench-net` and `make bench-storage`
# measure beside microScope: Debian's own kernel (package linux-image-amd64)
# and an initramfs with Debian's nginx (package nginx, its shared libraries
# taken from the host's Debian packages of the same release) serving the same
# files as microScope's httpd, with busybox-static for /init's shell and `ip`,
# and readbench (userland/readbench, built with the host's gcc) with the
# virtio-blk, NVMe and ext2 (ext4) modules for the storage bench.
#   <out>/vmlinuz            the kernel: /boot/vmlinuz-* when linux-image-amd64
#                            is installed, else taken from the package that
#                            `apt-get download` fetches (nothing is installed)
#   <out>/initramfs.cpio.gz  busybox, nginx and its libraries, the NIC and disk
#                            modules, readbench, /init, /www (small.txt, 1mib.txt)
# Usage: build.sh <out dir> <small file> <1 MiB file>
#        (cached: rebuilt only when missing or when this script changed)
set -eu
out=$1
small=$2
big=$3
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
readbench=$here/../../userland/readbench/readbench.c
stamp=$(cat "$here/build.sh" "$here/init" "$here/nginx.conf" "$readbench" | cksum | cut -d' ' -f1)
if [ -s "$out/vmlinuz" ] && [ -s "$out/initramfs.cpio.gz" ] && [ "$(cat "$out/stamp" 2>/dev/null)" = "$stamp" ]; then
	exit 0
fi

if [ ! -x /bin/busybox ] || ! /bin/busybox --list | grep -qx ip; then
	echo "linux-guest: needs busybox-static (make deps installs it)" >&2
	exit 1
fi

# download <package> <dir>: unpacks a Debian package without installing it.
download() {
	rm -rf "$out/deb" && mkdir -p "$out/deb" "$2"
	(cd "$out/deb" && apt-get download "$1" >/dev/null 2>&1) || {
		echo "linux-guest: apt-get download $1 failed" >&2
		exit 1
	}
	dpkg-deb -x "$out"/deb/*.deb "$2"
	rm -rf "$out/deb"
}

# The kernel package linux-image-amd64 depends on (linux-image-<version>-amd64).
package=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
[ -n "$package" ] || { echo "linux-guest: apt knows no linux-image-amd64" >&2; exit 1; }
version=${package#linux-image-}
tree=$out/kernel-tree
if [ -s "/boot/vmlinuz-$version" ] && [ -d "/lib/modules/$version" ]; then
	mkdir -p "$tree/boot" "$tree/lib/modules"
	cp "/boot/vmlinuz-$version" "$tree/boot/"
	cp -R "/lib/modules/$version" "$tree/lib/modules/"
elif [ ! -s "$tree/boot/vmlinuz-$version" ]; then
	rm -rf "$tree"
	download "$package" "$tree"
fi
[ -s "$out/nginx-tree/usr/sbin/nginx" ] || download nginx "$out/nginx-tree"

root=$out/initramfs
rm -rf "$root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/www" "$root/modules" \
	"$root/etc/nginx" "$root/var/log/nginx" "$root/var/lib/nginx" "$root/tmp" "$root/run"
cp /bin/busybox "$root/bin/busybox"
cp "$here/init" "$root/init"
chmod 755 "$root/init"
cp "$small" "$root/www/small.txt"
cp "$big" "$root/www/1mib.txt"
cp "$out/nginx-tree/usr/sbin/nginx" "$root/bin/nginx"
cp "$here/nginx.conf" "$root/etc/nginx/nginx.conf"
gcc -static -O2 -DREADBENCH_LINUX -o "$root/bin/readbench" "$readbench"
echo "root:x:0:0:root:/:/bin/sh" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"
# nginx's shared libraries, from the host's packages of the same Debian release.
for lib in $(ldd "$root/bin/nginx" | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
# The NIC and disk drivers (virtio-blk; NVMe with the checksums its
# integrity support needs) and ext4 (which mounts ext2) are modules in
# Debian's kernel; /init loads them in this order.
for module in virtio/virtio_ring virtio/virtio virtio/virtio_pci_legacy_dev \
	virtio/virtio_pci_modern_dev virtio/virtio_pci net/core/failover net/net_failover \
	net/virtio_net net/ethernet/intel/e1000/e1000 block/virtio_blk lib/crc16 fs/mbcache \
	jbd2/jbd2 crypto/crc32c_generic fs/ext4/ext4 crypto/crct10dif_common \
	crypto/crct10dif_generic lib/crc-t10dif lib/crc64 crypto/crc64_rocksoft_generic \
	lib/crc64-rocksoft block/t10-pi nvme/host/nvme-core nvme/host/nvme; do
	found=$(find "$tree/lib/modules/$version/kernel" -path "*/$module.ko*" | head -n 1)
	[ -n "$found" ] && cp "$found" "$root/modules/"
done
cp "$tree/boot/vmlinuz-$version" "$out/vmlinuz.tmp"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -9 >"$out/initramfs.tmp"
mv "$out/initramfs.tmp" "$out/initramfs.cpio.gz"
mv "$out/vmlinuz.tmp" "$out/vmlinuz"
echo "$stamp" >"$out/stamp"
echo "linux-guest: $package with nginx in $out"
