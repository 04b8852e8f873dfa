/*
 * The line editor: a small state machine fed one byte at a time, so it runs
 * the same on the serial line, in tests and on the host.  The cursor is always
 * at the end of the line (no left/right movement), which keeps every edit a
 * matter of erasing characters at the end: "\b \b" per character.
 *
 * Invariants: line[length] == '\0' and length < KSHELL_LINE_MAX; the history
 * is a ring of the last KSHELL_HISTORY_SIZE accepted lines, history_count of
 * them ever stored; history_cursor <= min(history_count, KSHELL_HISTORY_SIZE).
 */
#include "kshell/internal.h"

#include "lib/string.h"

#define KEY_CTRL_C    0x03
#define KEY_BACKSPACE 0x08
#define KEY_CTRL_U    0x15
#define KEY_ESCAPE    0x1b
#define KEY_DELETE    0x7f

static void echo(struct kshell_editor *editor, const char *text, size_t length)
{
	if (editor->echo)
		editor->echo(text, length, editor->echo_ctx);
}

static void ring_bell(struct kshell_editor *editor)
{
	echo(editor, "\a", 1);
}

void kshell_editor_init(struct kshell_editor *editor, kshell_echo_fn echo_fn, void *ctx)
{
	memset(editor, 0, sizeof *editor);
	editor->echo = echo_fn;
	editor->echo_ctx = ctx;
}

static void erase_last(struct kshell_editor *editor)
{
	editor->line[--editor->length] = '\0';
	echo(editor, "\b \b", 3);
}

static void erase_line(struct kshell_editor *editor)
{
	while (editor->length)
		erase_last(editor);
}

static void insert(struct kshell_editor *editor, char byte)
{
	if (editor->length + 1 >= KSHELL_LINE_MAX) {
		ring_bell(editor);
		return;
	}
	editor->line[editor->length++] = byte;
	editor->line[editor->length] = '\0';
	echo(editor, &byte, 1);
}

/* Replaces the line with text, on screen too. */
static void replace_line(struct kshell_editor *editor, const char *text)
{
	erase_line(editor);
	for (; *text; text++)
		insert(editor, *text);
}

static unsigned history_available(const struct kshell_editor *editor)
{
	return editor->history_count < KSHELL_HISTORY_SIZE ? editor->history_count
							   : KSHELL_HISTORY_SIZE;
}

/* The k-th most recent line (k >= 1). */
static const char *history_entry(const struct kshell_editor *editor, unsigned k)
{
	return editor->history[(editor->history_count - k) % KSHELL_HISTORY_SIZE];
}

/* Moves through the history: older (+1) or newer (-1). */
static void walk_history(struct kshell_editor *editor, int step)
{
	unsigned target = editor->history_cursor + (unsigned)step;
	if ((step < 0 && editor->history_cursor == 0) || target > history_available(editor)) {
		ring_bell(editor);
		return;
	}
	editor->history_cursor = target;
	replace_line(editor, target ? history_entry(editor, target) : "");
}

/* ESC [ <parameters> <final byte> (or ESC O <byte>): only A (up) and B
 * (down) mean something. */
static void feed_escape(struct kshell_editor *editor, char byte)
{
	if (editor->escape == KSHELL_ESC_SEEN) {
		editor->escape = byte == '[' || byte == 'O' ? KSHELL_ESC_CSI : KSHELL_ESC_NONE;
		return;
	}
	if (byte >= 0x20 && byte <= 0x3f)
		return; /* parameter or intermediate byte: the sequence goes on */
	editor->escape = KSHELL_ESC_NONE;
	if (byte == 'A')
		walk_history(editor, 1);
	else if (byte == 'B')
		walk_history(editor, -1);
}

static enum kshell_edit_result finish_line(struct kshell_editor *editor)
{
	echo(editor, "\n", 1);
	return KSHELL_EDIT_LINE;
}

static enum kshell_edit_result cancel_line(struct kshell_editor *editor)
{
	echo(editor, "^C\n", 3);
	editor->length = 0;
	editor->line[0] = '\0';
	editor->history_cursor = 0;
	return KSHELL_EDIT_CANCEL;
}

enum kshell_edit_result kshell_editor_feed(struct kshell_editor *editor, char byte)
{
	bool after_cr = editor->after_cr;
	editor->after_cr = byte == '\r';
	if (editor->escape != KSHELL_ESC_NONE) {
		feed_escape(editor, byte);
		return KSHELL_EDIT_MORE;
	}
	switch (byte) {
	case '\n': return after_cr ? KSHELL_EDIT_MORE : finish_line(editor);
	case '\r': return finish_line(editor);
	case KEY_CTRL_C: return cancel_line(editor);
	case KEY_BACKSPACE:
	case KEY_DELETE:
		if (editor->length)
			erase_last(editor);
		else
			ring_bell(editor);
		return KSHELL_EDIT_MORE;
	case KEY_CTRL_U: erase_line(editor); return KSHELL_EDIT_MORE;
	case KEY_ESCAPE: editor->escape = KSHELL_ESC_SEEN; return KSHELL_EDIT_MORE;
	}
	if (byte >= 0x20 && byte < 0x7f)
		insert(editor, byte);
	else
		ring_bell(editor);
	return KSHELL_EDIT_MORE;
}

void kshell_editor_accept(struct kshell_editor *editor)
{
	bool repeat = editor->history_count && !strcmp(history_entry(editor, 1), editor->line);
	if (editor->length && !repeat) {
		char *slot = editor->history[editor->history_count % KSHELL_HISTORY_SIZE];
		memcpy(slot, editor->line, editor->length + 1);
		editor->history_count++;
	}
	editor->length = 0;
	editor->line[0] = '\0';
	editor->history_cursor = 0;
}
