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

/* Prints prompt and reads one edited line into line (size bytes, ending
 * with "\n\0"); commands (NULL-terminated) complete the first word besides
 * /bin.  Returns the line's length, -1 at end of input (^D on an empty
 * line, or the console went away), -2 when standard input is not a
 * terminal (the caller reads it plainly). */
int edit_line(const char *prompt, const char *const *commands, char *line, size_t size);
/* Adds line (without its newline) to the history, unless empty or the
 * same as the last one. */
void edit_remember(const char *line);

#endif
