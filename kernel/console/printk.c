/*
 * printk and the sink list.  Each call formats into a stack buffer (long
 * messages are cut, marked with "..."), prefixes every line with the level's
 * timestamp, and writes the result to each sink under console_lock.  Sinks are
 * only ever added, at boot, so the list is walked without further care.
 */
#include "console/console.h"

#include <stdarg.h>
#include <stdbool.h>

#include "cpu/spinlock.h"
#include "joinpoint/joinpoint.h"
#include "lib/format.h"
#include "time/time.h"

#define PRINTK_BUFFER 512

static struct console_sink *sinks;
static struct spinlock console_lock = SPINLOCK_INIT("console");
static enum log_level console_level = LOG_INFO;
static bool panic_mode;
static bool at_line_start = true;
static bool (*capture_hook)(const char *text, size_t length);

void console_register(struct console_sink *sink)
{
	uint64_t flags = spin_lock_irqsave(&console_lock);
	sink->next = sinks;
	sinks = sink;
	spin_unlock_irqrestore(&console_lock, flags);
}

void console_set_capture(bool (*capture)(const char *text, size_t length))
{
	__atomic_store_n(&capture_hook, capture, __ATOMIC_RELEASE);
}

void console_set_level(enum log_level level)
{
	console_level = level;
}

enum log_level console_get_level(void)
{
	return console_level;
}

void console_enter_panic_mode(void)
{
	panic_mode = true;
}

static void write_sinks(const char *text, size_t length)
{
	for (struct console_sink *sink = sinks; sink; sink = sink->next)
		sink->write(text, length);
}

static void write_locked(const char *text, size_t length)
{
	if (panic_mode) {
		write_sinks(text, length);
		return;
	}
	uint64_t flags = spin_lock_irqsave(&console_lock);
	write_sinks(text, length);
	spin_unlock_irqrestore(&console_lock, flags);
}

/* A join point: "console.write", the one path every console byte takes. */
JOINPOINT_DEFINE_VOID(console, write, const char *, text, size_t, length)
{
	bool (*capture)(const char *, size_t) = __atomic_load_n(&capture_hook, __ATOMIC_ACQUIRE);
	if (capture && !panic_mode && capture(text, length))
		return;
	write_locked(text, length);
	if (length)
		at_line_start = text[length - 1] == '\n';
}

void console_print(const char *format, ...)
{
	char buffer[PRINTK_BUFFER];
	va_list args;
	va_start(args, format);
	int n = vsnprintf(buffer, sizeof buffer, format, args);
	va_end(args);
	console_write(buffer, n < PRINTK_BUFFER ? (size_t)n : PRINTK_BUFFER - 1);
}

/* Copies message into out, starting every line with a timestamp prefix. */
static size_t add_prefixes(char *out, size_t size, const char *message, uint64_t now_ns)
{
	char prefix[24];
	int prefix_length =
	    snprintf(prefix, sizeof prefix, "[%5lu.%06lu] ", (unsigned long)(now_ns / 1000000000),
		     (unsigned long)(now_ns / 1000 % 1000000));
	size_t n = 0;
	bool line_start = at_line_start;

	for (const char *p = message; *p && n + prefix_length + 1 < size; p++) {
		if (line_start) {
			for (int i = 0; i < prefix_length; i++)
				out[n++] = prefix[i];
		}
		out[n++] = *p;
		line_start = *p == '\n';
	}
	return n;
}

int printk(enum log_level level, const char *format, ...)
{
	if (level > console_level)
		return 0;

	char message[PRINTK_BUFFER];
	va_list args;
	va_start(args, format);
	int length = vsnprintf(message, sizeof message, format, args);
	va_end(args);
	if (length >= PRINTK_BUFFER) {
		message[PRINTK_BUFFER - 5] = '.';
		message[PRINTK_BUFFER - 4] = '.';
		message[PRINTK_BUFFER - 3] = '.';
		message[PRINTK_BUFFER - 2] = '\n';
	}

	char line[PRINTK_BUFFER + 128];
	size_t n = add_prefixes(line, sizeof line, message, clock_ns());
	console_write(line, n);
	return length;
}
