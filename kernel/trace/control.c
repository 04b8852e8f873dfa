/*
 * Sinks by name, and the control lines a host sends over a sink that can
 * receive (uapi/trace.h): "trace start PATTERN...", "trace stop", and any
 * other line for the kernel shell (through the runner that init sets: the
 * shell sits above this layer).  Each line is answered with a TEXT frame.
 */
#include "trace/internal.h"

#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"

static const struct trace_sink *sinks[TRACE_SINKS_MAX];
static int (*line_runner)(const char *line);

int trace_register_sink(const struct trace_sink *sink)
{
	if (trace_find_sink(sink->name))
		return -EEXIST;
	for (unsigned i = 0; i < TRACE_SINKS_MAX; i++) {
		if (!sinks[i]) {
			sinks[i] = sink;
			return 0;
		}
	}
	return -ENOSPC;
}

const struct trace_sink *trace_find_sink(const char *name)
{
	for (unsigned i = 0; i < TRACE_SINKS_MAX; i++)
		if (sinks[i] && !strcmp(sinks[i]->name, name))
			return sinks[i];
	return NULL;
}

void trace_set_line_runner(int (*run)(const char *line))
{
	line_runner = run;
}

static int (*file_store)(const char *name, const void *data, size_t length);

void trace_set_file_store(int (*store)(const char *name, const void *data, size_t length))
{
	file_store = store;
}

static bool name_is_plain(const char *name)
{
	size_t length = strlen(name);
	if (!length || length > TRACE_PUT_NAME_MAX || name[0] == '.')
		return false;
	for (const char *c = name; *c; c++) {
		bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			  (*c >= '0' && *c <= '9') || *c == '.' || *c == '_' || *c == '-';
		if (!ok)
			return false;
	}
	return true;
}

int trace_store_file(const char *name, const void *data, size_t length)
{
	if (!name_is_plain(name) || length > TRACE_PUT_MAX)
		return -EINVAL;
	return file_store ? file_store(name, data, length) : -ENOSYS;
}

static void answer(const struct trace_sink *sink, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static void answer(const struct trace_sink *sink, const char *format, ...)
{
	char text[160];
	va_list args;
	va_start(args, format);
	int n = vsnprintf(text, sizeof text, format, args);
	va_end(args);
	if (n > (int)sizeof text - 1)
		n = sizeof text - 1;
	sink->frame(sink->context, TRACE_FRAME_TEXT, 0, text, (uint32_t)n);
}

/* Splits line (modified) into words; returns how many (at most max). */
static unsigned split(char *line, char **words, unsigned max)
{
	unsigned count = 0;
	for (char *c = line; *c && count < max;) {
		while (*c == ' ' || *c == '\t')
			*c++ = 0;
		if (!*c)
			break;
		words[count++] = c;
		while (*c && *c != ' ' && *c != '\t')
			c++;
	}
	return count;
}

static int start_from_line(const struct trace_sink *sink, char **words, unsigned count)
{
	bool flight = count && !strcmp(words[0], "--flight");
	const char *const *patterns = (const char *const *)words + flight;
	int error = flight ? trace_start_flight(sink, "", patterns, count - 1)
			   : trace_start(sink, "", patterns, count);
	if (error)
		answer(sink, "trace start: error %d\n", error);
	/* On success the metadata went out first: the host knows it started. */
	return error;
}

int trace_control_line(const struct trace_sink *sink, const char *line)
{
	char copy[TRACE_CONTROL_LINE_MAX];
	if (strlcpy(copy, line, sizeof copy) >= sizeof copy) {
		answer(sink, "error: line longer than %d bytes\n", TRACE_CONTROL_LINE_MAX - 1);
		return -E2BIG;
	}
	char *words[TRACE_PATTERNS_MAX + 2];
	unsigned count = split(copy, words, TRACE_PATTERNS_MAX + 2);
	if (count >= 2 && !strcmp(words[0], "trace") && !strcmp(words[1], "start"))
		return start_from_line(sink, words + 2, count - 2);
	if (count == 2 && !strcmp(words[0], "trace") && !strcmp(words[1], "snapshot")) {
		int error = trace_snapshot();
		answer(sink, error ? "trace snapshot: no flight recorder runs\n" : "snapshot sent\n");
		return error;
	}
	if (count == 2 && !strcmp(words[0], "trace") && !strcmp(words[1], "stop")) {
		int error = trace_stop(NULL);
		if (error)
			answer(sink, "trace stop: no trace runs\n");
		return error;
	}
	if (!line_runner) {
		answer(sink, "error: no shell to run '%s'\n", line);
		return -ENOSYS;
	}
	int result = line_runner(line);
	answer(sink, result ? "error %d\n" : "ok\n", result);
	return result;
}
