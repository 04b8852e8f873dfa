/*
 * A user's share of lwIP's sockets.  lwIP's pools are fixed (lwipopts.h):
 * MEMP_NUM_NETCONN sockets in all (lwIP's NUM_SOCKETS), MEMP_NUM_UDP_PCB datagram sockets,
 * MEMP_NUM_TCP_PCB_LISTEN listeners.  Without a bound one user's processes
 * could open sockets until a pool was empty, and root's httpd could then
 * neither accept a connection nor listen again.  So, as with processes
 * (PROC_ROOT_RESERVED) and kernel memory, every user but root holds at most
 * NET_USER_SOCKETS_MAX sockets (counted in the proc layer's per-user table,
 * proc_user_charge, as PROC_USER_SOCKETS), and all users but root together
 * stop NET_ROOT_RESERVED_* short of each pool (counted here): past either
 * bound a socket, accept or listen is -ENOBUFS.  A listener's queue places
 * count as sockets (socket.c).  Root (and every kernel thread) counts
 * against nothing.  A socket's charges go back when its lwIP socket is
 * closed.
 */
#include "net/internal.h"

#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "lwip/opt.h"
#include "proc/proc.h"
#include "uapi/cred.h"

static struct spinlock pools_lock = SPINLOCK_INIT("net.user_sockets");
static unsigned held[NET_CHARGE_KINDS]; /* by all users but root */

/* What users other than root may hold of each pool together. */
static unsigned users_may_hold(enum net_charge kind)
{
	switch (kind) {
	case NET_CHARGE_SOCKET: return MEMP_NUM_NETCONN - NET_ROOT_RESERVED_SOCKETS;
	case NET_CHARGE_DATAGRAM: return MEMP_NUM_UDP_PCB - NET_ROOT_RESERVED_DATAGRAMS;
	case NET_CHARGE_LISTENER: return MEMP_NUM_TCP_PCB_LISTEN - NET_ROOT_RESERVED_LISTENERS;
	default: return 0;
	}
}

/* Counts count of kind to the pool all users but root share, if it fits. */
static bool take_from_pool(enum net_charge kind, unsigned count)
{
	uint64_t irq = spin_lock_irqsave(&pools_lock);
	bool fits = count <= users_may_hold(kind) - held[kind];
	if (fits)
		held[kind] += count;
	spin_unlock_irqrestore(&pools_lock, irq);
	return fits;
}

static void give_to_pool(enum net_charge kind, unsigned count)
{
	uint64_t irq = spin_lock_irqsave(&pools_lock);
	held[kind] -= count < held[kind] ? count : held[kind];
	spin_unlock_irqrestore(&pools_lock, irq);
}

int net_user_charge(uint32_t uid, enum net_charge kind, unsigned count)
{
	if (uid == ROOT_UID || kind >= NET_CHARGE_KINDS || !count)
		return 0;
	bool per_user = kind == NET_CHARGE_SOCKET;
	if (per_user && proc_user_charge(uid, PROC_USER_SOCKETS, count, NET_USER_SOCKETS_MAX))
		return -ENOBUFS;
	if (take_from_pool(kind, count))
		return 0;
	if (per_user)
		proc_user_release(uid, PROC_USER_SOCKETS, count);
	return -ENOBUFS;
}

void net_user_release(uint32_t uid, enum net_charge kind, unsigned count)
{
	if (uid == ROOT_UID || kind >= NET_CHARGE_KINDS || !count)
		return;
	give_to_pool(kind, count);
	if (kind == NET_CHARGE_SOCKET)
		proc_user_release(uid, PROC_USER_SOCKETS, count);
}
