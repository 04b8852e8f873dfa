/*
 * The socket system calls (Linux x86_64 numbers and layouts): socket,
 * bind, listen, accept and accept4, connect, sendto and recvfrom (send and
 * recv are these without an address), shutdown, setsockopt and getsockopt,
 * getsockname and getpeername; and sendfile, which sends a file's bytes to a
 * socket (or another file) without a copy through user memory.  A socket is
 * a descriptor: each call finds
 * the file, checks it is a socket (-ENOTSOCK), copies user arguments in,
 * calls the net_* API and copies results out.  Data moves through a kernel
 * bounce buffer of at most IO_CHUNK bytes per call to the socket layer (a
 * send of at most SEND_STACK bytes bounces on the stack: no allocation).
 */
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "net/internal.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"

#define IO_CHUNK      (64 * 1024)
#define SEND_STACK    512 /* a send this small (a response's header) bounces on the stack */
#define OPTION_MAX    64
#define ADDRESS_BYTES sizeof(struct net_sockaddr_in)

static void *current_files(void)
{
	struct process *p = proc_current();
	return p ? proc_slots(p)->files : NULL;
}

/* The socket behind fd, with a reference to its file in *file. */
static int socket_of_fd(int fd, struct vfs_file **file, struct net_socket **socket)
{
	void *table = current_files();
	int err = table ? vfs_fd_get(table, fd, file) : -EBADF;
	if (err)
		return err;
	*socket = net_socket_of_file(*file);
	if (!*socket) {
		vfs_file_put(*file);
		return -ENOTSOCK;
	}
	return 0;
}

/* Installs a new socket as a descriptor.  Returns it, or an error (the
 * socket is closed then). */
static long install_socket(struct net_socket *socket, int flags)
{
	struct vfs_file *file;
	int err =
	    net_socket_open_file(socket, flags & NET_SOCK_NONBLOCK ? VFS_O_NONBLOCK : 0, &file);
	if (err)
		return err;
	void *table = current_files();
	int fd = table ? vfs_fd_install(table, file, flags & NET_SOCK_CLOEXEC) : -EMFILE;
	if (fd < 0)
		vfs_close(file);
	return fd;
}

static int address_from_user(const void *user, uint32_t length, struct net_sockaddr_in *out)
{
	if (length < ADDRESS_BYTES)
		return -EINVAL;
	return copy_from_user(out, user, ADDRESS_BYTES) ? -EFAULT : 0;
}

/* Writes an address and its length out, truncating to the caller's room. */
static int address_to_user(const struct net_sockaddr_in *address, void *user, uint32_t *user_length)
{
	uint32_t room;
	if (!user || !user_length)
		return 0;
	if (copy_from_user(&room, user_length, sizeof room))
		return -EFAULT;
	if (!address->family) { /* none (a stream's recvfrom): its length 0, as Linux */
		uint32_t none = 0;
		return copy_to_user(user_length, &none, sizeof none) ? -EFAULT : 0;
	}
	uint32_t n = room < ADDRESS_BYTES ? room : (uint32_t)ADDRESS_BYTES;
	uint32_t full = ADDRESS_BYTES;
	if (copy_to_user(user, address, n) || copy_to_user(user_length, &full, sizeof full))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE3(socket, int, domain, int, type, int, protocol)
{
	struct net_socket *socket;
	if (type & ~(NET_SOCK_NONBLOCK | NET_SOCK_CLOEXEC | 0xf))
		return -EINVAL;
	if ((type & 0xf) == NET_SOCK_RAW && !proc_has_privilege(PRIV_DEVICE))
		return -EPERM; /* raw packets: device control */
	int err = net_socket_create(domain, type, protocol, &socket);
	return err ? err : install_socket(socket, type);
}

/* bind and connect: a socket, an address from user space, one call. */
static int with_user_address(int fd, const void *user, uint32_t length,
			     int (*op)(struct net_socket *, const struct net_sockaddr_in *))
{
	struct vfs_file *file;
	struct net_socket *socket;
	struct net_sockaddr_in address;
	int err = address_from_user(user, length, &address);
	if (!err)
		err = socket_of_fd(fd, &file, &socket);
	if (err)
		return err;
	err = op(socket, &address);
	vfs_file_put(file);
	return err;
}

#define FIRST_UNPRIVILEGED_PORT 1024

/* net_bind, and a port below 1024 only with PRIV_NET_BIND (-EACCES): a
 * user's server must not take a system service's port. */
static int bind_checked(struct net_socket *socket, const struct net_sockaddr_in *address)
{
	uint16_t port = net_htons(address->port); /* to host order */
	if (port && port < FIRST_UNPRIVILEGED_PORT && !proc_has_privilege(PRIV_NET_BIND))
		return -EACCES;
	return net_bind(socket, address);
}

SYSCALL_DEFINE3(bind, int, fd, const void *, user, uint32_t, length)
{
	return with_user_address(fd, user, length, bind_checked);
}

SYSCALL_DEFINE2(listen, int, fd, int, backlog)
{
	struct vfs_file *file;
	struct net_socket *socket;
	int err = socket_of_fd(fd, &file, &socket);
	if (err)
		return err;
	err = net_listen(socket, backlog);
	vfs_file_put(file);
	return err;
}

static long accept_common(int fd, void *user, uint32_t *user_length, int flags)
{
	struct vfs_file *file;
	struct net_socket *socket, *client;
	struct net_sockaddr_in peer;
	if (flags & ~(NET_SOCK_NONBLOCK | NET_SOCK_CLOEXEC))
		return -EINVAL;
	int err = socket_of_fd(fd, &file, &socket);
	if (err)
		return err;
	err = net_accept(socket, &client, &peer);
	vfs_file_put(file);
	if (err)
		return err;
	long client_fd = install_socket(client, flags);
	if (client_fd >= 0 && address_to_user(&peer, user, user_length)) {
		vfs_fd_close(current_files(), (int)client_fd);
		return -EFAULT;
	}
	return client_fd;
}

SYSCALL_DEFINE3(accept, int, fd, void *, user, uint32_t *, user_length)
{
	thread_set_wait_site("accept"); /* ps's wait channel: lwIP waits on its own semaphores */
	long result = accept_common(fd, user, user_length, 0);
	thread_set_wait_site(NULL);
	return result;
}

SYSCALL_DEFINE4(accept4, int, fd, void *, user, uint32_t *, user_length, int, flags)
{
	thread_set_wait_site("accept");
	long result = accept_common(fd, user, user_length, flags);
	thread_set_wait_site(NULL);
	return result;
}

SYSCALL_DEFINE3(connect, int, fd, const void *, user, uint32_t, length)
{
	thread_set_wait_site("connect");
	long result = with_user_address(fd, user, length, net_connect);
	thread_set_wait_site(NULL);
	return result;
}

SYSCALL_DEFINE2(shutdown, int, fd, int, how)
{
	struct vfs_file *file;
	struct net_socket *socket;
	int err = socket_of_fd(fd, &file, &socket);
	if (err)
		return err;
	err = net_shutdown(socket, how);
	vfs_file_put(file);
	return err;
}

/* ---- Data ------------------------------------------------------------------- */

static long send_chunks(struct net_socket *socket, const char *user, size_t length, int flags,
			const struct net_sockaddr_in *to, char *bounce)
{
	size_t done = 0;
	do {
		size_t chunk = length - done < IO_CHUNK ? length - done : IO_CHUNK;
		if (copy_from_user(bounce, user + done, chunk))
			return done ? (long)done : -EFAULT;
		int64_t n = net_send(socket, bounce, chunk, flags, to);
		if (n < 0)
			return done ? (long)done : (long)n;
		done += (size_t)n;
		if ((size_t)n < chunk || to)
			break;
	} while (done < length);
	return (long)done;
}

SYSCALL_DEFINE6(sendto, int, fd, const void *, user, size_t, length, int, flags, const void *,
		user_to, uint32_t, to_length)
{
	struct vfs_file *file;
	struct net_socket *socket;
	struct net_sockaddr_in to;
	if (!uaccess_range_ok((uint64_t)user, length))
		return -EFAULT;
	int err = user_to ? address_from_user(user_to, to_length, &to) : 0;
	if (!err)
		err = socket_of_fd(fd, &file, &socket);
	if (err)
		return err;
	size_t room = length < IO_CHUNK ? length : IO_CHUNK;
	char on_stack[SEND_STACK];
	char *bounce = length <= SEND_STACK ? on_stack : kmalloc(room);
	long result = bounce
			  ? send_chunks(socket, user, length, flags, user_to ? &to : NULL, bounce)
			  : -ENOMEM;
	if (bounce != on_stack)
		kfree(bounce);
	vfs_file_put(file);
	return result;
}

SYSCALL_DEFINE6(recvfrom, int, fd, void *, user, size_t, length, int, flags, void *, user_from,
		uint32_t *, from_length)
{
	struct vfs_file *file;
	struct net_socket *socket;
	struct net_sockaddr_in from = {0};
	if (!uaccess_range_ok((uint64_t)user, length))
		return -EFAULT;
	int err = socket_of_fd(fd, &file, &socket);
	if (err)
		return err;
	size_t room = length < IO_CHUNK ? length : IO_CHUNK;
	char *bounce = kmalloc(room ? room : 1);
	thread_set_wait_site("recv");
	long result = bounce ? net_recv(socket, bounce, room, flags, &from) : -ENOMEM;
	thread_set_wait_site(NULL);
	if (result > 0 && copy_to_user(user, bounce, (size_t)result))
		result = -EFAULT;
	if (result >= 0 && address_to_user(&from, user_from, from_length))
		result = -EFAULT;
	kfree(bounce);
	vfs_file_put(file);
	return result;
}

/* ---- sendfile ---------------------------------------------------------------- */

/* Read from the file per step: about what a non-blocking send takes at once,
 * so that little is read again after a short send. */
#define SENDFILE_CHUNK (16 * 1024)
#define SENDFILE_MAX   0x7ffff000 /* one call's most, as Linux's MAX_RW_COUNT */

static int64_t write_out(struct vfs_file *out, struct net_socket *socket, const void *buffer,
			 size_t length, int flags)
{
	return socket ? net_send(socket, buffer, length, flags, NULL)
		      : vfs_write(out, buffer, length);
}

/* Copies up to count bytes of in from position to out through buffer, until
 * the end of the file or a short write.  Returns the bytes written, or an
 * error when there were none. */
static long copy_between(struct vfs_file *in, uint64_t position, struct vfs_file *out, size_t count,
			 char *buffer)
{
	struct net_socket *socket = net_socket_of_file(out);
	size_t done = 0;
	while (done < count) {
		size_t chunk = count - done < SENDFILE_CHUNK ? count - done : SENDFILE_CHUNK;
		int64_t got = vfs_pread(in, buffer, chunk, position + done);
		if (got == -EISDIR)
			got = -EINVAL; /* Linux's answer */
		if (got <= 0)
			return done ? (long)done : (long)got;
		/* More follows: lwIP holds the chunks back to send them together. */
		int more = done + (size_t)got < count ? NET_MSG_MORE : 0;
		int64_t put = write_out(out, socket, buffer, (size_t)got, more);
		if (put < 0)
			return done ? (long)done : (long)put;
		done += (size_t)put;
		if (put < got)
			break;
	}
	return (long)done;
}

/* Linux's checks of the input, in its order: open for reading (-EBADF), an
 * offset only for a file with positions (-ESPIPE), no negative offset or
 * count (-EINVAL). */
static long check_input(struct vfs_file *in, const int64_t *user_offset, int64_t offset,
			size_t count)
{
	if ((in->flags & VFS_O_ACCMODE) == VFS_O_WRONLY)
		return -EBADF;
	if (user_offset && vfs_lseek(in, 0, VFS_SEEK_CUR) == -ESPIPE)
		return -ESPIPE;
	return offset < 0 || (int64_t)count < 0 ? -EINVAL : 0;
}

/* The output: open for writing (-EBADF), not opened for appending (-EINVAL,
 * as Linux), and not the input's file (-EINVAL: a file sent into itself
 * would read what it writes; Linux copies it, this kernel refuses). */
static long check_output(const struct vfs_file *out, const struct vfs_file *in)
{
	if ((out->flags & VFS_O_ACCMODE) == VFS_O_RDONLY)
		return -EBADF;
	return in->node == out->node || (out->flags & VFS_O_APPEND) ? -EINVAL : 0;
}

/* sendfile with both files found and checked: from *offset when the caller
 * gave one (the file's position stays), else from the file's position
 * (which moves by what was sent). */
static long sendfile_files(struct vfs_file *out, struct vfs_file *in, int64_t *user_offset,
			   int64_t offset, size_t count)
{
	if (!user_offset) {
		offset = vfs_lseek(in, 0, VFS_SEEK_CUR);
		if (offset < 0)
			return offset == -ESPIPE ? -EINVAL : (long)offset;
	}
	if (count == 0)
		return 0;
	char *buffer = kmalloc(count < SENDFILE_CHUNK ? count : SENDFILE_CHUNK);
	if (!buffer)
		return -ENOMEM;
	long sent = copy_between(in, (uint64_t)offset, out, count, buffer);
	kfree(buffer);
	if (sent <= 0)
		return sent;
	int64_t end = offset + sent;
	if (user_offset)
		return copy_to_user(user_offset, &end, sizeof end) ? -EFAULT : sent;
	vfs_lseek(in, end, VFS_SEEK_SET);
	return sent;
}

SYSCALL_DEFINE4(sendfile, int, out_fd, int, in_fd, int64_t *, user_offset, size_t, count)
{
	int64_t offset = 0;
	if (user_offset && copy_from_user(&offset, user_offset, sizeof offset))
		return -EFAULT;
	void *table = current_files();
	struct vfs_file *in, *out;
	long result = table ? vfs_fd_get(table, in_fd, &in) : -EBADF;
	if (result)
		return result;
	result = check_input(in, user_offset, offset, count);
	if (!result)
		result = vfs_fd_get(table, out_fd, &out);
	if (result) {
		vfs_file_put(in);
		return result;
	}
	result = check_output(out, in);
	if (!result)
		result = sendfile_files(out, in, user_offset, offset,
					count < SENDFILE_MAX ? count : SENDFILE_MAX);
	vfs_file_put(out);
	vfs_file_put(in);
	return result;
}

/* ---- Options and names ---------------------------------------------------- */

SYSCALL_DEFINE5(setsockopt, int, fd, int, level, int, name, const void *, user, uint32_t, length)
{
	struct vfs_file *file;
	struct net_socket *socket;
	uint8_t value[OPTION_MAX];
	if (length > sizeof value)
		return -EINVAL;
	if (copy_from_user(value, user, length))
		return -EFAULT;
	int err = socket_of_fd(fd, &file, &socket);
	if (err)
		return err;
	err = net_setsockopt(socket, level, name, value, length);
	vfs_file_put(file);
	return err;
}

SYSCALL_DEFINE5(getsockopt, int, fd, int, level, int, name, void *, user, uint32_t *, user_length)
{
	struct vfs_file *file;
	struct net_socket *socket;
	uint8_t value[OPTION_MAX] = {0};
	uint32_t room;
	if (copy_from_user(&room, user_length, sizeof room))
		return -EFAULT;
	size_t length = room < sizeof value ? room : sizeof value;
	int err = socket_of_fd(fd, &file, &socket);
	if (err)
		return err;
	err = net_getsockopt(socket, level, name, value, &length);
	vfs_file_put(file);
	if (err)
		return err;
	uint32_t out = (uint32_t)length;
	if (copy_to_user(user, value, length) || copy_to_user(user_length, &out, sizeof out))
		return -EFAULT;
	return 0;
}

static long get_name(int fd, void *user, uint32_t *user_length, bool peer)
{
	struct vfs_file *file;
	struct net_socket *socket;
	struct net_sockaddr_in address;
	int err = socket_of_fd(fd, &file, &socket);
	if (err)
		return err;
	err = peer ? net_getpeername(socket, &address) : net_getsockname(socket, &address);
	vfs_file_put(file);
	if (!err && (!user || !user_length))
		err = -EFAULT;
	return err ? err : address_to_user(&address, user, user_length);
}

SYSCALL_DEFINE3(getsockname, int, fd, void *, user, uint32_t *, user_length)
{
	return get_name(fd, user, user_length, false);
}

SYSCALL_DEFINE3(getpeername, int, fd, void *, user, uint32_t *, user_length)
{
	return get_name(fd, user, user_length, true);
}
