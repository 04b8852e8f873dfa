/*
 * The trace stream over the virtio console: the "console" sink writes each
 * frame (uapi/trace.h: a struct trace_frame, then its bytes) to the port,
 * and the host's lines coming back in are control lines for the trace
 * module (trace start/stop, or a kernel-shell line), answered on the port;
 * "put NAME LENGTH" is followed by LENGTH raw bytes, a file for /tmp (an
 * aspect object to link, say).
 * The network under test is never touched.  Both directions run in threads
 * left out of the trace, so carrying the stream does not feed it.
 */
#include "virtio/trace_port.h"

#include "virtio/console.h"

#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "trace/trace.h"

static struct mutex frame_lock = MUTEX_INIT(frame_lock, "trace.port");
static char line[TRACE_CONTROL_LINE_MAX];
static size_t line_length;
static bool line_too_long;

/* A file coming in after "put NAME LENGTH". */
static struct {
	char name[TRACE_PUT_NAME_MAX + 1];
	uint8_t *data; /* NULL: not receiving a file */
	size_t length, received, pages;
} put;

static int write_frame(void *context, uint16_t kind, uint16_t stream, const void *data,
		       uint32_t length)
{
	struct trace_frame header = {
	    .magic = TRACE_FRAME_MAGIC, .kind = kind, .stream = stream, .length = length};
	mutex_lock(&frame_lock);
	int error = vcon_write(&header, sizeof header);
	if (!error && length)
		error = vcon_write(data, length);
	if (!error && kind == TRACE_FRAME_END)
		error = vcon_flush(); /* the machine may stop right after */
	mutex_unlock(&frame_lock);
	return error;
}

static const struct trace_sink console_sink = {.name = "console", .frame = write_frame};

static void end_put(void);

static void answer(const char *text)
{
	write_frame(NULL, TRACE_FRAME_TEXT, 0, text, (uint32_t)strlen(text));
}

/* "put NAME LENGTH": 1 when line is one (then the bytes follow), else 0. */
static int begin_put(const char *text)
{
	if (strncmp(text, "put ", 4))
		return 0;
	const char *name = text + 4, *space = strchr(name, ' ');
	uint64_t length = 0;
	const char *digit = space ? space + 1 : "";
	for (; *digit >= '0' && *digit <= '9' && length <= TRACE_PUT_MAX; digit++)
		length = length * 10 + (uint64_t)(*digit - '0');
	size_t name_length = space ? (size_t)(space - name) : 0;
	if (!space || *digit || digit == space + 1 || length > TRACE_PUT_MAX || !name_length ||
	    name_length > TRACE_PUT_NAME_MAX) {
		answer("error: put NAME LENGTH (LENGTH at most 4 MiB)\n");
		return 1;
	}
	memcpy(put.name, name, name_length);
	put.name[name_length] = 0;
	put.pages = (length + PAGE_SIZE) / PAGE_SIZE;
	put.data = mm_alloc_pages(put.pages, PAGE_SIZE);
	put.length = length;
	put.received = 0;
	if (!put.data)
		answer("error: no memory for the file\n");
	else if (!length)
		end_put();
	return 1;
}

static void end_put(void)
{
	char text[128];
	int error = trace_store_file(put.name, put.data, put.length);
	if (error)
		snprintf(text, sizeof text, "error %d storing /tmp/%s\n", error, put.name);
	else
		snprintf(text, sizeof text, "stored /tmp/%s (%lu bytes)\n", put.name,
			 (unsigned long)put.length);
	mm_free_pages(put.data, put.pages);
	put.data = NULL;
	answer(text);
}

/* Takes what data holds of the file coming in; returns the bytes used. */
static size_t take_put_bytes(const uint8_t *data, size_t length)
{
	size_t take = put.length - put.received < length ? put.length - put.received : length;
	memcpy(put.data + put.received, data, take);
	put.received += take;
	if (put.received == put.length)
		end_put();
	return take;
}

static void run_line(void)
{
	static const char too_long[] = "error: control line too long\n";
	line[line_length] = 0;
	if (line_too_long)
		answer(too_long);
	else if (line_length && !begin_put(line))
		trace_control_line(&console_sink, line);
	line_length = 0;
	line_too_long = false;
}

/* The host's bytes: lines, each run when its newline comes.  A line longer
 * than TRACE_CONTROL_LINE_MAX is cut there and refused as too long. */
static void receive(const uint8_t *data, size_t length, void *arg)
{
	thread_set_untraced(true);
	for (size_t i = 0; i < length; i++) {
		if (put.data) {
			i += take_put_bytes(data + i, length - i) - 1;
			continue;
		}
		char c = (char)data[i];
		if (c == '\n') {
			run_line();
		} else if (c != '\r') {
			if (line_length < sizeof line - 1)
				line[line_length++] = c;
			else
				line_too_long = true;
		}
	}
}

void trace_port_init(void)
{
	if (!vcon_present())
		return;
	trace_register_sink(&console_sink);
	vcon_set_receiver(receive, NULL);
}
