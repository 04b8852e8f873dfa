/*
 * The `nic` shell command: list the interfaces, print one's counters, switch
 * one between interrupt and polling mode.  Only reads what the module
 * publishes and calls the public API.
 */
#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "net/nic.h"
#include "time/time.h"

static int nic_print_line(struct nic *nic, void *arg)
{
	(void)arg;
	uint64_t rx = 0, tx = 0;
	nic_read_counter(nic, "rx_frames", &rx);
	nic_read_counter(nic, "tx_frames", &tx);
	const uint8_t *m = nic->mac;
	kshell_print(
	    "%-14s %02x:%02x:%02x:%02x:%02x:%02x mtu %u link %-4s mode %-9s rx %lu tx %lu\n",
	    nic->name, m[0], m[1], m[2], m[3], m[4], m[5], nic->mtu,
	    nic_link_name(nic_link_now(nic)), nic_mode_name(nic->mode), rx, tx);
	return 0;
}

static void nic_print_counter(const char *name, uint64_t value, void *arg)
{
	(void)arg;
	kshell_print("  %-16s %lu\n", name, value);
}

static void nic_print_change(uint64_t ns, enum nic_mode mode, void *arg)
{
	(void)arg;
	kshell_print("  %lu.%06lu %s\n", ns / 1000000000, ns % 1000000000 / 1000,
		     nic_mode_name(mode));
}

static int nic_command_mode(struct nic *nic, const char *mode)
{
	if (strcmp(mode, "irq") == 0 || strcmp(mode, "interrupt") == 0)
		return nic_set_mode_by_hand(nic, NIC_MODE_INTERRUPT);
	if (strcmp(mode, "poll") == 0 || strcmp(mode, "polling") == 0)
		return nic_set_mode_by_hand(nic, NIC_MODE_POLLING);
	if (strcmp(mode, "hybrid") == 0)
		return nic_set_mode_by_hand(nic, NIC_MODE_HYBRID);
	return KSHELL_USAGE;
}

static int cmd_nic(int argc, char **argv)
{
	if (argc == 1 || (argc == 2 && strcmp(argv[1], "list") == 0)) {
		if (nic_count() == 0)
			kshell_print("no network interfaces\n");
		return nic_for_each(nic_print_line, NULL);
	}
	struct nic *nic = argc >= 3 ? nic_find(argv[2]) : NULL;
	if (argc >= 3 && !nic) {
		kshell_print("nic: no interface %s\n", argv[2]);
		return -ENOENT;
	}
	if (argc == 3 && strcmp(argv[1], "stats") == 0) {
		nic_print_line(nic, NULL);
		nic_list_counters(nic, nic_print_counter, NULL);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "history") == 0) {
		uint64_t now = clock_ns();
		kshell_print("%s now %lu.%06lu, mode %s; changes (s since boot, mode):\n",
			     nic->name, now / 1000000000, now % 1000000000 / 1000,
			     nic_mode_name(nic->mode));
		nic_mode_history(nic, nic_print_change, NULL);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "mode") == 0)
		return nic_command_mode(nic, argv[3]);
	return KSHELL_USAGE;
}
KSHELL_COMMAND(
    nic, cmd_nic, "nic [list | stats <name> | history <name> | mode <name> irq|poll|hybrid]",
    "network interfaces: list, counters, mode changes, interrupt, polling or hybrid mode");
