/*
 * Tracing from the boot: trace=PATTERN[,PATTERN...] (or trace=on for the
 * kernel's events alone) starts a session once the drivers are up, into the
 * virtio console when there is one, else into the directory /trace; the
 * trace_bench parameter (test kernel) measures the recorder and stops.
 */
#include "trace/internal.h"

#include "boot/cmdline.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"

#define BOOT_PATTERNS_TEXT 128

static char boot_patterns[BOOT_PATTERNS_TEXT];
static bool boot_requested;

static int set_trace(const char *value)
{
	if (strlcpy(boot_patterns, value, sizeof boot_patterns) >= sizeof boot_patterns)
		return -E2BIG;
	boot_requested = true;
	return 0;
}
KERNEL_PARAM(
    trace, set_trace,
    "PATTERN[,PATTERN...] or on: record from the boot (into the virtio console, or /trace)");

/* Splits boot_patterns at commas ("on" alone: no join point). */
static unsigned split_patterns(const char **patterns)
{
	if (!strcmp(boot_patterns, "on"))
		return 0;
	unsigned count = 0;
	for (char *c = boot_patterns; *c && count < TRACE_PATTERNS_MAX;) {
		patterns[count++] = c;
		while (*c && *c != ',')
			c++;
		if (*c)
			*c++ = 0;
	}
	return count;
}

void trace_boot_init(void)
{
	trace_bench_run_if_requested();
	if (!boot_requested)
		return;
	const struct trace_sink *sink = trace_find_sink("console");
	const char *argument = sink ? "" : "/trace";
	if (!sink)
		sink = trace_find_sink("file");
	const char *patterns[TRACE_PATTERNS_MAX];
	unsigned count = split_patterns(patterns);
	int error = trace_start(sink, argument, patterns, count);
	if (error)
		pr_warn("trace: cannot start the boot trace (error %d)\n", error);
	else
		pr_info("trace: recording into %s%s\n", sink->name, argument);
}
