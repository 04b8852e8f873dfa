/*
 * Phase 4 of linking: relocations.  Validation proved that every relocation of
 * a loaded section names a symbol in range, a supported type and a place
 * inside its section; here each is computed (S + A, or S + A - P for the
 * PC-relative ones) and checked to fit its field before it is written:
 *   R_X86_64_64          64 bits, anything fits
 *   R_X86_64_32          must fit unsigned 32 bits
 *   R_X86_64_32S, PC32, PLT32   must fit signed 32 bits
 * Aspects are built with -mcmodel=large, so calls and data references are
 * R_X86_64_64 and work wherever the object lands; a 32-bit relocation to a
 * far symbol (an object built for the small model) overflows and is refused
 * by name.  PLT32 is resolved like PC32: there is no PLT, the ABI function is
 * called directly.
 *
 * Before anything is written, each relocation's target (S + A) must lie in
 * the aspect's own memory (its text or data region, the end included) or be
 * a symbol of the aspect ABI (an undefined symbol the resolver found; an
 * unresolved weak one is 0); a PC-relative one may sit up to
 * PC_RELATIVE_BIAS bytes below, since its addend also counts the bytes from
 * the field to the end of the instruction.  Anything else (an absolute
 * symbol, `.text+0x41414141`) is refused with the section, offset and target,
 * so an aspect's code and data refer only to itself and to the ABI.
 *
 * Portable (see object.h).
 */
#include "lib/errno.h"
#include "linker/object/internal.h"

static int overflow(struct linker_object *o, unsigned type, unsigned target, uint64_t offset,
		    unsigned symbol)
{
	return linker_fail(
	    o, -ERANGE, "relocation %s at %s+%#llx to '%s' overflows (build with -mcmodel=large)",
	    linker_relocation_name(type), linker_section_name(o, target),
	    (unsigned long long)offset, o->strings + o->symbols[symbol].st_name);
}

#define PC_RELATIVE_BIAS   8 /* disp32 and an imm32 after it */
#define LINKER_STT_SECTION 3

static bool pc_relative(unsigned type)
{
	return type == LINKER_R_X86_64_PC32 || type == LINKER_R_X86_64_PLT32;
}

/* True when value (S + A, plus the bias) lies in [start, end]. */
static bool within(uint64_t value, uint64_t start, uint64_t end)
{
	return value >= start && value <= end;
}

static bool target_allowed(const struct linker_object *o, unsigned type, unsigned symbol,
			   uint64_t value)
{
	const struct linker_sym *sym = &o->symbols[symbol];
	uint64_t bias = pc_relative(type) ? PC_RELATIVE_BIAS : 0, at = value + bias;
	if (sym->st_shndx == LINKER_SHN_ABS)
		return false;
	if (sym->st_shndx == LINKER_SHN_UNDEF) {
		uint64_t abi = o->symbol_address[symbol]; /* resolved, or 0 (weak) */
		return within(at, abi, abi + bias);
	}
	for (int region = 0; region < LINKER_REGION_COUNT; region++) {
		uint64_t base = (uint64_t)(uintptr_t)o->region[region];
		if (base && within(at, base, base + o->region_size[region] + bias))
			return true;
	}
	return false;
}

/* The symbol's name, or its section's for a section symbol. */
static const char *symbol_label(const struct linker_object *o, unsigned symbol)
{
	const struct linker_sym *sym = &o->symbols[symbol];
	if ((sym->st_info & 0xf) == LINKER_STT_SECTION || sym->st_name == 0)
		return sym->st_shndx < o->section_count ? linker_section_name(o, sym->st_shndx)
							: "?";
	return o->strings + sym->st_name;
}

static int outside(struct linker_object *o, unsigned type, unsigned target,
		   const struct linker_rela *r, unsigned symbol)
{
	int64_t addend = r->r_addend;
	return linker_fail(
	    o, -ENOEXEC, "relocation %s at %s+%#llx targets %s%s%#llx, outside the aspect",
	    linker_relocation_name(type), linker_section_name(o, target),
	    (unsigned long long)r->r_offset, symbol_label(o, symbol), addend < 0 ? "-" : "+",
	    (unsigned long long)(addend < 0 ? -(uint64_t)addend : (uint64_t)addend));
}

static int apply_one(struct linker_object *o, unsigned target, const struct linker_rela *r)
{
	unsigned type = (unsigned)(r->r_info & 0xffffffffu);
	unsigned symbol = (unsigned)(r->r_info >> 32);
	if (type == LINKER_R_X86_64_NONE)
		return 0;
	if (!linker_symbol_is_usable(o, symbol))
		return linker_fail(o, -ENOEXEC, "relocation at %s+%#llx uses a section not loaded",
				   linker_section_name(o, target), (unsigned long long)r->r_offset);
	uint64_t place = o->section_address[target] + r->r_offset;
	uint64_t value = o->symbol_address[symbol] + (uint64_t)r->r_addend;
	uint8_t *where = (uint8_t *)(uintptr_t)place;
	if (!target_allowed(o, type, symbol, value))
		return outside(o, type, target, r, symbol);
	if (type == LINKER_R_X86_64_64) {
		__builtin_memcpy(where, &value, 8);
		return 0;
	}
	if (type == LINKER_R_X86_64_PC32 || type == LINKER_R_X86_64_PLT32)
		value -= place;
	int64_t as_signed = (int64_t)value;
	bool fits = type == LINKER_R_X86_64_32 ? value <= UINT32_MAX
					       : as_signed >= INT32_MIN && as_signed <= INT32_MAX;
	if (!fits)
		return overflow(o, type, target, r->r_offset, symbol);
	uint32_t field = (uint32_t)value;
	__builtin_memcpy(where, &field, 4);
	return 0;
}

static int apply_table(struct linker_object *o, unsigned index)
{
	const struct linker_shdr *s = &o->sections[index];
	unsigned target = s->sh_info;
	if (!o->section_address[target])
		return 0; /* relocations of debug information: not loaded */
	const struct linker_rela *r = (const struct linker_rela *)(o->image + s->sh_offset);
	uint64_t count = s->sh_size / sizeof *r;
	for (uint64_t n = 0; n < count; n++) {
		int err = apply_one(o, target, &r[n]);
		if (err)
			return err;
	}
	return 0;
}

int linker_apply_relocations(struct linker_object *object)
{
	for (unsigned i = 1; i < object->section_count; i++) {
		if (object->sections[i].sh_type != LINKER_SHT_RELA)
			continue;
		int err = apply_table(object, i);
		if (err)
			return err;
	}
	return 0;
}
