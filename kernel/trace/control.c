/*
 * Sinks by name, and what a host sends over a sink that can receive
 * (uapi/trace.h): control lines ("trace start PATTERN...", "trace stop",
 * "trace snapshot", and any other line for the kernel shell, through the
 * runner that init sets: the shell sits above this layer; what the command
 * prints comes back in the answer, then "ok" or "error N"), and files ("put
 * NAME LENGTH" and the bytes, stored by the file system's store).  Each line
 * is answered with a TEXT frame.
 */
#include "trace/internal.h"

#include "lib/errno.h"
#include "lib/format.h"
#include "lib/number.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"

#define TRACE_ANSWER_MAX 4096 /* a shell line's printed answer, cut beyond */

static const struct trace_sink *sinks[TRACE_SINKS_MAX];
static int (*line_runner)(const char *line, char *output, size_t size);

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

void trace_set_line_runner(int (*run)(const char *line, char *output, size_t size))
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
	bool stacks = count == 1 && !strcmp(words[0], "--stacks");
	const char *const *patterns = (const char *const *)words + flight;
	int error = stacks   ? trace_start_stacks(sink, "")
		    : flight ? trace_start_flight(sink, "", patterns, count - 1)
			     : trace_start(sink, "", patterns, count);
	if (error)
		answer(sink, "trace start: error %d\n", error);
	else
		answer(sink, "trace started%s\n",
		       flight   ? " (flight recorder)"
		       : stacks ? " (stacks only)"
				: "");
	return error;
}

#define ANSWER_STATUS_MAX 64 /* "[answer cut ...]" and "error N" after the output */

/* A kernel-shell line, answered with what it printed and its status.  The
 * console and the TCP sink each have a thread that runs lines: one answer
 * buffer, one line at a time, so that neither gets the other's output.  The
 * status always fits; an answer cut to fit says so. */
static int run_shell_line(const struct trace_sink *sink, const char *line)
{
	static struct mutex answer_lock = MUTEX_INIT(answer_lock, "trace.answer");
	static char output[TRACE_ANSWER_MAX];
	mutex_lock(&answer_lock);
	size_t room = sizeof output - ANSWER_STATUS_MAX;
	output[0] = 0;
	int result = line_runner(line, output, room);
	output[room - 1] = 0;
	size_t used = strlen(output);
	if (used == room - 1)
		used += (size_t)snprintf(output + used, sizeof output - used,
					 "\n[answer cut at %zu bytes]\n", used);
	snprintf(output + used, sizeof output - used, result ? "error %d\n" : "ok\n", result);
	sink->frame(sink->context, TRACE_FRAME_TEXT, 0, output, (uint32_t)strlen(output));
	mutex_unlock(&answer_lock);
	return result;
}

int trace_control_line(const struct trace_sink *sink, const char *line)
{
	char copy[TRACE_CONTROL_LINE_MAX];
	if (strlcpy(copy, line, sizeof copy) >= sizeof copy) {
		answer(sink, "error: line longer than %d bytes\n", TRACE_CONTROL_LINE_MAX - 1);
		return -E2BIG;
	}
	/* "trace start --flight" and the patterns; one word more, so that too
	 * many patterns are refused rather than the last one cut short. */
	char *words[TRACE_PATTERNS_MAX + 4];
	unsigned count = split(copy, words, TRACE_PATTERNS_MAX + 4);
	if (count >= 2 && !strcmp(words[0], "trace") && !strcmp(words[1], "start"))
		return start_from_line(sink, words + 2, count - 2);
	if (count == 2 && !strcmp(words[0], "trace") && !strcmp(words[1], "snapshot")) {
		int error = trace_snapshot();
		answer(sink,
		       error ? "trace snapshot: no flight recorder runs\n" : "snapshot sent\n");
		return error;
	}
	if (count == 2 && !strcmp(words[0], "trace") && !strcmp(words[1], "stop")) {
		struct trace_end end;
		int error = trace_stop(&end);
		if (error)
			answer(sink, "trace stop: no trace runs\n");
		else /* after END, when the session's sink is this one */
			answer(sink, "trace stopped: %llu recorded, %llu delivered, %llu dropped\n",
			       (unsigned long long)end.recorded, (unsigned long long)end.delivered,
			       (unsigned long long)end.dropped);
		return error;
	}
	if (!line_runner) {
		answer(sink, "error: no shell to run '%s'\n", line);
		return -ENOSYS;
	}
	return run_shell_line(sink, line);
}

/* ---- The byte stream of one connection ---------------------------------- */

static void answer_text(struct trace_control *control, const char *text)
{
	control->sink->frame(control->sink->context, TRACE_FRAME_TEXT, 0, text,
			     (uint32_t)strlen(text));
}

static void end_put(struct trace_control *control)
{
	char text[128];
	int error = trace_store_file(control->put_name, control->put_data, control->put_length);
	if (error)
		snprintf(text, sizeof text, "error %d storing /tmp/%s\n", error, control->put_name);
	else
		snprintf(text, sizeof text, "stored /tmp/%s (%lu bytes)\n", control->put_name,
			 (unsigned long)control->put_length);
	trace_control_end(control);
	answer_text(control, text);
}

void trace_control_end(struct trace_control *control)
{
	if (control->put_data)
		mm_free_pages(control->put_data, control->put_pages);
	control->put_data = NULL;
	control->skip_left = 0;
	control->lost = false;
	control->line_length = 0;
	control->line_too_long = false;
}

/* The LENGTH of "put NAME LENGTH", or -1 when it is no number: then where
 * the file's bytes end cannot be known. */
static int64_t put_length_of(const char *arguments)
{
	const char *space = strchr(arguments, ' ');
	uint64_t length;
	if (!space || parse_decimal(space + 1, INT64_MAX, &length))
		return -1;
	return (int64_t)length;
}

/* The NAME of "put NAME LENGTH" into put_name; false when it does not fit. */
static bool take_put_name(struct trace_control *control, const char *arguments)
{
	size_t name_length = (size_t)(strchr(arguments, ' ') - arguments);
	if (!name_length || name_length > TRACE_PUT_NAME_MAX)
		return false;
	memcpy(control->put_name, arguments, name_length);
	control->put_name[name_length] = 0;
	return true;
}

/* A put refused: its LENGTH bytes still come, and are skipped (never read
 * as lines).  Without a LENGTH nothing that follows can be trusted to be a
 * line: the rest of this host's bytes are dropped until it reconnects. */
static void refuse_put(struct trace_control *control, int64_t length, const char *why)
{
	char text[160];
	if (length < 0) {
		control->lost = true;
		snprintf(text, sizeof text,
			 "error: put NAME LENGTH: %s; what follows is ignored until the host "
			 "reconnects\n",
			 why);
	} else {
		control->skip_left = (uint64_t)length;
		snprintf(text, sizeof text, "error: put NAME LENGTH: %s; its %lld bytes skipped\n",
			 why, (long long)length);
	}
	answer_text(control, text);
}

/* "put NAME LENGTH": the file's bytes follow. */
static void begin_put(struct trace_control *control, const char *arguments)
{
	int64_t length = put_length_of(arguments);
	const char *refused = length < 0                           ? "LENGTH is no number"
			      : (uint64_t)length > TRACE_PUT_MAX   ? "LENGTH over 4 MiB"
			      : !take_put_name(control, arguments) ? "NAME empty or over 64 bytes"
								   : NULL;
	if (!refused) {
		control->put_pages = ((size_t)length + PAGE_SIZE) / PAGE_SIZE;
		control->put_data = mm_alloc_pages(control->put_pages, PAGE_SIZE);
		control->put_length = (size_t)length;
		control->put_received = 0;
		if (!control->put_data)
			refused = "no memory for the file";
	}
	if (refused)
		refuse_put(control, length, refused);
	else if (!length)
		end_put(control);
}

/* Takes what data holds of the file coming in; returns the bytes used. */
static size_t take_put_bytes(struct trace_control *control, const uint8_t *data, size_t length)
{
	size_t left = control->put_length - control->put_received;
	size_t take = left < length ? left : length;
	memcpy(control->put_data + control->put_received, data, take);
	control->put_received += take;
	if (control->put_received == control->put_length)
		end_put(control);
	return take;
}

static void run_line(struct trace_control *control)
{
	control->line[control->line_length] = 0;
	if (control->line_too_long)
		answer_text(control, "error: control line too long\n");
	else if (!strncmp(control->line, "put ", 4))
		begin_put(control, control->line + 4);
	else if (control->line_length)
		trace_control_line(control->sink, control->line);
	control->line_length = 0;
	control->line_too_long = false;
}

/* Skips what data holds of a refused file; returns the bytes skipped. */
static size_t skip_put_bytes(struct trace_control *control, size_t length)
{
	size_t skip = control->skip_left < length ? (size_t)control->skip_left : length;
	control->skip_left -= skip;
	return skip;
}

void trace_control_bytes(struct trace_control *control, const uint8_t *data, size_t length)
{
	if (control->lost)
		return;
	for (size_t i = 0; i < length; i++) {
		if (control->put_data) {
			i += take_put_bytes(control, data + i, length - i) - 1;
			continue;
		}
		if (control->skip_left) {
			i += skip_put_bytes(control, length - i) - 1;
			continue;
		}
		if (control->lost)
			return;
		char c = (char)data[i];
		if (c == '\n')
			run_line(control);
		else if (c != '\r' && control->line_length < sizeof control->line - 1)
			control->line[control->line_length++] = c;
		else if (c != '\r')
			control->line_too_long = true;
	}
}
