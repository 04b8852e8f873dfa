/*
 * The network stack: lwIP in the kernel (IPv4, TCP, UDP, ICMP, ARP, DHCP)
 * bound to every NIC of drivers/net, and BSD sockets on top of it for the
 * kernel and, as files, for user programs (the socket system calls).  Values
 * (address families, options, flags, struct net_sockaddr_in) are Linux's, so
 * the system calls pass user arguments through; the socket layer translates
 * them to lwIP's.  The socket API functions are join points ("net.socket",
 * "net.send", "net.recv", "net.accept", ...).
 *
 *     struct net_socket *s;  struct net_sockaddr_in any = net_sockaddr(0, 8080);
 *     net_socket_create(NET_AF_INET, NET_SOCK_STREAM, 0, &s); net_bind(s, &any);
 *     net_listen(s, 16); net_accept(s, &client, NULL); net_send(client, "hi", 2, 0, NULL);
 *
 * Errors are negative Linux errno values: -EAGAIN (nonblocking, nothing to
 * do), -ECONNREFUSED, -ECONNRESET, -EPIPE, -EADDRINUSE, -ETIMEDOUT, -EINTR
 * (the calling process is ending), -EINVAL, -ENOMEM, -ENOBUFS, ...
 */
#ifndef MODULES_NET_NET_H
#define MODULES_NET_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct nic;
struct vfs_file;

/* Address family, socket types and their flags (Linux's values). */
#define NET_AF_INET       2
#define NET_SOCK_STREAM   1
#define NET_SOCK_DGRAM    2
#define NET_SOCK_RAW      3
#define NET_SOCK_NONBLOCK 04000
#define NET_SOCK_CLOEXEC  02000000
#define NET_IPPROTO_IP    0
#define NET_IPPROTO_ICMP  1
#define NET_IPPROTO_TCP   6
#define NET_IPPROTO_UDP   17

/* A user's share of the sockets (user_sockets.c): a user other than root
 * holds at most NET_USER_SOCKETS_MAX sockets in all its processes, each
 * place in its listeners' queues counting as one (a listener's backlog is
 * cut to NET_USER_QUEUE_MAX places, and to what is left of the share: httpd's
 * 64 connections, its listener and its queue fit), and all such users together leave
 * root the last NET_ROOT_RESERVED_SOCKETS of lwIP's MEMP_NUM_NETCONN (256),
 * NET_ROOT_RESERVED_DATAGRAMS of its MEMP_NUM_UDP_PCB (16) and
 * NET_ROOT_RESERVED_LISTENERS of its MEMP_NUM_TCP_PCB_LISTEN (16); past
 * either, socket, accept and listen are -ENOBUFS.  One user at its bound
 * leaves another (httpd's www) 144 sockets. */
#define NET_USER_SOCKETS_MAX        80
#define NET_USER_QUEUE_MAX          8
#define NET_ROOT_RESERVED_SOCKETS   32
#define NET_ROOT_RESERVED_DATAGRAMS 4
#define NET_ROOT_RESERVED_LISTENERS 4

/* Options: levels and names. */
#define NET_SOL_SOCKET    1
#define NET_SO_REUSEADDR  2
#define NET_SO_TYPE       3
#define NET_SO_ERROR      4
#define NET_SO_BROADCAST  6
#define NET_SO_SNDBUF     7
#define NET_SO_RCVBUF     8
#define NET_SO_KEEPALIVE  9
#define NET_SO_LINGER     13
#define NET_SO_REUSEPORT  15
#define NET_SO_RCVTIMEO   20 /* struct net_timeval */
#define NET_SO_SNDTIMEO   21
#define NET_SO_ACCEPTCONN 30
#define NET_TCP_NODELAY   1
#define NET_TCP_KEEPIDLE  4
#define NET_TCP_KEEPINTVL 5
#define NET_TCP_KEEPCNT   6
#define NET_IP_TOS        1
#define NET_IP_TTL        2

/* send/recv flags. */
#define NET_MSG_PEEK     0x2
#define NET_MSG_DONTWAIT 0x40
#define NET_MSG_WAITALL  0x100
#define NET_MSG_NOSIGNAL 0x4000
#define NET_MSG_MORE     0x8000

/* shutdown */
#define NET_SHUT_RD   0
#define NET_SHUT_WR   1
#define NET_SHUT_RDWR 2

/* Linux's struct sockaddr_in: port and address in network byte order. */
struct net_sockaddr_in {
	uint16_t family; /* NET_AF_INET */
	uint16_t port;
	uint32_t address;
	uint8_t zero[8];
};

struct net_timeval {
	int64_t seconds;
	int64_t microseconds;
};

/* Byte order and a ready-made address: net_sockaddr(NET_IPV4(127,0,0,1), 80). */
#define NET_IPV4(a, b, c, d) \
	((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))
static inline uint16_t net_htons(uint16_t v)
{
	return (uint16_t)(v << 8 | v >> 8);
}
static inline uint32_t net_htonl(uint32_t v)
{
	return __builtin_bswap32(v);
}
/* address and port in host order. */
static inline struct net_sockaddr_in net_sockaddr(uint32_t address, uint16_t port)
{
	struct net_sockaddr_in a = {NET_AF_INET, net_htons(port), net_htonl(address), {0}};
	return a;
}

struct net_socket;

/* ---- The stack ------------------------------------------------------------ */

/* Starts lwIP (its tcpip thread), the loopback interface and one interface
 * per NIC registered so far, configured as the kernel parameter ip= says:
 * ip=dhcp (the default: DHCP, then the static fallback 10.0.2.15/24 gw
 * 10.0.2.2 when no lease came within net_dhcp_ms=, 3000 by default) or
 * ip=static:<a.b.c.d>/<bits>:<gateway>.  Once, after the scheduler and the NIC
 * drivers; returns 0 or -ENOMEM.  Configuration finishes in the background. */
int net_init(void);
/* Binds a NIC registered after net_init.  Returns 0, -EEXIST, -ENOSPC, -ENOMEM. */
int net_attach_nic(struct nic *nic);
/* Waits until the default interface has its address (lease or fallback).
 * Returns 0, -ETIMEDOUT, or -ENODEV (no NIC). */
int net_wait_configured(uint64_t timeout_ns);

struct net_interface {
	char name[16];    /* "lo", "e1000.0", ... */
	uint32_t address; /* host byte order; 0 while unconfigured */
	uint32_t netmask;
	uint32_t gateway;
	uint8_t mac[6];
	bool up, dhcp_lease; /* dhcp_lease: the address came from DHCP */
};
/* Fills *info for the index'th interface (0 = loopback).  Returns 0 or -ENOENT. */
int net_get_interface(unsigned index, struct net_interface *info);

/* Memory the stack holds: lwIP's heap and pools, the port's objects, the
 * socket layer's sockets.  After load it returns to its idle values. */
struct net_memory {
	uint64_t heap_used;   /* bytes of lwIP's heap */
	uint64_t pool_used;   /* objects taken from lwIP's pools, all pools */
	uint64_t pool_errors; /* allocations a pool refused */
	int64_t port_objects; /* semaphores, mailboxes, mutexes, thread starts */
	int64_t sockets;      /* struct net_socket alive */
};
void net_get_memory(struct net_memory *memory);

/* ---- Sockets -------------------------------------------------------------- */

/* Makes a socket (type may carry NET_SOCK_NONBLOCK).  Returns 0 and *out, or
 * -EAFNOSUPPORT, -EPROTONOSUPPORT, -EINVAL, -ENFILE (lwIP's table is full),
 * -ENOMEM. */
int net_socket_create(int domain, int type, int protocol, struct net_socket **out);
/* Closes the socket and frees it (a socket made into a file is closed by
 * closing the file instead).  Returns 0. */
int net_close(struct net_socket *socket);
/* Returns 0, or -EADDRINUSE, -EADDRNOTAVAIL, -EINVAL, -EAFNOSUPPORT. */
int net_bind(struct net_socket *socket, const struct net_sockaddr_in *address);
/* Returns 0, or -EOPNOTSUPP (not TCP), -EINVAL, -ENOMEM. */
int net_listen(struct net_socket *socket, int backlog);
/* Waits for a connection (not when nonblocking).  Returns 0, *out and, if
 * peer is not NULL, the peer's address; or -EAGAIN, -EINVAL (not listening),
 * -ECONNABORTED, -ENFILE, -EINTR. */
int net_accept(struct net_socket *socket, struct net_socket **out, struct net_sockaddr_in *peer);
/* Returns 0, or -EINPROGRESS (nonblocking: poll for NET_POLL_OUT, then
 * SO_ERROR), -ECONNREFUSED, -ETIMEDOUT, -EISCONN, -EALREADY, -ENETUNREACH. */
int net_connect(struct net_socket *socket, const struct net_sockaddr_in *address);
/* Sends length bytes (to: the destination of a datagram, or NULL).  Blocking
 * TCP sends return when all is queued.  Returns the bytes sent, or -EAGAIN,
 * -EPIPE (after SIGPIPE unless NET_MSG_NOSIGNAL), -ECONNRESET, -ENOTCONN,
 * -EMSGSIZE, -ENOMEM, -EINTR, -EFAULT. */
int64_t net_send(struct net_socket *socket, const void *buffer, size_t length, int flags,
		 const struct net_sockaddr_in *to);
/* Receives up to length bytes (from: the sender, or NULL).  Returns the bytes
 * received, 0 at the end of a TCP stream, or -EAGAIN (nonblocking or the
 * receive timeout passed), -ECONNRESET, -ENOTCONN, -EINTR. */
int64_t net_recv(struct net_socket *socket, void *buffer, size_t length, int flags,
		 struct net_sockaddr_in *from);
/* Returns 0, -ENOTCONN, -EINVAL. */
int net_shutdown(struct net_socket *socket, int how);
/* Sets or reads an option (NET_SOL_SOCKET, NET_IPPROTO_TCP, NET_IPPROTO_IP
 * with the names above; values are ints except the timeouts).  Return 0, or
 * -ENOPROTOOPT (unknown), -EINVAL (bad length or value). */
int net_setsockopt(struct net_socket *socket, int level, int name, const void *value,
		   size_t length);
int net_getsockopt(struct net_socket *socket, int level, int name, void *value, size_t *length);
/* The local or the peer's address.  Return 0, or -ENOTCONN (peer). */
int net_getsockname(struct net_socket *socket, struct net_sockaddr_in *address);
int net_getpeername(struct net_socket *socket, struct net_sockaddr_in *address);
/* Blocking or not for every later call (the file's O_NONBLOCK sets it). */
void net_set_nonblocking(struct net_socket *socket, bool nonblocking);
/* What the socket is ready for: VFS_POLL_* bits (modules/vfs/vfs.h). */
unsigned net_poll(struct net_socket *socket);

/* The activity (an acct_ref_t, kernel/acct/acct.h) the socket belongs to,
 * which lwIP's and the NIC's work for it is charged to: every socket call of
 * an accounted thread sets it to the caller's current one.  0 = none. */
void net_set_activity(struct net_socket *socket, uint64_t activity);
uint64_t net_get_activity(const struct net_socket *socket);

/* ---- Sockets as files ----------------------------------------------------- */

/* Wraps socket in an open file (flags: VFS_O_NONBLOCK); the file owns the
 * socket from then on, closing it closes the socket.  Returns 0 and *file, or
 * -ENOMEM (the socket is closed then too). */
int net_socket_open_file(struct net_socket *socket, unsigned flags, struct vfs_file **file);
/* The socket behind file, or NULL when file is not a socket. */
struct net_socket *net_socket_of_file(struct vfs_file *file);

#endif
