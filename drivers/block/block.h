/*
 * The block boundary: disk drivers (virtio-blk) register a block device, and
 * file systems and the page cache move sectors through it.  The whole API is
 * two join points, "block.submit" (a request goes to the driver) and
 * "block.complete" (the driver says it ended, interrupt context), plus a
 * synchronous helper and lookup.  A driver keeps several requests in flight;
 * every request ends exactly once, with 0, -EIO (the device's error) or
 * -ETIMEDOUT (a device that stopped answering), never silently.
 *
 *     struct block_device *disk = block_find("vda");
 *     void *page = mm_alloc_pages(1, PAGE_SIZE);
 *     int error = block_rw(disk, BLOCK_READ, 0, PAGE_SIZE / BLOCK_SECTOR_SIZE, page);
 *
 * Buffers are physically contiguous kernel memory (mm_alloc_pages, kmalloc),
 * never a stack: the device reads and writes them directly (no copy).
 */
#ifndef DRIVERS_BLOCK_BLOCK_H
#define DRIVERS_BLOCK_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/spinlock.h"

#define BLOCK_SECTOR_SIZE 512
#define BLOCK_NAME_MAX    16

enum block_op {
	BLOCK_READ,
	BLOCK_WRITE,
	BLOCK_FLUSH, /* everything written so far is on stable storage */
};

struct block_device;
struct block_request;
typedef void (*block_done_fn)(struct block_request *request);

/* One transfer.  The submitter fills every field but status; done runs once,
 * from the completing interrupt (it must not sleep), with status set. */
struct block_request {
	struct block_device *device;
	enum block_op op;
	uint64_t sector; /* in BLOCK_SECTOR_SIZE units */
	uint32_t count;  /* sectors; 0 for BLOCK_FLUSH */
	void *buffer;    /* count * BLOCK_SECTOR_SIZE bytes, physically contiguous */
	int status;      /* 0, -EIO or -ETIMEDOUT, set before done */
	block_done_fn done;
	void *private;      /* the submitter's */
	uint64_t queued_ns; /* set by the driver once the device has it: its watchdog's start */
};

/* What a driver does.  submit queues the request (it may sleep until the
 * device has room) and returns 0, or an error when it could not be queued
 * (then done is never called); a queued request ends with block_complete. */
struct block_ops {
	int (*submit)(struct block_device *device, struct block_request *request);
};

struct block_counters {
	uint64_t reads, writes, flushes, errors;
	uint64_t bytes_read, bytes_written;
	uint64_t in_flight, max_in_flight;
};

/* A disk.  The driver fills name, sectors, max_sectors, read_only, ops and
 * driver, then calls block_register. */
struct block_device {
	char name[BLOCK_NAME_MAX];
	uint64_t sectors;     /* capacity */
	uint32_t max_sectors; /* the most one request may move */
	bool read_only;
	bool can_flush;
	const struct block_ops *ops;
	void *driver;
	struct block_counters counters;
	struct block_device *next;
};

/* Adds a device under its name.  Returns 0, -EINVAL (no ops or no name),
 * -EEXIST (the name is taken). */
int block_register(struct block_device *device);
/* The device called name, or NULL. */
struct block_device *block_find(const char *name);
/* The index'th registered device (0 first), or NULL. */
struct block_device *block_get(unsigned index);

/* Hands request to its device's driver.  Returns 0 (done will run), or
 * -EINVAL (range outside the device, count 0 or above max_sectors, a buffer
 * that is not physically contiguous kernel memory, no done), -EROFS (write to
 * a read-only device), or the driver's error. */
int block_submit(struct block_request *request);
/* The driver's report that request ended with status (0, -ETIMEDOUT, or
 * another negative error, reported up as -EIO).  Any context; runs
 * request->done. */
void block_complete(struct block_request *request, int status);

/* Submits one request and sleeps until it ends.  Returns 0, -EIO,
 * -ETIMEDOUT, or block_submit's errors. */
int block_rw(struct block_device *device, enum block_op op, uint64_t sector, uint32_t count,
	     void *buffer);

#endif
