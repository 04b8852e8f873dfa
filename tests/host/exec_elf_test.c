// host-test-sources: kernel/exec/elf.c kernel/exec/stack.c kernel/lib/cfi.c
/* Does the ELF check accept a good static executable and refuse every
 * truncated, corrupted or hostile variant without reading out of bounds (the
 * sanitizers watch)?  And is the initial stack laid out as _start expects? */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/exec.h"
#include "hosttest.h"
#include "lib/errno.h"
#include "time/time.h"

#define FILE_SIZE 0x1800
#define TEXT_VA   0x400000
#define DATA_VA   0x601000

struct elf_file {
	uint8_t bytes[FILE_SIZE];
};

static void put16(uint8_t *p, uint16_t v)
{
	memcpy(p, &v, 2);
}
static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}
static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static void put_phdr(uint8_t *p, uint32_t flags, uint64_t offset, uint64_t vaddr, uint64_t filesz,
		     uint64_t memsz)
{
	put32(p, 1);
	put32(p + 4, flags);
	put64(p + 8, offset);
	put64(p + 16, vaddr);
	put64(p + 24, vaddr);
	put64(p + 32, filesz);
	put64(p + 40, memsz);
	put64(p + 48, 0x1000);
}

/* Text R X at file 0 (one page), data R W at file 0x1000 with bss after. */
static void build_good(struct elf_file *f)
{
	memset(f, 0, sizeof *f);
	uint8_t *h = f->bytes;
	memcpy(h,
	       "\x7f"
	       "ELF\x02\x01\x01",
	       7);
	put16(h + 16, 2);
	put16(h + 18, 62);
	put32(h + 20, 1);
	put64(h + 24, TEXT_VA + 0x100);
	put64(h + 32, 64);
	put16(h + 52, 64);
	put16(h + 54, 56);
	put16(h + 56, 2);
	put_phdr(h + 64, 5, 0, TEXT_VA, 0x1000, 0x1000);
	put_phdr(h + 120, 6, 0x1000, DATA_VA, 0x800, 0x3000);
}

static void good_image_is_described(void)
{
	struct elf_file f;
	struct exec_image image;
	build_good(&f);
	REQUIRE_EQ(exec_parse_elf(f.bytes, sizeof f.bytes, &image), 0);
	CHECK_EQ(image.entry, TEXT_VA + 0x100);
	CHECK_EQ(image.segment_count, 2);
	CHECK_EQ(image.segments[1].vaddr, DATA_VA);
	CHECK_EQ(image.segments[1].memsz, 0x3000);
	CHECK_EQ(image.end, DATA_VA + 0x3000);
	CHECK_EQ(image.phdr_vaddr, TEXT_VA + 64);
	CHECK_EQ(image.phnum, 2);
}

/* Every shorter file is refused: a header, a program header or a segment
 * would lie past its end. */
static void every_truncation_is_refused(void)
{
	struct elf_file f;
	struct exec_image image;
	build_good(&f);
	for (size_t length = 0; length < 0x1800; length++) {
		/* A fresh copy of exactly length bytes, so ASan sees any overread. */
		uint8_t *copy = malloc(length ? length : 1);
		memcpy(copy, f.bytes, length);
		if (!CHECK_EQ(exec_parse_elf(copy, length, &image), -ENOEXEC)) {
			free(copy);
			return;
		}
		free(copy);
	}
}

struct corruption {
	const char *what;
	size_t offset;
	unsigned width;
	uint64_t value;
};

static const struct corruption corruptions[] = {
    {"magic", 0, 1, 0x7e},
    {"class", 4, 1, 1},
    {"endianness", 5, 1, 2},
    {"type", 16, 2, 3},
    {"machine", 18, 2, 40},
    {"version", 20, 4, 2},
    {"phentsize", 54, 2, 64},
    {"phnum zero", 56, 2, 0},
    {"phnum huge", 56, 2, 0xffff},
    {"phoff past end", 32, 8, 0x1800},
    {"phoff wraps", 32, 8, UINT64_MAX - 63},
    {"entry in data", 24, 8, DATA_VA},
    {"entry past text", 24, 8, TEXT_VA + 0x1000},
    {"interpreter", 120, 4, 3},
    {"filesz past end", 64 + 32, 8, 0x1801},
    {"filesz over memsz", 120 + 32, 8, 0x3001},
    {"memsz zero", 120 + 40, 8, 0},
    {"memsz huge", 120 + 40, 8, 1ULL << 42},
    {"offset wraps", 120 + 8, 8, UINT64_MAX - 0xfff},
    {"vaddr zero", 64 + 16, 8, 0},
    {"vaddr kernel", 120 + 16, 8, 0xffffffff80000000ULL},
    {"vaddr non-canonical", 120 + 16, 8, 0x0000800000000000ULL},
    {"vaddr wraps", 120 + 16, 8, UINT64_MAX - 0xfff},
    {"vaddr at the limit", 120 + 16, 8, EXEC_IMAGE_LIMIT - 0x1000},
    {"overlapping", 120 + 16, 8, TEXT_VA},
    {"not congruent", 120 + 16, 8, DATA_VA + 0x10},
    {"unknown flags", 120 + 4, 4, 0x10006},
};

static void each_corruption_is_refused(void)
{
	struct exec_image image;
	for (size_t i = 0; i < sizeof corruptions / sizeof corruptions[0]; i++) {
		struct elf_file f;
		build_good(&f);
		memcpy(f.bytes + corruptions[i].offset, &corruptions[i].value,
		       corruptions[i].width);
		if (exec_parse_elf(f.bytes, sizeof f.bytes, &image) != -ENOEXEC)
			hosttest_check(false, __FILE__, __LINE__, corruptions[i].what);
	}
}

/* Random bytes in the headers: accepted or refused, never a bad access; and
 * what is accepted stays inside the file and the user layout. */
static void random_headers_never_overread(void)
{
	struct exec_image image;
	srand(4);
	for (int round = 0; round < 20000; round++) {
		struct elf_file f;
		build_good(&f);
		for (int n = 1 + rand() % 4; n > 0; n--)
			f.bytes[rand() % 176] = (uint8_t)rand();
		if (exec_parse_elf(f.bytes, sizeof f.bytes, &image) != 0)
			continue;
		for (unsigned s = 0; s < image.segment_count; s++) {
			const struct exec_segment *seg = &image.segments[s];
			CHECK(seg->offset + seg->filesz <= sizeof f.bytes);
			CHECK(seg->vaddr >= EXEC_IMAGE_BASE &&
			      seg->vaddr + seg->memsz <= EXEC_IMAGE_LIMIT);
		}
	}
}

/* Section headers at 0x1600 (null, .text.own, .shstrtab), names at 0x1700. */
static void add_own_code_section(struct elf_file *f, uint64_t addr, uint64_t size)
{
	static const char names[] = "\0.text.own\0.shstrtab";
	uint8_t *h = f->bytes;
	put64(h + 40, 0x1600);
	put16(h + 58, 64);
	put16(h + 60, 3);
	put16(h + 62, 2);
	uint8_t *own = f->bytes + 0x1600 + 64, *strtab = own + 64;
	put32(own, 1);
	put32(own + 4, 1);
	put64(own + 16, addr);
	put64(own + 32, size);
	put32(strtab, 11);
	put32(strtab + 4, 3);
	put64(strtab + 24, 0x1700);
	put64(strtab + 32, sizeof names);
	memcpy(f->bytes + 0x1700, names, sizeof names);
}

/* The program's own code (.text.own) is noted when it lies in an executable
 * segment; elsewhere, or with headers that point outside the file, it is
 * not, and the image is still accepted. */
static void own_code_section_is_found(void)
{
	struct elf_file f;
	struct exec_image image;
	build_good(&f);
	add_own_code_section(&f, TEXT_VA + 0x100, 0x80);
	REQUIRE_EQ(exec_parse_elf(f.bytes, sizeof f.bytes, &image), 0);
	CHECK_EQ(image.own_code_start, TEXT_VA + 0x100);
	CHECK_EQ(image.own_code_end, TEXT_VA + 0x180);

	build_good(&f);
	add_own_code_section(&f, DATA_VA, 0x80); /* not executable */
	REQUIRE_EQ(exec_parse_elf(f.bytes, sizeof f.bytes, &image), 0);
	CHECK_EQ(image.own_code_end, 0);

	build_good(&f);
	add_own_code_section(&f, TEXT_VA + 0x100, 0x80);
	put64(f.bytes + 40, sizeof f.bytes - 100); /* the table runs past the end */
	REQUIRE_EQ(exec_parse_elf(f.bytes, sizeof f.bytes, &image), 0);
	CHECK_EQ(image.own_code_end, 0);

	build_good(&f);
	add_own_code_section(&f, TEXT_VA + 0x100, 0x80);
	put32(f.bytes + 0x1600 + 64, 0xfffffff0); /* a name past the names */
	REQUIRE_EQ(exec_parse_elf(f.bytes, sizeof f.bytes, &image), 0);
	CHECK_EQ(image.own_code_end, 0);

	srand(7); /* random section headers: never a bad access */
	for (int round = 0; round < 20000; round++) {
		build_good(&f);
		add_own_code_section(&f, TEXT_VA + 0x100, 0x80);
		for (int n = 1 + rand() % 4; n > 0; n--)
			f.bytes[0x1600 + rand() % 0x120] = (uint8_t)rand();
		if (exec_parse_elf(f.bytes, sizeof f.bytes, &image) == 0 && image.own_code_end)
			CHECK(image.own_code_start >= TEXT_VA &&
			      image.own_code_end <= TEXT_VA + 0x1000);
	}
}

/* .eh_frame_hdr at file 0x800 (one search-table entry) and .eh_frame at
 * 0x900, both in the text segment; section headers at 0x1600 (null,
 * .eh_frame_hdr, .eh_frame, .shstrtab), names at 0x1780. */
static void add_unwind_sections(struct elf_file *f)
{
	static const char names[] = "\0.eh_frame_hdr\0.eh_frame\0.shstrtab";
	uint8_t *h = f->bytes, *hdr = f->bytes + 0x800;
	put64(h + 40, 0x1600);
	put16(h + 58, 64);
	put16(h + 60, 4);
	put16(h + 62, 3);
	hdr[0] = 1, hdr[1] = 0x1b, hdr[2] = 0x03, hdr[3] = 0x3b;
	put32(hdr + 4, 0x900 - 0x804);
	put32(hdr + 8, 1);
	put32(hdr + 12, 0x100 - 0x800);
	put32(hdr + 16, 0x900 - 0x800);
	const struct {
		uint32_t name;
		uint64_t offset, size;
	} sections[3] = {{1, 0x800, 20}, {15, 0x900, 0x40}, {25, 0x1780, sizeof names}};
	for (int i = 0; i < 3; i++) {
		uint8_t *sh = f->bytes + 0x1600 + 64 * (i + 1);
		put32(sh, sections[i].name);
		put32(sh + 4, i == 2 ? 3 : 1);
		put64(sh + 16, i == 2 ? 0 : TEXT_VA + sections[i].offset);
		put64(sh + 24, sections[i].offset);
		put64(sh + 32, sections[i].size);
	}
	memcpy(f->bytes + 0x1780, names, sizeof names);
}

/* The unwind tables are noted when both sections are mapped from the file
 * and the header checks out; a hostile header or section leaves them out
 * and the image is still accepted. */
static void unwind_tables_are_found(void)
{
	struct elf_file f;
	struct exec_image image;
	build_good(&f);
	add_unwind_sections(&f);
	REQUIRE_EQ(exec_parse_elf(f.bytes, sizeof f.bytes, &image), 0);
	CHECK_EQ(image.unwind.hdr, TEXT_VA + 0x800);
	CHECK_EQ(image.unwind.fde_count, 1);
	CHECK_EQ(image.unwind.eh_frame_start, TEXT_VA + 0x900);
	CHECK_EQ(image.unwind.eh_frame_end, TEXT_VA + 0x940);
	CHECK(image.unwind.identity != 0);

	const struct {
		size_t at;
		uint64_t value;
		int width;
	} hostile[] = {
	    {0x800, 2, 1},                  /* header version 2 */
	    {0x801, 0x9b, 1},               /* an indirect eh_frame pointer */
	    {0x808, 0x7fffffff, 4},         /* a search table past the section */
	    {0x804, 0x200, 4},              /* the pointer misses .eh_frame */
	    {0x1600 + 64 + 16, DATA_VA, 8}, /* the header in the data segment's bss */
	    {0x1600 + 128 + 24, 0x950, 8},  /* .eh_frame's offset not its address's */
	    {0x1600 + 128 + 32, 0x2000, 8}, /* .eh_frame past the file */
	    {0x1600 + 64 + 32, 0, 8},       /* an empty header */
	};
	for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
		build_good(&f);
		add_unwind_sections(&f);
		memcpy(f.bytes + hostile[i].at, &hostile[i].value, (size_t)hostile[i].width);
		REQUIRE_EQ(exec_parse_elf(f.bytes, sizeof f.bytes, &image), 0);
		CHECK_EQ(image.unwind.fde_count, 0);
	}

	srand(11); /* random headers and sections: never a bad access */
	for (int round = 0; round < 20000; round++) {
		build_good(&f);
		add_unwind_sections(&f);
		for (int n = 1 + rand() % 4; n > 0; n--) {
			int region = rand() % 2;
			f.bytes[region ? 0x1600 + rand() % 0x140 : 0x800 + rand() % 20] =
			    (uint8_t)rand();
		}
		if (exec_parse_elf(f.bytes, sizeof f.bytes, &image) == 0 && image.unwind.fde_count)
			CHECK(image.unwind.hdr >= TEXT_VA &&
			      image.unwind.eh_frame_end <= TEXT_VA + 0x1000);
	}
}

/* argc, argv, envp and auxv where the ABI puts them, rsp 16-byte aligned. */
static void stack_layout(void)
{
	static uint8_t buffer[8192];
	struct elf_file f;
	struct exec_image image;
	build_good(&f);
	REQUIRE_EQ(exec_parse_elf(f.bytes, sizeof f.bytes, &image), 0);
	char *argv[] = {"prog", "one", NULL};
	char *envp[] = {"A=1", NULL};
	uint8_t random[16] = {1, 2, 3};
	struct exec_stack_args args = {argv, envp, &image, random, 0x700000100000};
	uint64_t top = 0x7ffffffff000;
	uint64_t sp = exec_build_stack(buffer, sizeof buffer, top, &args);
	REQUIRE(sp != 0);
	CHECK_EQ(sp % 16, 0);
	const uint64_t *words = (const uint64_t *)(buffer + sizeof buffer - (top - sp));
	CHECK_EQ(words[0], 2);
	const char *argv0 = (const char *)(buffer + sizeof buffer - (top - words[1]));
	CHECK_STR_EQ(argv0, "prog");
	CHECK_EQ(words[3], 0);
	const char *env0 = (const char *)(buffer + sizeof buffer - (top - words[4]));
	CHECK_STR_EQ(env0, "A=1");
	CHECK_EQ(words[5], 0);
	bool saw_pagesz = false, saw_random = false, saw_clock = false;
	for (const uint64_t *aux = words + 6; aux[0] != AT_NULL; aux += 2) {
		saw_pagesz |= aux[0] == AT_PAGESZ && aux[1] == 4096;
		saw_random |= aux[0] == AT_RANDOM && aux[1] == top - 16;
		saw_clock |= aux[0] == CLOCK_USER_AT && aux[1] == 0x700000100000;
	}
	CHECK(saw_pagesz);
	CHECK(saw_random);
	CHECK(saw_clock);
	CHECK_EQ(buffer[sizeof buffer - 16], 1);
}

/* Arguments that do not fit give 0 (-E2BIG for the caller), not an overflow. */
static void stack_too_small_is_refused(void)
{
	static uint8_t buffer[256];
	struct elf_file f;
	struct exec_image image;
	build_good(&f);
	REQUIRE_EQ(exec_parse_elf(f.bytes, sizeof f.bytes, &image), 0);
	char long_arg[300];
	memset(long_arg, 'x', sizeof long_arg - 1);
	long_arg[sizeof long_arg - 1] = '\0';
	char *argv[] = {"prog", long_arg, NULL};
	char *envp[] = {NULL};
	uint8_t random[16] = {0};
	struct exec_stack_args args = {argv, envp, &image, random, 0};
	CHECK_EQ(exec_build_stack(buffer, sizeof buffer, 0x7ffffffff000, &args), 0);
	char *many[40];
	for (int i = 0; i < 39; i++)
		many[i] = "a";
	many[39] = NULL;
	args.argv = many;
	CHECK_EQ(exec_build_stack(buffer, sizeof buffer, 0x7ffffffff000, &args), 0);
}

HOSTTEST_MAIN(HOSTTEST_CASE(good_image_is_described), HOSTTEST_CASE(every_truncation_is_refused),
	      HOSTTEST_CASE(each_corruption_is_refused),
	      HOSTTEST_CASE(random_headers_never_overread), HOSTTEST_CASE(stack_layout),
	      HOSTTEST_CASE(stack_too_small_is_refused), HOSTTEST_CASE(own_code_section_is_found),
	      HOSTTEST_CASE(unwind_tables_are_found))
