#!/bin/sh
# Builds newlib (libc.a, libm.a and headers) for microScope's user programs
# from Debian's newlib-source tarball, into $1 (build/newlib):
#   $1/bin/x86_64-elf-*          wrappers around the host gcc and binutils
#   $1/x86_64-elf/{include,lib}  the installed library
# The gcc wrapper drops the host's headers and libraries (-nostdinc,
# -nostdlib) and pins the user code model: static, not PIE, small code model,
# frame pointers kept (stack capture walks them); SSE stays allowed.
# newlib calls the system through plain names (read, write, sbrk, ...):
# userland/libc supplies them.  Nothing here is kept in git.
set -eu
out=$(mkdir -p "$1" && cd "$1" && pwd)
tarball=$(ls /usr/src/newlib/newlib-*.tar.* 2>/dev/null | head -n 1)
[ -n "$tarball" ] || { echo "mknewlib: no /usr/src/newlib/newlib-*.tar.* (make deps installs newlib-source)"; exit 1; }

mkdir -p "$out/bin"
gccinc=$(gcc -print-file-name=include)
cat >"$out/bin/x86_64-elf-gcc" <<WRAP
#!/bin/sh
exec gcc -nostdinc -isystem $gccinc -fno-pie -no-pie -nostdlib -static -m64 -mcmodel=small \\
	-fno-stack-protector -fno-omit-frame-pointer "\$@"
WRAP
for t in ar as ld nm ranlib objcopy objdump readelf strip; do
	printf '#!/bin/sh\nexec %s "$@"\n' "$t" >"$out/bin/x86_64-elf-$t"
done
chmod +x "$out"/bin/*

rm -rf "$out/src" "$out/obj" && mkdir -p "$out/src" "$out/obj"
tar -xf "$tarball" -C "$out/src"
src=$(ls -d "$out"/src/*/ | head -n 1)
log=$out/build.log
cd "$out/obj"
PATH=$out/bin:$PATH
export PATH
{
	"$src/configure" --target=x86_64-elf --prefix="$out" --disable-multilib --disable-nls \
		--disable-newlib-supplied-syscalls --enable-newlib-io-long-long \
		--enable-newlib-io-c99-formats \
		CFLAGS_FOR_TARGET="-O2 -g -fno-omit-frame-pointer -ffunction-sections -fdata-sections" &&
		make -j"$(nproc)" all-target-newlib && make install-target-newlib
} >"$log" 2>&1 || { tail -n 30 "$log"; echo "mknewlib: failed, full log in $log"; exit 1; }
rm -rf "$out/src" "$out/obj"
