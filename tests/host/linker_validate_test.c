// host-test-sources: linker/object/*.c tests/host/shim/linker_shim.c
/* Does the object linker accept a real aspect object, compiled here with the
 * documented flags, and refuse every hostile variant of it with a message
 * naming the problem, without reading outside the file (AddressSanitizer
 * watches every truncation)? */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosttest.h"
#include "lib/errno.h"
#include "linker/object/object.h"
#include "linker_shim.h"

static uint8_t *image;
static size_t image_size;
static char error[160];

__attribute__((constructor)) static void build_image(void)
{
	image = linker_shim_build_aspect("callcount", "", &image_size);
	if (!image) {
		printf("cannot compile aspects/callcount.c with gcc\n");
		exit(1);
	}
}

static uint8_t *copy_image(void)
{
	uint8_t *copy = aligned_alloc(8, (image_size + 7) & ~(size_t)7);
	memcpy(copy, image, image_size);
	return copy;
}

static struct linker_shdr *sections_of(uint8_t *bytes)
{
	return (struct linker_shdr *)(bytes + ((struct linker_ehdr *)bytes)->e_shoff);
}

static unsigned find_section(uint8_t *bytes, uint32_t type)
{
	struct linker_ehdr *h = (struct linker_ehdr *)bytes;
	for (unsigned i = 1; i < h->e_shnum; i++)
		if (sections_of(bytes)[i].sh_type == type)
			return i;
	return 0;
}

static struct linker_rela *first_relocation(uint8_t *bytes)
{
	struct linker_ehdr *h = (struct linker_ehdr *)bytes;
	struct linker_shdr *s = sections_of(bytes);
	for (unsigned i = 1; i < h->e_shnum; i++)
		if (s[i].sh_type == LINKER_SHT_RELA &&
		    (s[s[i].sh_info].sh_flags & LINKER_SHF_ALLOC) && s[i].sh_size)
			return (struct linker_rela *)(bytes + s[i].sh_offset);
	return NULL;
}

/* Validates and links bytes; returns the first error. */
static int link_bytes(uint8_t *bytes, size_t size)
{
	struct linker_object object;
	int err = linker_validate_object(&object, bytes, size, error, sizeof error);
	if (!err)
		err = linker_link_object(&object, &linker_shim_env);
	if (!err)
		linker_release_object(&object, &linker_shim_env, false);
	linker_shim_reset();
	return err;
}

static void expect_refused(uint8_t *bytes, size_t size, int expected, const char *message)
{
	CHECK_EQ(link_bytes(bytes, size), expected);
	if (!CHECK(strstr(error, message) != NULL))
		printf("    # got: %s\n", error);
	free(bytes);
}

static void real_object_links(void)
{
	struct linker_object object;
	REQUIRE_EQ(linker_validate_object(&object, image, image_size, error, sizeof error), 0);
	REQUIRE_EQ(linker_link_object(&object, &linker_shim_env), 0);
	CHECK_STR_EQ(object.name, "callcount");
	CHECK_EQ(object.advice_count, 1);
	CHECK_STR_EQ(object.advice[0].pattern, "vfs.*");
	CHECK_EQ(object.advice[0].kind, MS_ADVICE_BEFORE);
	CHECK(linker_object_contains(&object, LINKER_REGION_TEXT,
				     (uint64_t)(uintptr_t)object.advice[0].function, 1));
	/* The call to ms_counter_add was relocated to the ABI's address. */
	uint64_t target = linker_shim_abi_address("ms_counter_add");
	bool found = false;
	for (size_t i = 0; i + 8 <= object.region_size[LINKER_REGION_TEXT]; i++)
		found |= memcmp(object.region[LINKER_REGION_TEXT] + i, &target, 8) == 0;
	CHECK(found);
	linker_release_object(&object, &linker_shim_env, false);
	CHECK_EQ(linker_shim_regions_in_use(), 0);
	linker_shim_reset();
}

static void every_truncation_is_refused(void)
{
	for (size_t size = 0; size < image_size; size++) {
		/* A copy of exactly size bytes (malloc aligns it to 16), so ASan
		 * sees any read past it. */
		uint8_t *exact = malloc(size ? size : 1);
		memcpy(exact, image, size);
		int err = link_bytes(exact, size);
		free(exact);
		if (!CHECK(err < 0)) {
			printf("    # truncated to %zu bytes: accepted\n", size);
			return;
		}
	}
}

static void section_past_end_is_refused(void)
{
	uint8_t *b = copy_image();
	sections_of(b)[1].sh_offset = image_size - 2;
	expect_refused(b, image_size, -ENOEXEC, "section 1 extends past end of file");
}

static void four_gib_section_is_refused(void)
{
	uint8_t *b = copy_image();
	sections_of(b)[1].sh_size = 1ULL << 32;
	expect_refused(b, image_size, -ENOEXEC, "section 1 is too large (4294967296 bytes");
}

static void huge_bss_is_refused(void)
{
	uint8_t *b = copy_image();
	unsigned bss = find_section(b, LINKER_SHT_NOBITS);
	REQUIRE(bss != 0);
	sections_of(b)[bss].sh_size = ~0ULL;
	expect_refused(b, image_size, -ENOEXEC, "is too large");
}

static void overlapping_sections_are_refused(void)
{
	uint8_t *b = copy_image();
	unsigned symtab = find_section(b, LINKER_SHT_SYMTAB);
	sections_of(b)[symtab].sh_offset = sections_of(b)[1].sh_offset;
	expect_refused(b, image_size, -ENOEXEC, "overlap");
}

static void symbol_index_out_of_range_is_refused(void)
{
	uint8_t *b = copy_image();
	struct linker_rela *r = first_relocation(b);
	r->r_info = (9999ULL << 32) | (r->r_info & 0xffffffffu);
	expect_refused(b, image_size, -ENOEXEC, "symbol index 9999 out of range");
}

static void unsupported_relocation_is_refused(void)
{
	uint8_t *b = copy_image();
	struct linker_rela *r = first_relocation(b);
	r->r_info = (r->r_info & ~0xffffffffULL) | 24;
	expect_refused(b, image_size, -ENOEXEC, "relocation type 24 not supported (R_X86_64_PC64)");
}

static void import_outside_the_abi_is_refused(void)
{
	uint8_t *b = copy_image();
	unsigned symtab = find_section(b, LINKER_SHT_SYMTAB);
	struct linker_shdr *strtab = &sections_of(b)[sections_of(b)[symtab].sh_link];
	char *strings = (char *)b + strtab->sh_offset;
	char *name = NULL;
	for (size_t at = 0; at < strtab->sh_size; at += strlen(strings + at) + 1)
		if (strcmp(strings + at, "ms_counter_add") == 0)
			name = strings + at;
	REQUIRE(name != NULL);
	memcpy(name, "kmalloc", 8);
	expect_refused(b, image_size, -ENOENT,
		       "undefined symbol 'kmalloc' (not in the aspect ABI)");
}

static void unterminated_string_table_is_refused(void)
{
	uint8_t *b = copy_image();
	unsigned symtab = find_section(b, LINKER_SHT_SYMTAB);
	struct linker_shdr *strtab = &sections_of(b)[sections_of(b)[symtab].sh_link];
	b[strtab->sh_offset + strtab->sh_size - 1] = 'x';
	expect_refused(b, image_size, -ENOEXEC, "not terminated");
}

static void section_count_out_of_range_is_refused(void)
{
	uint8_t *b = copy_image();
	((struct linker_ehdr *)b)->e_shnum = 0xffff;
	expect_refused(b, image_size, -ENOEXEC, "sections (1..256 allowed)");
	b = copy_image();
	((struct linker_ehdr *)b)->e_shoff = ~0ULL - 7;
	expect_refused(b, image_size, -ENOEXEC, "section header table extends past end of file");
}

static void symbol_in_missing_section_is_refused(void)
{
	uint8_t *b = copy_image();
	unsigned symtab = find_section(b, LINKER_SHT_SYMTAB);
	struct linker_sym *syms = (struct linker_sym *)(b + sections_of(b)[symtab].sh_offset);
	syms[1].st_shndx = 200;
	expect_refused(b, image_size, -ENOEXEC, "in section 200, out of range");
}

static void metadata_pointing_outside_is_refused(void)
{
	/* The advice's function pointer is relocated against a data symbol. */
	uint8_t *b = copy_image();
	struct linker_shdr *s = sections_of(b);
	struct linker_ehdr *h = (struct linker_ehdr *)b;
	unsigned advice = 0;
	for (unsigned i = 1; i < h->e_shnum; i++)
		if (strcmp((char *)b + s[h->e_shstrndx].sh_offset + s[i].sh_name,
			   ".rela.ms_advice") == 0)
			advice = i;
	REQUIRE(advice != 0);
	struct linker_rela *r = (struct linker_rela *)(b + s[advice].sh_offset);
	/* Entry 1 is the function: point it at a symbol of a data section. */
	unsigned symtab = find_section(b, LINKER_SHT_SYMTAB), data_symbol = 0;
	struct linker_sym *syms = (struct linker_sym *)(b + s[symtab].sh_offset);
	for (unsigned i = 1; i < s[symtab].sh_size / sizeof *syms && !data_symbol; i++)
		if (syms[i].st_shndx > 0 && syms[i].st_shndx < h->e_shnum &&
		    (s[syms[i].st_shndx].sh_flags & LINKER_SHF_ALLOC) &&
		    !(s[syms[i].st_shndx].sh_flags & LINKER_SHF_EXECINSTR))
			data_symbol = i;
	REQUIRE(data_symbol != 0);
	r[1].r_info = ((uint64_t)data_symbol << 32) | (r[1].r_info & 0xffffffffu);
	r[1].r_addend = 0;
	expect_refused(b, image_size, -ENOEXEC, "function is not in the aspect's text");
}

/* Hole F: a relocation whose target is outside the aspect (here
 * `.text+0x41414141`-like: a huge addend) is refused at link time, with the
 * section, offset and target named, before anything is written. */
static void relocation_outside_the_aspect_is_refused(void)
{
	uint8_t *b = copy_image();
	struct linker_rela *r = first_relocation(b);
	r->r_addend = 0x41414141;
	expect_refused(b, image_size, -ENOEXEC, "+0x41414141, outside the aspect");
	b = copy_image();
	r = first_relocation(b);
	r->r_addend = -0x10000;
	expect_refused(b, image_size, -ENOEXEC, "-0x10000, outside the aspect");
}

/* An absolute symbol can name any address: relocations against one are
 * refused; so is an offset from an ABI function (only the function itself). */
static void relocation_to_absolute_or_past_the_abi_is_refused(void)
{
	uint8_t *b = copy_image();
	struct linker_shdr *s = sections_of(b);
	unsigned symtab = find_section(b, LINKER_SHT_SYMTAB);
	struct linker_sym *syms = (struct linker_sym *)(b + s[symtab].sh_offset);
	struct linker_rela *r = first_relocation(b);
	unsigned symbol = (unsigned)(r->r_info >> 32);
	syms[symbol].st_shndx = LINKER_SHN_ABS;
	syms[symbol].st_value = 0xffffffff80100000ULL; /* somewhere in a kernel */
	r->r_addend = 0;
	expect_refused(b, image_size, -ENOEXEC, "outside the aspect");
	/* ms_counter_add + 0x1000 */
	b = copy_image();
	s = sections_of(b);
	syms = (struct linker_sym *)(b + s[symtab].sh_offset);
	const char *strings = (const char *)b + s[s[symtab].sh_link].sh_offset;
	unsigned abi = 0;
	for (unsigned i = 1; i < s[symtab].sh_size / sizeof *syms; i++)
		if (strcmp(strings + syms[i].st_name, "ms_counter_add") == 0)
			abi = i;
	REQUIRE(abi != 0);
	bool changed = false;
	for (unsigned i = 1; i < ((struct linker_ehdr *)b)->e_shnum && !changed; i++) {
		if (s[i].sh_type != LINKER_SHT_RELA ||
		    !(s[s[i].sh_info].sh_flags & LINKER_SHF_ALLOC))
			continue;
		struct linker_rela *rel = (struct linker_rela *)(b + s[i].sh_offset);
		for (size_t n = 0; n < s[i].sh_size / sizeof *rel && !changed; n++)
			if ((rel[n].r_info >> 32) == abi) {
				rel[n].r_addend += 0x1000;
				changed = true;
			}
	}
	REQUIRE(changed);
	expect_refused(b, image_size, -ENOEXEC,
		       "targets ms_counter_add+0x1000, outside the aspect");
}

HOSTTEST_MAIN(HOSTTEST_CASE(real_object_links), HOSTTEST_CASE(every_truncation_is_refused),
	      HOSTTEST_CASE(section_past_end_is_refused),
	      HOSTTEST_CASE(four_gib_section_is_refused), HOSTTEST_CASE(huge_bss_is_refused),
	      HOSTTEST_CASE(overlapping_sections_are_refused),
	      HOSTTEST_CASE(symbol_index_out_of_range_is_refused),
	      HOSTTEST_CASE(unsupported_relocation_is_refused),
	      HOSTTEST_CASE(import_outside_the_abi_is_refused),
	      HOSTTEST_CASE(unterminated_string_table_is_refused),
	      HOSTTEST_CASE(section_count_out_of_range_is_refused),
	      HOSTTEST_CASE(symbol_in_missing_section_is_refused),
	      HOSTTEST_CASE(metadata_pointing_outside_is_refused),
	      HOSTTEST_CASE(relocation_outside_the_aspect_is_refused),
	      HOSTTEST_CASE(relocation_to_absolute_or_past_the_abi_is_refused))
