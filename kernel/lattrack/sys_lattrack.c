/*
 * Latency trackers from user space (uapi/lattrack.h): ms_lattrack_create
 * and ms_lattrack_open give a file descriptor on an anonymous node that
 * subscribes to the tracker's reports; read() returns whole records,
 * blocking unless O_NONBLOCK; poll() is POLLIN while one waits and POLLHUP
 * once the tracker is gone and nothing is left.  ms_lattrack_event feeds an
 * owned tracker through such a descriptor.  Privileges: a tracker of one's
 * own user needs none; another user's, or a kernel tracker (its keys are
 * kernel addresses), needs PRIV_MONITOR to open, and kernel trackers are
 * never fed from user space.  Every argument is read once and checked before
 * anything is made.
 */
#include "lattrack/lattrack.h"

#include "lib/errno.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "syscall/syscall.h"
#include "time/time.h"
#include "uaccess/uaccess.h"
#include "uapi/cred.h"
#include "uapi/lattrack.h"
#include "vfs/vfs.h"

#define SIGNAL_CHECK_NS (100 * NSEC_PER_MSEC)

struct lattrack_file {
	struct vfs_node node;
	struct lattrack *tracker; /* referenced (as an owner when owner) */
	struct lattrack_subscriber *subscriber;
	bool owner;
	struct waitq readable;
};

static void notify(void *context)
{
	struct lattrack_file *f = context;
	waitq_wake_all(&f->readable);
	vfs_poll_notify();
}

static struct lattrack_file *file_of(struct vfs_file *file)
{
	return file->node->private;
}

static bool can_read(void *arg)
{
	struct lattrack_file *f = arg;
	return lattrack_records_waiting(f->subscriber) || !lattrack_is_enabled(f->tracker) ||
	       vfs_signal_pending();
}

static int64_t lattrack_file_read(struct vfs_file *file, void *buffer, size_t length,
				  uint64_t offset)
{
	struct lattrack_file *f = file_of(file);
	unsigned max = (unsigned)(length / sizeof(struct lattrack_record));
	if (max == 0)
		return -EINVAL; /* whole records only */
	for (;;) {
		unsigned n = lattrack_records_take(f->subscriber, buffer, max);
		if (n)
			return (int64_t)n * (int64_t)sizeof(struct lattrack_record);
		if (!lattrack_is_enabled(f->tracker))
			return 0; /* destroyed, and everything read */
		if (file->flags & VFS_O_NONBLOCK)
			return -EAGAIN;
		if (vfs_signal_pending())
			return -EINTR;
		waitq_wait_timeout(&f->readable, can_read, f, SIGNAL_CHECK_NS);
	}
}

static unsigned lattrack_file_poll(struct vfs_file *file)
{
	struct lattrack_file *f = file_of(file);
	if (lattrack_records_waiting(f->subscriber))
		return VFS_POLL_IN;
	return lattrack_is_enabled(f->tracker) ? 0 : VFS_POLL_HUP;
}

static void lattrack_node_release(struct vfs_node *node)
{
	struct lattrack_file *f = node->private;
	lattrack_unsubscribe(f->subscriber);
	if (f->owner)
		lattrack_release_owned(f->tracker);
	else
		lattrack_put(f->tracker);
	kfree(f);
}

static const struct vfs_node_ops lattrack_node_ops = {.release = lattrack_node_release};
static const struct vfs_file_ops lattrack_file_ops = {.read = lattrack_file_read,
						      .poll = lattrack_file_poll};

/* Installs a descriptor holding tracker (the caller's reference, or owner's
 * share, passes to it).  Returns the descriptor or an error (the reference
 * is then dropped). */
static long install(struct lattrack *tracker, bool owner)
{
	struct process *process = proc_current();
	struct lattrack_file *f = process ? kzalloc(sizeof *f) : NULL;
	int error = f ? lattrack_subscribe(tracker, notify, f, &f->subscriber) : -ENOMEM;
	if (error) {
		kfree(f);
		owner ? lattrack_release_owned(tracker) : lattrack_put(tracker);
		return error;
	}
	f->tracker = tracker;
	f->owner = owner;
	waitq_init(&f->readable, "lattrack");
	vfs_node_init(&f->node, VFS_S_IFCHR | 0400, &lattrack_node_ops, &lattrack_file_ops, f);
	struct vfs_file *file;
	error = vfs_file_create(&f->node, VFS_O_RDONLY, f, &file);
	vfs_node_put(&f->node); /* the file holds it now, or nobody: released */
	if (error)
		return error;
	int fd = vfs_fd_install(proc_slots(process)->files, file, false);
	if (fd < 0)
		vfs_close(file);
	return fd;
}

SYSCALL_DEFINE1(ms_lattrack_create, const struct lattrack_config *, user_config)
{
	struct lattrack_config config;
	if (copy_from_user(&config, user_config, sizeof config))
		return -EFAULT;
	struct lattrack *tracker;
	int error = lattrack_open_owned(&config, proc_current_euid(),
					proc_has_privilege(PRIV_MONITOR), &tracker);
	if (error)
		return error;
	return install(tracker, true);
}

/* May the caller read tracker's records? */
static bool may_open(const struct lattrack *tracker)
{
	if (proc_has_privilege(PRIV_MONITOR))
		return true;
	return lattrack_is_owned(tracker) && lattrack_owner_uid(tracker) == proc_current_euid();
}

SYSCALL_DEFINE1(ms_lattrack_open, const char *, user_name)
{
	char name[LATTRACK_UAPI_NAME_MAX];
	long length = strncpy_from_user(name, user_name, sizeof name);
	if (length < 0)
		return length;
	if (length == 0 || (size_t)length >= sizeof name)
		return -EINVAL;
	struct lattrack *tracker = lattrack_get(name);
	if (!tracker)
		return -ENOENT;
	if (!may_open(tracker)) {
		lattrack_put(tracker);
		return -EPERM;
	}
	return install(tracker, false);
}

/* The tracker behind descriptor fd, with the file held, if it may be fed. */
static int feedable(int fd, struct vfs_file **file, struct lattrack **tracker)
{
	struct process *process = proc_current();
	if (!process || vfs_fd_get(proc_slots(process)->files, fd, file) < 0)
		return -EBADF;
	if ((*file)->ops != &lattrack_file_ops) {
		vfs_file_put(*file);
		return -EBADF;
	}
	*tracker = file_of(*file)->tracker;
	if (!lattrack_is_owned(*tracker)) {
		vfs_file_put(*file);
		return -EPERM; /* a kernel tracker: its keys are the kernel's */
	}
	return 0;
}

SYSCALL_DEFINE5(ms_lattrack_event, int, fd, unsigned, op, const void *, user_key, unsigned, length,
		unsigned, id)
{
	uint8_t key[LATTRACK_UAPI_KEY_MAX];
	if (op > LATTRACK_OP_OUT || length == 0 || length > sizeof key)
		return -EINVAL;
	if (copy_from_user(key, user_key, length))
		return -EFAULT;
	struct vfs_file *file;
	struct lattrack *tracker;
	int error = feedable(fd, &file, &tracker);
	if (error)
		return error;
	if (op == LATTRACK_OP_OUT)
		error = lattrack_event_out(tracker, key, length, id);
	else
		error = lattrack_event_in(
		    tracker, key, length,
		    op == LATTRACK_OP_IN ? LATTRACK_IN_SHARED : LATTRACK_IN_UNIQUE, NULL);
	vfs_file_put(file);
	return error;
}
