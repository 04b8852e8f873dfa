// host-test-sources: kernel/boot/multiboot.c
/*
 * kernel/boot/multiboot.c on synthetic loader blocks.  "Physical memory" is a
 * few heap blocks, each exactly as long as what it holds, reached only through
 * the parser's map callback, so the sanitizers catch any read past a block.
 * Well-formed multiboot1 and multiboot2 blocks must come out complete (memory
 * map, command line without mb1's image name, modules, framebuffer, RSDP);
 * corrupt ones (a tag past the end, no end tag, a zero-size tag, no memory
 * map) must give -1 and no crash.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "boot/bootinfo.h"
#include "hosttest.h"

#define MAX_BLOCKS 8

struct block {
	uint64_t phys;
	size_t size;
	uint8_t *data;
};
static struct block memory[MAX_BLOCKS];
static int block_count;

static const void *map(uint64_t phys, uint64_t length)
{
	for (int i = 0; i < block_count; i++) {
		struct block *b = &memory[i];
		if (phys >= b->phys && length <= b->size && phys - b->phys <= b->size - length)
			return b->data + (phys - b->phys);
	}
	return NULL;
}

/* Places a copy of data at phys; returns phys. */
static uint64_t place(uint64_t phys, const void *data, size_t size)
{
	struct block *b = &memory[block_count++];
	b->phys = phys;
	b->size = size;
	b->data = malloc(size);
	memcpy(b->data, data, size);
	return phys;
}

static void forget_memory(void)
{
	for (int i = 0; i < block_count; i++)
		free(memory[i].data);
	block_count = 0;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* ---- multiboot1 ------------------------------------------------------------ */

static struct boot_info info;

static uint64_t place_mb1_mmap(void)
{
	uint8_t mmap[3 * 24] = {0};
	const uint64_t ranges[3][3] = {
	    {0, 0x9fc00, 1}, {0xf0000, 0x10000, 2}, {0x100000, 0x3ee0000, 1}};
	for (int i = 0; i < 3; i++) {
		put32(mmap + i * 24, 20);
		put64(mmap + i * 24 + 4, ranges[i][0]);
		put64(mmap + i * 24 + 12, ranges[i][1]);
		put32(mmap + i * 24 + 20, (uint32_t)ranges[i][2]);
	}
	return place(0x3000, mmap, sizeof mmap);
}

static void build_mb1(uint8_t *mb1, uint32_t flags)
{
	static const char cmdline[] = "/boot/microscope.elf ktest=all exit=qemu";
	static const char loader[] = "qemu";
	static const char module_name[] = "initrd.cpio";
	uint8_t mods[16] = {0};
	memset(mb1, 0, 116);
	put32(mb1, flags);
	put32(mb1 + 16, (uint32_t)place(0x1000, cmdline, sizeof cmdline));
	put32(mb1 + 64, (uint32_t)place(0x1100, loader, sizeof loader));
	put32(mods, 0x200000);
	put32(mods + 4, 0x280000);
	put32(mods + 8, (uint32_t)place(0x1200, module_name, sizeof module_name));
	put32(mb1 + 20, 1);
	put32(mb1 + 24, (uint32_t)place(0x2000, mods, sizeof mods));
	put32(mb1 + 44, 3 * 24);
	put32(mb1 + 48, (uint32_t)place_mb1_mmap());
	put64(mb1 + 88, 0xfd000000);
	put32(mb1 + 96, 4096);
	put32(mb1 + 100, 1024);
	put32(mb1 + 104, 768);
	mb1[108] = 32;
	mb1[109] = 1;
	mb1[110] = 16;
	mb1[112] = 8;
	mb1[114] = 0;
}

static void mb1_block_parses_completely(void)
{
	uint8_t mb1[116];
	build_mb1(mb1, (1u << 2) | (1u << 3) | (1u << 6) | (1u << 9) | (1u << 12));
	uint64_t at = place(0x9000, mb1, sizeof mb1);
	REQUIRE_EQ(bootinfo_parse(MULTIBOOT1_LOADER_MAGIC, at, map, &info), 0);
	CHECK_EQ(info.protocol, BOOT_MULTIBOOT1);
	CHECK_STR_EQ(info.cmdline, "ktest=all exit=qemu");
	CHECK_STR_EQ(info.loader_name, "qemu");
	REQUIRE_EQ(info.region_count, 3);
	CHECK_EQ(info.regions[2].base, 0x100000);
	CHECK_EQ(info.regions[2].length, 0x3ee0000);
	CHECK_EQ(info.regions[1].type, BOOT_REGION_RESERVED);
	REQUIRE_EQ(info.module_count, 1);
	CHECK_EQ(info.modules[0].start, 0x200000);
	CHECK_EQ(info.modules[0].end, 0x280000);
	CHECK_STR_EQ(info.modules[0].name, "initrd.cpio");
	CHECK(info.has_framebuffer);
	CHECK_EQ(info.framebuffer.address, 0xfd000000);
	CHECK_EQ(info.framebuffer.width, 1024);
	CHECK_EQ(info.framebuffer.bpp, 32);
	CHECK_EQ(info.framebuffer.red_shift, 16);
	CHECK(!info.efi);
	forget_memory();
}

static void mb1_image_name_alone_gives_empty_cmdline(void)
{
	static const char cmdline[] = "/boot/microscope.elf";
	uint8_t mb1[116];
	build_mb1(mb1, (1u << 2) | (1u << 6));
	forget_memory();
	put32(mb1 + 16, (uint32_t)place(0x1000, cmdline, sizeof cmdline));
	put32(mb1 + 48, (uint32_t)place_mb1_mmap());
	uint64_t at = place(0x9000, mb1, sizeof mb1);
	REQUIRE_EQ(bootinfo_parse(MULTIBOOT1_LOADER_MAGIC, at, map, &info), 0);
	CHECK_STR_EQ(info.cmdline, "");
	CHECK_EQ(info.module_count, 0);
	CHECK(!info.has_framebuffer);
	forget_memory();
}

static void mb1_without_memory_map_is_refused(void)
{
	uint8_t mb1[116];
	build_mb1(mb1, 1u << 2);
	uint64_t at = place(0x9000, mb1, sizeof mb1);
	CHECK_EQ(bootinfo_parse(MULTIBOOT1_LOADER_MAGIC, at, map, &info), -1);
	forget_memory();
}

static void mb1_bad_mmap_entry_size_is_refused(void)
{
	uint8_t mb1[116];
	build_mb1(mb1, 1u << 6);
	memory[block_count - 1].data[0] = 4; /* first entry: size 4 < 20 */
	uint64_t at = place(0x9000, mb1, sizeof mb1);
	CHECK_EQ(bootinfo_parse(MULTIBOOT1_LOADER_MAGIC, at, map, &info), -1);
	forget_memory();
}

/* Parses a multiboot1 block whose memory map is the length bytes at mmap. */
static int parse_mb1_with_mmap(const uint8_t *mmap, uint32_t length)
{
	uint8_t mb1[116];
	build_mb1(mb1, 1u << 6);
	put32(mb1 + 44, length);
	put32(mb1 + 48, (uint32_t)place(0x20000, mmap, length));
	uint64_t at = place(0x9000, mb1, sizeof mb1);
	int result = bootinfo_parse(MULTIBOOT1_LOADER_MAGIC, at, map, &info);
	forget_memory();
	return result;
}

static void put_mb1_entry(uint8_t *entry, uint32_t size, uint64_t base, uint64_t length,
			  uint32_t type)
{
	put32(entry, size);
	put64(entry + 4, base);
	put64(entry + 12, length);
	put32(entry + 20, type);
}

/* A size of 0xffffffe4 made a 32-bit offset wrap back to the first entry:
 * the parser went round for ever. */
static void mb1_mmap_entry_size_that_wraps_is_refused(void)
{
	uint8_t mmap[48] = {0};
	put_mb1_entry(mmap, 20, 0x100000, 0x1000000, 1);
	put_mb1_entry(mmap + 24, 0xffffffe4, 0, 0, 1);
	CHECK_EQ(parse_mb1_with_mmap(mmap, sizeof mmap), -1);
}

static void mb1_mmap_entry_past_the_map_is_refused(void)
{
	uint8_t mmap[48] = {0};
	put_mb1_entry(mmap, 20, 0x100000, 0x1000000, 1);
	put_mb1_entry(mmap + 24, 40, 0x2000000, 0x1000, 1); /* 44 bytes, 24 left */
	CHECK_EQ(parse_mb1_with_mmap(mmap, sizeof mmap), -1);
}

#define MANY_ENTRIES (BOOT_MAX_REGIONS + 72)

/* Touching entries of a type become one region, whatever their number. */
static void mb1_touching_entries_of_a_type_merge(void)
{
	static uint8_t mmap[MANY_ENTRIES * 24];
	for (unsigned i = 0; i < MANY_ENTRIES; i++)
		put_mb1_entry(mmap + i * 24, 20, 0x100000 + i * 0x1000ULL, 0x1000,
			      i == MANY_ENTRIES - 1 ? 2 : 1);
	REQUIRE_EQ(parse_mb1_with_mmap(mmap, sizeof mmap), 0);
	REQUIRE_EQ(info.region_count, 2);
	CHECK_EQ(info.regions[0].base, 0x100000);
	CHECK_EQ(info.regions[0].length, (MANY_ENTRIES - 1) * 0x1000ULL);
	CHECK_EQ(info.regions[1].type, BOOT_REGION_RESERVED);
	CHECK_EQ(info.regions_dropped, 0);
}

/* Separate entries past the table are counted, not silently lost. */
static void mb1_entries_past_the_table_are_counted(void)
{
	static uint8_t mmap[MANY_ENTRIES * 24];
	for (unsigned i = 0; i < MANY_ENTRIES; i++)
		put_mb1_entry(mmap + i * 24, 20, 0x100000 + i * 0x2000ULL, 0x1000, 1);
	REQUIRE_EQ(parse_mb1_with_mmap(mmap, sizeof mmap), 0);
	CHECK_EQ(info.region_count, BOOT_MAX_REGIONS);
	CHECK_EQ(info.regions_dropped, MANY_ENTRIES - BOOT_MAX_REGIONS);
}

static void unmapped_or_unknown_blocks_are_refused(void)
{
	CHECK_EQ(bootinfo_parse(MULTIBOOT1_LOADER_MAGIC, 0x9000, map, &info), -1);
	CHECK_EQ(bootinfo_parse(MULTIBOOT2_LOADER_MAGIC, 0x9000, map, &info), -1);
	CHECK_EQ(bootinfo_parse(0x12345678, 0x9000, map, &info), -1);
}

/* ---- multiboot2 ------------------------------------------------------------ */

struct mb2 {
	uint8_t data[1024];
	uint32_t length;
};

static void mb2_start(struct mb2 *m)
{
	memset(m, 0, sizeof *m);
	m->length = 8;
}

/* Appends a tag of type with payload; size is 8 + payload unless forced. */
static void mb2_tag(struct mb2 *m, uint32_t type, const void *payload, uint32_t length)
{
	put32(m->data + m->length, type);
	put32(m->data + m->length + 4, 8 + length);
	if (length)
		memcpy(m->data + m->length + 8, payload, length);
	m->length += (8 + length + 7) & ~7u;
}

static void mb2_string(struct mb2 *m, uint32_t type, const char *s)
{
	mb2_tag(m, type, s, (uint32_t)strlen(s) + 1);
}

static void mb2_mmap(struct mb2 *m)
{
	uint8_t p[8 + 2 * 24] = {0};
	put32(p, 24);
	put64(p + 8, 0);
	put64(p + 16, 0x9fc00);
	put32(p + 24, 1);
	put64(p + 32, 0x100000);
	put64(p + 40, 0x7ee0000);
	put32(p + 48, 3);
	mb2_tag(m, 6, p, sizeof p);
}

static void mb2_framebuffer(struct mb2 *m)
{
	uint8_t p[32] = {0};
	put64(p, 0x80000000);
	put32(p + 8, 1280 * 4);
	put32(p + 12, 1280);
	put32(p + 16, 800);
	p[20] = 32;
	p[21] = 1;
	p[24] = 16, p[25] = 8, p[26] = 8, p[27] = 8, p[28] = 0, p[29] = 8;
	mb2_tag(m, 8, p, 30);
}

static void mb2_module(struct mb2 *m)
{
	uint8_t p[8 + 16] = {0};
	put32(p, 0x400000);
	put32(p + 4, 0x401000);
	strcpy((char *)p + 8, "aspects.tar");
	mb2_tag(m, 3, p, sizeof p);
}

static void mb2_end(struct mb2 *m)
{
	mb2_tag(m, 0, NULL, 0);
	put32(m->data, m->length);
}

static void mb2_full(struct mb2 *m)
{
	uint8_t rsdp[36];
	memcpy(rsdp, "RSD PTR ", 8);
	for (int i = 8; i < 36; i++)
		rsdp[i] = (uint8_t)i;
	mb2_start(m);
	mb2_string(m, 1, "ktest=all exit=qemu");
	mb2_string(m, 2, "GRUB 2.06");
	mb2_module(m);
	mb2_mmap(m);
	mb2_framebuffer(m);
	mb2_tag(m, 12, "\0\0\0\0\0\0\0\0", 8);
	mb2_tag(m, 15, rsdp, sizeof rsdp);
}

static int parse_mb2(const struct mb2 *m)
{
	uint64_t at = place(0x10000, m->data, m->length);
	int result = bootinfo_parse(MULTIBOOT2_LOADER_MAGIC, at, map, &info);
	forget_memory();
	return result;
}

static void mb2_block_parses_completely(void)
{
	struct mb2 m;
	mb2_full(&m);
	mb2_end(&m);
	REQUIRE_EQ(parse_mb2(&m), 0);
	CHECK_EQ(info.protocol, BOOT_MULTIBOOT2);
	CHECK_STR_EQ(info.cmdline, "ktest=all exit=qemu");
	CHECK_STR_EQ(info.loader_name, "GRUB 2.06");
	REQUIRE_EQ(info.region_count, 2);
	CHECK_EQ(info.regions[1].base, 0x100000);
	CHECK_EQ(info.regions[1].type, BOOT_REGION_ACPI_RECLAIMABLE);
	REQUIRE_EQ(info.module_count, 1);
	CHECK_EQ(info.modules[0].start, 0x400000);
	CHECK_STR_EQ(info.modules[0].name, "aspects.tar");
	CHECK(info.has_framebuffer);
	CHECK_EQ(info.framebuffer.pitch, 1280 * 4);
	CHECK_EQ(info.framebuffer.height, 800);
	CHECK_EQ(info.framebuffer.type, 1);
	CHECK_EQ(info.framebuffer.red_shift, 16);
	CHECK_EQ(info.framebuffer.green_shift, 8);
	CHECK_EQ(info.framebuffer.blue_shift, 0);
	CHECK(info.efi);
	CHECK(info.has_rsdp);
	CHECK(memcmp(info.rsdp, "RSD PTR ", 8) == 0);
	CHECK_EQ(info.rsdp[35], 35);
}

static void mb2_old_rsdp_does_not_replace_new(void)
{
	struct mb2 m;
	uint8_t old[20];
	memcpy(old, "RSD PTR ", 8);
	memset(old + 8, 0xee, 12);
	mb2_full(&m);
	mb2_tag(&m, 14, old, sizeof old);
	mb2_end(&m);
	REQUIRE_EQ(parse_mb2(&m), 0);
	CHECK_EQ(info.rsdp[8], 8);
}

static void mb2_tag_past_the_end_is_refused(void)
{
	struct mb2 m;
	mb2_full(&m);
	uint32_t last = m.length;
	mb2_end(&m);
	put32(m.data + last + 4, 4096); /* the end tag claims 4 KiB */
	CHECK_EQ(parse_mb2(&m), -1);
	mb2_full(&m);
	mb2_end(&m);
	put32(m.data + 8 + 4, 0x7fffffff); /* the first tag, hugely */
	CHECK_EQ(parse_mb2(&m), -1);
}

static void mb2_missing_end_tag_is_refused(void)
{
	struct mb2 m;
	mb2_full(&m);
	put32(m.data, m.length);
	CHECK_EQ(parse_mb2(&m), -1);
}

static void mb2_zero_size_tag_is_refused(void)
{
	struct mb2 m;
	mb2_start(&m);
	mb2_mmap(&m);
	uint32_t bad = m.length;
	mb2_string(&m, 1, "x");
	mb2_end(&m);
	put32(m.data + bad + 4, 0);
	CHECK_EQ(parse_mb2(&m), -1);
}

static void mb2_total_size_past_the_block_is_refused(void)
{
	struct mb2 m;
	mb2_full(&m);
	mb2_end(&m);
	put32(m.data, m.length + 64); /* more than the loader handed over */
	CHECK_EQ(parse_mb2(&m), -1);
	put32(m.data, 4); /* less than a header and an end tag */
	CHECK_EQ(parse_mb2(&m), -1);
}

static void mb2_without_memory_map_is_refused(void)
{
	struct mb2 m;
	mb2_start(&m);
	mb2_string(&m, 1, "quiet");
	mb2_end(&m);
	CHECK_EQ(parse_mb2(&m), -1);
}

static void mb2_short_module_and_mmap_tags_are_refused(void)
{
	struct mb2 m;
	mb2_start(&m);
	mb2_mmap(&m);
	mb2_tag(&m, 3, "\0\0\0\0", 4);
	mb2_end(&m);
	CHECK_EQ(parse_mb2(&m), -1);
	mb2_start(&m);
	uint8_t tiny_entries[8] = {8};
	mb2_tag(&m, 6, tiny_entries, sizeof tiny_entries);
	mb2_end(&m);
	CHECK_EQ(parse_mb2(&m), -1);
}

static void mb2_unterminated_cmdline_stays_in_its_tag(void)
{
	struct mb2 m;
	mb2_start(&m);
	mb2_mmap(&m);
	mb2_tag(&m, 1, "abcdefgh", 8); /* no NUL inside the tag */
	mb2_end(&m);
	REQUIRE_EQ(parse_mb2(&m), 0);
	CHECK_STR_EQ(info.cmdline, "abcdefgh");
}

HOSTTEST_MAIN(HOSTTEST_CASE(mb1_block_parses_completely),
	      HOSTTEST_CASE(mb1_image_name_alone_gives_empty_cmdline),
	      HOSTTEST_CASE(mb1_without_memory_map_is_refused),
	      HOSTTEST_CASE(mb1_bad_mmap_entry_size_is_refused),
	      HOSTTEST_CASE(mb1_mmap_entry_size_that_wraps_is_refused),
	      HOSTTEST_CASE(mb1_mmap_entry_past_the_map_is_refused),
	      HOSTTEST_CASE(mb1_touching_entries_of_a_type_merge),
	      HOSTTEST_CASE(mb1_entries_past_the_table_are_counted),
	      HOSTTEST_CASE(unmapped_or_unknown_blocks_are_refused),
	      HOSTTEST_CASE(mb2_block_parses_completely),
	      HOSTTEST_CASE(mb2_old_rsdp_does_not_replace_new),
	      HOSTTEST_CASE(mb2_tag_past_the_end_is_refused),
	      HOSTTEST_CASE(mb2_missing_end_tag_is_refused),
	      HOSTTEST_CASE(mb2_zero_size_tag_is_refused),
	      HOSTTEST_CASE(mb2_total_size_past_the_block_is_refused),
	      HOSTTEST_CASE(mb2_without_memory_map_is_refused),
	      HOSTTEST_CASE(mb2_short_module_and_mmap_tags_are_refused),
	      HOSTTEST_CASE(mb2_unterminated_cmdline_stays_in_its_tag))
