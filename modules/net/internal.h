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
struct net_socket {
	struct vfs_node node;
	int lwip; /* lwIP's socket number */
	int type; /* NET_SOCK_STREAM, _DGRAM, _RAW */
	volatile bool nonblocking;
	bool lwip_nonblocking;    /* what lwIP was last told */
	bool connecting;          /* a nonblocking connect is under way */
	uint64_t recv_timeout_ns; /* SO_RCVTIMEO; 0 = none */
	uint64_t send_timeout_ns; /* SO_SNDTIMEO */
	/* Issue 8 (accounting): the activity token of the request this socket
	 * serves, for advice on net.* join points to charge work to.  The
	 * socket layer only carries it. */
	volatile uint64_t activity;
};

/* errno.c: lwIP's errno, per thread.  take returns and clears it (EIO when
 * lwIP set none). */
void net_port_set_errno(int err);
int net_port_take_errno(void);
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

#endif
