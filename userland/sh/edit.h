/*
 * The interactive shell's line editor (edit.c): history, cursor keys and
 * Tab completion on the console in raw mode.
 *
 *     char line[EDIT_LINE_MAX + 2];
 *     int n = edit_line("/$ ", builtin_names, line, sizeof line);
 *     if (n >= 0) edit_remember(line);
 */
#ifndef USERLAND_SH_EDIT_H
#define USERLAND_SH_EDIT_H

#include <stddef.h>

#define EDIT_LINE_MAX 1024

#define EDIT_END_OF_INPUT   (-1)
#define EDIT_NOT_A_TERMINAL (-2)
#define EDIT_INTERRUPTED    (-3)

/* Prints prompt and reads one edited line into line (size bytes, ending
 * with "\n\0"); commands (NULL-terminated) complete the first word besides
 * /bin.  Returns the line's length, EDIT_END_OF_INPUT (^D on an empty
 * line, or the console went away), EDIT_NOT_A_TERMINAL when standard input
 * is not a terminal (the caller reads it plainly), EDIT_INTERRUPTED when ^C
 * dropped the line. */
int edit_line(const char *prompt, const char *const *commands, char *line, size_t size);
/* Adds line (without its newline) to the history, unless empty or the
 * same as the last one. */
void edit_remember(const char *line);

#endif
