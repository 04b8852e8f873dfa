/*
 * The trace stream over the virtio console: the "console" sink writes each
 * frame (uapi/trace.h: a struct trace_frame, then its bytes) to the port,
 * and the host's lines coming back in are control lines for the trace
 * module (trace start/stop, or a kernel-shell line), answered on the port.
 * The network under test is never touched.  Both directions run in threads
 * left out of the trace, so carrying the stream does not feed it.
 */
#include "virtio/trace_port.h"

#include "virtio/console.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "trace/trace.h"

static struct mutex frame_lock = MUTEX_INIT(frame_lock, "trace.port");
static char line[TRACE_CONTROL_LINE_MAX];
static size_t line_length;
static bool line_too_long;

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

static void run_line(void)
{
	static const char too_long[] = "error: control line too long\n";
	line[line_length] = 0;
	if (line_too_long)
		write_frame(NULL, TRACE_FRAME_TEXT, 0, too_long, sizeof too_long - 1);
	else if (line_length)
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
