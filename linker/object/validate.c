/*
 * Phase 1 of linking: validation.  Every number in the file that the later
 * phases will use as an offset, a size, an index or a count is checked here,
 * against the file's length and against each other, before anything is
 * allocated; the later phases then trust the object.  The checks are ordered
 * so that each one only reads what an earlier one proved is inside the file:
 * the ELF header, the section header table, the section-name table, each
 * section, the symbol table and its strings, each relocation table, and the
 * aspect's metadata sections.  Sizes are compared by subtraction, never by
 * adding attacker-controlled numbers, so nothing wraps.
 *
 * Portable: compiled into the kernel, the monitor process, host tests and the
 * fuzzer (see object.h).
 */
#include "lib/errno.h"
#include "linker/object/internal.h"
#include "linker/object/object.h"

static const uint8_t elf_magic[4] = {0x7f, 'E', 'L', 'F'};
#define EI_CLASS    4
#define EI_DATA     5
#define EI_VERSION  6
#define ELFCLASS64  2
#define ELFDATA2LSB 1
#define ET_REL      1
#define EM_X86_64   62

/* True when [offset, offset + length) lies inside a file of size bytes. */
static bool range_in_file(uint64_t offset, uint64_t length, size_t size)
{
	return offset <= size && length <= size - offset;
}

static int check_header(struct linker_object *o)
{
	const struct linker_ehdr *h = o->header;
	if (o->size < sizeof *h)
		return linker_fail(o, -ENOEXEC,
				   "truncated: %zu bytes is shorter than an ELF header", o->size);
	if (__builtin_memcmp(h->e_ident, elf_magic, sizeof elf_magic) != 0)
		return linker_fail(o, -ENOEXEC, "not an ELF file (bad magic)");
	if (h->e_ident[EI_CLASS] != ELFCLASS64 || h->e_ident[EI_DATA] != ELFDATA2LSB ||
	    h->e_ident[EI_VERSION] != 1 || h->e_version != 1)
		return linker_fail(o, -ENOEXEC, "not a little-endian ELF64 version 1 file");
	if (h->e_type != ET_REL)
		return linker_fail(o, -ENOEXEC, "ELF type %u is not ET_REL (build with gcc -c)",
				   h->e_type);
	if (h->e_machine != EM_X86_64)
		return linker_fail(o, -ENOEXEC, "machine %u is not x86_64", h->e_machine);
	if (h->e_shentsize != sizeof(struct linker_shdr))
		return linker_fail(o, -ENOEXEC, "section header size %u is not %zu", h->e_shentsize,
				   sizeof(struct linker_shdr));
	if (h->e_shnum == 0 || h->e_shnum > LINKER_MAX_SECTIONS)
		return linker_fail(o, -ENOEXEC, "%u sections (1..%u allowed)", h->e_shnum,
				   LINKER_MAX_SECTIONS);
	if (h->e_shoff % 8 != 0)
		return linker_fail(o, -ENOEXEC, "section header table is misaligned");
	if (!range_in_file(h->e_shoff, (uint64_t)h->e_shnum * sizeof(struct linker_shdr), o->size))
		return linker_fail(o, -ENOEXEC,
				   "truncated: section header table extends past end of file");
	if (h->e_shstrndx == 0 || h->e_shstrndx >= h->e_shnum)
		return linker_fail(o, -ENOEXEC, "section name table index %u out of range",
				   h->e_shstrndx);
	o->sections = (const struct linker_shdr *)(o->image + h->e_shoff);
	o->section_count = h->e_shnum;
	return 0;
}

/* A string table: inside the file (checked before) and NUL-terminated. */
static int check_string_table(struct linker_object *o, unsigned index)
{
	const struct linker_shdr *s = &o->sections[index];
	if (s->sh_type != LINKER_SHT_STRTAB)
		return linker_fail(o, -ENOEXEC, "section %u is not a string table", index);
	if (s->sh_size == 0 || o->image[s->sh_offset + s->sh_size - 1] != '\0')
		return linker_fail(o, -ENOEXEC, "string table %u not terminated", index);
	return 0;
}

static int check_section_bounds(struct linker_object *o, unsigned i)
{
	const struct linker_shdr *s = &o->sections[i];
	if (s->sh_type == LINKER_SHT_NULL)
		return 0;
	if (s->sh_size > LINKER_MAX_SECTION_SIZE)
		return linker_fail(o, -ENOEXEC, "section %u is too large (%llu bytes, at most %lu)",
				   i, (unsigned long long)s->sh_size, LINKER_MAX_SECTION_SIZE);
	if (s->sh_type != LINKER_SHT_NOBITS && !range_in_file(s->sh_offset, s->sh_size, o->size))
		return linker_fail(o, -ENOEXEC, "section %u extends past end of file", i);
	if (s->sh_addralign > LINKER_MAX_ALIGN || (s->sh_addralign & (s->sh_addralign - 1)))
		return linker_fail(o, -ENOEXEC, "section %u has alignment %llu", i,
				   (unsigned long long)s->sh_addralign);
	return 0;
}

/* File bytes of section i, or an empty range when it has none. */
static void file_range(const struct linker_shdr *s, uint64_t *start, uint64_t *end)
{
	bool has_bytes = s->sh_type != LINKER_SHT_NULL && s->sh_type != LINKER_SHT_NOBITS;
	*start = s->sh_offset;
	*end = has_bytes ? s->sh_offset + s->sh_size : s->sh_offset;
}

/* No two sections share file bytes, and none covers the headers. */
static int check_overlaps(struct linker_object *o)
{
	uint64_t table_start = o->header->e_shoff;
	uint64_t table_end = table_start + (uint64_t)o->section_count * sizeof(struct linker_shdr);
	for (unsigned i = 1; i < o->section_count; i++) {
		uint64_t a0, a1;
		file_range(&o->sections[i], &a0, &a1);
		if (a0 == a1)
			continue;
		if (a0 < sizeof(struct linker_ehdr))
			return linker_fail(o, -ENOEXEC, "section %u overlaps the ELF header", i);
		if (a0 < table_end && table_start < a1)
			return linker_fail(o, -ENOEXEC,
					   "section %u overlaps the section header table", i);
		for (unsigned j = i + 1; j < o->section_count; j++) {
			uint64_t b0, b1;
			file_range(&o->sections[j], &b0, &b1);
			if (b0 != b1 && a0 < b1 && b0 < a1)
				return linker_fail(o, -ENOEXEC, "sections %u and %u overlap", i, j);
		}
	}
	return 0;
}

static int check_section_kind(struct linker_object *o, unsigned i)
{
	const struct linker_shdr *s = &o->sections[i];
	if (s->sh_name >= o->section_names_size)
		return linker_fail(o, -ENOEXEC, "section %u name offset out of range", i);
	if (s->sh_type == LINKER_SHT_REL)
		return linker_fail(o, -ENOEXEC,
				   "section %u: REL relocations not supported (RELA only)", i);
	if (!(s->sh_flags & LINKER_SHF_ALLOC))
		return 0;
	if (s->sh_flags & LINKER_SHF_TLS)
		return linker_fail(o, -ENOEXEC,
				   "section %u (%s): thread-local storage not supported", i,
				   linker_section_name(o, i));
	if (s->sh_type != LINKER_SHT_PROGBITS && s->sh_type != LINKER_SHT_NOBITS &&
	    s->sh_type != LINKER_SHT_NOTE)
		return linker_fail(o, -ENOEXEC, "section %u (%s) of type %u not supported", i,
				   linker_section_name(o, i), s->sh_type);
	return 0;
}

static int check_sections(struct linker_object *o)
{
	int err;
	for (unsigned i = 0; i < o->section_count; i++)
		if ((err = check_section_bounds(o, i)))
			return err;
	if ((err = check_overlaps(o)))
		return err;
	unsigned names = o->header->e_shstrndx;
	if ((err = check_string_table(o, names)))
		return err;
	o->section_names = (const char *)o->image + o->sections[names].sh_offset;
	o->section_names_size = o->sections[names].sh_size;
	for (unsigned i = 1; i < o->section_count; i++)
		if ((err = check_section_kind(o, i)))
			return err;
	return 0;
}

static int find_symbol_table(struct linker_object *o)
{
	unsigned found = 0;
	for (unsigned i = 1; i < o->section_count; i++) {
		if (o->sections[i].sh_type != LINKER_SHT_SYMTAB)
			continue;
		if (found)
			return linker_fail(o, -ENOEXEC, "more than one symbol table (%u and %u)",
					   found, i);
		found = i;
	}
	if (!found)
		return linker_fail(o, -ENOEXEC, "no symbol table");
	const struct linker_shdr *s = &o->sections[found];
	if (s->sh_entsize != sizeof(struct linker_sym) || s->sh_size % sizeof(struct linker_sym))
		return linker_fail(o, -ENOEXEC, "symbol table %u has entry size %llu", found,
				   (unsigned long long)s->sh_entsize);
	if (s->sh_offset % 8)
		return linker_fail(o, -ENOEXEC, "symbol table %u is misaligned", found);
	uint64_t count = s->sh_size / sizeof(struct linker_sym);
	if (count == 0 || count > LINKER_MAX_SYMBOLS)
		return linker_fail(o, -ENOEXEC, "%llu symbols (1..%u allowed)",
				   (unsigned long long)count, LINKER_MAX_SYMBOLS);
	if (s->sh_link == 0 || s->sh_link >= o->section_count)
		return linker_fail(o, -ENOEXEC, "symbol table's string table %u out of range",
				   s->sh_link);
	o->symtab_index = found;
	o->symbols = (const struct linker_sym *)(o->image + s->sh_offset);
	o->symbol_count = (unsigned)count;
	return 0;
}

static int check_symbol(struct linker_object *o, unsigned i)
{
	const struct linker_sym *sym = &o->symbols[i];
	if (sym->st_name >= o->strings_size)
		return linker_fail(o, -ENOEXEC, "symbol %u name offset out of range", i);
	const char *name = o->strings + sym->st_name;
	unsigned shndx = sym->st_shndx;
	if (shndx == LINKER_SHN_COMMON)
		return linker_fail(o, -ENOEXEC, "common symbol '%s' (build with -fno-common)",
				   name);
	if (shndx == LINKER_SHN_UNDEF || shndx == LINKER_SHN_ABS)
		return 0;
	if (shndx >= o->section_count)
		return linker_fail(o, -ENOEXEC, "symbol %u ('%s') in section %u, out of range", i,
				   name, shndx);
	if (sym->st_value > o->sections[shndx].sh_size)
		return linker_fail(o, -ENOEXEC, "symbol %u ('%s') lies past the end of section %u",
				   i, name, shndx);
	return 0;
}

static int check_symbols(struct linker_object *o)
{
	int err = find_symbol_table(o);
	if (err)
		return err;
	unsigned strtab = o->sections[o->symtab_index].sh_link;
	if ((err = check_string_table(o, strtab)))
		return err;
	o->strings = (const char *)o->image + o->sections[strtab].sh_offset;
	o->strings_size = o->sections[strtab].sh_size;
	for (unsigned i = 0; i < o->symbol_count; i++)
		if ((err = check_symbol(o, i)))
			return err;
	return 0;
}

/* Bytes a relocation writes, 0 for a type the linker refuses. */
unsigned linker_relocation_width(unsigned type)
{
	switch (type) {
	case LINKER_R_X86_64_NONE: return 0;
	case LINKER_R_X86_64_64: return 8;
	case LINKER_R_X86_64_PC32:
	case LINKER_R_X86_64_PLT32:
	case LINKER_R_X86_64_32:
	case LINKER_R_X86_64_32S: return 4;
	default: return 0;
	}
}

static int check_relocation(struct linker_object *o, unsigned rel, unsigned n,
			    const struct linker_rela *r, const struct linker_shdr *target)
{
	unsigned type = (unsigned)(r->r_info & 0xffffffffu);
	uint64_t symbol = r->r_info >> 32;
	if (type != LINKER_R_X86_64_NONE && linker_relocation_width(type) == 0)
		return linker_fail(o, -ENOEXEC, "relocation type %u not supported (%s)", type,
				   linker_relocation_name(type));
	if (symbol >= o->symbol_count)
		return linker_fail(o, -ENOEXEC,
				   "relocation %u of section %u: symbol index %llu out of range", n,
				   rel, (unsigned long long)symbol);
	unsigned width = linker_relocation_width(type);
	if (r->r_offset > target->sh_size || width > target->sh_size - r->r_offset)
		return linker_fail(o, -ENOEXEC,
				   "relocation %u of section %u: offset %#llx past its section", n,
				   rel, (unsigned long long)r->r_offset);
	if (target->sh_type == LINKER_SHT_NOBITS && type != LINKER_R_X86_64_NONE)
		return linker_fail(o, -ENOEXEC, "relocation %u of section %u: target has no bytes",
				   n, rel);
	return 0;
}

/* Relocations of a section that is not loaded (debug information) are
 * skipped by later phases, but their table is still checked to be sane. */
static int check_relocation_table(struct linker_object *o, unsigned i)
{
	const struct linker_shdr *s = &o->sections[i];
	if (s->sh_entsize != sizeof(struct linker_rela) || s->sh_size % sizeof(struct linker_rela))
		return linker_fail(o, -ENOEXEC, "relocation section %u has entry size %llu", i,
				   (unsigned long long)s->sh_entsize);
	if (s->sh_offset % 8)
		return linker_fail(o, -ENOEXEC, "relocation section %u is misaligned", i);
	if (s->sh_link != o->symtab_index)
		return linker_fail(o, -ENOEXEC, "relocation section %u uses symbol table %u", i,
				   s->sh_link);
	if (s->sh_info == 0 || s->sh_info >= o->section_count)
		return linker_fail(o, -ENOEXEC,
				   "relocation section %u targets section %u, out of range", i,
				   s->sh_info);
	const struct linker_shdr *target = &o->sections[s->sh_info];
	if (!(target->sh_flags & LINKER_SHF_ALLOC))
		return 0;
	const struct linker_rela *r = (const struct linker_rela *)(o->image + s->sh_offset);
	uint64_t count = s->sh_size / sizeof *r;
	for (uint64_t n = 0; n < count; n++) {
		int err = check_relocation(o, i, (unsigned)n, &r[n], target);
		if (err)
			return err;
	}
	return 0;
}

static int check_relocations(struct linker_object *o)
{
	for (unsigned i = 1; i < o->section_count; i++) {
		if (o->sections[i].sh_type != LINKER_SHT_RELA)
			continue;
		int err = check_relocation_table(o, i);
		if (err)
			return err;
	}
	return 0;
}

static int find_named(struct linker_object *o, const char *name, uint64_t entry, bool required,
		      int *index)
{
	*index = -1;
	for (unsigned i = 1; i < o->section_count; i++) {
		if (__builtin_strcmp(linker_section_name(o, i), name) != 0)
			continue;
		const struct linker_shdr *s = &o->sections[i];
		if (*index >= 0)
			return linker_fail(o, -ENOEXEC, "two %s sections", name);
		if (s->sh_type != LINKER_SHT_PROGBITS || !(s->sh_flags & LINKER_SHF_ALLOC) ||
		    s->sh_size % entry || s->sh_addralign < 8)
			return linker_fail(o, -ENOEXEC, "%s section %u is malformed", name, i);
		*index = (int)i;
	}
	if (required && *index < 0)
		return linker_fail(o, -ENOEXEC, "no %s section: not an aspect (MS_ASPECT missing)",
				   name);
	return 0;
}

static int check_metadata_sections(struct linker_object *o)
{
	int err;
	if ((err = find_named(o, ".ms_aspect", sizeof(struct ms_aspect_info), true,
			      &o->aspect_section)))
		return err;
	if (o->sections[o->aspect_section].sh_size != sizeof(struct ms_aspect_info))
		return linker_fail(o, -ENOEXEC, ".ms_aspect holds more than one MS_ASPECT");
	if ((err = find_named(o, ".ms_advice", sizeof(struct ms_advice_info), false,
			      &o->advice_section)))
		return err;
	if (o->advice_section >= 0 &&
	    o->sections[o->advice_section].sh_size / sizeof(struct ms_advice_info) >
		LINKER_MAX_ADVICE)
		return linker_fail(o, -ENOEXEC, "more than %u pieces of advice", LINKER_MAX_ADVICE);
	if ((err = find_named(o, ".ms_init", sizeof(ms_init_fn), false, &o->init_section)))
		return err;
	if ((err = find_named(o, ".ms_exit", sizeof(ms_exit_fn), false, &o->exit_section)))
		return err;
	return 0;
}

int linker_validate_object(struct linker_object *object, const void *image, size_t size,
			   char *error, size_t error_size)
{
	__builtin_memset(object, 0, sizeof *object);
	object->error = error;
	object->error_size = error_size;
	if (error && error_size)
		error[0] = '\0';
	object->aspect_section = object->advice_section = -1;
	object->init_section = object->exit_section = -1;
	if (!image)
		return linker_fail(object, -ENOEXEC, "no image");
	if ((uintptr_t)image % 8)
		return linker_fail(object, -ENOEXEC, "image is not 8-byte aligned");
	object->image = image;
	object->size = size;
	object->header = image;
	int err = check_header(object);
	if (!err)
		err = check_sections(object);
	if (!err)
		err = check_symbols(object);
	if (!err)
		err = check_relocations(object);
	if (!err)
		err = check_metadata_sections(object);
	return err;
}
