/*
 * The kernel shell's `net` command: interfaces with their addresses, and the
 * memory the stack holds (lwIP's heap and pools, the port's objects, the
 * sockets), the figures a load test compares before and after; `net stats`
 * prints lwIP's own counters (drops, retransmissions, refused pools).
 */
#include "lwip/priv/tcp_priv.h"
#include "lwip/stats.h"
#include "lwip/tcpip.h"

#include "kshell/kshell.h"
#include "lib/string.h"
#include "net/internal.h"

static void print_address(const char *label, uint32_t a)
{
	kshell_print(" %s %u.%u.%u.%u", label, a >> 24, a >> 16 & 255, a >> 8 & 255, a & 255);
}

static void print_protocol(const char *name, const struct stats_proto *p)
{
	kshell_print("%-5s xmit %u recv %u fw %u drop %u chkerr %u lenerr %u memerr %u rterr %u "
		     "proterr %u opterr %u err %u cachehit %u\n",
		     name, p->xmit, p->recv, p->fw, p->drop, p->chkerr, p->lenerr, p->memerr,
		     p->rterr, p->proterr, p->opterr, p->err, p->cachehit);
}

/* `net stats`: lwIP's own counters (drops, retransmissions, refused pools). */
static void print_stats(void)
{
	print_protocol("link", &lwip_stats.link);
	print_protocol("etharp", &lwip_stats.etharp);
	print_protocol("ip", &lwip_stats.ip);
	print_protocol("tcp", &lwip_stats.tcp);
	print_protocol("udp", &lwip_stats.udp);
	const struct stats_mib2 *mib = &lwip_stats.mib2;
	kshell_print("tcp   insegs %u outsegs %u retranssegs %u outrsts %u estabresets %u "
		     "attemptfails %u passiveopens %u\n",
		     mib->tcpinsegs, mib->tcpoutsegs, mib->tcpretranssegs, mib->tcpoutrsts,
		     mib->tcpestabresets, mib->tcpattemptfails, mib->tcppassiveopens);
	kshell_print("mem   used %lu max %lu err %u\n", (unsigned long)lwip_stats.mem.used,
		     (unsigned long)lwip_stats.mem.max, lwip_stats.mem.err);
	for (int i = 0; i < MEMP_MAX; i++) {
		const struct stats_mem *m = lwip_stats.memp[i];
		kshell_print("memp  %-2d used %lu max %lu avail %lu err %u\n", i,
			     (unsigned long)m->used, (unsigned long)m->max, (unsigned long)m->avail,
			     m->err);
	}
}

/* Listeners with their pending connections, and connections by state. */
static void print_pcbs(void)
{

	unsigned states[11] = {0};
	LOCK_TCPIP_CORE();
	for (struct tcp_pcb_listen *l = tcp_listen_pcbs.listen_pcbs; l; l = l->next)
		kshell_print("listen port %u backlog %u accepts_pending %u\n", l->local_port,
			     l->backlog, l->accepts_pending);
	for (struct tcp_pcb *p = tcp_active_pcbs; p; p = p->next)
		states[p->state < 11 ? p->state : 0]++;
	for (struct tcp_pcb *p = tcp_tw_pcbs; p; p = p->next)
		states[TIME_WAIT]++;
	UNLOCK_TCPIP_CORE();
	kshell_print("pcbs by state:");
	for (int i = 0; i < 11; i++)
		kshell_print(" %s %u", tcp_debug_state_str((enum tcp_state)i), states[i]);
	kshell_print("\n");
}

static int cmd_net(int argc, char **argv)
{
	struct net_interface info;
	struct net_memory memory;
	if (!net_started()) {
		kshell_print("net: not started\n");
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "stats")) {
		print_stats();
		print_pcbs();
		return 0;
	}
	for (unsigned i = 0; net_get_interface(i, &info) == 0; i++) {
		kshell_print("%-12s %s", info.name, info.up ? "up  " : "down");
		print_address("inet", info.address);
		kshell_print("/%u", net_prefix_length(info.netmask));
		print_address("gateway", info.gateway);
		kshell_print(" %s\n", info.dhcp_lease ? "(dhcp)" : "");
	}
	net_get_memory(&memory);
	kshell_print("memory: heap %lu bytes, pools %lu objects (%lu refused), port objects %ld, "
		     "sockets %ld\n",
		     memory.heap_used, memory.pool_used, memory.pool_errors, memory.port_objects,
		     memory.sockets);
	return 0;
}
KSHELL_COMMAND(net, cmd_net, "net [stats]", "network interfaces and the stack's memory");
