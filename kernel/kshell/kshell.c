/*
 * The shell proper: running a line (split, look the command up in the
 * .kshell.commands section, call it, report errors) and the thread that reads
 * the serial console through the line editor.
 *
 * The thread is created once and never ends.  kshell_stop marks the shell
 * stopped and interrupts the thread's blocking read; the thread then sleeps on
 * state_queue until kshell_start marks it running again, so at most one reader
 * of the console ever belongs to the shell.  Running a line keeps no state
 * outside its own stack frame, so tests may call kshell_execute_line from any
 * thread while the shell thread waits for input.
 */
#include "kshell/internal.h"

#include <stdarg.h>

#include "boot/cmdline.h"
#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "uart/uart.h"

enum kshell_mode { KSHELL_MODE_DEFAULT, KSHELL_MODE_FORCED, KSHELL_MODE_OFF };

static struct {
	struct thread *thread;       /* NULL until the first kshell_start */
	volatile bool running;       /* reading the console */
	enum kshell_mode mode;       /* from the `kshell` parameter */
	struct kshell_editor editor; /* the shell thread's only */
} shell;

static struct waitq state_queue = WAITQ_INIT(state_queue, "kshell-state");

static int set_kshell(const char *value)
{
	if (!value || !strcmp(value, "on"))
		shell.mode = KSHELL_MODE_FORCED;
	else if (!strcmp(value, "off"))
		shell.mode = KSHELL_MODE_OFF;
	else
		return -1;
	return 0;
}
KERNEL_PARAM(kshell, set_kshell,
	     "[on]|off: keep the kernel shell on the console even when init "
	     "runs, or never start it");

void kshell_print(const char *format, ...)
{
	char buffer[512];
	va_list args;
	va_start(args, format);
	int n = vsnprintf(buffer, sizeof buffer, format, args);
	va_end(args);
	console_write(buffer, n < (int)sizeof buffer ? (size_t)n : sizeof buffer - 1);
}

const struct kshell_command *kshell_find_command(const char *name)
{
	for (const struct kshell_command *c = __kshell_commands_start; c < __kshell_commands_end;
	     c++) {
		if (!strcmp(c->name, name))
			return c;
	}
	return NULL;
}

static const char *error_name(int error)
{
	switch (error) {
	case -ENOENT: return "no such thing";
	case -EINVAL: return "invalid argument";
	case -E2BIG: return "too long";
	case -ENOMEM: return "out of memory";
	case -EBUSY: return "busy";
	case -EPERM: return "not permitted";
	case -ENODEV: return "no such device";
	case -EIO: return "input/output error";
	default: return "error";
	}
}

/* Runs argv[0]; reports a rejected argument list or an error. */
static int dispatch(int argc, char **argv)
{
	const struct kshell_command *command = kshell_find_command(argv[0]);
	if (!command) {
		kshell_print("kshell: unknown command '%s' (type help)\n", argv[0]);
		return -ENOENT;
	}
	int result = command->handler(argc, argv);
	if (result == KSHELL_USAGE)
		kshell_print("usage: %s\n", command->usage);
	else if (result < 0)
		kshell_print("%s: %s (%d)\n", argv[0], error_name(result), result);
	return result;
}

/* "kshell.execute_line": every command, typed or fed by a test, passes here. */
JOINPOINT_DEFINE(kshell, execute_line, int, const char *, line)
{
	char copy[KSHELL_LINE_MAX];
	char *argv[KSHELL_ARGS_MAX + 1];
	if (!line)
		return -EINVAL;
	if (strlen(line) >= sizeof copy) {
		kshell_print("kshell: line longer than %d characters\n", KSHELL_LINE_MAX - 1);
		return -E2BIG;
	}
	strlcpy(copy, line, sizeof copy);
	int argc = kshell_split_words(copy, argv, KSHELL_ARGS_MAX);
	if (argc == -E2BIG)
		kshell_print("kshell: more than %d words\n", KSHELL_ARGS_MAX);
	else if (argc == -EINVAL)
		kshell_print("kshell: unterminated quote\n");
	if (argc <= 0)
		return argc;
	return dispatch(argc, argv);
}

/* ---- The console thread -------------------------------------------------- */

static void echo_to_console(const char *text, size_t length, void *ctx)
{
	(void)ctx;
	console_write(text, length);
}

static bool shell_running(void *arg)
{
	(void)arg;
	return shell.running;
}

/* Feeds the bytes read to the editor, running each finished line. */
static void feed_bytes(const char *bytes, int count)
{
	struct kshell_editor *editor = &shell.editor;
	for (int i = 0; i < count && shell.running; i++) {
		enum kshell_edit_result result = kshell_editor_feed(editor, bytes[i]);
		if (result == KSHELL_EDIT_MORE)
			continue;
		if (result == KSHELL_EDIT_LINE) {
			char line[KSHELL_LINE_MAX];
			strlcpy(line, editor->line, sizeof line);
			kshell_editor_accept(editor);
			kshell_execute_line(line);
		}
		console_write(KSHELL_PROMPT, sizeof KSHELL_PROMPT - 1);
	}
}

static int shell_main(void *arg)
{
	char bytes[64];
	(void)arg;
	kshell_editor_init(&shell.editor, echo_to_console, NULL);
	console_print("kshell: type help for the commands\n" KSHELL_PROMPT);
	for (;;) {
		if (!shell.running) {
			waitq_wait(&state_queue, shell_running, NULL);
			console_write(KSHELL_PROMPT, sizeof KSHELL_PROMPT - 1);
		}
		int count = uart_rx_read(bytes, sizeof bytes, UART_RX_BLOCK);
		if (count == -ENODEV) {
			pr_warn("kshell: no serial console to read, the shell ends\n");
			return count;
		}
		if (count > 0)
			feed_bytes(bytes, count);
	}
}

/* Creates the thread on the first start.  Returns 0 or -ENOMEM. */
static int create_thread(void)
{
	uart_rx_start(); /* without the interrupt, input is polled: fine */
	struct thread *thread = thread_create(shell_main, NULL, "kshell", SCHED_PRIORITY_NORMAL);
	if (!thread)
		return -ENOMEM;
	thread_detach(thread);
	shell.thread = thread;
	return 0;
}

int kshell_start(void)
{
	static struct mutex start_lock = MUTEX_INIT(start_lock, "kshell-start");
	int error = 0;
	if (shell.mode == KSHELL_MODE_OFF)
		return -EPERM;
	mutex_lock(&start_lock);
	shell.running = true;
	if (!shell.thread) {
		error = create_thread();
		if (error < 0)
			shell.running = false;
	}
	mutex_unlock(&start_lock);
	waitq_wake_all(&state_queue);
	return error;
}

int kshell_start_at_boot(enum kshell_boot_console console)
{
	if (console == KSHELL_CONSOLE_IN_USER && shell.mode != KSHELL_MODE_FORCED)
		return 0;
	return kshell_start();
}

int kshell_stop(void)
{
	if (shell.mode == KSHELL_MODE_FORCED)
		return -EPERM;
	shell.running = false;
	uart_rx_interrupt_readers();
	return 0;
}

bool kshell_is_running(void)
{
	return shell.running;
}
