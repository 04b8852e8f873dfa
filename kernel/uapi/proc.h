/*
 * Processes as user space sees them: limits, signal numbers, wait4 status
 * words, and the snapshots ps and top read (ms_getprocs, ms_getcpus);
 * kernel/proc/proc.h is the kernel side.  Plain declarations.
 */
#ifndef UAPI_PROC_H
#define UAPI_PROC_H

#include <stdint.h>

#define PROC_NAME_MAX      32    /* the program's name, as ps shows it */
#define PROC_MAX           64    /* processes that may exist at once (fork: -EAGAIN) */
#define PROC_ROOT_RESERVED 8     /* of those, the last ones only a process of euid 0 may make */
#define USER_PROC_MAX      18    /* processes of one real uid other than 0 (its fork: -EAGAIN) */
#define PROC_ARG_MAX       65536 /* bytes of argv and envp strings for execve (-E2BIG) */
/* The bytes of kernel memory a user other than root may hold at once in
 * endpoints (ms_ipc_create: -ENOMEM past it, some 46 of capacity 64) and
 * pipes (pipe: -ENFILE past it, some 63) together. */
#define USER_KMEM_BYTES_MAX (1UL << 20)

/* Signals: Linux's numbers, 1 to 31 (no real-time signals).  Each has its
 * default action (end, stop, continue or nothing) unless the process set
 * it to be ignored (rt_sigaction with SIG_IGN) or gave it a handler (Linux's
 * x86_64 ABI: struct sigaction with SA_RESTORER, the rt_sigframe, and
 * rt_sigreturn); the mask (rt_sigprocmask) holds blocked ones pending. */
#define SIGHUP       1
#define SIGINT       2
#define SIGQUIT      3
#define SIGILL       4
#define SIGTRAP      5
#define SIGBUS       7 /* a mapped file could not give the page touched */
#define SIGFPE       8
#define SIGKILL      9
#define SIGSEGV      11
#define SIGPIPE      13
#define SIGTERM      15
#define SIGUSR1      10
#define SIGUSR2      12
#define SIGALRM      14
#define SIGCHLD      17
#define SIGCONT      18 /* continues a stopped process; otherwise nothing */
#define SIGSTOP      19 /* stops; cannot be ignored */
#define SIGTSTP      20 /* stops: ^Z at the console */
#define SIGTTIN      21 /* stops: a background group read its terminal */
#define SIGTTOU      22
#define PROC_SIGNALS 32 /* signal numbers are 1 .. PROC_SIGNALS - 1 */
/* wait4 status words, as Linux encodes them: an exit code, or a signal. */
#define PROC_STATUS_EXITED(code)  (((code)&0xff) << 8)
#define PROC_STATUS_SIGNALED(sig) ((sig)&0x7f)
#define PROC_STATUS_STOPPED(sig)  ((((sig)&0xff) << 8) | 0x7f)
#define WNOHANG                   1
#define WUNTRACED                 2 /* also report children that stopped */

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
	int32_t cpu;       /* the CPU it runs or last ran on; -1 before it first ran */
	uint32_t flags;    /* PROC_INFO_* */
	uint64_t cpu_ns;   /* time on a CPU so far (at its end, for a zombie) */
	int32_t pgid;      /* process group */
	int32_t sid;       /* session */
	int32_t run_state; /* enum proc_run_state, for a RUNNING process */
	uint32_t reserved;
};
/* What a live process's thread is doing (proc_info.run_state). */
enum proc_run_state {
	PROC_RUN_NONE,     /* not started, or ended */
	PROC_RUN_ON_CPU,   /* running on a CPU */
	PROC_RUN_RUNNABLE, /* ready, waiting for a CPU */
	PROC_RUN_SLEEPING, /* waiting for an event (input, a child, a timer, ...) */
	PROC_RUN_STOPPED,  /* stopped by a signal, until SIGCONT or a signal that ends it */
};
#define PROC_INFO_MONITOR 1u /* a monitor process: may run on monitor CPUs */
/* ms_getprocs's third argument is the size of one entry: 0 or
 * sizeof(struct proc_info) for proc_info alone (the first layout, kept for
 * programs built before), sizeof(struct proc_info_wait) for it followed by
 * the wait channel.  Any other size is -EINVAL. */
#define PROC_WAIT_CHANNEL_MAX 16
#define PROC_ARGS_MAX         64
struct proc_info_wait {
	struct proc_info info;
	/* What a sleeping process waits on ("tty", "pipe", "wait4", "nanosleep",
	 * "accept", "poll", ...); empty when it does not sleep. */
	char wait_channel[PROC_WAIT_CHANNEL_MAX];
	/* Its command line as exec got it, the arguments joined by spaces and
	 * cut to fit (NUL-terminated); a fork has its parent's. */
	char args[PROC_ARGS_MAX];
};
/* One CPU's statistics for top (sys ms_getcpus). */
struct proc_cpu_info {
	uint32_t index;   /* dense CPU index */
	uint32_t flags;   /* PROC_CPU_* */
	uint64_t busy_ns; /* running threads other than the idle thread */
	uint64_t idle_ns; /* running its idle thread */
	uint64_t irq_ns;  /* in interrupt handlers (part of the two above) */
	uint64_t context_switches;
	uint64_t interrupts;
};
#define PROC_CPU_MONITORS 1u /* reserved for monitors */

#endif
