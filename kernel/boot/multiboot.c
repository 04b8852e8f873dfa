/*
 * Multiboot1 and multiboot2 information blocks → struct boot_info.
 *
 * Both formats are read through the map callback, which bounds every access
 * (the kernel passes the physmap, host tests pass a buffer), and every length
 * is checked against what contains it before use: a loader bug or a corrupted
 * block gives an error, not a wild read.
 */
#include <stdbool.h>
#include <stddef.h>

#include "boot/bootinfo.h"
#include "lib/string.h"
#include "lib/unaligned.h"

#define MB1_FLAG_CMDLINE     (1u << 2)
#define MB1_FLAG_MODS        (1u << 3)
#define MB1_FLAG_MMAP        (1u << 6)
#define MB1_FLAG_LOADER      (1u << 9)
#define MB1_FLAG_FRAMEBUFFER (1u << 12)

enum mb2_tag {
	MB2_TAG_END = 0,
	MB2_TAG_CMDLINE = 1,
	MB2_TAG_LOADER = 2,
	MB2_TAG_MODULE = 3,
	MB2_TAG_MMAP = 6,
	MB2_TAG_FRAMEBUFFER = 8,
	MB2_TAG_EFI64 = 12,
	MB2_TAG_ACPI_OLD = 14,
	MB2_TAG_ACPI_NEW = 15,
};

/* Copies a NUL-terminated string of at most max bytes at phys into dst. */
static void copy_phys_string(bootinfo_phys_to_ptr map, uint64_t phys, char *dst, size_t size)
{
	const char *s = map(phys, 1);
	dst[0] = '\0';
	if (!s)
		return;
	size_t n = 0;
	while (n + 1 < size) {
		const char *c = map(phys + n, 1);
		if (!c || !*c)
			break;
		dst[n++] = *c;
	}
	dst[n] = '\0';
}

static void copy_bounded_string(const uint8_t *src, size_t available, char *dst, size_t size)
{
	size_t n = strnlen((const char *)src, available);
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Extends a region of type that ends where base starts or starts where
 * base + length ends.  Returns false when none touches it. */
static bool merge_region(struct boot_info *out, uint64_t base, uint64_t length, uint32_t type)
{
	for (unsigned i = 0; i < out->region_count; i++) {
		struct boot_region *r = &out->regions[i];
		if (r->type != type)
			continue;
		if (base >= r->base && base - r->base == r->length) {
			r->length += length;
			return true;
		}
		if (base < r->base && r->base - base == length) {
			r->base = base;
			r->length += length;
			return true;
		}
	}
	return false;
}

/* Firmware may split one range into many entries: touching ones of a type
 * become one region, so the table holds more of the map; what still does
 * not fit is counted in regions_dropped. */
static void add_region(struct boot_info *out, uint64_t base, uint64_t length, uint32_t type)
{
	if (length == 0)
		return;
	if (type < BOOT_REGION_USABLE || type > BOOT_REGION_BAD)
		type = BOOT_REGION_RESERVED;
	if (merge_region(out, base, length, type))
		return;
	if (out->region_count == BOOT_MAX_REGIONS) {
		out->regions_dropped++;
		return;
	}
	out->regions[out->region_count++] = (struct boot_region){base, length, type};
}

static void add_module(struct boot_info *out, uint64_t start, uint64_t end)
{
	if (out->module_count == BOOT_MAX_MODULES || end < start)
		return;
	struct boot_module *m = &out->modules[out->module_count++];
	m->start = start;
	m->end = end;
	m->name[0] = '\0';
}

/* Multiboot1 loaders put the kernel image's name first on the command line. */
static void drop_image_name(char *cmdline)
{
	char *space = strchr(cmdline, ' ');
	if (!space) {
		cmdline[0] = '\0';
		return;
	}
	memmove(cmdline, space + 1, strlen(space + 1) + 1);
}

#define MB1_MMAP_ENTRY_MIN 24 /* the size field (4) and a 20-byte entry */

/* Each entry is a 32-bit size, then that many bytes (base, length, type
 * first).  The offset is 64-bit so a huge size cannot wrap it back, and an
 * entry whose size runs past the map is an inconsistent block. */
static int parse_mb1_mmap(bootinfo_phys_to_ptr map, uint64_t address, uint32_t length,
			  struct boot_info *out)
{
	const uint8_t *entries = map(address, length);
	if (!entries)
		return -1;
	for (uint64_t offset = 0; offset + MB1_MMAP_ENTRY_MIN <= length;) {
		uint32_t size = read_le32(entries + offset);
		if (size < MB1_MMAP_ENTRY_MIN - 4 || size > length - offset - 4)
			return -1;
		add_region(out, read_le64(entries + offset + 4), read_le64(entries + offset + 12),
			   read_le32(entries + offset + 20));
		offset += (uint64_t)size + 4;
	}
	return 0;
}

static void parse_mb1_modules(bootinfo_phys_to_ptr map, uint32_t count, uint64_t address,
			      struct boot_info *out)
{
	const uint8_t *mods = map(address, (uint64_t)count * 16);
	for (uint32_t i = 0; mods && i < count; i++) {
		add_module(out, read_le32(mods + i * 16), read_le32(mods + i * 16 + 4));
		if (out->module_count)
			copy_phys_string(map, read_le32(mods + i * 16 + 8),
					 out->modules[out->module_count - 1].name,
					 sizeof out->modules[0].name);
	}
}

static void parse_mb1_framebuffer(const uint8_t *info, struct boot_info *out)
{
	struct boot_framebuffer *fb = &out->framebuffer;
	fb->address = read_le64(info + 88);
	fb->pitch = read_le32(info + 96);
	fb->width = read_le32(info + 100);
	fb->height = read_le32(info + 104);
	fb->bpp = info[108];
	fb->type = info[109];
	fb->red_shift = info[110];
	fb->green_shift = info[112];
	fb->blue_shift = info[114];
	out->has_framebuffer = true;
}

static int parse_mb1(bootinfo_phys_to_ptr map, uint64_t info_phys, struct boot_info *out)
{
	const uint8_t *info = map(info_phys, 116);
	if (!info)
		return -1;
	uint32_t flags = read_le32(info);
	out->protocol = BOOT_MULTIBOOT1;
	if (flags & MB1_FLAG_CMDLINE) {
		copy_phys_string(map, read_le32(info + 16), out->cmdline, sizeof out->cmdline);
		drop_image_name(out->cmdline);
	}
	if (flags & MB1_FLAG_LOADER)
		copy_phys_string(map, read_le32(info + 64), out->loader_name,
				 sizeof out->loader_name);
	if (flags & MB1_FLAG_MODS)
		parse_mb1_modules(map, read_le32(info + 20), read_le32(info + 24), out);
	if (flags & MB1_FLAG_FRAMEBUFFER)
		parse_mb1_framebuffer(info, out);
	if (flags & MB1_FLAG_MMAP)
		return parse_mb1_mmap(map, read_le32(info + 48), read_le32(info + 44), out);
	return -1; /* no memory map: nothing we can run on */
}

static int parse_mb2_mmap(const uint8_t *tag, uint32_t size, struct boot_info *out)
{
	uint32_t entry_size = read_le32(tag + 8);
	if (entry_size < 24 || size < 16)
		return -1;
	for (uint32_t offset = 16; offset + entry_size <= size; offset += entry_size)
		add_region(out, read_le64(tag + offset), read_le64(tag + offset + 8),
			   read_le32(tag + offset + 16));
	return 0;
}

static void parse_mb2_framebuffer(const uint8_t *tag, uint32_t size, struct boot_info *out)
{
	if (size < 32)
		return;
	struct boot_framebuffer *fb = &out->framebuffer;
	fb->address = read_le64(tag + 8);
	fb->pitch = read_le32(tag + 16);
	fb->width = read_le32(tag + 20);
	fb->height = read_le32(tag + 24);
	fb->bpp = tag[28];
	fb->type = tag[29];
	if (fb->type == 1 && size >= 38) {
		fb->red_shift = tag[32];
		fb->green_shift = tag[34];
		fb->blue_shift = tag[36];
	}
	out->has_framebuffer = true;
}

static void copy_rsdp(const uint8_t *tag, uint32_t size, struct boot_info *out)
{
	uint32_t length = size - 8;
	if (size < 8 + 20)
		return;
	if (length > sizeof out->rsdp)
		length = sizeof out->rsdp;
	memcpy(out->rsdp, tag + 8, length);
	out->has_rsdp = true;
}

static int parse_mb2_tag(const uint8_t *tag, uint32_t type, uint32_t size, struct boot_info *out)
{
	switch (type) {
	case MB2_TAG_CMDLINE:
		copy_bounded_string(tag + 8, size - 8, out->cmdline, sizeof out->cmdline);
		break;
	case MB2_TAG_LOADER:
		copy_bounded_string(tag + 8, size - 8, out->loader_name, sizeof out->loader_name);
		break;
	case MB2_TAG_MODULE:
		if (size < 16)
			return -1;
		add_module(out, read_le32(tag + 8), read_le32(tag + 12));
		if (out->module_count)
			copy_bounded_string(tag + 16, size - 16,
					    out->modules[out->module_count - 1].name,
					    sizeof out->modules[0].name);
		break;
	case MB2_TAG_MMAP: return parse_mb2_mmap(tag, size, out);
	case MB2_TAG_FRAMEBUFFER: parse_mb2_framebuffer(tag, size, out); break;
	case MB2_TAG_EFI64: out->efi = true; break;
	case MB2_TAG_ACPI_NEW: copy_rsdp(tag, size, out); break;
	case MB2_TAG_ACPI_OLD:
		if (!out->has_rsdp)
			copy_rsdp(tag, size, out);
		break;
	}
	return 0;
}

static int parse_mb2(bootinfo_phys_to_ptr map, uint64_t info_phys, struct boot_info *out)
{
	const uint8_t *header = map(info_phys, 8);
	if (!header)
		return -1;
	uint32_t total = read_le32(header);
	const uint8_t *info = map(info_phys, total);
	if (!info || total < 16)
		return -1;
	out->protocol = BOOT_MULTIBOOT2;
	for (uint32_t offset = 8; offset + 8 <= total;) {
		uint32_t type = read_le32(info + offset), size = read_le32(info + offset + 4);
		if (size < 8 || size > total - offset)
			return -1;
		if (type == MB2_TAG_END)
			return out->region_count ? 0 : -1;
		if (parse_mb2_tag(info + offset, type, size, out) < 0)
			return -1;
		offset += (size + 7) & ~7u;
	}
	return -1; /* no end tag */
}

int bootinfo_parse(uint32_t magic, uint64_t info_phys, bootinfo_phys_to_ptr map,
		   struct boot_info *out)
{
	memset(out, 0, sizeof *out);
	if (magic == MULTIBOOT1_LOADER_MAGIC)
		return parse_mb1(map, info_phys, out);
	if (magic == MULTIBOOT2_LOADER_MAGIC)
		return parse_mb2(map, info_phys, out);
	return -1;
}

static struct boot_info the_boot_info;

const struct boot_info *bootinfo(void)
{
	return &the_boot_info;
}

void bootinfo_set(const struct boot_info *info)
{
	if (info != &the_boot_info)
		memcpy(&the_boot_info, info, sizeof the_boot_info);
}
