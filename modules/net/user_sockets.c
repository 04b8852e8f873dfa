/*
 * A user's share of lwIP's sockets.  lwIP's pools are fixed (lwipopts.h):
 * MEMP_NUM_NETCONN sockets in all (lwIP's NUM_SOCKETS), MEMP_NUM_UDP_PCB datagram sockets,
 * MEMP_NUM_TCP_PCB_LISTEN listeners.  Without a bound one user's processes
 * could open sockets until a pool was empty, and root's httpd could then
 * neither accept a connection nor listen again.  So, as with processes
 * (PROC_ROOT_RESERVED) and kernel memory (kernel/proc/user_memory.c), every
 * user but root holds at most NET_USER_SOCKETS_MAX sockets, and all users
 * but root together stop NET_ROOT_RESERVED_* short of each pool: past either
 * bound a socket, accept or listen is -ENOBUFS.  Root (and every kernel
 * thread) counts against nothing.  A socket's charges go back when its lwIP
 * socket is closed.
 */
#include "net/internal.h"

#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "lwip/opt.h"
#include "uapi/cred.h"

#define CHARGED_USERS 16 /* users holding sockets at once */

struct user_sockets {
	uint32_t uid;
	unsigned sockets; /* 0: a free entry */
};

static struct spinlock sockets_lock = SPINLOCK_INIT("net.user_sockets");
static struct user_sockets users[CHARGED_USERS];
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

/* uid's entry, or a free one to start it in, or NULL.  Lock held. */
static struct user_sockets *user_of_locked(uint32_t uid)
{
	struct user_sockets *free_entry = NULL;
	for (unsigned i = 0; i < CHARGED_USERS; i++) {
		if (users[i].sockets && users[i].uid == uid)
			return &users[i];
		if (!users[i].sockets && !free_entry)
			free_entry = &users[i];
	}
	if (free_entry)
		free_entry->uid = uid;
	return free_entry;
}

int net_user_charge(uint32_t uid, enum net_charge kind)
{
	if (uid == ROOT_UID)
		return 0;
	uint64_t irq = spin_lock_irqsave(&sockets_lock);
	struct user_sockets *user = kind == NET_CHARGE_SOCKET ? user_of_locked(uid) : NULL;
	int error = held[kind] >= users_may_hold(kind) ? -ENOBUFS : 0;
	if (!error && kind == NET_CHARGE_SOCKET && (!user || user->sockets >= NET_USER_SOCKETS_MAX))
		error = -ENOBUFS;
	if (!error) {
		held[kind]++;
		if (user)
			user->sockets++;
	}
	spin_unlock_irqrestore(&sockets_lock, irq);
	return error;
}

void net_user_release(uint32_t uid, enum net_charge kind)
{
	if (uid == ROOT_UID)
		return;
	uint64_t irq = spin_lock_irqsave(&sockets_lock);
	if (held[kind])
		held[kind]--;
	for (unsigned i = 0; i < CHARGED_USERS && kind == NET_CHARGE_SOCKET; i++) {
		if (users[i].sockets && users[i].uid == uid) {
			users[i].sockets--;
			break;
		}
	}
	spin_unlock_irqrestore(&sockets_lock, irq);
}
