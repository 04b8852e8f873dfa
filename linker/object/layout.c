/*
 * Phase 2 of linking: layout.  Every allocated section goes into one of two
 * regions: executable sections into the text region (written now, made
 * read-only and executable by the kernel after relocation), everything else
 * (read-only data, data, bss, the aspect's metadata) into the data region,
 * which is never executable.  Each section is placed at the next offset that
 * honours its alignment; the region's size is the sum, checked against
 * LINKER_MAX_REGION_SIZE.  The environment allocates the regions (zeroed), so
 * NOBITS sections need no work and the same code lays an aspect out in kernel
 * slots or in a monitor's heap.
 *
 * Portable (see object.h).
 */
#include "lib/errno.h"
#include "linker/object/internal.h"

static bool is_loaded(const struct linker_shdr *s)
{
	return (s->sh_flags & LINKER_SHF_ALLOC) && s->sh_size > 0;
}

static enum linker_region region_of(const struct linker_shdr *s)
{
	return (s->sh_flags & LINKER_SHF_EXECINSTR) ? LINKER_REGION_TEXT : LINKER_REGION_DATA;
}

static uint64_t align_up(uint64_t value, uint64_t align)
{
	return align > 1 ? (value + align - 1) & ~(align - 1) : value;
}

/* Offsets within each region (kept in section_address until the regions
 * exist) and the regions' sizes. */
static int compute_offsets(struct linker_object *o, uint64_t offsets[])
{
	uint64_t size[LINKER_REGION_COUNT] = {0, 0};
	for (unsigned i = 1; i < o->section_count; i++) {
		const struct linker_shdr *s = &o->sections[i];
		if (!is_loaded(s))
			continue;
		enum linker_region r = region_of(s);
		uint64_t at = align_up(size[r], s->sh_addralign);
		offsets[i] = at;
		size[r] = at + s->sh_size;
		if (size[r] > LINKER_MAX_REGION_SIZE)
			return linker_fail(o, -ENOEXEC, "%s sections exceed %lu bytes",
					   r == LINKER_REGION_TEXT ? "text" : "data",
					   LINKER_MAX_REGION_SIZE);
	}
	o->region_size[LINKER_REGION_TEXT] = size[LINKER_REGION_TEXT];
	o->region_size[LINKER_REGION_DATA] = size[LINKER_REGION_DATA];
	return 0;
}

static int allocate_regions(struct linker_object *o, const struct linker_env *env)
{
	for (int r = 0; r < LINKER_REGION_COUNT; r++) {
		if (!o->region_size[r])
			continue;
		o->region[r] =
		    env->alloc_region(env->env, (enum linker_region)r, o->region_size[r]);
		if (!o->region[r])
			return linker_fail(o, -ENOMEM, "no memory for %zu bytes of %s",
					   o->region_size[r],
					   r == LINKER_REGION_TEXT ? "text" : "data");
	}
	return 0;
}

static void free_regions(struct linker_object *o, const struct linker_env *env)
{
	for (int r = 0; r < LINKER_REGION_COUNT; r++) {
		if (o->region[r])
			env->free_region(env->env, (enum linker_region)r, o->region[r],
					 o->region_size[r]);
		o->region[r] = NULL;
	}
}

int linker_layout_object(struct linker_object *object, const struct linker_env *env)
{
	uint64_t offsets[LINKER_MAX_SECTIONS] = {0};
	int err = compute_offsets(object, offsets);
	if (!err)
		err = allocate_regions(object, env);
	if (err) {
		free_regions(object, env);
		return err;
	}
	for (unsigned i = 1; i < object->section_count; i++) {
		const struct linker_shdr *s = &object->sections[i];
		object->section_address[i] = 0;
		if (!is_loaded(s))
			continue;
		uint8_t *at = object->region[region_of(s)] + offsets[i];
		object->section_address[i] = (uint64_t)(uintptr_t)at;
		if (s->sh_type != LINKER_SHT_NOBITS)
			__builtin_memcpy(at, object->image + s->sh_offset, s->sh_size);
	}
	return 0;
}

void linker_release_object(struct linker_object *object, const struct linker_env *env,
			   bool keep_regions)
{
	if (object->symbol_address)
		env->free(env->env, object->symbol_address);
	object->symbol_address = NULL;
	if (!keep_regions)
		free_regions(object, env);
}
