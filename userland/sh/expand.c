/*
 * From a command's words (their source text) to its arguments, when the
 * command runs.  Quotes go, $NAME and the special parameters are replaced
 * (their values are never split or globbed), and $(...) (or `...`) runs its command
 * in a child shell whose standard output, trailing newlines removed, takes
 * its place: split into fields on blanks and open to globbing outside
 * "...", one piece of the word inside.  Then a field holding an unquoted
 * wildcard becomes the sorted paths it matches (glob.c), or stays as typed
 * when none does.  A word is built with a parallel mask saying which of its
 * bytes were quoted, so `'*'`, "*" and \* stay literal.  Leading NAME=value
 * words and redirection targets are one field each, never globbed.
 * Everything is malloc'd per command and freed once it ran.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sh.h"

#define FOR_MAX_WORDS 4096
#define WORD_MAX      (SUBSTITUTION_MAX + COMMAND_MAX_BYTES)

int substitution_status = -1;

/* A field being built: its bytes and, for each, whether it was quoted. */
struct builder {
	char *text, *literal;
	size_t length, size;
	int started; /* the field exists, even empty ("" or '') */
	int failed;
};

/* Where finished fields go, and what may happen to them. */
struct fields {
	char **words;
	int count, max;
	int splitting; /* unquoted $(...) output splits into fields */
	int globbing;  /* unquoted wildcards expand to paths */
};

static void add_byte(struct builder *b, char ch, int literal)
{
	if (b->length + 1 >= b->size) {
		size_t size = b->size ? 2 * b->size : 64;
		char *text = size <= WORD_MAX + 1 ? realloc(b->text, size) : NULL;
		char *mask = text ? realloc(b->literal, size) : NULL;
		if (text)
			b->text = text;
		if (!mask) {
			b->failed = 1;
			return;
		}
		b->literal = mask;
		b->size = size;
	}
	b->text[b->length] = ch;
	b->literal[b->length++] = (char)literal;
	b->started = 1;
}

static void add_literal_text(struct builder *b, const char *text)
{
	b->started = 1;
	while (text && *text)
		add_byte(b, *text++, 1);
}

static int add_word(struct fields *out, char *word)
{
	if (!word || out->count == out->max) {
		free(word);
		fprintf(stderr, word ? "sh: too many words\n" : "sh: out of memory\n");
		return -1;
	}
	out->words[out->count++] = word;
	return 0;
}

/* Ends the field being built (if there is one): its paths, or itself. */
static int finish_field(struct builder *b, struct fields *out)
{
	if (b->failed) {
		fprintf(stderr, "sh: a word too long\n");
		return -1;
	}
	if (!b->started)
		return 0;
	add_byte(b, '\0', 1);
	b->length = 0;
	b->started = 0;
	if (out->globbing && glob_has_wildcard(b->text, b->literal)) {
		int found = glob_paths(b->text, b->literal, out->words, &out->count, out->max);
		if (found < 0) {
			fprintf(stderr, "sh: too many words\n");
			return -1;
		}
		if (found > 0)
			return 0;
	}
	return add_word(out, strdup(b->text));
}

/* The value of the $ form at *p (just past the $), moving *p past it; NULL
 * when it is no parameter (a literal $). */
static const char *dollar_value(const char **p, char *number, size_t size)
{
	const char *q = *p;
	if (*q == '?' || *q == '$' || *q == '#' || *q == '!') {
		int value = *q == '?'   ? last_status
			    : *q == '$' ? (int)getpid()
			    : *q == '!' ? (int)last_background_pid
					: script_argc - 1;
		snprintf(number, size, "%d", value);
		*p = q + 1;
		return number;
	}
	if (isdigit((unsigned char)*q)) {
		int index = *q - '0';
		*p = q + 1;
		return index < script_argc ? script_argv[index] : "";
	}
	int braced = *q == '{';
	const char *start = q + braced, *end = start;
	while (isalnum((unsigned char)*end) || *end == '_')
		end++;
	if (end == start || (braced && *end != '}'))
		return NULL;
	char name[128];
	snprintf(name, sizeof name, "%.*s", (int)(end - start), start);
	*p = end + braced;
	const char *value = getenv(name);
	return value ? value : "";
}

/* ---- Command substitution ---------------------------------------------- */

/* Reads the child's output into a malloc'd buffer (*length bytes); NULL
 * when it gives more than SUBSTITUTION_MAX bytes. */
static char *read_output(int fd, size_t *length)
{
	char *buffer = malloc(SUBSTITUTION_MAX + 1);
	size_t used = 0;
	if (!buffer)
		return NULL;
	for (;;) {
		ssize_t n = read(fd, buffer + used, SUBSTITUTION_MAX + 1 - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		used += (size_t)n;
		if (used > SUBSTITUTION_MAX) {
			fprintf(stderr, "sh: command substitution: output over %d bytes refused\n",
				SUBSTITUTION_MAX);
			free(buffer);
			return NULL;
		}
	}
	*length = used;
	return buffer;
}

/* Waits for the substitution's child; its status becomes
 * substitution_status.  Returns -1 when ^C ended it. */
static int wait_substitution(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 0;
	substitution_status = status_value(status);
	if (interactive && WIFSIGNALED(status) && WTERMSIG(status) == SIGINT) {
		putchar('\n'); /* as after a foreground job's ^C */
		run_interrupted();
		return -1;
	}
	return 0;
}

/* Runs text in a child shell; its output (malloc'd, *length bytes), or
 * NULL after saying why. */
static char *run_substitution(const char *text, size_t *length)
{
	int fds[2];
	fflush(stdout);
	fflush(stderr);
	if (pipe(fds) < 0) {
		fprintf(stderr, "sh: command substitution: %s\n", strerror(errno));
		return NULL;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "sh: command substitution: cannot start: %s\n", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return NULL;
	}
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 1);
		close(fds[1]);
		become_subshell();
		int status = run_string(text);
		fflush(stdout);
		_exit(status);
	}
	close(fds[1]);
	char *output = read_output(fds[0], length);
	close(fds[0]); /* a writer left gets EPIPE */
	if (wait_substitution(pid) < 0) {
		free(output);
		return NULL;
	}
	return output;
}

/* Adds the output of the command text (malloc'd, freed here) to the
 * field; inside "..." or where fields are not split, as one literal piece.
 * Returns 0, or -1 after saying why. */
static int add_output(char *text, int quoted, struct builder *b, struct fields *out)
{
	size_t length = 0, i;
	char *output = text ? run_substitution(text, &length) : NULL;
	free(text);
	if (!output)
		return -1;
	while (length > 0 && output[length - 1] == '\n')
		length--;
	b->started |= quoted || !out->splitting;
	for (i = 0; i < length; i++) {
		char ch = output[i];
		if (quoted || !out->splitting)
			add_byte(b, ch, 1);
		else if ((ch == ' ' || ch == '\t' || ch == '\n') && finish_field(b, out) < 0)
			break;
		else if (ch != ' ' && ch != '\t' && ch != '\n')
			add_byte(b, ch, 0);
	}
	free(output);
	return i < length ? -1 : 0;
}

/* $(...) with its ( at p.  Returns what follows the ), or NULL. */
static const char *substitute(const char *p, int quoted, struct builder *b, struct fields *out)
{
	const char *close = substitution_end(p);
	if (!close)
		return NULL; /* the parser let none through */
	return add_output(strndup(p + 1, (size_t)(close - p - 1)), quoted, b, out) < 0 ? NULL
										       : close + 1;
}

/* `...` with its opening backquote at p: inside, a backslash before $, `
 * or \ only escapes it.  Returns what follows the closing `, or NULL. */
static const char *substitute_backquoted(const char *p, int quoted, struct builder *b,
					 struct fields *out)
{
	const char *close = backquote_end(p);
	char *text = close ? malloc((size_t)(close - p)) : NULL;
	size_t length = 0;
	if (!text)
		return NULL;
	for (const char *q = p + 1; q < close; q++) {
		if (*q == '\\' && q + 1 < close && strchr("$`\\", q[1]))
			q++;
		text[length++] = *q;
	}
	text[length] = '\0';
	return add_output(text, quoted, b, out) < 0 ? NULL : close + 1;
}

/* Expands the source text of one word into out.  Returns 0, or -1 after
 * saying why. */
static int expand_source(const char *p, struct fields *out)
{
	struct builder b = {0};
	char quote = 0, number[16];
	while (*p && !b.failed) {
		if (!quote && (*p == '\'' || *p == '"')) {
			quote = *p++;
			b.started = 1;
		} else if (quote && *p == quote) {
			quote = 0;
			p++;
		} else if (*p == '\\' && quote == '"' && p[1] && !strchr("$`\"\\\n", p[1])) {
			add_byte(&b, *p++, 1); /* in "...", \ escapes only $ ` " \ and newline */
		} else if (*p == '\\' && quote != '\'' && p[1]) {
			add_byte(&b, p[1], 1);
			p += 2;
		} else if (*p == '$' && p[1] == '(' && quote != '\'') {
			p = substitute(p + 1, quote == '"', &b, out);
			if (!p)
				break;
		} else if (*p == '`' && quote != '\'') {
			p = substitute_backquoted(p, quote == '"', &b, out);
			if (!p)
				break;
		} else if (*p == '$' && quote != '\'') {
			const char *after = p + 1;
			const char *value = dollar_value(&after, number, sizeof number);
			if (value)
				add_literal_text(&b, value);
			else
				add_byte(&b, '$', 1); /* not a parameter: a literal $ */
			p = value ? after : p + 1;
		} else {
			add_byte(&b, *p++, quote != 0);
		}
	}
	int result = p ? finish_field(&b, out) : -1;
	free(b.text);
	free(b.literal);
	return result;
}

/* One word, unsplit and unglobbed (a redirection's file, NAME=value):
 * malloc'd, or NULL after saying why. */
static char *expand_one(const char *source)
{
	char *word = NULL;
	struct fields out = {&word, 0, 1, 0, 0};
	if (expand_source(source, &out) < 0)
		return NULL;
	return word ? word : strdup("");
}

/* Whether the word's source text starts NAME= (an assignment before the
 * command's name). */
static int is_assignment_source(const char *source)
{
	const char *equals = strchr(source, '=');
	return equals && is_name(source, equals);
}

/* ---- Commands ---------------------------------------------------------- */

/* The redirection operator op (a token's text) applied to path. */
static void set_redirect(struct redirect *r, const char *op, char *path)
{
	const char *arrow = op + (isdigit((unsigned char)op[0]) ? 1 : 0);
	int fd = arrow > op ? op[0] - '0' : *arrow == '<' ? 0 : 1;
	*r = (struct redirect){.fd = fd, .path = path};
	if (arrow[1] == '&') {
		r->flags = -1;
		r->from_fd = arrow[2] - '0';
	} else if (*arrow == '<') {
		r->flags = O_RDONLY;
	} else {
		r->flags = O_WRONLY | O_CREAT | (arrow[1] == '>' ? O_APPEND : O_TRUNC);
	}
}

/* The redirection at tokens[*i] (and its file's word), into cmd. */
static int expand_redirect(const struct token *tokens, int *i, struct command *cmd)
{
	const char *op = tokens[*i].word;
	char *path = NULL;
	if (!strchr(op, '&')) { /* the parser made sure a word follows */
		path = expand_one(tokens[++*i].word);
		if (!path)
			return -1;
	}
	set_redirect(&cmd->redirects[cmd->redirect_count++], op, path);
	return 0;
}

static int expand_words(const struct token *tokens, int first, int end, struct command *cmd)
{
	struct fields out = {cmd->argv, 0, MAX_WORDS, 1, 1};
	int naming = 1; /* still in the NAME=value words before the command's name */
	for (int i = first; i < end; i++) {
		int result;
		if (tokens[i].kind == T_REDIRECT) {
			result = expand_redirect(tokens, &i, cmd);
		} else if (naming && is_assignment_source(tokens[i].word)) {
			result = add_word(&out, expand_one(tokens[i].word));
		} else {
			naming = 0;
			result = expand_source(tokens[i].word, &out);
		}
		cmd->argc = out.count;
		if (result < 0)
			return -1;
	}
	return 0;
}

int expand_command(const struct node *stage, struct command *cmd)
{
	const struct token *tokens = parse_tokens();
	memset(cmd, 0, sizeof *cmd);
	substitution_status = -1;
	if (stage->kind == N_SIMPLE)
		return expand_words(tokens, stage->first, stage->end, cmd);
	cmd->compound = stage;
	return expand_words(tokens, stage->redirect_first, stage->redirect_end, cmd);
}

void free_command(struct command *cmd)
{
	for (int i = 0; i < cmd->argc; i++)
		free(cmd->argv[i]);
	for (int i = 0; i < cmd->redirect_count; i++)
		free(cmd->redirects[i].path);
	cmd->argc = cmd->redirect_count = 0;
}

void free_words(char **words, int count)
{
	for (int i = 0; words && i < count; i++)
		free(words[i]);
	free(words);
}

char **expand_for_words(const struct node *loop, int *count)
{
	const struct token *tokens = parse_tokens();
	char **words = calloc(FOR_MAX_WORDS + 1, sizeof *words);
	struct fields out = {words, 0, FOR_MAX_WORDS, 1, 1};
	if (!words) {
		fprintf(stderr, "sh: out of memory\n");
		return NULL;
	}
	for (int i = 1; loop->positional && i < script_argc; i++)
		if (add_word(&out, strdup(script_argv[i])) < 0)
			goto out_free_words;
	for (int i = loop->first; !loop->positional && i < loop->end; i++)
		if (expand_source(tokens[i].word, &out) < 0)
			goto out_free_words;
	*count = out.count;
	return words;
out_free_words:
	free_words(words, out.count);
	return NULL;
}
