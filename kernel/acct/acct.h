/*
 * Per-activity accounting: a thread marks where an activity (a request, a
 * query) starts and stops, and reads back what the kernel spent on it, per
 * subsystem (a module: the part of a join point's name before the dot).  The
 * results live in pages (ACCT_PAGES) per process, mapped read-only into that
 * process only and written by the kernel, so reading them needs no system
 * call; a sequence count per result keeps a read consistent.  The measuring
 * is the rscfl aspect (aspects/rscfl.c) on every join point ("*", which
 * includes sched.switch), linked `direct` only while some activity is started:
 * accounting off costs the NOPs.
 *
 *     struct acct_page *page = (void *)ms_syscall0(__NR_ms_acct_init);
 *     long token = ms_syscall0(__NR_ms_acct_get_token);
 *     ms_syscall2(__NR_ms_acct, token, ACCT_START); ...; ms_syscall2(__NR_ms_acct, token, ACCT_STOP);
 *
 * Plain declarations first: user space (userland/librscfl) includes this
 * header for the page's layout and the flags.
 */
#ifndef KERNEL_ACCT_ACCT_H
#define KERNEL_ACCT_ACCT_H

#include <stdint.h>

#define ACCT_MAX_TOKENS     16 /* tokens per process: ms_acct_get_token says -ENOSPC past it */
#define ACCT_MAX_SUBSYSTEMS 12 /* per token; the last slot is "other" once they are used up */
#define ACCT_NAME_MAX       16
#define ACCT_PAGE_MAGIC     0x74636361u          /* "acct" */
#define ACCT_USER_ADDRESS   0x0000700000000000UL /* where the pages are mapped: past mmap's area */
#define ACCT_PAGES          8                    /* size of the results area in pages */

/* ms_acct flags (the rscfl_acct flags).  START and STOP are exclusive;
 * TK_RESET zeroes the token's results first and may go with START or alone. */
#define ACCT_START    0x1u /* make token the activity being accounted */
#define ACCT_STOP     0x2u /* stop accounting token (it must be started) */
#define ACCT_NEXT     0x4u /* account only the next system call to token */
#define ACCT_TK_RESET 0x8u

/* acct_result.state */
#define ACCT_TOKEN_FREE      0u
#define ACCT_TOKEN_IDLE      1u /* allocated, never started or stopped */
#define ACCT_TOKEN_CURRENT   2u /* being charged now */
#define ACCT_TOKEN_SUSPENDED 3u /* started, another token is current */
#define ACCT_TOKEN_NEXT      4u /* waits for the next system call */

/* One subsystem's share of an activity.  Times are nanoseconds, sizes bytes. */
struct acct_subsystem {
	char name[ACCT_NAME_MAX]; /* the module ("vfs", "pipe", "sys"); "" when unused */
	uint64_t calls;           /* join point calls into it, nested ones included */
	uint64_t inclusive_ns;    /* entry to exit of those calls, nested subsystems included */
	uint64_t exclusive_ns; /* inclusive_ns less the time in nested calls to other subsystems */
	uint64_t sched_out_ns; /* of inclusive_ns, time the thread was off the CPU */
	uint64_t preempted_ns; /* of sched_out_ns, off the CPU while still runnable */
	uint64_t blocked_ns;   /* of sched_out_ns, off the CPU waiting */
	uint64_t interrupts;   /* interrupts taken while the thread was inside */
	uint64_t allocs;       /* kernel memory allocations made while inside */
	uint64_t alloc_bytes;  /* their sizes */
	uint64_t frees;        /* kernel memory frees made while inside */
	uint64_t free_bytes;   /* their sizes, where the allocator knows them */
};

/* What the kernel spent on one activity (one token).  Times in nanoseconds,
 * sizes in bytes; complete after ACCT_STOP, brought up to date at every
 * switch while started. */
struct acct_result {
	volatile uint32_t sequence;  /* odd while the kernel writes: read again */
	uint32_t state;              /* ACCT_TOKEN_* */
	uint64_t wall_ns;            /* from START to STOP, over all its stretches as current */
	uint64_t cpu_ns;             /* of wall_ns, time on a CPU */
	uint64_t sched_out_ns;       /* of wall_ns, time off the CPU: preempted + blocked */
	uint64_t preempted_ns;       /* off the CPU while still runnable */
	uint64_t blocked_ns;         /* off the CPU waiting (sleep, I/O) */
	uint64_t context_switches;   /* switches away from the thread */
	uint64_t syscalls;           /* system calls entered (calls of subsystem "sys") */
	uint64_t interrupts;         /* interrupts taken on the thread's CPU while it ran */
	uint64_t irq_ns;             /* time in those interrupts' handlers */
	uint64_t page_faults;        /* page faults of the thread */
	uint64_t alloc_bytes;        /* kernel memory allocated (all subsystems) */
	uint64_t free_bytes;         /* kernel memory freed, where the allocator knows the size */
	uint64_t tcp_bytes_sent;     /* payload bytes handed to TCP by its sockets */
	uint64_t tcp_bytes_received; /* payload bytes TCP delivered to its sockets */
	uint64_t tcp_segments_sent;  /* TCP segments output for its sockets */
	uint64_t tcp_segments_received; /* TCP segments input for its sockets */
	uint64_t tcp_retransmits;       /* of tcp_segments_sent, retransmissions */
	uint64_t nic_packets_sent;      /* frames the NIC transmitted for its sockets */
	uint64_t nic_packets_received;  /* frames the NIC received for its sockets */
	uint64_t async_ns;              /* time other threads (lwIP's, the NIC's) worked for it */
	uint64_t async_items;           /* pieces of such work */
	uint32_t subsystem_count;       /* slots used in subsystems[] */
	uint32_t reserved;
	struct acct_subsystem subsystems[ACCT_MAX_SUBSYSTEMS];
};

/* The results area (ACCT_PAGES pages): result i belongs to token i + 1.
 * `unattributed` collects what the process spent while accounting was woven
 * but none of its tokens was current, so that the sum over tokens plus it is
 * the process's total over that time. */
struct acct_page {
	uint32_t magic; /* ACCT_PAGE_MAGIC */
	uint32_t tokens;
	int32_t pid; /* the owning process */
	uint32_t reserved;
	struct acct_result unattributed;
	struct acct_result results[ACCT_MAX_TOKENS];
};

_Static_assert(sizeof(struct acct_page) <= ACCT_PAGES * 4096, "the results fit their pages");

/* A reference to one activity that work done later on its behalf carries (a
 * socket, a packet): which owner, which token, and the token's generation, so
 * that work for a token freed meanwhile is dropped.  0 is no activity. */
typedef uint64_t acct_ref_t;

/* What asynchronous work is charged with (acct_charge_ref). */
enum acct_counter {
	ACCT_TCP_BYTES_SENT,
	ACCT_TCP_BYTES_RECEIVED,
	ACCT_TCP_SEGMENTS_SENT,
	ACCT_TCP_SEGMENTS_RECEIVED,
	ACCT_TCP_RETRANSMITS,
	ACCT_NIC_PACKETS_SENT,
	ACCT_NIC_PACKETS_RECEIVED,
};

/* ---- Kernel API (the system calls are thin layers over it) --------------- */
#ifndef ACCT_USER_ONLY

/* Gives the calling thread (of a user process) its accounting state and maps
 * its results page read-only at ACCT_USER_ADDRESS, once per address space.
 * Returns that address, or -EPERM (a kernel thread), -ENOSPC (every state is
 * in use by a live thread), -ENOMEM. */
int64_t acct_init_thread(void);
/* Allocates a token.  Returns it (1..ACCT_MAX_TOKENS), or -ENOSPC (all in
 * use), -ENOENT (no acct_init_thread yet). */
int acct_get_token(void);
/* Frees token, stopping it if started.  Returns 0, -EINVAL (not allocated),
 * -ENOENT. */
int acct_free_token(int token);
/* Applies ACCT_* flags to token.  Returns 0, or -EINVAL (token not allocated,
 * bad flags, STOP of a token that is not started), -EALREADY (START of a
 * started token), -ENOENT. */
int acct_control(int token, unsigned flags);
/* Makes token, which must be started, the current activity; the current one
 * becomes suspended.  Returns 0, -EINVAL (not allocated or not started),
 * -ENOENT. */
int acct_switch_token(int token);

/* The calling thread's current activity, or 0 when it has none. */
acct_ref_t acct_current_ref(void);
/* Adds amount to counter of the activity ref names; nothing when ref is 0 or
 * stale (its token freed or reset since).  Thread context, interrupts on or
 * off, never an interrupt handler (the owner's advice may hold its lock with
 * interrupts on); so are the others here. */
void acct_charge_ref(acct_ref_t ref, enum acct_counter counter, uint64_t amount);
/* Brackets work that another thread does for ref's activity: begin returns a
 * start time to hand to end, which charges the time between to async_ns and
 * counts one async item (nothing for 0 or a stale ref). */
uint64_t acct_async_begin(acct_ref_t ref);
void acct_async_end(acct_ref_t ref, uint64_t begin_ns);

/* ---- The kernel side of the rscfl aspect's ABI (microscope/aspect.h,
 * ms_acct_*), in charge.c; called from its advice with the join point's
 * context, any context, never sleeping.  Flags and events are the ABI's
 * MS_ACCT_* values. */
struct jp_context;
struct thread;
/* Opens a call of context's module for its thread's charged result, started
 * at tsc (a TSC reading: the guard's, taken as the before advice began); on
 * success sets context->activity for the after advice.  Returns 1, or 0
 * (thread not accounted, nothing charged, too deep). */
int acct_call_enter(struct jp_context *context, unsigned flags, uint64_t tsc);
/* Closes that call at tsc (the after advice's start) and charges it.
 * Returns its ns, or 0 (not charged). */
uint64_t acct_call_exit(const struct jp_context *context, unsigned flags, uint64_t tsc);
/* The subsystem of the innermost open call of context's thread, "" when none. */
const char *acct_innermost_subsystem(const struct jp_context *context);
/* Charges event (MS_ACCT_INTERRUPT, _PAGE_FAULT, _ALLOC, _FREE) with amount.
 * Returns 0, -ENOENT (thread not accounted), -EINVAL (unknown event). */
int acct_charge_event(const struct jp_context *context, unsigned event, uint64_t amount);
/* prev leaves its CPU, next comes on. */
void acct_note_switch(struct thread *prev, struct thread *next);

#endif
#endif
