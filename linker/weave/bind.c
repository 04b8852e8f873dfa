/*
 * Bindings: how an aspect's advice reaches the code that runs it.  Each
 * binding is a struct binding_ops (direct here in bind_direct.c; shm and msg
 * in their own files, linked in when present).  This file keeps the table,
 * records every weave as a dependency edge of the aspect (nothing is freed
 * while an edge exists), and switches a live aspect from one binding to
 * another: weave the new one (inactive), make it active with one release
 * store, unweave the old one (which waits for a grace period and merges what
 * it counted elsewhere).  Each event therefore runs the advice of exactly one
 * binding, and the counters, kept in the aspect, carry over.
 */
#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/internal.h"
#include "panic/panic.h"

const struct binding_ops *linker_binding_ops(enum aspect_binding binding)
{
	switch (binding) {
	case ASPECT_BINDING_DIRECT: return &binding_direct_ops;
	case ASPECT_BINDING_SHM: return &binding_shm_ops; /* NULL when not linked in (weak) */
	case ASPECT_BINDING_MSG: return &binding_msg_ops;
	default: return NULL;
	}
}

const char *aspect_binding_name(enum aspect_binding binding)
{
	static const char *const names[ASPECT_BINDING_COUNT] = {"none", "direct", "shm", "msg"};
	return binding < ASPECT_BINDING_COUNT ? names[binding] : "?";
}

enum aspect_binding aspect_binding_parse(const char *name)
{
	for (int b = ASPECT_BINDING_DIRECT; b < ASPECT_BINDING_COUNT; b++)
		if (name &&
		    __builtin_strcmp(name, aspect_binding_name((enum aspect_binding)b)) == 0)
			return (enum aspect_binding)b;
	return ASPECT_BINDING_NONE;
}

int aspect_weave_advice(struct aspect *aspect, enum aspect_binding binding, unsigned advice_index,
			const struct jp_advice *jp)
{
	ASSERT(advice_index < aspect->object.advice_count);
	if (aspect->weave_count >= ASPECT_MAX_WEAVES)
		return -ENOSPC;
	const char *pattern = aspect->object.advice[advice_index].pattern;
	int handle = jp_attach(pattern, jp);
	if (handle < 0) {
		pr_warn("linker: aspect '%s': advice %u on '%s': %s (%d)\n", aspect->name,
			advice_index, pattern,
			handle == -ENOENT ? "no join point matches" : "cannot attach", handle);
		return handle;
	}
	aspect->weaves[aspect->weave_count++] =
	    (struct aspect_weave){handle, binding, advice_index};
	return 0;
}

void aspect_unweave_binding(struct aspect *aspect, enum aspect_binding binding)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < aspect->weave_count; i++) {
		struct aspect_weave *w = &aspect->weaves[i];
		if (w->binding != binding) {
			aspect->weaves[kept++] = *w;
			continue;
		}
		int err = jp_detach(w->handle);
		if (err)
			pr_err("linker: aspect '%s': detaching handle %d failed (%d)\n",
			       aspect->name, w->handle, err);
	}
	aspect->weave_count = kept;
	jp_synchronize(); /* also when nothing was woven: no CPU is in its advice */
}

int aspect_weave_native(struct aspect *aspect, enum aspect_binding binding, const char *pattern,
			const struct jp_advice *jp)
{
	if (aspect->weave_count >= ASPECT_MAX_WEAVES)
		return -ENOSPC;
	int handle = jp_attach(pattern, jp);
	if (handle < 0) {
		pr_warn("linker: aspect '%s': native advice on '%s': cannot attach (%d)\n",
			aspect->name, pattern, handle);
		return handle;
	}
	aspect->weaves[aspect->weave_count++] =
	    (struct aspect_weave){handle, binding, aspect->object.advice_count};
	return 0;
}

/* True when name is in the direct-only part of the ABI. */
static bool is_direct_only(const char *name)
{
	static const char *const direct_only[] = {LINKER_ABI_DIRECT_ONLY(LINKER_ABI_NAME)};
	for (unsigned i = 0; i < sizeof direct_only / sizeof direct_only[0]; i++)
		if (strcmp(name, direct_only[i]) == 0)
			return true;
	return false;
}

/* True when the object imports from LINKER_ABI_DIRECT_ONLY: only `direct`
 * offers those functions. */
static bool needs_direct(const struct linker_object *object)
{
	for (unsigned i = 1; i < object->symbol_count; i++) {
		const struct linker_sym *sym = &object->symbols[i];
		if (sym->st_shndx == LINKER_SHN_UNDEF && sym->st_name < object->strings_size &&
		    is_direct_only(object->strings + sym->st_name))
			return true;
	}
	return false;
}

/* Weaves binding for aspect, inactive.  Returns 0 or the binding's error, or
 * -EPERM (an aspect that needs `direct`, bound another way). */
int linker_bind(struct aspect *aspect, enum aspect_binding binding)
{
	const struct binding_ops *ops = linker_binding_ops(binding);
	if (!ops)
		return binding > ASPECT_BINDING_NONE && binding < ASPECT_BINDING_COUNT ? -ENOSYS
										       : -EINVAL;
	if (binding != ASPECT_BINDING_DIRECT && linker_native_for(aspect->name)) {
		pr_warn("linker: aspect '%s' is measured by the kernel's own advice: it links "
			"direct only\n",
			aspect->name);
		return -EPERM;
	}
	if (binding != ASPECT_BINDING_DIRECT && needs_direct(&aspect->object)) {
		pr_warn("linker: aspect '%s' imports the kernel-only accounting ABI (ms_acct_*), "
			"which writes results synchronously into their owners' pages: it links "
			"direct only\n",
			aspect->name);
		return -EPERM;
	}
	if (aspect->woven[binding])
		return -EBUSY;
	int err = ops->attach(aspect);
	if (err)
		return err;
	aspect->woven[binding] = true;
	return 0;
}

/* Unweaves binding (must not be the active one). */
void linker_unbind(struct aspect *aspect, enum aspect_binding binding)
{
	const struct binding_ops *ops = linker_binding_ops(binding);
	ASSERT(!aspect_is_active(aspect, binding));
	if (!ops || !aspect->woven[binding])
		return;
	ops->detach(aspect);
	aspect->woven[binding] = false;
}

void linker_collect(struct aspect *aspect)
{
	for (int b = ASPECT_BINDING_DIRECT; b < ASPECT_BINDING_COUNT; b++) {
		const struct binding_ops *ops = linker_binding_ops((enum aspect_binding)b);
		if (ops && ops->collect && aspect->woven[b])
			ops->collect(aspect);
	}
}

/* The switch itself: new must be woven. */
void linker_switch_binding(struct aspect *aspect, enum aspect_binding from, enum aspect_binding to)
{
	ASSERT(aspect->woven[to]);
	__atomic_store_n(&aspect->active, to, __ATOMIC_RELEASE);
	if (from != ASPECT_BINDING_NONE && from != to)
		linker_unbind(aspect, from);
}
