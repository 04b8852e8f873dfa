/*
 * The kshell suite: lines fed through kshell_execute_line, with the console
 * output they produce captured by advice on the "console.write" join point
 * (only the test thread's writes, which the advice also swallows so the test
 * log stays KTAP).  Plus the COM1 receive ring, fed by uart_rx_inject.
 */
#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "kshell/kshell.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "time/time.h"
#include "uart/uart.h"

#define CAPTURE_SIZE 4096

static struct {
	char text[CAPTURE_SIZE];
	size_t length;
	struct thread *thread;
	int handle;
} capture;

static void capture_write(struct jp_context *context, void *cookie)
{
	(void)cookie;
	if (context->thread != capture.thread)
		return;
	const char *text = (const char *)context->args[0];
	size_t length = (size_t)context->args[1];
	for (size_t i = 0; i < length && capture.length + 1 < CAPTURE_SIZE; i++)
		capture.text[capture.length++] = text[i];
	capture.text[capture.length] = '\0';
	context->args[1] = 0; /* swallowed */
}

static const struct jp_advice capture_advice = {
    .name = "kshell-test-capture",
    .before = capture_write,
};

/* Runs line with its output captured; returns the result, or 1 (never a
 * command's result here) when capturing is impossible. */
static int run_captured(struct ktest *t, const char *line)
{
	capture.length = 0;
	capture.text[0] = '\0';
	capture.thread = thread_current();
	capture.handle = jp_attach("console.write", &capture_advice);
	if (capture.handle < 0) {
		ktest_skip(t, "cannot attach to console.write");
		return 1;
	}
	int result = kshell_execute_line(line);
	jp_detach(capture.handle);
	return result;
}

static bool output_has(const char *needle)
{
	size_t n = strlen(needle);
	for (size_t i = 0; i + n <= capture.length; i++) {
		if (!memcmp(capture.text + i, needle, n))
			return true;
	}
	return false;
}

static void help_lists_the_commands(struct ktest *t)
{
	ASSERT_EQ(t, run_captured(t, "help"), 0);
	EXPECT_TRUE(t, output_has("help [command]"));
	EXPECT_TRUE(t, output_has("mem"));
	EXPECT_TRUE(t, output_has("ktest <suite"));
	EXPECT_TRUE(t, output_has("poweroff"));
}

static void help_explains_one_command(struct ktest *t)
{
	ASSERT_EQ(t, run_captured(t, "help uptime"), 0);
	EXPECT_TRUE(t, output_has("usage: uptime"));
	EXPECT_EQ(t, run_captured(t, "help nosuchcommand"), -ENOENT);
}

static void unknown_command_is_reported(struct ktest *t)
{
	EXPECT_EQ(t, run_captured(t, "nonsense 1 2"), -ENOENT);
	EXPECT_TRUE(t, output_has("unknown command 'nonsense'"));
}

static void blank_lines_do_nothing(struct ktest *t)
{
	EXPECT_EQ(t, run_captured(t, ""), 0);
	EXPECT_EQ(t, run_captured(t, "  \t "), 0);
	EXPECT_EQ(t, capture.length, 0);
}

static void wrong_arguments_print_the_usage(struct ktest *t)
{
	EXPECT_EQ(t, run_captured(t, "loglevel 9"), KSHELL_USAGE);
	EXPECT_TRUE(t, output_has("usage: loglevel"));
	EXPECT_EQ(t, run_captured(t, "mem extra"), KSHELL_USAGE);
	EXPECT_EQ(t, run_captured(t, "ktest"), KSHELL_USAGE);
}

static void loglevel_sets_the_console_level(struct ktest *t)
{
	enum log_level saved = console_get_level();
	EXPECT_EQ(t, run_captured(t, "loglevel 3"), 0);
	EXPECT_EQ(t, console_get_level(), LOG_ERR);
	EXPECT_EQ(t, run_captured(t, "loglevel debug"), 0);
	EXPECT_EQ(t, console_get_level(), LOG_DEBUG);
	EXPECT_TRUE(t, output_has("loglevel 7 (debug)"));
	console_set_level(saved);
}

static void quotes_make_one_word(struct ktest *t)
{
	EXPECT_EQ(t, run_captured(t, "echo a   \"b  c\" d"), 0);
	EXPECT_TRUE(t, output_has("a b  c d\n"));
	EXPECT_EQ(t, run_captured(t, "echo \"open"), -EINVAL);
	EXPECT_TRUE(t, output_has("unterminated quote"));
}

static void oversized_lines_are_refused(struct ktest *t)
{
	char line[KSHELL_LINE_MAX + 8];
	memset(line, 'x', sizeof line - 1);
	line[sizeof line - 1] = '\0';
	EXPECT_EQ(t, run_captured(t, line), -E2BIG);
	EXPECT_EQ(t, run_captured(t, "echo 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17"), -E2BIG);
	EXPECT_EQ(t, run_captured(t, NULL), -EINVAL);
}

static void reports_run_and_print(struct ktest *t)
{
	static const char *const lines[] = {"mem", "threads", "cpus", "irqs", "uptime", "version"};
	static const char *const expected[] = {"frames", "thread(s)", "CPU(s) online",
					       "vector", "up ",       "microScope"};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		EXPECT_EQ(t, run_captured(t, lines[i]), 0);
		EXPECT_TRUE(t, output_has(expected[i]));
	}
}

static void ktest_refuses_an_unknown_suite(struct ktest *t)
{
	EXPECT_EQ(t, run_captured(t, "ktest nosuchsuite"), -ENOENT);
}

/* ---- COM1 receive path --------------------------------------------------- */

static void drain_rx(void)
{
	char junk[64];
	while (uart_rx_read(junk, sizeof junk, UART_RX_NONBLOCK) > 0)
		;
}

static void injected_bytes_are_read_back(struct ktest *t)
{
	char buffer[8];
	drain_rx();
	uart_rx_inject("ab", 2);
	int n = uart_rx_read(buffer, sizeof buffer, UART_RX_NONBLOCK);
	if (n == -ENODEV) {
		ktest_skip(t, "no COM1");
		return;
	}
	ASSERT_EQ(t, n, 2);
	EXPECT_TRUE(t, buffer[0] == 'a' && buffer[1] == 'b');
	EXPECT_EQ(t, uart_rx_read(buffer, sizeof buffer, UART_RX_NONBLOCK), 0);
	EXPECT_EQ(t, uart_rx_read(NULL, 1, UART_RX_NONBLOCK), -EINVAL);
}

static int blocking_reader(void *arg)
{
	char byte;
	(void)arg;
	int n = uart_rx_read(&byte, 1, UART_RX_BLOCK);
	return n == 1 ? byte : n;
}

static void blocked_reader_gets_a_byte_or_eintr(struct ktest *t)
{
	int status = 0;
	drain_rx();
	if (uart_rx_read(NULL, 0, UART_RX_NONBLOCK) == -ENODEV) {
		ktest_skip(t, "no COM1");
		return;
	}
	struct thread *reader =
	    thread_create(blocking_reader, NULL, "rx-reader", SCHED_PRIORITY_HIGH);
	ASSERT_TRUE(t, reader != NULL);
	sched_sleep_ns(20 * NSEC_PER_MSEC);
	uart_rx_inject("z", 1);
	ASSERT_EQ(t, thread_join(reader, &status), 0);
	EXPECT_EQ(t, status, 'z');

	reader = thread_create(blocking_reader, NULL, "rx-reader", SCHED_PRIORITY_HIGH);
	ASSERT_TRUE(t, reader != NULL);
	sched_sleep_ns(20 * NSEC_PER_MSEC);
	uart_rx_interrupt_readers();
	ASSERT_EQ(t, thread_join(reader, &status), 0);
	EXPECT_EQ(t, status, -EINTR);
}

static char handled[8];
static size_t handled_count;

static void collect_byte(char byte, void *ctx)
{
	(void)ctx;
	if (handled_count < sizeof handled)
		handled[handled_count++] = byte;
}

static void rx_handler_takes_every_byte(struct ktest *t)
{
	char buffer[4];
	drain_rx();
	handled_count = 0;
	EXPECT_EQ(t, uart_set_rx_handler(collect_byte, NULL), 0);
	uart_rx_inject("xyz", 3);
	EXPECT_EQ(t, uart_set_rx_handler(NULL, NULL), 0);
	EXPECT_EQ(t, handled_count, 3);
	EXPECT_TRUE(t, !memcmp(handled, "xyz", 3));
	int n = uart_rx_read(buffer, sizeof buffer, UART_RX_NONBLOCK);
	EXPECT_TRUE(t, n == 0 || n == -ENODEV);
}

/* A captured line: its prints land in the buffer, cut at its size and always
 * terminated, and the result is the command's. */
static void captured_lines_print_into_the_buffer(struct ktest *t)
{
	char output[64];
	EXPECT_EQ(t, kshell_execute_captured("echo captured words", output, sizeof output), 0);
	EXPECT_EQ(t, strcmp(output, "captured words\n"), 0);
	char small[8];
	EXPECT_EQ(t, kshell_execute_captured("echo a long line of words", small, sizeof small), 0);
	EXPECT_EQ(t, strcmp(small, "a long "), 0);
	EXPECT_EQ(t, kshell_execute_captured("no-such-command", output, sizeof output), -ENOENT);
	EXPECT_EQ(t, kshell_execute_captured("echo x", NULL, 4), -EINVAL);
}

KTEST_SUITE(kshell, KTEST_CASE(help_lists_the_commands), KTEST_CASE(help_explains_one_command),
	    KTEST_CASE(unknown_command_is_reported), KTEST_CASE(blank_lines_do_nothing),
	    KTEST_CASE(wrong_arguments_print_the_usage),
	    KTEST_CASE(loglevel_sets_the_console_level), KTEST_CASE(quotes_make_one_word),
	    KTEST_CASE(oversized_lines_are_refused), KTEST_CASE(reports_run_and_print),
	    KTEST_CASE(ktest_refuses_an_unknown_suite), KTEST_CASE(injected_bytes_are_read_back),
	    KTEST_CASE(blocked_reader_gets_a_byte_or_eintr),
	    KTEST_CASE(rx_handler_takes_every_byte),
	    KTEST_CASE(captured_lines_print_into_the_buffer));
