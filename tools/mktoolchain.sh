#!/bin/sh
# Creates the freestanding x86_64-elf toolchain as thin wrappers around the host
# GCC and binutils.  The wrappers pin the target flags that must never differ
# between objects (no host headers, no host libraries, no PIE), so a stray
# host include cannot leak into the kernel or user programs.
set -eu
out=$1
mkdir -p "$out"
gccinc=$(gcc -print-file-name=include)

wrap() {
	name=$1
	shift
	printf '#!/bin/sh\nexec %s "$@"\n' "$*" >"$out/x86_64-elf-$name"
	chmod +x "$out/x86_64-elf-$name"
}

wrap gcc gcc -nostdinc -isystem "$gccinc" -ffreestanding -fno-pie -no-pie -nostdlib -m64
wrap ld ld -m elf_x86_64 -nostdlib -z noexecstack
for t in as ar nm objcopy objdump readelf strip addr2line; do
	wrap "$t" "$t"
done
