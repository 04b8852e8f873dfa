/*
 * The telemetry system calls: a consumer process reads whole records out of
 * one CPU's ring of a channel (which frees their room for the producer), or
 * asks for a ring's counts.  Records pass through a bounded kernel buffer,
 * so one call moves at most TEL_READ_MAX bytes.  The process a channel is
 * shared with maps it instead (ms_tel_map) and reads the rings in place.
 */
#include "lib/errno.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "syscall/syscall.h"
#include "telemetry/internal.h"
#include "uaccess/uaccess.h"

#define TEL_READ_MAX (16 * 1024)

/* A channel carries other processes' events: only PRIV_MONITOR reads it
 * (-EPERM).  Its consumer is a monitor, which has that privilege; the
 * consumer's pid alone proves nothing once that monitor has ended and its
 * pid is another process's. */
static bool may_read(void)
{
	return proc_has_privilege(PRIV_MONITOR);
}

SYSCALL_DEFINE4(ms_tel_read, int, channel, unsigned, cpu, void *, buffer, uint64_t, length)
{
	struct tel_channel *ch = tel_channel_by_id(channel);
	if (!ch)
		return -EINVAL;
	if (tel_channel_kernel_only(ch))
		return -EBUSY;
	if (!may_read())
		return -EPERM;
	if (length > TEL_READ_MAX)
		length = TEL_READ_MAX;
	if (!uaccess_range_ok((uint64_t)buffer, length))
		return -EFAULT;
	void *bounce = kmalloc(length ? length : 1);
	if (!bounce)
		return -ENOMEM;
	int64_t bytes = tel_channel_read(ch, cpu, bounce, length);
	if (bytes > 0 && copy_to_user(buffer, bounce, (size_t)bytes))
		bytes = -EFAULT; /* the records are lost: counted as consumed */
	kfree(bounce);
	return bytes;
}

SYSCALL_DEFINE3(ms_tel_stats, int, channel, unsigned, cpu, struct tel_ring_stats *, stats)
{
	struct tel_channel *ch = tel_channel_by_id(channel);
	struct tel_ring_stats s;
	if (!ch || tel_channel_get_stats(ch, cpu, &s))
		return -EINVAL; /* counts only: anyone may read them */
	return copy_to_user(stats, &s, sizeof s) ? -EFAULT : 0;
}

SYSCALL_DEFINE2(ms_tel_map, int, channel, struct tel_map *, layout)
{
	struct tel_channel *ch = tel_channel_by_id(channel);
	struct process *self = proc_current();
	if (!ch || !self)
		return -EINVAL;
	if (!may_read() || tel_channel_consumer(ch) != proc_pid(self))
		return -EPERM; /* the monitor it is shared with maps it */
	struct tel_map map;
	int error = tel_channel_map(ch, &map);
	if (error)
		return error;
	return copy_to_user(layout, &map, sizeof map) ? -EFAULT : 0;
}
