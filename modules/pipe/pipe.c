/*
 * Pipes.  One struct pipe holds a ring buffer of PIPE_BUFFER_SIZE bytes
 * (kmalloc'd, so charged to the activity that made the pipe) and the count
 * of open read and write ends; each end is a vfs_file on the pipe's
 * anonymous node (a FIFO).  The ring is larger than
 * PIPE_ATOMIC_MAX (POSIX's PIPE_BUF), and POLLOUT means room for
 * PIPE_ATOMIC_MAX bytes, so a write poll promised never finds the pipe full:
 * a write of at most PIPE_ATOMIC_MAX goes in whole, a larger one goes in as
 * far as there is room (all of it when blocking, what fits when not).
 * The ring, the counts and `closed_*` change under pipe->lock; sleepers wait
 * on pipe->readable / pipe->writable with conditions that read those fields
 * (a waker changes them first, then wakes, so no wake-up is lost).  Every
 * change a poller could see is also announced with vfs_poll_notify_key(pipe).
 *
 * A process told to end stops waiting (-EINTR): the conditions include
 * vfs_signal_pending, and the waits time out now and then to look again.
 *
 * The pipe lives as long as its node: each end holds a reference through
 * its file, and the node's release frees the pipe once both ends are gone.
 *
 * A pipe made for a user other than root counts its bytes against that
 * user's share of kernel memory (proc_user_memory_charge, with its
 * endpoints) until it is freed: past it pipe() is -ENFILE, so one user's
 * processes cannot fill the kernel heap with rings.
 */
#include "pipe/pipe.h"

#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "time/time.h"

/* Waits re-check for a signal at least this often, in case the signal's
 * sender does not wake the waiting thread. */
#define SIGNAL_CHECK_NS (100 * NSEC_PER_MSEC)

struct pipe {
	struct vfs_node node;
	struct spinlock lock;
	struct waitq readable; /* readers wait for data or end of file */
	struct waitq writable; /* writers wait for room or a dead reader */
	char *buffer;          /* PIPE_BUFFER_SIZE bytes */
	size_t head, tail;     /* head - tail bytes buffered; indices grow forever */
	unsigned readers, writers;
	uint32_t charged_uid; /* the user its bytes count against (root: none) */
};

struct wait_arg {
	struct pipe *pipe;
	size_t needed; /* bytes of room a writer waits for */
};

static struct pipe *pipe_of(struct vfs_file *file)
{
	return file->private;
}

static size_t buffered(const struct pipe *p)
{
	return p->head - p->tail;
}

static size_t room(const struct pipe *p)
{
	return PIPE_BUFFER_SIZE - buffered(p);
}

static bool can_read(void *arg)
{
	struct pipe *p = ((struct wait_arg *)arg)->pipe;
	return buffered(p) > 0 || p->writers == 0 || vfs_signal_pending();
}

static bool can_write(void *arg)
{
	struct wait_arg *w = arg;
	struct pipe *p = w->pipe;
	return room(p) >= w->needed || p->readers == 0 || vfs_signal_pending();
}

/* Copies out up to length buffered bytes.  Returns how many. */
static size_t take(struct pipe *p, char *out, size_t length)
{
	uint64_t flags = spin_lock_irqsave(&p->lock);
	size_t n = 0;
	for (; n < length && p->tail != p->head; n++)
		out[n] = p->buffer[p->tail++ % PIPE_BUFFER_SIZE];
	spin_unlock_irqrestore(&p->lock, flags);
	return n;
}

JOINPOINT_DEFINE(pipe, read, int64_t, struct vfs_file *, file, void *, buffer, size_t, length)
{
	struct pipe *p = pipe_of(file);
	struct wait_arg arg = {p, 0};
	if (length == 0)
		return 0;
	for (;;) {
		size_t n = take(p, buffer, length);
		if (n) {
			waitq_wake_all(&p->writable);
			vfs_poll_notify_key(p);
			return (int64_t)n;
		}
		if (__atomic_load_n(&p->writers, __ATOMIC_ACQUIRE) == 0)
			return 0;
		if (file->flags & VFS_O_NONBLOCK)
			return -EAGAIN;
		if (vfs_signal_pending())
			return -EINTR;
		waitq_wait_timeout(&p->readable, can_read, &arg, SIGNAL_CHECK_NS);
	}
}

/* Puts up to length bytes in; all or nothing when all is set.  Returns how
 * many, or -EPIPE when no reader is left. */
static int64_t put(struct pipe *p, const char *in, size_t length, bool all)
{
	uint64_t flags = spin_lock_irqsave(&p->lock);
	int64_t n = 0;
	if (p->readers == 0) {
		n = -EPIPE;
	} else if (!all || room(p) >= length) {
		for (; (size_t)n < length && buffered(p) < PIPE_BUFFER_SIZE; n++)
			p->buffer[p->head++ % PIPE_BUFFER_SIZE] = in[n];
	}
	spin_unlock_irqrestore(&p->lock, flags);
	return n;
}

/* What a writer returns when it must stop: the bytes it wrote, if any. */
static int64_t stop_writing(size_t done, int64_t err)
{
	if (err == -EPIPE)
		vfs_send_sigpipe();
	return done ? (int64_t)done : err;
}

JOINPOINT_DEFINE(pipe, write, int64_t, struct vfs_file *, file, const void *, buffer, size_t,
		 length)
{
	struct pipe *p = pipe_of(file);
	const char *in = buffer;
	bool atomic = length <= PIPE_ATOMIC_MAX;
	size_t done = 0;
	while (done < length) {
		int64_t n = put(p, in + done, length - done, atomic);
		if (n < 0)
			return stop_writing(done, n);
		if (n > 0) {
			done += (size_t)n;
			waitq_wake_all(&p->readable);
			vfs_poll_notify_key(p);
			continue;
		}
		if (file->flags & VFS_O_NONBLOCK)
			return stop_writing(done, -EAGAIN);
		if (vfs_signal_pending())
			return stop_writing(done, -EINTR);
		struct wait_arg arg = {p, atomic ? length : 1};
		waitq_wait_timeout(&p->writable, can_write, &arg, SIGNAL_CHECK_NS);
	}
	return (int64_t)length;
}

static int64_t pipe_read_op(struct vfs_file *file, void *buffer, size_t length, uint64_t offset)
{
	return pipe_read(file, buffer, length);
}

static int64_t pipe_write_op(struct vfs_file *file, const void *buffer, size_t length,
			     uint64_t offset)
{
	return pipe_write(file, buffer, length);
}

/* One end closed: count it down and wake the other side. */
static void pipe_release_end(struct vfs_file *file)
{
	struct pipe *p = pipe_of(file);
	bool reader = (file->flags & VFS_O_ACCMODE) == VFS_O_RDONLY;
	uint64_t flags = spin_lock_irqsave(&p->lock);
	if (reader)
		p->readers--;
	else
		p->writers--;
	spin_unlock_irqrestore(&p->lock, flags);
	waitq_wake_all(reader ? &p->writable : &p->readable);
	vfs_poll_notify_key(p);
}

/* Read end: data, or end of file (HUP).  Write end: room, or no reader (ERR). */
static const void *pipe_poll_key(struct vfs_file *file)
{
	return pipe_of(file);
}

static unsigned pipe_poll_op(struct vfs_file *file)
{
	struct pipe *p = pipe_of(file);
	unsigned events = 0;
	uint64_t flags = spin_lock_irqsave(&p->lock);
	if ((file->flags & VFS_O_ACCMODE) == VFS_O_RDONLY) {
		if (buffered(p) > 0)
			events |= VFS_POLL_IN;
		if (p->writers == 0)
			events |= VFS_POLL_IN | VFS_POLL_HUP;
	} else {
		if (room(p) >= PIPE_ATOMIC_MAX)
			events |= VFS_POLL_OUT;
		if (p->readers == 0)
			events |= VFS_POLL_ERR;
	}
	spin_unlock_irqrestore(&p->lock, flags);
	return events;
}

/* What a pipe holds of the kernel's memory. */
#define PIPE_BYTES (sizeof(struct pipe) + PIPE_BUFFER_SIZE)

static void free_pipe(struct pipe *p)
{
	proc_user_memory_release(p->charged_uid, PIPE_BYTES);
	kfree(p->buffer);
	kfree(p);
}

static void pipe_release_node(struct vfs_node *node)
{
	free_pipe(node->private);
}

static const struct vfs_file_ops pipe_file_ops = {
    .read = pipe_read_op,
    .write = pipe_write_op,
    .release = pipe_release_end,
    .poll = pipe_poll_op,
    .poll_key = pipe_poll_key,
};

static const struct vfs_node_ops pipe_node_ops = {
    .release = pipe_release_node,
};

int pipe_create(unsigned flags, struct vfs_file **read_end, struct vfs_file **write_end)
{
	uint32_t uid = proc_current_euid();
	if (proc_user_memory_charge(uid, PIPE_BYTES))
		return -ENFILE;
	struct pipe *p = kzalloc(sizeof *p);
	if (p)
		p->buffer = kmalloc(PIPE_BUFFER_SIZE);
	if (!p || !p->buffer) {
		kfree(p);
		proc_user_memory_release(uid, PIPE_BYTES);
		return -ENOMEM;
	}
	p->charged_uid = uid;
	vfs_node_init(&p->node, VFS_S_IFIFO | 0600, &pipe_node_ops, &pipe_file_ops, p);
	spin_init(&p->lock, "pipe");
	waitq_init(&p->readable, "pipe"); /* the names are ps's wait channels */
	waitq_init(&p->writable, "pipe");
	p->readers = p->writers = 1;
	flags &= VFS_O_NONBLOCK;
	int err = vfs_file_create(&p->node, VFS_O_RDONLY | flags, p, read_end);
	if (err) {
		free_pipe(p);
		return err;
	}
	err = vfs_file_create(&p->node, VFS_O_WRONLY | flags, p, write_end);
	if (err) {
		p->writers = 0;
		vfs_close(*read_end); /* drops the reader; the node's last put frees p */
		vfs_node_put(&p->node);
		return err;
	}
	vfs_node_put(&p->node); /* the ends hold it now */
	return 0;
}
