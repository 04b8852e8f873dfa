/*
 * Command-line parsing.  Words are separated by spaces; a value may be quoted
 * ("name=\"a b\"").  Each word is copied into a bounded buffer before its
 * setter sees it, so setters get NUL-terminated strings and an over-long word
 * is reported rather than cut silently.
 */
#include "boot/cmdline.h"

#include <stdbool.h>
#include <stddef.h>

#include "console/console.h"
#include "lib/string.h"

#define WORD_MAX 256

extern const struct kernel_param __kparams_start[], __kparams_end[];

/* Copies the next word of *cursor into word; returns its length, 0 at the end,
 * or -1 if it does not fit (the word is skipped). */
static int next_word(const char **cursor, char *word)
{
	const char *p = *cursor;
	while (*p == ' ' || *p == '\t')
		p++;
	int n = 0;
	bool quoted = false, too_long = false;
	for (; *p && (quoted || (*p != ' ' && *p != '\t')); p++) {
		if (*p == '"') {
			quoted = !quoted;
			continue;
		}
		if (n + 1 < WORD_MAX)
			word[n++] = *p;
		else
			too_long = true;
	}
	word[n] = '\0';
	*cursor = p;
	return too_long ? -1 : n;
}

static const struct kernel_param *find_param(const char *name, const struct kernel_param *first,
					     const struct kernel_param *last)
{
	for (const struct kernel_param *param = first; param < last; param++) {
		if (!strcmp(param->name, name))
			return param;
	}
	return NULL;
}

/* Applies one word; returns 0 if it was accepted. */
static int apply_word(char *word, const struct kernel_param *first, const struct kernel_param *last)
{
	char *equals = strchr(word, '=');
	const char *value = NULL;
	if (equals) {
		*equals = '\0';
		value = equals + 1;
	}
	const struct kernel_param *param = find_param(word, first, last);
	if (!param) {
		pr_warn("cmdline: unknown option '%s' ignored\n", word);
		return -1;
	}
	if (param->set(value) < 0) {
		pr_warn("cmdline: bad value '%s' for '%s' ignored (%s)\n", value ? value : "(none)",
			word, param->help);
		return -1;
	}
	return 0;
}

int cmdline_apply_params(const char *cmdline, const struct kernel_param *first,
			 const struct kernel_param *last)
{
	char word[WORD_MAX];
	int problems = 0;
	const char *cursor = cmdline;
	for (;;) {
		int length = next_word(&cursor, word);
		if (length == 0)
			break;
		if (length < 0) {
			pr_warn("cmdline: option longer than %d characters ignored\n",
				WORD_MAX - 1);
			problems++;
			continue;
		}
		if (apply_word(word, first, last) < 0)
			problems++;
	}
	return problems;
}

int cmdline_apply(const char *cmdline)
{
	return cmdline_apply_params(cmdline, __kparams_start, __kparams_end);
}

int cmdline_on_off(const char *value, bool *off)
{
	if (value && !strcmp(value, "off"))
		*off = true;
	else if (value && !strcmp(value, "on"))
		*off = false;
	else
		return -1;
	return 0;
}
