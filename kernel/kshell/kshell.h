/*
 * The kernel shell: a monitor on the serial console for people and for early
 * debugging before user space.  It reads lines (backspace, ^U, ^C, history
 * with the arrow keys), splits them into words and runs the command named by
 * the first word.  Commands live in a linker section, declared where they are
 * implemented; nothing registers at run time.
 *
 *     static int cmd_hello(int argc, char **argv) { kshell_print("hi\n"); return 0; }
 *     KSHELL_COMMAND(hello, cmd_hello, "hello", "say hello");
 *     kshell_execute_line("hello");     // returns what cmd_hello returned
 */
#ifndef KERNEL_KSHELL_KSHELL_H
#define KERNEL_KSHELL_KSHELL_H

#include <stdbool.h>
#include <stddef.h>

#define KSHELL_LINE_MAX 256 /* bytes in one input line, the terminating NUL included */
#define KSHELL_ARGS_MAX 16  /* words in one line, the command name included */
#define KSHELL_PROMPT   "kshell> "

/* A command's body: argv[0] is the command's name, argv[argc] is NULL.
 * Returns 0, or a negative error (the shell prints it); KSHELL_USAGE makes the
 * shell print the command's usage line instead. */
typedef int (*kshell_handler_fn)(int argc, char **argv);
#define KSHELL_USAGE (-1000)

struct kshell_command {
	const char *name;
	kshell_handler_fn handler;
	const char *usage; /* "ktest <suite|all>" */
	const char *help;  /* one line, "run in-kernel test suites now" */
};

/* Declares command `name` (a C identifier, also what the user types) into the
 * .kshell.commands section.  help lists commands in name order. */
#define KSHELL_COMMAND(cmd_name, cmd_handler, cmd_usage, cmd_help)                        \
	static const struct kshell_command kshell_command_##cmd_name                      \
	    __attribute__((section(".kshell.commands." #cmd_name), used, aligned(8))) = { \
		#cmd_name, cmd_handler, cmd_usage, cmd_help}

/* Runs one line as if typed at the prompt (without echo or history).
 * Returns the command's result; 0 for an empty line; -ENOENT for an unknown
 * command; -E2BIG for more than KSHELL_ARGS_MAX words or a line longer than
 * KSHELL_LINE_MAX - 1; -EINVAL for an unterminated quote or a NULL line;
 * KSHELL_USAGE when the command rejected its arguments.  Every error is also
 * reported on the console. */
int kshell_execute_line(const char *line);
/* kshell_execute_line with what the command prints (kshell_print, from the
 * calling thread) put into output (size bytes, always terminated, cut when
 * full) instead of the console.  Returns the command's result, or -EINVAL. */
int kshell_execute_captured(const char *line, char *output, size_t size);

/* Runs fn(arg) with what the calling thread writes to the console while it
 * runs (not interrupt handlers, not other threads) going to buffer instead,
 * size bytes at most (the rest is dropped); stores how much in *length.
 * One capture at a time (callers wait).  Returns fn's result.  Used by
 * ms_kshell (kcmd's output) and ms_scope_ctl (the linker's messages). */
int kshell_capture(int (*fn)(void *arg), void *arg, char *buffer, size_t size, size_t *length);

/* Returns the command named name, or NULL. */
const struct kshell_command *kshell_find_command(const char *name);

/* Writes to the shell's output (the console).  Commands print with these. */
void kshell_print(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* Starts the shell thread reading the serial console, or resumes it after
 * kshell_stop.  Returns 0, -EPERM (the kernel parameter kshell=off) or
 * -ENOMEM (no thread). */
int kshell_start(void);
/* Who owns the console when the boot finishes. */
enum kshell_boot_console {
	KSHELL_CONSOLE_FREE,    /* no init process: the shell takes the console */
	KSHELL_CONSOLE_IN_USER, /* init runs and owns it: the shell only with `kshell` */
};
/* At the end of the boot: starts the shell when the console is free or the
 * `kshell` kernel parameter asks for it.  Returns as kshell_start, or 0 when
 * the shell was left off. */
int kshell_start_at_boot(enum kshell_boot_console console);
/* Makes the shell stop reading the console (user space owns it now): the
 * thread finishes the command it runs and sleeps until kshell_start.  Returns
 * 0, or -EPERM when the `kshell` kernel parameter keeps it running. */
int kshell_stop(void);
/* True when the shell is reading the console right now. */
bool kshell_is_running(void);

#endif
