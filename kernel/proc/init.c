/*
 * Start-up of the process layer: the user fault handler, and the first
 * process.  init is whatever init= names (default /sbin/init), started with
 * argv = {path} and an environment naming the console; when it cannot be
 * started (no initial RAM filesystem, no such program) the kernel says so
 * and stays up without it.  Nothing takes over from init: when it ends, a
 * kernel thread that waited for it reports its status and stops the machine
 * (with exit=qemu, QEMU exits with 33 for status 0, else 35: how usertests
 * run as init report to the test runner).
 */
#include "boot/cmdline.h"
#include "console/console.h"
#include "lib/string.h"
#include "power/power.h"
#include "proc/internal.h"

#define INIT_PATH_MAX 128

static char init_path[INIT_PATH_MAX] = "/sbin/init";

static int set_init_path(const char *value)
{
	if (!value || value[0] != '/' || strlen(value) >= sizeof init_path)
		return -1;
	strlcpy(init_path, value, sizeof init_path);
	return 0;
}
KERNEL_PARAM(init, set_init_path, "/path: the first program (default /sbin/init)");

void proc_init(void)
{
	proc_setup_faults();
}

/* Waits for init to end, says how, and stops. */
static int wait_for_init(void *arg)
{
	int pid = (int)(intptr_t)arg, status = -1;
	if (proc_wait(pid, &status, 0) != pid)
		return -1;
	if (status & 0x7f)
		pr_warn("proc: init (pid %d) killed by signal %d; stopping\n", pid, status & 0x7f);
	else
		pr_info("proc: init (pid %d) exited with status %d; stopping\n", pid,
			(status >> 8) & 0xff);
	power_stop(status == 0 ? POWER_TESTS_PASSED : POWER_TESTS_FAILED);
}

/* Watches init until it ends; detached, so that its stack goes back once
 * it has (nobody joins it). */
static void start_init_watch(int pid)
{
	struct thread *watch = thread_create(wait_for_init, (void *)(intptr_t)pid, "init-watch",
					     SCHED_PRIORITY_NORMAL);
	if (watch)
		thread_detach(watch);
	else
		pr_warn("proc: no thread to watch init; its end will go unnoticed\n");
}

int proc_start_init(void)
{
	proc_bench_run_if_requested();
	char *argv[] = {init_path, NULL};
	char *envp[] = {"PATH=/bin:/sbin", "HOME=/", "TERM=dumb", NULL};
	int pid = proc_spawn(init_path, argv, envp);
	if (pid < 0)
		pr_warn("proc: cannot start %s (error %d)%s; staying up without it\n", init_path,
			pid, pid == -2 ? ": no initial RAM filesystem or no such program" : "");
	else
		pr_info("proc: started %s as pid %d\n", init_path, pid);
	if (pid > 0)
		start_init_watch(pid);
	return pid;
}
