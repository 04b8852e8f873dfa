/*
 * The console's trace command: start a session into a sink (the virtio
 * console when there is one, else a directory of the RAM file system),
 * stop it, or show its counts.
 */
#include "trace/trace.h"

#include "kshell/kshell.h"
#include "lib/errno.h"
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

static int start(int argc, char **argv)
{
	const struct trace_sink *sink = trace_find_sink("console");
	const char *argument = DEFAULT_DIRECTORY;
	int first = 2;
	bool flight = argc > first && !strcmp(argv[first], "--flight");
	first += flight;
	if (argc >= first + 2 && !strcmp(argv[first], "-o")) {
		sink = sink_for(argv[first + 1], &argument);
		if (!sink) {
			kshell_print("trace: no sink '%s' (console, file:DIR)\n", argv[first + 1]);
			return -ENOENT;
		}
		first += 2;
	} else if (!sink) {
		sink = trace_find_sink("file");
	}
	const char *const *patterns = (const char *const *)argv + first;
	int error = flight ? trace_start_flight(sink, argument, patterns, argc - first)
			   : trace_start(sink, argument, patterns, argc - first);
	if (!error)
		kshell_print("trace: recording%s into %s%s%s\n", flight ? " (flight recorder)" : "",
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

KSHELL_COMMAND(trace, trace_command,
	       "trace start [--flight] [-o console|file:DIR] [PATTERN...] | snapshot | stop | status",
	       "record the kernel's events and join points, out of the OS as a CTF trace");
