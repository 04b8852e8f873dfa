/*
 * The measuring: one advice on every join point ("*").  `before` finds the
 * calling thread's owner (nothing to do for other threads), starts a pending
 * ACCT_NEXT token on a system call's entry, and pushes a frame charged to the
 * current token, whose depth it hands to `after` in context->activity.
 * `after` pops back to that depth (frames whose `after` was missed, across a
 * detach, go with it) and charges the call to its subsystem, if its token is
 * still the current one.  On sched.switch
 * it counts the thread's time off the CPU instead: into the activity, and
 * into every subsystem the thread is inside (inclusive, once per subsystem).
 */
#include "acct/internal.h"
#include "joinpoint/joinpoint.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "time/time.h"

#define ACTIVITY_TAG (1ULL << 63)

static bool is_module(const struct joinpoint *jp, const char *name)
{
	return strcmp(jp->module, name) == 0;
}

/* The slot of jp's module in token index's subsystems, opened if need be;
 * the last slot takes every module past the others ("other"). */
static unsigned subsystem_slot(struct acct_owner *o, int index, const char *module)
{
	struct acct_result *r = &o->page->results[index];
	unsigned i;
	for (i = 0; i < r->subsystem_count; i++)
		if (o->modules[index][i] == module || strcmp(o->modules[index][i], module) == 0)
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

static void switch_out(struct acct_owner *o, struct thread *prev, uint64_t now)
{
	acct_update_current(o, now);
	struct acct_result *r = &o->page->results[o->current];
	acct_result_begin(r);
	r->context_switches++;
	acct_result_end(r);
	o->off_ns = now;
	o->off_runnable = thread_state(prev) != THREAD_BLOCKED;
}

static void charge_frames_out(struct acct_owner *o, uint64_t out_ns)
{
	struct acct_result *r = &o->page->results[o->current];
	bool seen[ACCT_MAX_SUBSYSTEMS] = {false};
	for (unsigned i = 0; i < o->depth; i++) {
		const struct acct_frame *f = &o->frames[i];
		if (f->token != o->current || seen[f->slot] || !o->modules[f->token][f->slot])
			continue;
		seen[f->slot] = true;
		r->subsystems[f->slot].sched_out_ns += out_ns;
	}
}

static void switch_in(struct acct_owner *o, uint64_t now)
{
	if (!o->off_ns)
		return;
	uint64_t out_ns = now - o->off_ns;
	o->on_cpu_ns = now; /* the time off the CPU is no CPU time */
	struct acct_result *r = &o->page->results[o->current];
	acct_result_begin(r);
	r->sched_out_ns += out_ns;
	if (o->off_runnable)
		r->preempted_ns += out_ns;
	else
		r->blocked_ns += out_ns;
	charge_frames_out(o, out_ns);
	acct_result_end(r);
	o->off_ns = 0;
	acct_update_current(o, now);
}

static void on_switch(struct jp_context *context)
{
	struct thread *prev = (struct thread *)context->args[0];
	struct thread *next = (struct thread *)context->args[1];
	uint64_t now = clock_ns();
	struct acct_owner *o = acct_find_owner(thread_id(prev));
	if (o && o->current >= 0)
		switch_out(o, prev, now);
	o = acct_find_owner(thread_id(next));
	if (o && o->current >= 0)
		switch_in(o, now);
}

static void push_frame(struct acct_owner *o, struct jp_context *context)
{
	/* A system call is a thread's outermost join point: frames still open
	 * are ones whose after was missed (the advice was detached meanwhile). */
	if (is_module(context->joinpoint, "sys"))
		o->depth = 0;
	if (o->next >= 0 && o->depth == 0 && is_module(context->joinpoint, "sys")) {
		acct_make_current(o, o->next, clock_ns());
		o->oneshot = true;
		o->next = -1;
	}
	if (o->current < 0 || o->depth == ACCT_MAX_DEPTH)
		return;
	struct acct_frame *f = &o->frames[o->depth++];
	f->token = (uint8_t)o->current;
	f->slot = (uint8_t)subsystem_slot(o, o->current, context->joinpoint->module);
	f->entry_ns = clock_ns();
	context->activity = ACTIVITY_TAG | o->depth;
}

static void acct_before(struct jp_context *context, void *cookie)
{
	(void)cookie;
	if (!context->thread)
		return;
	context->activity = 0;
	bool is_switch = strcmp(context->joinpoint->name, "sched.switch") == 0;
	/* Unaccounted threads skip the lock (a racy look, checked again under it). */
	if (!is_switch && !acct_find_owner(thread_id(context->thread)))
		return;
	uint64_t flags = spin_lock_irqsave(&acct_lock);
	if (is_switch) {
		on_switch(context);
	} else {
		struct acct_owner *o = acct_find_owner(thread_id(context->thread));
		if (o)
			push_frame(o, context);
	}
	spin_unlock_irqrestore(&acct_lock, flags);
}

static void pop_frame(struct acct_owner *o, unsigned level, const struct joinpoint *jp)
{
	if (level == 0 || level > o->depth)
		return;
	struct acct_frame *f = &o->frames[level - 1];
	o->depth = level - 1;
	uint64_t now = clock_ns();
	/* Only while its token is still current: the calls that stop or switch
	 * tokens (and pay for weaving) are charged to none. */
	bool charged = f->token == o->current && o->modules[f->token][f->slot];
	if (charged) {
		struct acct_result *r = &o->page->results[f->token];
		acct_result_begin(r);
		r->subsystems[f->slot].calls++;
		r->subsystems[f->slot].inclusive_ns += now - f->entry_ns;
		if (is_module(jp, "sys"))
			r->syscalls++;
		acct_result_end(r);
	}
	if (o->depth == 0 && o->oneshot && o->current >= 0)
		acct_stop_current(o, now);
}

static void acct_after(struct jp_context *context, void *cookie)
{
	(void)cookie;
	if (!(context->activity & ACTIVITY_TAG) || !context->thread)
		return;
	uint64_t flags = spin_lock_irqsave(&acct_lock);
	struct acct_owner *o = acct_find_owner(thread_id(context->thread));
	if (o)
		pop_frame(o, (unsigned)(context->activity & 0xff), context->joinpoint);
	spin_unlock_irqrestore(&acct_lock, flags);
}

const struct jp_advice acct_advice = {
    .name = "acct",
    .before = acct_before,
    .after = acct_after,
    .priority = 100,
};
