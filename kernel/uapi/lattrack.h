/*
 * Latency trackers as user space sees them (kernel/lattrack/lattrack.h is
 * the kernel side): a process creates a tracker by name, or opens one, and
 * gets a file descriptor.  read() on it returns whole lattrack_record
 * structures, one per slow event (threshold passed, timeout, late out,
 * replaced, collected); poll() says POLLIN when one is waiting.  The
 * tracker's creator (or its descriptor's holder) feeds it with
 * ms_lattrack_event.
 *
 *     struct lattrack_config c = {.name = "req", .threshold_ns = 2000000};
 *     int fd = ms_syscall1(__NR_ms_lattrack_create, (long)&c);
 *     ms_syscall5(__NR_ms_lattrack_event, fd, LATTRACK_OP_IN, (long)&id, 8, 0);
 *     ms_syscall5(__NR_ms_lattrack_event, fd, LATTRACK_OP_OUT, (long)&id, 8, 0);
 *     struct lattrack_record r; read(fd, &r, sizeof r);   // if it took 2 ms or more
 *
 * Who may do what (docs/SECURITY.md): anyone may create trackers of their
 * own (at most LATTRACK_USER_OWN of them per user unless privileged) and
 * open their own; opening another user's tracker or a kernel tracker (whose
 * keys are kernel addresses) needs PRIV_MONITOR.  Plain declarations only.
 */
#ifndef UAPI_LATTRACK_H
#define UAPI_LATTRACK_H

#include <stdint.h>

#define LATTRACK_UAPI_NAME_MAX   24 /* with the NUL */
#define LATTRACK_UAPI_KEY_MAX    128
#define LATTRACK_UAPI_EVENTS_MAX 4096 /* a user tracker's largest max_events */
#define LATTRACK_USER_OWN        4    /* trackers one unprivileged user may own */
#define LATTRACK_RECORD_KEY      32   /* key bytes a record carries */
#define LATTRACK_RECORDS_QUEUED  128  /* records a descriptor holds unread */
#define LATTRACK_RECORD_STACK    8    /* stack frames a record carries */

/* ms_lattrack_create's argument: every field is checked. */
#define LATTRACK_CREATE_OR_OPEN 0x1u /* an existing tracker of one's own: open it */
struct lattrack_config {
	char name[LATTRACK_UAPI_NAME_MAX]; /* [A-Za-z0-9_.-], NUL-terminated */
	uint64_t threshold_ns;
	uint64_t timeout_ns; /* 0: none; else keys in 10 timeouts are collected */
	uint32_t key_size;   /* 1..LATTRACK_UAPI_KEY_MAX; 0: 8 */
	uint32_t max_events; /* 1..LATTRACK_UAPI_EVENTS_MAX; 0: 256 */
	uint32_t flags;      /* LATTRACK_CREATE_* */
	uint32_t reserved;   /* 0 */
};

/* ms_lattrack_event's op. */
enum lattrack_op {
	LATTRACK_OP_IN = 0,        /* event_in, several of one key at once allowed */
	LATTRACK_OP_IN_UNIQUE = 1, /* event_in replacing the key's event (reported UNIQUE) */
	LATTRACK_OP_OUT = 2,       /* event_out with id */
};

/* lattrack_record.flag: kernel/lattrack/lattrack.h's enum lattrack_flag. */
enum lattrack_record_flag {
	LATTRACK_RECORD_NORMAL = 0,
	LATTRACK_RECORD_TIMEOUT = 1,
	LATTRACK_RECORD_UNIQUE = 2,
	LATTRACK_RECORD_GC = 3,
	LATTRACK_RECORD_LATE = 4,
};

/* lattrack_record.stack_flags */
#define LATTRACK_STACK_TRUNCATED  0x1 /* the stack goes on past the frames given */
#define LATTRACK_STACK_UNREADABLE 0x2 /* a frame could not be read: the walk stopped */
#define LATTRACK_STACK_KERNEL     0x4 /* kernel addresses (offcpu: where the waker woke it) */

/* lattrack_record.waker_flags (the offcpu tracker) */
#define LATTRACK_WAKER_KNOWN     0x1 /* the wake-up was seen: waker_* say who woke it */
#define LATTRACK_WAKER_INTERRUPT 0x2 /* it was woken from an interrupt on waker_cpu */

/* One slow event, as read() returns it (200 bytes). */
struct lattrack_record {
	uint64_t start_ns; /* event_in, clock_gettime(CLOCK_MONOTONIC) time */
	uint64_t end_ns;   /* event_out, or when the timer or a unique in saw it */
	uint64_t delay_ns; /* end_ns - start_ns */
	uint32_t flag;     /* enum lattrack_record_flag */
	uint32_t out_id;   /* event_out's id (NORMAL, LATE) */
	uint32_t cpu;      /* where the report was made */
	uint32_t tid;      /* gettid() of the thread running the report (0: a kernel thread) */
	uint32_t key_length;
	uint32_t lost; /* records this descriptor lost (queue full) just before this one */
	uint8_t key[LATTRACK_RECORD_KEY]; /* the key's first bytes, zero-filled */
	/* the syscall tracker: the user stack of the slow call (return
	 * addresses, innermost first); offcpu: the kernel's callers of the
	 * wake-up (LATTRACK_STACK_KERNEL) */
	uint16_t stack_count;
	uint16_t stack_flags; /* LATTRACK_STACK_* */
	uint32_t waker_tid;   /* offcpu: the thread that woke it (gettid(); 0: a kernel thread) */
	uint32_t waker_cpu;
	uint32_t waker_flags; /* LATTRACK_WAKER_* */
	char waker_name[16];  /* the waker thread's name, NUL-terminated */
	uint64_t stack[LATTRACK_RECORD_STACK];
	uint32_t
	    thread_tid; /* offcpu: the thread that was off its CPU (gettid(); 0: a kernel thread) */
	char thread_name[16]; /* its name, NUL-terminated ("": not known) */
	uint32_t reserved;    /* 0 */
};

#endif
