/*
 * The state the accounting charges: per accounted thread, the stack of join
 * point calls it is inside, and the results written under their sequence
 * counts.  The native advice (native.c) calls it on every join point while
 * the accounting is woven, with the join point's class fixed when it was
 * first woven (its module's id and its kind); the ms_acct_* ABI (abi.c) is
 * the same for an aspect of its own.
 *
 * A call is a frame charged to the result that was charged when it opened
 * (a token, or `unattributed`); closing it charges calls and inclusive time
 * to its subsystem only if that result is still the charged one (the calls
 * that start, stop or switch tokens are charged to none).  Exclusive time:
 * a call adds its inclusive time to its parent's nested time when the parent
 * is another subsystem, and passes its own nested time up when it is the
 * same one; only the outermost call of a run of one subsystem charges
 * exclusive_ns (its inclusive less its nested time).  So the exclusive times
 * of a result add up to the time in its outermost calls, nothing counted
 * twice.  Time off the CPU, interrupts and allocations are charged to every
 * subsystem with a call open (once each) and to the activity.
 *
 * Cost: the advice of an accounted thread opens and closes calls on its own
 * stack without a lock and takes its owner's lock (never a global one, and
 * without touching interrupts: internal.h) only to write a result; it keeps a
 * call's start as a TSC reading (its own, or the guard's for the ABI),
 * converts the difference once, in line, at the close, and writes the result
 * under one sequence count bracket per close (none at the open).  The
 * subsystem slot of a module in a result is one table lookup (slot_of).
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

/* The slot of module (an id) in result index's subsystems, added if it has
 * none yet; the last slot takes every module past the others ("other").  The
 * hot path finds it in slot_of; this (out of line, once per module and
 * result) takes the next slot by the kernel's own count of them and names it
 * with a fixed-size copy: module ids are told apart by name once, at boot
 * (native.c), so no name is compared here. */
static inline __attribute__((always_inline)) unsigned slot_for_name(struct acct_owner *owner,
								    int index, unsigned module_id)
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
	owner->modules[index][i] = last ? "other" : acct_module_names[module_id];
	owner->slot_module[index][i] = (uint8_t)module_id;
	owner->slots_used[index] = (uint8_t)(i + 1);
	acct_result_begin(result);
	__builtin_memcpy(result->subsystems[i].name, last ? other : acct_module_labels[module_id],
			 ACCT_NAME_MAX);
	result->subsystem_count = i + 1;
	acct_result_end(result);
found:
	owner->slot_of[index][module_id] = (uint8_t)(i + 1);
	return i;
}

/* The owner's calls still open: none when the aspect was unlinked since it
 * last opened one (their after advice was lost; acct_set_woven moves the
 * epoch on instead of touching every owner's stack under its feet). */
static inline unsigned live_depth(const struct acct_owner *owner)
{
	return owner->epoch == __atomic_load_n(&acct_epoch, __ATOMIC_RELAXED) ? owner->depth : 0;
}

/* The slots of the charged result with a call open, as a mask. */
static unsigned slots_in_open_calls(const struct acct_owner *owner)
{
	unsigned mask = 0, depth = live_depth(owner);
	for (unsigned i = 0; i < depth; i++) {
		const struct acct_frame *frame = &owner->frames[i];
		if (frame->index == owner->charged && owner->modules[frame->index][frame->slot])
			mask |= 1u << frame->slot;
	}
	return mask;
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

/* The slot, added under the owner's lock when it is new (a change of the
 * result's subsystem names). */
static __attribute__((noinline)) unsigned slot_for_locked(struct acct_owner *owner, int index,
							  unsigned module,
							  const struct thread *thread)
{
	acct_owner_lock_in_advice(owner);
	unsigned slot = still_owner(owner, thread) ? slot_for_name(owner, index, module)
						   : ACCT_MAX_SUBSYSTEMS - 1;
	acct_owner_unlock_in_advice(owner);
	return slot;
}

static inline unsigned slot_for(struct acct_owner *owner, int index, unsigned module,
				const struct thread *thread)
{
	unsigned slot = owner->slot_of[index][module];
	if (__builtin_expect(slot != 0, 1))
		return slot - 1;
	return slot_for_locked(owner, index, module, thread);
}

/* Without the owner's lock: the frames and depth are the owner thread's
 * alone (its advice runs with preemption off on its CPU, and interrupts
 * taken meanwhile run no advice); what other threads change here (charged,
 * by acct_set_woven) is read once, and either value is a consistent start:
 * a call opened for a result no longer charged at its close is not charged. */
static inline __attribute__((always_inline)) unsigned
open_frame(struct acct_owner *owner, const struct thread *thread, unsigned flags,
	   struct acct_class class, uint64_t tsc)
{
	unsigned module = class.module;
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
	unsigned slot = slot_for(owner, charged, module, thread);
	struct acct_frame *frame = &owner->frames[depth];
	struct acct_result *result = acct_result_of(owner, charged);
	frame->entry_tsc = tsc;
	frame->nested_ns = 0;
	frame->result = result;
	frame->subsystem = &result->subsystems[slot];
	frame->index = (uint8_t)charged;
	frame->slot = (uint8_t)slot;
	frame->module = (uint8_t)module;
	frame->kind = class.kind;
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
static inline __attribute__((always_inline)) int
open_call(struct acct_owner *owner, struct jp_context *context, unsigned flags,
	  struct acct_class class, uint64_t tsc)
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

static const char *frame_module(const struct acct_owner *owner, const struct acct_frame *frame)
{
	return owner->modules[frame->index][frame->slot];
}

/* Under the owner's lock and its result's sequence count bracket: charges
 * the closed call (its frame, ns long) to its subsystem. */
static inline void charge_call(struct acct_result *result, const struct acct_frame *frame,
			       uint64_t ns, uint64_t exclusive_ns, unsigned flags)
{
	struct acct_subsystem *subsystem = frame->subsystem;
	subsystem->calls++;
	subsystem->inclusive_ns += ns;
	subsystem->exclusive_ns += exclusive_ns;
	if (flags & ACCT_SYSCALL)
		result->syscalls++;
}

/* Whether the closed call is charged: its result is still the one charged
 * and its slot still in use (a TK_RESET meanwhile empties it, and a slot
 * with no name was emptied so). */
static inline bool call_still_charged(const struct acct_owner *owner,
				      const struct acct_frame *frame)
{
	return frame->index == owner->charged && frame->subsystem->name[0];
}

/* An event charged with the close of a call (native.c's kinds). */
struct acct_event_charge {
	unsigned event; /* ACCT_INTERRUPT, ... */
	bool amount_is_time; /* the call's ns (an interrupt's handler) */
	uint64_t amount;
};
static void charge_event_in_bracket(struct acct_owner *owner, struct acct_result *result,
				    unsigned event, uint64_t amount);
static void charge_event_locked(struct acct_owner *owner, unsigned event, uint64_t amount);

static __attribute__((noinline)) void stop_oneshot(struct acct_owner *owner,
						   const struct thread *thread)
{
	acct_owner_lock_in_advice(owner);
	if (still_owner(owner, thread) && owner->oneshot && owner->current >= 0)
		acct_stop_current(owner, clock_ns());
	acct_owner_unlock_in_advice(owner);
}

/* The stack is the owner thread's (see open_call): closing a call takes no
 * lock; charging it, a change of its result, takes the owner's and checks
 * under it that the entry is still the thread's: a thread whose process has
 * ended still runs join points on its way out, and reclaim_dead_owners
 * (acct.c) may meanwhile have given the entry up and freed its results pages
 * (it clears the entry under the same lock before it frees them).  Every
 * write to a results page from advice makes the same check under the lock. */
static inline __attribute__((always_inline)) uint64_t
close_frame(struct acct_owner *owner, const struct thread *thread, unsigned level,
	    struct acct_frame *frame, unsigned flags, uint64_t tsc,
	    const struct acct_event_charge *event)
{
	int64_t ticks = (int64_t)(tsc - frame->entry_tsc); /* < 0: moved to a CPU whose TSC lags */
	uint64_t ns = ticks > 0 ? acct_ticks_to_ns((uint64_t)ticks) : 0;
	owner->depth = level - 1;
	/* Exclusive time is charged by the outermost call of a run of one
	 * subsystem; a nested call of the same one passes its nested time up. */
	uint64_t exclusive_ns = ns - (frame->nested_ns < ns ? frame->nested_ns : ns);
	if (level > 1) {
		struct acct_frame *parent = frame - 1;
		bool same = parent->subsystem == frame->subsystem;
		parent->nested_ns += same ? frame->nested_ns : ns;
		if (same)
			exclusive_ns = 0;
	}
	/* The call and the event it means go to the charged result in one
	 * sequence count bracket. */
	acct_owner_lock_in_advice(owner);
	bool charged = false;
	if (still_owner(owner, thread) && owner->charged >= 0) {
		charged = call_still_charged(owner, frame);
		if (charged || event) {
			struct acct_result *result =
			    charged ? frame->result : acct_result_of(owner, owner->charged);
			acct_result_begin(result);
			if (charged)
				charge_call(result, frame, ns, exclusive_ns, flags);
			if (event)
				charge_event_in_bracket(owner, result, event->event,
							event->amount_is_time ? ns : event->amount);
			acct_result_end(result);
		}
	}
	acct_owner_unlock_in_advice(owner);
	if (__builtin_expect(level == 1 && owner->oneshot, 0))
		stop_oneshot(owner, thread);
	return charged ? ns : 0;
}

/* The open call at level (1 = outermost), or NULL when there is none. */
static inline struct acct_frame *frame_at(struct acct_owner *owner, unsigned level)
{
	return level && level <= live_depth(owner) ? &owner->frames[level - 1] : NULL;
}

static inline uint64_t close_call(struct acct_owner *owner, const struct thread *thread,
				  unsigned level, unsigned flags, uint64_t tsc)
{
	struct acct_frame *frame = frame_at(owner, level);
	return frame ? close_frame(owner, thread, level, frame, flags, tsc, NULL) : 0;
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
	return close_call(owner, thread, (unsigned)(context->activity & 0xff), flags, tsc);
}

const char *acct_innermost_subsystem(const struct jp_context *context)
{
	const char *name = "";
	struct acct_owner *owner = owner_hint(context->thread);
	if (!owner)
		return name;
	acct_owner_lock_in_advice(owner);
	unsigned depth = live_depth(owner);
	if (still_owner(owner, context->thread) && depth &&
	    frame_module(owner, &owner->frames[depth - 1]))
		name = frame_module(owner, &owner->frames[depth - 1]);
	acct_owner_unlock_in_advice(owner);
	return name;
}

/* ---- Events ----------------------------------------------------------------- */

/* event to each subsystem with a call open (in the charged result), once. */
static void charge_subsystems(const struct acct_owner *owner, struct acct_result *result,
			      unsigned event, uint64_t amount)
{
	unsigned seen = 0, depth = live_depth(owner);
	int charged = owner->charged;
	for (unsigned level = 0; level < depth; level++) {
		const struct acct_frame *frame = &owner->frames[level];
		unsigned bit = 1u << frame->slot;
		if ((seen & bit) || frame->index != charged || !frame->subsystem->name[0])
			continue; /* a slot with no name was emptied by a reset */
		seen |= bit;
		struct acct_subsystem *subsystem = &result->subsystems[frame->slot];
		if (event == ACCT_INTERRUPT) {
			subsystem->interrupts++;
		} else if (event == ACCT_ALLOC) {
			subsystem->allocs++;
			subsystem->alloc_bytes += amount;
		} else if (event == ACCT_FREE) {
			subsystem->frees++;
			subsystem->free_bytes += amount;
		}
	}
}

static void charge_activity(struct acct_result *result, unsigned event, uint64_t amount)
{
	switch (event) {
	case ACCT_INTERRUPT:
		result->interrupts++;
		result->irq_ns += amount;
		break;
	case ACCT_PAGE_FAULT: result->page_faults++; break;
	case ACCT_ALLOC: result->alloc_bytes += amount; break;
	case ACCT_FREE: result->free_bytes += amount; break;
	}
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
		charge_event_locked(owner, event, amount);
		error = 0;
	}
	acct_owner_unlock_in_advice(owner);
	return error;
}

/* Under the owner's lock, the entry still the thread's: event to the
 * charged result and to every subsystem with a call open. */
static void charge_event_in_bracket(struct acct_owner *owner, struct acct_result *result,
				    unsigned event, uint64_t amount)
{
	charge_activity(result, event, amount);
	charge_subsystems(owner, result, event, amount);
}

static void charge_event_locked(struct acct_owner *owner, unsigned event, uint64_t amount)
{
	if (owner->charged < 0)
		return;
	struct acct_result *result = acct_result_of(owner, owner->charged);
	acct_result_begin(result);
	charge_event_in_bracket(owner, result, event, amount);
	acct_result_end(result);
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
	unsigned flags = kind == ACCT_KIND_SYSCALL ? ACCT_SYSCALL : 0;
	if (__builtin_expect(kind < ACCT_KIND_IRQ, 1)) {
		close_frame(owner, thread, level, frame, flags, tsc, NULL);
		return;
	}
	struct acct_event_charge event;
	const struct acct_frame *parent = level > 1 ? frame - 1 : NULL;
	bool charges = event_of(jp, args, ret, (enum acct_kind)kind, parent, &event);
	close_frame(owner, thread, level, frame, flags, tsc, charges ? &event : NULL);
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

static void switch_out(struct acct_owner *owner, struct thread *prev, uint64_t now)
{
	acct_update_charged(owner, now);
	struct acct_result *result = acct_result_of(owner, owner->charged);
	acct_result_begin(result);
	result->context_switches++;
	acct_result_end(result);
	owner->out_since_ns = now;
	owner->out_runnable = thread_state(prev) != THREAD_BLOCKED;
}

static void charge_subsystems_out(struct acct_owner *owner, struct acct_result *result,
				  uint64_t out_ns)
{
	for (unsigned mask = slots_in_open_calls(owner); mask; mask &= mask - 1) {
		unsigned i = (unsigned)__builtin_ctz(mask);
		result->subsystems[i].sched_out_ns += out_ns;
		if (owner->out_runnable)
			result->subsystems[i].preempted_ns += out_ns;
		else
			result->subsystems[i].blocked_ns += out_ns;
	}
}

static void switch_in(struct acct_owner *owner, uint64_t now)
{
	if (!owner->out_since_ns)
		return;
	uint64_t out_ns = now - owner->out_since_ns;
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
		acct_note_switch((struct thread *)context->args[0], (struct thread *)context->args[1]);
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

static inline __attribute__((always_inline)) unsigned open_fast(struct acct_owner *owner,
								 const struct thread *thread,
								 struct acct_class class)
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

/* The accounted thread's call of a join point that may sleep. */
static __attribute__((noinline)) uint64_t around_accounted(const struct joinpoint *jp,
							   uint64_t *args,
							   const struct thread *thread,
							   struct acct_owner *owner)
{
	struct acct_class class = control_as_syscall(owner, acct_class_of(jp));
	unsigned level = class.kind == ACCT_KIND_CONTROL ? 0 : open_fast(owner, thread, class);
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
 * (sched.switch is _NOSLEEP: it never comes here.)  Sibling calls on (the
 * kernel is built without them): both ways end in a jump. */
__attribute__((optimize("optimize-sibling-calls"))) uint64_t
acct_around(const struct joinpoint *jp, uint64_t *args)
{
	count_event();
	struct thread *thread = running_thread();
	struct acct_owner *owner = running_owner();
	if (accounted(owner, thread))
		return around_accounted(jp, args, thread, owner);
	if (__builtin_expect(jp_section_leave_unless_resched(), 0))
		return resched_then_call(jp, args);
	return jp->call(args);
}
