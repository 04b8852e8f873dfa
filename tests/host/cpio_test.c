// host-test-sources: modules/initrd/cpio.c
/*
 * The initrd's cpio "newc" parser on archives built here, whole and damaged:
 * every kind of corruption (truncated header, bad magic, a non-hex digit, a
 * name or data size past the end, an unterminated name) is refused with
 * -EINVAL and a reason, and nothing is read outside the archive (the archive
 * is a heap block of its exact length, so AddressSanitizer catches any
 * overrun).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosttest.h"
#include "initrd/initrd.h"
#include "lib/errno.h"

struct builder {
	char bytes[8192];
	size_t length;
};

static void pad4(struct builder *b)
{
	while (b->length % 4)
		b->bytes[b->length++] = '\0';
}

/* Appends one entry; name_size 0 means "strlen(name) + 1". */
static size_t add(struct builder *b, const char *name, unsigned mode, const char *data, size_t size,
		  unsigned name_size)
{
	size_t at = b->length;
	if (!name_size)
		name_size = (unsigned)strlen(name) + 1;
	b->length += (size_t)sprintf(
	    b->bytes + b->length, "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X", 1u,
	    mode, 0u, 0u, 1u, 0u, (unsigned)size, 0u, 0u, 0u, 0u, name_size, 0u);
	memcpy(b->bytes + b->length, name, strlen(name) + 1);
	b->length += strlen(name) + 1;
	pad4(b);
	memcpy(b->bytes + b->length, data, size);
	b->length += size;
	pad4(b);
	return at;
}

static void add_trailer(struct builder *b)
{
	add(b, "TRAILER!!!", 0, "", 0, 0);
}

/* A heap copy of exactly length bytes, so ASan sees any read past it. */
static char *exact_copy(const struct builder *b, size_t length)
{
	char *copy = malloc(length ? length : 1);
	memcpy(copy, b->bytes, length);
	return copy;
}

/* Parses the first entry of the first length bytes of b. */
static int parse_first(const struct builder *b, size_t length, struct cpio_entry *entry,
		       const char **why)
{
	char *copy = exact_copy(b, length);
	size_t offset = 0;
	*why = NULL;
	int result = cpio_next(copy, length, &offset, entry, why);
	free(copy);
	return result;
}

static void reads_every_entry_up_to_the_trailer(void)
{
	struct builder b = {0};
	add(&b, "bin", 0040755, "", 0, 0);
	add(&b, "bin/hello", 0100755, "hello world\n", 12, 0);
	add(&b, "odd", 0100644, "abc", 3, 0);
	add_trailer(&b);
	char *copy = exact_copy(&b, b.length);
	struct cpio_entry e;
	size_t offset = 0;
	REQUIRE_EQ(cpio_next(copy, b.length, &offset, &e, NULL), 1);
	CHECK_STR_EQ(e.name, "bin");
	CHECK_EQ(e.mode, 0040755);
	REQUIRE_EQ(cpio_next(copy, b.length, &offset, &e, NULL), 1);
	CHECK_STR_EQ(e.name, "bin/hello");
	CHECK_EQ(e.size, 12);
	CHECK(memcmp(e.data, "hello world\n", 12) == 0);
	REQUIRE_EQ(cpio_next(copy, b.length, &offset, &e, NULL), 1);
	CHECK_EQ(e.name_length, 3);
	CHECK(memcmp(e.data, "abc", 3) == 0);
	CHECK_EQ(cpio_next(copy, b.length, &offset, &e, NULL), 0);
	free(copy);
}

static void accepts_upper_case_hex_and_the_crc_magic(void)
{
	struct builder b = {0};
	add(&b, "f", 0100644, "0123456789abcdef", 16, 0); /* size field "00000010" */
	b.bytes[5] = '2';                                 /* 070702 */
	struct cpio_entry e;
	const char *why;
	CHECK_EQ(parse_first(&b, b.length, &e, &why), 1);
	CHECK_EQ(e.mode, 0100644); /* "000081A4": upper-case digits */
}

static void truncated_header_is_refused(void)
{
	struct builder b = {0};
	add(&b, "file", 0100644, "x", 1, 0);
	for (size_t length = 0; length < CPIO_HEADER_SIZE; length += 7) {
		struct cpio_entry e;
		const char *why;
		CHECK_EQ(parse_first(&b, length, &e, &why), -EINVAL);
		CHECK(why && strstr(why, "truncated"));
	}
}

static void bad_magic_is_refused(void)
{
	struct builder b = {0};
	add(&b, "file", 0100644, "x", 1, 0);
	b.bytes[0] = 'X';
	struct cpio_entry e;
	const char *why;
	CHECK_EQ(parse_first(&b, b.length, &e, &why), -EINVAL);
	CHECK(why && strstr(why, "magic"));
	memcpy(b.bytes, "070707", 6); /* the old portable format */
	CHECK_EQ(parse_first(&b, b.length, &e, &why), -EINVAL);
}

static void non_hex_digit_is_refused(void)
{
	static const char bad[] = {'g', 'G', ' ', '-', 'x', '\0'};
	for (size_t i = 0; i < sizeof bad; i++) {
		struct builder b = {0};
		add(&b, "file", 0100644, "x", 1, 0);
		b.bytes[6 + 8 * 6 + 3] = bad[i]; /* inside the file size */
		struct cpio_entry e;
		const char *why;
		CHECK_EQ(parse_first(&b, b.length, &e, &why), -EINVAL);
		CHECK(why && strstr(why, "hex"));
	}
}

static void name_size_past_the_end_is_refused(void)
{
	struct builder b = {0};
	add(&b, "file", 0100644, "", 0, 4000);
	struct cpio_entry e;
	const char *why;
	CHECK_EQ(parse_first(&b, b.length, &e, &why), -EINVAL);
	CHECK(why && strstr(why, "name"));
	struct builder huge = {0};
	add(&huge, "file", 0100644, "", 0, 0xffffffffu);
	CHECK_EQ(parse_first(&huge, huge.length, &e, &why), -EINVAL);
}

static void name_without_its_nul_is_refused(void)
{
	struct builder b = {0};
	add(&b, "file", 0100644, "data", 4, 3); /* "fil" without a NUL */
	struct cpio_entry e;
	const char *why;
	CHECK_EQ(parse_first(&b, b.length, &e, &why), -EINVAL);
	struct builder zero = {0};
	add(&zero, "file", 0100644, "", 0, 0);
	memcpy(zero.bytes + 6 + 8 * 11, "00000000", 8); /* name size 0 */
	CHECK_EQ(parse_first(&zero, zero.length, &e, &why), -EINVAL);
}

static void file_size_past_the_end_is_refused(void)
{
	struct builder b = {0};
	add(&b, "file", 0100644, "0123456789", 10, 0);
	struct cpio_entry e;
	const char *why;
	CHECK_EQ(parse_first(&b, b.length - 4, &e, &why), -EINVAL);
	CHECK(why && strstr(why, "data"));
	memcpy(b.bytes + 6 + 8 * 6, "FFFFFFFF", 8);
	CHECK_EQ(parse_first(&b, b.length, &e, &why), -EINVAL);
}

static void archive_without_trailer_ends_in_an_error(void)
{
	struct builder b = {0};
	add(&b, "file", 0100644, "x", 1, 0);
	char *copy = exact_copy(&b, b.length);
	struct cpio_entry e;
	size_t offset = 0;
	CHECK_EQ(cpio_next(copy, b.length, &offset, &e, NULL), 1);
	CHECK_EQ(offset, b.length);
	CHECK_EQ(cpio_next(copy, b.length, &offset, &e, NULL), -EINVAL);
	free(copy);
}

/* Every prefix of a good archive: each call either succeeds, finds the
 * trailer or fails cleanly, and never reads past the prefix. */
static void every_prefix_parses_safely(void)
{
	struct builder b = {0};
	add(&b, "dir", 0040755, "", 0, 0);
	add(&b, "dir/a", 0100644, "alpha", 5, 0);
	add_trailer(&b);
	for (size_t length = 0; length <= b.length; length++) {
		char *copy = exact_copy(&b, length);
		struct cpio_entry e;
		size_t offset = 0;
		int result, steps = 0;
		while ((result = cpio_next(copy, length, &offset, &e, NULL)) > 0)
			REQUIRE(++steps <= 2);
		CHECK(result == 0 || result == -EINVAL);
		CHECK(result == -EINVAL || length >= b.length - 124);
		free(copy);
	}
}

HOSTTEST_MAIN(HOSTTEST_CASE(reads_every_entry_up_to_the_trailer),
	      HOSTTEST_CASE(accepts_upper_case_hex_and_the_crc_magic),
	      HOSTTEST_CASE(truncated_header_is_refused), HOSTTEST_CASE(bad_magic_is_refused),
	      HOSTTEST_CASE(non_hex_digit_is_refused),
	      HOSTTEST_CASE(name_size_past_the_end_is_refused),
	      HOSTTEST_CASE(name_without_its_nul_is_refused),
	      HOSTTEST_CASE(file_size_past_the_end_is_refused),
	      HOSTTEST_CASE(archive_without_trailer_ends_in_an_error),
	      HOSTTEST_CASE(every_prefix_parses_safely))
