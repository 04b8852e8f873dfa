/*
 * Program images: checks a static ELF64 executable against its file size and
 * the user address layout, describing what to map where, and lays out the
 * initial user stack (argc, argv, envp, auxv) for a given stack top.  Pure
 * computation on buffers, no memory mapping: kernel/proc maps what this
 * describes.  Every header, offset and size is checked before use, so a
 * truncated or hostile file gives -ENOEXEC and nothing else.
 *
 *     struct exec_image image;
 *     if (exec_parse_elf(file, file_size, &image) < 0) return -ENOEXEC;
 *     for (unsigned i = 0; i < image.segment_count; i++) map(&image.segments[i]);
 */
#ifndef KERNEL_EXEC_EXEC_H
#define KERNEL_EXEC_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "lib/cfi.h"
#include "uaccess/uaccess.h"

#define EXEC_MAX_SEGMENTS 8
#define EXEC_MAX_PHDRS    32
#define EXEC_IMAGE_BASE   0x10000UL            /* nothing is mapped below */
#define EXEC_IMAGE_LIMIT  0x0000100000000000UL /* segments end below this */
#define EXEC_MAX_BYTES    (256UL << 20)        /* sum of segment sizes */
#define EXEC_STACK_TOP    USER_SPACE_END

/* Segment permissions (ELF p_flags). */
#define EXEC_SEGMENT_EXEC  1u
#define EXEC_SEGMENT_WRITE 2u
#define EXEC_SEGMENT_READ  4u

struct exec_segment {
	uint64_t vaddr;  /* where the segment starts (any alignment) */
	uint64_t memsz;  /* bytes in memory; those past filesz are zero */
	uint64_t offset; /* file offset of its first byte */
	uint64_t filesz;
	unsigned flags; /* EXEC_SEGMENT_* */
};

struct exec_image {
	uint64_t entry;
	uint64_t phdr_vaddr; /* where the program headers are mapped, 0 if not */
	unsigned phnum;
	unsigned segment_count;
	struct exec_segment segments[EXEC_MAX_SEGMENTS]; /* sorted by vaddr */
	uint64_t end; /* page-aligned end of the highest segment: the heap starts here */
	/* The program's own code, apart from the libraries it was linked with
	 * (its .text.own section; 0, 0 when it has none): the trace map's
	 * scope modes 1 and 2 keep the frames in it. */
	uint64_t own_code_start, own_code_end;
	/* Its unwind tables (.eh_frame_hdr and .eh_frame; all 0 when it has
	 * none or they do not check out): the trace map's walk follows them. */
	struct cfi_tables unwind;
};

/* Checks a whole ELF file and describes its loadable segments.  Returns 0, or
 * -ENOEXEC when anything is wrong: truncated headers, not ELF64/x86_64/
 * ET_EXEC, a PT_INTERP (dynamic program), bad program header size or count,
 * a segment past the end of the file, filesz > memsz, a segment outside
 * [EXEC_IMAGE_BASE, EXEC_IMAGE_LIMIT) or wrapping around, vaddr and offset not
 * congruent modulo the page size, segments sharing a page, more than
 * EXEC_MAX_SEGMENTS or EXEC_MAX_BYTES in all, or an entry point outside every
 * executable segment. */
int exec_parse_elf(const void *file, size_t size, struct exec_image *image);

/* Auxiliary vector keys (Linux's). */
#define AT_NULL   0
#define AT_PHDR   3
#define AT_PHENT  4
#define AT_PHNUM  5
#define AT_PAGESZ 6
#define AT_ENTRY  9
#define AT_RANDOM 25
#define AT_EXECFN 31

struct exec_stack_args {
	char *const *argv; /* NULL-terminated kernel arrays (argv may be empty) */
	char *const *envp;
	const struct exec_image *image;
	const uint8_t *random; /* 16 bytes for AT_RANDOM */
	uint64_t clock_page;   /* the user clock page's address for CLOCK_USER_AT, 0: none */
};

/* Builds the initial stack image for stack_top in buffer (its last byte is
 * the byte below stack_top): strings, AT_RANDOM bytes, then 16-byte aligned
 * auxv, envp, argv and argc.  Returns the user stack pointer (argc's address),
 * or 0 when it does not fit in buffer_size bytes (-E2BIG for the caller). */
uint64_t exec_build_stack(uint8_t *buffer, size_t buffer_size, uint64_t stack_top,
			  const struct exec_stack_args *args);

#endif
