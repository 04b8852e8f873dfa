/*
 * ps: one line per process (pid, parent, state, user pages, name), from the
 * kernel's process list (the ms_getprocs system call, struct proc_info of
 * proc/proc.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "proc/proc.h"
#include <microscope/syscall.h>

#define MAX_SHOWN 128

static long get_processes(struct proc_info *info, int count)
{
	return ms_syscall3(__NR_ms_getprocs, (long)info, count, 0);
}

static const char *state_name(int state)
{
	switch (state) {
	case PROC_EMBRYO: return "new";
	case PROC_RUNNING: return "run";
	case PROC_ZOMBIE: return "zombie";
	default: return "?";
	}
}

int main(void)
{
	static struct proc_info info[MAX_SHOWN];
	long total = get_processes(info, MAX_SHOWN);
	if (total < 0) {
		fprintf(stderr, "ps: %s\n",
			total == -38 ? "not supported yet" : strerror((int)-total));
		return 1;
	}
	printf("  PID  PPID STATE   PAGES NAME\n");
	for (long i = 0; i < total && i < MAX_SHOWN; i++)
		printf("%5d %5d %-6s %6lu %s\n", info[i].pid, info[i].parent_pid,
		       state_name(info[i].state), (unsigned long)info[i].pages, info[i].name);
	if (total > MAX_SHOWN)
		printf("(%ld more)\n", total - MAX_SHOWN);
	return 0;
}
