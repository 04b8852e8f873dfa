/*
 * The stack's start and its interfaces: lwIP's tcpip thread, the loopback
 * interface (127.0.0.1, lwIP's loopif) and one lwIP netif per NIC of
 * drivers/net.  Received frames come from the NIC's worker thread (its rx
 * handler): the glue checks the length, copies the frame into a pool pbuf
 * and hands it to tcpip_input, which with core locking runs the stack in
 * that same thread.  Frames go out through nic_tx from whichever thread
 * holds the core lock; a full ring is retried briefly, then the frame is
 * dropped (TCP retransmits).
 *
 * Addresses: ip=dhcp (default) starts DHCP on every NIC.  The default
 * interface does not wait for its lease: it serves on the fallback address
 * (10.0.2.15/24, gateway 10.0.2.2: what QEMU's user network hands out) from
 * the start, so a connection that arrives before the lease (QEMU delivers
 * the frames it queued before the driver enabled receiving ahead of DHCP's
 * OFFER) is answered instead of dropped, and the lease replaces the address
 * when it comes (an equal one changes nothing; a different one ends the
 * connections made on the fallback, as any change of address does).  A
 * thread waits up to net_dhcp_ms= for the lease, then reports the fallback
 * and leaves DHCP asking.  ip=static:<a.b.c.d>/<bits>:<gateway> skips DHCP.
 * The default interface's configuration is signalled once, through
 * `configured`.
 */
#include "lwip/netif.h"
#include "lwip/dhcp.h"
#include "lwip/etharp.h"
#include "lwip/inet_chksum.h"
#include "lwip/ip4_frag.h"
#include "lwip/prot/ip4.h"
#include "lwip/prot/tcp.h"
#include "lwip/stats.h"
#include "lwip/tcp.h"
#include "lwip/tcpip.h"
#include "lwip_hooks.h"
#include "netif/ethernet.h"

#include "boot/cmdline.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "net/internal.h"
#include "net/nic.h"
#include "sched/sched.h"
#include "time/time.h"

#define NET_MAX_LINKS    4
#define TX_RETRIES       64
#define DHCP_DEFAULT_MS  3000
#define CONFIG_CHECK_NS  (20 * NSEC_PER_MSEC)
#define FALLBACK_ADDRESS NET_IPV4(10, 0, 2, 15)
#define FALLBACK_BITS    24
#define FALLBACK_GATEWAY NET_IPV4(10, 0, 2, 2)

/* With segmentation offload a connection's segments carry up to this many
 * times the wire's MSS (and fit NIC_SEGMENTED_MAX with their headers). */
#define SEGMENTS_PER_FRAME 44

struct link {
	struct netif netif;
	struct nic *nic;
	bool dhcp_lease;
	bool segments; /* the NIC cuts large TCP frames: netif MTU is large */
};

volatile int net_segmenting_links;
volatile int net_checksumming_links;
/* A large frame made contiguous for the NIC; lwIP's output runs under the
 * core lock, so one buffer serves every link. */
static uint8_t large_frame[NIC_SEGMENTED_MAX];
_Static_assert(NIC_SEGMENTED_MAX >= 0xffff, "a pbuf's tot_len must fit large_frame");

static struct link links[NET_MAX_LINKS];
static unsigned link_count;
static struct mutex links_lock = MUTEX_INIT(links_lock, "net.links");
static struct completion configured;
static volatile bool started;

static struct {
	bool use_static;
	uint32_t address, netmask, gateway; /* host byte order */
	unsigned dhcp_ms;
} config = {.dhcp_ms = DHCP_DEFAULT_MS};

bool net_started(void)
{
	return started;
}

/* ---- Kernel parameters ----------------------------------------------------- */

/* Parses "a.b.c.d" at *text, advancing it.  Returns 0 or -EINVAL. */
static int parse_address(const char **text, uint32_t *out)
{
	uint32_t value = 0;
	for (int part = 0; part < 4; part++) {
		unsigned n = 0, digits = 0;
		while (**text >= '0' && **text <= '9' && digits < 4) {
			n = n * 10 + (unsigned)(*(*text)++ - '0');
			digits++;
		}
		if (!digits || n > 255 || (part < 3 && *(*text)++ != '.'))
			return -EINVAL;
		value = value << 8 | n;
	}
	*out = value;
	return 0;
}

static int parse_static(const char *text)
{
	uint32_t address, gateway = 0;
	unsigned bits = 0;
	if (parse_address(&text, &address) || *text++ != '/')
		return -EINVAL;
	while (*text >= '0' && *text <= '9')
		bits = bits * 10 + (unsigned)(*text++ - '0');
	if (bits < 1 || bits > 32)
		return -EINVAL;
	if (*text == ':' && (text++, parse_address(&text, &gateway)))
		return -EINVAL;
	if (*text)
		return -EINVAL;
	config.use_static = true;
	config.address = address;
	config.netmask = bits == 32 ? 0xffffffffu : ~(0xffffffffu >> bits);
	config.gateway = gateway;
	return 0;
}

static int set_ip(const char *value)
{
	if (!value)
		return -1;
	if (!strcmp(value, "dhcp")) {
		config.use_static = false;
		return 0;
	}
	if (!strncmp(value, "static:", 7))
		return parse_static(value + 7) ? -1 : 0;
	return -1;
}
KERNEL_PARAM(ip, set_ip, "dhcp or static:<a.b.c.d>/<bits>:<gateway>: the NICs' addresses");

static int set_dhcp_ms(const char *value)
{
	unsigned ms = 0;
	if (!value || !*value)
		return -1;
	for (; *value >= '0' && *value <= '9'; value++)
		ms = ms * 10 + (unsigned)(*value - '0');
	if (*value || ms > 600000)
		return -1;
	config.dhcp_ms = ms;
	return 0;
}
KERNEL_PARAM(net_dhcp_ms, set_dhcp_ms, "milliseconds to wait for a DHCP lease (default 3000)");

/* net_segmentation=off keeps lwIP's own segments on every NIC (for measuring
 * what the device's segmentation saves). */
static bool segmentation_off;

static int set_segmentation(const char *value)
{
	return cmdline_on_off(value, &segmentation_off);
}
KERNEL_PARAM(net_segmentation, set_segmentation,
	     "on (default) or off: large TCP frames cut by NICs that can");

/* net_checksum_offload=off has lwIP make every TCP checksum itself, also
 * where the NIC would (for measuring what the device's checksum saves). */
static bool checksum_offload_off;

static int set_checksum_offload(const char *value)
{
	return cmdline_on_off(value, &checksum_offload_off);
}
KERNEL_PARAM(net_checksum_offload, set_checksum_offload,
	     "on (default) or off: TCP checksums left to NICs that make them");

/* ---- Frames in and out ------------------------------------------------------- */

/* The Ethernet + IPv4 + TCP header length of a contiguous frame, or 0 when
 * it is something else. */
static size_t tcp_header_length(const uint8_t *frame, size_t length)
{
	if (length < SIZEOF_ETH_HDR + IP_HLEN + TCP_HLEN || frame[12] != 0x08 || frame[13] != 0)
		return 0;
	size_t ip_length = (size_t)(frame[SIZEOF_ETH_HDR] & 0x0f) * 4;
	if (frame[SIZEOF_ETH_HDR + 9] != IP_PROTO_TCP || ip_length < IP_HLEN ||
	    length < SIZEOF_ETH_HDR + ip_length + TCP_HLEN)
		return 0;
	size_t tcp_length = (size_t)(frame[SIZEOF_ETH_HDR + ip_length + 12] >> 4) * 4;
	size_t header = SIZEOF_ETH_HDR + ip_length + tcp_length;
	return tcp_length >= TCP_HLEN && header < length ? header : 0;
}

/* Makes the TCP checksum of p (an IPv4 packet from its IP header) that lwIP
 * left to the NIC: the NIC cannot make it for a packet cut into fragments. */
static void complete_tcp_checksum(struct pbuf *p)
{
	const struct ip_hdr *ip = p->payload;
	u16_t ip_length = (u16_t)(IPH_HL(ip) * 4), total = lwip_ntohs(IPH_LEN(ip));
	if (IPH_PROTO(ip) != IP_PROTO_TCP || total > p->tot_len || total < ip_length + TCP_HLEN ||
	    p->len < ip_length + TCP_HLEN)
		return;
	ip4_addr_t source, dest;
	ip4_addr_copy(source, ip->src);
	ip4_addr_copy(dest, ip->dest);
	struct tcp_hdr *tcp = (struct tcp_hdr *)((u8_t *)p->payload + ip_length);
	tcp->chksum = 0;
	pbuf_remove_header(p, ip_length);
	tcp->chksum =
	    inet_chksum_pseudo(p, IP_PROTO_TCP, (u16_t)(total - ip_length), &source, &dest);
	pbuf_add_header(p, ip_length);
}

/* A packet longer than the wire's MTU that the NIC will not segment (not
 * TCP, or a NIC without offload): lwIP cuts it into IP fragments of the
 * wire's MTU, which come back through link_output. */
static err_t link_fragment(struct link *l, struct pbuf *p)
{
	if (pbuf_remove_header(p, SIZEOF_ETH_HDR) || p->len < IP_HLEN)
		return ERR_BUF;
	if (l->nic->tx_tcp_checksum) /* lwIP left it out (link_init) */
		complete_tcp_checksum(p);
	const struct ip_hdr *ip = p->payload;
	ip4_addr_t dest;
	ip4_addr_copy(dest, ip->dest);
	u16_t mtu = l->netif.mtu;
	l->netif.mtu = (u16_t)l->nic->mtu;
	err_t err = ip4_frag(p, &l->netif, &dest);
	l->netif.mtu = mtu;
	pbuf_add_header(p, SIZEOF_ETH_HDR);
	return err;
}

/* Retries a full ring briefly (TCP retransmits what is dropped). */
static int transmit(struct link *l, const void *data, size_t length, size_t header_length)
{
	int err = -EAGAIN;
	for (int i = 0; i < TX_RETRIES && err == -EAGAIN; i++) {
		err = header_length ? nic_tx_segmented(l->nic, data, length, header_length)
				    : nic_tx(l->nic, data, length);
		if (err == -EAGAIN)
			sched_yield();
	}
	return err;
}

static err_t link_output_large(struct link *l, struct pbuf *p)
{
	if (!l->segments)
		return link_fragment(l, p);
	/* One buffer (lwIP's oversize) goes as it is; a chain is made whole. */
	const uint8_t *frame = p->payload;
	if (p->next) {
		pbuf_copy_partial(p, large_frame, p->tot_len, 0);
		frame = large_frame;
	}
	size_t header = tcp_header_length(frame, p->tot_len);
	if (!header)
		return link_fragment(l, p);
	if (transmit(l, frame, p->tot_len, header)) {
		LINK_STATS_INC(link.drop);
		return ERR_IF;
	}
	LINK_STATS_INC(link.xmit);
	net_activity_frame_out(p);
	return ERR_OK;
}

/* lwIP's loopback interface (127.0.0.1, the first netif lwIP adds). */
static struct netif *loopback_netif(void)
{
	static struct netif *loopback;
	for (struct netif *n = netif_list; n && !loopback; n = n->next)
		if (n->name[0] == 'l' && n->name[1] == 'o')
			loopback = n;
	return loopback;
}

/* A packet from src to one of this host's own addresses on an interface
 * whose NIC makes the TCP checksums (lwIP's generation off there) goes
 * through the loopback interface instead of that interface's own loop: it
 * never meets the NIC, so lwIP must make its checksum, which it does for the
 * loopback interface (net_init switches its checksums on) and checks on
 * arrival there.  The source stays the interface's address, which its netif
 * accepts as its own (ip4_input).  The interfaces' flags, not the links
 * table: they are set before an interface has an address.  Core lock held.
 * NULL: route as usual. */
struct netif *net_hook_route_to_self(const ip4_addr_t *src, const ip4_addr_t *dest)
{
	if (ip4_addr_isany(src))
		return NULL; /* only choosing a source address: no packet yet */
	struct netif *loopback = loopback_netif();
	for (struct netif *n = netif_list; n; n = n->next)
		if (n != loopback && !(n->chksum_flags & NETIF_CHECKSUM_GEN_TCP) &&
		    ip4_addr_cmp(dest, netif_ip4_addr(n)))
			return loopback;
	return NULL;
}

/* lwIP's loopback interface starts with every checksum off; on, as before
 * checksums were set per interface: raw sockets on 127.0.0.1 see real ones,
 * and packets to a NIC's own address routed here (above) get theirs. */
static void loopback_checksums_on(void)
{
	LOCK_TCPIP_CORE();
	struct netif *loopback = loopback_netif();
	if (loopback)
		NETIF_SET_CHECKSUM_CTRL(loopback, NETIF_CHECKSUM_ENABLE_ALL);
	UNLOCK_TCPIP_CORE();
}

/* Called for every connection over a segmenting link whose mss is still the
 * wire's (the hook in lwipopts.h filters): its segments may now be many MSS
 * long, for the NIC to cut.  Only connections with the full wire MSS (so the
 * NIC's cut, MTU minus headers, is the size lwIP would have sent) and not to
 * this host's own address (loopback keeps whole segments). */
void net_hook_tcp_segment_size(struct tcp_pcb *pcb)
{
	for (unsigned i = 0; i < link_count; i++) {
		struct link *l = &links[i];
		if (!l->segments ||
		    !ip4_addr_cmp(ip_2_ip4(&pcb->local_ip), netif_ip4_addr(&l->netif)))
			continue;
		if (ip_addr_cmp(&pcb->local_ip, &pcb->remote_ip) ||
		    (unsigned)pcb->mss + IP_HLEN + TCP_HLEN != l->nic->mtu)
			return;
		unsigned segments = SEGMENTS_PER_FRAME, most = l->nic->tx_segments_max;
		if (most && most < segments)
			segments = most; /* a small ring: a larger frame would never go */
		if (segments < 2)
			return;
		pcb->mss = (u16_t)(pcb->mss * segments);
		if (pcb->cwnd < pcb->mss) /* else nothing fits until a timer splits it */
			pcb->cwnd = pcb->mss;
		return;
	}
}

/* The longest frame the wire takes: the Ethernet header and the NIC's MTU
 * (NIC_FRAME_MAX leaves room for a VLAN tag this stack never adds). */
static size_t wire_frame_max(const struct link *l)
{
	return SIZEOF_ETH_HDR + (l->nic->mtu ? l->nic->mtu : 1500);
}

static err_t link_output(struct netif *netif, struct pbuf *p)
{
	struct link *l = netif->state;
	uint8_t frame[NIC_FRAME_MAX];
	const void *data = p->payload;
	/* A segmenting link's lwIP MTU is the large frame's: anything longer
	 * than the wire's is cut here, not sent whole. */
	if (p->tot_len > sizeof frame || p->tot_len > wire_frame_max(l))
		return link_output_large(l, p);
	if (p->next) {
		pbuf_copy_partial(p, frame, p->tot_len, 0);
		data = frame;
	}
	for (int i = 0; i < TX_RETRIES; i++) {
		int err = nic_tx(l->nic, data, p->tot_len);
		if (!err) {
			LINK_STATS_INC(link.xmit);
			net_activity_frame_out(p);
			return ERR_OK;
		}
		if (err != -EAGAIN)
			break;
		sched_yield();
	}
	LINK_STATS_INC(link.drop);
	return ERR_IF;
}

/* The NIC's worker hands each frame here.  Lengths are checked, not trusted. */
static void link_input(struct nic *nic, const void *frame, size_t length, void *context)
{
	struct link *l = context;
	if (!frame || length < NIC_FRAME_MIN || length > NIC_FRAME_MAX) {
		LINK_STATS_INC(link.lenerr);
		return;
	}
	struct pbuf *p = pbuf_alloc(PBUF_RAW, (u16_t)length, PBUF_POOL);
	if (!p) {
		LINK_STATS_INC(link.memerr);
		return;
	}
	pbuf_take(p, frame, (u16_t)length);
	LINK_STATS_INC(link.recv);
	if (l->netif.input(p, &l->netif) != ERR_OK)
		pbuf_free(p);
}

static err_t link_init(struct netif *netif)
{
	struct link *l = netif->state;
	netif->name[0] = 'e';
	netif->name[1] = 'n';
	netif->output = etharp_output;
	netif->linkoutput = link_output;
	netif->mtu = l->nic->mtu ? (u16_t)l->nic->mtu : 1500;
	if (nic_can_segment(l->nic) && l->nic->mtu == 1500 && !segmentation_off) {
		/* lwIP then hands TCP frames of up to NIC_SEGMENTED_MAX bytes to
		 * link_output, which passes them to the NIC to segment and cuts
		 * anything else into fragments of the wire's MTU itself. */
		netif->mtu = NIC_SEGMENTED_MAX - SIZEOF_ETH_HDR;
		l->segments = true;
		net_segmenting_links++;
	}
	if (checksum_offload_off)
		l->nic->tx_tcp_checksum = false; /* the device asked for nothing either */
	if (l->nic->tx_tcp_checksum) {
		/* Packets to the link's own address take the loopback interface,
		 * which makes them (net_hook_route_to_self). */
		NETIF_SET_CHECKSUM_CTRL(netif, NETIF_CHECKSUM_ENABLE_ALL & ~NETIF_CHECKSUM_GEN_TCP);
		net_checksumming_links++;
	}
	netif->hwaddr_len = ETH_HWADDR_LEN;
	memcpy(netif->hwaddr, l->nic->mac, ETH_HWADDR_LEN);
	netif->flags = NETIF_FLAG_BROADCAST | NETIF_FLAG_ETHARP | NETIF_FLAG_ETHERNET;
	netif_set_hostname(netif, "microscope");
	return ERR_OK;
}

/* ---- Addresses ------------------------------------------------------------- */

static void set_static(struct netif *netif, uint32_t address, uint32_t netmask, uint32_t gateway)
{
	ip4_addr_t a, m, g;
	ip4_addr_set_u32(&a, net_htonl(address));
	ip4_addr_set_u32(&m, net_htonl(netmask));
	ip4_addr_set_u32(&g, net_htonl(gateway));
	netif_set_addr(netif, &a, &m, &g);
	/* Ask for the gateway's address now: its first packets then leave at
	 * once (an answer queued behind a pending ARP entry waits for lwIP's
	 * one-second ARP timer). */
	if (gateway)
		etharp_request(netif, &g);
}

static void set_fallback(struct netif *netif)
{
	set_static(netif, FALLBACK_ADDRESS, ~(0xffffffffu >> FALLBACK_BITS), FALLBACK_GATEWAY);
}

/* Brings l up and starts its configuration; the default interface serves
 * on the fallback until its lease comes.  Core lock held. */
static void link_start(struct link *l, bool is_default)
{
	netif_set_up(&l->netif);
	netif_set_link_up(&l->netif);
	if (config.use_static) {
		set_static(&l->netif, config.address, config.netmask, config.gateway);
		return;
	}
	if (is_default)
		set_fallback(&l->netif);
	dhcp_start(&l->netif);
}

int net_attach_nic(struct nic *nic)
{
	int err = 0;
	mutex_lock(&links_lock);
	for (unsigned i = 0; i < link_count; i++)
		if (links[i].nic == nic)
			err = -EEXIST;
	if (!err && link_count == NET_MAX_LINKS)
		err = -ENOSPC;
	if (!err) {
		struct link *l = &links[link_count];
		l->nic = nic;
		LOCK_TCPIP_CORE();
		if (!netif_add(&l->netif, NULL, NULL, NULL, l, link_init, tcpip_input))
			err = -ENOMEM;
		else if (link_count == 0)
			netif_set_default(&l->netif);
		UNLOCK_TCPIP_CORE();
		if (!err) {
			/* Frames in before DHCP's first DISCOVER goes out: the server's
			 * OFFER may come back at once, and one dropped here cost
			 * lwIP's first retry, two seconds. */
			nic_set_rx_handler(nic, link_input, l);
			LOCK_TCPIP_CORE();
			link_start(l, link_count == 0);
			UNLOCK_TCPIP_CORE();
			link_count++;
		}
	}
	mutex_unlock(&links_lock);
	return err;
}

static int attach_visit(struct nic *nic, void *arg)
{
	int err = net_attach_nic(nic);
	if (err)
		pr_warn("net: cannot attach %s (%d)\n", nic->name, err);
	return 0;
}

static bool has_address(struct link *l)
{
	LOCK_TCPIP_CORE();
	bool lease = dhcp_supplied_address(&l->netif);
	bool any = !ip4_addr_isany_val(*netif_ip4_addr(&l->netif));
	UNLOCK_TCPIP_CORE();
	l->dhcp_lease = lease;
	return config.use_static ? any : lease;
}

static void report(struct link *l)
{
	struct net_interface info;
	net_get_interface((unsigned)(l - links) + 1, &info);
	uint32_t a = info.address, g = info.gateway;
	unsigned bits = net_prefix_length(info.netmask);
	pr_info("net: %s %u.%u.%u.%u/%u gateway %u.%u.%u.%u (%s)\n", info.name, a >> 24,
		a >> 16 & 255, a >> 8 & 255, a & 255, bits, g >> 24, g >> 16 & 255, g >> 8 & 255,
		g & 255, l->dhcp_lease ? "dhcp" : "static");
}

/* Waits for the default interface's lease and reports the address.  Without
 * a lease the fallback, in place since link_start, stays (stopping DHCP would
 * clear the address and end the connections made on it); DHCP keeps asking,
 * and a late lease replaces it. */
static int config_thread(void *arg)
{
	struct link *l = &links[0];
	uint64_t deadline = clock_ns() + (uint64_t)config.dhcp_ms * NSEC_PER_MSEC;
	while (!has_address(l) && clock_ns() < deadline)
		sched_sleep_ns(CONFIG_CHECK_NS);
	if (!has_address(l))
		pr_info("net: no DHCP lease on %s within %u ms, staying on the fallback\n",
			l->nic->name, config.dhcp_ms);
	report(l);
	completion_signal(&configured);
	return 0;
}

/* lwIP's heap (LWIP_RAM_HEAP_POINTER), taken when the stack starts rather
 * than kept in the kernel's image: under UEFI in 64 MiB, GRUB found no room
 * for an image 2 MiB larger.  A page more than MEM_SIZE for the heap's own
 * headers and alignment. */
void *net_ram_heap;

int net_init(void)
{
	if (started)
		return 0;
	net_ram_heap = mm_alloc_pages(MEM_SIZE / PAGE_SIZE + 1, PAGE_SIZE);
	if (!net_ram_heap) {
		pr_err("net: no memory for the stack's heap\n");
		return -ENOMEM;
	}
	completion_init(&configured, "net.configured");
	tcpip_init(NULL, NULL);
	loopback_checksums_on();
	net_activity_init();
	started = true;
	nic_for_each(attach_visit, NULL);
	net_trace_tcp_init();
	if (!link_count) {
		pr_info("net: no NIC; loopback only\n");
		return 0;
	}
	struct thread *t = thread_create(config_thread, NULL, "net.config", SCHED_PRIORITY_NORMAL);
	if (!t)
		return -ENOMEM;
	thread_detach(t);
	return 0;
}

int net_wait_configured(uint64_t timeout_ns)
{
	if (!started || !link_count)
		return -ENODEV;
	return completion_wait_timeout(&configured, timeout_ns);
}

/* ---- Introspection --------------------------------------------------------- */

static void fill_interface(struct netif *netif, struct net_interface *info)
{
	memset(info, 0, sizeof *info);
	LOCK_TCPIP_CORE();
	info->address = net_htonl(ip4_addr_get_u32(netif_ip4_addr(netif)));
	info->netmask = net_htonl(ip4_addr_get_u32(netif_ip4_netmask(netif)));
	info->gateway = net_htonl(ip4_addr_get_u32(netif_ip4_gw(netif)));
	info->up = netif_is_up(netif);
	memcpy(info->mac, netif->hwaddr, sizeof info->mac);
	UNLOCK_TCPIP_CORE();
}

int net_get_interface(unsigned index, struct net_interface *info)
{
	if (!started || !info)
		return -ENOENT;
	if (index == 0) {
		struct netif *lo = netif_find("lo0");
		if (!lo)
			return -ENOENT;
		fill_interface(lo, info);
		strlcpy(info->name, "lo", sizeof info->name);
		return 0;
	}
	if (index > link_count)
		return -ENOENT;
	struct link *l = &links[index - 1];
	fill_interface(&l->netif, info);
	strlcpy(info->name, l->nic->name, sizeof info->name);
	info->dhcp_lease = l->dhcp_lease;
	return 0;
}

void net_get_memory(struct net_memory *memory)
{
	memset(memory, 0, sizeof *memory);
	SYS_ARCH_DECL_PROTECT(level);
	SYS_ARCH_PROTECT(level);
	memory->heap_used = lwip_stats.mem.used;
	memory->pool_errors = lwip_stats.mem.err;
	for (int i = 0; i < MEMP_MAX; i++) {
		memory->pool_used += lwip_stats.memp[i]->used;
		memory->pool_errors += lwip_stats.memp[i]->err;
	}
	SYS_ARCH_UNPROTECT(level);
	memory->port_objects = net_port_objects();
	memory->sockets = net_sockets_alive();
}
