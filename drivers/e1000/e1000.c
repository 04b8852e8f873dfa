/*
 * The e1000 (82540EM) driver: bring-up and the NIC operations.  Probe is a
 * straight list of phases: enable memory decoding and bus mastering, map the
 * registers, reset (the device comes back with every interrupt masked), read
 * the MAC from the EEPROM (RAL/RAH as a fallback) and program it, set up the
 * rings, attach the interrupt (QEMU's 82540EM has no MSI capability, so INTx
 * in practice) and register the NIC, which starts it in interrupt mode.
 *
 * Interrupt masking is the NIC module's: disable_interrupts writes IMC (all
 * causes), enable_interrupts writes IMS.  Causes that arrive while masked stay
 * in ICR and raise the interrupt as soon as IMS unmasks them, so no receive is
 * left unnoticed.  The handler reads ICR (which clears it); a zero ICR means
 * another device on a shared INTx line.  Link changes update nic.link there.
 */
#include "e1000/internal.h"

#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "pci/pci.h"
#include "time/time.h"

static unsigned e1000_devices;

unsigned e1000_count(void)
{
	return e1000_devices;
}

/* ---- Bring-up ------------------------------------------------------------ */

static int e1000_reset(struct e1000 *e)
{
	e1000_write(e, E1000_IMC, 0xffffffffu);
	e1000_write(e, E1000_CTRL, e1000_read(e, E1000_CTRL) | E1000_CTRL_RST);
	clock_delay_ns(1 * NSEC_PER_MSEC);
	for (unsigned i = 0; i < 1000 && (e1000_read(e, E1000_CTRL) & E1000_CTRL_RST); i++)
		clock_delay_ns(10 * NSEC_PER_USEC);
	if (e1000_read(e, E1000_CTRL) & E1000_CTRL_RST)
		return -EIO;
	e1000_write(e, E1000_IMC, 0xffffffffu);
	(void)e1000_read(e, E1000_ICR);
	e1000_write(e, E1000_CTRL, e1000_read(e, E1000_CTRL) | E1000_CTRL_SLU | E1000_CTRL_ASDE);
	return 0;
}

/* One EEPROM word through EERD; returns it, or -EIO when the read never ends. */
static int e1000_eeprom_read(struct e1000 *e, unsigned word)
{
	e1000_write(e, E1000_EERD, E1000_EERD_START | word << 8);
	for (unsigned i = 0; i < 10000; i++) {
		uint32_t value = e1000_read(e, E1000_EERD);
		if (value & E1000_EERD_DONE)
			return (int)(value >> 16);
		clock_delay_ns(1 * NSEC_PER_USEC);
	}
	return -EIO;
}

static void e1000_read_mac(struct e1000 *e)
{
	uint8_t *mac = e->nic.mac;
	int words[3];
	for (unsigned i = 0; i < 3; i++)
		words[i] = e1000_eeprom_read(e, i);
	if (words[0] >= 0 && words[1] >= 0 && words[2] >= 0) {
		for (unsigned i = 0; i < 3; i++) {
			mac[2 * i] = (uint8_t)words[i];
			mac[2 * i + 1] = (uint8_t)(words[i] >> 8);
		}
	} else {
		uint32_t low = e1000_read(e, E1000_RAL0), high = e1000_read(e, E1000_RAH0);
		for (unsigned i = 0; i < 4; i++)
			mac[i] = (uint8_t)(low >> (8 * i));
		mac[4] = (uint8_t)high;
		mac[5] = (uint8_t)(high >> 8);
	}
	const uint8_t *m = mac;
	e1000_write(e, E1000_RAL0, m[0] | m[1] << 8 | m[2] << 16 | (uint32_t)m[3] << 24);
	e1000_write(e, E1000_RAH0, m[4] | m[5] << 8 | E1000_RAH_AV);
	for (unsigned i = 0; i < 128; i++)
		e1000_write(e, E1000_MTA + 4 * i, 0);
}

static void e1000_update_link(struct nic *nic)
{
	struct e1000 *e = nic->driver;
	nic->link = (e1000_read(e, E1000_STATUS) & E1000_STATUS_LU) ? NIC_LINK_UP : NIC_LINK_DOWN;
}

/* ---- Interrupts and the NIC operations ----------------------------------- */

/* Interrupt causes, for the counters a mode decision reads. */
static void e1000_count_causes(struct e1000 *e, uint32_t cause)
{
	if (cause & E1000_INT_TXDW)
		__atomic_fetch_add(&e->soft.irq_tx_done, 1, __ATOMIC_RELAXED);
	if (cause & E1000_INT_RXT0)
		__atomic_fetch_add(&e->soft.irq_rx_timer, 1, __ATOMIC_RELAXED);
	if (cause & E1000_INT_RXDMT0)
		__atomic_fetch_add(&e->soft.irq_rx_low, 1, __ATOMIC_RELAXED);
	if (cause & E1000_INT_RXO)
		__atomic_fetch_add(&e->soft.irq_rx_overrun, 1, __ATOMIC_RELAXED);
}

static void e1000_irq(struct trap_frame *frame, void *ctx)
{
	struct e1000 *e = ctx;
	uint32_t cause = e1000_read(e, E1000_ICR);
	if (!cause)
		return; /* another device on a shared line */
	__atomic_fetch_add(&e->soft.interrupts, 1, __ATOMIC_RELAXED);
	e1000_count_causes(e, cause);
	if (cause & E1000_INT_LSC) {
		e1000_update_link(&e->nic);
		__atomic_fetch_add(&e->soft.link_changes, 1, __ATOMIC_RELAXED);
	}
	if ((cause & E1000_INT_WORK) && e->interrupts_on)
		nic_irq(&e->nic);
}

static void e1000_enable_interrupts(struct nic *nic)
{
	struct e1000 *e = nic->driver;
	e->interrupts_on = true;
	e1000_write(e, E1000_IMS, E1000_INT_ENABLED);
}

static void e1000_disable_interrupts(struct nic *nic)
{
	struct e1000 *e = nic->driver;
	e->interrupts_on = false;
	/* Link changes stay visible in polling mode too. */
	e1000_write(e, E1000_IMC, E1000_INT_WORK);
}

static int e1000_transmit(struct nic *nic, const void *frame, size_t length)
{
	struct e1000 *e = nic->driver;
	if (nic->link != NIC_LINK_UP)
		e1000_update_link(nic);
	if (nic->link != NIC_LINK_UP)
		return -EIO;
	return e1000_tx_frame(e, frame, length);
}

static int e1000_transmit_segmented(struct nic *nic, const void *frame, size_t length,
				    size_t header_length)
{
	struct e1000 *e = nic->driver;
	if (nic->link != NIC_LINK_UP)
		e1000_update_link(nic);
	if (nic->link != NIC_LINK_UP)
		return -EIO;
	return e1000_tx_segmented(e, frame, length, header_length);
}

static unsigned e1000_poll(struct nic *nic, unsigned budget)
{
	struct e1000 *e = nic->driver;
	e1000_tx_reclaim(e);
	return e1000_rx_poll(e, budget);
}

const struct nic_ops e1000_nic_ops = {
    .transmit = e1000_transmit,
    .poll = e1000_poll,
    .enable_interrupts = e1000_enable_interrupts,
    .disable_interrupts = e1000_disable_interrupts,
    .read_counter = e1000_read_counter,
    .list_counters = e1000_list_counters,
    .update_link = e1000_update_link,
    .transmit_segmented = e1000_transmit_segmented,
    .refresh_counters = e1000_refresh_counters,
};

/* ---- Probe --------------------------------------------------------------- */

static int e1000_start(struct e1000 *e)
{
	int error = e1000_reset(e);
	if (error)
		return error;
	e1000_read_mac(e);
	error = e1000_rings_alloc(e);
	if (!error)
		error = e1000_stats_init(e);
	if (error)
		return error;
	e1000_rings_program(e);
	e1000_update_link(&e->nic);
	return 0;
}

static int e1000_probe(struct pci_device *dev)
{
	struct e1000 *e = kzalloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	spin_init(&e->tx_lock, "e1000.tx");
	spin_init(&e->stats_lock, "e1000.stats");
	e->pci = dev;
	e->nic.driver = e;
	e->nic.ops = &e1000_nic_ops;
	e->nic.counter_refresh_ns = E1000_COUNTER_REFRESH_NS;
	e->nic.mtu = 1500;
	e->nic.tx_tcp_checksum = true; /* a checksum context and TXSM per frame (ring.c) */
	pci_enable_device(dev, PCI_ENABLE_MEMORY | PCI_ENABLE_BUS_MASTER);
	e->regs = pci_map_bar(dev, 0);
	int error = e->regs && dev->bars[0].size >= E1000_REGS_SIZE ? e1000_start(e) : -ENODEV;
	if (error)
		goto out;
	int kind = pci_attach_irq(dev, PCI_IRQ_MSI, e1000_irq, e, "e1000");
	if (kind < 0) {
		error = kind;
		goto out_reset;
	}
	error = nic_register(&e->nic, "e1000");
	if (error)
		goto out_reset;
	dev->driver_data = e;
	e1000_devices++;
	return 0;

out_reset:
	e1000_write(e, E1000_IMC, 0xffffffffu);
	e1000_write(e, E1000_RCTL, 0);
	e1000_write(e, E1000_TCTL, 0);
out:
	/* Rings and buffers stay: the device may have seen their addresses. */
	return error;
}

PCI_DRIVER(e1000, 0x8086, 0x100e, e1000_probe);
