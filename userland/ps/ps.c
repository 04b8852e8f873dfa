/*
 * ps: one line per process (pid, parent, state: running, runnable,
 * sleeping, stopped or zombie; what a sleeping one waits on (its wait
 * channel: tty, pipe, wait4, nanosleep, accept, poll, ...); process group,
 * session, the CPU it runs or last ran on, its CPU time, user pages, name;
 * an M after the CPU marks a monitor process; with -f, the command line
 * instead of the name), from the kernel's process list
 * (the ms_getprocs system call, struct proc_info_wait of uapi/proc.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "uapi/proc.h"
#include <microscope/syscall.h>

#define MAX_SHOWN 128

static long get_processes(struct proc_info_wait *info, int count)
{
	return ms_syscall3(__NR_ms_getprocs, (long)info, count, sizeof *info);
}

/* The state a user asks about: what the process's thread is doing. */
static const char *state_name(const struct proc_info *p)
{
	if (p->state == PROC_EMBRYO)
		return "new";
	if (p->state == PROC_ZOMBIE)
		return "zombie";
	switch (p->run_state) {
	case PROC_RUN_ON_CPU: return "running";
	case PROC_RUN_RUNNABLE: return "runnable";
	case PROC_RUN_SLEEPING: return "sleeping";
	case PROC_RUN_STOPPED: return "stopped";
	default: return "?";
	}
}

/* -f: the command line (as exec got it) in place of the name. */
static int full_command;

static void print_process(const struct proc_info_wait *w)
{
	const struct proc_info *p = &w->info;
	char cpu[16] = "-", channel[PROC_WAIT_CHANNEL_MAX + 1] = "-";
	if (p->cpu >= 0)
		snprintf(cpu, sizeof cpu, "%d%s", p->cpu, p->flags & PROC_INFO_MONITOR ? "M" : "");
	if (w->wait_channel[0])
		snprintf(channel, sizeof channel, "%.*s", PROC_WAIT_CHANNEL_MAX, w->wait_channel);
	unsigned long ms = (unsigned long)(p->cpu_ns / 1000000);
	printf("%5d %5d %-8s %-10s %5d %5d %3s %5lu.%03lu %6lu %s\n", p->pid, p->parent_pid,
	       state_name(p), channel, p->pgid, p->sid, cpu, ms / 1000, ms % 1000,
	       (unsigned long)p->pages, full_command && w->args[0] ? w->args : p->name);
}

int main(int argc, char **argv)
{
	static struct proc_info_wait info[MAX_SHOWN];
	if (argc == 2 && strcmp(argv[1], "-f") == 0) {
		full_command = 1;
	} else if (argc != 1) {
		fprintf(stderr, "usage: ps [-f]   (-f: each process's command line)\n");
		return 2;
	}
	long total = get_processes(info, MAX_SHOWN);
	if (total < 0) {
		fprintf(stderr, "ps: %s\n",
			total == -38 ? "not supported yet" : strerror((int)-total));
		return 1;
	}
	printf("  PID  PPID STATE    WAIT        PGID   SID CPU      TIME  PAGES %s\n",
	       full_command ? "COMMAND" : "NAME");
	for (long i = 0; i < total && i < MAX_SHOWN; i++)
		print_process(&info[i]);
	if (total > MAX_SHOWN)
		printf("(%ld more)\n", total - MAX_SHOWN);
	return 0;
}
