/*
 * The aspect SDK: everything an aspect may use.  An aspect is one C file,
 * compiled once to a relocatable object (ET_REL) and linked at run time by
 * microScope's runtime linker into the kernel (binding `direct`) or into a
 * monitor process (`shm`, `msg`).  The same object runs in both because it
 * calls nothing but the functions declared here (the aspect ABI): each binding
 * implements them, and the linker refuses any other undefined symbol.
 *
 *     MS_ASPECT("callcount", "counts calls of every vfs join point");
 *     static void on_call(struct ms_ctx *ctx) { ms_counter_add(ms_joinpoint_name(ctx), 1); }
 *     MS_BEFORE("vfs.*", on_call, 0);
 *
 * Build (docs/ASPECTS.md says why each flag):
 *     gcc -c -O2 -std=gnu11 -ffreestanding -fno-pic -mcmodel=large -mno-red-zone \
 *         -fno-stack-protector -mgeneral-regs-only -fno-asynchronous-unwind-tables \
 *         -fno-common -Iaspects/include my.c -o my.o
 *
 * Rules: advice must not block and must return; it runs with preemption off
 * (direct) and within a time budget.  It gets an opaque context and reads it
 * only through the accessors below.  Names given to counters and histograms
 * are copied (at most MS_NAME_MAX - 1 characters are kept).  Global variables
 * are the aspect's own; under `direct` every CPU shares them, so update them
 * with __atomic builtins or use counters, which are SMP-safe.
 */
#ifndef MICROSCOPE_ASPECT_H
#define MICROSCOPE_ASPECT_H

#include <stddef.h>
#include <stdint.h>

/* The ABI version this header describes; the linker refuses another. */
#define MS_ABI_VERSION 1

/* Longest counter or histogram name kept, with its terminating NUL. */
#define MS_NAME_MAX 48

/* What advice sees: opaque, read through the accessors. */
struct ms_ctx;

typedef void (*ms_advice_fn)(struct ms_ctx *ctx);
typedef int (*ms_init_fn)(void);
typedef void (*ms_exit_fn)(void);

/* ---- Metadata: read by the linker from the object ------------------------ */

/* .ms_aspect: exactly one per object. */
struct ms_aspect_info {
	uint32_t abi_version; /* MS_ABI_VERSION */
	uint32_t reserved;
	const char *name;        /* [A-Za-z0-9_-], 1..31 characters */
	const char *description; /* one line */
};

enum ms_advice_kind {
	MS_ADVICE_BEFORE = 1, /* runs before the join point's function */
	MS_ADVICE_AFTER = 2,  /* after it: ms_retval and ms_exit_ns are valid */
};

/* ms_advice_info.flags */
#define MS_WANT_TIMESTAMPS 0x1u /* ms_entry_ns/ms_exit_ns must be filled in */

/* .ms_advice: one per piece of advice. */
struct ms_advice_info {
	const char *pattern; /* join point pattern: "vfs.read", "sched.*", "*.alloc" */
	ms_advice_fn function;
	int32_t kind;     /* enum ms_advice_kind */
	int32_t priority; /* lower runs first before the call, last after it */
	uint32_t flags;   /* MS_WANT_* */
	uint32_t reserved;
};

#define MS__CAT_(a, b) a##b
#define MS__CAT(a, b)  MS__CAT_(a, b)
#define MS__UNIQUE(p)  MS__CAT(p, __COUNTER__)

/* Names the aspect; exactly once per object. */
#define MS_ASPECT(name_text, description_text)                   \
	__attribute__((section(".ms_aspect"), used, aligned(8))) \
	const struct ms_aspect_info ms_aspect_info = {           \
	    .abi_version = MS_ABI_VERSION,                       \
	    .reserved = 0,                                       \
	    .name = name_text,                                   \
	    .description = description_text,                     \
	}

/* Declares advice: fn(ctx) runs before (or after) every join point matching
 * pattern, ordered by priority.  MS_ADVICE takes MS_WANT_* flags too. */
#define MS_ADVICE(kind_value, pattern_text, fn, priority_value, flags_value) \
	__attribute__((section(".ms_advice"), used,                          \
		       aligned(8))) static const struct ms_advice_info       \
	MS__UNIQUE(ms_advice_) = {                                           \
	    .pattern = pattern_text,                                         \
	    .function = fn,                                                  \
	    .kind = kind_value,                                              \
	    .priority = priority_value,                                      \
	    .flags = flags_value,                                            \
	    .reserved = 0,                                                   \
	}
#define MS_BEFORE(pattern, fn, priority) MS_ADVICE(MS_ADVICE_BEFORE, pattern, fn, priority, 0)
#define MS_AFTER(pattern, fn, priority)  MS_ADVICE(MS_ADVICE_AFTER, pattern, fn, priority, 0)

/* Optional: fn() runs once when the aspect is linked, before any advice is
 * woven; a non-zero return refuses the link.  MS_EXIT's fn runs once when it
 * is unlinked, after the last advice has returned. */
#define MS_INIT(fn)                               \
	__attribute__((section(".ms_init"), used, \
		       aligned(8))) static const ms_init_fn ms_init_entry = fn
#define MS_EXIT(fn)                               \
	__attribute__((section(".ms_exit"), used, \
		       aligned(8))) static const ms_exit_fn ms_exit_entry = fn

/* ---- Context accessors --------------------------------------------------- */

/* Number of arguments the join point's function takes (0..6). */
unsigned ms_argc(const struct ms_ctx *ctx);
/* Argument i widened to 64 bits; 0 when i >= ms_argc(ctx). */
uint64_t ms_arg(const struct ms_ctx *ctx, unsigned i);
/* The function's return value widened to 64 bits (after advice only; 0 before). */
uint64_t ms_retval(const struct ms_ctx *ctx);
/* Entry and exit time of the call in ns since boot (ms_now_ns's clock); 0 when
 * not taken (no advice on the join point asked MS_WANT_TIMESTAMPS; exit: before). */
uint64_t ms_entry_ns(const struct ms_ctx *ctx);
uint64_t ms_exit_ns(const struct ms_ctx *ctx);
/* The CPU the join point ran on. */
unsigned ms_cpu(const struct ms_ctx *ctx);
/* The process and thread that reached the join point: pid 0 for a kernel
 * thread, tid 0 before the scheduler runs. */
int ms_pid(const struct ms_ctx *ctx);
int ms_tid(const struct ms_ctx *ctx);
/* Copies the process's program name ("sh"; "kernel" for a kernel thread) into
 * buf, NUL-terminated and truncated to length - 1.  Returns the name's full
 * length, or -22 (EINVAL) when buf is NULL or length is 0. */
int ms_program_name(const struct ms_ctx *ctx, char *buf, size_t length);
/* The join point's name, "module.function"; valid as long as the aspect is linked. */
const char *ms_joinpoint_name(const struct ms_ctx *ctx);
/* The activity token of the request being served, 0 when none. */
uint64_t ms_activity(const struct ms_ctx *ctx);

/* ---- Clocks -------------------------------------------------------------- */

/* Nanoseconds since boot, monotonic on every CPU. */
uint64_t ms_now_ns(void);

/* ---- Counters and histograms (per aspect, kept across relinks) ------------ */

/* Adds delta to the counter called name, creating it at 0 first.  Returns 0,
 * or -28 (ENOSPC) when the aspect already has MS_MAX_COUNTERS counters. */
int ms_counter_add(const char *name, int64_t delta);
/* Records value into the log2 histogram called name: bucket 0 holds 0,
 * bucket b (1..64) holds values in [2^(b-1), 2^b).  Returns 0 or -28 (ENOSPC,
 * MS_MAX_HISTOGRAMS reached). */
int ms_hist_record(const char *name, uint64_t value);
#define MS_MAX_COUNTERS   32
#define MS_MAX_HISTOGRAMS 16
#define MS_HIST_BUCKETS   65

/* ---- Telemetry, devices, replies, logging ---------------------------------- */

/* Emits one telemetry record of the given type (1..65535) with length bytes of
 * payload (at most MS_EMIT_MAX).  Returns 0, -22 (EINVAL: bad type, too long,
 * unreadable payload), or -105 (ENOBUFS: the ring was full; the record was
 * dropped and counted). */
int ms_emit(uint32_t type, const void *payload, size_t length);
#define MS_EMIT_MAX 240
/* Reads the counter called counter of the device called device ("e1000.0",
 * "rx_packets") into *value.  Returns 0, or -2 (ENOENT: no such device or
 * counter). */
int ms_device_counter(const char *device, const char *counter, uint64_t *value);
/* Answers the join point's owner with value, in every binding: under a
 * synchronous `msg` call it travels back with the call's answer; under
 * `direct` it is there when the join point returns; under `shm` and one-way
 * `msg` it is posted when the monitor runs the advice, and the owner finds it
 * at a later call.  The owner keeps the newest reply per join point and first
 * argument, and must check the value (a monitor is not trusted).  Returns 0,
 * -28 (ENOSPC: too many replies not taken yet) or -22 (EINVAL: in init or
 * exit, where no join point runs). */
int ms_reply(struct ms_ctx *ctx, int64_t value);
/* Prints one line, prefixed with the aspect's name, to the system log. */
void ms_log(const char *text);

/* ---- Latency trackers (docs/LATENCY.md) ------------------------------------
 * A key goes in, the same key comes out, and the kernel reports the pair
 * when it took the threshold or more (or stayed in past the timeout) to the
 * tracker's readers: user space reads the reports from ms_lattrack_open's
 * descriptor (uapi/lattrack.h), the console lists the counts (`lattrack`).
 * Create trackers in MS_INIT and destroy them in MS_EXIT.  Linked shm or msg,
 * the aspect's kernel image and its monitor image both run MS_INIT: the
 * second create of a name opens the first's tracker, so each binding feeds
 * the same one.  Trackers an aspect leaves are destroyed when it is
 * unloaded. */

/* Creates the tracker called name (1..23 of [A-Za-z0-9_.-]), or opens this
 * aspect's own of that name.  Returns a handle (>= 0), or -22 (EINVAL: bad
 * name, not in MS_INIT), -17 (EEXIST: a tracker of the kernel or another user
 * has the name), -28 (ENOSPC: no slot) or -12 (ENOMEM). */
int ms_lattrack_create(const char *name, uint64_t threshold_ns, uint64_t timeout_ns);
/* event_in of key (length 1..8 bytes); unique != 0 replaces an event of
 * the key already in.  Returns 0, -22 (EINVAL: bad handle or key) or -28
 * (ENOSPC: no free event; dropped and counted). */
int ms_lattrack_event_in(int tracker, const void *key, unsigned length, unsigned unique);
/* event_out of key with id (in the report).  Returns 0, -2 (ENOENT: the key
 * is not in) or -22 (EINVAL). */
int ms_lattrack_event_out(int tracker, const void *key, unsigned length, unsigned id);
/* Stops using the handle.  Returns 0 or -22 (EINVAL). */
int ms_lattrack_destroy(int tracker);

/* ---- Per-activity accounting (the rscfl aspect; `direct` only) ------------
 * The kernel keeps the accounted threads, their results pages and the stack
 * of join point calls each is inside; the aspect decides what to charge.
 * Each call acts on the thread that reached the join point and does nothing
 * (returns 0, -2 ENOENT from ms_acct_charge) for a thread that is not
 * accounted.  The linker refuses to bind an aspect that uses these with shm
 * or msg: results are written synchronously into the owners' pages. */

/* ms_acct_enter flags */
#define MS_ACCT_OUTERMOST 0x1u /* a system call: calls still open are stale, ACCT_NEXT starts */
/* ms_acct_exit flags */
#define MS_ACCT_SYSCALL 0x1u /* the call was a system call */

/* What ms_acct_charge counts (amount in brackets). */
enum ms_acct_event {
	MS_ACCT_INTERRUPT = 1, /* one interrupt [ns in its handler] */
	MS_ACCT_PAGE_FAULT,    /* one page fault [unused] */
	MS_ACCT_ALLOC,         /* one kernel allocation [bytes] */
	MS_ACCT_FREE,          /* one kernel free [bytes, 0 when not known] */
};

/* Opens a call of the join point's module (its subsystem) for the thread's
 * charged activity.  Returns 1 (opened: ms_acct_exit must close it in the
 * after advice; ms_activity is non-zero until then) or 0 (not accounted, or
 * nested too deep). */
int ms_acct_enter(struct ms_ctx *ctx, unsigned flags);
/* Closes the call ms_acct_enter opened and charges it to its subsystem
 * (calls, inclusive and exclusive time).  Returns its time in ns, 0 when
 * nothing was charged. */
uint64_t ms_acct_exit(struct ms_ctx *ctx, unsigned flags);
/* The subsystem of the innermost call the thread has open, "" when none. */
const char *ms_acct_innermost(const struct ms_ctx *ctx);
/* Charges event to the thread's activity and to every subsystem it has a
 * call open in (once each).  Returns 0, -2 (ENOENT: not accounted) or -22
 * (EINVAL: unknown event). */
int ms_acct_charge(const struct ms_ctx *ctx, enum ms_acct_event event, uint64_t amount);
/* At sched.switch: the first argument's thread leaves its CPU (preempted if
 * still runnable, else blocked), the second's comes back.  Returns 0. */
int ms_acct_switch(const struct ms_ctx *ctx);

/* The compiler may emit calls to these for struct copies and clears; they
 * are part of the ABI with their standard meaning. */
void *memcpy(void *dest, const void *src, size_t n);
void *memmove(void *dest, const void *src, size_t n);
void *memset(void *dest, int c, size_t n);
int memcmp(const void *a, const void *b, size_t n);

#endif
