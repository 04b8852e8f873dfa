/*
 * Splitting a command line into words, in place: separators become NULs and
 * argv points into the line, so nothing is allocated.  Quotes are removed by
 * shifting the rest of the word left over them; a word never grows, so the
 * write position never overtakes the read position.
 */
#include "kshell/internal.h"

#include "lib/errno.h"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Copies the word starting at *read to write, dropping quotes; leaves *read
 * after the word.  Returns the end of the copied word, or NULL when a quote is
 * not closed. */
static char *copy_word(char **read, char *write)
{
	bool quoted = false;
	char *p = *read;
	for (; *p && (quoted || !is_blank(*p)); p++) {
		if (*p == '"')
			quoted = !quoted;
		else
			*write++ = *p;
	}
	*read = p;
	return quoted ? NULL : write;
}

int kshell_split_words(char *line, char **argv, int max_words)
{
	int argc = 0;
	char *read = line;
	for (;;) {
		while (is_blank(*read))
			read++;
		if (!*read)
			break;
		if (argc == max_words)
			return -E2BIG;
		char *start = read;
		bool last_in_line;
		char *end = copy_word(&read, start);
		if (!end)
			return -EINVAL;
		last_in_line = *read == '\0';
		*end = '\0';
		argv[argc++] = start;
		if (last_in_line)
			break;
		read++;
	}
	argv[argc] = NULL;
	return argc;
}
