/* Private to kernel/kshell: the line editor, the word splitter and the
 * command table.  The first two depend on nothing else in the kernel, so the
 * host tests compile them as they are. */
#ifndef KERNEL_KSHELL_INTERNAL_H
#define KERNEL_KSHELL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "kshell/kshell.h"

#define KSHELL_HISTORY_SIZE 8

/* ---- Line editor --------------------------------------------------------- */

/* Writes what the editor shows the user (echo, erasures). */
typedef void (*kshell_echo_fn)(const char *text, size_t length, void *ctx);

enum kshell_edit_result {
	KSHELL_EDIT_MORE,   /* the line is not finished */
	KSHELL_EDIT_LINE,   /* Enter: editor->line holds a finished line */
	KSHELL_EDIT_CANCEL, /* ^C: the line was thrown away */
};

enum kshell_escape_state { KSHELL_ESC_NONE, KSHELL_ESC_SEEN, KSHELL_ESC_CSI };

struct kshell_editor {
	char line[KSHELL_LINE_MAX]; /* always NUL-terminated */
	size_t length;
	enum kshell_escape_state escape;
	bool after_cr; /* a '\n' right after '\r' ends nothing */
	char history[KSHELL_HISTORY_SIZE][KSHELL_LINE_MAX];
	unsigned history_count;  /* lines ever remembered */
	unsigned history_cursor; /* 0: the new line; k: the k-th most recent */
	kshell_echo_fn echo;
	void *echo_ctx;
};

/* Empties the editor and its history; echo (may be NULL) shows the edits. */
void kshell_editor_init(struct kshell_editor *editor, kshell_echo_fn echo, void *ctx);
/* Takes one input byte: printable characters are inserted, backspace/DEL
 * erases one, ^U the whole line, ^C cancels it, Enter (CR, LF or CR LF)
 * finishes it, ESC [ A / ESC [ B walk the history.  A byte that does not fit
 * or means nothing rings the bell.  Returns what happened to the line. */
enum kshell_edit_result kshell_editor_feed(struct kshell_editor *editor, char byte);
/* Stores the current line in the history (not empty lines, nor a repeat of
 * the most recent one) and starts a new, empty line. */
void kshell_editor_accept(struct kshell_editor *editor);

/* ---- Words --------------------------------------------------------------- */

/* Splits line in place into words separated by spaces and tabs; "double
 * quotes" make one word of what they enclose (quotes removed).  argv needs
 * max_words + 1 entries: argv[argc] is set to NULL.  Returns argc (0 for a
 * blank line), -E2BIG (more than max_words words) or -EINVAL (unterminated
 * quote). */
int kshell_split_words(char *line, char **argv, int max_words);

/* ---- The command table (the .kshell.commands section) -------------------- */

extern const struct kshell_command __kshell_commands_start[], __kshell_commands_end[];

#endif
