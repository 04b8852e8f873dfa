/*
 * User marks into the trace stream: a process writes a typed, short message
 * that lands in the stream between the kernel's events, with the same clock
 * (a cheap way to show where a request starts and ends).  The bytes are
 * copied in whether or not a trace runs, so a program sees the same errors
 * either way (a mark is at most TRACE_MARK_MAX bytes).
 */
#include "lib/errno.h"
#include "syscall/syscall.h"
#include "telemetry/tracepoint.h"
#include "uaccess/uaccess.h"

SYSCALL_DEFINE3(ms_trace_mark, uint32_t, type, const void *, data, uint64_t, length)
{
	if (length > TRACE_MARK_MAX)
		return -EINVAL;
	struct {
		struct trace_mark mark;
		uint8_t data[TRACE_MARK_MAX];
	} event = {.mark = {.type = type, .length = (uint32_t)length}};
	if (copy_from_user(event.data, data, length))
		return -EFAULT;
	if (tracepoint_on())
		tracepoint_write(TRACE_USER_MARK, &event, (uint32_t)(sizeof event.mark + length));
	return 0;
}
