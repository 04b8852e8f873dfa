/*
 * The cpio "newc" reader.  An entry is a 110-byte ASCII header (magic
 * "070701", or "070702" with checksums, then thirteen 8-digit hex fields),
 * the NUL-terminated name padded so header and name fill a multiple of 4
 * bytes, then the data padded to 4.  Every size is checked against what is
 * left of the archive before it is used, so nothing here can read past the
 * end however the archive is damaged.  Pure functions: no allocation, no
 * locks, shared with the host tests.
 */
#include "initrd/initrd.h"

#include <stdbool.h>

#include "lib/errno.h"
#include "lib/string.h"

enum cpio_field {
	FIELD_INO,
	FIELD_MODE,
	FIELD_UID,
	FIELD_GID,
	FIELD_NLINK,
	FIELD_MTIME,
	FIELD_FILESIZE,
	FIELD_DEVMAJOR,
	FIELD_DEVMINOR,
	FIELD_RDEVMAJOR,
	FIELD_RDEVMINOR,
	FIELD_NAMESIZE,
	FIELD_CHECK,
};

#define MAGIC_LENGTH 6
#define FIELD_DIGITS 8
static const char TRAILER[] = "TRAILER!!!";

static size_t align4(size_t n)
{
	return (n + 3) & ~(size_t)3;
}

/* Parses one 8-digit hex field.  Returns false on a non-hex digit. */
static bool parse_field(const char *header, enum cpio_field field, uint32_t *value)
{
	const char *digits = header + MAGIC_LENGTH + (size_t)field * FIELD_DIGITS;
	uint32_t v = 0;
	for (int i = 0; i < FIELD_DIGITS; i++) {
		char c = digits[i];
		unsigned d;
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			return false;
		v = v << 4 | d;
	}
	*value = v;
	return true;
}

static int fail(const char **error, const char *why)
{
	if (error)
		*error = why;
	return -EINVAL;
}

/* Checks the header at archive + at and reads mode, file size and name size. */
static int read_header(const char *header, size_t left, uint32_t *mode, uint32_t *size,
		       uint32_t *name_size, const char **error)
{
	if (left < CPIO_HEADER_SIZE)
		return fail(error, "truncated header");
	if (memcmp(header, "070701", MAGIC_LENGTH) && memcmp(header, "070702", MAGIC_LENGTH))
		return fail(error, "bad magic (not a newc cpio archive)");
	for (int f = FIELD_INO; f <= FIELD_CHECK; f++) {
		uint32_t ignored;
		if (!parse_field(header, (enum cpio_field)f, &ignored))
			return fail(error, "non-hex digit in a header field");
	}
	parse_field(header, FIELD_MODE, mode);
	parse_field(header, FIELD_FILESIZE, size);
	parse_field(header, FIELD_NAMESIZE, name_size);
	return 0;
}

int cpio_next(const void *archive, size_t length, size_t *offset, struct cpio_entry *entry,
	      const char **error)
{
	const char *base = archive;
	size_t at = *offset;
	uint32_t mode, size, name_size;
	if (at > length)
		return fail(error, "offset past the end");
	int err = read_header(base + at, length - at, &mode, &size, &name_size, error);
	if (err)
		return err;
	size_t left = length - at - CPIO_HEADER_SIZE;
	if (name_size == 0 || name_size > CPIO_NAME_MAX)
		return fail(error, "bad name size");
	if (name_size > left)
		return fail(error, "name runs past the end");
	const char *name = base + at + CPIO_HEADER_SIZE;
	if (name[name_size - 1] != '\0' || strnlen(name, name_size) != name_size - 1)
		return fail(error, "name not terminated where its size says");
	size_t data_at = align4(at + CPIO_HEADER_SIZE + name_size);
	if (data_at > length || size > length - data_at)
		return fail(error, "file data runs past the end");
	if (!strcmp(name, TRAILER))
		return 0;
	entry->name = name;
	entry->name_length = name_size - 1;
	entry->mode = mode;
	entry->data = base + data_at;
	entry->size = size;
	size_t next = align4(data_at + size);
	*offset = next < length ? next : length;
	return 1;
}
