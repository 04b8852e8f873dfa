/*
 * sh: the shell an OS researcher types at every day, not a POSIX sh in full.
 *
 * A command is a list of and-or lists separated by `;`, `&` (the latter
 * runs the one before it in the background) or newlines; an and-or list is
 * pipelines joined by `&&` and `||`; a pipeline is commands joined by `|`;
 * a command is words and redirections (`< f`, `> f`, `>> f`, `>&m`, each
 * with an optional descriptor digit before it: `2> f`, `2>&1`, `0< f`), or
 * a compound command (if, while, until, for: run.c) with redirections
 * after it.  parse.c reads the text into a tree, expand.c and glob.c make
 * a command's words into arguments when it runs.  This file runs
 * pipelines and jobs, holds the builtins and takes the lines input.c reads: a compound
 * command left open at a line's end takes the next lines too (a "> "
 * prompt), and nothing of it runs before it is whole and well formed.
 * `sh -c "text"` runs the text; `sh file [args]` runs a file's lines;
 * `FOO=bar cmd` puts FOO in cmd's environment only.  Lines
 * read from standard input are read no further than the line that runs, so
 * a command reading the same input gets the rest.
 * Builtins run in the shell (cd, exit, export, jobs, fg, bg, ...),
 * with their redirections (every descriptor put back after); inside a
 * pipeline they run in a child.
 *
 * Job control (interactive shells only, when stdin is the console): the
 * shell leads its own process group, ignores SIGINT, SIGTSTP, SIGTTOU and
 * SIGTTIN, and puts every pipeline in a new group.  A foreground job owns
 * the console (tcsetpgrp), so ^C and ^Z reach it alone; a stopped job (^Z)
 * or one started with `&` is listed by `jobs` and resumed by `fg`/`bg`.
 * Children get the default signal actions back before exec, and so does
 * the shell's own `exec`, once it found the program.  Stopped jobs hear
 * SIGHUP and SIGCONT when the shell exits or execs (never for an `exec`
 * that finds nothing to run).  A line holding a NUL byte is refused.  A
 * non-interactive shell runs everything in its own group and lets `&` jobs
 * ignore SIGINT, as POSIX asks.  An interactive shell edits its lines with
 * history and Tab completion (edit.c).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/signal.h>

#include "edit.h"
#include "sh.h"

#define MAX_JOBS       16
#define REDIRECT_FDS   10 /* a redirection names descriptor 0 to 9 */
#define FIRST_SPARE_FD 10 /* the shell's own descriptors sit at or above it */

struct job {
	int used;
	pid_t pgid;
	pid_t pids[MAX_STAGES];
	int count, running;
	int stopped;
	int status; /* the last stage's */
	char text[80];
};

int last_status;
pid_t last_background_pid; /* $!: the last stage of the last `&` job */
int interactive;
static pid_t shell_pgid;
static struct job jobs[MAX_JOBS]; /* background and stopped jobs */
static struct job foreground_job; /* the one waited for: it needs no slot */
int script_argc;
char **script_argv;
static pid_t shell_process; /* not a child running a pipeline stage */
/* A child shell running a compound job of an interactive shell: a program
 * ^C ended ends its loops, as in the interactive shell. */
static int ends_loops_on_ctrl_c;

/* ---- Jobs -------------------------------------------------------------- */

static int stage_of_pid(const struct job *job, pid_t pid)
{
	for (int s = 0; job->used && s < job->count; s++)
		if (job->pids[s] == pid)
			return s;
	return -1;
}

static struct job *job_of_pid(pid_t pid, int *stage)
{
	if ((*stage = stage_of_pid(&foreground_job, pid)) >= 0)
		return &foreground_job;
	for (int j = 0; j < MAX_JOBS; j++)
		if ((*stage = stage_of_pid(&jobs[j], pid)) >= 0)
			return &jobs[j];
	return NULL;
}

static int job_number(const struct job *job)
{
	return (int)(job - jobs) + 1;
}

static void start_job(struct job *job, const char *text)
{
	memset(job, 0, sizeof *job);
	job->used = 1;
	snprintf(job->text, sizeof job->text, "%s", text);
}

/* A slot in the table for a background job, or NULL when all are taken. */
static struct job *new_job(const char *text)
{
	for (int j = 0; j < MAX_JOBS; j++) {
		if (!jobs[j].used) {
			start_job(&jobs[j], text);
			return &jobs[j];
		}
	}
	return NULL;
}

/* The kernel's number of signal sig, or sig itself when the kernel has no
 * name for it (rather than -1). */
static int linux_signal(int sig)
{
	int linux_sig = ms_signal_to_linux(sig);
	return linux_sig < 0 ? sig : linux_sig;
}

int status_value(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSTOPPED(status))
		return 128 + linux_signal(WSTOPSIG(status));
	return 128 + linux_signal(WTERMSIG(status));
}

/* Records what waitpid said about pid. */
static void note_status(pid_t pid, int status)
{
	int stage;
	struct job *job = job_of_pid(pid, &stage);
	if (!job)
		return;
	if (WIFSTOPPED(status)) {
		job->stopped = 1;
	} else {
		job->running--;
		job->pids[stage] = -job->pids[stage]; /* ended: no longer matches */
	}
	if (stage == job->count - 1)
		job->status = status;
}

static void report_job(struct job *job, const char *what)
{
	fprintf(stderr, "[%d] %s  %s\n", job_number(job), what, job->text);
}

static void gave_back_console(void)
{
	if (interactive)
		tcsetpgrp(0, shell_pgid);
}

/* Waits until every stage of job ended or one stopped. */
static void wait_for_stages(struct job *job)
{
	job->stopped = 0;
	while (job->running > 0 && !job->stopped) {
		int status;
		/* Any child: a stage that ended before it joined the group is still ours. */
		pid_t pid = waitpid(-1, &status, interactive ? WUNTRACED : 0);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break;
		note_status(pid, status);
	}
	gave_back_console();
}

/* The stopped foreground job moves into the table, so that fg and bg find
 * it; the slot it takes, or NULL (then it was continued, as there is no way
 * to name it). */
static struct job *keep_stopped(struct job *job)
{
	struct job *slot = new_job(job->text);
	if (!slot) {
		fprintf(stderr, "sh: %d jobs already: continuing %s\n", MAX_JOBS, job->text);
		if (interactive)
			tcsetpgrp(0, job->pgid);
		kill(-job->pgid, SIGCONT);
		return NULL;
	}
	*slot = *job;
	job->used = 0;
	return slot;
}

/* Waits until every stage of job ended or one stopped (then the job stays). */
static void wait_job(struct job *job)
{
	wait_for_stages(job);
	while (job == &foreground_job && job->stopped) {
		struct job *slot = keep_stopped(job);
		if (slot) {
			job = slot;
			break;
		}
		wait_for_stages(job);
	}
	last_status = status_value(job->status);
	if (job->stopped) {
		last_status = 128 + linux_signal(SIGTSTP);
		report_job(job, "stopped");
		return;
	}
	/* A job whose reader went away (SIGPIPE) is no news, as in bash. */
	if (WIFSIGNALED(job->status) && WTERMSIG(job->status) != SIGINT &&
	    WTERMSIG(job->status) != SIGPIPE)
		fprintf(stderr, "killed by signal %d\n", linux_signal(WTERMSIG(job->status)));
	if (WIFSIGNALED(job->status) && WTERMSIG(job->status) == SIGINT) {
		putchar('\n');
		if (interactive || ends_loops_on_ctrl_c)
			run_interrupted(); /* the loop it ran in ends too */
	}
	job->used = 0;
}

static void report_ended(const struct job *job)
{
	if (WIFSIGNALED(job->status))
		fprintf(stderr, "[%d] killed by signal %d  %s\n", job_number(job),
			linux_signal(WTERMSIG(job->status)), job->text);
	else
		fprintf(stderr, "[%d] done, status %d  %s\n", job_number(job),
			WEXITSTATUS(job->status), job->text);
}

/* Reaps background children without blocking; an interactive shell says
 * which jobs ended.  Frees the ended jobs' slots. */
static void reap_background(void)
{
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG | (interactive ? WUNTRACED : 0))) > 0)
		note_status(pid, status);
	for (int j = 0; j < MAX_JOBS; j++) {
		struct job *job = &jobs[j];
		if (!job->used || job->running > 0)
			continue;
		if (interactive) /* a script's background jobs end silently */
			report_ended(job);
		job->used = 0;
	}
}

/* `%N`, `N` or nothing (the most recent job). */
static struct job *find_job(int argc, char **argv, const char *who)
{
	if (argc < 2) {
		for (int j = MAX_JOBS - 1; j >= 0; j--)
			if (jobs[j].used)
				return &jobs[j];
		fprintf(stderr, "%s: no current job\n", who);
		return NULL;
	}
	const char *spec = argv[1][0] == '%' ? argv[1] + 1 : argv[1];
	int n = atoi(spec);
	if (n < 1 || n > MAX_JOBS || !jobs[n - 1].used) {
		fprintf(stderr, "%s: %s: no such job\n", who, argv[1]);
		return NULL;
	}
	return &jobs[n - 1];
}

/* What a session's end does to them (the console's hang-up): each stopped
 * job hears SIGHUP, then SIGCONT so that it acts on it (one ignoring SIGHUP
 * runs on).  Done when the shell ends or execs, so that no job is left
 * stopped with no shell to continue it.  Only the shell's own process owns
 * the table: a pipeline stage's copy is left alone. */
static void hang_up_stopped_jobs(void)
{
	if (getpid() != shell_process)
		return;
	for (int j = 0; j < MAX_JOBS; j++) {
		if (jobs[j].used && jobs[j].stopped) {
			kill(-jobs[j].pgid, SIGHUP);
			kill(-jobs[j].pgid, SIGCONT);
			jobs[j].stopped = 0; /* should the exec fail, the job runs on */
		}
	}
}

/* ---- Builtins ---------------------------------------------------------- */

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
	hang_up_stopped_jobs();
	fflush(stdout);
	exit(argc > 1 ? atoi(argv[1]) : last_status);
}

/* NAME=value as a command: sets a shell variable (kept in the environment);
 * before a command's name: in that command's environment only. */
static int is_assignment(const char *word)
{
	const char *equals = strchr(word, '=');
	return equals && is_name(word, equals);
}

/* export NAME=value sets and exports; export NAME has nothing to do, as
 * every shell variable is in the environment already. */
static int builtin_export(int argc, char **argv)
{
	int status = 0;
	for (int i = 1; i < argc; i++) {
		if (is_assignment(argv[i])) {
			putenv(strdup(argv[i]));
		} else if (!is_name(argv[i], argv[i] + strlen(argv[i]))) {
			fprintf(stderr, "export: %s: not a variable name\n", argv[i]);
			status = 1;
		}
	}
	return status;
}

/* Jobs that ended while the shell waited for another are reported (and
 * dropped) first, never listed as running. */
static int builtin_jobs(int argc, char **argv)
{
	reap_background();
	for (int j = 0; j < MAX_JOBS; j++)
		if (jobs[j].used)
			printf("[%d] %-8s %d  %s\n", j + 1, jobs[j].stopped ? "stopped" : "running",
			       (int)jobs[j].pgid, jobs[j].text);
	return 0;
}

/* Continues job (SIGCONT to its group); in the foreground, waits for it. */
static int continue_job(struct job *job, int foreground)
{
	if (foreground && interactive)
		tcsetpgrp(0, job->pgid);
	if (kill(-job->pgid, SIGCONT) < 0 && errno != ESRCH)
		fprintf(stderr, "sh: continue %d: %s\n", (int)job->pgid, strerror(errno));
	job->stopped = 0;
	if (!foreground) {
		report_job(job, "running");
		return 0;
	}
	printf("%s\n", job->text);
	wait_job(job);
	return last_status;
}

static int builtin_fg(int argc, char **argv)
{
	struct job *job = find_job(argc, argv, "fg");
	return job ? continue_job(job, 1) : 1;
}

static int builtin_bg(int argc, char **argv)
{
	struct job *job = find_job(argc, argv, "bg");
	return job ? continue_job(job, 0) : 1;
}

static int builtin_true(int argc, char **argv)
{
	return 0;
}

static int builtin_false(int argc, char **argv)
{
	return 1;
}

#define JOB_SIGNAL_COUNT 4

static void set_signals(void (*action)(int), struct sigaction *old);
static void restore_signals(const struct sigaction *old);

/* Why execve of path would fail before it loads anything: 0 for a
 * regular file the shell may execute that starts as an ELF file does, else
 * the errno execve gives (ENOENT, EACCES, EISDIR, ENOEXEC, ...).  A file
 * the shell may run but not read passes: only execve can tell then. */
static int unrunnable(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return errno;
	if (S_ISDIR(st.st_mode))
		return EISDIR;
	if (!S_ISREG(st.st_mode))
		return EACCES;
	if (access(path, X_OK) < 0)
		return errno;
	char magic[4];
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, magic, sizeof magic);
	close(fd);
	return n == sizeof magic && memcmp(magic, "\177ELF", 4) == 0 ? 0 : ENOEXEC;
}

/* Where exec finds name: itself when it holds a '/', else the first PATH
 * directory (default /bin:/sbin) holding a program of that name; like
 * execvp, it passes over a directory or a file it cannot run.  Returns 0,
 * or why nothing runnable was found (ENOENT when nothing was there). */
static int find_program(const char *name, char *path, size_t size)
{
	if (strchr(name, '/')) {
		if ((size_t)snprintf(path, size, "%s", name) >= size)
			return ENAMETOOLONG;
		return unrunnable(path);
	}
	const char *dirs = getenv("PATH");
	if (!dirs || !*dirs)
		dirs = "/bin:/sbin";
	int error = ENOENT;
	while (*dirs) {
		int length = (int)strcspn(dirs, ":");
		if ((size_t)snprintf(path, size, "%.*s/%s", length, dirs, name) < size) {
			int why = unrunnable(path);
			if (why == 0)
				return 0;
			if (why != ENOENT && why != ENOTDIR)
				error = why;
		}
		dirs += length + (dirs[length] == ':');
	}
	return error;
}

/* Runs path (found runnable by find_program) in the shell's place with the
 * signal actions a child gets.  They are reset only now, after the search,
 * so that a ^C during a failing search never reaches an interactive shell;
 * if execve fails, the shell's own actions are put back.  Stopped jobs are
 * hung up just before execve, once the shell has seen every stop (a job
 * may have stopped since the last prompt); execve fails after that only
 * for a file that starts as an ELF file but cannot be loaded, or for want
 * of memory, and the shell then goes on without those jobs.  Returns only
 * when execve failed, with errno set. */
static void replace_shell(const char *path, char **argv)
{
	struct sigaction shell_actions[JOB_SIGNAL_COUNT];
	reap_background();
	hang_up_stopped_jobs();
	fflush(stdout);
	fflush(stderr);
	if (interactive)
		set_signals(SIG_DFL, shell_actions);
	execve(path, argv, environ);
	int error = errno;
	if (interactive)
		restore_signals(shell_actions);
	errno = error;
}

/* exec CMD [ARGS]: the shell becomes CMD, in the same process (its pid,
 * group and descriptors, redirections applied), with the signal actions a
 * child gets; stopped jobs are hung up first, as at the shell's exit, once
 * CMD is found runnable.  If it is not, an interactive shell says why and
 * goes on (its jobs untouched); any other shell
 * ends with 127 or 126, as POSIX asks.  Without CMD its redirections stay
 * the shell's (run_pipeline). */
static int builtin_exec(int argc, char **argv)
{
	if (argc < 2)
		return 0;
	char path[256];
	int error = find_program(argv[1], path, sizeof path);
	if (error == 0) {
		replace_shell(path, argv + 1);
		error = errno;
	}
	int status = error == ENOENT ? 127 : 126;
	fprintf(stderr, "sh: %s: %s\n", argv[1], strerror(error));
	if (!interactive)
		_exit(status);
	return status;
}

static int builtin_help(int argc, char **argv);

static const struct builtin {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
} builtins[] = {
    {"cd", builtin_cd, "cd [dir]        change directory (default $HOME)"},
    {"pwd", builtin_pwd, "pwd             print the working directory"},
    {"export", builtin_export, "export N=V ...  set environment variables (or N=V alone)"},
    {"jobs", builtin_jobs, "jobs            the background and stopped jobs"},
    {"fg", builtin_fg, "fg [%n]         continue a job in the foreground"},
    {"bg", builtin_bg, "bg [%n]         continue a stopped job in the background"},
    {"true", builtin_true, "true, false     succeed, fail"},
    {"false", builtin_false, NULL},
    {"exec", builtin_exec, "exec cmd [arg]  become cmd (same pid, redirections kept)"},
    {"exit", builtin_exit, "exit [code]     leave the shell"},
    {"break", builtin_break, "break [n]       leave the (n-th) loop around"},
    {"continue", builtin_continue, "continue [n]    go on with the loop's (n-th) next round"},
    {"help", builtin_help, "help            this list"},
};

static int builtin_help(int argc, char **argv)
{
	puts("Lines: `a; b`, `a && b`, `a || b`, `a | b`, `a &`; redirections `< f`, `> f`,");
	puts("`>> f`, `>&2`, a digit before one for another descriptor (`2> f`, `2>&1`);");
	puts("quotes '...' and \"...\"; $NAME, $?, $$, $!, $#, $0..$9, $(cmd), `cmd`; # comments;");
	puts("wildcards * ? [a-z]; if/then/elif/else/fi, while/until/do/done, for N in W; do ...");
	puts("^C interrupts and ^Z stops the foreground job.  Programs are in /bin; builtins:");
	for (unsigned i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (builtins[i].help)
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

/* ---- Running ----------------------------------------------------------- */

/* Applies cmd's redirections.  Returns 0, or -1 after saying why. */
static int apply_redirects(const struct command *cmd)
{
	for (int i = 0; i < cmd->redirect_count; i++) {
		const struct redirect *r = &cmd->redirects[i];
		int fd = r->flags < 0 ? dup(r->from_fd) : open(r->path, r->flags, 0644);
		if (fd < 0) {
			fprintf(stderr, "sh: %s: %s\n", r->path ? r->path : "dup", strerror(errno));
			return -1;
		}
		if (fd != r->fd) {
			dup2(fd, r->fd);
			close(fd);
		}
	}
	return 0;
}

static const int job_signals[JOB_SIGNAL_COUNT] = {SIGINT, SIGTSTP, SIGTTOU, SIGTTIN};

/* Sets the job-control signals' action; their old actions go to old (an
 * array of JOB_SIGNAL_COUNT) unless it is NULL. */
static void set_signals(void (*action)(int), struct sigaction *old)
{
	struct sigaction sa = {0};
	sa.sa_handler = action;
	for (int i = 0; i < JOB_SIGNAL_COUNT; i++)
		sigaction(job_signals[i], &sa, old ? &old[i] : NULL);
}

static void restore_signals(const struct sigaction *old)
{
	for (int i = 0; i < JOB_SIGNAL_COUNT; i++)
		sigaction(job_signals[i], &old[i], NULL);
}

/* How many of cmd's first words are NAME=value: they go into the
 * command's environment (`FOO=bar cmd`). */
static int assignment_count(const struct command *cmd)
{
	int count = 0;
	while (count < cmd->argc && is_assignment(cmd->argv[count]))
		count++;
	return count;
}

/* Sets count NAME=value words in the environment; what they replace goes
 * to saved (NULL: it was unset) for restore_assignments. */
static void set_assignments(char **words, int count, char **saved)
{
	for (int i = 0; i < count; i++) {
		char *equals = strchr(words[i], '=');
		*equals = '\0';
		const char *old = getenv(words[i]);
		saved[i] = old ? strdup(old) : NULL;
		setenv(words[i], equals + 1, 1);
		*equals = '=';
	}
}

static void restore_assignments(char **words, int count, char **saved)
{
	for (int i = count - 1; i >= 0; i--) {
		char *equals = strchr(words[i], '=');
		*equals = '\0';
		if (saved[i])
			setenv(words[i], saved[i], 1);
		else
			unsetenv(words[i]);
		*equals = '=';
		free(saved[i]);
	}
}

#define NOT_SAVED  (-2) /* the builtin leaves the descriptor alone */
#define WAS_CLOSED (-1) /* it opens a descriptor that was closed */

/* Keeps a close-on-exec copy of fd in saved[fd] (not for a program exec
 * puts in the shell's place), above every descriptor a redirection names,
 * so that no redirection of the builtin replaces the copy itself. */
static int save_descriptor(int fd, int *saved)
{
	if (saved[fd] != NOT_SAVED)
		return 0;
	saved[fd] = fcntl(fd, F_DUPFD_CLOEXEC, FIRST_SPARE_FD);
	if (saved[fd] >= 0 || errno == EBADF)
		return 0; /* a copy, or WAS_CLOSED */
	saved[fd] = NOT_SAVED;
	return -1;
}

/* Saves 0-2 and every descriptor cmd's redirections replace; -1 (errno
 * set) when an open one could not be copied, so could not be put back. */
static int save_descriptors(const struct command *cmd, int saved[REDIRECT_FDS])
{
	int result = 0;
	for (int fd = 0; fd < REDIRECT_FDS; fd++)
		saved[fd] = NOT_SAVED;
	for (int fd = 0; fd < 3; fd++)
		result |= save_descriptor(fd, saved);
	for (int i = 0; i < cmd->redirect_count; i++)
		result |= save_descriptor(cmd->redirects[i].fd, saved);
	return result;
}

static void restore_descriptors(const int saved[REDIRECT_FDS])
{
	for (int fd = 0; fd < REDIRECT_FDS; fd++) {
		if (saved[fd] >= 0) {
			dup2(saved[fd], fd);
			close(saved[fd]);
		} else if (saved[fd] == WAS_CLOSED) {
			close(fd);
		}
	}
}

/* Runs a builtin in the shell with its redirections and its leading
 * assignments, then puts the descriptors and the variables back. */
static int run_builtin_here(const struct builtin *builtin, struct command *cmd)
{
	int saved[REDIRECT_FDS], assignments = assignment_count(cmd);
	char *saved_values[MAX_WORDS];
	if (save_descriptors(cmd, saved) < 0) {
		fprintf(stderr, "sh: %s: cannot keep the shell's descriptors: %s\n", cmd->argv[0],
			strerror(errno));
		restore_descriptors(saved);
		return 1;
	}
	fflush(stdout);
	set_assignments(cmd->argv, assignments, saved_values);
	int status = apply_redirects(cmd) < 0
			 ? 1
			 : builtin->run(cmd->argc - assignments, cmd->argv + assignments);
	restore_assignments(cmd->argv, assignments, saved_values);
	fflush(stdout);
	fflush(stderr);
	restore_descriptors(saved);
	return status;
}

/* Puts /dev/null at fd (a redirection of the command may still replace
 * it). */
static void read_nothing_on(int fd)
{
	int null = open("/dev/null", O_RDONLY);
	if (null >= 0 && null != fd) {
		dup2(null, fd);
		close(null);
	}
}

/* In the child of a compound stage (redirections applied): runs it as a
 * shell of its own.  Forked by an interactive shell, it is one job whose
 * program ^C ended: that ends the loop here too, and the child then ends
 * by SIGINT itself, as the job it is, whether or not the ^C reached it. */
static void run_compound_stage(struct command *cmd)
{
	int job_of_the_console = interactive;
	become_subshell();
	ends_loops_on_ctrl_c = job_of_the_console;
	int status = run_node(cmd->compound);
	fflush(stdout);
	if (job_of_the_console && run_was_interrupted()) {
		signal(SIGINT, SIG_DFL);
		kill(getpid(), SIGINT);
	}
	_exit(status);
}

/* In the child of one stage: group, signals, descriptors, then exec.
 * Without job control a background job reads /dev/null unless it
 * redirects its input: the commands after it are the shell's to read. */
static void run_stage(struct command *cmd, pid_t pgid, int in_fd, int out_fd, int background)
{
	if (interactive) {
		setpgid(0, pgid);
		/* The job may read the console before the shell hands it over: a
		 * foreground stage takes it itself (SIGTTOU is still ignored). */
		if (!background)
			tcsetpgrp(0, pgid ? pgid : getpid());
		set_signals(SIG_DFL, NULL);
	} else if (background) {
		struct sigaction ignore = {0};
		ignore.sa_handler = SIG_IGN;
		sigaction(SIGINT, &ignore, NULL);
		if (in_fd == 0)
			read_nothing_on(0); /* the script's lines are the shell's (POSIX) */
	}
	if (in_fd != 0) {
		dup2(in_fd, 0);
		close(in_fd);
	}
	if (out_fd != 1) {
		dup2(out_fd, 1);
		close(out_fd);
	}
	if (apply_redirects(cmd) < 0)
		_exit(1);
	if (cmd->compound)
		run_compound_stage(cmd);
	char *replaced[MAX_WORDS];
	int assignments = assignment_count(cmd);
	set_assignments(cmd->argv, assignments, replaced);
	char **argv = cmd->argv + assignments;
	int argc = cmd->argc - assignments;
	if (argc == 0)
		_exit(0);
	const struct builtin *builtin = find_builtin(argv[0]);
	if (builtin) {
		int status = builtin->run(argc, argv);
		fflush(stdout);
		_exit(status);
	}
	execvp(argv[0], argv);
	fprintf(stderr, "sh: %s: %s\n", argv[0], strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

/* Forks every stage into job (one process group).  Returns how many started. */
static int start_pipeline(struct pipeline *pl, struct job *job, int background)
{
	int in_fd = 0;
	fflush(stdout);
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
			run_stage(&pl->stages[i], job->count ? job->pgid : 0, in_fd, fds[1],
				  background);
		}
		if (pid > 0) {
			if (!job->count)
				job->pgid = interactive ? pid : getpgrp();
			if (interactive)
				setpgid(pid,
					job->pgid); /* as the child does: whichever runs first */
			job->pids[job->count++] = pid;
			job->running++;
		} else {
			fprintf(stderr, "sh: fork: %s\n", strerror(errno));
		}
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
	return job->count;
}

/* Runs a compound command in the shell itself (its variables stay set),
 * with its redirections for the time it runs. */
static int run_compound_here(struct command *cmd)
{
	int saved[REDIRECT_FDS];
	if (cmd->redirect_count == 0)
		return run_node(cmd->compound);
	if (save_descriptors(cmd, saved) < 0) {
		fprintf(stderr, "sh: cannot keep the shell's descriptors: %s\n", strerror(errno));
		restore_descriptors(saved);
		return last_status = 1;
	}
	fflush(stdout);
	if (apply_redirects(cmd) < 0)
		last_status = 1;
	else
		run_node(cmd->compound);
	fflush(stdout);
	fflush(stderr);
	restore_descriptors(saved);
	return last_status;
}

void run_pipeline(struct pipeline *pl, int background, const char *text)
{
	struct command *first = &pl->stages[0];
	if (first->compound && pl->count == 1 && !background) {
		last_status = run_compound_here(first);
		return;
	}
	int assignments = assignment_count(first);
	if (pl->count == 1 && assignments == first->argc && !first->compound) {
		for (int i = 0; i < assignments; i++)
			putenv(strdup(first->argv[i]));
		/* no command: a substitution's status, as POSIX asks */
		last_status = substitution_status >= 0 ? substitution_status : 0;
		return;
	}
	const struct builtin *builtin =
	    assignments < first->argc ? find_builtin(first->argv[assignments]) : NULL;
	if (builtin && builtin->run == builtin_exec && first->argc == assignments + 1 &&
	    pl->count == 1 && !background) {
		/* `exec > f`: the redirections are the shell's from now on */
		fflush(stdout);
		fflush(stderr);
		last_status = apply_redirects(first) < 0 ? 1 : 0;
		return;
	}
	if (builtin && pl->count == 1 && !background) {
		last_status = run_builtin_here(builtin, first);
		return;
	}
	struct job *job = background ? new_job(text) : &foreground_job;
	if (!job) {
		fprintf(stderr, "sh: %d background jobs already\n", MAX_JOBS);
		last_status = 1;
		return;
	}
	if (!background)
		start_job(job, text);
	if (!start_pipeline(pl, job, background)) {
		job->used = 0;
		last_status = 1;
		return;
	}
	if (background) {
		/* a job's group when there is job control; else (the job is in the
		 * shell's group) its pid, as $! */
		last_background_pid = job->pids[job->count - 1];
		fprintf(stderr, "[%d] %d\n", job_number(job),
			(int)(interactive ? job->pgid : last_background_pid));
		last_status = 0;
		return;
	}
	if (interactive)
		tcsetpgrp(0, job->pgid);
	wait_job(job);
}

/* Parses text (lines numbered from first_line) and runs it; a syntax
 * error runs nothing and gives 2. */
static void parse_and_run(const char *text, int first_line)
{
	struct node *program;
	enum parse_result result = parse_program(text, first_line, &program);
	if (result == PARSE_INCOMPLETE) {
		int line;
		const char *word = parse_open_word(&line);
		parse_report(line, "`%s' is not closed at the end of the input", word);
	}
	if (result != PARSE_COMPLETE) {
		last_status = 2;
		return;
	}
	run_reset();
	run_node(program);
}

/* Each line of text must be within the limit, and the whole within the
 * limit of a command. */
static int text_fits(const char *text)
{
	if (strlen(text) > COMMAND_MAX_BYTES) {
		fprintf(stderr, "sh: a command over %d bytes\n", COMMAND_MAX_BYTES);
		return 0;
	}
	for (const char *line = text; *line;) {
		size_t length = strcspn(line, "\n");
		if (length > LINE_MAX_BYTES) {
			fprintf(stderr, "sh: line too long\n");
			return 0;
		}
		line += length + (line[length] == '\n');
	}
	return 1;
}

int run_string(const char *text)
{
	if (!text_fits(text))
		last_status = 2;
	else
		parse_and_run(text, 1);
	return last_status;
}

void become_subshell(void)
{
	if (interactive) {
		/* ^C ends the substitution; ^Z, ignored, never stops it unseen */
		struct sigaction fallback = {0};
		fallback.sa_handler = SIG_DFL;
		sigaction(SIGINT, &fallback, NULL);
	}
	interactive = 0;
	memset(jobs, 0, sizeof jobs);
	shell_process = getpid();
}

/* ---- Reading commands -------------------------------------------------- */

/* The builtins' names, for Tab completion. */
static const char *const *builtin_names(void)
{
	static const char *names[sizeof(builtins) / sizeof(builtins[0]) + 1];
	for (unsigned i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		names[i] = builtins[i].name;
	return names;
}

/* The interactive prompt and line: edited when the console allows it;
 * "> " for a line that goes on with an open compound command.  Returns the
 * line's length, -1 at end of input, EDIT_INTERRUPTED after ^C. */
static int read_interactive(struct input *in, char *line, size_t size, int continuing)
{
	char cwd[256], prompt[300];
	if (continuing) {
		snprintf(prompt, sizeof prompt, "> ");
	} else {
		reap_background();
		snprintf(prompt, sizeof prompt, "%s$ ", getcwd(cwd, sizeof(cwd)) ? cwd : "?");
	}
	fflush(stdout);
	int n = edit_line(prompt, builtin_names(), line, size);
	if (n >= 0) {
		edit_remember(line);
		return n;
	}
	if (n != EDIT_NOT_A_TERMINAL)
		return n;
	fputs(prompt, stdout);
	fflush(stdout);
	return input_read_line(in, line, size);
}

/* After read_line filled line with length bytes: when they hold no newline
 * and fill it, the line was longer than the limit.  Its rest is read and
 * dropped (so that its tail never runs as a command of its own); returns 1
 * then, else 0. */
static int dropped_long_line(struct input *in, const char *line, size_t length, size_t size)
{
	if (length + 1 < size || line[length - 1] == '\n')
		return 0;
	int c;
	while ((c = input_next_byte(in)) != EOF && c != '\n')
		;
	input_give_back(in);
	return 1;
}

/* Why line must be refused: one over the limit (its rest read and
 * dropped) or one holding a NUL byte, which no command can be given (a word
 * would end at it and the line's tail would be lost unseen); else NULL. */
static const char *line_refusal(struct input *in, const char *line, size_t length, size_t size)
{
	if (dropped_long_line(in, line, length, size))
		return "line too long";
	if (memchr(line, '\0', length))
		return "a NUL byte in a line";
	return NULL;
}

/* The command being read: a compound command spans lines, so lines are
 * added until it parses whole.  A refused command's lines are dropped until
 * the compound commands it opened close (skipping), never run. */
static struct {
	char text[COMMAND_MAX_BYTES + 1];
	size_t length;
	int first_line;
	int skipping; /* compound commands of a refused command still open */
} pending;
static int line_number;

/* Drops the command being read.  A script goes on dropping its lines
 * until what it opened is closed; an interactive shell starts afresh. */
static void refuse_pending(const char *line)
{
	int depth = parse_depth_change(pending.text) + (line ? parse_depth_change(line) : 0);
	pending.skipping = !interactive && depth > 0 ? depth : 0;
	pending.length = 0;
	pending.text[0] = '\0';
	last_status = 2;
}

/* Adds a line to the command being read; runs the command once whole. */
static void add_line(const char *line, size_t length)
{
	if (pending.length + length > COMMAND_MAX_BYTES) {
		fprintf(stderr, "sh: a command over %d bytes is refused\n", COMMAND_MAX_BYTES);
		refuse_pending(line);
		return;
	}
	if (pending.length == 0)
		pending.first_line = line_number;
	memcpy(pending.text + pending.length, line, length + 1);
	pending.length += length;
	struct node *program;
	enum parse_result result = parse_program(pending.text, pending.first_line, &program);
	if (result == PARSE_INCOMPLETE)
		return;
	if (result == PARSE_ERROR) {
		refuse_pending(NULL);
		return;
	}
	pending.length = 0;
	run_reset();
	run_node(program);
}

/* Takes one line read from the input. */
static void take_line(struct input *in, const char *line, size_t length, size_t size)
{
	const char *refusal = line_refusal(in, line, length, size);
	if (pending.skipping > 0) {
		if (!refusal)
			pending.skipping += parse_depth_change(line);
		return;
	}
	if (refusal) {
		fprintf(stderr, "sh: %s\n", refusal);
		refuse_pending(NULL);
		return;
	}
	add_line(line, length);
}

static int run_file(struct input *in)
{
	char line[LINE_MAX_BYTES + 2];
	counting_lines = !interactive;
	for (;;) {
		int length = interactive
				 ? read_interactive(in, line, sizeof line, pending.length > 0)
				 : input_read_line(in, line, sizeof line);
		if (length == EDIT_INTERRUPTED) {
			pending.length = 0; /* ^C drops the whole command typed */
			continue;
		}
		if (length < 0)
			break;
		line_number++;
		if (!interactive && pending.length == 0)
			reap_background(); /* frees the slots of ended background jobs */
		take_line(in, line, (size_t)length, sizeof line);
	}
	if (pending.length > 0)
		parse_and_run(pending.text, pending.first_line); /* says what is open */
	if (interactive)
		putchar('\n');
	hang_up_stopped_jobs();
	return last_status;
}

/* Opens a script close-on-exec (a daemon it starts, httpd -b, would keep
 * it open for good) at descriptor 10 or above, where no redirection (whose
 * descriptor is one digit) can replace it: `exec 3< f` in a script must not
 * end the script.  Returns the descriptor, or -1 with errno set. */
static int open_script(const char *path)
{
	int opened = open(path, O_RDONLY);
	if (opened < 0)
		return -1;
	int fd = fcntl(opened, F_DUPFD_CLOEXEC, FIRST_SPARE_FD);
	int error = errno;
	close(opened);
	errno = error;
	return fd;
}

/* Job control on the console: a group of our own that owns the terminal. */
static void take_console(void)
{
	if (tcgetpgrp(0) < 0)
		return; /* not the console's session: no job control */
	interactive = 1;
	setpgid(0, 0); /* fails for a session leader, which leads its group already */
	shell_pgid = getpgrp();
	tcsetpgrp(0, shell_pgid);
	set_signals(SIG_IGN, NULL);
}

int main(int argc, char **argv)
{
	shell_process = getpid();
	/* sh: $0 is sh; sh file a b: file, a, b; sh -c line x y: x, y (POSIX) */
	script_argc = argc > 1 ? argc - 1 : 1;
	script_argv = argc > 1 ? argv + 1 : argv;
	if (argc > 2 && strcmp(argv[1], "-c") == 0) {
		script_argc = argc > 3 ? argc - 3 : 1;
		script_argv = argc > 3 ? argv + 3 : argv;
		return run_string(argv[2]);
	}
	if (argc > 1) {
		int fd = open_script(argv[1]);
		if (fd < 0) {
			fprintf(stderr, "sh: %s: %s\n", argv[1], strerror(errno));
			return 127;
		}
		return run_file(input_open(fd, 0));
	}
	if (isatty(0))
		take_console();
	return run_file(input_open(0, 1));
}
