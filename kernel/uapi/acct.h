/*
 * Per-activity accounting as user space sees it: the layout of the results
 * pages the kernel maps read-only into a process, the flags of ms_acct and
 * the limits (kernel/acct/acct.h is the kernel side; userland/librscfl the
 * library over it).  Plain declarations.
 */
#ifndef UAPI_ACCT_H
#define UAPI_ACCT_H

#include <stdint.h>

#define ACCT_MAX_TOKENS     16 /* tokens per process: ms_acct_get_token says -ENOSPC past it */
#define ACCT_MAX_SUBSYSTEMS 12 /* per token; the last slot is "other" once they are used up */
#define ACCT_NAME_MAX       16
#define ACCT_MAX_THREADS    16 /* threads with a results page at once (ms_acct_init: -ENOSPC) */
#define ACCT_USER_THREADS   4  /* of those, held by one user other than root at once */
#define ACCT_ROOT_RESERVED  4  /* and the last ones only root (or the kernel) may take */
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
	uint64_t page_cache_hits;       /* file pages found in the page cache */
	uint64_t page_cache_misses;     /* file pages that had to be read or made */
	uint64_t page_cache_evictions;  /* pages its misses pushed out of the cache */
	uint64_t page_cache_read_bytes; /* bytes its misses read from the device */
	uint64_t page_cache_read_ahead; /* of those, pages read ahead of the page asked for */
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
	int32_t pid;    /* the owning process */
	uint32_t flags; /* ACCT_PAGE_*; 0 in pages older than the flags */
	struct acct_result unattributed;
	struct acct_result results[ACCT_MAX_TOKENS];
	/* Appended (every offset above is unchanged): time the hypervisor ran
	 * something else while the thread was on a CPU in each result, in ns,
	 * taken out of its cpu_ns (wall_ns keeps it).  Measured only with
	 * ACCT_PAGE_STEAL_MEASURED; with ACCT_PAGE_STEAL_NOT_REPORTED they stay 0
	 * and mean "unknown", not "none". */
	uint64_t unattributed_steal_ns;
	uint64_t steal_ns[ACCT_MAX_TOKENS];
};

/* acct_page.flags */
#define ACCT_PAGE_STEAL_MEASURED     0x1u /* the hypervisor reports steal time: subtracted */
#define ACCT_PAGE_STEAL_NOT_REPORTED 0x2u /* no steal time is reported (bare metal, an emulator) */

_Static_assert(sizeof(struct acct_page) <= ACCT_PAGES * 4096, "the results fit their pages");

#endif
