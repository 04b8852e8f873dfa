/*
 * The trace stream over the virtio console: the "console" sink writes each
 * frame (uapi/trace.h: a struct trace_frame, then its bytes) to the port,
 * and the host's lines coming back in are control lines for the trace
 * module (trace_control_bytes: trace start/stop, files, kernel-shell lines),
 * answered on the port.  The network under test is never touched.  Both directions run in threads
 * left out of the trace, so carrying the stream does not feed it.  A stream's
 * packets are lent (frame_lent): the device reads them where they lie, in the
 * session's packet header and the ring itself, and settle waits until it has.
 */
#include "virtio/trace_port.h"

#include "virtio/console.h"

#include "lib/errno.h"
#include "sched/sched.h"
#include "trace/trace.h"

static struct mutex frame_lock = MUTEX_INIT(frame_lock, "trace.port");
static int write_frame(void *context, uint16_t kind, uint16_t stream, const void *data,
		       uint32_t length);
static int write_frame_lent(void *context, uint16_t kind, uint16_t stream,
			    const struct trace_part *parts, unsigned count);
static int settle(void *context, bool wait);
static const struct trace_sink console_sink = {
    .name = "console", .frame = write_frame, .frame_lent = write_frame_lent, .settle = settle};
static struct trace_control port_control = {.sink = &console_sink};

/* The frame's header (copied), then its parts: copied, or read in place. */
static int send_frame(uint16_t kind, uint16_t stream, const struct trace_part *parts,
		      unsigned count, bool lent)
{
	uint32_t length = 0;
	for (unsigned i = 0; i < count; i++)
		length += parts[i].length;
	struct trace_frame header = {
	    .magic = TRACE_FRAME_MAGIC, .kind = kind, .stream = stream, .length = length};
	mutex_lock(&frame_lock);
	int error = vcon_write(&header, sizeof header);
	for (unsigned i = 0; i < count && !error; i++)
		if (parts[i].length)
			error = lent ? vcon_write_lent(parts[i].data, parts[i].length)
				     : vcon_write(parts[i].data, parts[i].length);
	if (!error && kind == TRACE_FRAME_END)
		error = vcon_flush(); /* the machine may stop right after */
	mutex_unlock(&frame_lock);
	return error;
}

static int write_frame(void *context, uint16_t kind, uint16_t stream, const void *data,
		       uint32_t length)
{
	struct trace_part part = {.data = data, .length = length};
	return send_frame(kind, stream, &part, 1, false);
}

static int write_frame_lent(void *context, uint16_t kind, uint16_t stream,
			    const struct trace_part *parts, unsigned count)
{
	return send_frame(kind, stream, parts, count, true);
}

static int settle(void *context, bool wait)
{
	if (wait)
		return vcon_flush();
	return vcon_flushed() ? 0 : -EAGAIN;
}

/* Bytes from the host.  A host that closed the port left its half line or
 * half file behind: the next one starts afresh (its session, if it started
 * one, runs on until `trace stop`). */
static void receive(const uint8_t *data, size_t length, void *arg)
{
	static uint32_t host_epoch;
	thread_set_untraced(true);
	uint32_t epoch = vcon_host_epoch();
	if (epoch != host_epoch) {
		trace_control_end(&port_control);
		host_epoch = epoch;
	}
	trace_control_bytes(&port_control, data, length);
}

void trace_port_init(void)
{
	if (!vcon_present())
		return;
	trace_register_sink(&console_sink);
	vcon_set_receiver(receive, NULL);
}
