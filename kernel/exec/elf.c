/*
 * ELF64 executable validation.  The file is untrusted: check, then describe.
 * Every field is checked before anything derived from it is used, in the
 * order a reader would: the identification bytes, the header's own fields,
 * the program header table's bounds, then each PT_LOAD segment against the
 * file length and the user layout, then the segments against each other, and
 * last the entry point.  Additions are checked for wrap-around by comparing
 * against what is left, never by adding first.  Nothing here allocates; the
 * result is a small description (struct exec_image) or -ENOEXEC.
 */
#include "exec/exec.h"

#include "arch/x86_64/layout.h"
#include "lib/cfi.h"
#include "lib/errno.h"
#include "lib/string.h"

#define EI_NIDENT   16
#define ELFCLASS64  2
#define ELFDATA2LSB 1
#define EV_CURRENT  1
#define ET_EXEC     2
#define EM_X86_64   62
#define PT_LOAD     1
#define PT_INTERP   3
#define PT_PHDR     6

struct elf64_header {
	uint8_t ident[EI_NIDENT];
	uint16_t type;
	uint16_t machine;
	uint32_t version;
	uint64_t entry;
	uint64_t phoff;
	uint64_t shoff;
	uint32_t flags;
	uint16_t ehsize;
	uint16_t phentsize;
	uint16_t phnum;
	uint16_t shentsize;
	uint16_t shnum;
	uint16_t shstrndx;
};

struct elf64_phdr {
	uint32_t type;
	uint32_t flags;
	uint64_t offset;
	uint64_t vaddr;
	uint64_t paddr;
	uint64_t filesz;
	uint64_t memsz;
	uint64_t align;
};

_Static_assert(sizeof(struct elf64_header) == 64, "ELF64 header");
_Static_assert(sizeof(struct elf64_phdr) == 56, "ELF64 program header");

static uint64_t page_down(uint64_t value)
{
	return value & ~(uint64_t)(PAGE_SIZE - 1);
}

/* True when [offset, offset + length) lies within size bytes. */
static bool within(uint64_t offset, uint64_t length, uint64_t size)
{
	return offset <= size && length <= size - offset;
}

static int check_header(const struct elf64_header *h, size_t size)
{
	static const uint8_t magic[4] = {0x7f, 'E', 'L', 'F'};
	if (memcmp(h->ident, magic, sizeof magic) != 0 || h->ident[4] != ELFCLASS64 ||
	    h->ident[5] != ELFDATA2LSB || h->ident[6] != EV_CURRENT)
		return -ENOEXEC;
	if (h->type != ET_EXEC || h->machine != EM_X86_64 || h->version != EV_CURRENT)
		return -ENOEXEC;
	if (h->phentsize != sizeof(struct elf64_phdr) || h->phnum == 0 || h->phnum > EXEC_MAX_PHDRS)
		return -ENOEXEC;
	if (!within(h->phoff, (uint64_t)h->phnum * sizeof(struct elf64_phdr), size))
		return -ENOEXEC;
	return 0;
}

/* One PT_LOAD on its own: inside the file, inside the user layout. */
static int check_segment(const struct elf64_phdr *ph, size_t size)
{
	if (ph->filesz > ph->memsz || ph->memsz == 0 || ph->memsz > EXEC_MAX_BYTES)
		return -ENOEXEC;
	if (!within(ph->offset, ph->filesz, size))
		return -ENOEXEC;
	if (ph->vaddr < EXEC_IMAGE_BASE || ph->vaddr >= EXEC_IMAGE_LIMIT ||
	    ph->memsz > EXEC_IMAGE_LIMIT - ph->vaddr)
		return -ENOEXEC;
	if ((ph->vaddr - ph->offset) % PAGE_SIZE != 0)
		return -ENOEXEC;
	if (ph->flags & ~(uint32_t)(EXEC_SEGMENT_READ | EXEC_SEGMENT_WRITE | EXEC_SEGMENT_EXEC))
		return -ENOEXEC;
	return 0;
}

/* Inserts segment into image keeping vaddr order.  Returns 0 or -ENOEXEC
 * (too many). */
static int add_segment(struct exec_image *image, const struct elf64_phdr *ph)
{
	if (image->segment_count == EXEC_MAX_SEGMENTS)
		return -ENOEXEC;
	unsigned i = image->segment_count++;
	while (i > 0 && image->segments[i - 1].vaddr > ph->vaddr) {
		image->segments[i] = image->segments[i - 1];
		i--;
	}
	image->segments[i] = (struct exec_segment){
	    .vaddr = ph->vaddr,
	    .memsz = ph->memsz,
	    .offset = ph->offset,
	    .filesz = ph->filesz,
	    .flags = ph->flags,
	};
	return 0;
}

/* Sorted segments must not share a page, and their total must stay small. */
static int check_layout(struct exec_image *image)
{
	uint64_t total = 0;
	for (unsigned i = 0; i < image->segment_count; i++) {
		const struct exec_segment *s = &image->segments[i];
		/* no wrap-around: check_segment kept end below EXEC_IMAGE_LIMIT */
		uint64_t end_page = page_down(s->vaddr + s->memsz + PAGE_SIZE - 1);
		if (i + 1 < image->segment_count &&
		    page_down(image->segments[i + 1].vaddr) < end_page)
			return -ENOEXEC;
		total += s->memsz;
		if (total > EXEC_MAX_BYTES)
			return -ENOEXEC;
	}
	const struct exec_segment *last = &image->segments[image->segment_count - 1];
	image->end = page_down(last->vaddr + last->memsz + PAGE_SIZE - 1);
	return 0;
}

static int check_entry(const struct exec_image *image, uint64_t entry)
{
	for (unsigned i = 0; i < image->segment_count; i++) {
		const struct exec_segment *s = &image->segments[i];
		if ((s->flags & EXEC_SEGMENT_EXEC) && entry >= s->vaddr &&
		    entry - s->vaddr < s->memsz)
			return 0;
	}
	return -ENOEXEC;
}

struct elf64_shdr {
	uint32_t name;
	uint32_t type;
	uint64_t flags;
	uint64_t addr;
	uint64_t offset;
	uint64_t size;
	uint32_t link;
	uint32_t info;
	uint64_t addralign;
	uint64_t entsize;
};

#define OWN_CODE_SECTION ".text.own"

/* Section i's header, copied out, when the table lies inside the file. */
static int read_section(const void *file, size_t size, const struct elf64_header *h, unsigned i,
			struct elf64_shdr *out)
{
	uint64_t at = h->shoff + (uint64_t)i * sizeof *out;
	if (h->shentsize != sizeof *out || i >= h->shnum || h->shoff > size || at < h->shoff ||
	    at > size - sizeof *out)
		return -ENOEXEC;
	memcpy(out, (const uint8_t *)file + at, sizeof *out);
	return 0;
}

/* Is the section named name, by the section-name table (names bounded by
 * the table and the file)? */
static bool section_named(const void *file, size_t size, const struct elf64_shdr *names,
			  const struct elf64_shdr *section, const char *name)
{
	uint64_t length = strlen(name) + 1;
	if (names->offset > size || names->size > size - names->offset ||
	    section->name > names->size || length > names->size - section->name)
		return false;
	return !memcmp((const uint8_t *)file + names->offset + section->name, name, length);
}

/* The program's own code (the build's .text.own, userland/own-code.ld), when
 * it has one inside an executable segment; else the range stays empty. */
static void note_own_code(const struct elf64_shdr *section, struct exec_image *image)
{
	if (section->size && check_entry(image, section->addr) == 0 &&
	    check_entry(image, section->addr + section->size - 1) == 0) {
		image->own_code_start = section->addr;
		image->own_code_end = section->addr + section->size;
	}
}

/* Are the section's bytes in memory the file's bytes of a readable segment
 * (so what exec reads here is what the unwinder reads later)? */
static bool section_mapped(const struct exec_image *image, const struct elf64_shdr *section,
			   size_t size)
{
	if (!section->size || section->offset > size || section->size > size - section->offset)
		return false;
	for (unsigned i = 0; i < image->segment_count; i++) {
		const struct exec_segment *s = &image->segments[i];
		if ((s->flags & EXEC_SEGMENT_READ) && section->addr >= s->vaddr &&
		    within(section->addr - s->vaddr, section->size, s->filesz) &&
		    section->offset - s->offset == section->addr - s->vaddr &&
		    section->offset >= s->offset)
			return true;
	}
	return false;
}

/* The unwind tables (.eh_frame_hdr's search table over .eh_frame, which the
 * build links with --eh-frame-hdr), when both are mapped from the file and
 * the header checks out (lib/cfi.h); else they stay empty and the trace
 * map's walk uses frame pointers only. */
static void note_unwind_tables(const void *file, size_t size, const struct elf64_shdr *hdr,
			       const struct elf64_shdr *eh_frame, struct exec_image *image)
{
	struct cfi_tables tables;
	if (!section_mapped(image, hdr, size) || !section_mapped(image, eh_frame, size) ||
	    cfi_parse_hdr((const uint8_t *)file + hdr->offset, hdr->size, hdr->addr, &tables) ||
	    tables.eh_frame_start != eh_frame->addr)
		return;
	tables.eh_frame_end = eh_frame->addr + eh_frame->size;
	uint64_t identity = cfi_hash(CFI_HASH_SEED, &tables, sizeof tables);
	identity = cfi_hash(identity, (const uint8_t *)file + hdr->offset, hdr->size);
	tables.identity =
	    cfi_hash(identity, (const uint8_t *)file + eh_frame->offset, eh_frame->size);
	image->unwind = tables;
}

/* Notes the sections the trace map uses: .text.own, .eh_frame_hdr and
 * .eh_frame.  None is required; a bad section header is skipped. */
static void find_sections(const void *file, size_t size, const struct elf64_header *h,
			  struct exec_image *image)
{
	struct elf64_shdr names, section, hdr = {0}, eh_frame = {0};
	if (!h->shnum || h->shnum > 4096 || read_section(file, size, h, h->shstrndx, &names))
		return;
	for (unsigned i = 1; i < h->shnum; i++) {
		if (read_section(file, size, h, i, &section))
			continue;
		if (section_named(file, size, &names, &section, OWN_CODE_SECTION))
			note_own_code(&section, image);
		else if (section_named(file, size, &names, &section, ".eh_frame_hdr"))
			hdr = section;
		else if (section_named(file, size, &names, &section, ".eh_frame"))
			eh_frame = section;
	}
	note_unwind_tables(file, size, &hdr, &eh_frame, image);
}

/* Where the program headers are in memory: inside a segment's file bytes. */
static uint64_t find_phdr_vaddr(const struct exec_image *image, uint64_t phoff, uint64_t length)
{
	for (unsigned i = 0; i < image->segment_count; i++) {
		const struct exec_segment *s = &image->segments[i];
		if (phoff >= s->offset && within(phoff - s->offset, length, s->filesz))
			return s->vaddr + (phoff - s->offset);
	}
	return 0;
}

int exec_parse_elf(const void *file, size_t size, struct exec_image *image)
{
	struct elf64_header header;
	if (!file || !image || size < sizeof header)
		return -ENOEXEC;
	memcpy(&header, file, sizeof header);
	if (check_header(&header, size) < 0)
		return -ENOEXEC;

	memset(image, 0, sizeof *image);
	for (unsigned i = 0; i < header.phnum; i++) {
		struct elf64_phdr ph;
		memcpy(&ph, (const uint8_t *)file + header.phoff + i * sizeof ph, sizeof ph);
		if (ph.type == PT_INTERP)
			return -ENOEXEC;
		if (ph.type != PT_LOAD)
			continue;
		if (check_segment(&ph, size) < 0 || add_segment(image, &ph) < 0)
			return -ENOEXEC;
	}
	if (image->segment_count == 0 || check_layout(image) < 0 ||
	    check_entry(image, header.entry) < 0)
		return -ENOEXEC;
	image->entry = header.entry;
	image->phnum = header.phnum;
	image->phdr_vaddr = find_phdr_vaddr(image, header.phoff,
					    (uint64_t)header.phnum * sizeof(struct elf64_phdr));
	find_sections(file, size, &header, image);
	return 0;
}
