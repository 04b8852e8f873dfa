/*
 * The kernel console: printk with log levels and a timestamp since boot, fanned
 * out to every registered sink (serial, framebuffer, VGA text).  A message is
 * formatted once, then written under one lock so lines from different CPUs
 * never interleave.  During a panic the lock is bypassed.
 *
 *     pr_info("mm: %lu MiB usable\n", usable >> 20);
 *     console_register(&my_sink);
 */
#ifndef KERNEL_CONSOLE_CONSOLE_H
#define KERNEL_CONSOLE_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>

enum log_level {
	LOG_EMERG = 0,
	LOG_ALERT = 1,
	LOG_CRIT = 2,
	LOG_ERR = 3,
	LOG_WARN = 4,
	LOG_NOTICE = 5,
	LOG_INFO = 6,
	LOG_DEBUG = 7,
};

struct console_sink {
	const char *name;
	void (*write)(const char *text, size_t length);
	struct console_sink *next;
};

/* Formats and prints one message if level <= the console level.  Returns the
 * number of characters of the message (without the prefix). */
int printk(enum log_level level, const char *format, ...) __attribute__((format(printf, 2, 3)));

#define pr_emerg(...)  printk(LOG_EMERG, __VA_ARGS__)
#define pr_err(...)    printk(LOG_ERR, __VA_ARGS__)
#define pr_warn(...)   printk(LOG_WARN, __VA_ARGS__)
#define pr_notice(...) printk(LOG_NOTICE, __VA_ARGS__)
#define pr_info(...)   printk(LOG_INFO, __VA_ARGS__)
#define pr_debug(...)  printk(LOG_DEBUG, __VA_ARGS__)

/* Writes text as it is, no prefix, no level filter (KTAP output, the shell). */
void console_write(const char *text, size_t length);
void console_print(const char *format, ...) __attribute__((format(printf, 1, 2)));

void console_register(struct console_sink *sink);
/* Installs (or, with NULL, removes) a filter every console_write passes
 * first: when it returns true it has taken the text, which then reaches no
 * sink (a system call capturing a command's output).  One at a time; it runs
 * under no lock and must not sleep. */
void console_set_capture(bool (*capture)(const char *text, size_t length));
void console_set_level(enum log_level level);
enum log_level console_get_level(void);
/* From now on write without taking the lock: the panic path calls this. */
void console_enter_panic_mode(void);

#endif
