/*
 * bindbench: runs the bindings benchmark (the kernel's `bindbench` command,
 * linker/bench.c) as init, so that the monitor process can be started:
 * `init=/bin/bindbench monitor_cpus=1 exit=qemu` on two CPUs.  Exits 0 when
 * the command succeeded.
 */
#include <stdio.h>

#include <microscope/syscall.h>

int main(void)
{
	long result = ms_syscall3(__NR_ms_kshell, (long)"bindbench", 0, 0);
	if (result < 0)
		printf("bindbench: error %ld\n", result);
	return result < 0;
}
