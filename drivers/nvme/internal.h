/* The NVMe driver's pure pieces, shared by nvme.c and its suite (tests.c). */
#ifndef DRIVERS_NVME_INTERNAL_H
#define DRIVERS_NVME_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#define NVME_DOORBELL    0x1000 /* the first doorbell's offset in BAR0 */
#define NVME_QUEUE_PAIRS 2      /* admin and one I/O queue */
#define NVME_INTX        0xffff /* create_io_queues' vector for INTx */

/* Bytes from one doorbell to the next: 4 << CAP.DSTRD (up to 128 KiB). */
static inline uint64_t nvme_doorbell_stride(uint64_t cap)
{
	return 4ull << ((cap >> 32) & 0xf);
}

/* Whether the doorbells of pairs queue pairs (a submission and a completion
 * doorbell each) at CAP's stride lie inside a BAR0 of bar_size bytes. */
static inline bool nvme_doorbells_fit(uint64_t cap, uint64_t bar_size, unsigned pairs)
{
	return NVME_DOORBELL + 2ull * pairs * nvme_doorbell_stride(cap) <= bar_size;
}

/* Create I/O Completion Queue's dword 11 without PC: interrupts enabled
 * (IEN, bit 1) through vector (IV, bits 31:16), vector 0 on INTx. */
static inline uint32_t nvme_cq_interrupt_flags(uint16_t vector)
{
	return vector == NVME_INTX ? 2u : (uint32_t)vector << 16 | 2u;
}

#endif
