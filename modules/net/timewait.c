/*
 * A new connection whose SYN names a connection lwIP still holds in
 * TIME_WAIT.  lwIP answers such a SYN with an ACK (or a reset when it falls
 * in the old window) instead of accepting it, so the client waits for its
 * SYN retransmission, a second or more, until the TIME_WAIT pcb is gone.
 * That happens under connection churn: the host reuses its ephemeral ports
 * quickly on the loopback (Linux's tcp_tw_reuse), QEMU's user network
 * keeps the client's port, and this server, which closes first, holds the
 * old 4-tuples in TIME_WAIT.  Linux and the BSDs accept a SYN in TIME_WAIT
 * whose sequence number lies beyond the old connection's (RFC 1122 4.2.2.13;
 * RFC 6191 without timestamps); so does this hook.  It runs on every
 * received IPv4 packet before lwIP looks at it (LWIP_HOOK_IP4_INPUT, core
 * lock held); for a bare SYN that matches a TIME_WAIT pcb with a higher
 * sequence number it frees that pcb (tcp_abort: no segment is sent for a
 * TIME_WAIT pcb), and lwIP then hands the SYN to the listener as usual.
 */
#include "lwip/ip.h"
#include "lwip/priv/tcp_priv.h"
#include "lwip/prot/ip4.h"
#include "lwip/prot/tcp.h"
#include "lwip/tcp.h"
#include "lwip_hooks.h"

#include "net/internal.h"

static volatile uint64_t reopened;

uint64_t net_time_wait_reopened(void)
{
	return __atomic_load_n(&reopened, __ATOMIC_RELAXED);
}

/* The bare SYN's TCP header in p (an IPv4 packet), or NULL. */
static const struct tcp_hdr *bare_syn(const struct pbuf *p, const struct ip_hdr **ip_out)
{
	const struct ip_hdr *ip = p->payload;
	if (p->len < IP_HLEN || IPH_V(ip) != 4 || IPH_PROTO(ip) != IP_PROTO_TCP ||
	    (IPH_OFFSET(ip) & PP_HTONS(IP_OFFMASK | IP_MF)))
		return NULL;
	u16_t header = IPH_HL_BYTES(ip);
	if (header < IP_HLEN || p->len < header + TCP_HLEN)
		return NULL;
	const struct tcp_hdr *tcp = (const struct tcp_hdr *)((const u8_t *)ip + header);
	if ((TCPH_FLAGS(tcp) & (TCP_SYN | TCP_ACK | TCP_RST | TCP_FIN)) != TCP_SYN)
		return NULL;
	*ip_out = ip;
	return tcp;
}

void net_hook_tcp_time_wait_syn(struct pbuf *p)
{
	const struct ip_hdr *ip;
	const struct tcp_hdr *tcp = tcp_tw_pcbs ? bare_syn(p, &ip) : NULL;
	if (!tcp)
		return;
	u16_t source = lwip_ntohs(tcp->src), dest = lwip_ntohs(tcp->dest);
	for (struct tcp_pcb *pcb = tcp_tw_pcbs; pcb; pcb = pcb->next) {
		if (pcb->remote_port != source || pcb->local_port != dest ||
		    ip4_addr_get_u32(ip_2_ip4(&pcb->remote_ip)) != ip4_addr_get_u32(&ip->src) ||
		    ip4_addr_get_u32(ip_2_ip4(&pcb->local_ip)) != ip4_addr_get_u32(&ip->dest))
			continue;
		if (TCP_SEQ_GT(lwip_ntohl(tcp->seqno), pcb->rcv_nxt)) {
			tcp_abort(pcb);
			__atomic_fetch_add(&reopened, 1, __ATOMIC_RELAXED);
		}
		return;
	}
}
