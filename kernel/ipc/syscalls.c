/*
 * The IPC system calls: thin glue between user memory and the endpoint API.
 * Messages are copied in and out whole-header-plus-payload through uaccess;
 * the kernel never keeps a user pointer, and a buffer a message will be
 * written to is cleared before one is taken, so that a bad buffer loses no
 * message.  The descriptor's open file is
 * held for the length of the call; it keeps the endpoint alive.  Waits end
 * early with -EINTR when the caller's process is told to end.
 *
 * Holding the file means a close of the last descriptor does not end a call
 * in progress on it (the file, and so the endpoint, is released when the call
 * returns).  Processes are single-threaded, so the descriptor a blocked
 * caller used is its own and cannot be closed under it; a process that ends
 * leaves its calls with -EINTR first.  With threads, the blocking calls would
 * have to hold an endpoint reference instead, so that the last close fails
 * them with -EPIPE.
 */
#include "ipc/internal.h"

#include "lib/errno.h"
#include "proc/proc.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"
#include "uapi/cred.h"
#include "vfs/vfs.h"

/* Copies a message from user memory: the header, then its payload. */
static int message_from_user(struct ipc_message *dst, const struct ipc_message __user *src)
{
	if (copy_from_user(dst, src, IPC_HEADER_SIZE))
		return -EFAULT;
	if (dst->length > IPC_PAYLOAD_MAX)
		return -EINVAL;
	if (dst->length && copy_from_user(dst->payload, src->payload, dst->length))
		return -EFAULT;
	return 0;
}

static int message_to_user(struct ipc_message __user *dst, const struct ipc_message *src)
{
	return copy_to_user(dst, src, IPC_HEADER_SIZE + src->length) ? -EFAULT : 0;
}

/* Makes sure a message can be written to dst before one is taken for it:
 * the buffer is cleared now, so a bad one gets -EFAULT while the message
 * stays queued (or the call unsent), and the copy out at the end cannot
 * fault (processes are single-threaded: nothing unmaps it meanwhile). */
static int message_buffer_writable(struct ipc_message __user *dst)
{
	return clear_user(dst, sizeof *dst) ? -EFAULT : 0;
}

/* A user's endpoints count against USER_KMEM_BYTES_MAX (proc_user_memory_charge); root's,
 * like the kernel's, against nothing. */
SYSCALL_DEFINE1(ms_ipc_create, unsigned, capacity)
{
	int error;
	struct ipc_endpoint *e =
	    ipc_endpoint_create_charged("user", capacity, proc_current_euid(), &error);
	if (!e)
		return error;
	int fd = ipc_endpoint_install_fd(e);
	ipc_endpoint_put(e);
	return fd;
}

SYSCALL_DEFINE2(ms_ipc_send, int, fd, const struct ipc_message *, message)
{
	struct ipc_message m;
	int error = message_from_user(&m, message);
	if (error)
		return error;
	struct vfs_file *file;
	struct ipc_endpoint *e = ipc_file_endpoint(fd, &file, &error);
	if (!e)
		return error;
	error = ipc_send(e, &m);
	vfs_file_put(file);
	return error;
}

SYSCALL_DEFINE4(ms_ipc_call, int, fd, const struct ipc_message *, message, struct ipc_message *,
		reply, uint64_t, timeout_ns)
{
	struct ipc_message m, r;
	int error = message_from_user(&m, message);
	if (error)
		return error;
	if (message_buffer_writable(reply))
		return -EFAULT;
	struct vfs_file *file;
	struct ipc_endpoint *e = ipc_file_endpoint(fd, &file, &error);
	if (!e)
		return error;
	error = ipc_call(e, &m, &r, timeout_ns);
	vfs_file_put(file);
	return error ? error : message_to_user(reply, &r);
}

SYSCALL_DEFINE3(ms_ipc_receive, int, fd, struct ipc_message *, message, uint64_t, timeout_ns)
{
	struct ipc_message m;
	if (message_buffer_writable(message))
		return -EFAULT;
	int error;
	struct vfs_file *file;
	struct ipc_endpoint *e = ipc_file_endpoint(fd, &file, &error);
	if (!e)
		return error;
	error = ipc_receive(e, &m, timeout_ns);
	vfs_file_put(file);
	return error ? error : message_to_user(message, &m);
}

SYSCALL_DEFINE3(ms_ipc_reply, int, fd, uint64_t, token, const struct ipc_message *, message)
{
	struct ipc_message m;
	int error = message_from_user(&m, message);
	if (error)
		return error;
	struct vfs_file *file;
	struct ipc_endpoint *e = ipc_file_endpoint(fd, &file, &error);
	if (!e)
		return error;
	error = ipc_reply(e, token, &m);
	vfs_file_put(file);
	return error;
}

/* The monitor's loop: one system call per event.  The reply is read before
 * anything is done, the received message written after. */
SYSCALL_DEFINE5(ms_ipc_reply_receive, int, fd, uint64_t, token, const struct ipc_message *, reply,
		struct ipc_message *, message, uint64_t, timeout_ns)
{
	struct ipc_message r, m;
	int error = token ? message_from_user(&r, reply) : 0;
	if (error)
		return error;
	if (message_buffer_writable(message))
		return -EFAULT;
	struct vfs_file *file;
	struct ipc_endpoint *e = ipc_file_endpoint(fd, &file, &error);
	if (!e)
		return error;
	error = ipc_reply_receive(e, token, &r, &m, timeout_ns);
	vfs_file_put(file);
	return error ? error : message_to_user(message, &m);
}

SYSCALL_DEFINE2(ms_ipc_stats, int, fd, struct ipc_stats *, stats)
{
	int error;
	struct vfs_file *file;
	struct ipc_endpoint *e = ipc_file_endpoint(fd, &file, &error);
	if (!e)
		return error;
	struct ipc_stats s;
	ipc_get_stats(e, &s);
	vfs_file_put(file);
	return copy_to_user(stats, &s, sizeof s) ? -EFAULT : 0;
}
