#!/bin/sh
# Builds the Linux guest that `make bench-net` measures beside microScope:
# Debian's own kernel (package linux-image-amd64) and an initramfs of
# busybox-static running `busybox httpd`, serving the same small file.
#   <out>/vmlinuz          the kernel: /boot/vmlinuz-* when linux-image-amd64 is
#                          installed, else taken from the package that
#                          `apt-get download` fetches (nothing is installed)
#   <out>/initramfs.cpio.gz  busybox, the NIC modules, /init, /www
# Usage: build.sh <out dir> <small file>   (cached: rebuilt only when missing)
set -eu
out=$1
small=$2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
[ -s "$out/vmlinuz" ] && [ -s "$out/initramfs.cpio.gz" ] && exit 0

if [ ! -x /bin/busybox ] || ! /bin/busybox --list | grep -qx httpd; then
	echo "linux-guest: needs busybox-static (make deps installs it)" >&2
	exit 1
fi

# The kernel package linux-image-amd64 depends on (linux-image-<version>-amd64).
package=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/ {print $2; exit}')
[ -n "$package" ] || { echo "linux-guest: apt knows no linux-image-amd64" >&2; exit 1; }
version=${package#linux-image-}
tree=$out/kernel-tree
if [ -s "/boot/vmlinuz-$version" ] && [ -d "/lib/modules/$version" ]; then
	mkdir -p "$tree/boot" "$tree/lib/modules"
	cp "/boot/vmlinuz-$version" "$tree/boot/"
	cp -R "/lib/modules/$version" "$tree/lib/modules/"
else
	rm -rf "$tree" "$out/deb" && mkdir -p "$tree" "$out/deb"
	(cd "$out/deb" && apt-get download "$package" >/dev/null 2>&1) || {
		echo "linux-guest: apt-get download $package failed" >&2
		exit 1
	}
	dpkg-deb -x "$out"/deb/*.deb "$tree"
	rm -rf "$out/deb"
fi

root=$out/initramfs
rm -rf "$root"
mkdir -p "$root/bin" "$root/proc" "$root/sys" "$root/dev" "$root/www" "$root/modules"
cp /bin/busybox "$root/bin/busybox"
cp "$here/init" "$root/init"
chmod 755 "$root/init"
cp "$small" "$root/www/small.txt"
# The NIC drivers are modules in Debian's kernel; /init loads them in this order.
for module in virtio/virtio_ring virtio/virtio virtio/virtio_pci_legacy_dev \
	virtio/virtio_pci_modern_dev virtio/virtio_pci net/core/failover net/net_failover \
	net/virtio_net net/ethernet/intel/e1000/e1000; do
	found=$(find "$tree/lib/modules/$version/kernel" -path "*/$module.ko*" | head -n 1)
	[ -n "$found" ] && cp "$found" "$root/modules/"
done
cp "$tree/boot/vmlinuz-$version" "$out/vmlinuz.tmp"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet) | gzip -9 >"$out/initramfs.tmp"
rm -rf "$tree"
mv "$out/initramfs.tmp" "$out/initramfs.cpio.gz"
mv "$out/vmlinuz.tmp" "$out/vmlinuz"
echo "linux-guest: $package with busybox httpd in $out"
