// host-test-sources: kernel/lib/format.c
// host-test-rename: vsnprintf=kernel_vsnprintf snprintf=kernel_snprintf
/*
 * kernel/lib/format.c against glibc's snprintf: the same format and arguments
 * must give the same text and the same return length, for every conversion,
 * flag, width, precision and length modifier the kernel supports; truncation
 * must keep the full length and always terminate.  The kernel's functions are
 * renamed (host-test-rename) so that both can be called from one program.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "hosttest.h"

/* Some formats below are odd on purpose ("%-05d": '0' ignored with '-'). */
#pragma GCC diagnostic ignored "-Wformat"

int kernel_vsnprintf(char *buffer, size_t size, const char *format, va_list args);
int kernel_snprintf(char *buffer, size_t size, const char *format, ...);

/* Formats with both implementations and compares text and length. */
#define SAME(...)                                                                     \
	do {                                                                          \
		char mine_[256], libc_[256];                                          \
		int mine_length_ = kernel_snprintf(mine_, sizeof mine_, __VA_ARGS__); \
		int libc_length_ = snprintf(libc_, sizeof libc_, __VA_ARGS__);        \
		CHECK_STR_EQ(mine_, libc_);                                           \
		CHECK_EQ(mine_length_, libc_length_);                                 \
	} while (0)

static void integers_match_libc(void)
{
	SAME("%d %d %d %d", 0, 1, -1, 42);
	SAME("%d %d", INT_MAX, INT_MIN);
	SAME("%i|%u|%x|%X|%o", -17, 3000000000u, 0xdeadbeef, 0xdeadbeef, 0755);
	SAME("%u %x %o", 0u, 0u, 0u);
	SAME("%ld %lu %lx", LONG_MIN, ULONG_MAX, 0x123456789abcdefUL);
	SAME("%lld %llu %llx", LLONG_MIN, ULLONG_MAX, 0xfedcba9876543210ULL);
	SAME("%hhd %hhu %hd %hu", 300, 300, 70000, 70000);
	SAME("%zu %zx %td %jd", (size_t)12345, (size_t)0xabc, (ptrdiff_t)-9, (intmax_t)-77);
}

static void flags_and_widths_match_libc(void)
{
	SAME("[%5d] [%-5d] [%05d] [%+d] [% d]", 42, 42, 42, 42, 42);
	SAME("[%+d] [% d] [%05d] [%-05d]", -42, -42, -42, -42);
	SAME("[%#x] [%#X] [%#10x] [%#010x]", 0xbeefu, 0xbeefu, 0xbeefu, 0xbeefu);
	SAME("[%.3d] [%8.3d] [%-8.3d] [%08.3d]", 7, 7, 7, 7);
	SAME("[%.0d] [%.0x] [%5.0d]", 0, 0u, 0);
	SAME("[%*d] [%-*d] [%.*d]", 6, 12, 6, 12, 4, 12);
	SAME("[%*d]", -6, 12);
	SAME("[%016lx] [%-16lx|]", 0xffffffff80100000UL, 0x1UL);
}

static void strings_chars_and_percent_match_libc(void)
{
	SAME("[%s] [%10s] [%-10s] [%.2s] [%10.3s]", "kernel", "kernel", "kernel", "kernel",
	     "kernel");
	SAME("[%s]", "");
	SAME("[%c%c%c] [%3c] [%-3c]", 'a', 'b', 'c', 'x', 'y');
	SAME("100%% [%%]");
	SAME("no conversions at all");
}

static void pointers_print_as_hex(void)
{
	char mine[64], libc[64];
	void *p = (void *)0xffff800000001000UL;
	kernel_snprintf(mine, sizeof mine, "%p", p);
	snprintf(libc, sizeof libc, "%p", p);
	CHECK_STR_EQ(mine, libc);
	kernel_snprintf(mine, sizeof mine, "%p", (void *)0x10);
	CHECK_STR_EQ(mine, "0x10");
}

static void null_string_prints_null(void)
{
	char mine[32];
	const char *nothing = NULL;
	kernel_snprintf(mine, sizeof mine, "%s", nothing);
	CHECK_STR_EQ(mine, "(null)");
}

static void truncation_keeps_full_length_and_terminates(void)
{
	char buffer[8];
	memset(buffer, 'X', sizeof buffer);
	CHECK_EQ(kernel_snprintf(buffer, sizeof buffer, "%s-%d", "abcdef", 12345), 12);
	CHECK_STR_EQ(buffer, "abcdef-");
	CHECK_EQ(kernel_snprintf(buffer, 1, "hello"), 5);
	CHECK_EQ(buffer[0], '\0');
	buffer[0] = 'X';
	CHECK_EQ(kernel_snprintf(buffer, 0, "hello %d", 1), 7);
	CHECK_EQ(buffer[0], 'X');
	CHECK_EQ(kernel_snprintf(NULL, 0, "%08x", 1u), 8);
}

static void exact_fit_is_not_truncated(void)
{
	char buffer[6];
	CHECK_EQ(kernel_snprintf(buffer, sizeof buffer, "%s", "12345"), 5);
	CHECK_STR_EQ(buffer, "12345");
	CHECK_EQ(kernel_snprintf(buffer, sizeof buffer, "%s", "123456"), 6);
	CHECK_STR_EQ(buffer, "12345");
}

static void unknown_conversions_are_shown(void)
{
	char buffer[32];
	CHECK_EQ(kernel_snprintf(buffer, sizeof buffer, "a%qb"), 4);
	CHECK_STR_EQ(buffer, "a%qb");
	CHECK_EQ(kernel_snprintf(buffer, sizeof buffer, "end%"), 4);
	CHECK_STR_EQ(buffer, "end%");
}

static int call_vsnprintf(char *buffer, size_t size, const char *format, ...)
{
	va_list args;
	va_start(args, format);
	int n = kernel_vsnprintf(buffer, size, format, args);
	va_end(args);
	return n;
}

static void vsnprintf_takes_a_va_list(void)
{
	char buffer[32];
	CHECK_EQ(call_vsnprintf(buffer, sizeof buffer, "%s=%lu", "frames", 4096UL), 11);
	CHECK_STR_EQ(buffer, "frames=4096");
}

HOSTTEST_MAIN(HOSTTEST_CASE(integers_match_libc), HOSTTEST_CASE(flags_and_widths_match_libc),
	      HOSTTEST_CASE(strings_chars_and_percent_match_libc),
	      HOSTTEST_CASE(pointers_print_as_hex), HOSTTEST_CASE(null_string_prints_null),
	      HOSTTEST_CASE(truncation_keeps_full_length_and_terminates),
	      HOSTTEST_CASE(exact_fit_is_not_truncated),
	      HOSTTEST_CASE(unknown_conversions_are_shown),
	      HOSTTEST_CASE(vsnprintf_takes_a_va_list))
