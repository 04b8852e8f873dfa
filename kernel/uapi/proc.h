/*
 * Processes as user space sees them: limits, signal numbers, wait4 status
 * words, and the snapshots ps and top read (ms_getprocs, ms_getcpus);
 * kernel/proc/proc.h is the kernel side.  Plain declarations.
 */
#ifndef UAPI_PROC_H
#define UAPI_PROC_H

#include <stdint.h>

#define PROC_NAME_MAX 32    /* the program's name, as ps shows it */
#define PROC_MAX      64    /* processes that may exist at once (fork: -EAGAIN) */
#define PROC_ARG_MAX  65536 /* bytes of argv and envp strings for execve (-E2BIG) */

/* Signals: Linux's numbers; each has its default action only. */
#define SIGINT  2
#define SIGILL  4
#define SIGTRAP 5
#define SIGFPE  8
#define SIGKILL 9
#define SIGSEGV 11
#define SIGPIPE 13
#define SIGTERM 15
#define SIGCHLD 17

/* wait4 status words, as Linux encodes them: an exit code, or a signal. */
#define PROC_STATUS_EXITED(code)  (((code)&0xff) << 8)
#define PROC_STATUS_SIGNALED(sig) ((sig)&0x7f)
#define WNOHANG                   1

enum proc_state {
	PROC_EMBRYO,  /* being created by fork or spawn */
	PROC_RUNNING, /* its thread runs, sleeps or waits */
	PROC_ZOMBIE,  /* ended; the parent has not waited for it yet */
};

/* A snapshot of one process for ps (sys ms_getprocs). */
struct proc_info {
	int32_t pid;
	int32_t parent_pid;
	int32_t state; /* enum proc_state */
	int32_t exit_status;
	uint64_t pages; /* user pages mapped */
	char name[PROC_NAME_MAX];
	int32_t cpu;     /* the CPU it runs or last ran on; -1 before it first ran */
	uint32_t flags;  /* PROC_INFO_* */
	uint64_t cpu_ns; /* time on a CPU so far (at its end, for a zombie) */
};
#define PROC_INFO_MONITOR 1u /* a monitor process: may run on monitor CPUs */
/* One CPU's statistics for top (sys ms_getcpus). */
struct proc_cpu_info {
	uint32_t index;           /* dense CPU index */
	uint32_t flags;           /* PROC_CPU_* */
	uint64_t busy_ns;         /* running threads other than the idle thread */
	uint64_t idle_ns;         /* running its idle thread */
	uint64_t irq_ns;          /* in interrupt handlers (part of the two above) */
	uint64_t context_switches;
	uint64_t interrupts;
};
#define PROC_CPU_MONITORS 1u /* reserved for monitors */

#endif
