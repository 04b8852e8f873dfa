/*
 * Phase 5 of linking: the aspect's metadata.  MS_ASPECT, MS_BEFORE/MS_AFTER,
 * MS_INIT and MS_EXIT put structures holding pointers into .ms_aspect,
 * .ms_advice, .ms_init and .ms_exit; after relocation those pointers hold
 * run-time addresses.  Nothing in them is trusted: every string must lie in
 * the object and end inside it, every function pointer must point into the
 * text region, kinds and flags must be known values.  What passes is copied
 * into struct linker_object, so later code never reads the aspect's data.
 *
 * Portable (see object.h).
 */
#include "lib/errno.h"
#include "linker/object/internal.h"

/* Copies the string at address (inside one region, terminated there) into
 * buf of size bytes; returns its length, or -1 when it is not such a string
 * or does not fit. */
static long copy_object_string(const struct linker_object *o, uint64_t address, char *buf,
			       size_t size)
{
	for (int r = 0; r < LINKER_REGION_COUNT; r++) {
		if (!linker_object_contains(o, (enum linker_region)r, address, 1))
			continue;
		uint64_t end = (uint64_t)(uintptr_t)o->region[r] + o->region_size[r];
		size_t room = (size_t)(end - address);
		const char *s = (const char *)(uintptr_t)address;
		size_t n = linker_string_length(s, room < size ? room : size);
		if (n == room || n >= size)
			return -1;
		__builtin_memcpy(buf, s, n + 1);
		return (long)n;
	}
	return -1;
}

static bool in_text(const struct linker_object *o, uint64_t address)
{
	return linker_object_contains(o, LINKER_REGION_TEXT, address, 1);
}

static bool valid_name(const char *name)
{
	if (!name[0])
		return false;
	for (const char *c = name; *c; c++) {
		bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			  (*c >= '0' && *c <= '9') || *c == '_' || *c == '-';
		if (!ok)
			return false;
	}
	return true;
}

static int read_aspect(struct linker_object *o)
{
	const struct ms_aspect_info *info =
	    (const void *)(uintptr_t)o->section_address[o->aspect_section];
	if (info->abi_version != MS_ABI_VERSION)
		return linker_fail(o, -ENOEXEC, "aspect ABI version %u, the linker speaks %u",
				   info->abi_version, MS_ABI_VERSION);
	if (copy_object_string(o, (uint64_t)(uintptr_t)info->name, o->name, sizeof o->name) < 0 ||
	    !valid_name(o->name))
		return linker_fail(
		    o, -ENOEXEC,
		    "aspect name must be 1..%d characters of [A-Za-z0-9_-] in the object",
		    LINKER_NAME_MAX - 1);
	if (copy_object_string(o, (uint64_t)(uintptr_t)info->description, o->description,
			       sizeof o->description) < 0)
		return linker_fail(o, -ENOEXEC, "aspect description is not a string in the object");
	return 0;
}

static int read_advice(struct linker_object *o, unsigned i, const struct ms_advice_info *info)
{
	struct linker_advice *a = &o->advice[i];
	if (copy_object_string(o, (uint64_t)(uintptr_t)info->pattern, a->pattern,
			       sizeof a->pattern) <= 0)
		return linker_fail(o, -ENOEXEC, "advice %u: pattern is not a string in the object",
				   i);
	if (!in_text(o, (uint64_t)(uintptr_t)info->function))
		return linker_fail(o, -ENOEXEC, "advice %u: function is not in the aspect's text",
				   i);
	if (info->kind != MS_ADVICE_BEFORE && info->kind != MS_ADVICE_AFTER)
		return linker_fail(o, -ENOEXEC, "advice %u: kind %d is neither before nor after", i,
				   info->kind);
	if (info->flags & ~MS_WANT_TIMESTAMPS)
		return linker_fail(o, -ENOEXEC, "advice %u: unknown flags %#x", i, info->flags);
	a->function = info->function;
	a->kind = info->kind;
	a->priority = info->priority;
	a->flags = info->flags;
	return 0;
}

static int read_function(struct linker_object *o, int section, const char *what, void **out)
{
	*out = NULL;
	if (section < 0)
		return 0;
	if (o->sections[section].sh_size != sizeof(void *))
		return linker_fail(o, -ENOEXEC, "more than one %s", what);
	void *fn = *(void *const *)(uintptr_t)o->section_address[section];
	if (!in_text(o, (uint64_t)(uintptr_t)fn))
		return linker_fail(o, -ENOEXEC, "%s function is not in the aspect's text", what);
	*out = fn;
	return 0;
}

int linker_read_metadata(struct linker_object *object)
{
	int err = read_aspect(object);
	if (err)
		return err;
	object->advice_count = 0;
	if (object->advice_section >= 0) {
		const struct ms_advice_info *info =
		    (const void *)(uintptr_t)object->section_address[object->advice_section];
		unsigned count =
		    (unsigned)(object->sections[object->advice_section].sh_size / sizeof *info);
		for (unsigned i = 0; i < count; i++)
			if ((err = read_advice(object, i, &info[i])))
				return err;
		object->advice_count = count;
	}
	void *fn;
	if ((err = read_function(object, object->init_section, "MS_INIT", &fn)))
		return err;
	object->init = (ms_init_fn)fn;
	if ((err = read_function(object, object->exit_section, "MS_EXIT", &fn)))
		return err;
	object->exit = (ms_exit_fn)fn;
	return 0;
}

int linker_link_object(struct linker_object *object, const struct linker_env *env)
{
	int err = linker_layout_object(object, env);
	if (err)
		return err;
	err = linker_resolve_symbols(object, env);
	if (!err)
		err = linker_apply_relocations(object);
	if (!err)
		err = linker_read_metadata(object);
	if (err)
		linker_release_object(object, env, false);
	return err;
}
