/*
 * Latency trackers: a key goes in, the same key comes out, and a callback
 * runs when the delay between the two passed the tracker's threshold, when
 * the key stayed in longer than its timeout, or when it is collected as
 * garbage.  event_in and event_out never sleep and never allocate: events
 * come from per-CPU freelists filled when the tracker is enabled (an empty
 * freelist drops the event and counts it), keys live in a hash table with a
 * lock per bucket taken with interrupts off, and a periodic timer finds the
 * timeouts.  Callable from interrupt context and with any lock held.
 *
 *     struct lattrack *t;
 *     lattrack_create("wakeup", &t); lattrack_set_threshold_ns(t, 100000);
 *     lattrack_set_callback(t, on_slow, NULL); lattrack_enable(t);
 *     lattrack_event_in(t, &tid, sizeof tid, LATTRACK_IN_SHARED, NULL);
 *     lattrack_event_out(t, &tid, sizeof tid, 0);    // on_slow if it took 100 µs or more
 *
 * Several trackers (by name) live at once.  Layer: monitoring services.
 */
#ifndef KERNEL_LATTRACK_LATTRACK_H
#define KERNEL_LATTRACK_LATTRACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"

#define LATTRACK_NAME_MAX     24
#define LATTRACK_KEY_MAX      128
#define LATTRACK_PRIV_MAX     128
#define LATTRACK_EVENTS_MAX   65536
#define LATTRACK_TRACKERS_MAX 16
#define LATTRACK_STACK_MAX    8 /* frames a report carries (uapi's LATTRACK_RECORD_STACK) */
#define LATTRACK_RECENT       4 /* reports kept per tracker for `lattrack show` */

/* Why a callback runs. */
enum lattrack_flag {
	LATTRACK_NORMAL,  /* event_out after threshold or more (and before the timeout) */
	LATTRACK_TIMEOUT, /* the timer found the key in for timeout or more; it stays in */
	LATTRACK_UNIQUE,  /* a unique event_in replaced the key, in for threshold or more */
	LATTRACK_GC,      /* the timer removed the key, in for the GC age or more */
	LATTRACK_LATE,    /* event_out of a key that had timed out */
};

/* event_in: may several events of one key be in at once? */
enum lattrack_in_mode {
	LATTRACK_IN_SHARED, /* yes: event_out ends the newest */
	LATTRACK_IN_UNIQUE, /* no: the one in ends (LATTRACK_UNIQUE) and this one replaces it */
};

struct lattrack;
struct lattrack_record; /* uapi/lattrack.h */

/* What a callback sees.  key and priv are valid during the call only. */
struct lattrack_report {
	struct lattrack *tracker;
	const void *key;
	unsigned key_length;
	void *priv;        /* the private data given to event_in (priv_size bytes) */
	uint64_t start_ns; /* clock_ns() at event_in */
	uint64_t end_ns;   /* at event_out, or when the timer or the replacing event_in saw it */
	enum lattrack_flag flag;
	unsigned out_id; /* event_out's id (NORMAL, LATE), else 0 */
	/* Filled by the tracker's annotate function (lattrack_set_annotate), if
	 * any, before the callback and the records see the report; else 0. */
	uint16_t stack_count;               /* frames in stack, innermost first */
	uint16_t stack_flags;               /* LATTRACK_STACK_* (uapi/lattrack.h) */
	uint64_t stack[LATTRACK_STACK_MAX]; /* user (syscall) or kernel (offcpu's waker) */
	uint32_t waker_tid; /* offcpu: who woke the key's thread (gettid(); 0: a kernel thread) */
	uint32_t waker_cpu;
	uint32_t waker_flags; /* LATTRACK_WAKER_* (uapi/lattrack.h) */
	char waker_name[16];  /* the waker thread's name */
	uint32_t thread_tid;  /* offcpu: the thread that was off its CPU (0: a kernel thread) */
	char thread_name[16]; /* its name ("": not known) */
};

/* Runs in the context of event_out, event_in or the tracker's timer
 * (interrupt): must not sleep; may call event_in/out (of other keys) and
 * lattrack_snapshot_request. */
typedef void (*lattrack_callback)(const struct lattrack_report *report, void *context);

struct lattrack_counts {
	uint64_t in;        /* events accepted */
	uint64_t dropped;   /* event_in refused: the freelist was empty */
	uint64_t out;       /* event_out that found its key */
	uint64_t unmatched; /* event_out of a key not in */
	uint64_t over;      /* NORMAL callbacks (delay at or past the threshold) */
	uint64_t timeout;   /* TIMEOUT callbacks */
	uint64_t late;      /* LATE callbacks (counted in out too) */
	uint64_t unique;    /* events a unique event_in replaced */
	uint64_t gc;        /* events collected */
	uint64_t in_flight; /* in now: in == out + unique + gc + in_flight */
};

/* ---- Creating and configuring ------------------------------------------- */

/* A new, disabled tracker named name with the defaults (threshold 1 ms, no
 * timeout, no callback, 8-byte keys, no private data, 1024 events, no GC,
 * timer every 10 ms), holding one reference.  Returns 0, -EINVAL (name empty
 * or too long), -EEXIST, -ENOSPC (LATTRACK_TRACKERS_MAX trackers) or -ENOMEM. */
int lattrack_create(const char *name, struct lattrack **out);
/* Setters return 0 or -EINVAL (out of range); all but the threshold also
 * -EBUSY once the tracker is enabled. */
int lattrack_set_threshold_ns(struct lattrack *tracker, uint64_t ns);
int lattrack_set_timeout_ns(struct lattrack *tracker, uint64_t ns); /* 0: none */
int lattrack_set_callback(struct lattrack *tracker, lattrack_callback fn, void *context);
int lattrack_set_key_size(struct lattrack *tracker, unsigned bytes);   /* 1..LATTRACK_KEY_MAX */
int lattrack_set_priv_size(struct lattrack *tracker, unsigned bytes);  /* 0..LATTRACK_PRIV_MAX */
int lattrack_set_max_events(struct lattrack *tracker, unsigned count); /* 1..LATTRACK_EVENTS_MAX */
int lattrack_set_gc_age_ns(struct lattrack *tracker, uint64_t ns);     /* 0: none */
int lattrack_set_timer_period_ns(struct lattrack *tracker, uint64_t ns); /* >= 1 ms */
/* fn fills a report's stack and waker fields before the callback and the
 * records see it; it runs in the reporter's context (any: must not sleep). */
typedef void (*lattrack_annotate_fn)(struct lattrack_report *report, void *context);
int lattrack_set_annotate(struct lattrack *tracker, lattrack_annotate_fn fn, void *context);
/* Allocates the events and the table and starts the timer.  Thread context.
 * Returns 0, -EBUSY (enabled already) or -ENOMEM. */
int lattrack_enable(struct lattrack *tracker);
/* Unregisters the tracker, stops its timer and drops the creator's
 * reference; events still in are forgotten (no callback).  Callers of
 * event_in/out must have stopped.  Thread context, no lock held (waits for a
 * grace period).  Returns 0 or -EINVAL (NULL). */
int lattrack_destroy(struct lattrack *tracker);

/* ---- Lookup and references ---------------------------------------------- */

/* The tracker named name with a reference taken, or NULL. */
struct lattrack *lattrack_get(const char *name);
/* Drops a reference; the last one frees the tracker (thread context). */
void lattrack_put(struct lattrack *tracker);
/* Calls fn for each tracker (a reference held during the call) until it
 * returns non-zero; returns that value or 0.  Thread context. */
int lattrack_for_each(int (*fn)(struct lattrack *tracker, void *arg), void *arg);
const char *lattrack_name(const struct lattrack *tracker);
uint64_t lattrack_threshold_ns(const struct lattrack *tracker);
uint64_t lattrack_timeout_ns(const struct lattrack *tracker);
/* Sums the per-CPU counts (each exact; the sum is a moment's view). */
void lattrack_get_counts(const struct lattrack *tracker, struct lattrack_counts *counts);

/* Takes one more reference to a tracker the caller holds one of. */
struct lattrack *lattrack_get_reference(struct lattrack *tracker);

/* ---- Owned trackers (user space, aspects) -------------------------------- */

struct lattrack_config; /* uapi/lattrack.h */
/* Checks every field of config.  Returns 0 or -EINVAL. */
int lattrack_check_config(const struct lattrack_config *config);
/* Creates, configures and enables the tracker config names for user uid, or
 * (LATTRACK_CREATE_OR_OPEN) opens uid's own tracker of that name: either way
 * the caller becomes an owner and holds a reference.  Thread context.
 * Returns 0, -EINVAL (config), -EEXIST (the name is taken: a kernel tracker,
 * another user's, or without LATTRACK_CREATE_OR_OPEN), -EMFILE (uid owns
 * LATTRACK_USER_OWN trackers and is not privileged), or lattrack_create's and
 * lattrack_enable's errors. */
int lattrack_open_owned(const struct lattrack_config *config, uint32_t uid, bool privileged,
			struct lattrack **out);
/* Drops an owner (and its reference); the last one destroys the tracker.
 * Thread context. */
void lattrack_release_owned(struct lattrack *tracker);
bool lattrack_is_owned(const struct lattrack *tracker);
uint32_t lattrack_owner_uid(const struct lattrack *tracker);

/* ---- Records: reports for readers other than the callback ---------------- */

/* A subscriber receives every report of its tracker as a struct
 * lattrack_record (uapi/lattrack.h) in a queue of LATTRACK_RECORDS_QUEUED;
 * when it is full the record is lost and counted.  notify (may be NULL) runs
 * in interrupt context soon after records were queued (never in the
 * reporter's context): it may wake threads, not sleep. */
struct lattrack_subscriber;
/* Returns 0, -EINVAL, -ENOMEM or -ENOSPC (LATTRACK_SUBSCRIBERS_MAX already);
 * the subscriber holds a reference to tracker.  Thread context. */
int lattrack_subscribe(struct lattrack *tracker, void (*notify)(void *context), void *context,
		       struct lattrack_subscriber **out);
/* Stops the records, waits for a notify running elsewhere, frees.  Thread
 * context.  NULL is ignored. */
void lattrack_unsubscribe(struct lattrack_subscriber *subscriber);
/* Moves up to max queued records, oldest first, to records; returns how many.
 * Any context. */
unsigned lattrack_records_take(struct lattrack_subscriber *subscriber,
			       struct lattrack_record *records, unsigned max);
bool lattrack_records_waiting(const struct lattrack_subscriber *subscriber);
uint64_t lattrack_records_lost(const struct lattrack_subscriber *subscriber);
struct lattrack *lattrack_subscriber_tracker(const struct lattrack_subscriber *subscriber);
/* True while the tracker is registered and enabled (not destroyed). */
bool lattrack_is_enabled(const struct lattrack *tracker);
/* The tracker's last LATTRACK_RECENT reports as records, oldest first, each
 * with the name of the process that ran the report in programs[i] (""
 * for a kernel thread): what `lattrack show` prints.  Returns how many. */
unsigned lattrack_recent(struct lattrack *tracker, struct lattrack_record *records,
			 char (*programs)[16], unsigned max);

/* ---- The hot path -------------------------------------------------------- */

/* Starts timing key (length bytes, at most the key size), with priv copied
 * (priv_size bytes; NULL: zeroes).  Any context.  Returns 0, -EINVAL (bad
 * length, tracker not enabled) or -ENOSPC (no free event: dropped, counted). */
int lattrack_event_in(struct lattrack *tracker, const void *key, unsigned length,
		      enum lattrack_in_mode mode, const void *priv);
/* Ends the newest event of key; the callback runs (NORMAL) when it took the
 * threshold or more, or (LATE) when it had timed out.  id goes to the
 * report.  Any context.  Returns 0, -ENOENT (key not in, counted) or
 * -EINVAL. */
int lattrack_event_out(struct lattrack *tracker, const void *key, unsigned length, unsigned id);
/* A span the caller timed itself (TSC at both ends, in its own frame: no
 * event is held meanwhile): counted in and out at once, reported NORMAL with
 * id when it took the threshold or more.  Nothing is in during the span, so
 * no timeout or GC applies.  Trackers without private data.  Any context.
 * Returns 0 or -EINVAL. */
int lattrack_event_span(struct lattrack *tracker, const void *key, unsigned length,
			uint64_t start_tsc, uint64_t end_tsc, unsigned id);
/* True when an event of key is in (the benchmark's plain lookup). */
bool lattrack_contains(struct lattrack *tracker, const void *key, unsigned length);

/* ---- Flight-recorder snapshots ------------------------------------------- */

struct lattrack_snapshot_counts {
	uint64_t requested; /* accepted requests */
	uint64_t refused;   /* refused: within the interval, or no flight recorder */
	uint64_t taken;     /* snapshots written */
	uint64_t failed;    /* trace_snapshot or the next session failed */
	unsigned sequence;  /* the last snapshot's number (its directory's suffix) */
};

/* Starts a flight-recorder trace session (trace/trace.h) into sink
 * ("file": directory DIRECTORY-N per snapshot; "console": the host) with the
 * join points matching patterns, and the thread that takes snapshots.
 * Thread context.  Returns 0, -ENOENT (no such sink), -EBUSY (a trace runs
 * already), or trace_start_flight's error. */
int lattrack_flight_start(const char *sink_name, const char *directory, const char *const *patterns,
			  unsigned count);
/* Stops the session and the thread.  Returns 0 or -ENOENT (none runs). */
int lattrack_flight_stop(void);
bool lattrack_flight_running(void);
/* Asks for a snapshot of the flight recorder, taken soon by a thread (never
 * in the caller's context).  Any context, locks held too.  At most one per
 * interval.  Returns 0, -EAGAIN (within the interval: refused, counted) or
 * -ENOENT (no flight recorder runs: refused, counted). */
int lattrack_snapshot_request(void);
/* The least time between two snapshots (default 1 s; 0: no limit). */
void lattrack_snapshot_set_interval_ns(uint64_t ns);
void lattrack_snapshot_get_counts(struct lattrack_snapshot_counts *counts);

/* ---- Trackers on join points --------------------------------------------- */

/* The built-in kinds: "wakeup" (sched.wakeup → the thread's sched.switch onto
 * a CPU), "ttfb" (net.accept → first net.send on that socket), "syscall"
 * (sys.* before → after per thread; "syscall:NAME" sys.NAME only), "offcpu"
 * (switched away → switched back), "irq" (irq.entry's handler), "nic"
 * (nic.irq → the nic.poll after it), "nictx" (nic.tx_queued → nic.tx_done
 * of the ring slot: a frame in the device) and "block" (block.submit →
 * block.complete).  kinds.c says what each key and out id are.  Creates
 * tracker name of kind, enables it and attaches its advice; a slow event
 * takes a snapshot when a flight recorder runs.  Thread context.  Returns 0,
 * -ENOENT (no such kind), or lattrack_create's, lattrack_enable's or
 * jp_attach's error (nothing left behind). */
int lattrack_attach_kind(const char *name, const char *kind, uint64_t threshold_ns,
			 uint64_t timeout_ns);
/* The same with the caller's callback instead of the snapshot request. */
int lattrack_attach_kind_callback(const char *name, const char *kind, uint64_t threshold_ns,
				  uint64_t timeout_ns, lattrack_callback callback, void *context);
/* Detaches the advice of tracker name (if any) and destroys it.  Returns 0
 * or -ENOENT. */
int lattrack_detach(const char *name);
/* The kind of a tracker made by lattrack_attach_kind, or "api". */
const char *lattrack_kind(const struct lattrack *tracker);
/* The largest delay reported by a callback so far, in ns. */
uint64_t lattrack_max_ns(const struct lattrack *tracker);

/* ---- The system-call path (spans.c) -------------------------------------- */

/* What syscall_dispatch reads of the syscall trackers without a timeout
 * (spans.c writes it under its lock).  While slots is non-zero, the
 * dispatcher reads the TSC before and after each call; a quiet call (no
 * slot names its number, shorter than every "every call" slot's threshold:
 * no report) is only counted, in this CPU's cpus[].syscall_quiet_spans,
 * and every other call goes to lattrack_syscall_span. */
struct lattrack_syscall_path {
	unsigned slots;           /* slots in use */
	uint64_t quiet_below_tsc; /* the least threshold of the "every call" slots */
	uint64_t named_numbers;   /* bit number % 64: a slot may name it (all: one has not learned
				   * its number yet) */
};
extern struct lattrack_syscall_path lattrack_syscall_path;

/* One compare with the word (mem_eq), as the other system-call watchers'. */
static inline bool lattrack_syscalls_timed(void)
{
	return !mem_eq(&lattrack_syscall_path.slots, 0);
}

/* Counts a call of number that took delay_tsc when it is quiet; returns
 * false when the caller must hand it to lattrack_syscall_span.  In line in
 * the dispatcher: two loads, two tests and one increment that is a single
 * instruction on this CPU's own counter (no interrupt or migration can come
 * between its read and write). */
static inline __attribute__((always_inline)) bool lattrack_syscall_count_quiet(uint64_t number,
									       uint64_t delay_tsc)
{
	uint64_t quiet_below =
	    __atomic_load_n(&lattrack_syscall_path.quiet_below_tsc, __ATOMIC_RELAXED);
	uint64_t named = __atomic_load_n(&lattrack_syscall_path.named_numbers, __ATOMIC_RELAXED);
	if (__builtin_expect(delay_tsc >= quiet_below || ((named >> (number & 63)) & 1), 0))
		return false;
	__asm__ volatile("incq %%gs:%c0"
			 :
			 : "i"(offsetof(struct cpu, syscall_quiet_spans))
			 : "memory");
	return true;
}

/* A call that was not quiet: counted in each slot that wants it, reported
 * (out of line) where it took the slot's threshold or more.  name NULL: a
 * number with no handler. */
void lattrack_syscall_span(uint64_t number, const char *name, uint64_t start_tsc,
			   uint64_t delay_tsc);

/* Runs the lattrack_bench measurements and stops, if lattrack_bench was on
 * the command line.  Boot thread, once every CPU is up. */
#ifdef KERNEL_TESTS
void lattrack_bench_run_if_requested(void);
#else
static inline void lattrack_bench_run_if_requested(void)
{
} /* test kernel only */
#endif

#endif
