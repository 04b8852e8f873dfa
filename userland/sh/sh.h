/*
 * The shell's parts and what they share: parse.c turns text into tokens
 * and a tree of commands, expand.c turns a command's words into arguments
 * (variables, command substitution, globbing with glob.c), run.c walks the
 * tree (lists, and-or lists, if, while, until, for, break, continue),
 * input.c reads lines, and sh.c runs pipelines and jobs, holds the
 * builtins and turns lines into commands.
 *
 *     struct node *program;
 *     if (parse_program(text, 1, &program) == PARSE_COMPLETE)
 *             run_node(program);
 */
#ifndef USERLAND_SH_SH_H
#define USERLAND_SH_SH_H

#include <stddef.h>
#include <sys/types.h>

#define LINE_MAX_BYTES    1024  /* one line, its newline not counted */
#define COMMAND_MAX_BYTES 16384 /* a command spread over several lines */
#define MAX_WORDS         256   /* arguments of one command, after expansion */
#define MAX_STAGES        8
#define MAX_REDIRECTS     4
#define SUBSTITUTION_MAX  65536 /* bytes a $(...) may give */

/* ---- Tokens and the command tree (parse.c) ------------------------------ */

enum token_kind {
	T_WORD,
	T_PIPE,      /* | */
	T_AND,       /* && */
	T_OR,        /* || */
	T_SEMICOLON, /* ; */
	T_AMPERSAND, /* & */
	T_NEWLINE,   /* ends a command, as ; does */
	T_REDIRECT,  /* [n]< [n]> [n]>> [n]>&m (n, m: one digit) */
};

struct token {
	enum token_kind kind;
	char *word; /* T_WORD: its source text; others: the operator's */
	int line;   /* the line it is on */
};

enum node_kind {
	N_SIMPLE,   /* words and redirections: tokens [first, end) */
	N_PIPELINE, /* stages[0 .. count) joined by | */
	N_AND,      /* left && right */
	N_OR,       /* left || right */
	N_LIST,     /* item, then next (a list too, or NULL) */
	N_IF,       /* if condition then body [else otherwise] fi */
	N_WHILE,    /* while condition do body done */
	N_UNTIL,    /* until condition do body done */
	N_FOR,      /* for tokens[name] in tokens [first, end) do body done */
};

struct node {
	enum node_kind kind;
	int first, end;     /* N_SIMPLE: its tokens; N_FOR: the words after in */
	int text_first;     /* where its source text starts, for job listings */
	int text_end;       /* and ends */
	int redirect_first; /* a compound command's redirections after its end */
	int redirect_end;   /* (tokens; none when equal) */
	int name;           /* N_FOR: the variable's token */
	int positional;     /* N_FOR without in: over $1, $2, ... */
	int background;     /* N_LIST: item ended by & */
	int count;          /* N_PIPELINE */
	struct node *stages[MAX_STAGES];
	struct node *left, *right; /* N_AND, N_OR */
	struct node *item, *next;  /* N_LIST */
	struct node *condition, *body, *otherwise;
};

enum parse_result {
	PARSE_COMPLETE,   /* a tree to run (NULL when the text holds no command) */
	PARSE_INCOMPLETE, /* a compound command is open: more lines are needed */
	PARSE_ERROR,      /* said what is wrong */
};

/* Parses text (lines numbered from first_line) into *program.  Tokens and
 * nodes live in static storage until the next call.  On PARSE_INCOMPLETE
 * nothing is printed. */
enum parse_result parse_program(const char *text, int first_line, struct node **program);
/* After PARSE_INCOMPLETE: the compound command left open and its line. */
const char *parse_open_word(int *line);
/* The tokens of the last parse. */
const struct token *parse_tokens(void);
/* Prints "sh: " (and "line N: " when lines are counted), then the message. */
void parse_report(int line, const char *format, ...);
/* Where the word starting at p ends: quotes and $(...) skipped whole.
 * NULL for an unterminated quote or $( (what is wrong goes to *why). */
const char *word_end(const char *p, const char **why);
/* The ` that closes the one at p (on its line), or NULL. */
const char *backquote_end(const char *p);
/* The ) that closes the $( whose ( is at p, or NULL. */
const char *substitution_end(const char *p);
/* How many compound commands the words of text open minus how many they
 * close (if, while, until and for against fi and done). */
int parse_depth_change(const char *text);
/* A variable's name: letters, digits and _, not starting with a digit. */
int is_name(const char *start, const char *end);

/* ---- Expansion (expand.c, glob.c) ------------------------------------- */

struct redirect {
	int fd;      /* the descriptor redirected */
	int flags;   /* open flags, or -1 for a duplicate */
	int from_fd; /* for a duplicate: the descriptor copied */
	char *path;
};

/* One stage of a pipeline, expanded: a simple command's arguments, or a
 * compound command (run by run_node) with its redirections. */
struct command {
	char *argv[MAX_WORDS + 1];
	int argc;
	struct redirect redirects[MAX_REDIRECTS];
	int redirect_count;
	const struct node *compound;
};

struct pipeline {
	struct command stages[MAX_STAGES];
	int count;
};

/* Expands stage (a simple or compound command) into cmd.  Returns 0, or
 * -1 after saying why (a substitution that could not run or gave too much,
 * too many words). */
int expand_command(const struct node *stage, struct command *cmd);
void free_command(struct command *cmd);
/* The words of a for loop (NULL-terminated, malloc'd, *count of them), or
 * NULL after saying why. */
char **expand_for_words(const struct node *loop, int *count);
void free_words(char **words, int count);
/* The status of the last command substitution of the last expansion, or
 * -1 when it had none. */
extern int substitution_status;

/* Adds to words (count of at most max) the paths matching pattern, where
 * literal[i] says pattern[i] was quoted (never a wildcard), sorted.
 * Returns how many it added (0: none matched), or -1 with more than max. */
int glob_paths(const char *pattern, const char *literal, char **words, int *count, int max);
/* Whether name matches the one-component pattern (with literal as above). */
int glob_match(const char *pattern, const char *literal, const char *name);
/* Whether pattern holds a wildcard that is not literal. */
int glob_has_wildcard(const char *pattern, const char *literal);

/* ---- Running (run.c, sh.c) --------------------------------------------- */

/* Runs a tree; returns and sets last_status. */
int run_node(const struct node *node);
/* Parses and runs text as a whole (sh -c, a command substitution's child);
 * returns the last status (2 for a syntax error). */
int run_string(const char *text);
/* $?'s value for what waitpid said: the exit status, or 128 plus the
 * (kernel's) signal number. */
int status_value(int wait_status);
/* Runs pl (expanded), in the background or waiting for it. */
void run_pipeline(struct pipeline *pl, int background, const char *text);
/* Makes a forked child a shell of its own without job control: no jobs
 * of the parent's, its children in its group. */
void become_subshell(void);
/* Whether the list being run must stop: ^C ended a foreground job of an
 * interactive shell, or break or continue is under way. */
int run_must_stop(void);
/* Clears the ^C mark before a new command from the input. */
void run_reset(void);
/* Marks that ^C ended a foreground job (interactive shells only). */
void run_interrupted(void);
/* Whether ^C ended a job since run_reset. */
int run_was_interrupted(void);
int builtin_break(int argc, char **argv);
int builtin_continue(int argc, char **argv);

/* ---- Input (input.c) --------------------------------------------------- */

struct input;
/* The shell's input on fd; shared: the commands it runs read fd too (its
 * standard input), so it is read no further than the line that runs. */
struct input *input_open(int fd, int shared);
/* Reads a line, its newline included, as fgets does (at most size - 1
 * bytes, then a '\0').  Returns its length (a NUL byte in it does not end
 * it), or -1 at the end of input with nothing read. */
int input_read_line(struct input *in, char *line, size_t size);
/* The next byte, or EOF at the end of input. */
int input_next_byte(struct input *in);
/* Hands bytes read past the current line back to a shared input. */
void input_give_back(struct input *in);

extern int last_status;
extern int interactive;
extern int script_argc;    /* $0 and the arguments: $# is one less */
extern char **script_argv; /* $0, $1, ... */
extern pid_t last_background_pid;
extern int counting_lines; /* syntax errors name their line */

#endif
