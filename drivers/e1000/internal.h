/* The e1000 driver's private declarations: registers, descriptors, state. */
#ifndef DRIVERS_E1000_INTERNAL_H
#define DRIVERS_E1000_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/spinlock.h"
#include "e1000/e1000.h"
#include "net/nic.h"

struct pci_device;

/* Registers (byte offsets into BAR 0), 8254x manual section 13. */
#define E1000_CTRL      0x0000
#define E1000_STATUS    0x0008
#define E1000_EERD      0x0014
#define E1000_ICR       0x00c0
#define E1000_ITR       0x00c4
#define E1000_IMS       0x00d0
#define E1000_IMC       0x00d8
#define E1000_RCTL      0x0100
#define E1000_TCTL      0x0400
#define E1000_TIPG      0x0410
#define E1000_RDBAL     0x2800
#define E1000_RDBAH     0x2804
#define E1000_RDLEN     0x2808
#define E1000_RDH       0x2810
#define E1000_RDT       0x2818
#define E1000_RDTR      0x2820
#define E1000_TDBAL     0x3800
#define E1000_TDBAH     0x3804
#define E1000_TDLEN     0x3808
#define E1000_TDH       0x3810
#define E1000_TDT       0x3818
#define E1000_MTA       0x5200
#define E1000_RAL0      0x5400
#define E1000_RAH0      0x5404
#define E1000_REGS_SIZE 0x20000

#define E1000_CTRL_ASDE  (1u << 5)
#define E1000_CTRL_SLU   (1u << 6)
#define E1000_CTRL_RST   (1u << 26)
#define E1000_STATUS_LU  (1u << 1)
#define E1000_EERD_START (1u << 0)
#define E1000_EERD_DONE  (1u << 4)
#define E1000_RAH_AV     (1u << 31)

#define E1000_RCTL_EN    (1u << 1)
#define E1000_RCTL_BAM   (1u << 15)
#define E1000_RCTL_SECRC (1u << 26) /* strip the FCS */
#define E1000_TCTL_EN    (1u << 1)
#define E1000_TCTL_PSP   (1u << 3) /* pad short packets */
#define E1000_TCTL_CT    (0x10u << 4)
#define E1000_TCTL_COLD  (0x40u << 12)
#define E1000_TIPG_VALUE (10u | 8u << 10 | 6u << 20)

/* Interrupt causes (ICR, IMS, IMC). */
#define E1000_INT_TXDW   (1u << 0)
#define E1000_INT_LSC    (1u << 2)
#define E1000_INT_RXDMT0 (1u << 4)
#define E1000_INT_RXO    (1u << 6)
#define E1000_INT_RXT0   (1u << 7)
/* Receive causes wake the worker.  A transmit completion (TXDW) raises no
 * interrupt: its descriptors are reclaimed when the next frame is queued or
 * the next pass polls, as on virtio-net, so a response costs no second
 * interrupt.  ICR still reports TXDW beside the causes that are enabled. */
#define E1000_INT_WORK    (E1000_INT_RXDMT0 | E1000_INT_RXO | E1000_INT_RXT0)
#define E1000_INT_ENABLED (E1000_INT_WORK | E1000_INT_LSC)

#define E1000_RX_DD   (1u << 0)
#define E1000_RX_EOP  (1u << 1)
#define E1000_TX_EOP  (1u << 0)
#define E1000_TX_IFCS (1u << 1)
#define E1000_TX_RS   (1u << 3)
#define E1000_TX_DD   (1u << 0)

/* Extended transmit descriptors (8254x manual 3.3.5-3.3.7): a context
 * descriptor sets up TCP segmentation, data descriptors carry the frame. */
#define E1000_TX_DEXT    0x20 /* command: extended descriptor */
#define E1000_TX_TSE     0x04 /* command: TCP segmentation */
#define E1000_TX_DTYP_D  0x10 /* data descriptor, in the byte after the length */
#define E1000_TUCMD_TCP  0x01 /* context: the payload is TCP */
#define E1000_TUCMD_IP   0x02 /* context: IPv4 */
#define E1000_POPTS_IXSM 0x01 /* insert the IP checksum */
#define E1000_POPTS_TXSM 0x02 /* insert the TCP checksum */

#define E1000_RX_RING 256 /* descriptors; 16 bytes each, a multiple of 128 bytes */
/* Receive descriptors go back to the device (an RDT write, which the device
 * sees as a register access) this many at a time: the device keeps at least
 * RX_RING - RX_RETURN_BATCH of them, and a frame costs no register write. */
#define E1000_RX_RETURN_BATCH 16
#define E1000_TX_RING         256
#define E1000_BUFFER_SIZE     2048 /* RCTL.BSIZE 00 */

/* The statistics registers clear when read and stick at 0xffffffff when
 * left unread.  The fastest 32-bit ones count frames: at 1 Gb/s at most
 * E1000_LINE_RATE_FRAMES a second (64-byte frames, with preamble and gap 84
 * byte times of 8 ns), which fills one in 2,886 s.  The worker folds them
 * into the totals every E1000_COUNTER_REFRESH_NS, at most 14.9 million
 * frames later: a 288th of the limit. */
#define E1000_LINE_RATE_FRAMES   1488096
#define E1000_COUNTER_REFRESH_NS (10ull * 1000000000ull)

struct e1000_rx_desc {
	uint64_t address;
	uint16_t length;
	uint16_t checksum;
	uint8_t status;
	uint8_t errors;
	uint16_t special;
} __attribute__((packed));

struct e1000_tx_desc {
	uint64_t address;
	uint16_t length;
	uint8_t cso;
	uint8_t command;
	uint8_t status;
	uint8_t css;
	uint16_t special;
} __attribute__((packed));

/* A TCP segmentation context descriptor (same 16 bytes as a data one). */
struct e1000_context_desc {
	uint8_t ipcss; /* where the IP header starts, its checksum sits, it ends */
	uint8_t ipcso;
	uint16_t ipcse;
	uint8_t tucss; /* the same for TCP: start, checksum, end (0: the frame's) */
	uint8_t tucso;
	uint16_t tucse;
	uint32_t payload_and_command; /* PAYLEN (20 bits), DTYP 0, TUCMD << 24 */
	uint8_t status;
	uint8_t header_length;
	uint16_t mss;
} __attribute__((packed));

/* Counters kept by the driver (the hardware's are read by name). */
struct e1000_soft_counters {
	uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes;
	uint64_t rx_errors;     /* descriptors with error bits */
	uint64_t rx_bad_length; /* lengths beyond the buffer or below a header */
	uint64_t rx_fragments;  /* frames spanning descriptors: dropped */
	uint64_t tx_ring_full, interrupts, link_changes;
	/* interrupts by cause (an interrupt may count under several) */
	uint64_t irq_tx_done, irq_rx_timer, irq_rx_low, irq_rx_overrun;
	uint64_t tx_segmented;   /* large frames handed to the device's TSO */
	uint64_t tx_checksummed; /* frames whose TCP checksum the device made */
};

struct e1000 {
	struct nic nic;
	struct pci_device *pci;
	volatile uint8_t *regs;
	struct e1000_rx_desc *rx_ring; /* RX_RING descriptors */
	struct e1000_tx_desc *tx_ring;
	uint8_t *rx_buffers; /* RX_RING * BUFFER_SIZE */
	uint8_t *tx_buffers;
	uint64_t rx_ring_phys, tx_ring_phys, rx_buffers_phys, tx_buffers_phys;
	unsigned rx_next;   /* next descriptor the device fills */
	unsigned rx_held;   /* emptied before rx_next, not yet given back by RDT */
	bool rx_discarding; /* inside a frame that spans descriptors */
	unsigned tx_tail;   /* next free descriptor */
	unsigned tx_clean;  /* oldest descriptor not yet reclaimed */
	/* Where the TCP header starts in the frames the checksum context last
	 * written describes; 0 when the last context is a TSO one (or none). */
	unsigned tx_checksum_context;
	bool tx_ends_frame
	    [E1000_TX_RING]; /* the slot of a frame's last descriptor: nic_tx_done at DD */
	struct spinlock tx_lock;
	struct spinlock stats_lock;
	volatile bool interrupts_on;
	struct e1000_soft_counters soft;
	uint64_t *hardware_totals; /* accumulated read-to-clear statistics */
};

static inline uint32_t e1000_read(struct e1000 *e, unsigned reg)
{
	return *(volatile uint32_t *)(e->regs + reg);
}

static inline void e1000_write(struct e1000 *e, unsigned reg, uint32_t value)
{
	*(volatile uint32_t *)(e->regs + reg) = value;
}

/* ring.c: allocation, programming and the data path. */
int e1000_rings_alloc(struct e1000 *e);
/* Frees the rings and buffers; the device must not use them any more. */
void e1000_rings_free(struct e1000 *e);
void e1000_rings_program(struct e1000 *e);
unsigned e1000_rx_poll(struct e1000 *e, unsigned budget);
int e1000_tx_frame(struct e1000 *e, const void *frame, size_t length);
/* One Ethernet + IPv4 + TCP frame cut into segments by the device. */
int e1000_tx_segmented(struct e1000 *e, const void *frame, size_t length, size_t header_length);
void e1000_tx_reclaim(struct e1000 *e);

/* stats.c: the statistics registers by name. */
extern const struct nic_ops e1000_nic_ops;
int e1000_stats_init(struct e1000 *e);
int e1000_read_counter(struct nic *nic, const char *name, uint64_t *value);
void e1000_list_counters(struct nic *nic, nic_counter_fn fn, void *arg);
/* Folds every statistics register into its total (the worker's refresh). */
void e1000_refresh_counters(struct nic *nic);

#endif
