/*
 * The state the accounting charges: per accounted thread, the stack of join
 * point calls it is inside, the counts its calls have pending, and the
 * results they are folded into under their sequence counts.  The native
 * advice (native.c) calls it on every join point while the accounting is
 * woven, with the join point's class fixed when it was first woven (its
 * module's id and its kind); the ms_acct_* ABI (abi.c) is the same for an
 * aspect of its own.
 *
 * A call is a frame charged to the result that was charged when it opened
 * (a token, or `unattributed`: the owner's charge generation names it);
 * closing it charges calls, inclusive and exclusive time to its module only
 * if that result is still the charged one (the calls that start, stop or
 * switch tokens are charged to none).  Times are differences of points on
 * the owner's time line (acct_time_ns), so that they add up exactly.
 * Exclusive time is charged at transitions, KUtrace's way: the time since the
 * stack's last open or close belongs to the call that was innermost, kept in
 * its frame until its close.  So the exclusive times of a result add up to
 * the time in its outermost calls, nothing counted twice, and match the old
 * rule (inclusive less nested calls to other subsystems, charged by the
 * outermost call of a run of one subsystem).  Time off the CPU, interrupts
 * and allocations are charged to every subsystem with a call open (once
 * each) and to the activity.
 *
 * Cost: an accounted thread's calls open and close on its own stack and add
 * to its own pending counts, per module: a TSC read converted in line, a
 * three-word frame, a few adds, no lock, no sequence count, no subsystem slot
 * and no name.  The owner's lock (never a global one, and without touching
 * interrupts: internal.h) is taken to fold what is pending into the charged
 * result, in one bracket: when the thread is switched out, before the charged
 * result changes, and when an outermost call other than a system call closes
 * (acct_fold_pending); the subsystem slot of a module is then one table
 * lookup (slot_of).
 */
#include "acct/internal.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "joinpoint/section.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "time/time.h"

#define ACTIVITY_TAG (1ULL << 63)

/* The thread's owner, looked up without a lock: the thread's state pointer,
 * so that a thread that is not accounted (lwIP's, the NIC's, idle, most of
 * the time every other one) costs a load and a branch; the caller checks the
 * entry still names the thread (still_owner). */
static struct acct_owner *owner_hint(const struct thread *thread)
{
	return thread ? thread_acct_state(thread) : NULL;
}

/* A thread's state pointer is set only by its own owner_setup, and a thread
 * struct reused for another thread starts with it NULL: the owner entry is
 * still that thread's while it names the thread. */
static bool still_owner(const struct acct_owner *owner, const struct thread *thread)
{
	return owner && thread && owner->thread == thread;
}

/* ---- Slots ------------------------------------------------------------------ */

/* Adds module's slot to result index's subsystems, in a sequence count
 * bracket the caller holds, under the owner's lock; the last slot takes every
 * module past the others ("other").  The next slot by the kernel's own count
 * of them, named with a fixed-size copy: module ids are told apart by name
 * once, at boot (native.c), so no name is compared here. */
static inline __attribute__((always_inline)) unsigned slot_add(struct acct_owner *owner, int index,
							       unsigned module_id)
{
	struct acct_result *result = acct_result_of(owner, index);
	/* The slots in use are counted by the kernel, never from the result's
	 * subsystem_count: the page is shared with user space. */
	unsigned i = owner->slots_used[index];
	if (i >= ACCT_MAX_SUBSYSTEMS) {
		i = ACCT_MAX_SUBSYSTEMS - 1;
		goto found;
	}
	static const char other[ACCT_NAME_MAX] = "other";
	bool last = i == ACCT_MAX_SUBSYSTEMS - 1;
	owner->slot_module[index][i] = (uint8_t)module_id;
	owner->slots_used[index] = (uint8_t)(i + 1);
	__builtin_memcpy(result->subsystems[i].name, last ? other : acct_module_labels[module_id],
			 ACCT_NAME_MAX);
	result->subsystem_count = i + 1;
found:
	owner->slot_of[index][module_id] = (uint8_t)(i + 1);
	return i;
}

/* The slot of module in result index, added when it has none (under the
 * owner's lock, in a bracket of that result). */
static inline unsigned slot_in_bracket(struct acct_owner *owner, int index, unsigned module)
{
	unsigned slot = owner->slot_of[index][module];
	if (__builtin_expect(slot != 0, 1))
		return slot - 1;
	return slot_add(owner, index, module);
}

/* The owner's calls still open: none when the aspect was unlinked since it
 * last opened one (their after advice was lost; acct_set_woven moves the
 * epoch on instead of touching every owner's stack under its feet). */
static inline unsigned live_depth(const struct acct_owner *owner)
{
	return owner->epoch == __atomic_load_n(&acct_epoch, __ATOMIC_RELAXED) ? owner->depth : 0;
}

/* The modules with a call open for the charged result, as a mask. */
static uint64_t modules_in_open_calls(const struct acct_owner *owner)
{
	uint64_t mask = 0;
	unsigned depth = live_depth(owner);
	for (unsigned i = 0; i < depth; i++)
		if (owner->frames[i].charge_generation == owner->charge_generation)
			mask |= 1ULL << owner->frames[i].module;
	return mask;
}

/* ---- Folding what calls charged into the results ------------------------------ */

static void fold_activity(struct acct_owner *owner, struct acct_result *result)
{
	struct acct_pending_activity *pending = &owner->pending_activity;
	result->syscalls += pending->syscalls;
	pending->syscalls = 0;
	if (!owner->pending_events)
		return;
	result->interrupts += pending->interrupts;
	result->irq_ns += pending->irq_ns;
	result->page_faults += pending->page_faults;
	result->alloc_bytes += pending->alloc_bytes;
	result->free_bytes += pending->free_bytes;
	*pending = (struct acct_pending_activity){0};
	owner->pending_events = false;
}

static void fold_events(struct acct_pending *pending, struct acct_subsystem *subsystem)
{
	subsystem->interrupts += pending->interrupts;
	subsystem->allocs += pending->allocs;
	subsystem->alloc_bytes += pending->alloc_bytes;
	subsystem->frees += pending->frees;
	subsystem->free_bytes += pending->free_bytes;
	pending->interrupts = pending->allocs = pending->alloc_bytes = 0;
	pending->frees = pending->free_bytes = 0;
}

static void fold_modules(struct acct_owner *owner, int index, struct acct_result *result)
{
	uint64_t events = owner->pending_event_modules;
	for (uint64_t mask = owner->pending_modules | events; mask; mask &= mask - 1) {
		unsigned module = (unsigned)__builtin_ctzll(mask);
		struct acct_pending *pending = &owner->pending[module];
		struct acct_subsystem *subsystem =
		    &result->subsystems[slot_in_bracket(owner, index, module)];
		subsystem->calls += pending->calls;
		subsystem->inclusive_ns += pending->inclusive_ns;
		subsystem->exclusive_ns += pending->exclusive_ns;
		pending->calls = pending->inclusive_ns = pending->exclusive_ns = 0;
		if (events & (1ULL << module))
			fold_events(pending, subsystem);
	}
	owner->pending_modules = owner->pending_event_modules = 0;
}

static bool nothing_pending(const struct acct_owner *owner)
{
	return !(owner->pending_modules | owner->pending_event_modules |
		 owner->pending_activity.syscalls) &&
	       !owner->pending_events;
}

void acct_drop_pending(struct acct_owner *owner)
{
	uint64_t mask = owner->pending_modules | owner->pending_event_modules;
	for (; mask; mask &= mask - 1)
		owner->pending[__builtin_ctzll(mask)] = (struct acct_pending){0};
	owner->pending_activity = (struct acct_pending_activity){0};
	owner->pending_modules = owner->pending_event_modules = 0;
	owner->pending_events = false;
}

void acct_fold_pending(struct acct_owner *owner)
{
	if (nothing_pending(owner))
		return;
	int charged = owner->charged;
	if (charged < 0) {
		acct_drop_pending(owner);
		return;
	}
	struct acct_result *result = acct_result_of(owner, charged);
	acct_result_begin(result);
	fold_activity(owner, result);
	fold_modules(owner, charged, result);
	acct_result_end(result);
}

/* ---- Calls ------------------------------------------------------------------ */

/* The token waiting for the next system call becomes current: a change of
 * results, under the owner's lock. */
static __attribute__((noinline)) void start_next(struct acct_owner *owner,
						 const struct thread *thread)
{
	acct_owner_lock_in_advice(owner);
	if (still_owner(owner, thread) && owner->next >= 0) {
		acct_make_current(owner, owner->next, clock_ns());
		owner->oneshot = true;
		owner->next = -1;
	}
	acct_owner_unlock_in_advice(owner);
}

/* Without the owner's lock: the frames, the depth and what is pending are
 * the owner thread's alone (its advice runs with preemption off on its CPU,
 * and interrupts taken meanwhile run no advice); what other threads change
 * here (charged and the charge generation, by acct_set_woven) is read once,
 * and either value is a consistent start: a call opened for a result no
 * longer charged at its close is not charged.  The time since the stack's
 * last transition is the caller's exclusive time (KUtrace's way: time goes
 * to whatever was innermost), so that no frame keeps a nested time and no
 * close looks at its parent. */
static inline __attribute__((always_inline)) unsigned
open_frame(struct acct_owner *owner, const struct thread *thread, unsigned flags,
	   struct acct_class class, uint64_t tsc)
{
	uint32_t epoch = __atomic_load_n(&acct_epoch, __ATOMIC_RELAXED);
	unsigned depth = owner->depth;
	if ((flags & ACCT_OUTERMOST) || owner->epoch != epoch) {
		/* still open: calls whose after was missed (unlinked meanwhile) */
		depth = 0;
		owner->epoch = epoch;
		if ((flags & ACCT_OUTERMOST) && __builtin_expect(owner->next >= 0, 0))
			start_next(owner, thread);
	}
	int charged = __atomic_load_n(&owner->charged, __ATOMIC_RELAXED);
	if (charged < 0 || depth == ACCT_MAX_DEPTH) {
		owner->depth = depth;
		return 0;
	}
	uint32_t generation = __atomic_load_n(&owner->charge_generation, __ATOMIC_RELAXED);
	uint64_t now = acct_time_ns(tsc);
	if (depth) {
		/* The caller was innermost since the last transition: that is its
		 * exclusive time, kept in its frame until its close decides
		 * whether it is charged at all. */
		uint64_t last = owner->last_ns;
		now = now > last ? now : last; /* a CPU whose TSC lags: no time back */
		owner->frames[depth - 1].exclusive_ns += now - last;
	}
	owner->frames[depth].entry_ns = now;
	owner->frames[depth].exclusive_ns = 0;
	owner->frames[depth].tag = acct_frame_tag(generation, class.module, class.kind);
	owner->last_ns = now;
	owner->depth = depth + 1;
	return depth + 1;
}

/* A control call (ACCT_KIND_CONTROL) is charged to no token: it starts,
 * stops or switches them, and a call opened for the result charged before it
 * would be dropped at its close anyway.  So it is not opened, and costs its
 * thread what an unaccounted thread's call costs, unless a token waits for
 * the next system call or stops with it (ACCT_NEXT): then it is that system
 * call, as before.  Returns the class to open with, or kind CONTROL for
 * none. */
static inline __attribute__((always_inline)) struct acct_class
control_as_syscall(const struct acct_owner *owner, struct acct_class class)
{
	if (__builtin_expect(class.kind == ACCT_KIND_CONTROL, 0) &&
	    (owner->next >= 0 || owner->oneshot))
		class.kind = ACCT_KIND_SYSCALL;
	return class;
}

/* open_frame, its level named in the context's activity for the close. */
static inline __attribute__((always_inline)) int open_call(struct acct_owner *owner,
							   struct jp_context *context,
							   unsigned flags, struct acct_class class,
							   uint64_t tsc)
{
	unsigned level = open_frame(owner, context->thread, flags, class, tsc);
	if (level)
		context->activity = ACTIVITY_TAG | (uint64_t)owner->number << 8 | level;
	return level != 0;
}

int acct_call_enter(struct jp_context *context, unsigned flags, uint64_t tsc)
{
	context->activity = 0;
	const struct thread *thread = context->thread;
	struct acct_owner *owner = owner_hint(thread);
	if (!owner || __atomic_load_n(&owner->thread, __ATOMIC_RELAXED) != thread)
		return 0;
	return open_call(owner, context, flags, acct_class_of(context->joinpoint), tsc);
}

/* An event charged with the close of a call (native.c's kinds). */
struct acct_event_charge {
	unsigned event;      /* ACCT_INTERRUPT, ... */
	bool amount_is_time; /* the call's ns (an interrupt's handler) */
	uint64_t amount;
};
static inline void charge_event_pending(struct acct_owner *owner, unsigned depth, unsigned event,
					uint64_t amount);

/* The outermost call closed, and it was no system call (a kernel thread's
 * call, an interrupt or a fault taken in user mode): what is pending goes
 * into the result, under the owner's lock (checked there to be still the
 * thread's: a thread whose process has ended still runs join points on its
 * way out, and reclaim_dead_owners (acct.c) may meanwhile have given the
 * entry up and freed its results pages, clearing the entry under the same
 * lock before it frees them).  After a system call, the thread goes back to
 * user mode and what is pending waits for its next switch, START, STOP or
 * switch of tokens (the results page's promise: complete after STOP,
 * brought up to date at every switch while started), which saves the lock
 * and the bracket per system call.  A token of ACCT_NEXT stops with it, its
 * call folded first. */
static __attribute__((noinline)) void close_outermost(struct acct_owner *owner,
						      const struct thread *thread, bool syscall)
{
	acct_owner_lock_in_advice(owner);
	if (still_owner(owner, thread)) {
		if (!syscall)
			acct_fold_pending(owner);
		if (owner->oneshot && owner->current >= 0)
			acct_stop_current(owner, clock_ns());
	}
	acct_owner_unlock_in_advice(owner);
}

/* The stack and what is pending are the owner thread's (see open_frame):
 * closing a call takes no lock.  Its inclusive time is its own difference,
 * its exclusive time what its frame kept plus the part since the stack's
 * last transition; nothing is written into the results page here.  Returns the call's ns; *charged says whether it was
 * charged (its result is still the one charged). */
static inline __attribute__((always_inline)) uint64_t
close_pending(struct acct_owner *owner, unsigned level, const struct acct_frame *frame,
	      bool syscall, uint64_t tsc, bool *charged)
{
	uint64_t last = owner->last_ns, now = acct_time_ns(tsc);
	now = now > last ? now : last; /* a CPU whose TSC lags: no time back */
	uint64_t ns = now - frame->entry_ns;
	owner->last_ns = now;
	owner->depth = level - 1;
	*charged = frame->charge_generation ==
		   __atomic_load_n(&owner->charge_generation, __ATOMIC_RELAXED);
	if (__builtin_expect(*charged, 1)) {
		unsigned module = frame->module;
		struct acct_pending *pending = &owner->pending[module];
		pending->calls++;
		pending->inclusive_ns += ns;
		pending->exclusive_ns += frame->exclusive_ns + (now - last);
		owner->pending_modules |= 1ULL << module;
		owner->pending_activity.syscalls += syscall;
	}
	return ns;
}

/* After the close: the outermost call's fold (close_outermost). */
static inline __attribute__((always_inline)) void
close_end(struct acct_owner *owner, const struct thread *thread, unsigned level, bool syscall)
{
	if (level == 1 && (!syscall || __builtin_expect(owner->oneshot, 0)))
		close_outermost(owner, thread, syscall);
}

/* The open call at level (1 = outermost), or NULL when there is none. */
static inline struct acct_frame *frame_at(struct acct_owner *owner, unsigned level)
{
	return level && level <= live_depth(owner) ? &owner->frames[level - 1] : NULL;
}

uint64_t acct_call_exit(const struct jp_context *context, unsigned flags, uint64_t tsc)
{
	const struct thread *thread = context->thread;
	if (!(context->activity & ACTIVITY_TAG) || !thread)
		return 0;
	struct acct_owner *owner = &acct_owners[(context->activity >> 8) % ACCT_MAX_OWNERS];
	__asm__("" : "+r"(owner)); /* a pointer from here on, not an index to scale again */
	if (__atomic_load_n(&owner->thread, __ATOMIC_RELAXED) != thread)
		return 0;
	unsigned level = (unsigned)(context->activity & 0xff);
	struct acct_frame *frame = frame_at(owner, level);
	if (!frame)
		return 0;
	bool syscall = flags & ACCT_SYSCALL, charged;
	uint64_t ns = close_pending(owner, level, frame, syscall, tsc, &charged);
	close_end(owner, thread, level, syscall);
	return charged ? ns : 0;
}

const char *acct_innermost_subsystem(const struct jp_context *context)
{
	const char *name = "";
	struct acct_owner *owner = owner_hint(context->thread);
	if (!owner)
		return name;
	acct_owner_lock_in_advice(owner);
	unsigned depth = live_depth(owner);
	if (still_owner(owner, context->thread) && depth) {
		const struct acct_frame *frame = &owner->frames[depth - 1];
		if (frame->charge_generation == owner->charge_generation &&
		    acct_module_names[frame->module])
			name = acct_module_names[frame->module];
	}
	acct_owner_unlock_in_advice(owner);
	return name;
}

/* ---- Events ----------------------------------------------------------------- */

static void charge_activity(struct acct_pending_activity *activity, unsigned event, uint64_t amount)
{
	switch (event) {
	case ACCT_INTERRUPT:
		activity->interrupts++;
		activity->irq_ns += amount;
		break;
	case ACCT_PAGE_FAULT: activity->page_faults++; break;
	case ACCT_ALLOC: activity->alloc_bytes += amount; break;
	case ACCT_FREE: activity->free_bytes += amount; break;
	}
}

static void charge_module(struct acct_pending *pending, unsigned event, uint64_t amount)
{
	if (event == ACCT_INTERRUPT) {
		pending->interrupts++;
	} else if (event == ACCT_ALLOC) {
		pending->allocs++;
		pending->alloc_bytes += amount;
	} else if (event == ACCT_FREE) {
		pending->frees++;
		pending->free_bytes += amount;
	}
}

/* By the owner's thread, charged >= 0: event to the activity and to every
 * module with one of the depth innermost calls open for the charged result,
 * once each; pending until the next fold. */
static inline __attribute__((always_inline)) void
charge_event_pending(struct acct_owner *owner, unsigned depth, unsigned event, uint64_t amount)
{
	charge_activity(&owner->pending_activity, event, amount);
	owner->pending_events = true;
	if (event == ACCT_PAGE_FAULT)
		return; /* an activity's field only */
	uint64_t seen = 0;
	uint32_t generation = owner->charge_generation;
	for (unsigned level = 0; level < depth; level++) {
		const struct acct_frame *frame = &owner->frames[level];
		uint64_t bit = 1ULL << frame->module;
		if ((seen & bit) || frame->charge_generation != generation)
			continue;
		seen |= bit;
		charge_module(&owner->pending[frame->module], event, amount);
	}
	owner->pending_event_modules |= seen;
}

int acct_charge_event(const struct jp_context *context, unsigned event, uint64_t amount)
{
	if (event < ACCT_INTERRUPT || event > ACCT_FREE)
		return -EINVAL;
	struct acct_owner *owner = owner_hint(context->thread);
	if (!owner)
		return -ENOENT;
	int error = -ENOENT;
	acct_owner_lock_in_advice(owner);
	if (still_owner(owner, context->thread) && owner->charged >= 0) {
		unsigned depth = live_depth(owner);
		charge_event_pending(owner, depth, event, amount);
		if (!depth)
			acct_fold_pending(owner);
		error = 0;
	}
	acct_owner_unlock_in_advice(owner);
	return error;
}

/* ---- The native advice's close (native.c) ------------------------------------ */

#define PAGE_FAULT_VECTOR 14
#define FRAME_BYTES       4096

/* What a call of kind charges besides itself, given its arguments and
 * result; false when nothing.  An allocator call inside another one (the
 * innermost call still open is mm's) is part of the outer one. */
static bool event_of(const struct joinpoint *jp, const uint64_t *args, uint64_t ret,
		     enum acct_kind kind, const struct acct_frame *parent,
		     struct acct_event_charge *event)
{
	event->amount_is_time = false;
	event->amount = 0;
	switch (kind) {
	case ACCT_KIND_IRQ:
		event->event = ACCT_INTERRUPT;
		event->amount_is_time = true;
		return true;
	case ACCT_KIND_TRAP:
		event->event = ACCT_PAGE_FAULT;
		return jp->argc && args[0] == PAGE_FAULT_VECTOR;
	default: break;
	}
	if (kind < ACCT_KIND_KMALLOC || (parent && parent->module == acct_mm_module))
		return false;
	event->event = kind <= ACCT_KIND_FRAME ? ACCT_ALLOC : ACCT_FREE;
	switch (kind) {
	case ACCT_KIND_KMALLOC: event->amount = args[0]; return ret != 0;
	case ACCT_KIND_FRAME: event->amount = FRAME_BYTES; return ret != 0;
	case ACCT_KIND_KFREE: return args[0] != 0;
	default: event->amount = FRAME_BYTES; return true;
	}
}

/* What a closed call whose kind means an event too (an interrupt, a fault,
 * an allocation or a free) charges besides itself, ns long, its frame at
 * level just popped: out of line, a few per request. */
static __attribute__((noinline)) void charge_kind_event(const struct joinpoint *jp,
							const uint64_t *args, uint64_t ret,
							struct acct_owner *owner, unsigned level,
							unsigned kind, uint64_t ns)
{
	struct acct_event_charge event;
	const struct acct_frame *parent = level > 1 ? &owner->frames[level - 2] : NULL;
	if (!event_of(jp, args, ret, (enum acct_kind)kind, parent, &event) ||
	    __atomic_load_n(&owner->charged, __ATOMIC_RELAXED) < 0)
		return;
	charge_event_pending(owner, level - 1, event.event,
			     event.amount_is_time ? ns : event.amount);
}

/* The close of the call at level that the native advice opened for owner
 * (thread's, when it opened): its kind is in its frame; jp, args and ret
 * say what an allocation, a free or a fault was. */
static inline __attribute__((always_inline)) void
native_close_level(const struct joinpoint *jp, const uint64_t *args, uint64_t ret,
		   const struct thread *thread, struct acct_owner *owner, unsigned level,
		   uint64_t tsc)
{
	struct acct_frame *frame;
	if (__atomic_load_n(&owner->thread, __ATOMIC_RELAXED) != thread || !thread ||
	    !(frame = frame_at(owner, level)))
		return;
	unsigned kind = frame->kind;
	bool syscall = kind == ACCT_KIND_SYSCALL, charged;
	uint64_t ns = close_pending(owner, level, frame, syscall, tsc, &charged);
	if (__builtin_expect(kind >= ACCT_KIND_IRQ, 0))
		charge_kind_event(jp, args, ret, owner, level, kind, ns);
	close_end(owner, thread, level, syscall);
}

/* The same, for the C path: the owner and level are in the activity. */
static inline __attribute__((always_inline)) void native_close(const struct jp_context *context,
							       uint64_t activity, uint64_t tsc)
{
	struct acct_owner *owner = &acct_owners[(activity >> 8) % ACCT_MAX_OWNERS];
	__asm__("" : "+r"(owner)); /* a pointer from here on, not an index to scale again */
	native_close_level(context->joinpoint, context->args, context->ret, context->thread, owner,
			   (unsigned)(activity & 0xff), tsc);
}

/* ---- Switches --------------------------------------------------------------- */

/* prev, the owner's thread, leaves its CPU: what its calls have pending goes
 * into the result first (readers see it up to date while it is away). */
static void switch_out(struct acct_owner *owner, struct thread *prev, uint64_t now)
{
	acct_fold_pending(owner);
	acct_update_charged(owner, now);
	struct acct_result *result = acct_result_of(owner, owner->charged);
	acct_result_begin(result);
	result->context_switches++;
	acct_result_end(result);
	owner->out_since_ns = now;
	owner->out_runnable = thread_state(prev) != THREAD_BLOCKED;
}

/* In result's bracket: the time off the CPU to every subsystem with a call
 * open, once each. */
static void charge_subsystems_out(struct acct_owner *owner, struct acct_result *result,
				  uint64_t out_ns)
{
	int index = owner->charged;
	for (uint64_t mask = modules_in_open_calls(owner); mask; mask &= mask - 1) {
		unsigned module = (unsigned)__builtin_ctzll(mask);
		struct acct_subsystem *subsystem =
		    &result->subsystems[slot_in_bracket(owner, index, module)];
		subsystem->sched_out_ns += out_ns;
		if (owner->out_runnable)
			subsystem->preempted_ns += out_ns;
		else
			subsystem->blocked_ns += out_ns;
	}
}

static void switch_in(struct acct_owner *owner, uint64_t now)
{
	if (!owner->out_since_ns)
		return;
	uint64_t out_ns = acct_ns_since(now, owner->out_since_ns);
	owner->on_cpu_ns = now; /* the time off the CPU is no CPU time */
	acct_steal_rebase(owner);
	struct acct_result *result = acct_result_of(owner, owner->charged);
	acct_result_begin(result);
	result->sched_out_ns += out_ns;
	if (owner->out_runnable)
		result->preempted_ns += out_ns;
	else
		result->blocked_ns += out_ns;
	charge_subsystems_out(owner, result, out_ns);
	acct_result_end(result);
	owner->out_since_ns = 0;
	acct_update_charged(owner, now);
}

/* Each owner under its own lock, one after the other (prev and next may
 * both be accounted, and no two owner locks are held at once). */
void acct_note_switch(struct thread *prev, struct thread *next)
{
	struct acct_owner *out = owner_hint(prev), *in = owner_hint(next);
	if (!out && !in)
		return;
	uint64_t now = clock_ns();
	if (out) {
		acct_owner_lock_in_advice(out);
		if (still_owner(out, prev) && out->charged >= 0)
			switch_out(out, prev, now);
		acct_owner_unlock_in_advice(out);
	}
	if (in && in != out) {
		acct_owner_lock_in_advice(in);
		if (still_owner(in, next) && in->charged >= 0)
			switch_in(in, now);
		acct_owner_unlock_in_advice(in);
	}
}

/* ---- The native advice (native.c weaves it) ---------------------------------- */

/* Everything in line: a thread that is not accounted costs the class, its
 * state's load and a test; an accounted one a TSC read and its frame. */
void acct_native_before(struct jp_context *context, void *cookie)
{
	(void)cookie;
	acct_native_events[context->cpu % MAX_CPUS]++;
	if (__builtin_expect(context->joinpoint == acct_switch_joinpoint, 0)) {
		acct_note_switch((struct thread *)context->args[0],
				 (struct thread *)context->args[1]);
		return;
	}
	const struct thread *thread = context->thread;
	struct acct_owner *owner = owner_hint(thread);
	if (!owner || __atomic_load_n(&owner->thread, __ATOMIC_RELAXED) != thread)
		return; /* not accounted */
	struct acct_class class = control_as_syscall(owner, acct_class_of(context->joinpoint));
	if (class.kind == ACCT_KIND_CONTROL)
		return;
	unsigned flags = class.kind == ACCT_KIND_SYSCALL ? ACCT_OUTERMOST : 0;
	open_call(owner, context, flags, class, rdtsc());
}

void acct_native_after(struct jp_context *context, void *cookie)
{
	(void)cookie;
	uint64_t activity = context->activity;
	if (!activity)
		return; /* no call was opened */
	native_close(context, activity, rdtsc());
}

/* ---- The native advice's own paths: whole calls (native.c) ------------------- */

/* What the before and after above do for one call, run by the join point in
 * place of them when the accounting is alone on it: no context built, no
 * indirect advice call, the class by the join point's index.  The frames,
 * the charging and so the results are the same code as the C path's
 * (open_frame, native_close_level). */

static inline __attribute__((always_inline)) struct thread *running_thread(void)
{
	struct thread *thread;
	__asm__("movq %%gs:%c1, %0" : "=r"(thread) : "i"(offsetof(struct cpu, current)));
	return thread;
}

/* The running thread's state pointer (thread_acct_state), which the
 * scheduler keeps in the CPU's structure: one load, no call, so that the
 * test of a thread that is not accounted saves no registers. */
static inline __attribute__((always_inline)) struct acct_owner *running_owner(void)
{
	struct acct_owner *owner;
	__asm__("movq %%gs:%c1, %0" : "=r"(owner) : "i"(offsetof(struct cpu, acct)));
	return owner;
}

static inline __attribute__((always_inline)) void count_event(void)
{
	uint32_t cpu;
	__asm__("movl %%gs:%c1, %0" : "=r"(cpu) : "i"(offsetof(struct cpu, id)));
	acct_native_events[cpu % MAX_CPUS]++;
}

/* owner, if it is thread's (a hint: checked again under its lock). */
static inline __attribute__((always_inline)) bool accounted(const struct acct_owner *owner,
							    const struct thread *thread)
{
	return owner && __atomic_load_n(&owner->thread, __ATOMIC_RELAXED) == thread;
}

static inline __attribute__((always_inline)) unsigned
open_fast(struct acct_owner *owner, const struct thread *thread, struct acct_class class)
{
	unsigned flags = class.kind == ACCT_KIND_SYSCALL ? ACCT_OUTERMOST : 0;
	return open_frame(owner, thread, flags, class, rdtsc());
}

static inline __attribute__((always_inline)) uint64_t call_nosleep(const struct jp_fast_list *list,
								   uint64_t *args)
{
	jp_section_calling(true);
	uint64_t ret = list->call(args);
	jp_section_calling(false);
	return ret;
}

/* The accounted thread's call of a _NOSLEEP join point: out of line, so that
 * the test of every other thread's call saves no registers. */
static __attribute__((noinline)) uint64_t fast_call_accounted(const struct jp_fast_list *list,
							      uint64_t *args,
							      const struct thread *thread,
							      struct acct_owner *owner)
{
	unsigned index = list->index;
	unsigned level = open_fast(owner, thread, acct_class_at(index));
	uint64_t ret = call_nosleep(list, args);
	if (level)
		native_close_level(acct_first_joinpoint + index, args, ret, thread, owner, level,
				   rdtsc());
	return ret;
}

/* sched.switch's call: the time off the CPU is charged, not a call. */
static __attribute__((noinline)) uint64_t switch_call(const struct jp_fast_list *list,
						      uint64_t *args)
{
	acct_note_switch((struct thread *)args[0], (struct thread *)args[1]);
	return call_nosleep(list, args);
}

/* A _NOSLEEP join point's call, inside the trampoline's section (native.c's
 * acct_fast_path0/1 call it): list is the join point's, args its slots.
 * Every other path is a tail call, so that a thread that is not accounted
 * costs the event count, two loads and two tests before its call. */
__attribute__((optimize("optimize-sibling-calls"))) uint64_t
acct_fast_call(const struct jp_fast_list *list, uint64_t *args)
{
	count_event();
	if (__builtin_expect(list->index == acct_switch_index, 0))
		return switch_call(list, args);
	struct thread *thread = running_thread();
	struct acct_owner *owner = running_owner();
	if (accounted(owner, thread))
		return fast_call_accounted(list, args, thread, owner);
	return call_nosleep(list, args);
}

/* A call that may sleep, after a section that ended with a reschedule asked
 * for: the reschedule first. */
static __attribute__((noinline, cold)) uint64_t resched_then_call(const struct joinpoint *jp,
								  uint64_t *args)
{
	jp_resched_after_section();
	return jp->call(args);
}

/* The accounted thread's call of a join point that may sleep, of the class
 * kind and module (not a control call: those are not opened, acct_around
 * makes them as an unaccounted thread's).  The class comes as two words: a
 * two-byte struct would be packed into one register and out again. */
static __attribute__((noinline)) uint64_t
around_accounted(const struct joinpoint *jp, uint64_t *args, const struct thread *thread,
		 struct acct_owner *owner, unsigned kind, unsigned module)
{
	struct acct_class class = {.kind = (uint8_t)kind, .module = (uint8_t)module};
	unsigned level = open_fast(owner, thread, class);
	jp_section_leave();
	uint64_t ret = jp->call(args);
	if (level) {
		jp_section_enter();
		native_close_level(jp, args, ret, thread, owner, level, rdtsc());
		jp_section_leave();
	}
	return ret;
}

/* A call of a join point that may sleep (jp_advice.around): opened in the
 * dispatcher's section, the call outside it, closed in a section of its own.
 * (sched.switch is _NOSLEEP: it never comes here.)  A control call of the
 * accounted thread is made as any thread's, without around_accounted's
 * saved registers.  Sibling calls on (the kernel is built without them):
 * every way ends in a jump. */
__attribute__((optimize("optimize-sibling-calls"))) uint64_t
acct_around(const struct joinpoint *jp, uint64_t *args, const struct jp_fast_list *list)
{
	count_event();
	struct thread *thread = running_thread();
	struct acct_owner *owner = running_owner();
	if (accounted(owner, thread)) {
		struct acct_class class = control_as_syscall(owner, acct_class_of(jp));
		if (class.kind != ACCT_KIND_CONTROL)
			return around_accounted(jp, args, thread, owner, class.kind, class.module);
	}
	if (__builtin_expect(jp_section_leave_unless_resched(), 0))
		return resched_then_call(jp, args);
	return jp->call(args);
}
