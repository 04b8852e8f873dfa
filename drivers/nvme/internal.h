/* The NVMe driver's state and pure pieces, shared by nvme.c and its suite
 * (tests.c), which drives the watchdog against a controller made of RAM. */
#ifndef DRIVERS_NVME_INTERNAL_H
#define DRIVERS_NVME_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "block/block.h"
#include "cpu/spinlock.h"
#include "pci/pci.h"
#include "sched/sched.h"
#include "time/time.h"

#define NVME_DOORBELL    0x1000 /* the first doorbell's offset in BAR0 */
#define NVME_QUEUE_PAIRS 2      /* admin and one I/O queue */
#define NVME_INTX        0xffff /* create_io_queues' vector for INTx */
#define NVME_REG_CC      0x14
#define NVME_REG_CSTS    0x1c
#define NVME_CSTS_RDY    1u

#define NVME_QUEUE_ENTRIES 64
#define NVME_SLOTS         32 /* fewer than entries: the submission queue never fills */

struct nvme_command {
	uint32_t dword0; /* opcode, command id << 16 */
	uint32_t nsid;
	uint64_t reserved;
	uint64_t metadata;
	uint64_t prp1, prp2;
	uint32_t cdw10, cdw11, cdw12, cdw13, cdw14, cdw15;
};
_Static_assert(sizeof(struct nvme_command) == 64, "submission entry");

struct nvme_completion {
	uint32_t result, reserved;
	uint16_t sq_head, sq_id;
	uint16_t command_id, status; /* status: phase in bit 0 */
};
_Static_assert(sizeof(struct nvme_completion) == 16, "completion entry");

/* One submission/completion queue pair. */
struct nvme_queue {
	unsigned id;
	struct nvme_command *sq;
	struct nvme_completion *cq;
	uint16_t sq_tail, cq_head;
	uint16_t phase; /* the phase bit a new completion carries */
};

struct nvme {
	struct block_device block;
	struct pci_device *pci;
	volatile uint8_t *regs;
	unsigned doorbell_stride;
	uint64_t timeout_ns;
	struct nvme_queue admin, io;
	struct spinlock lock; /* the I/O queue and the slots */
	struct semaphore free_slots;
	struct block_request *slots[NVME_SLOTS];
	uint64_t *prp_lists; /* a page per slot */
	enum pci_irq_kind irq_kind;
	volatile bool io_ready;
	uint64_t interrupts, bad_completions;
	struct timer_oneshot watchdog;
	bool watching;  /* the watchdog is armed */
	bool dead;      /* timed out: every request is refused */
	bool resetting; /* dead, and CSTS.RDY has not read 0 yet */
	uint64_t reset_deadline_ns;
};

/* The watchdog (a timer callback, interrupt context): a command older than
 * the timeout makes it reset the controller and, once CSTS.RDY reads 0, end
 * every request with -ETIMEDOUT; past CAP.TO without RDY = 0 the controller
 * loses bus mastering and its requests never end. */
void nvme_watchdog(struct timer_oneshot *timer, void *ctx);
/* Thread context: CC.EN = 0 and up to CAP.TO for RDY = 0.  False when it
 * never came (bus mastering is then off: no buffer it had may be reused). */
bool nvme_disable_controller(struct nvme *nv);

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
