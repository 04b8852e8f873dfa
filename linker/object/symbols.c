/*
 * Phase 3 of linking: symbols.  Every symbol gets the address it has where the
 * object now lies: a defined symbol is its section's address plus its value;
 * an absolute one is its value; an undefined one is looked up through the
 * environment's resolver, which knows only the aspect ABI (ms_* and the four
 * memory functions), so an aspect cannot reach anything else in the kernel or
 * the monitor.  Undefined weak symbols that the ABI lacks resolve to 0, as a
 * static linker would.  All checks come first: a symbol in a section that was
 * not loaded is refused before the address table is filled in.
 *
 * Portable (see object.h).
 */
#include "lib/errno.h"
#include "linker/object/internal.h"

static unsigned symbol_binding(const struct linker_sym *sym)
{
	return sym->st_info >> 4;
}

static int resolve_undefined(struct linker_object *o, const struct linker_env *env, unsigned i,
			     uint64_t *address)
{
	const struct linker_sym *sym = &o->symbols[i];
	const char *name = o->strings + sym->st_name;
	if (env->resolve(env->env, name, address) == 0)
		return 0;
	if (symbol_binding(sym) == LINKER_STB_WEAK) {
		*address = 0;
		return 0;
	}
	return linker_fail(o, -ENOENT, "undefined symbol '%s' (not in the aspect ABI)", name);
}

static int address_of(struct linker_object *o, const struct linker_env *env, unsigned i,
		      uint64_t *address)
{
	const struct linker_sym *sym = &o->symbols[i];
	if (sym->st_shndx == LINKER_SHN_UNDEF)
		return i == 0 ? (*address = 0, 0) : resolve_undefined(o, env, i, address);
	if (sym->st_shndx == LINKER_SHN_ABS) {
		*address = sym->st_value;
		return 0;
	}
	uint64_t base = o->section_address[sym->st_shndx];
	if (!base) {
		/* Section symbols of debug sections and the like: harmless unless a
		 * loaded section refers to them, which relocate checks. */
		*address = 0;
		return 0;
	}
	*address = base + sym->st_value;
	return 0;
}

int linker_resolve_symbols(struct linker_object *object, const struct linker_env *env)
{
	uint64_t *table = env->alloc(env->env, sizeof(uint64_t) * object->symbol_count);
	if (!table)
		return linker_fail(object, -ENOMEM, "no memory for %u symbols",
				   object->symbol_count);
	for (unsigned i = 0; i < object->symbol_count; i++) {
		int err = address_of(object, env, i, &table[i]);
		if (err) {
			env->free(env->env, table);
			return err;
		}
	}
	object->symbol_address = table;
	return 0;
}

/* True when symbol i has an address a loaded section may use. */
bool linker_symbol_is_usable(const struct linker_object *object, unsigned i)
{
	const struct linker_sym *sym = &object->symbols[i];
	if (sym->st_shndx == LINKER_SHN_UNDEF || sym->st_shndx == LINKER_SHN_ABS)
		return true;
	return object->section_address[sym->st_shndx] != 0;
}

int linker_abi_lookup(const struct linker_abi_symbol *table, size_t count, const char *name,
		      uint64_t *address)
{
	for (size_t i = 0; i < count; i++) {
		if (__builtin_strcmp(table[i].name, name) == 0) {
			*address = table[i].address;
			return 0;
		}
	}
	return -ENOENT;
}
