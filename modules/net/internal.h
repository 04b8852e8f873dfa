/*
 * Private to modules/net: the socket structure, the port's helpers, and the
 * pieces the files share.  Nothing outside modules/net includes this.
 */
#ifndef MODULES_NET_INTERNAL_H
#define MODULES_NET_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "net/net.h"
#include "vfs/vfs.h"

/* A socket: lwIP's socket number plus what the kernel adds.  It embeds the
 * anonymous node its file hangs on; the node's last reference frees it. */
/* Where a socket is in POSIX's life cycle.  lwIP does not check all of it
 * (a TCP socket bound twice is put on its bound list twice), so the socket
 * calls check it here first: bind only from FRESH, listen not once
 * CONNECTED, accept only when LISTENING, connect not when LISTENING. */
enum net_socket_state {
	NET_SOCKET_FRESH,
	NET_SOCKET_BOUND,
	NET_SOCKET_LISTENING,
	NET_SOCKET_CONNECTED
};

struct net_socket {
	struct vfs_node node;
	int lwip; /* lwIP's socket number */
	int type; /* NET_SOCK_STREAM, _DGRAM, _RAW */
	volatile bool nonblocking;
	bool lwip_nonblocking;    /* what lwIP was last told */
	bool connecting;          /* a nonblocking connect is under way */
	volatile int state;       /* enum net_socket_state: POSIX's, checked before lwIP's */
	uint64_t recv_timeout_ns; /* SO_RCVTIMEO; 0 = none */
	uint64_t send_timeout_ns; /* SO_SNDTIMEO */
	/* The activity (acct_ref_t) this socket belongs to: the last accounted
	 * one that used it, 0 when none (activity.c). */
	volatile uint64_t activity;
	uint32_t charged_uid;  /* the user its charges are counted to (user_sockets.c) */
	unsigned charges;      /* 1 << enum net_charge for each charge it holds */
	unsigned queue_places; /* a listener's: its queue, counted as sockets (socket.c) */
};

/* user_sockets.c: what a socket takes of lwIP's pools, counted to the user
 * that made it (NET_USER_SOCKETS_MAX, NET_ROOT_RESERVED_*, net.h): count of
 * kind at once.  charge returns 0 or -ENOBUFS (all or none of count); root's
 * charges count against nothing. */
enum net_charge {
	NET_CHARGE_SOCKET,   /* any socket: NUM_SOCKETS */
	NET_CHARGE_DATAGRAM, /* a UDP socket: MEMP_NUM_UDP_PCB */
	NET_CHARGE_LISTENER, /* a listening socket: MEMP_NUM_TCP_PCB_LISTEN */
	NET_CHARGE_KINDS,
};
int net_user_charge(uint32_t uid, enum net_charge kind, unsigned count);
void net_user_release(uint32_t uid, enum net_charge kind, unsigned count);

/* errno.c: lwIP's errno, per thread.  take returns and clears it (EIO when
 * lwIP set none). */
void net_port_set_errno(int err);
int net_port_take_errno(void);
/* Serves the trace stream on TCP if trace_tcp=PORT was given (trace_tcp.c). */
void net_trace_tcp_init(void);
/* sys_arch.c: objects the port has allocated and not freed. */
int64_t net_port_objects(void);
/* socket.c: sockets alive. */
int64_t net_sockets_alive(void);
/* The prefix length of a netmask (host byte order): its leading ones. */
static inline unsigned net_prefix_length(uint32_t netmask)
{
	unsigned bits = 0;
	while (bits < 32 && (netmask & (0x80000000u >> bits)))
		bits++;
	return bits;
}
/* netif.c: true once net_init ran. */
bool net_started(void);

/* activity.c: per-activity accounting of the socket's work.  init allocates
 * the pcb argument (after tcpip_init, before any socket).  socket_activity
 * records the caller's activity in socket when it has one and returns it (0:
 * none).  release forgets socket's, at its end. */
void net_activity_init(void);
uint64_t net_socket_activity(struct net_socket *socket);
void net_activity_release(struct net_socket *socket);

/* The last TCP segment output for an activity, until the NIC takes it (core
 * lock): its pbuf, and where its header is and what it said, so that a later
 * pbuf at the same address is not taken for it.  Link output calls
 * net_activity_frame_out with every frame it handed the NIC. */
struct net_activity_tx {
	const void *pbuf;
	uint64_t ref;
	const void *header;
	uint32_t seqno; /* the header's, as sent (network order) */
	uint16_t source_port;
};
extern struct net_activity_tx net_activity_tx;
void net_activity_frame_sent(const void *pbuf);
static inline void net_activity_frame_out(const void *pbuf)
{
	if (__builtin_expect(pbuf == net_activity_tx.pbuf, 0))
		net_activity_frame_sent(pbuf);
}

#endif
