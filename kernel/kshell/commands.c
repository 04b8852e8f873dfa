/*
 * The built-in commands.  Each is a thin layer over another module's public
 * API (mm_print_stats, thread_print_all, irq_get_count, ...): a command checks
 * its arguments first, returns KSHELL_USAGE when they are wrong, and only then
 * acts.  Other modules add their own commands with KSHELL_COMMAND next to
 * their code.
 */
#include "kshell/internal.h"

#include <stdint.h>

#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "irq/irq.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "power/power.h"
#include "sched/sched.h"
#include "time/time.h"
#include "uart/uart.h"
#include "version.h"

#define KBD_CONTROLLER_COMMAND 0x64
#define KBD_PULSE_RESET        0xfe

static int cmd_help(int argc, char **argv)
{
	if (argc > 2)
		return KSHELL_USAGE;
	if (argc == 2) {
		const struct kshell_command *command = kshell_find_command(argv[1]);
		if (!command)
			return -ENOENT;
		kshell_print("usage: %s\n  %s\n", command->usage, command->help);
		return 0;
	}
	for (const struct kshell_command *c = __kshell_commands_start; c < __kshell_commands_end;
	     c++)
		kshell_print("  %-28s %s\n", c->usage, c->help);
	return 0;
}
KSHELL_COMMAND(help, cmd_help, "help [command]", "list the commands, or explain one");

static int cmd_version(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("microScope %s x86_64, %u CPU(s), TSC %lu MHz (calibrated against %s)\n",
		     MICROSCOPE_VERSION, cpu_count, clock_tsc_hz() / 1000000, clock_reference());
	return 0;
}
KSHELL_COMMAND(version, cmd_version, "version", "system name, version and machine");
KSHELL_COMMAND(uname, cmd_version, "uname", "the same as version");

static int cmd_echo(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		kshell_print("%s%s", argv[i], i + 1 < argc ? " " : "");
	kshell_print("\n");
	return 0;
}
KSHELL_COMMAND(echo, cmd_echo, "echo [word...]", "print the words");

static int cmd_mem(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	mm_print_stats();
	return 0;
}
KSHELL_COMMAND(mem, cmd_mem, "mem", "memory: frames and kernel heap caches");

static int cmd_threads(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("%u thread(s)\n", thread_count());
	thread_print_all();
	return 0;
}
KSHELL_COMMAND(threads, cmd_threads, "threads", "every thread with its state and times");

static int cmd_irqs(int argc, char **argv)
{
	struct uart_rx_stats rx;
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("vector        count  handler\n");
	for (unsigned vector = IRQ_FIRST_VECTOR; vector < IRQ_VECTORS; vector++) {
		uint64_t count = irq_get_count(vector);
		const char *name = irq_get_name(vector);
		if (count || name)
			kshell_print("  %#4x %12lu  %s\n", vector, count, name ? name : "-");
	}
	uart_rx_get_stats(&rx);
	kshell_print("com1 input: %lu byte(s), %lu dropped, %lu interrupt(s)\n", rx.received,
		     rx.dropped, rx.interrupts);
	return 0;
}
KSHELL_COMMAND(irqs, cmd_irqs, "irqs", "interrupt counts per vector");

static int cmd_uptime(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	uint64_t now = clock_ns();
	kshell_print("up %lu.%06lu s, %lu tick(s) on this CPU at %u Hz\n",
		     (uint64_t)(now / NSEC_PER_SEC), (uint64_t)(now % NSEC_PER_SEC / NSEC_PER_USEC),
		     timer_tick_count(), timer_hz());
	return 0;
}
KSHELL_COMMAND(uptime, cmd_uptime, "uptime", "time since boot");

static const char *const level_names[] = {"emerg", "alert",  "crit", "err",
					  "warn",  "notice", "info", "debug"};

/* Returns the level named by text ("0".."7" or a name), or -EINVAL. */
static int parse_level(const char *text)
{
	if (text[0] >= '0' && text[0] <= '7' && text[1] == '\0')
		return text[0] - '0';
	for (int i = 0; i <= LOG_DEBUG; i++) {
		if (!strcmp(text, level_names[i]))
			return i;
	}
	return -EINVAL;
}

static int cmd_loglevel(int argc, char **argv)
{
	if (argc > 2 || (argc == 2 && parse_level(argv[1]) < 0))
		return KSHELL_USAGE;
	if (argc == 2)
		console_set_level((enum log_level)parse_level(argv[1]));
	enum log_level level = console_get_level();
	kshell_print("loglevel %d (%s)\n", level, level_names[level]);
	return 0;
}
KSHELL_COMMAND(loglevel, cmd_loglevel, "loglevel [0-7|emerg..debug]",
	       "show or set the console's verbosity");

/* ---- ktest: run suites now ----------------------------------------------- */

/* FIXME: a copy of the ktest runner's loop, because kernel/ktest runs only the
 * boot-time selection; it should offer "run this selection now" itself. */
extern const struct ktest_suite __ktest_suites_start[], __ktest_suites_end[];

static bool suite_selected(const struct ktest_suite *suite, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "all") || !strcmp(argv[i], suite->name))
			return true;
	}
	return false;
}

/* Runs one suite as KTAP; returns its failed cases. */
static int run_suite(const struct ktest_suite *suite, unsigned number)
{
	int failed = 0;
	kshell_print("    # Subtest: %s\n    1..%zu\n", suite->name, suite->case_count);
	for (size_t i = 0; i < suite->case_count; i++) {
		struct ktest t = {.name = suite->cases[i].name};
		suite->cases[i].run(&t);
		failed += t.failures && !t.skipped;
		kshell_print("    %s %zu %s%s%s\n", t.failures && !t.skipped ? "not ok" : "ok",
			     i + 1, t.name, t.skipped ? " # SKIP " : "",
			     t.skipped ? t.skip_reason : "");
	}
	kshell_print("%s %u %s\n", failed ? "not ok" : "ok", number, suite->name);
	return failed;
}

static int cmd_ktest(int argc, char **argv)
{
	unsigned suites = 0;
	int failed = 0;
	if (argc < 2)
		return KSHELL_USAGE;
	for (const struct ktest_suite *s = __ktest_suites_start; s < __ktest_suites_end; s++) {
		if (suite_selected(s, argc, argv))
			failed += run_suite(s, ++suites);
	}
	if (!suites)
		return -ENOENT;
	kshell_print("ktest: %u suite(s), %d case(s) failed\n", suites, failed);
	return 0;
}
KSHELL_COMMAND(ktest, cmd_ktest, "ktest <suite...|all>", "run in-kernel test suites now");

/* ---- Stopping the machine ------------------------------------------------ */

static int cmd_reboot(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("rebooting\n");
	outb(KBD_CONTROLLER_COMMAND, KBD_PULSE_RESET);
	clock_delay_ns(100 * NSEC_PER_MSEC);
	kshell_print("reboot: the keyboard controller did not reset the machine\n");
	return -EIO;
}
KSHELL_COMMAND(reboot, cmd_reboot, "reboot", "reset the machine");

static int cmd_poweroff(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("stopping the machine\n");
	power_stop(POWER_REQUESTED);
}
KSHELL_COMMAND(poweroff, cmd_poweroff, "poweroff", "stop the machine (QEMU exits with exit=qemu)");
KSHELL_COMMAND(exit, cmd_poweroff, "exit", "the same as poweroff");
