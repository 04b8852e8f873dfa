/*
 * The `direct` binding: advice runs in the kernel, called from the join point.
 * Each piece of the aspect's advice becomes a struct jp_advice whose before or
 * after is a kernel function here; it checks that `direct` is the aspect's
 * active binding (relink switches it with one store) and calls the aspect's
 * code through the guard, which contains faults and overruns: both are
 * guard.c's linker_direct_before/after, with the struct linker_direct_call
 * here as their cookie (guard_internal.h).  The
 * jp_advice structs belong to the binding's state and live until detach,
 * after jp_detach's grace period.  A before and an after advice on the same
 * pattern with the same priority and flags become one jp_advice with both:
 * one weave instead of two, so an aspect on "*" needs one advice list per
 * join point at a time (the pool, joinpoint/pool.c, holds fewer than twice
 * the join points), and each event one dispatch entry.
 *
 * A built-in aspect with native advice (weave.h: the accounting's) gets
 * that woven too, unguarded: kernel code the join point calls itself.  Its
 * events are the service's count, merged into the aspect's at collect and
 * detach.
 */
#include "lib/errno.h"
#include "linker/weave/guard_internal.h"
#include "linker/weave/internal.h"
#include "mm/mm.h"

struct direct_advice {
	struct jp_advice jp;
	struct linker_direct_call call; /* the cookie: guard.c calls the advice */
};

struct direct_state {
	struct direct_advice advice[LINKER_MAX_ADVICE];
	const struct linker_native_advice *native; /* NULL: none */
	uint64_t native_events;                    /* its count merged so far */
};

static void fill_advice(struct direct_advice *d, struct aspect *aspect, unsigned i)
{
	const struct linker_advice *a = &aspect->object.advice[i];
	d->call.aspect = aspect;
	d->call.before = a->kind == MS_ADVICE_BEFORE ? a->function : NULL;
	d->call.after = a->kind == MS_ADVICE_AFTER ? a->function : NULL;
	d->jp.name = aspect->name;
	d->jp.before = d->call.before ? linker_direct_before : NULL;
	d->jp.after = d->call.after ? linker_direct_after : NULL;
	d->jp.cookie = &d->call;
	d->jp.priority = a->priority;
	d->jp.flags = (a->flags & MS_WANT_TIMESTAMPS) ? JP_ADVICE_TIMESTAMPS : 0;
}

/* Folds advice i into an earlier one of the other kind on the same pattern,
 * priority and flags.  Returns true when it did. */
static bool fold_into_earlier(struct direct_state *state, struct aspect *aspect, unsigned i)
{
	const struct linker_advice *a = &aspect->object.advice[i], *e;
	for (unsigned j = 0; j < i; j++) {
		struct direct_advice *d = &state->advice[j];
		e = &aspect->object.advice[j];
		if (!d->call.aspect || e->priority != a->priority || e->flags != a->flags ||
		    __builtin_strcmp(e->pattern, a->pattern) != 0)
			continue;
		if (a->kind == MS_ADVICE_AFTER && !d->call.after) {
			d->call.after = a->function;
			d->jp.after = linker_direct_after;
			return true;
		}
		if (a->kind == MS_ADVICE_BEFORE && !d->call.before) {
			d->call.before = a->function;
			d->jp.before = linker_direct_before;
			return true;
		}
	}
	return false;
}

static int direct_attach(struct aspect *aspect)
{
	struct direct_state *state = kzalloc(sizeof *state);
	int err = 0;
	if (!state)
		return -ENOMEM;
	aspect->binding_state[ASPECT_BINDING_DIRECT] = state;
	for (unsigned i = 0; i < aspect->object.advice_count; i++)
		if (!fold_into_earlier(state, aspect, i))
			fill_advice(&state->advice[i], aspect, i);
	/* Woven only once complete: jp_attach copies the function pointers. */
	for (unsigned i = 0; i < aspect->object.advice_count; i++) {
		if (!state->advice[i].call.aspect)
			continue; /* folded into an earlier one */
		err = aspect_weave_advice(aspect, ASPECT_BINDING_DIRECT, i, &state->advice[i].jp);
		if (err)
			goto out_unweave;
	}
	state->native = linker_native_for(aspect->name);
	if (state->native) {
		state->native_events = state->native->events();
		err = aspect_weave_native(aspect, ASPECT_BINDING_DIRECT, state->native->pattern,
					  state->native->advice);
		if (err)
			goto out_unweave;
	}
	return 0;
out_unweave:
	aspect_unweave_binding(aspect, ASPECT_BINDING_DIRECT);
	aspect->binding_state[ASPECT_BINDING_DIRECT] = NULL;
	kfree(state);
	return err;
}

/* Adds the native advice's events since the last merge to the aspect's. */
static void direct_collect(struct aspect *aspect)
{
	struct direct_state *state = aspect->binding_state[ASPECT_BINDING_DIRECT];
	if (!state || !state->native)
		return;
	uint64_t events = state->native->events();
	__atomic_fetch_add(&aspect->events, events - state->native_events, __ATOMIC_RELAXED);
	state->native_events = events;
}

static void direct_detach(struct aspect *aspect)
{
	aspect_unweave_binding(aspect, ASPECT_BINDING_DIRECT);
	direct_collect(aspect);
	kfree(aspect->binding_state[ASPECT_BINDING_DIRECT]);
	aspect->binding_state[ASPECT_BINDING_DIRECT] = NULL;
}

const struct binding_ops binding_direct_ops = {
    .binding = ASPECT_BINDING_DIRECT,
    .name = "direct",
    .attach = direct_attach,
    .detach = direct_detach,
    .collect = direct_collect, /* the guard counts in the aspect; native advice here */
};
