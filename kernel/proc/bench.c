/*
 * proc_bench: what process operations cost, measured from user space by the
 * built-in test program (testprog.S, mode B) with RDTSC, so that under QEMU
 * -icount shift=0 the figures are guest instructions.  Cases: a getpid
 * round trip (SYSCALL to SYSRET, the empty loop subtracted), fork + exit +
 * wait of a child, and fork + execve + exit + wait, the child running the
 * same program from /tmp/testprog, which this file writes into the RAM file
 * system first.  tests/bench.py boots with "proc_bench exit=qemu" and reads
 * the "proc_bench: case" lines.
 */
#include "boot/cmdline.h"
#include "console/console.h"
#include "lib/errno.h"
#include "power/power.h"
#include "proc/internal.h"
#include "vfs/vfs.h"

#define BENCH_PROGRAM "/tmp/testprog"

static bool bench_requested;

static int set_proc_bench(const char *value)
{
	(void)value;
	bench_requested = true;
	return 0;
}
KERNEL_PARAM(proc_bench, set_proc_bench, "measure syscall, fork and exec costs, print them, stop");

static int write_program(void)
{
	size_t size;
	const void *image = proc_get_test_image(&size);
	struct vfs_file *file;
	vfs_mkdir("/tmp", 0755);
	int error = vfs_open(BENCH_PROGRAM, VFS_O_WRONLY | VFS_O_CREAT | VFS_O_TRUNC, 0755, &file);
	if (error)
		return error;
	int64_t written = vfs_write(file, image, size);
	vfs_close(file);
	return written == (int64_t)size ? 0 : -EIO;
}

static void run_bench(void)
{
	int error = write_program(), status = -1;
	char *argv[] = {BENCH_PROGRAM, "B", NULL};
	if (error) {
		pr_err("proc_bench: cannot write %s (error %d)\n", BENCH_PROGRAM, error);
		return;
	}
	int pid = proc_spawn(BENCH_PROGRAM, argv, NULL);
	if (pid < 0 || proc_wait(pid, &status, 0) != pid || status != 0)
		pr_err("proc_bench: the benchmark program failed (pid %d, status %#x)\n", pid,
		       status);
}

bool proc_bench_run_if_requested(void)
{
	if (!bench_requested)
		return false;
	run_bench();
	power_stop(POWER_REQUESTED);
}
