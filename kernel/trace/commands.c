/*
 * The console's trace command: start a session into a sink (a directory of
 * the file system unless -o names another), stop it, snapshot a flight
 * recorder, or show its counts.
 */
#include "trace/trace.h"

#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/number.h"
#include "lib/string.h"

#define DEFAULT_DIRECTORY "/trace"

/* "-o console", "-o file:/dir": the sink and its argument. */
static const struct trace_sink *sink_for(const char *spec, const char **argument)
{
	static char name[16];
	const char *colon = strchr(spec, ':');
	size_t length = colon ? (size_t)(colon - spec) : strlen(spec);
	if (length >= sizeof name)
		return NULL;
	memcpy(name, spec, length);
	name[length] = 0;
	*argument = colon ? colon + 1 : "";
	if (!strcmp(name, "file") && !**argument)
		*argument = DEFAULT_DIRECTORY;
	return trace_find_sink(name);
}

/* Without -o the trace goes into DEFAULT_DIRECTORY: the console port's
 * sink waits for a host to read it, and a host starts its own traces over
 * that port (tools/mscope). */
static int start(int argc, char **argv)
{
	const struct trace_sink *sink = trace_find_sink("file");
	const char *argument = DEFAULT_DIRECTORY;
	int first = 2;
	bool flight = argc > first && !strcmp(argv[first], "--flight");
	first += flight;
	bool stacks = !flight && argc > first && !strcmp(argv[first], "--stacks");
	first += stacks;
	if (argc >= first + 2 && !strcmp(argv[first], "-o")) {
		sink = sink_for(argv[first + 1], &argument);
		if (!sink) {
			kshell_print("trace: no sink '%s' (console, file:DIR)\n", argv[first + 1]);
			return -ENOENT;
		}
		first += 2;
	}
	const char *const *patterns = (const char *const *)argv + first;
	if (stacks && argc > first)
		return KSHELL_USAGE; /* a trace of stacks records no join point */
	int error = stacks   ? trace_start_stacks(sink, argument)
		    : flight ? trace_start_flight(sink, argument, patterns, argc - first)
			     : trace_start(sink, argument, patterns, argc - first);
	if (!error)
		kshell_print("trace: recording%s into %s%s%s\n",
			     flight   ? " (flight recorder)"
			     : stacks ? " (stacks only)"
				      : "",
			     sink->name, *argument ? " " : "", argument);
	else if (error == -ENOENT)
		kshell_print("trace: a pattern matches no join point\n");
	return error;
}

static void print_counts(const char *what, const struct trace_end *end)
{
	kshell_print("trace %s: %llu recorded, %llu delivered, %llu dropped\n", what,
		     (unsigned long long)end->recorded, (unsigned long long)end->delivered,
		     (unsigned long long)end->dropped);
}

static int trace_command(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "start"))
		return start(argc, argv);
	struct trace_end end;
	if (argc == 2 && !strcmp(argv[1], "stop")) {
		int error = trace_stop(&end);
		if (error)
			kshell_print("trace: no trace runs\n");
		else
			print_counts("stopped", &end);
		return error;
	}
	if (argc == 2 && !strcmp(argv[1], "snapshot")) {
		int error = trace_snapshot();
		if (error)
			kshell_print("trace: no flight recorder runs\n");
		return error;
	}
	if (argc == 2 && !strcmp(argv[1], "status")) {
		trace_get_counts(&end);
		print_counts(trace_running() ? "running" : "last", &end);
		return 0;
	}
	return KSHELL_USAGE;
}

KSHELL_COMMAND(
    trace, trace_command,
    "trace start [--flight] [-o console|file:DIR] [PATTERN...] | start --stacks [-o SINK] | "
    "snapshot | stop | status",
    "record the kernel's events and join points, out of the OS as a CTF trace");

/* ---- uscope: the trace map ------------------------------------------------ */

/* A mode or budget argument: a small decimal number. */
static int parse_number(const char *text, unsigned *value)
{
	uint64_t n;
	int error = parse_decimal(text, 1000, &n);
	if (!error)
		*value = (unsigned)n;
	return error;
}

static int uscope_add(int argc, char **argv)
{
	unsigned mode = 4, budget = 8;
	const char *events = "*";
	for (int i = 3; i + 1 < argc; i += 2) {
		int error = 0;
		if (!strcmp(argv[i], "--mode"))
			error = parse_number(argv[i + 1], &mode);
		else if (!strcmp(argv[i], "--budget"))
			error = parse_number(argv[i + 1], &budget);
		else if (!strcmp(argv[i], "--events"))
			events = argv[i + 1];
		else
			error = -EINVAL;
		if (error)
			return KSHELL_USAGE;
	}
	if (argc % 2 == 0)
		return KSHELL_USAGE;
	int slot = uscope_trace(argv[2], mode, budget, events);
	if (slot < 0)
		kshell_print("uscope: cannot trace '%s' (error %d)\n", argv[2], slot);
	else
		kshell_print("uscope: tracing %s, mode %u, budget %u, events %s (slot %d)\n",
			     argv[2], mode, budget, events, slot);
	return slot < 0 ? slot : 0;
}

static int uscope_command(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "trace"))
		return uscope_add(argc, argv);
	if (argc == 3 && !strcmp(argv[1], "untrace")) {
		int error = uscope_untrace(argv[2]);
		kshell_print(error ? "uscope: '%s' is not traced\n" : "uscope: %s untraced\n",
			     argv[2]);
		return error;
	}
	if (argc == 2 && !strcmp(argv[1], "list")) {
		struct uscope_info info[USCOPE_MAP_MAX];
		int n = uscope_list(info, USCOPE_MAP_MAX);
		for (int i = 0; i < n; i++) {
			kshell_print("%-16s mode %u budget %u events %s ", info[i].name,
				     info[i].mode, info[i].budget, info[i].events);
			if (info[i].every_user)
				kshell_print("(every user)\n");
			else
				kshell_print("(user %u)\n", info[i].owner);
		}
		if (!n)
			kshell_print("uscope: nothing traced\n");
		return 0;
	}
	return KSHELL_USAGE;
}

KSHELL_COMMAND(
    uscope, uscope_command,
    "uscope trace NAME|PATH [--events PATTERN] [--mode 1-4] [--budget S] | untrace NAME | "
    "list",
    "user stacks of a named application at its system calls and join points, into the "
    "trace stream");
