/*
 * The block suites.  `block` runs against a scratch disk (the harness attaches
 * a zeroed raw image as vda): writes and reads back, many requests in flight
 * at once, requests the boundary must refuse, a flush.  It leaves a disk that
 * holds an ext2 file system alone.  `blockerr` runs with a QEMU blkdebug rule
 * that fails every read touching sector BLOCKERR_SECTOR: that read must come
 * back -EIO, and the disk must keep working after it.
 */
#include "block/block.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"

#define BLOCKERR_SECTOR   1024 /* tests/run.py's blkdebug rule names it too */
#define EXT2_MAGIC_OFFSET (1024 + 56)
#define PAGE_SECTORS      (PAGE_SIZE / BLOCK_SECTOR_SIZE)

/* The scratch disk, or NULL (the suite is then skipped). */
static struct block_device *scratch_disk(struct ktest *t)
{
	struct block_device *disk = block_get(0);
	if (!disk) {
		ktest_skip(t, "no disk attached");
		return NULL;
	}
	uint8_t *page = mm_alloc_pages(1, PAGE_SIZE);
	if (!page)
		return NULL;
	bool ext2 = block_rw(disk, BLOCK_READ, 0, PAGE_SECTORS, page) == 0 &&
		    page[EXT2_MAGIC_OFFSET] == 0x53 && page[EXT2_MAGIC_OFFSET + 1] == 0xef;
	mm_free_pages(page, 1);
	if (ext2 || disk->sectors < 4096) {
		ktest_skip(t, "the disk is not a scratch disk");
		return NULL;
	}
	return disk;
}

static void fill(uint8_t *buffer, size_t length, unsigned seed)
{
	for (size_t i = 0; i < length; i++)
		buffer[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 9));
}

static void write_then_read_back(struct ktest *t)
{
	struct block_device *disk = scratch_disk(t);
	if (!disk)
		return;
	uint8_t *out = mm_alloc_pages(4, PAGE_SIZE), *in = mm_alloc_pages(4, PAGE_SIZE);
	ASSERT_TRUE(t, out && in);
	fill(out, 4 * PAGE_SIZE, 1);
	memset(in, 0, 4 * PAGE_SIZE);
	EXPECT_EQ(t, block_rw(disk, BLOCK_WRITE, 64, 4 * PAGE_SECTORS, out), 0);
	EXPECT_EQ(t, block_rw(disk, BLOCK_READ, 64, 4 * PAGE_SECTORS, in), 0);
	EXPECT_EQ(t, memcmp(in, out, 4 * PAGE_SIZE), 0);
	/* the last sector of the disk is reachable, one past it is not */
	EXPECT_EQ(t, block_rw(disk, BLOCK_WRITE, disk->sectors - 1, 1, out), 0);
	EXPECT_EQ(t, block_rw(disk, BLOCK_READ, disk->sectors - 1, 1, in), 0);
	EXPECT_EQ(t, memcmp(in, out, BLOCK_SECTOR_SIZE), 0);
	mm_free_pages(out, 4);
	mm_free_pages(in, 4);
}

#define BATCH        24
#define BATCH_ROUNDS 32 /* more batches while none had two requests in flight */

struct batch {
	struct block_request requests[BATCH];
	struct semaphore done;
	int statuses[BATCH];
};

static void batch_done(struct block_request *request)
{
	struct batch *batch = request->private;
	batch->statuses[request - batch->requests] = request->status;
	semaphore_up(&batch->done);
}

/* Submits BATCH one-page requests without waiting, then waits for all. */
static void run_batch(struct ktest *t, struct block_device *disk, struct batch *batch,
		      enum block_op op, uint8_t *pages)
{
	semaphore_init(&batch->done, 0, "block.test");
	for (unsigned i = 0; i < BATCH; i++) {
		batch->statuses[i] = 1;
		batch->requests[i] = (struct block_request){.device = disk,
							    .op = op,
							    .sector = 256 + i * 3 * PAGE_SECTORS,
							    .count = PAGE_SECTORS,
							    .buffer = pages + i * PAGE_SIZE,
							    .done = batch_done,
							    .private = batch};
		EXPECT_EQ(t, block_submit(&batch->requests[i]), 0);
	}
	for (unsigned i = 0; i < BATCH; i++)
		semaphore_down(&batch->done);
	for (unsigned i = 0; i < BATCH; i++)
		EXPECT_EQ(t, batch->statuses[i], 0);
}

static void many_requests_in_flight(struct ktest *t)
{
	struct block_device *disk = scratch_disk(t);
	if (!disk)
		return;
	struct batch *batch = kzalloc(sizeof(*batch));
	uint8_t *out = mm_alloc_pages(BATCH, PAGE_SIZE), *in = mm_alloc_pages(BATCH, PAGE_SIZE);
	ASSERT_TRUE(t, batch && out && in);
	fill(out, BATCH * PAGE_SIZE, 2);
	memset(in, 0, BATCH * PAGE_SIZE);
	uint64_t writes = disk->counters.writes;
	run_batch(t, disk, batch, BLOCK_WRITE, out);
	run_batch(t, disk, batch, BLOCK_READ, in);
	EXPECT_EQ(t, memcmp(in, out, BATCH * PAGE_SIZE), 0);
	EXPECT_EQ(t, disk->counters.writes - writes, BATCH);
	EXPECT_EQ(t, disk->counters.in_flight, 0);
	/* The device decides when a request completes: on a loaded host QEMU
	 * may finish each one before the next is submitted.  More batches of
	 * reads make a driver that overlaps requests show it (one that
	 * serialises them never does). */
	for (unsigned round = 0; round < BATCH_ROUNDS && disk->counters.max_in_flight < 2; round++)
		run_batch(t, disk, batch, BLOCK_READ, in);
	EXPECT_TRUE(t, disk->counters.max_in_flight >= 2);
	kfree(batch);
	mm_free_pages(out, BATCH);
	mm_free_pages(in, BATCH);
}

static void never_done(struct block_request *request)
{
	(void)request;
}

static void bad_requests_are_refused(struct ktest *t)
{
	struct block_device *disk = scratch_disk(t);
	if (!disk)
		return;
	uint8_t *page = mm_alloc_pages(1, PAGE_SIZE);
	ASSERT_TRUE(t, page != NULL);
	struct block_request request = {.device = disk,
					.op = BLOCK_READ,
					.sector = 0,
					.count = 1,
					.buffer = page,
					.done = never_done};
	request.sector = disk->sectors;
	EXPECT_EQ(t, block_submit(&request), -EINVAL); /* past the end */
	request.sector = disk->sectors - 1;
	request.count = 2;
	EXPECT_EQ(t, block_submit(&request), -EINVAL); /* runs past the end */
	request.sector = UINT64_MAX;
	EXPECT_EQ(t, block_submit(&request), -EINVAL);
	request = (struct block_request){
	    .device = disk, .op = BLOCK_READ, .count = 0, .buffer = page, .done = never_done};
	EXPECT_EQ(t, block_submit(&request), -EINVAL); /* nothing to move */
	request.count = disk->max_sectors + 1;
	EXPECT_EQ(t, block_submit(&request), -EINVAL);
	request.count = 1;
	request.buffer = NULL;
	EXPECT_EQ(t, block_submit(&request), -EINVAL);
	request.buffer = (void *)0x1000; /* not mapped */
	EXPECT_EQ(t, block_submit(&request), -EINVAL);
	request.buffer = page;
	request.done = NULL;
	EXPECT_EQ(t, block_submit(&request), -EINVAL);
	request.done = never_done;
	request.op = (enum block_op)7;
	EXPECT_EQ(t, block_submit(&request), -EINVAL);
	EXPECT_EQ(t, block_submit(NULL), -EINVAL);
	EXPECT_EQ(t, disk->counters.in_flight, 0);
	mm_free_pages(page, 1);
}

static void flush_completes(struct ktest *t)
{
	struct block_device *disk = scratch_disk(t);
	if (!disk)
		return;
	EXPECT_EQ(t, block_rw(disk, BLOCK_FLUSH, 0, 0, NULL), 0);
	EXPECT_EQ(t, block_rw(disk, BLOCK_FLUSH, 0, 1, NULL), -EINVAL);
}

KTEST_SUITE(block, KTEST_CASE(write_then_read_back), KTEST_CASE(many_requests_in_flight),
	    KTEST_CASE(bad_requests_are_refused), KTEST_CASE(flush_completes));

static void injected_read_error_is_eio(struct ktest *t)
{
	struct block_device *disk = block_get(0);
	if (!disk) {
		ktest_skip(t, "no disk attached");
		return;
	}
	uint8_t *page = mm_alloc_pages(1, PAGE_SIZE);
	ASSERT_TRUE(t, page != NULL);
	uint64_t errors = disk->counters.errors;
	EXPECT_EQ(t, block_rw(disk, BLOCK_READ, BLOCKERR_SECTOR, PAGE_SECTORS, page), -EIO);
	EXPECT_EQ(t, block_rw(disk, BLOCK_READ, BLOCKERR_SECTOR - 8, 8, page), 0);
	EXPECT_EQ(t, block_rw(disk, BLOCK_READ, BLOCKERR_SECTOR, 1, page), -EIO);
	EXPECT_EQ(t, block_rw(disk, BLOCK_READ, 0, PAGE_SECTORS, page), 0);
	EXPECT_EQ(t, disk->counters.errors - errors, 2);
	EXPECT_EQ(t, disk->counters.in_flight, 0);
	mm_free_pages(page, 1);
}

KTEST_SUITE(blockerr, KTEST_CASE(injected_read_error_is_eio));

/* With tests/run.py's throttled disk, virtio-blk or NVMe (QEMU lets one request through, then
 * holds each for an hour): the read that the device holds ends with
 * -ETIMEDOUT after the driver's timeout, the dead device refuses the next
 * one at once with -EIO, and nothing is left in flight. */
static void silent_device_times_out(struct ktest *t)
{
	struct block_device *disk = block_get(0);
	if (!disk) {
		ktest_skip(t, "no disk attached");
		return;
	}
	uint8_t *page = mm_alloc_pages(1, PAGE_SIZE);
	ASSERT_TRUE(t, page != NULL);
	int status = 0;
	unsigned reads = 0;
	while (status == 0 && reads < 4)
		status = block_rw(disk, BLOCK_READ, reads++ * PAGE_SECTORS, PAGE_SECTORS, page);
	EXPECT_EQ(t, status, -ETIMEDOUT);
	EXPECT_EQ(t, block_rw(disk, BLOCK_READ, 0, PAGE_SECTORS, page), -EIO);
	EXPECT_EQ(t, disk->counters.in_flight, 0);
	mm_free_pages(page, 1);
}

KTEST_SUITE(blocktimeout, KTEST_CASE(silent_device_times_out));
