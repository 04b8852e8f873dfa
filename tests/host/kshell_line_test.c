// host-test-sources: kernel/kshell/line.c kernel/kshell/words.c
/* The kernel shell's line editor and word splitter, byte by byte: editing
 * keys, Enter in its three spellings, history, escape sequences, overlong
 * lines, and splitting with quotes, blanks and too many words. */
#include <stdio.h>
#include <string.h>

#include "hosttest.h"
#include "kshell/internal.h"
#include "lib/errno.h"

static char shown[4096];
static size_t shown_length;

static void record(const char *text, size_t length, void *ctx)
{
	(void)ctx;
	for (size_t i = 0; i < length && shown_length + 1 < sizeof shown; i++)
		shown[shown_length++] = text[i];
	shown[shown_length] = '\0';
}

static struct kshell_editor editor;

static void start(void)
{
	kshell_editor_init(&editor, record, NULL);
	shown_length = 0;
	shown[0] = '\0';
}

/* Feeds text; returns the result of the last byte. */
static enum kshell_edit_result feed(const char *text)
{
	enum kshell_edit_result result = KSHELL_EDIT_MORE;
	for (; *text; text++)
		result = kshell_editor_feed(&editor, *text);
	return result;
}

static void typed_text_is_echoed_and_finished_by_enter(void)
{
	start();
	CHECK_EQ(feed("mem"), KSHELL_EDIT_MORE);
	CHECK_EQ(feed("\r"), KSHELL_EDIT_LINE);
	CHECK_STR_EQ(editor.line, "mem");
	CHECK_STR_EQ(shown, "mem\n");
}

static void cr_lf_ends_one_line_not_two(void)
{
	start();
	CHECK_EQ(feed("a\r"), KSHELL_EDIT_LINE);
	kshell_editor_accept(&editor);
	CHECK_EQ(feed("\n"), KSHELL_EDIT_MORE);
	CHECK_EQ(feed("b\n"), KSHELL_EDIT_LINE);
	CHECK_STR_EQ(editor.line, "b");
	kshell_editor_accept(&editor);
	CHECK_EQ(feed("\n"), KSHELL_EDIT_LINE); /* a lone LF is Enter */
	CHECK_STR_EQ(editor.line, "");
}

static void backspace_and_delete_erase_one(void)
{
	start();
	feed("memx\b");
	CHECK_STR_EQ(editor.line, "mem");
	feed("y\x7f");
	CHECK_STR_EQ(editor.line, "mem");
	CHECK(strstr(shown, "\b \b") != NULL);
	feed("\b\b\b\b"); /* one too many: the bell, nothing breaks */
	CHECK_EQ(editor.length, 0);
	CHECK(strchr(shown, '\a') != NULL);
}

static void ctrl_u_erases_the_line(void)
{
	start();
	feed("threads\x15");
	CHECK_EQ(editor.length, 0);
	CHECK_STR_EQ(editor.line, "");
	CHECK_EQ(feed("ok\r"), KSHELL_EDIT_LINE);
	CHECK_STR_EQ(editor.line, "ok");
}

static void ctrl_c_cancels_the_line(void)
{
	start();
	CHECK_EQ(feed("reboot\x03"), KSHELL_EDIT_CANCEL);
	CHECK_STR_EQ(editor.line, "");
	CHECK(strstr(shown, "^C\n") != NULL);
}

static void control_bytes_are_not_inserted(void)
{
	start();
	feed("a\tb\x01\x7e");
	CHECK_STR_EQ(editor.line, "ab~");
}

static void overlong_lines_stop_at_the_limit(void)
{
	start();
	for (int i = 0; i < 2 * KSHELL_LINE_MAX; i++)
		kshell_editor_feed(&editor, 'x');
	CHECK_EQ(editor.length, KSHELL_LINE_MAX - 1);
	CHECK_EQ(editor.line[KSHELL_LINE_MAX - 1], '\0');
	CHECK_EQ(feed("\r"), KSHELL_EDIT_LINE);
}

static void arrows_walk_the_history(void)
{
	start();
	const char *lines[] = {"one", "two", "two", "", "three"};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		feed(lines[i]);
		feed("\r");
		kshell_editor_accept(&editor);
	}
	feed("\x1b[A");
	CHECK_STR_EQ(editor.line, "three");
	feed("\x1b[A");
	CHECK_STR_EQ(editor.line, "two"); /* the repeat and the blank line were not kept */
	feed("\x1b[A\x1b[A");             /* past the oldest: the bell, the line stays */
	CHECK_STR_EQ(editor.line, "one");
	feed("\x1bOB"); /* down, in application cursor mode */
	CHECK_STR_EQ(editor.line, "two");
	feed("\x1b[B\x1b[B");
	CHECK_STR_EQ(editor.line, "");
	feed("\x1b[1;5C"); /* an unknown sequence is swallowed whole */
	CHECK_STR_EQ(editor.line, "");
}

static void history_keeps_the_newest_lines(void)
{
	char text[16];
	start();
	for (int i = 0; i < KSHELL_HISTORY_SIZE + 3; i++) {
		snprintf(text, sizeof text, "c%d\r", i);
		feed(text);
		kshell_editor_accept(&editor);
	}
	for (int i = 0; i < KSHELL_HISTORY_SIZE + 2; i++)
		feed("\x1b[A");
	snprintf(text, sizeof text, "c%d", 3);
	CHECK_STR_EQ(editor.line, text);
}

/* ---- Words --------------------------------------------------------------- */

static int split(const char *text, char *copy, char **argv, int max)
{
	strcpy(copy, text);
	return kshell_split_words(copy, argv, max);
}

static void words_are_split_on_blanks(void)
{
	char copy[64], *argv[5];
	REQUIRE_EQ(split("  ktest \t mm  sched ", copy, argv, 4), 3);
	CHECK_STR_EQ(argv[0], "ktest");
	CHECK_STR_EQ(argv[1], "mm");
	CHECK_STR_EQ(argv[2], "sched");
	CHECK(argv[3] == NULL);
}

static void blank_lines_have_no_words(void)
{
	char copy[16], *argv[3];
	CHECK_EQ(split("", copy, argv, 2), 0);
	CHECK(argv[0] == NULL);
	CHECK_EQ(split(" \t ", copy, argv, 2), 0);
}

static void quotes_group_and_vanish(void)
{
	char copy[64], *argv[5];
	REQUIRE_EQ(split("echo \"a  b\" c\"d e\"f \"\"", copy, argv, 4), 4);
	CHECK_STR_EQ(argv[1], "a  b");
	CHECK_STR_EQ(argv[2], "cd ef");
	CHECK_STR_EQ(argv[3], "");
	CHECK_EQ(split("echo \"open", copy, argv, 4), -EINVAL);
}

static void too_many_words_are_refused(void)
{
	char copy[64], *argv[4];
	CHECK_EQ(split("a b c d", copy, argv, 3), -E2BIG);
	CHECK_EQ(split("a b c", copy, argv, 3), 3);
	CHECK_EQ(split("a b c   ", copy, argv, 3), 3);
}

HOSTTEST_MAIN(HOSTTEST_CASE(typed_text_is_echoed_and_finished_by_enter),
	      HOSTTEST_CASE(cr_lf_ends_one_line_not_two),
	      HOSTTEST_CASE(backspace_and_delete_erase_one), HOSTTEST_CASE(ctrl_u_erases_the_line),
	      HOSTTEST_CASE(ctrl_c_cancels_the_line), HOSTTEST_CASE(control_bytes_are_not_inserted),
	      HOSTTEST_CASE(overlong_lines_stop_at_the_limit),
	      HOSTTEST_CASE(arrows_walk_the_history), HOSTTEST_CASE(history_keeps_the_newest_lines),
	      HOSTTEST_CASE(words_are_split_on_blanks), HOSTTEST_CASE(blank_lines_have_no_words),
	      HOSTTEST_CASE(quotes_group_and_vanish), HOSTTEST_CASE(too_many_words_are_refused))
