/*
 * From text to a tree of commands.  The whole text of a command is parsed
 * before any of it runs, so a syntax error runs nothing; a compound command
 * (if, while, until, for) may span lines, and a text that ends inside one
 * is PARSE_INCOMPLETE, for the reader to add the next line.  Words keep
 * their source text (quotes and $ included): they are expanded only when
 * their command runs, so that `false; echo $?` and a loop's body see the
 * values of the moment.  Reserved words (if then elif else fi while until
 * for in do done) are words of their exact unquoted text where a command
 * starts.  Tokens and nodes sit in static arrays, overwritten by the next
 * parse; the tree is run before the next one is read.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sh.h"

#define MAX_TOKENS    4096
#define MAX_NODES     2048
#define STORAGE_BYTES (2 * COMMAND_MAX_BYTES + 2 * MAX_TOKENS)

static struct token tokens[MAX_TOKENS];
static char storage[STORAGE_BYTES];
static struct node nodes[MAX_NODES];

int counting_lines;

void parse_report(int line, const char *format, ...)
{
	va_list args;
	va_start(args, format);
	fputs("sh: ", stderr);
	if (counting_lines)
		fprintf(stderr, "line %d: ", line);
	vfprintf(stderr, format, args);
	fputc('\n', stderr);
	va_end(args);
}

int is_name(const char *start, const char *end)
{
	if (start == end || isdigit((unsigned char)*start))
		return 0;
	for (const char *p = start; p < end; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return 0;
	return 1;
}

/* ---- Tokens ------------------------------------------------------------ */

static int is_operator_char(char ch)
{
	return ch && strchr("|&;<>", ch) != NULL;
}

static int ends_word(char ch)
{
	return !ch || ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || is_operator_char(ch);
}

/* An operator at p: sets *t and returns its length, or 0. */
static int scan_operator(const char *p, struct token *t)
{
	static const struct {
		const char *text;
		enum token_kind kind;
	} operators[] = {
	    {"&&", T_AND}, {"||", T_OR}, {"|", T_PIPE}, {";", T_SEMICOLON}, {"&", T_AMPERSAND},
	};
	for (unsigned i = 0; i < sizeof operators / sizeof operators[0]; i++) {
		size_t length = strlen(operators[i].text);
		if (strncmp(p, operators[i].text, length) == 0) {
			t->kind = operators[i].kind;
			t->word = (char *)operators[i].text;
			return (int)length;
		}
	}
	return 0;
}

/* The length of the redirection operator at p ([n]<, [n]>, [n]>>, [n]>&m
 * with n and m one digit each), or 0. */
static int redirect_length(const char *p)
{
	const char *q = p + (isdigit((unsigned char)p[0]) && (p[1] == '<' || p[1] == '>'));
	if (*q == '<')
		return (int)(q - p) + 1;
	if (*q != '>')
		return 0;
	if (q[1] == '>')
		return (int)(q - p) + 2;
	if (q[1] == '&' && isdigit((unsigned char)q[2]))
		return (int)(q - p) + 3;
	return (int)(q - p) + 1;
}

/* Past the quoted text opening with the quote at p, within its line; NULL
 * when it does not close there. */
static const char *quote_end(const char *p)
{
	char quote = *p++;
	for (; *p && *p != '\n'; p++) {
		if (*p == quote)
			return p + 1;
		if (quote == '"' && *p == '\\' && p[1] && p[1] != '\n')
			p++;
		else if (quote == '"' && *p == '$' && p[1] == '(') {
			p = substitution_end(p + 1);
			if (!p)
				return NULL;
		} else if (quote == '"' && *p == '`') {
			p = backquote_end(p);
			if (!p)
				return NULL;
		}
	}
	return NULL;
}

const char *backquote_end(const char *p)
{
	for (p++; *p && *p != '\n'; p++) {
		if (*p == '\\' && p[1] && p[1] != '\n')
			p++;
		else if (*p == '`')
			return p;
	}
	return NULL;
}

const char *substitution_end(const char *p)
{
	int depth = 0;
	for (; *p && *p != '\n'; p++) {
		if (*p == '\'' || *p == '"') {
			p = quote_end(p);
			if (!p)
				return NULL;
			p--;
		} else if (*p == '\\' && p[1] && p[1] != '\n') {
			p++;
		} else if (*p == '`') {
			p = backquote_end(p);
			if (!p)
				return NULL;
		} else if (*p == '(') {
			depth++;
		} else if (*p == ')' && --depth == 0) {
			return p;
		}
	}
	return NULL;
}

const char *word_end(const char *p, const char **why)
{
	while (!ends_word(*p)) {
		if (*p == '\'' || *p == '"') {
			p = quote_end(p);
			if (!p) {
				*why = "unterminated quote";
				return NULL;
			}
		} else if (*p == '\\' && p[1] && p[1] != '\n') {
			p += 2;
		} else if (*p == '$' && p[1] == '(') {
			const char *close = substitution_end(p + 1);
			if (!close) {
				*why = "unterminated $(";
				return NULL;
			}
			p = close + 1;
		} else if (*p == '`') {
			const char *close = backquote_end(p);
			if (!close) {
				*why = "unterminated `";
				return NULL;
			}
			p = close + 1;
		} else {
			p++;
		}
	}
	return p;
}

struct lexer {
	const char *p;
	int line;
	int count;
	char *out, *out_end;
};

/* Copies length bytes of text (and a '\0') into storage; NULL when full. */
static char *keep(struct lexer *lx, const char *text, size_t length)
{
	if ((size_t)(lx->out_end - lx->out) < length + 1)
		return NULL;
	char *kept = lx->out;
	memcpy(kept, text, length);
	kept[length] = '\0';
	lx->out += length + 1;
	return kept;
}

/* Reads the token at lx->p into t.  Returns 0, or -1 after saying why. */
static int scan_token(struct lexer *lx, struct token *t)
{
	const char *p = lx->p;
	t->line = lx->line;
	int length = redirect_length(p);
	if (length) { /* the operator's text, parsed again by parse_redirect */
		t->kind = T_REDIRECT;
	} else if (*p == '\n') {
		t->kind = T_NEWLINE;
		t->word = "newline";
		lx->line++;
		lx->p++;
		return 0;
	} else if ((length = scan_operator(p, t)) > 0) {
		lx->p += length;
		return 0;
	} else {
		const char *why = NULL;
		const char *end = word_end(p, &why);
		if (!end) {
			parse_report(lx->line, "%s", why);
			return -1;
		}
		t->kind = T_WORD;
		length = (int)(end - p);
	}
	t->word = keep(lx, p, (size_t)length);
	if (!t->word) {
		parse_report(lx->line, "line too long");
		return -1;
	}
	lx->p += length;
	return 0;
}

/* Splits text into tokens.  Returns the count, or -1 after saying why. */
static int tokenize(const char *text, int first_line)
{
	struct lexer lx = {text, first_line, 0, storage, storage + STORAGE_BYTES};
	for (;;) {
		while (*lx.p == ' ' || *lx.p == '\t' || *lx.p == '\r')
			lx.p++;
		if (*lx.p == '#')
			lx.p += strcspn(lx.p, "\n");
		if (!*lx.p)
			return lx.count;
		if (lx.count == MAX_TOKENS) {
			parse_report(lx.line, "a command of more than %d words and operators",
				     MAX_TOKENS);
			return -1;
		}
		if (scan_token(&lx, &tokens[lx.count]) < 0)
			return -1;
		lx.count++;
	}
}

/* ---- The tree ---------------------------------------------------------- */

struct parser {
	int at, count, used;
	int incomplete;
	const char *open_word; /* the innermost compound command open */
	int open_line;
};

static struct parser parser;

const struct token *parse_tokens(void)
{
	return tokens;
}

const char *parse_open_word(int *line)
{
	*line = parser.open_line;
	return parser.open_word;
}

static struct node *new_node(struct parser *ps, enum node_kind kind)
{
	if (ps->used == MAX_NODES) {
		parse_report(tokens[ps->at < ps->count ? ps->at : ps->count - 1].line,
			     "command too long");
		return NULL;
	}
	struct node *n = &nodes[ps->used++];
	memset(n, 0, sizeof *n);
	n->kind = kind;
	n->text_first = ps->at;
	return n;
}

static int at_end(const struct parser *ps)
{
	return ps->at >= ps->count;
}

static int is_word(const struct parser *ps, const char *word)
{
	return !at_end(ps) && tokens[ps->at].kind == T_WORD &&
	       strcmp(tokens[ps->at].word, word) == 0;
}

static int is_kind(const struct parser *ps, enum token_kind kind)
{
	return !at_end(ps) && tokens[ps->at].kind == kind;
}

/* Words that end a list: the next part of the compound command around it. */
static int at_list_end(const struct parser *ps)
{
	static const char *const ends[] = {"then", "elif", "else", "fi", "do", "done"};
	for (unsigned i = 0; i < sizeof ends / sizeof ends[0]; i++)
		if (is_word(ps, ends[i]))
			return 1;
	return at_end(ps);
}

static void skip_newlines(struct parser *ps)
{
	while (is_kind(ps, T_NEWLINE))
		ps->at++;
}

/* A syntax error at the current token (or the end of the text). */
static void *unexpected(struct parser *ps)
{
	if (at_end(ps)) {
		ps->incomplete = 1;
		return NULL;
	}
	const struct token *t = &tokens[ps->at];
	parse_report(t->line, "syntax error: `%s' unexpected", t->word);
	return NULL;
}

/* Takes the reserved word expected next, or fails (incomplete at the end). */
static int expect(struct parser *ps, const char *word)
{
	if (is_word(ps, word)) {
		ps->at++;
		return 0;
	}
	if (at_end(ps)) {
		ps->incomplete = 1;
		return -1;
	}
	const struct token *t = &tokens[ps->at];
	parse_report(t->line, "syntax error: `%s' where `%s' belongs", t->word, word);
	return -1;
}

static struct node *parse_list(struct parser *ps);
static struct node *parse_compound(struct parser *ps);

static int is_compound_start(const struct parser *ps)
{
	return is_word(ps, "if") || is_word(ps, "while") || is_word(ps, "until") ||
	       is_word(ps, "for");
}

/* A redirection at the current token and the word after it, if any.
 * Returns 0, or -1 after saying why. */
static int take_redirect(struct parser *ps, int *redirects)
{
	const struct token *t = &tokens[ps->at++];
	if (++*redirects > MAX_REDIRECTS) {
		parse_report(t->line, "too many redirections");
		return -1;
	}
	if (strchr(t->word, '&'))
		return 0; /* >&m names no file */
	if (!is_kind(ps, T_WORD)) {
		parse_report(t->line, "redirection needs a file name");
		return -1;
	}
	ps->at++;
	return 0;
}

static struct node *parse_simple(struct parser *ps)
{
	struct node *n = new_node(ps, N_SIMPLE);
	int words = 0, redirects = 0;
	if (!n)
		return NULL;
	n->first = ps->at;
	while (is_kind(ps, T_WORD) || is_kind(ps, T_REDIRECT)) {
		if (is_kind(ps, T_WORD)) {
			ps->at++;
			words++;
		} else if (take_redirect(ps, &redirects) < 0) {
			return NULL;
		}
	}
	n->end = n->text_end = ps->at;
	if (words == 0 && redirects == 0) {
		if (at_end(ps))
			parse_report(tokens[ps->count - 1].line, "missing command");
		else
			parse_report(tokens[ps->at].line, "missing command before %s",
				     tokens[ps->at].word);
		return NULL;
	}
	if (words == 0) {
		parse_report(tokens[n->first].line, "missing command");
		return NULL;
	}
	return n;
}

/* A compound command and the redirections after its last word. */
static struct node *parse_command(struct parser *ps)
{
	if (!is_compound_start(ps))
		return parse_simple(ps);
	struct node *n = parse_compound(ps);
	if (!n)
		return NULL;
	int redirects = 0;
	n->redirect_first = ps->at;
	while (is_kind(ps, T_REDIRECT))
		if (take_redirect(ps, &redirects) < 0)
			return NULL;
	n->redirect_end = n->text_end = ps->at;
	if (is_kind(ps, T_WORD))
		return unexpected(ps);
	return n;
}

static struct node *parse_pipeline(struct parser *ps)
{
	struct node *n = new_node(ps, N_PIPELINE);
	if (!n)
		return NULL;
	for (;;) {
		if (at_list_end(ps) && !at_end(ps))
			return unexpected(ps);
		struct node *stage = parse_command(ps);
		if (!stage)
			return NULL;
		n->stages[n->count++] = stage;
		if (!is_kind(ps, T_PIPE))
			break;
		if (n->count == MAX_STAGES) {
			parse_report(tokens[ps->at].line, "a pipeline has at most %d commands",
				     MAX_STAGES);
			return NULL;
		}
		ps->at++;
		skip_newlines(ps);
	}
	n->text_end = ps->at;
	return n;
}

static struct node *parse_and_or(struct parser *ps)
{
	struct node *left = parse_pipeline(ps);
	while (left && (is_kind(ps, T_AND) || is_kind(ps, T_OR))) {
		struct node *n = new_node(ps, is_kind(ps, T_AND) ? N_AND : N_OR);
		if (!n)
			return NULL;
		const struct token *op = &tokens[ps->at++];
		skip_newlines(ps);
		if (at_end(ps) || is_kind(ps, T_SEMICOLON) || is_kind(ps, T_AMPERSAND)) {
			parse_report(op->line, "missing command after %s", op->word);
			return NULL;
		}
		n->text_first = left->text_first;
		n->left = left;
		n->right = parse_pipeline(ps);
		if (!n->right)
			return NULL;
		n->text_end = ps->at;
		left = n;
	}
	return left;
}

/* An and-or list ended by ; & or a newline, if any.  Only a pipeline may
 * run in the background. */
static struct node *parse_item(struct parser *ps)
{
	struct node *n = new_node(ps, N_LIST);
	if (!n)
		return NULL;
	n->item = parse_and_or(ps);
	if (!n->item)
		return NULL;
	if (is_kind(ps, T_AMPERSAND)) {
		if (n->item->kind != N_PIPELINE) {
			parse_report(tokens[ps->at].line,
				     "only a pipeline may run in the background");
			return NULL;
		}
		n->background = 1;
	}
	if (is_kind(ps, T_SEMICOLON) || is_kind(ps, T_AMPERSAND) || is_kind(ps, T_NEWLINE))
		ps->at++;
	else if (!at_list_end(ps))
		return unexpected(ps);
	return n;
}

/* Commands up to a reserved word that ends the list, or the end of the
 * text.  Returns the list (NULL: none, or an error in ps). */
static struct node *parse_commands(struct parser *ps, int *failed)
{
	struct node *head = NULL, **tail = &head;
	for (;;) {
		skip_newlines(ps);
		if (at_list_end(ps))
			return head;
		if (is_kind(ps, T_SEMICOLON) || is_kind(ps, T_AMPERSAND)) {
			parse_report(tokens[ps->at].line, "missing command before %s",
				     tokens[ps->at].word);
			*failed = 1;
			return NULL;
		}
		struct node *item = parse_item(ps);
		if (!item) {
			*failed = 1;
			return NULL;
		}
		*tail = item;
		tail = &item->next;
	}
}

/* A list inside a compound command: it may not be empty. */
static struct node *parse_list(struct parser *ps)
{
	int failed = 0;
	struct node *list = parse_commands(ps, &failed);
	if (failed)
		return NULL;
	if (!list)
		return unexpected(ps);
	return list;
}

/* Notes the compound command being parsed, for an incomplete text. */
static void open_compound(struct parser *ps)
{
	ps->open_word = tokens[ps->at].word;
	ps->open_line = tokens[ps->at].line;
	ps->at++;
}

/* if LIST then LIST [elif LIST then LIST]... [else LIST] fi; elif is an
 * if of its own in the else part, closed by the same fi. */
static struct node *parse_if_rest(struct parser *ps, struct node *n)
{
	if (!(n->condition = parse_list(ps)) || expect(ps, "then") < 0 ||
	    !(n->body = parse_list(ps)))
		return NULL;
	if (is_word(ps, "elif")) {
		struct node *elif = new_node(ps, N_IF);
		ps->at++;
		if (!elif || !(n->otherwise = parse_if_rest(ps, elif)))
			return NULL;
		return n;
	}
	if (is_word(ps, "else")) {
		ps->at++;
		if (!(n->otherwise = parse_list(ps)))
			return NULL;
	}
	return expect(ps, "fi") < 0 ? NULL : n;
}

/* while/until LIST do LIST done */
static struct node *parse_loop(struct parser *ps, struct node *n)
{
	if (!(n->condition = parse_list(ps)) || expect(ps, "do") < 0 ||
	    !(n->body = parse_list(ps)) || expect(ps, "done") < 0)
		return NULL;
	return n;
}

/* for NAME [in WORDS] (; or newline) do LIST done; without `in`, over the
 * positional parameters. */
static struct node *parse_for(struct parser *ps, struct node *n)
{
	if (at_end(ps)) {
		ps->incomplete = 1;
		return NULL;
	}
	const struct token *name = &tokens[ps->at];
	if (name->kind != T_WORD || !is_name(name->word, name->word + strlen(name->word))) {
		parse_report(name->line, "syntax error: `%s' is no name for for", name->word);
		return NULL;
	}
	n->name = ps->at++;
	skip_newlines(ps);
	n->positional = !is_word(ps, "in");
	if (!n->positional) {
		n->first = ++ps->at;
		while (is_kind(ps, T_WORD))
			ps->at++;
		n->end = ps->at;
	}
	if (is_kind(ps, T_SEMICOLON) || is_kind(ps, T_NEWLINE))
		ps->at++;
	else if (!n->positional || !is_word(ps, "do"))
		return unexpected(ps);
	skip_newlines(ps);
	if (expect(ps, "do") < 0 || !(n->body = parse_list(ps)) || expect(ps, "done") < 0)
		return NULL;
	return n;
}

static struct node *parse_compound(struct parser *ps)
{
	const char *word = tokens[ps->at].word;
	enum node_kind kind = strcmp(word, "if") == 0      ? N_IF
			      : strcmp(word, "while") == 0 ? N_WHILE
			      : strcmp(word, "until") == 0 ? N_UNTIL
							   : N_FOR;
	struct node *n = new_node(ps, kind);
	if (!n)
		return NULL;
	const char *outer_word = ps->open_word;
	int outer_line = ps->open_line;
	open_compound(ps);
	n = kind == N_IF    ? parse_if_rest(ps, n)
	    : kind == N_FOR ? parse_for(ps, n)
			    : parse_loop(ps, n);
	if (n) { /* closed: the one around it is the open one again */
		ps->open_word = outer_word;
		ps->open_line = outer_line;
	}
	return n;
}

enum parse_result parse_program(const char *text, int first_line, struct node **program)
{
	*program = NULL;
	parser = (struct parser){0};
	int count = tokenize(text, first_line);
	if (count < 0)
		return PARSE_ERROR;
	parser.count = count;
	int failed = 0;
	struct node *list = parse_commands(&parser, &failed);
	if (parser.incomplete)
		return PARSE_INCOMPLETE;
	if (failed)
		return PARSE_ERROR;
	if (!at_end(&parser)) {
		unexpected(&parser);
		return PARSE_ERROR;
	}
	*program = list;
	return PARSE_COMPLETE;
}

/* ---- Skipping a refused command ---------------------------------------- */

/* Whether the word at p (length bytes) is the reserved word. */
static int word_is(const char *p, size_t length, const char *word)
{
	return strlen(word) == length && strncmp(p, word, length) == 0;
}

int parse_depth_change(const char *text)
{
	int depth = 0, command_start = 1;
	for (const char *p = text; *p;) {
		if (*p == '#' && command_start) {
			p += strcspn(p, "\n");
			continue;
		}
		if (isspace((unsigned char)*p) && *p != '\n') {
			p++;
			continue;
		}
		if (*p == '\n' || is_operator_char(*p)) {
			command_start = 1;
			p++;
			continue;
		}
		const char *why, *end = word_end(p, &why);
		if (!end)
			return depth;
		size_t length = (size_t)(end - p);
		int opens = word_is(p, length, "if") || word_is(p, length, "while") ||
			    word_is(p, length, "until") || word_is(p, length, "for");
		int closes = word_is(p, length, "fi") || word_is(p, length, "done");
		if (command_start)
			depth += opens - closes;
		command_start = opens || word_is(p, length, "then") || word_is(p, length, "do") ||
				word_is(p, length, "else") || word_is(p, length, "elif");
		p = end;
	}
	return depth;
}
