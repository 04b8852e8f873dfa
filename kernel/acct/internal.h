/*
 * The accounting module's own declarations: one state per accounted thread
 * (its results page, its tokens' bookkeeping, the stack of join point calls
 * it is inside), the table of them, and the calls between acct.c (tokens,
 * pages), charge.c (the kernel side of the rscfl aspect's ABI) and weave.c
 * (linking the aspect).  Nothing outside kernel/acct/ includes this file.
 *
 * What is charged: the owner's `charged` result, which is its current token,
 * or, while the aspect is woven and no token is current, the page's
 * `unattributed` result (index ACCT_UNATTRIBUTED), or nothing (-1).
 *
 * Words, one per idea: an `owner` is an accounted thread's entry in the
 * table; a `result` is one of its page's (a token's or `unattributed`), and
 * its `index` is its place in the page (a token's index is its number less
 * one); a `slot` is a subsystem's place in a result's subsystems[], added
 * when a module is first charged there; a `call` of a join point is opened
 * and closed, and its `frame` is its record on the owner's stack.
 *
 * Locks.  acct_lock guards the table (which entry is whose: thread_id and
 * thread), acct_woven, acct_epoch and acct_linked_at_ns.  Each owner's own
 * lock guards its fields and its results page; a change of an entry's
 * thread_id or thread takes both (acct_lock first).  Two exceptions, for the
 * advice of an accounted thread, which runs on that thread's CPU with
 * preemption off (interrupts taken meanwhile run no advice):
 *   - its stack of open calls (depth, epoch, frames, last_ns) and what its
 *     calls have pending (pending*) are the thread's alone: opening and
 *     closing a call take no lock; nothing else writes the stack (an unlink
 *     moves acct_epoch on instead of clearing it) or the pending counts
 *     (the switch folds them as the thread leaves its CPU);
 *   - every change of a result takes the owner's lock, folding what is
 *     pending included: other writers of the same owner at the same time are
 *     work charged for it from another thread (async.c), the weaving thread
 *     (acct_set_woven) and the control calls, so each result has one writer
 *     at a time and its sequence count stays even between writes.
 * Owners never share a lock, so accounted threads on different CPUs never
 * wait for each other.  Both kinds are a plain test-and-set word taken in
 * line, never held across a sleep or around another owner's lock; with
 * interrupts off everywhere but in the advice (acct_owner_lock_in_advice).
 * So no interrupt handler may take an owner's lock: async.c's calls are for
 * threads (lwIP's, the NIC worker's, the sockets' callers).
 */
#ifndef KERNEL_ACCT_INTERNAL_H
#define KERNEL_ACCT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "acct/acct.h"
#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"

#define ACCT_MAX_OWNERS  ACCT_MAX_THREADS /* threads with accounting state at once */
#define ACCT_MAX_DEPTH   24               /* nested join point calls tracked; deeper ones are not */
#define ACCT_MAX_MODULES 64 /* module names told apart (native.c); the last one takes the rest */
/* The result index of the page's `unattributed` result. */
#define ACCT_UNATTRIBUTED ACCT_MAX_TOKENS
#define ACCT_RESULTS      (ACCT_MAX_TOKENS + 1)

/* One open join point call of an accounted thread: three words.  Its times
 * are points on the owner's own time line (acct_time_ns), so that the
 * differences charged at transitions add up exactly. */
struct acct_frame {
	uint64_t entry_ns;     /* when it opened (acct_time_ns) */
	uint64_t exclusive_ns; /* the time it was innermost, up to its last nested open */
	union {
		struct {
			uint32_t charge_generation; /* the owner's then: which result it charges */
			uint8_t module;             /* the module's id (native.c) */
			uint8_t kind;               /* the join point's enum acct_kind */
			uint16_t unused;
		};
		uint64_t tag; /* the same, written at once (acct_frame_tag) */
	};
};

static inline uint64_t acct_frame_tag(uint32_t charge_generation, uint8_t module, uint8_t kind)
{
	return charge_generation | (uint64_t)module << 32 | (uint64_t)kind << 40;
}
_Static_assert(sizeof(struct acct_frame) == 24, "a frame is three words");

/* What an owner's calls of one module charged since its last fold
 * (charge.c): the subsystem's fields that calls and events add to. */
struct acct_pending {
	uint64_t calls;
	uint64_t inclusive_ns;
	uint64_t exclusive_ns;
	uint64_t interrupts;
	uint64_t allocs;
	uint64_t alloc_bytes;
	uint64_t frees;
	uint64_t free_bytes;
};

/* The same for the activity's own fields. */
struct acct_pending_activity {
	uint64_t syscalls;
	uint64_t interrupts;
	uint64_t irq_ns;
	uint64_t page_faults;
	uint64_t alloc_bytes;
	uint64_t free_bytes;
};

struct acct_owner {
	uint32_t lock;               /* this owner's: see above; kept by owner_setup */
	uint32_t number;             /* its index in acct_owners (an activity names it) */
	uint64_t thread_id;          /* 0: the entry is free */
	const struct thread *thread; /* the thread, while thread_id is set */
	int pid;
	uint32_t uid;  /* the effective user id that took it (share_left) */
	uint64_t phys; /* the results page */
	struct acct_page *page;
	int current;           /* token index current, or -1 */
	int charged;           /* result index charged: current, ACCT_UNATTRIBUTED or -1 */
	int next;              /* token index waiting for the next system call, or -1 */
	bool oneshot;          /* current came from ACCT_NEXT: stops with its call */
	uint64_t stretch_ns;   /* wall time of charged counted up to here */
	uint64_t on_cpu_ns;    /* CPU time of charged counted up to here */
	uint64_t out_since_ns; /* switched out at, 0 while on a CPU */
	bool out_runnable;     /* preempted, not blocked */
	bool steal_measured;   /* clock_steal_reported() when it was set up */
	uint64_t steal_at;     /* clock_steal_ns() of steal_cpu when last counted */
	int steal_cpu;         /* where steal_at was read, -1: not yet */
	unsigned depth;        /* frames[] in use, while epoch is acct_epoch (else none) */
	uint32_t epoch;        /* acct_epoch when the stack was last known good */
	/* Moved on (under the lock) whenever charged changes or the charged
	 * result is reset: a frame of an older one is charged nothing. */
	uint32_t charge_generation;
	uint64_t last_ns; /* the stack's last open or close (acct_time_ns) */
	struct acct_frame frames[ACCT_MAX_DEPTH];
	/* Charged by the owner thread's calls without a lock, folded into the
	 * charged result under it (charge.c: acct_fold_pending) when its
	 * outermost call closes, when it is switched out and before charged
	 * changes: the modules with something pending, those with events. */
	uint64_t pending_modules;
	uint64_t pending_event_modules;
	bool pending_events; /* pending_activity has more than syscalls */
	struct acct_pending_activity pending_activity;
	struct acct_pending pending[ACCT_MAX_MODULES];
	/* Each result's subsystem slot of each module id: slot + 1, 0 while
	 * the module has none there. */
	uint8_t slot_of[ACCT_RESULTS][ACCT_MAX_MODULES];
	/* The slots in use per result (the kernel's count: subsystem_count is
	 * in the shared page), and the module id each was added for, so that a
	 * reset clears only the slot_of entries it set. */
	uint8_t slots_used[ACCT_RESULTS];
	uint8_t slot_module[ACCT_RESULTS][ACCT_MAX_SUBSYSTEMS];
	/* Bumped by reset_token: a ref (async.c) of an older one is stale. */
	uint32_t generation[ACCT_MAX_TOKENS];
	/* The accounting aspect was unwoven by another hand while this owner
	 * accounted: its next call stops its tokens and fails with -ENOLINK. */
	bool severed;
};

extern uint32_t acct_lock;

/* now - then, or 0 when then is later: a time read before the owner's lock
 * may be older than one another CPU stored under it meanwhile (the weaving
 * thread charging every owner), and an unsigned difference must not wrap. */
static inline uint64_t acct_ns_since(uint64_t now, uint64_t then)
{
	return now > then ? now - then : 0;
}

/* Takes the lock word with interrupts off; returns the flags for the unlock. */
static inline uint64_t acct_word_lock_irqsave(uint32_t *word)
{
	uint64_t flags = irq_save();
	while (__atomic_exchange_n(word, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(word, __ATOMIC_RELAXED))
			cpu_relax();
	return flags;
}

static inline void acct_word_unlock_irqrestore(uint32_t *word, uint64_t flags)
{
	__atomic_store_n(word, 0, __ATOMIC_RELEASE);
	irq_restore(flags);
}

static inline uint64_t acct_lock_irqsave(void)
{
	return acct_word_lock_irqsave(&acct_lock);
}

static inline void acct_unlock_irqrestore(uint64_t flags)
{
	acct_word_unlock_irqrestore(&acct_lock, flags);
}

/* Takes the owner's lock from advice (charge.c), leaving interrupts as they
 * are: an interrupt taken on this CPU meanwhile runs no advice (the join
 * points' recursion guard), and async.c refuses interrupt handlers, so nothing
 * on this CPU waits for it.  One `sti` less per event than an irqsave, which
 * under QEMU's TCG ends a translation block. */
static inline void acct_owner_lock_in_advice(struct acct_owner *owner)
{
	while (__atomic_exchange_n(&owner->lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&owner->lock, __ATOMIC_RELAXED))
			cpu_relax();
}

static inline void acct_owner_unlock_in_advice(struct acct_owner *owner)
{
	__atomic_store_n(&owner->lock, 0, __ATOMIC_RELEASE);
}

/* Takes the owner's own lock (see above). */
static inline uint64_t acct_owner_lock(struct acct_owner *owner)
{
	return acct_word_lock_irqsave(&owner->lock);
}

static inline void acct_owner_unlock(struct acct_owner *owner, uint64_t flags)
{
	acct_word_unlock_irqrestore(&owner->lock, flags);
}

extern struct acct_owner acct_owners[ACCT_MAX_OWNERS];
extern bool acct_woven; /* the aspect is linked: unattributed time counts */
/* Moved on by every change of acct_woven: an owner's open calls from an
 * older epoch are dropped (their after advice is lost across an unlink). */
extern uint32_t acct_epoch;
/* When weave.c last found the aspect live (clock_ns), under acct_lock.  The
 * control calls' fast path trusts acct_woven for ACCT_LINK_RECHECK_NS after
 * it, then takes the weaving path once, which links the aspect again if it
 * was unlinked meanwhile (a fault or an overrun reported by the guard, or by
 * hand) while tokens stayed started. */
extern uint64_t acct_linked_at_ns;
#define ACCT_LINK_RECHECK_NS (10 * 1000 * 1000ULL)

/* The clock's TSC-to-ns multiplier (clock_tsc_to_ns(x) is x times it,
 * shifted down by 32), read again whenever the aspect is woven (acct.c), so
 * that a call's close converts its ticks in line.  The clock's rate is final
 * before anything is accounted (it is calibrated at boot). */
extern uint64_t acct_tsc_ns_mult;

static inline uint64_t acct_ticks_to_ns(uint64_t ticks)
{
	return (uint64_t)(((unsigned __int128)ticks * acct_tsc_ns_mult) >> 32);
}

/* A TSC reading as a point of the accounting's time line (ns, from an
 * arbitrary origin): a call's times are differences of such points, so that
 * the parts charged at each transition add up to the whole exactly. */
static inline uint64_t acct_time_ns(uint64_t tsc)
{
	return acct_ticks_to_ns(tsc);
}

/* ---- native.c: what each join point means, decided once -------------------- */

/* What a join point is for the accounting (native.c decides it from the name,
 * once per join point, when the accounting is first woven). */
enum acct_kind {
	ACCT_KIND_CALL,       /* a call of its module */
	ACCT_KIND_SYSCALL,    /* "sys.*": a call, the outermost, and a system call */
	ACCT_KIND_SWITCH,     /* sched.switch: time off the CPU, not a call */
	ACCT_KIND_IRQ,        /* irq.entry: an interrupt (its handler's time is irq_ns) */
	ACCT_KIND_TRAP,       /* trap.entry: a page fault when its vector is 14 */
	ACCT_KIND_KMALLOC,    /* mm.kmalloc: an allocation of its size */
	ACCT_KIND_FRAME,      /* mm.alloc_frame: an allocation of a frame */
	ACCT_KIND_KFREE,      /* mm.kfree: a free of unknown size */
	ACCT_KIND_FREE_FRAME, /* mm.free_frame: a free of a frame */
	/* sys.ms_acct, sys.ms_acct_switch_token: a control call, charged to no
	 * token, so not opened at all (unless a token waits for the next
	 * system call or stops with it: then it is a system call like others). */
	ACCT_KIND_CONTROL,
};

struct acct_class {
	uint8_t kind;   /* enum acct_kind */
	uint8_t module; /* index in acct_module_names */
};

/* The module names told apart, by id (the join point's module string). */
extern const char *acct_module_names[ACCT_MAX_MODULES];
/* The same, as the results page holds them (zero-padded, cut to fit), so
 * that a new subsystem slot is named by a fixed-size copy. */
extern char acct_module_labels[ACCT_MAX_MODULES][ACCT_NAME_MAX];
/* The id of module "mm": an allocator call inside another is not charged. */
extern uint8_t acct_mm_module;
/* Builds the table of classes (once; sleeps).  Returns 0 or -ENOMEM. */
int acct_classes_prepare(void);
/* Builds the classes and registers the native advice with the linker, for
 * the rscfl aspect's next link.  Returns 0, -ENOMEM. */
int acct_native_register(void);
/* The table acct_classes_prepare built: by join point index (its place in
 * the registry, a pointer difference from the first). */
extern struct acct_class *acct_classes;
extern const struct joinpoint *acct_first_joinpoint;
extern unsigned acct_class_count;

/* jp's class; a join point the table does not know is a call of "other". */
static inline struct acct_class acct_class_of(const struct joinpoint *jp)
{
	size_t index = (size_t)(jp - acct_first_joinpoint);
	if (__builtin_expect(index < acct_class_count, 1))
		return acct_classes[index];
	return (struct acct_class){ACCT_KIND_CALL, ACCT_MAX_MODULES - 1};
}

/* The class of the join point at index (jp_index). */
static inline struct acct_class acct_class_at(unsigned index)
{
	if (__builtin_expect(index < acct_class_count, 1))
		return acct_classes[index];
	return (struct acct_class){ACCT_KIND_CALL, ACCT_MAX_MODULES - 1};
}

/* sched.switch (its two arguments: the threads leaving and coming on), or
 * NULL before the classes are built; its index, or UINT32_MAX. */
extern const struct joinpoint *acct_switch_joinpoint;
extern uint32_t acct_switch_index;
/* charge.c: the native advice's before and after (native.c weaves them). */
void acct_native_before(struct jp_context *context, void *cookie);
void acct_native_after(struct jp_context *context, void *cookie);
/* charge.c: the same for a whole call, in place of them: of a _NOSLEEP join
 * point (from native.c's fast path code) and of one that may sleep
 * (jp_advice.around). */
uint64_t acct_fast_call(const struct jp_fast_list *list, uint64_t *args);
uint64_t acct_around(const struct joinpoint *jp, uint64_t *args, const struct jp_fast_list *list);
/* native.c: counts one event of the native advice on this CPU. */
extern uint64_t acct_native_events[];

/* acct.c: the thread's owner, from its state pointer checked against the
 * entry's thread, or NULL.  Without the owner's lock it is a hint, to be
 * checked again under it. */
struct acct_owner *acct_owner_of(const struct thread *thread);
/* The running thread's owner, or NULL: its state pointer, which the
 * scheduler keeps in the CPU's structure (one load, no call), checked
 * against the entry's thread.  Without the owner's lock it is a hint, to be
 * checked again under it. */
static inline struct acct_owner *acct_running_owner(void)
{
	struct acct_owner *owner = this_cpu_read(acct);
	return owner && __atomic_load_n(&owner->thread, __ATOMIC_RELAXED) == this_cpu_read(current)
		   ? owner
		   : NULL;
}
/* acct.c, under acct_lock */
struct acct_owner *acct_find_owner(uint64_t thread_id);
/* Whether the owner needs the aspect linked: a token current, pending or
 * suspended.  Under the owner's lock. */
bool acct_owner_wants_weave(const struct acct_owner *owner);
/* Result index of the owner's page: a token's, or the unattributed one. */
static inline struct acct_result *acct_result_of(struct acct_owner *owner, int index)
{
	return index == ACCT_UNATTRIBUTED ? &owner->page->unattributed
					  : &owner->page->results[index];
}

/* Bracket a change of a result: its sequence is odd in between (readers
 * retry). */
static inline void acct_result_begin(struct acct_result *result)
{
	result->sequence++;
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

static inline void acct_result_end(struct acct_result *result)
{
	__atomic_thread_fence(__ATOMIC_RELEASE);
	result->sequence++;
}
/* The steal time field of result index (appended to the page). */
static inline uint64_t *acct_steal_of(struct acct_owner *owner, int index)
{
	return index == ACCT_UNATTRIBUTED ? &owner->page->unattributed_steal_ns
					  : &owner->page->steal_ns[index];
}
/* Under the owner's lock, on the CPU its thread is (coming) on: steal time
 * is counted from here. */
void acct_steal_rebase(struct acct_owner *owner);
/* Under the owner's lock: counts wall and CPU time of the charged result up
 * to now (CPU time less the steal time the hypervisor reports meanwhile). */
void acct_update_charged(struct acct_owner *owner, uint64_t now);
void acct_make_current(struct acct_owner *owner, int index, uint64_t now);
/* charge.c, under the owner's lock, the entry still its thread's: adds what
 * the owner's calls have pending to the charged result (nothing when none
 * is), and empties it.  Only from the owner's thread, or while it is off
 * every CPU (its calls write pending without the lock). */
void acct_fold_pending(struct acct_owner *owner);
/* The same, dropping it (the charged result is being reset). */
void acct_drop_pending(struct acct_owner *owner);
void acct_stop_current(struct acct_owner *owner, uint64_t now);
/* Under acct_lock (it takes each owner's): on a change of acct_woven,
 * starts (woven) or ends (not) the unattributed stretch of every owner with
 * no current token, and drops every owner's open calls (their after advice
 * is lost across an unlink) by moving acct_epoch on.  An owner that is no
 * CPU's current thread counts as blocked until it is switched in. */
void acct_set_woven(bool woven, uint64_t now);

/* acct.c, for the acct suite only: makes the calling kernel thread an owner
 * with an unmapped results area, and undoes it.  Returns the area, or NULL
 * (no memory, no free owner). */
struct acct_page *acct_attach_kernel_thread(void);
void acct_detach_kernel_thread(void);

/* weave.c: links the rscfl aspect (direct) while some owner has a started or
 * pending token, unlinks it otherwise.  Sleeps; not under acct_lock. */
void acct_weave_update(void);
/* weave.c: the accounting aspect was unlinked, not by weave.c: every owner
 * with a started token is severed (its next call fails with -ENOLINK) and
 * accounting is no longer woven. */
void acct_sever_owners(void);
/* Links the aspect now, for a token about to start; a later
 * acct_weave_update unlinks it if nothing started after all. */
void acct_weave_attach(void);

#endif
