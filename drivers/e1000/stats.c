/*
 * Counters by name.  The 8254x statistics registers clear when read, so every
 * read of one adds it to a 64-bit software total (hardware_totals, one per
 * table entry) under stats_lock, and the total is what is reported: reading a
 * counter never loses what an earlier read cleared.  Left unread, a register
 * stops at 0xffffffff, so the NIC worker also folds them all every
 * E1000_COUNTER_REFRESH_NS (refresh_counters), whether anybody reads them or
 * not.  64-bit counters (GORC, GOTC, TOR, TOT) are read low half first;
 * reading the high half clears both.
 * The driver's own counters (struct e1000_soft_counters) are listed after,
 * then "ITR", the interrupt moderation register (the minimum gap between
 * interrupts in 256 ns units, 0: none), read as it is.
 */
#include "e1000/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

struct e1000_stat {
	const char *name;
	uint16_t reg;
	bool wide; /* low at reg, high at reg + 4 */
};

static const struct e1000_stat e1000_stats[] = {
    {"CRCERRS", 0x4000, false}, {"ALGNERRC", 0x4004, false}, {"SYMERRS", 0x4008, false},
    {"RXERRC", 0x400c, false},  {"MPC", 0x4010, false},      {"SCC", 0x4014, false},
    {"ECOL", 0x4018, false},    {"MCC", 0x401c, false},      {"LATECOL", 0x4020, false},
    {"COLC", 0x4028, false},    {"DC", 0x4030, false},       {"TNCRS", 0x4034, false},
    {"SEC", 0x4038, false},     {"CEXTERR", 0x403c, false},  {"RLEC", 0x4040, false},
    {"XONRXC", 0x4048, false},  {"XONTXC", 0x404c, false},   {"XOFFRXC", 0x4050, false},
    {"XOFFTXC", 0x4054, false}, {"FCRUC", 0x4058, false},    {"PRC64", 0x405c, false},
    {"PRC127", 0x4060, false},  {"PRC255", 0x4064, false},   {"PRC511", 0x4068, false},
    {"PRC1023", 0x406c, false}, {"PRC1522", 0x4070, false},  {"GPRC", 0x4074, false},
    {"BPRC", 0x4078, false},    {"MPRC", 0x407c, false},     {"GPTC", 0x4080, false},
    {"GORC", 0x4088, true},     {"GOTC", 0x4090, true},      {"RNBC", 0x40a0, false},
    {"RUC", 0x40a4, false},     {"RFC", 0x40a8, false},      {"ROC", 0x40ac, false},
    {"RJC", 0x40b0, false},     {"TOR", 0x40c0, true},       {"TOT", 0x40c8, true},
    {"TPR", 0x40d0, false},     {"TPT", 0x40d4, false},      {"PTC64", 0x40d8, false},
    {"PTC127", 0x40dc, false},  {"PTC255", 0x40e0, false},   {"PTC511", 0x40e4, false},
    {"PTC1023", 0x40e8, false}, {"PTC1522", 0x40ec, false},  {"MPTC", 0x40f0, false},
    {"BPTC", 0x40f4, false},    {"TSCTC", 0x40f8, false},    {"TSCTFC", 0x40fc, false},
};
#define E1000_STAT_COUNT (sizeof(e1000_stats) / sizeof(e1000_stats[0]))

struct e1000_soft_name {
	const char *name;
	size_t offset;
};

#define E1000_SOFT(field)                                           \
	{                                                           \
#field, offsetof(struct e1000_soft_counters, field) \
	}
static const struct e1000_soft_name e1000_soft_names[] = {
    E1000_SOFT(rx_packets),     E1000_SOFT(rx_bytes),       E1000_SOFT(tx_packets),
    E1000_SOFT(tx_bytes),       E1000_SOFT(rx_errors),      E1000_SOFT(rx_bad_length),
    E1000_SOFT(rx_fragments),   E1000_SOFT(tx_ring_full),   E1000_SOFT(interrupts),
    E1000_SOFT(link_changes),   E1000_SOFT(irq_tx_done),    E1000_SOFT(irq_rx_timer),
    E1000_SOFT(irq_rx_low),     E1000_SOFT(irq_rx_overrun), E1000_SOFT(tx_segmented),
    E1000_SOFT(tx_checksummed),
};
#define E1000_SOFT_COUNT (sizeof(e1000_soft_names) / sizeof(e1000_soft_names[0]))

int e1000_stats_init(struct e1000 *e)
{
	e->hardware_totals = kzalloc(E1000_STAT_COUNT * sizeof(uint64_t));
	return e->hardware_totals ? 0 : -ENOMEM;
}

/* Adds what the register holds to the total and returns the total.  Called
 * with stats_lock held. */
static uint64_t e1000_stat_update(struct e1000 *e, unsigned i)
{
	const struct e1000_stat *stat = &e1000_stats[i];
	uint64_t value = e1000_read(e, stat->reg);
	if (stat->wide)
		value |= (uint64_t)e1000_read(e, stat->reg + 4) << 32;
	e->hardware_totals[i] += value;
	return e->hardware_totals[i];
}

static uint64_t e1000_soft_value(struct e1000 *e, unsigned i)
{
	const uint64_t *field =
	    (const uint64_t *)((const char *)&e->soft + e1000_soft_names[i].offset);
	return __atomic_load_n(field, __ATOMIC_RELAXED);
}

int e1000_read_counter(struct nic *nic, const char *name, uint64_t *value)
{
	struct e1000 *e = nic->driver;
	for (unsigned i = 0; i < E1000_STAT_COUNT; i++) {
		if (strcmp(e1000_stats[i].name, name) != 0)
			continue;
		uint64_t flags = spin_lock_irqsave(&e->stats_lock);
		*value = e1000_stat_update(e, i);
		spin_unlock_irqrestore(&e->stats_lock, flags);
		return 0;
	}
	for (unsigned i = 0; i < E1000_SOFT_COUNT; i++) {
		if (strcmp(e1000_soft_names[i].name, name) == 0) {
			*value = e1000_soft_value(e, i);
			return 0;
		}
	}
	if (strcmp(name, "ITR") == 0) {
		*value = e1000_read(e, E1000_ITR);
		return 0;
	}
	return -ENOENT;
}

/* Folds every register into its total; copies the totals out when totals
 * is not NULL. */
static void e1000_stats_fold(struct e1000 *e, uint64_t *totals)
{
	uint64_t flags = spin_lock_irqsave(&e->stats_lock);
	for (unsigned i = 0; i < E1000_STAT_COUNT; i++) {
		uint64_t total = e1000_stat_update(e, i);
		if (totals)
			totals[i] = total;
	}
	spin_unlock_irqrestore(&e->stats_lock, flags);
}

void e1000_refresh_counters(struct nic *nic)
{
	e1000_stats_fold(nic->driver, NULL);
}

void e1000_list_counters(struct nic *nic, nic_counter_fn fn, void *arg)
{
	struct e1000 *e = nic->driver;
	uint64_t totals[E1000_STAT_COUNT];
	e1000_stats_fold(e, totals);
	for (unsigned i = 0; i < E1000_STAT_COUNT; i++)
		fn(e1000_stats[i].name, totals[i], arg);
	for (unsigned i = 0; i < E1000_SOFT_COUNT; i++)
		fn(e1000_soft_names[i].name, e1000_soft_value(e, i), arg);
	fn("ITR", e1000_read(e, E1000_ITR), arg);
}
