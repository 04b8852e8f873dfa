/*
 * Network work follows its activity (per-activity accounting, kernel/acct).
 * A socket belongs to the last accounted activity that used it: every
 * socket call takes the caller's acct_current_ref and, when it is not 0 and
 * new, records it in the socket and in lwIP's pcb under it (the pcb's one
 * extension argument), so that the pcb keeps it after the socket is closed,
 * through the FIN exchange.  What reads it then:
 *
 *   - socket.c charges the payload bytes a call hands to or takes from TCP
 *     to the caller's activity, in the caller's thread;
 *   - net_hook_tcp_out (every segment lwIP sends for a pcb, data and
 *     control) counts a segment sent, and a retransmission when the segment
 *     resends sequence space; it remembers the pbuf and its header, and
 *     netif.c's link output counts a NIC packet sent when the frame it
 *     handed the NIC is that pbuf with that header in it;
 *   - net_hook_tcp_in (tcp_input found the pcb) counts a segment received,
 *     and a NIC packet received when it came in on an Ethernet netif;
 *   - net_hook_ip4_input brackets each received IPv4 packet, on the NIC
 *     worker's thread or lwIP's (loopback), and charges the time from the
 *     pcb lookup to the end of the packet's processing (tcp_input, the
 *     socket callbacks, the output the ACK released) to the pcb's activity
 *     as one piece of asynchronous work.
 *
 * With no activity anywhere every hook is a load and a branch on a zero ref,
 * in line in lwIP (lwipopts.h; the IPv4 bracket: on a zero count of sockets
 * that carry one), and link output compares the frame with one pointer.  Everything
 * here runs under lwIP's core lock, which makes `tx` and `rx` single-owner.
 */
#include "lwip/api.h"
#include "lwip/ip.h"
#include "lwip/priv/sockets_priv.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/tcpip.h"
#include "lwip_hooks.h"

#include "acct/acct.h"
#include "net/internal.h"

struct net_activity_tx net_activity_tx;

volatile long net_sockets_with_activity;

/* The packet being received under the bracket of net_hook_ip4_input. */
static struct {
	bool inside;
	acct_ref_t ref; /* the first accounted pcb it reached, or 0 */
	uint64_t begin_ns;
} rx;

void net_activity_init(void)
{
	LOCK_TCPIP_CORE();
	u8_t argument = tcp_ext_arg_alloc_id();
	UNLOCK_TCPIP_CORE();
	if (argument != NET_PCB_ARGUMENT)
		panic("net: the pcb argument for activities is %u, not %u", argument,
		      NET_PCB_ARGUMENT);
}

/* The activity pcb works for, 0 when none.  A listening pcb has the same
 * leading fields (TCP_PCB_COMMON), extension arguments included. */
static acct_ref_t pcb_ref(const struct tcp_pcb *pcb)
{
	return (acct_ref_t)(uintptr_t)NET_PCB_ACTIVITY(pcb);
}

/* Records ref in the pcb of lwIP socket lwip, if it is a TCP socket with one. */
static void set_pcb_ref(int lwip, acct_ref_t ref)
{
	LOCK_TCPIP_CORE();
	struct lwip_sock *sock = lwip_socket_dbg_get_socket(lwip);
	struct netconn *conn = sock ? sock->conn : NULL;
	if (conn && NETCONNTYPE_GROUP(netconn_type(conn)) == NETCONN_TCP && conn->pcb.tcp)
		tcp_ext_arg_set(conn->pcb.tcp, NET_PCB_ARGUMENT, (void *)(uintptr_t)ref);
	UNLOCK_TCPIP_CORE();
}

void net_set_activity(struct net_socket *socket, uint64_t activity)
{
	uint64_t old = __atomic_exchange_n(&socket->activity, activity, __ATOMIC_ACQ_REL);
	if (!old != !activity)
		__atomic_add_fetch(&net_sockets_with_activity, activity ? 1 : -1, __ATOMIC_RELAXED);
	set_pcb_ref(socket->lwip, activity);
}

uint64_t net_get_activity(const struct net_socket *socket)
{
	return socket->activity;
}

uint64_t net_socket_activity(struct net_socket *socket)
{
	acct_ref_t ref = acct_current_ref();
	if (ref && ref != socket->activity)
		net_set_activity(socket, ref);
	return ref;
}

void net_activity_release(struct net_socket *socket)
{
	if (socket->activity)
		__atomic_sub_fetch(&net_sockets_with_activity, 1, __ATOMIC_RELAXED);
}

void net_activity_frame_sent(const void *pbuf)
{
	const struct pbuf *p = pbuf;
	const struct net_activity_tx *tx = &net_activity_tx;
	const uint8_t *frame = p->payload, *header = tx->header;
	const struct tcp_hdr *tcp = tx->header;
	bool same = header >= frame && header + sizeof *tcp <= frame + p->len &&
		    tcp->seqno == tx->seqno && tcp->src == tx->source_port;
	if (same)
		acct_charge_ref(tx->ref, ACCT_NIC_PACKETS_SENT, 1);
	net_activity_tx.pbuf = NULL;
}

/* Does the segment in p (its header first) resend sequence space?  Data and
 * FIN: when it starts below snd_nxt.  lwIP's SYN starts below snd_nxt from
 * the first one (snd_nxt is iss, the SYN iss - 1); it is resent only by the
 * retransmission timer, which counts in nrtx. */
static bool is_retransmission(const struct tcp_pcb *pcb, const struct tcp_hdr *header,
			      const struct pbuf *p)
{
	uint32_t length = p->tot_len - TCPH_HDRLEN_BYTES(header);
	if (TCPH_FLAGS(header) & TCP_SYN)
		return pcb->nrtx > 0;
	if (TCPH_FLAGS(header) & TCP_FIN)
		length++;
	return length && TCP_SEQ_LT(lwip_ntohl(header->seqno), pcb->snd_nxt);
}

u32_t *net_hook_tcp_out(struct pbuf *p, struct tcp_hdr *header, const struct tcp_pcb *pcb,
			u32_t *opts)
{
	acct_ref_t ref = pcb_ref(pcb);
	acct_charge_ref(ref, ACCT_TCP_SEGMENTS_SENT, 1);
	if (is_retransmission(pcb, header, p))
		acct_charge_ref(ref, ACCT_TCP_RETRANSMITS, 1);
	/* Loopback copies the segment and no NIC carries it. */
	net_activity_tx.pbuf = ip4_addr_isloopback(ip_2_ip4(&pcb->remote_ip)) ? NULL : p;
	net_activity_tx.ref = ref;
	net_activity_tx.header = header;
	net_activity_tx.seqno = header->seqno;
	net_activity_tx.source_port = header->src;
	return opts;
}

err_t net_hook_tcp_in(struct tcp_pcb *pcb, struct pbuf *p)
{
	(void)p;
	acct_ref_t ref = pcb_ref(pcb);
	if (pcb->state == LISTEN)
		return ERR_OK;
	acct_charge_ref(ref, ACCT_TCP_SEGMENTS_RECEIVED, 1);
	const struct netif *in = ip_current_input_netif();
	if (in && (in->flags & NETIF_FLAG_ETHERNET))
		acct_charge_ref(ref, ACCT_NIC_PACKETS_RECEIVED, 1);
	if (rx.inside && !rx.ref) {
		rx.ref = ref;
		rx.begin_ns = acct_async_begin(ref);
	}
	return ERR_OK;
}

int net_hook_ip4_input(struct pbuf *p, struct netif *netif)
{
	if (rx.inside)
		return 0;
	rx.inside = true;
	rx.ref = 0;
	ip4_input(p, netif); /* takes p; runs this hook again, which returns 0 */
	rx.inside = false;
	/* The packet went through ip4_input's counting twice. */
	lwip_stats.ip.recv--;
	lwip_stats.mib2.ipinreceives--;
	if (rx.ref)
		acct_async_end(rx.ref, rx.begin_ns);
	rx.ref = 0;
	return 1;
}
