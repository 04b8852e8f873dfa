// host-test-sources: kernel/boot/cmdline.c
/*
 * kernel/boot/cmdline.c on made-up command lines: every problem (unknown
 * option, bad value, over-long word) is reported on the console and ignored,
 * and the words around it are still applied; quoting keeps spaces in a value.
 * The options are a local table, not the kernel's KERNEL_PARAM section.
 */
#include <stdio.h>
#include <string.h>

#include "boot/cmdline.h"
#include "hosttest.h"

static char seen_level[300];
static int level_calls;
static int verbose_calls;
static const char *verbose_value = "unset";

static int set_level(const char *value)
{
	if (!value || strcmp(value, "bad") == 0)
		return -1;
	snprintf(seen_level, sizeof seen_level, "%s", value);
	level_calls++;
	return 0;
}

static int set_verbose(const char *value)
{
	verbose_value = value;
	verbose_calls++;
	return 0;
}

static const struct kernel_param params[] = {
    {"level", set_level, "a word"},
    {"verbose", set_verbose, "flag"},
};
#define APPLY(line) cmdline_apply_params(line, params, params + 2)

static void reset(void)
{
	seen_level[0] = '\0';
	level_calls = verbose_calls = 0;
	verbose_value = "unset";
	hosttest_console_clear();
}

static void accepted_options_are_applied(void)
{
	reset();
	CHECK_EQ(APPLY("level=debug verbose"), 0);
	CHECK_STR_EQ(seen_level, "debug");
	CHECK_EQ(verbose_calls, 1);
	CHECK(verbose_value == NULL); /* a bare word has no value */
	CHECK_STR_EQ(hosttest_console_output(), "");
}

static void unknown_option_is_reported_and_ignored(void)
{
	reset();
	CHECK_EQ(APPLY("frobnicate=1 level=info"), 1);
	CHECK(strstr(hosttest_console_output(), "unknown option 'frobnicate'") != NULL);
	CHECK_STR_EQ(seen_level, "info");
}

static void bad_value_is_reported_and_ignored(void)
{
	reset();
	CHECK_EQ(APPLY("level=bad verbose=yes"), 1);
	CHECK(strstr(hosttest_console_output(), "bad value 'bad' for 'level'") != NULL);
	CHECK_EQ(level_calls, 0);
	CHECK_EQ(verbose_calls, 1);
	reset();
	CHECK_EQ(APPLY("level"), 1); /* level needs a value */
	CHECK(strstr(hosttest_console_output(), "(none)") != NULL);
}

static void quoted_values_keep_spaces(void)
{
	reset();
	CHECK_EQ(APPLY("level=\"a b  c\" verbose"), 0);
	CHECK_STR_EQ(seen_level, "a b  c");
	CHECK_EQ(verbose_calls, 1);
	reset();
	CHECK_EQ(APPLY("\"level=x y\""), 0);
	CHECK_STR_EQ(seen_level, "x y");
}

static void over_long_word_is_reported_and_skipped(void)
{
	char line[600];
	strcpy(line, "level=");
	memset(line + 6, 'x', 400);
	strcpy(line + 406, " verbose");
	reset();
	CHECK_EQ(APPLY(line), 1);
	CHECK(strstr(hosttest_console_output(), "longer than") != NULL);
	CHECK_EQ(level_calls, 0);
	CHECK_EQ(verbose_calls, 1);
}

static void longest_word_that_fits_is_accepted(void)
{
	char line[300];
	strcpy(line, "level=");
	memset(line + 6, 'y', 249); /* 255 characters in all: the limit */
	line[255] = '\0';
	reset();
	CHECK_EQ(APPLY(line), 0);
	CHECK_EQ(strlen(seen_level), 249);
}

static void empty_and_blank_lines_do_nothing(void)
{
	reset();
	CHECK_EQ(APPLY(""), 0);
	CHECK_EQ(APPLY("   \t  "), 0);
	CHECK_EQ(level_calls + verbose_calls, 0);
	CHECK_STR_EQ(hosttest_console_output(), "");
}

static void extra_spaces_and_tabs_separate_words(void)
{
	reset();
	CHECK_EQ(APPLY("  level=warn\t\tverbose  "), 0);
	CHECK_STR_EQ(seen_level, "warn");
	CHECK_EQ(verbose_calls, 1);
}

static void empty_value_is_passed_as_empty_string(void)
{
	reset();
	CHECK_EQ(APPLY("verbose="), 0);
	CHECK(verbose_value != NULL);
}

static void kernel_section_is_empty_on_the_host(void)
{
	reset();
	CHECK_EQ(cmdline_apply("anything"), 1);
}

/* cmdline_on_off: "on" and "off" only; anything else leaves the flag. */
static void on_off_values_set_the_flag_and_others_are_refused(void)
{
	bool off = false;
	CHECK_EQ(cmdline_on_off("off", &off), 0);
	CHECK(off);
	CHECK_EQ(cmdline_on_off("on", &off), 0);
	CHECK(!off);
	off = true;
	CHECK_EQ(cmdline_on_off(NULL, &off), -1);
	CHECK_EQ(cmdline_on_off("", &off), -1);
	CHECK_EQ(cmdline_on_off("On", &off), -1);
	CHECK_EQ(cmdline_on_off("offf", &off), -1);
	CHECK(off);
}

HOSTTEST_MAIN(HOSTTEST_CASE(accepted_options_are_applied),
	      HOSTTEST_CASE(unknown_option_is_reported_and_ignored),
	      HOSTTEST_CASE(bad_value_is_reported_and_ignored),
	      HOSTTEST_CASE(quoted_values_keep_spaces),
	      HOSTTEST_CASE(over_long_word_is_reported_and_skipped),
	      HOSTTEST_CASE(longest_word_that_fits_is_accepted),
	      HOSTTEST_CASE(empty_and_blank_lines_do_nothing),
	      HOSTTEST_CASE(extra_spaces_and_tabs_separate_words),
	      HOSTTEST_CASE(empty_value_is_passed_as_empty_string),
	      HOSTTEST_CASE(kernel_section_is_empty_on_the_host),
	      HOSTTEST_CASE(on_off_values_set_the_flag_and_others_are_refused))
