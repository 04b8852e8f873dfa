/*
 * The kernel shell's `net` command: interfaces with their addresses, and the
 * memory the stack holds (lwIP's heap and pools, the port's objects, the
 * sockets), the figures a load test compares before and after.
 */
#include "kshell/kshell.h"
#include "net/internal.h"

static void print_address(const char *label, uint32_t a)
{
	kshell_print(" %s %u.%u.%u.%u", label, a >> 24, a >> 16 & 255, a >> 8 & 255, a & 255);
}

static int cmd_net(int argc, char **argv)
{
	struct net_interface info;
	struct net_memory memory;
	if (!net_started()) {
		kshell_print("net: not started\n");
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
KSHELL_COMMAND(net, cmd_net, "net", "network interfaces and the stack's memory");
