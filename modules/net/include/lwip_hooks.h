/*
 * lwIP's hooks into the port (LWIP_HOOK_FILENAME, included by lwIP's sources
 * after their own headers): per-activity accounting follows a TCP
 * connection's segments in and out and the stack's work on them
 * (modules/net/activity.c).  The hook macros themselves are in lwipopts.h.
 *
 *     #define LWIP_HOOK_TCP_INPACKET_PCB(pcb, hdr, optlen, opt1len, opt2, p) \
 *             (NET_PCB_ACTIVITY(pcb) ? net_hook_tcp_in(pcb, p) : ERR_OK)
 *     // lwIP's tcp_input: if (LWIP_HOOK_TCP_INPACKET_PCB(pcb, ...) != ERR_OK) drop
 */
#ifndef MODULES_NET_INCLUDE_LWIP_HOOKS_H
#define MODULES_NET_INCLUDE_LWIP_HOOKS_H

#include "lwip/arch.h"
#include "lwip/err.h"

struct pbuf;
struct netif;
struct tcp_hdr;
struct tcp_pcb;

/* The pcb argument that holds the activity (the first and only one), and
 * the number of sockets that carry an activity. */
#define NET_PCB_ARGUMENT      0
#define NET_PCB_ACTIVITY(pcb) ((pcb)->ext_args[NET_PCB_ARGUMENT].data)
extern volatile long net_sockets_with_activity;

/* A TCP segment for pcb, which carries an activity, is about to go to IP.
 * Returns opts (no options are added). */
u32_t *net_hook_tcp_out(struct pbuf *p, struct tcp_hdr *header, const struct tcp_pcb *pcb,
			u32_t *opts);
/* tcp_input found pcb, which carries an activity, for a received segment.
 * Returns ERR_OK (the segment is always processed). */
err_t net_hook_tcp_in(struct tcp_pcb *pcb, struct pbuf *p);
/* Segmentation offload (modules/net/netif.c): the number of links whose NIC
 * cuts large TCP frames itself, and the hook that lets an established
 * connection over such a link hand lwIP's output segments of many MSS. */
extern volatile int net_segmenting_links;
void net_hook_tcp_segment_size(struct tcp_pcb *pcb);

/* Checksum offload (modules/net/netif.c): the number of links whose NIC
 * makes TCP checksums, which lwIP then leaves out, and the route that sends a
 * packet from src to one of those links' own addresses through the loopback
 * interface, where lwIP makes them (NULL: route as usual). */
struct ip4_addr;
extern volatile int net_checksumming_links;
struct netif *net_hook_route_to_self(const struct ip4_addr *src, const struct ip4_addr *dest);

/* An IPv4 packet arrived on netif while some socket carries an activity.
 * Returns 0 (lwIP goes on as usual) or 1 (the hook ran ip4_input itself,
 * which took the packet). */
int net_hook_ip4_input(struct pbuf *p, struct netif *netif);

#endif
