/*
 * The initial RAM file system: a cpio archive in the "newc" format (what
 * `cpio -o -H newc` writes) that the boot loader hands over as a module
 * (GRUB's module2, QEMU's -initrd).  Its files and directories are copied
 * into the RAM file system at "/".  The parser is separate and checks every
 * header field and size against the archive's length, so a corrupt archive
 * is refused with a message, never read past its end.
 *
 *     struct cpio_entry entry;  size_t offset = 0;
 *     while ((err = cpio_next(data, length, &offset, &entry)) > 0) use(&entry);
 *     initrd_load_boot_module();   // at boot: "initrd: N files, M KiB"
 */
#ifndef MODULES_INITRD_INITRD_H
#define MODULES_INITRD_INITRD_H

#include <stddef.h>
#include <stdint.h>

#define CPIO_HEADER_SIZE 110
#define CPIO_NAME_MAX    4096 /* longer names are refused */

struct cpio_entry {
	const char *name; /* NUL-terminated, inside the archive */
	size_t name_length;
	uint32_t mode; /* type and permission bits, as in struct stat */
	const void *data;
	size_t size;
};

/* Reads the entry at *offset of archive (length bytes) and moves *offset to
 * the next one.  Returns 1 and *entry; 0 at the trailer ("TRAILER!!!");
 * -EINVAL when the header is truncated, has a bad magic or a non-hex digit,
 * the name is empty, unterminated or longer than CPIO_NAME_MAX, or the name or
 * data runs past the end.  *error (may be NULL) then says which. */
int cpio_next(const void *archive, size_t length, size_t *offset, struct cpio_entry *entry,
	      const char **error);

struct initrd_stats {
	unsigned files;
	unsigned directories;
	unsigned skipped; /* links, devices and other types */
	uint64_t bytes;
};

/* Copies archive's directories and regular files into the file system under
 * root ("/" for the boot initrd), making parent directories as needed.
 * Returns 0 with *stats (may be NULL), or -EINVAL (a corrupt archive: what
 * came before its first bad entry is kept), or the VFS's error. */
int initrd_unpack(const void *archive, size_t length, const char *root, struct initrd_stats *stats);

/* Finds the boot module that is a cpio archive, unpacks it into "/" and
 * reports "initrd: N files, M KiB" (or "no initrd").  Returns 0 (also with no
 * initrd), or initrd_unpack's error. */
int initrd_load_boot_module(void);

#endif
