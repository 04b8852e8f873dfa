/*
 * The block boundary (block.h): the list of disks, request checks and the
 * two join points every transfer crosses.  Checking here (range, buffer)
 * keeps the drivers' hot paths free of it and means a file system bug cannot
 * make a device write outside the disk or DMA into an unmapped page.
 */
#include "block/block.h"

#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "time/time.h"

static struct spinlock block_list_lock = SPINLOCK_INIT("block.list");
static struct block_device *block_devices;

static void block_add(uint64_t *counter, uint64_t amount)
{
	__atomic_fetch_add(counter, amount, __ATOMIC_RELAXED);
}

int block_register(struct block_device *device)
{
	if (!device || !device->ops || !device->ops->submit || !device->name[0])
		return -EINVAL;
	if (block_find(device->name))
		return -EEXIST;
	if (device->max_sectors == 0)
		device->max_sectors = 8;
	uint64_t flags = spin_lock_irqsave(&block_list_lock);
	struct block_device **tail = &block_devices;
	while (*tail)
		tail = &(*tail)->next;
	device->next = NULL;
	__atomic_store_n(tail, device, __ATOMIC_RELEASE);
	spin_unlock_irqrestore(&block_list_lock, flags);
	pr_info("block: %s %lu sectors (%lu MiB)%s\n", device->name, device->sectors,
		device->sectors * BLOCK_SECTOR_SIZE >> 20, device->read_only ? " read-only" : "");
	return 0;
}

struct block_device *block_get(unsigned index)
{
	struct block_device *device = __atomic_load_n(&block_devices, __ATOMIC_ACQUIRE);
	while (device && index--)
		device = __atomic_load_n(&device->next, __ATOMIC_ACQUIRE);
	return device;
}

struct block_device *block_find(const char *name)
{
	if (!name)
		return NULL;
	for (struct block_device *device = block_get(0); device;
	     device = __atomic_load_n(&device->next, __ATOMIC_ACQUIRE))
		if (strcmp(device->name, name) == 0)
			return device;
	return NULL;
}

/* True when [buffer, buffer + length) is mapped kernel memory whose pages
 * are physically consecutive (the device gets one address for it). */
static bool block_buffer_contiguous(const void *buffer, size_t length)
{
	uint64_t start = virt_to_phys(buffer);
	if (start == VM_NO_PHYS)
		return false;
	uintptr_t first = (uintptr_t)buffer;
	for (uintptr_t page = (first & ~(uintptr_t)(PAGE_SIZE - 1)) + PAGE_SIZE;
	     page < first + length; page += PAGE_SIZE)
		if (virt_to_phys((const void *)page) != start + (page - first))
			return false;
	return true;
}

static int block_check(const struct block_request *request)
{
	const struct block_device *device = request->device;
	if (!device || !request->done)
		return -EINVAL;
	if (request->op == BLOCK_FLUSH)
		return request->count == 0 ? 0 : -EINVAL;
	if (request->op != BLOCK_READ && request->op != BLOCK_WRITE)
		return -EINVAL;
	if (request->count == 0 || request->count > device->max_sectors ||
	    request->sector >= device->sectors ||
	    device->sectors - request->sector < request->count)
		return -EINVAL;
	if (request->op == BLOCK_WRITE && device->read_only)
		return -EROFS;
	if (!request->buffer ||
	    !block_buffer_contiguous(request->buffer, (size_t)request->count * BLOCK_SECTOR_SIZE))
		return -EINVAL;
	return 0;
}

static void block_count_submit(struct block_device *device, const struct block_request *request)
{
	uint64_t bytes = (uint64_t)request->count * BLOCK_SECTOR_SIZE;
	struct block_counters *c = &device->counters;
	if (request->op == BLOCK_READ) {
		block_add(&c->reads, 1);
		block_add(&c->bytes_read, bytes);
	} else if (request->op == BLOCK_WRITE) {
		block_add(&c->writes, 1);
		block_add(&c->bytes_written, bytes);
	} else {
		block_add(&c->flushes, 1);
	}
	uint64_t now = __atomic_add_fetch(&c->in_flight, 1, __ATOMIC_RELAXED);
	uint64_t max = __atomic_load_n(&c->max_in_flight, __ATOMIC_RELAXED);
	while (now > max && !__atomic_compare_exchange_n(&c->max_in_flight, &max, now, false,
							 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* block.submit may sleep (the driver waits for room in its queue). */
JOINPOINT_DEFINE(block, submit, int, struct block_request *, request)
{
	if (!request)
		return -EINVAL;
	int error = block_check(request);
	if (error)
		return error;
	struct block_device *device = request->device;
	if (request->op == BLOCK_FLUSH && !device->can_flush) {
		request->status = 0; /* nothing is cached below us */
		request->done(request);
		return 0;
	}
	request->status = 0;
	block_count_submit(device, request);
	error = device->ops->submit(device, request);
	if (error) {
		block_add(&device->counters.errors, 1);
		__atomic_sub_fetch(&device->counters.in_flight, 1, __ATOMIC_RELAXED);
	}
	return error;
}

/* block.complete runs in the driver's interrupt handler. */
JOINPOINT_DEFINE_VOID_NOSLEEP(block, complete, struct block_request *, request, int, status)
{
	struct block_device *device = request->device;
	__atomic_sub_fetch(&device->counters.in_flight, 1, __ATOMIC_RELAXED);
	if (status) {
		block_add(&device->counters.errors, 1);
		status = status == -ETIMEDOUT ? -ETIMEDOUT : -EIO;
	}
	request->status = status;
	request->done(request);
}

static void block_rw_done(struct block_request *request)
{
	completion_signal(request->private);
}

int block_rw(struct block_device *device, enum block_op op, uint64_t sector, uint32_t count,
	     void *buffer)
{
	struct completion done;
	completion_init(&done, "block.rw");
	struct block_request request = {.device = device,
					.op = op,
					.sector = sector,
					.count = count,
					.buffer = buffer,
					.done = block_rw_done,
					.private = &done};
	int error = block_submit(&request);
	if (error)
		return error;
	completion_wait(&done);
	return request.status;
}
