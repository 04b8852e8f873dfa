/*
 * Sockets: the kernel's socket API over lwIP's socket layer (lwip_*), and
 * sockets as files.  The API speaks Linux (values, struct sockaddr_in, flags)
 * and translates to lwIP's own numbering here, in one place.
 *
 * Blocking.  lwIP's sockets stay in blocking mode with a receive and send
 * timeout of one slice (SLICE_MS); a blocking call repeats lwIP's call slice
 * by slice, so it can give up when the process must end (-EINTR) or the
 * socket's own SO_RCVTIMEO/SO_SNDTIMEO passes, which lwIP alone cannot do.
 * A nonblocking socket tells lwIP so (lwip_fcntl) and never loops.
 *
 * Readiness.  poll asks lwIP's lwip_poll about one socket with no timeout.
 * To learn when to ask again, each socket's netconn callback (lwIP's
 * event_callback, which counts received data, free send space and errors) is
 * wrapped by one that also calls vfs_poll_notify_key with the netconn, the
 * socket file's poll key (so a poller wakes for its own connections only);
 * accepted connections inherit the wrapped callback from their listener.
 *
 * Accounting.  Creating, connecting, accepting, sending and receiving
 * record the caller's activity in the socket (activity.c), and a send or
 * receive charges the TCP payload it moved to the caller's activity.
 *
 * Lifetime.  A socket embeds its anonymous node (S_IFSOCK).  Its creator
 * holds one reference; net_socket_open_file hands that reference to a file,
 * whose release closes the lwIP socket.  The node's last reference frees it.
 *
 * Shares.  A socket made by a user other than root is counted to that user
 * (user_sockets.c) from before lwIP makes it until lwIP's socket is closed:
 * as a socket, a datagram socket, and once it listens a listener; accept
 * counts the new one to its caller before it takes the connection.  A
 * listener's queue places count as sockets of its owner (take_queue_places).
 */
#include "lwip/api.h"
#include "lwip/priv/sockets_priv.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/sockets.h"

#include "acct/acct.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "net/internal.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "time/time.h"

#define SLICE_MS             200
#define NET_S_IFSOCK         0140000
#define SEND_BUFFER_REPORTED TCP_SND_BUF /* SO_SNDBUF: lwIP has no setting */

static volatile int64_t sockets_alive;
static netconn_callback lwip_event_callback; /* lwIP's own, wrapped below */

int64_t net_sockets_alive(void)
{
	return __atomic_load_n(&sockets_alive, __ATOMIC_RELAXED);
}

/* ---- Translation ----------------------------------------------------------- */

/* Returns a failed lwIP call's errno, negated. */
static int lwip_error(void)
{
	return -net_port_take_errno();
}

static int to_lwip_flags(int flags)
{
	int out = 0;
	if (flags & NET_MSG_PEEK)
		out |= MSG_PEEK;
	if (flags & NET_MSG_DONTWAIT)
		out |= MSG_DONTWAIT;
	if (flags & NET_MSG_WAITALL)
		out |= MSG_WAITALL;
	if (flags & NET_MSG_MORE)
		out |= MSG_MORE;
	return out;
}

static void to_lwip_address(const struct net_sockaddr_in *in, struct sockaddr_in *out)
{
	memset(out, 0, sizeof *out);
	out->sin_len = sizeof *out;
	out->sin_family = AF_INET;
	out->sin_port = in->port;
	out->sin_addr.s_addr = in->address;
}

static void from_lwip_address(const struct sockaddr_in *in, struct net_sockaddr_in *out)
{
	memset(out, 0, sizeof *out);
	out->family = NET_AF_INET;
	out->port = in->sin_port;
	out->address = in->sin_addr.s_addr;
}

static unsigned from_lwip_poll(short events)
{
	unsigned out = 0;
	if (events & POLLIN)
		out |= VFS_POLL_IN;
	if (events & POLLOUT)
		out |= VFS_POLL_OUT;
	if (events & POLLERR)
		out |= VFS_POLL_ERR;
	if (events & POLLHUP)
		out |= VFS_POLL_HUP;
	if (events & POLLNVAL)
		out |= VFS_POLL_NVAL;
	return out;
}

/* ---- Readiness notifications ------------------------------------------------ */

static void event_hook(struct netconn *conn, enum netconn_evt event, u16_t length)
{
	lwip_event_callback(conn, event, length);
	vfs_poll_notify_key(conn);
}

/* lwIP's connection behind socket (the key of its readiness), or NULL once
 * closed. */
static const void *socket_conn(struct net_socket *socket)
{
	int lwip = __atomic_load_n(&socket->lwip, __ATOMIC_ACQUIRE);
	struct lwip_sock *sock = lwip >= 0 ? lwip_socket_dbg_get_socket(lwip) : NULL;
	return sock ? sock->conn : NULL;
}

static void hook_events(int lwip)
{
	struct lwip_sock *sock = lwip_socket_dbg_get_socket(lwip);
	if (!sock || !sock->conn || sock->conn->callback == event_hook)
		return;
	if (!lwip_event_callback)
		lwip_event_callback = sock->conn->callback;
	sock->conn->callback = event_hook;
}

/* ---- Life and death --------------------------------------------------------- */

static void socket_node_release(struct vfs_node *node)
{
	net_activity_release(node->private);
	kfree(node->private);
	__atomic_sub_fetch(&sockets_alive, 1, __ATOMIC_RELAXED);
}

static const struct vfs_node_ops socket_node_ops = {
    .release = socket_node_release,
};
static const struct vfs_file_ops socket_file_ops;

static void set_slices(int lwip)
{
	struct timeval slice = {0, SLICE_MS * 1000};
	lwip_setsockopt(lwip, SOL_SOCKET, SO_RCVTIMEO, &slice, sizeof slice);
	lwip_setsockopt(lwip, SOL_SOCKET, SO_SNDTIMEO, &slice, sizeof slice);
}

static void release_charges(uint32_t uid, unsigned charges)
{
	for (unsigned kind = 0; kind < NET_CHARGE_KINDS; kind++)
		if (charges & (1u << kind))
			net_user_release(uid, (enum net_charge)kind, 1);
}

/* Counts each kind in charges (1 << enum net_charge) to uid: all of them,
 * or none and -ENOBUFS. */
static int take_charges(uint32_t uid, unsigned charges)
{
	for (unsigned kind = 0; kind < NET_CHARGE_KINDS; kind++) {
		if (!(charges & (1u << kind)))
			continue;
		int err = net_user_charge(uid, (enum net_charge)kind, 1);
		if (err) {
			release_charges(uid, charges & ((1u << kind) - 1));
			return err;
		}
	}
	return 0;
}

/* Wraps lwIP socket lwip, which holds charges counted to uid (closed and
 * given back on failure). */
static int socket_wrap(int lwip, int type, uint32_t uid, unsigned charges, struct net_socket **out)
{
	struct net_socket *s = kzalloc(sizeof *s);
	if (!s) {
		lwip_close(lwip);
		release_charges(uid, charges);
		return -ENOMEM;
	}
	s->charged_uid = uid;
	s->charges = charges;
	__atomic_add_fetch(&sockets_alive, 1, __ATOMIC_RELAXED);
	vfs_node_init(&s->node, NET_S_IFSOCK | 0777, &socket_node_ops, &socket_file_ops, s);
	s->node.inode = vfs_next_inode();
	s->lwip = lwip;
	s->type = type;
	set_slices(lwip);
	hook_events(lwip);
	*out = s;
	return 0;
}

static bool type_supported(int type, int protocol)
{
	switch (type) {
	case NET_SOCK_STREAM: return protocol == 0 || protocol == NET_IPPROTO_TCP;
	case NET_SOCK_DGRAM: return protocol == 0 || protocol == NET_IPPROTO_UDP;
	case NET_SOCK_RAW: return protocol > 0 && protocol < 256;
	default: return false;
	}
}

JOINPOINT_DEFINE_AS(net, socket, net_socket_create, int, int, domain, int, type, int, protocol,
		    struct net_socket **, out)
{
	int kind = type & ~(NET_SOCK_NONBLOCK | NET_SOCK_CLOEXEC);
	if (!out)
		return -EINVAL;
	if (domain != NET_AF_INET)
		return -EAFNOSUPPORT;
	if (!type_supported(kind, protocol))
		return kind >= NET_SOCK_STREAM && kind <= NET_SOCK_RAW ? -EPROTONOSUPPORT : -EINVAL;
	if (!net_started())
		return -ENETDOWN;
	uint32_t uid = proc_current_euid();
	unsigned charges =
	    1u << NET_CHARGE_SOCKET | (kind == NET_SOCK_DGRAM ? 1u << NET_CHARGE_DATAGRAM : 0);
	int err = take_charges(uid, charges);
	if (err)
		return err;
	int lwip = lwip_socket(AF_INET, kind, protocol);
	if (lwip < 0) {
		err = lwip_error();
		release_charges(uid, charges);
		return err;
	}
	err = socket_wrap(lwip, kind, uid, charges, out);
	if (!err && (type & NET_SOCK_NONBLOCK))
		(*out)->nonblocking = true;
	if (!err)
		net_socket_activity(*out);
	return err;
}

/* Closes lwIP's socket, once, and gives back what it was charged. */
static void close_lwip(struct net_socket *s)
{
	int lwip = __atomic_exchange_n(&s->lwip, -1, __ATOMIC_ACQ_REL);
	if (lwip >= 0) {
		lwip_close(lwip);
		release_charges(s->charged_uid,
				__atomic_exchange_n(&s->charges, 0, __ATOMIC_ACQ_REL));
		net_user_release(s->charged_uid, NET_CHARGE_SOCKET,
				 __atomic_exchange_n(&s->queue_places, 0, __ATOMIC_ACQ_REL));
	}
	vfs_poll_notify();
}

JOINPOINT_DEFINE(net, close, int, struct net_socket *, socket)
{
	if (!socket)
		return -EINVAL;
	close_lwip(socket);
	vfs_node_put(&socket->node);
	return 0;
}

void net_set_nonblocking(struct net_socket *socket, bool nonblocking)
{
	socket->nonblocking = nonblocking;
}

/* Tells lwIP whether the socket blocks, when that changed. */
static void sync_blocking(struct net_socket *s)
{
	bool wanted = s->nonblocking;
	if (s->lwip_nonblocking == wanted)
		return;
	lwip_fcntl(s->lwip, F_SETFL, wanted ? O_NONBLOCK : 0);
	s->lwip_nonblocking = wanted;
}

/* ---- Blocking in slices ----------------------------------------------------- */

static uint64_t deadline_after(uint64_t timeout_ns)
{
	return timeout_ns ? clock_ns() + timeout_ns : 0;
}

/* After a slice that ended with -EAGAIN: keep waiting?  Otherwise *err says
 * why not (-EAGAIN for nonblocking or the deadline, -EINTR). */
static bool keep_waiting(const struct net_socket *s, int flags, uint64_t deadline, int *err)
{
	*err = -EAGAIN;
	if (s->nonblocking || (flags & NET_MSG_DONTWAIT))
		return false;
	if (vfs_signal_pending()) {
		*err = -EINTR;
		return false;
	}
	return !deadline || clock_ns() < deadline;
}

/* ---- Connections ------------------------------------------------------------ */

/* With SO_REUSEADDR lwIP lets a socket bound to one address share a port
 * with a listener bound to any address, and takes that port's connections
 * from it (the more exact binding wins): another user's server would take
 * them.  Refused as Linux does: no TCP bind onto a port a socket listens on
 * over the same or any address. */
static bool port_listened_on(const struct sockaddr_in *a)
{
	bool taken = false;
	u16_t port = lwip_ntohs(a->sin_port);
	LOCK_TCPIP_CORE();
	for (struct tcp_pcb_listen *l = tcp_listen_pcbs.listen_pcbs; l && !taken; l = l->next)
		taken =
		    l->local_port == port &&
		    (ip_addr_isany(&l->local_ip) || a->sin_addr.s_addr == PP_HTONL(INADDR_ANY) ||
		     ip4_addr_get_u32(ip_2_ip4(&l->local_ip)) == a->sin_addr.s_addr);
	UNLOCK_TCPIP_CORE();
	return taken;
}

static int bind_lwip(struct net_socket *socket, struct sockaddr_in *a)
{
	if (socket->type == NET_SOCK_STREAM && a->sin_port && port_listened_on(a))
		return -EADDRINUSE;
	return lwip_bind(socket->lwip, (struct sockaddr *)a, sizeof *a) ? lwip_error() : 0;
}

JOINPOINT_DEFINE(net, bind, int, struct net_socket *, socket, const struct net_sockaddr_in *,
		 address)
{
	struct sockaddr_in a;
	if (!socket || !address)
		return -EINVAL;
	if (address->family != NET_AF_INET)
		return -EAFNOSUPPORT;
	to_lwip_address(address, &a);
	/* Claimed before lwIP sees it: two binds at once (a socket shared
	 * across fork) cannot both get through. */
	int fresh = NET_SOCKET_FRESH;
	if (!__atomic_compare_exchange_n(&socket->state, &fresh, NET_SOCKET_BOUND, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return -EINVAL;
	int err = bind_lwip(socket, &a);
	if (err)
		__atomic_store_n(&socket->state, NET_SOCKET_FRESH, __ATOMIC_RELEASE);
	return err;
}

/* The bind check alone lets two sockets with SO_REUSEADDR bind any and one
 * address on a port before either listens; the second listen is refused
 * here.  One listen at a time: lwIP takes its core lock inside lwip_listen,
 * so the check and the listen are held together by this mutex instead. */
static struct mutex listen_lock = MUTEX_INIT(listen_lock, "net.listen");

/* A listener's queue: lwIP (TCP_LISTEN_BACKLOG) holds at most its backlog
 * of connections from their SYN until accept takes them, each with a pcb
 * and, once complete, a netconn of the pool sockets come from.  So for a
 * user other than root each place counts as one of the owner's sockets
 * from its first listen until it is closed: the backlog is cut to
 * NET_USER_QUEUE_MAX and to what is left of the owner's share, and with no
 * place left listen is -ENOBUFS.  Returns the places taken (root: the
 * backlog, counted against nothing) or -ENOBUFS. */
static int take_queue_places(const struct net_socket *socket, int backlog)
{
	if (socket->charged_uid == ROOT_UID)
		return backlog;
	int places = backlog < NET_USER_QUEUE_MAX ? backlog : NET_USER_QUEUE_MAX;
	for (; places > 0; places--)
		if (!net_user_charge(socket->charged_uid, NET_CHARGE_SOCKET, (unsigned)places))
			return places;
	return -ENOBUFS;
}

/* The backlog lwIP is given when a listening socket listens again: no more
 * than the places its first listen took (a user's), so that it takes no
 * more of the owner's share. */
static int backlog_again(const struct net_socket *socket, int backlog)
{
	if (socket->charged_uid == ROOT_UID)
		return backlog;
	int places = (int)__atomic_load_n(&socket->queue_places, __ATOMIC_ACQUIRE);
	return backlog < places ? backlog : places;
}

/* Gives back what a failed first listen took. */
static void untake_listen_charges(struct net_socket *socket, unsigned charge)
{
	if (__atomic_fetch_and(&socket->charges, ~charge, __ATOMIC_ACQ_REL) & charge)
		release_charges(socket->charged_uid, charge);
	net_user_release(socket->charged_uid, NET_CHARGE_SOCKET,
			 __atomic_exchange_n(&socket->queue_places, 0, __ATOMIC_ACQ_REL));
}

/* A first listen takes a listener from lwIP's pool and the queue's places,
 * counted before lwIP sees it; returns the backlog for lwIP or -ENOBUFS. */
static int take_listen_charges(struct net_socket *socket, int backlog)
{
	unsigned charge = 1u << NET_CHARGE_LISTENER;
	int err = take_charges(socket->charged_uid, charge);
	if (err)
		return err;
	__atomic_or_fetch(&socket->charges, charge, __ATOMIC_ACQ_REL);
	int places = take_queue_places(socket, backlog);
	if (places < 0) {
		untake_listen_charges(socket, charge);
		return places;
	}
	if (socket->charged_uid != ROOT_UID)
		__atomic_store_n(&socket->queue_places, (unsigned)places, __ATOMIC_RELEASE);
	return places;
}

static int listen_lwip(struct net_socket *socket, int backlog)
{
	struct sockaddr_in a;
	socklen_t length = sizeof a;
	bool again = __atomic_load_n(&socket->state, __ATOMIC_ACQUIRE) == NET_SOCKET_LISTENING;
	if (again)
		return lwip_listen(socket->lwip, backlog_again(socket, backlog)) ? lwip_error() : 0;
	if (!lwip_getsockname(socket->lwip, (struct sockaddr *)&a, &length) && a.sin_port &&
	    port_listened_on(&a))
		return -EADDRINUSE;
	int queue = take_listen_charges(socket, backlog);
	if (queue < 0)
		return queue;
	int err = lwip_listen(socket->lwip, queue) ? lwip_error() : 0;
	if (!err)
		__atomic_store_n(&socket->state, NET_SOCKET_LISTENING, __ATOMIC_RELEASE);
	else
		untake_listen_charges(socket, 1u << NET_CHARGE_LISTENER);
	return err;
}

JOINPOINT_DEFINE(net, listen, int, struct net_socket *, socket, int, backlog)
{
	if (!socket)
		return -EINVAL;
	if (socket->type != NET_SOCK_STREAM)
		return -EOPNOTSUPP;
	if (__atomic_load_n(&socket->state, __ATOMIC_ACQUIRE) == NET_SOCKET_CONNECTED)
		return -EINVAL;
	if (backlog <= 0 || backlog > 255)
		backlog = 255;
	mutex_lock(&listen_lock);
	int err = listen_lwip(socket, backlog);
	mutex_unlock(&listen_lock);
	return err;
}

JOINPOINT_DEFINE(net, accept, int, struct net_socket *, socket, struct net_socket **, out,
		 struct net_sockaddr_in *, peer)
{
	struct sockaddr_in a;
	int err;
	if (!socket || !out)
		return -EINVAL;
	if (socket->type != NET_SOCK_STREAM)
		return -EOPNOTSUPP;
	if (__atomic_load_n(&socket->state, __ATOMIC_ACQUIRE) != NET_SOCKET_LISTENING)
		return -EINVAL;
	/* The new socket is counted to the caller before lwIP gives it: a
	 * caller past its share leaves the connection queued. */
	uint32_t uid = proc_current_euid();
	err = take_charges(uid, 1u << NET_CHARGE_SOCKET);
	if (err)
		return err;
	sync_blocking(socket);
	uint64_t deadline = deadline_after(socket->recv_timeout_ns);
	for (;;) {
		socklen_t length = sizeof a;
		int lwip = lwip_accept(socket->lwip, (struct sockaddr *)&a, &length);
		if (lwip >= 0) {
			err = socket_wrap(lwip, NET_SOCK_STREAM, uid, 1u << NET_CHARGE_SOCKET, out);
			if (!err)
				(*out)->state = NET_SOCKET_CONNECTED;
			if (!err && peer)
				from_lwip_address(&a, peer);
			if (!err)
				net_socket_activity(*out);
			return err;
		}
		err = lwip_error();
		if (err != -EAGAIN || !keep_waiting(socket, 0, deadline, &err)) {
			release_charges(uid, 1u << NET_CHARGE_SOCKET);
			return err;
		}
	}
}

JOINPOINT_DEFINE(net, connect, int, struct net_socket *, socket, const struct net_sockaddr_in *,
		 address)
{
	struct sockaddr_in a;
	if (!socket || !address)
		return -EINVAL;
	if (address->family != NET_AF_INET)
		return -EAFNOSUPPORT;
	if (__atomic_load_n(&socket->state, __ATOMIC_ACQUIRE) == NET_SOCKET_LISTENING)
		return -EISCONN;
	to_lwip_address(address, &a);
	sync_blocking(socket);
	net_socket_activity(socket); /* before the SYN */
	int err = lwip_connect(socket->lwip, (struct sockaddr *)&a, sizeof a) ? lwip_error() : 0;
	socket->connecting = err == -EINPROGRESS;
	if (!err || err == -EINPROGRESS) /* bound now too: a later bind is refused */
		__atomic_store_n(&socket->state, NET_SOCKET_CONNECTED, __ATOMIC_RELEASE);
	return err == -ECONNRESET ? -ECONNREFUSED : err; /* lwIP: a reset is a reset */
}

JOINPOINT_DEFINE(net, shutdown, int, struct net_socket *, socket, int, how)
{
	if (!socket || how < NET_SHUT_RD || how > NET_SHUT_RDWR)
		return -EINVAL;
	int err = lwip_shutdown(socket->lwip, how) ? lwip_error() : 0;
	vfs_poll_notify_key(socket_conn(socket));
	return err;
}

/* ---- Data ------------------------------------------------------------------- */

static int64_t send_once(struct net_socket *s, const void *buffer, size_t length, int flags,
			 const struct net_sockaddr_in *to)
{
	struct sockaddr_in a;
	ssize_t n;
	if (to) {
		to_lwip_address(to, &a);
		n = lwip_sendto(s->lwip, buffer, length, to_lwip_flags(flags),
				(struct sockaddr *)&a, sizeof a);
	} else {
		n = lwip_send(s->lwip, buffer, length, to_lwip_flags(flags));
	}
	return n < 0 ? lwip_error() : n;
}

JOINPOINT_DEFINE(net, send, int64_t, struct net_socket *, socket, const void *, buffer, size_t,
		 length, int, flags, const struct net_sockaddr_in *, to)
{
	if (!socket || (!buffer && length))
		return -EINVAL;
	if (to && to->family != NET_AF_INET)
		return -EAFNOSUPPORT;
	sync_blocking(socket);
	uint64_t activity = net_socket_activity(socket);
	uint64_t deadline = deadline_after(socket->send_timeout_ns);
	size_t done = 0;
	int err = 0;
	do {
		int64_t n =
		    send_once(socket, (const char *)buffer + done, length - done, flags, to);
		if (n >= 0) {
			done += (size_t)n;
			if (socket->type != NET_SOCK_STREAM)
				break;
			continue;
		}
		err = (int)n;
		if (err != -EAGAIN || !keep_waiting(socket, flags, deadline, &err))
			break;
	} while (done < length);
	if (activity && done && socket->type == NET_SOCK_STREAM)
		acct_charge_ref(activity, ACCT_TCP_BYTES_SENT, done);
	if (done)
		return (int64_t)done;
	if (err == -EPIPE && !(flags & NET_MSG_NOSIGNAL))
		vfs_send_sigpipe();
	return err;
}

/* A datagram's sender goes to from; a stream's is getpeername's, and from
 * stays empty (lwIP would fill it from a connection a reset may have taken,
 * or not at all). */
static int64_t recv_once(struct net_socket *s, void *buffer, size_t length, int flags,
			 struct net_sockaddr_in *from)
{
	struct sockaddr_in a = {0};
	socklen_t a_length = sizeof a;
	bool sender = from && s->type != NET_SOCK_STREAM;
	ssize_t n = lwip_recvfrom(s->lwip, buffer, length, to_lwip_flags(flags),
				  sender ? (struct sockaddr *)&a : NULL, sender ? &a_length : NULL);
	if (n < 0)
		return lwip_error();
	if (sender)
		from_lwip_address(&a, from);
	return n;
}

JOINPOINT_DEFINE(net, recv, int64_t, struct net_socket *, socket, void *, buffer, size_t, length,
		 int, flags, struct net_sockaddr_in *, from)
{
	if (!socket || (!buffer && length))
		return -EINVAL;
	sync_blocking(socket);
	uint64_t activity = net_socket_activity(socket);
	uint64_t deadline = deadline_after(socket->recv_timeout_ns);
	for (;;) {
		int err;
		int64_t n = recv_once(socket, buffer, length, flags, from);
		if (n > 0 && activity && socket->type == NET_SOCK_STREAM && !(flags & NET_MSG_PEEK))
			acct_charge_ref(activity, ACCT_TCP_BYTES_RECEIVED, (uint64_t)n);
		if (n >= 0)
			return n;
		err = (int)n;
		if (err != -EAGAIN || !keep_waiting(socket, flags, deadline, &err))
			return err;
	}
}

/* _NOSLEEP: lwip_poll with a zero timeout only scans the socket under
 * SYS_ARCH_PROTECT (a spinlock, interrupts off) and sets the errno slot (a
 * spinlock).  With LWIP_NETCONN_FULLDUPLEX its done_socket could free a
 * socket closed meanwhile, through the core mutex: then this may sleep. */
_Static_assert(!LWIP_NETCONN_FULLDUPLEX, "net.poll is _NOSLEEP: lwip_poll must not sleep");
JOINPOINT_DEFINE_NOSLEEP(net, poll, unsigned, struct net_socket *, socket)
{
	if (!socket || socket->lwip < 0)
		return VFS_POLL_NVAL;
	struct pollfd fd = {socket->lwip, POLLIN | POLLOUT, 0};
	if (lwip_poll(&fd, 1, 0) < 0) {
		net_port_take_errno();
		return VFS_POLL_ERR;
	}
	return from_lwip_poll(fd.revents);
}

/* ---- Names ------------------------------------------------------------------ */

static int get_name(struct net_socket *s, struct net_sockaddr_in *address, bool peer)
{
	struct sockaddr_in a;
	socklen_t length = sizeof a;
	if (!s || !address)
		return -EINVAL;
	int r = peer ? lwip_getpeername(s->lwip, (struct sockaddr *)&a, &length)
		     : lwip_getsockname(s->lwip, (struct sockaddr *)&a, &length);
	if (r < 0)
		return lwip_error();
	from_lwip_address(&a, address);
	return 0;
}

int net_getsockname(struct net_socket *socket, struct net_sockaddr_in *address)
{
	return get_name(socket, address, false);
}

int net_getpeername(struct net_socket *socket, struct net_sockaddr_in *address)
{
	return get_name(socket, address, true);
}

/* ---- Files ------------------------------------------------------------------ */

struct net_socket *net_socket_of_file(struct vfs_file *file)
{
	if (!file || file->ops != &socket_file_ops)
		return NULL;
	struct net_socket *s = file->private;
	s->nonblocking = (file->flags & VFS_O_NONBLOCK) != 0;
	return s;
}

static int64_t socket_read(struct vfs_file *file, void *buffer, size_t length, uint64_t offset)
{
	return net_recv(net_socket_of_file(file), buffer, length, 0, NULL);
}

static int64_t socket_write(struct vfs_file *file, const void *buffer, size_t length,
			    uint64_t offset)
{
	return net_send(net_socket_of_file(file), buffer, length, 0, NULL);
}

static const void *socket_poll_key(struct vfs_file *file)
{
	return socket_conn(file->private);
}

static unsigned socket_poll(struct vfs_file *file)
{
	return net_poll(file->private);
}

static void socket_release(struct vfs_file *file)
{
	close_lwip(file->private);
}

static const struct vfs_file_ops socket_file_ops = {
    .read = socket_read,
    .write = socket_write,
    .release = socket_release,
    .poll = socket_poll,
    .poll_key = socket_poll_key,
};

int net_socket_open_file(struct net_socket *socket, unsigned flags, struct vfs_file **file)
{
	int err =
	    vfs_file_create(&socket->node, VFS_O_RDWR | (flags & VFS_O_NONBLOCK), socket, file);
	if (err) {
		net_close(socket);
		return err;
	}
	socket->nonblocking = (flags & VFS_O_NONBLOCK) != 0;
	vfs_node_put(&socket->node); /* the file holds it now */
	return 0;
}
