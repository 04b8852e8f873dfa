/*
 * sh: a small shell.  A line is a pipeline of commands joined by `|`, each
 * with words and redirections (`< file`, `> file`, `>> file`); a trailing `&`
 * runs it in the background.  Words may be quoted with '...' or "...".
 * Builtins (cd, exit, pwd, export, help) run in the shell itself and only as
 * a whole line.  `sh -c "line"` runs one line; `sh file` runs a file's lines.
 *
 * Each stage is a child: the shell makes the pipes, forks every stage, closes
 * its own copies of the pipe ends (so a reader sees end of file when the
 * writer exits) and waits for the foreground pipeline's children.
 * Background children are reaped and reported before each prompt.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LINE_MAX_BYTES 1024
#define MAX_WORDS      64
#define MAX_STAGES     8

struct command {
	char *argv[MAX_WORDS + 1];
	int argc;
	const char *input;  /* < file, or NULL */
	const char *output; /* > or >> file, or NULL */
	int append;
};

struct pipeline {
	struct command stages[MAX_STAGES];
	int count;
	int background;
};

static int last_status;

/* A word, or an operator: '|', '<', '>', 'a' (>>), '&'. */
struct token {
	char op;
	char *word;
};

/* Splits line into tokens; words (quotes removed) are copied into storage,
 * which must be as long as line.  Returns the count, or -1 (too many, or an
 * unterminated quote) after saying so. */
static int tokenize(const char *line, struct token *tokens, int max, char *storage)
{
	int count = 0;
	for (const char *p = line;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (!*p || *p == '#')
			return count;
		if (count == max) {
			fprintf(stderr, "sh: line too long\n");
			return -1;
		}
		struct token *t = &tokens[count++];
		if (strchr("|<>&", *p)) {
			t->op = (p[0] == '>' && p[1] == '>') ? 'a' : *p;
			t->word = NULL;
			p += t->op == 'a' ? 2 : 1;
			continue;
		}
		t->op = 0;
		t->word = storage;
		for (char quote = 0; *p && (quote || !strchr(" \t\r\n|<>&", *p)); p++) {
			if (!quote && (*p == '\'' || *p == '"'))
				quote = *p;
			else if (quote && *p == quote)
				quote = 0;
			else
				*storage++ = *p;
			if (quote && !p[1]) {
				fprintf(stderr, "sh: unterminated quote\n");
				return -1;
			}
		}
		*storage++ = '\0';
	}
}

/* Fills pl from tokens.  Returns 0, or -1 after printing what is wrong. */
static int parse_tokens(struct token *tokens, int count, struct pipeline *pl)
{
	memset(pl, 0, sizeof(*pl));
	struct command *cmd = &pl->stages[0];
	pl->count = 1;
	for (int i = 0; i < count; i++) {
		struct token *t = &tokens[i];
		if (pl->background) {
			fprintf(stderr, "sh: & must end the line\n");
			return -1;
		}
		if (!t->op) {
			cmd->argv[cmd->argc++] = t->word; /* count <= MAX_WORDS */
		} else if (t->op == '&') {
			pl->background = 1;
		} else if (t->op == '|') {
			if (cmd->argc == 0 || pl->count == MAX_STAGES) {
				fprintf(stderr, "sh: bad pipeline\n");
				return -1;
			}
			cmd = &pl->stages[pl->count++];
		} else if (i + 1 == count || tokens[i + 1].op) {
			fprintf(stderr, "sh: redirection needs a file name\n");
			return -1;
		} else if (t->op == '<') {
			cmd->input = tokens[++i].word;
		} else {
			cmd->output = tokens[++i].word;
			cmd->append = t->op == 'a';
		}
	}
	if (cmd->argc == 0 && (pl->count > 1 || cmd->input || cmd->output)) {
		fprintf(stderr, "sh: missing command\n");
		return -1;
	}
	return 0;
}

static int parse_line(const char *line, struct pipeline *pl, char *storage)
{
	struct token tokens[MAX_WORDS];
	int count = tokenize(line, tokens, MAX_WORDS, storage);
	return count < 0 ? -1 : parse_tokens(tokens, count, pl);
}

/* ---- builtins -------------------------------------------------------- */

static int builtin_cd(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : getenv("HOME");
	if (chdir(dir ? dir : "/") < 0) {
		fprintf(stderr, "cd: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	return 0;
}

static int builtin_pwd(int argc, char **argv)
{
	char path[256];
	if (!getcwd(path, sizeof(path))) {
		fprintf(stderr, "pwd: %s\n", strerror(errno));
		return 1;
	}
	puts(path);
	return 0;
}

static int builtin_exit(int argc, char **argv)
{
	exit(argc > 1 ? atoi(argv[1]) : last_status);
}

static int builtin_export(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (putenv(strdup(argv[i])) != 0)
			return 1;
	return 0;
}

static int builtin_help(int argc, char **argv);

static const struct builtin {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} builtins[] = {
    {"cd", builtin_cd, "cd [dir]        change directory (default $HOME)"},
    {"pwd", builtin_pwd, "pwd             print the working directory"},
    {"export", builtin_export, "export N=V ...  set environment variables"},
    {"exit", builtin_exit, "exit [code]     leave the shell"},
    {"help", builtin_help, "help            this list"},
};

static int builtin_help(int argc, char **argv)
{
	puts("Commands: a program in /bin with arguments, `a | b`, `< in`, `> out`,");
	puts("`>> out`, a trailing `&` for the background.  Builtins:");
	for (unsigned i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		printf("  %s\n", builtins[i].help);
	return 0;
}

static const struct builtin *find_builtin(const char *name)
{
	for (unsigned i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (strcmp(builtins[i].name, name) == 0)
			return &builtins[i];
	return NULL;
}

/* ---- running --------------------------------------------------------- */

/* Opens path onto fd (in a child).  Exits the child when it cannot. */
static void redirect(const char *path, int flags, int fd)
{
	int opened = open(path, flags, 0644);
	if (opened < 0) {
		fprintf(stderr, "sh: %s: %s\n", path, strerror(errno));
		_exit(1);
	}
	if (opened != fd) {
		dup2(opened, fd);
		close(opened);
	}
}

/* In the child of stage i: wire up stdin/stdout, then exec. */
static void run_stage(struct command *cmd, int in_fd, int out_fd)
{
	if (in_fd != 0) {
		dup2(in_fd, 0);
		close(in_fd);
	}
	if (out_fd != 1) {
		dup2(out_fd, 1);
		close(out_fd);
	}
	if (cmd->input)
		redirect(cmd->input, O_RDONLY, 0);
	if (cmd->output)
		redirect(cmd->output, O_WRONLY | O_CREAT | (cmd->append ? O_APPEND : O_TRUNC), 1);
	execvp(cmd->argv[0], cmd->argv);
	fprintf(stderr, "sh: %s: %s\n", cmd->argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* Forks every stage; returns how many started (pids in pids[]). */
static int start_pipeline(struct pipeline *pl, pid_t *pids)
{
	int in_fd = 0, started = 0;
	for (int i = 0; i < pl->count; i++) {
		int fds[2] = {-1, 1};
		if (i + 1 < pl->count && pipe(fds) < 0) {
			fprintf(stderr, "sh: pipe: %s\n", strerror(errno));
			break;
		}
		pid_t pid = fork();
		if (pid == 0) {
			if (fds[0] >= 0)
				close(fds[0]);
			run_stage(&pl->stages[i], in_fd, fds[1]);
		}
		if (pid < 0)
			fprintf(stderr, "sh: fork: %s\n", strerror(errno));
		else
			pids[started++] = pid;
		if (in_fd != 0)
			close(in_fd);
		if (fds[1] != 1)
			close(fds[1]);
		in_fd = fds[0];
		if (pid < 0)
			break;
	}
	if (in_fd > 0)
		close(in_fd);
	return started;
}

static void report_status(pid_t pid, int status, int background)
{
	if (WIFSIGNALED(status))
		fprintf(stderr, "[%d] killed by signal %d\n", (int)pid, WTERMSIG(status));
	else if (background)
		fprintf(stderr, "[%d] done, status %d\n", (int)pid, WEXITSTATUS(status));
}

/* Waits for the given children; the last stage's status is the line's. */
static void wait_pipeline(pid_t *pids, int count)
{
	for (int waited = 0; waited < count;) {
		int status;
		pid_t pid = wait(&status);
		if (pid < 0)
			break;
		int ours = 0;
		for (int i = 0; i < count; i++)
			ours |= pids[i] == pid;
		report_status(pid, status, !ours);
		if (!ours)
			continue;
		waited++;
		if (pid == pids[count - 1])
			last_status =
			    WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
}

static void reap_background(void)
{
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
		report_status(pid, status, 1);
}

static void run_line(const char *line)
{
	struct pipeline pl;
	char storage[LINE_MAX_BYTES + 1];
	if (strlen(line) > LINE_MAX_BYTES) {
		fprintf(stderr, "sh: line too long\n");
		last_status = 2;
		return;
	}
	if (parse_line(line, &pl, storage) < 0) {
		last_status = 2;
		return;
	}
	struct command *first = &pl.stages[0];
	if (first->argc == 0)
		return;
	const struct builtin *builtin = find_builtin(first->argv[0]);
	if (builtin && pl.count == 1 && !pl.background) {
		last_status = builtin->run(first->argc, first->argv);
		return;
	}
	pid_t pids[MAX_STAGES];
	int started = start_pipeline(&pl, pids);
	if (pl.background) {
		if (started)
			fprintf(stderr, "[%d]\n", (int)pids[started - 1]);
		return;
	}
	wait_pipeline(pids, started);
}

static int run_file(FILE *in, int interactive)
{
	char line[LINE_MAX_BYTES];
	for (;;) {
		if (interactive) {
			reap_background();
			char cwd[256];
			printf("%s$ ", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
			fflush(stdout);
		}
		if (!fgets(line, sizeof(line), in))
			break;
		run_line(line);
	}
	if (interactive)
		putchar('\n');
	return last_status;
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "-c") == 0) {
		run_line(argv[2]);
		return last_status;
	}
	if (argc > 1) {
		FILE *script = fopen(argv[1], "r");
		if (!script) {
			fprintf(stderr, "sh: %s: %s\n", argv[1], strerror(errno));
			return 127;
		}
		return run_file(script, 0);
	}
	return run_file(stdin, isatty(0));
}
