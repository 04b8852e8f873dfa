/*
 * The kernel side of the rscfl aspect (aspects/rscfl.c): the state its
 * advice charges, reached through the ms_acct_* ABI.  The aspect decides
 * what a join point means (a call of its module, a system call, an
 * interrupt, a page fault, an allocation, a switch); this file keeps, per
 * accounted thread, the stack of calls it is inside and writes the results
 * under their sequence counts.
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
 * call's start as a TSC reading (the guard's, taken as the advice began: no
 * reading of its own), converts the difference once, in line, at the close,
 * and writes the result under one sequence count bracket per close (none at
 * the open).
 */
#include "acct/internal.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "time/time.h"

#define ACTIVITY_TAG (1ULL << 63)

/* Thread t's owner, looked up without a lock: the thread's state pointer,
 * so that a thread that is not accounted (lwIP's, the NIC's, idle, most of
 * the time every other one) costs a load and a branch; the caller checks the
 * entry still names t (still_owner). */
static struct acct_owner *lookup(const struct thread *t)
{
	return t ? thread_acct_state(t) : NULL;
}

/* A thread's state pointer is set only by its own owner_setup, and a thread
 * struct reused for another thread starts with it NULL: the owner entry is
 * still that thread's while it names the thread. */
static bool still_owner(const struct acct_owner *o, const struct thread *t)
{
	return o && t && o->thread == t;
}

/* The slot of module in result index's subsystems, opened if need be; the
 * last slot takes every module past the others ("other").  Join points of a
 * module share its name's string, so slot_of compares the pointers over
 * every slot first, and this (out of line) compares the text only when none
 * matches. */
static __attribute__((noinline)) unsigned open_slot(struct acct_owner *o, int index,
						    const char *module)
{
	struct acct_result *r = acct_result_of(o, index);
	unsigned i, count = r->subsystem_count;
	for (i = 0; i < count; i++)
		if (strcmp(o->modules[index][i], module) == 0)
			return i;
	if (i == ACCT_MAX_SUBSYSTEMS - 1)
		module = "other";
	if (i == ACCT_MAX_SUBSYSTEMS)
		return ACCT_MAX_SUBSYSTEMS - 1;
	o->modules[index][i] = module;
	acct_result_begin(r);
	strlcpy(r->subsystems[i].name, module, ACCT_NAME_MAX);
	r->subsystem_count = i + 1;
	acct_result_end(r);
	return i;
}

/* The calls of o still open: none when the aspect was unlinked since o
 * last opened one (their after advice was lost; acct_set_woven moves the
 * epoch on instead of touching every owner's stack under its feet). */
static inline unsigned live_depth(const struct acct_owner *o)
{
	return o->epoch == __atomic_load_n(&acct_epoch, __ATOMIC_RELAXED) ? o->depth : 0;
}

/* The subsystem slots of the charged result with a call open, as a mask. */
static unsigned open_slots(const struct acct_owner *o)
{
	unsigned mask = 0, depth = live_depth(o);
	for (unsigned i = 0; i < depth; i++) {
		const struct acct_frame *f = &o->frames[i];
		if (f->token == o->charged && o->modules[f->token][f->slot])
			mask |= 1u << f->slot;
	}
	return mask;
}

/* ---- Calls ------------------------------------------------------------------ */

/* The token waiting for the next system call becomes current: a change of
 * results, under the owner's lock. */
static __attribute__((noinline)) void start_next(struct acct_owner *o, const struct thread *t)
{
	acct_owner_lock_in_advice(o);
	if (still_owner(o, t) && o->next >= 0) {
		acct_make_current(o, o->next, clock_ns());
		o->oneshot = true;
		o->next = -1;
	}
	acct_owner_unlock_in_advice(o);
}

/* The slot, opened under the owner's lock when it is new (a change of the
 * result's subsystem names). */
static __attribute__((noinline)) unsigned
open_slot_locked(struct acct_owner *o, int index, const char *module, const struct thread *t)
{
	acct_owner_lock_in_advice(o);
	unsigned slot = still_owner(o, t) ? open_slot(o, index, module) : ACCT_MAX_SUBSYSTEMS - 1;
	acct_owner_unlock_in_advice(o);
	return slot;
}

static inline unsigned slot_of(struct acct_owner *o, int index, const char *module,
			       const struct thread *t)
{
	const char *const *modules = o->modules[index];
	for (unsigned i = 0; i < ACCT_MAX_SUBSYSTEMS; i++) {
		if (modules[i] == module)
			return i;
		if (!modules[i])
			break; /* slots are opened in order */
	}
	return open_slot_locked(o, index, module, t);
}

/* Without the owner's lock: the frames and depth are the owner thread's
 * alone (its advice runs with preemption off on its CPU, and interrupts
 * taken meanwhile run no advice); what other threads change here (charged,
 * by acct_set_woven) is read once, and either value is a consistent start:
 * a call opened for a result no longer charged at its close is not charged. */
static inline int push_frame(struct acct_owner *o, struct jp_context *context, unsigned flags,
			     uint64_t tsc)
{
	uint32_t epoch = __atomic_load_n(&acct_epoch, __ATOMIC_RELAXED);
	unsigned depth = o->depth;
	if ((flags & ACCT_OUTERMOST) || o->epoch != epoch) {
		/* still open: calls whose after was missed (unlinked meanwhile) */
		depth = 0;
		o->epoch = epoch;
		if ((flags & ACCT_OUTERMOST) && __builtin_expect(o->next >= 0, 0))
			start_next(o, context->thread);
	}
	int charged = __atomic_load_n(&o->charged, __ATOMIC_RELAXED);
	if (charged < 0 || depth == ACCT_MAX_DEPTH) {
		o->depth = depth;
		return 0;
	}
	unsigned slot = slot_of(o, charged, context->joinpoint->module, context->thread);
	struct acct_frame *f = &o->frames[depth];
	struct acct_result *r = acct_result_of(o, charged);
	f->entry_tsc = tsc;
	f->nested_ns = 0;
	f->result = r;
	f->subsystem = &r->subsystems[slot];
	f->token = (uint8_t)charged;
	f->slot = (uint8_t)slot;
	o->depth = depth + 1;
	context->activity = ACTIVITY_TAG | (uint64_t)(o - acct_owners) << 8 | (depth + 1);
	return 1;
}

int acct_call_enter(struct jp_context *context, unsigned flags, uint64_t tsc)
{
	context->activity = 0;
	const struct thread *t = context->thread;
	struct acct_owner *o = lookup(t);
	if (!o || __atomic_load_n(&o->thread, __ATOMIC_RELAXED) != t)
		return 0;
	return push_frame(o, context, flags, tsc);
}

static const char *frame_module(const struct acct_owner *o, const struct acct_frame *f)
{
	return o->modules[f->token][f->slot];
}

/* Under o's lock: charges the closed frame f (ns long) to its subsystem,
 * if its result is still the one charged and its slot still open (a
 * TK_RESET meanwhile closes it): the one sequence count bracket of a close.
 * Returns whether it did. */
static inline bool charge_call(struct acct_owner *o, const struct acct_frame *f, uint64_t ns,
			       uint64_t exclusive_ns, unsigned flags)
{
	if (f->token != o->charged || !f->subsystem->name[0]) /* reset: the slot is empty */
		return false;
	struct acct_result *r = f->result;
	struct acct_subsystem *s = f->subsystem;
	acct_result_begin(r);
	s->calls++;
	s->inclusive_ns += ns;
	s->exclusive_ns += exclusive_ns;
	if (flags & ACCT_SYSCALL)
		r->syscalls++;
	acct_result_end(r);
	return true;
}

static __attribute__((noinline)) void stop_oneshot(struct acct_owner *o, const struct thread *t)
{
	acct_owner_lock_in_advice(o);
	if (still_owner(o, t) && o->oneshot && o->current >= 0)
		acct_stop_current(o, clock_ns());
	acct_owner_unlock_in_advice(o);
}

/* The stack is the owner thread's (see push_frame): popping takes no lock;
 * charging the call, a change of its result, takes the owner's and checks
 * under it that the entry is still t's: a thread whose process has ended
 * still runs join points on its way out, and reclaim_dead_owners (acct.c)
 * may meanwhile have given the entry up and freed its results pages (it
 * clears the entry under the same lock before it frees them).  Every write
 * to a results page from advice makes the same check under the lock. */
static inline uint64_t pop_frame(struct acct_owner *o, const struct thread *t, unsigned level,
				 unsigned flags, uint64_t tsc)
{
	if (level == 0 || level > live_depth(o))
		return 0;
	struct acct_frame *f = &o->frames[level - 1];
	int64_t ticks = (int64_t)(tsc - f->entry_tsc); /* < 0: moved to a CPU whose TSC lags */
	uint64_t ns = ticks > 0 ? acct_ticks_to_ns((uint64_t)ticks) : 0;
	o->depth = level - 1;
	/* Exclusive time is charged by the outermost call of a run of one
	 * subsystem; a nested call of the same one passes its nested time up. */
	uint64_t exclusive_ns = ns - (f->nested_ns < ns ? f->nested_ns : ns);
	if (level > 1) {
		struct acct_frame *parent = f - 1;
		bool same = parent->subsystem == f->subsystem;
		parent->nested_ns += same ? f->nested_ns : ns;
		if (same)
			exclusive_ns = 0;
	}
	acct_owner_lock_in_advice(o);
	bool charged = still_owner(o, t) && charge_call(o, f, ns, exclusive_ns, flags);
	acct_owner_unlock_in_advice(o);
	if (__builtin_expect(level == 1 && o->oneshot, 0))
		stop_oneshot(o, t);
	return charged ? ns : 0;
}

uint64_t acct_call_exit(const struct jp_context *context, unsigned flags, uint64_t tsc)
{
	const struct thread *t = context->thread;
	if (!(context->activity & ACTIVITY_TAG) || !t)
		return 0;
	struct acct_owner *o = &acct_owners[(context->activity >> 8) % ACCT_MAX_OWNERS];
	__asm__("" : "+r"(o)); /* a pointer from here on, not an index to scale again */
	if (__atomic_load_n(&o->thread, __ATOMIC_RELAXED) != t)
		return 0;
	return pop_frame(o, t, (unsigned)(context->activity & 0xff), flags, tsc);
}

const char *acct_innermost_subsystem(const struct jp_context *context)
{
	const char *name = "";
	struct acct_owner *o = lookup(context->thread);
	if (!o)
		return name;
	acct_owner_lock_in_advice(o);
	unsigned depth = live_depth(o);
	if (still_owner(o, context->thread) && depth && frame_module(o, &o->frames[depth - 1]))
		name = frame_module(o, &o->frames[depth - 1]);
	acct_owner_unlock_in_advice(o);
	return name;
}

/* ---- Events ----------------------------------------------------------------- */

static void charge_subsystems(struct acct_result *r, unsigned mask, unsigned event, uint64_t amount)
{
	for (unsigned i = 0; i < ACCT_MAX_SUBSYSTEMS; i++) {
		if (!(mask & (1u << i)))
			continue;
		struct acct_subsystem *s = &r->subsystems[i];
		if (event == ACCT_INTERRUPT) {
			s->interrupts++;
		} else if (event == ACCT_ALLOC) {
			s->allocs++;
			s->alloc_bytes += amount;
		} else if (event == ACCT_FREE) {
			s->frees++;
			s->free_bytes += amount;
		}
	}
}

static void charge_activity(struct acct_result *r, unsigned event, uint64_t amount)
{
	switch (event) {
	case ACCT_INTERRUPT:
		r->interrupts++;
		r->irq_ns += amount;
		break;
	case ACCT_PAGE_FAULT: r->page_faults++; break;
	case ACCT_ALLOC: r->alloc_bytes += amount; break;
	case ACCT_FREE: r->free_bytes += amount; break;
	}
}

int acct_charge_event(const struct jp_context *context, unsigned event, uint64_t amount)
{
	if (event < ACCT_INTERRUPT || event > ACCT_FREE)
		return -EINVAL;
	struct acct_owner *o = lookup(context->thread);
	if (!o)
		return -ENOENT;
	int result = -ENOENT;
	acct_owner_lock_in_advice(o);
	if (still_owner(o, context->thread) && o->charged >= 0) {
		struct acct_result *r = acct_result_of(o, o->charged);
		acct_result_begin(r);
		charge_activity(r, event, amount);
		charge_subsystems(r, open_slots(o), event, amount);
		acct_result_end(r);
		result = 0;
	}
	acct_owner_unlock_in_advice(o);
	return result;
}

/* ---- Switches --------------------------------------------------------------- */

static void switch_out(struct acct_owner *o, struct thread *prev, uint64_t now)
{
	acct_update_charged(o, now);
	struct acct_result *r = acct_result_of(o, o->charged);
	acct_result_begin(r);
	r->context_switches++;
	acct_result_end(r);
	o->off_ns = now;
	o->off_runnable = thread_state(prev) != THREAD_BLOCKED;
}

static void charge_out(struct acct_owner *o, struct acct_result *r, uint64_t out_ns)
{
	unsigned mask = open_slots(o);
	for (unsigned i = 0; i < ACCT_MAX_SUBSYSTEMS; i++) {
		if (!(mask & (1u << i)))
			continue;
		r->subsystems[i].sched_out_ns += out_ns;
		if (o->off_runnable)
			r->subsystems[i].preempted_ns += out_ns;
		else
			r->subsystems[i].blocked_ns += out_ns;
	}
}

static void switch_in(struct acct_owner *o, uint64_t now)
{
	if (!o->off_ns)
		return;
	uint64_t out_ns = now - o->off_ns;
	o->on_cpu_ns = now; /* the time off the CPU is no CPU time */
	struct acct_result *r = acct_result_of(o, o->charged);
	acct_result_begin(r);
	r->sched_out_ns += out_ns;
	if (o->off_runnable)
		r->preempted_ns += out_ns;
	else
		r->blocked_ns += out_ns;
	charge_out(o, r, out_ns);
	acct_result_end(r);
	o->off_ns = 0;
	acct_update_charged(o, now);
}

/* Each owner under its own lock, one after the other (prev and next may
 * both be accounted, and no two owner locks are held at once). */
void acct_note_switch(struct thread *prev, struct thread *next)
{
	struct acct_owner *out = lookup(prev), *in = lookup(next);
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
