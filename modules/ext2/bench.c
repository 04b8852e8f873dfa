/*
 * storage_bench (command line, test kernel): measures reads of a file on the
 * ext2 disk at /disk, cold (the page cache emptied first) and cached,
 * sequential and random 4 KiB reads, and the cost of a page-cache hit; prints
 * "storage_bench: ..." lines for tests/bench.py and stops the machine.
 * Ticks are TSC ticks: guest instructions under QEMU -icount shift=0.
 */
#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "ext2/internal.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "power/power.h"
#include "time/time.h"

#define BENCH_FILE   EXT2_BOOT_MOUNT "/bench.bin"
#define BENCH_BYTES  (6u << 20) /* fits the page cache's default limit */
#define RANDOM_READS 512
#define HIT_ROUNDS   10000

static bool requested;

static int set_storage_bench(const char *value)
{
	(void)value;
	requested = true;
	return 0;
}
KERNEL_PARAM(storage_bench, set_storage_bench,
	     "measure ext2 reads through the page cache at /disk, print them and stop");

static int make_file(uint8_t *chunk)
{
	struct vfs_file *file;
	int error = vfs_open(BENCH_FILE, VFS_O_WRONLY | VFS_O_CREAT | VFS_O_TRUNC, 0644, &file);
	if (error)
		return error;
	for (unsigned done = 0; done < BENCH_BYTES && !error; done += PAGE_SIZE)
		if (vfs_write(file, chunk, PAGE_SIZE) != PAGE_SIZE)
			error = -EIO;
	vfs_close(file);
	return error ? error : ext2_sync_all();
}

/* Reads the file in 4 KiB pieces, in order or at pseudo-random pages, and
 * prints the time taken. */
static void timed_reads(const char *name, bool random, uint8_t *chunk)
{
	struct vfs_file *file;
	if (vfs_open(BENCH_FILE, VFS_O_RDONLY, 0, &file))
		return;
	unsigned reads = random ? RANDOM_READS : BENCH_BYTES / PAGE_SIZE;
	uint64_t x = 88172645463325252ull, bytes = 0;
	uint64_t start_ns = clock_ns(), start_ticks = rdtsc();
	for (unsigned i = 0; i < reads; i++) {
		if (random) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			vfs_lseek(file, (int64_t)(x % (BENCH_BYTES / PAGE_SIZE)) * PAGE_SIZE,
				  VFS_SEEK_SET);
		}
		int64_t n = vfs_read(file, chunk, PAGE_SIZE);
		if (n <= 0)
			break;
		bytes += (uint64_t)n;
	}
	uint64_t ticks = rdtsc() - start_ticks, ns = clock_ns() - start_ns;
	vfs_close(file);
	console_print("storage_bench: %s reads %u bytes %lu ns %lu ticks %lu\n", name, reads, bytes,
		      ns, ticks);
}

/* Ticks of one pcache_get + pcache_put on a page that is cached, and of one
 * pcache_get_cached + pcache_put (what a read() that hits does). */
static void hit_cost(void)
{
	struct vfs_file *file;
	if (vfs_open(BENCH_FILE, VFS_O_RDONLY, 0, &file))
		return;
	struct ext2_node *node = file->node->private;
	struct pcache_page *page;
	mutex_lock(&ext2_lock); /* a miss fills the page, which needs ext2's block map */
	int error = pcache_get(&node->mapping, 0, PCACHE_READ, &page);
	mutex_unlock(&ext2_lock);
	if (error == 0) {
		pcache_put(page);
		uint64_t start = rdtsc();
		for (unsigned i = 0; i < HIT_ROUNDS; i++) {
			pcache_get(&node->mapping, 0, PCACHE_READ, &page);
			pcache_put(page);
		}
		console_print("storage_bench: hit rounds %u ticks %lu\n", HIT_ROUNDS,
			      rdtsc() - start);
		start = rdtsc();
		for (unsigned i = 0; i < HIT_ROUNDS; i++) {
			pcache_get_cached(&node->mapping, 0, NULL, 1, &page);
			pcache_put(page);
		}
		console_print("storage_bench: cached-hit rounds %u ticks %lu\n", HIT_ROUNDS,
			      rdtsc() - start);
	}
	vfs_close(file);
}

void ext2_bench_run_if_requested(void)
{
	if (!requested)
		return;
	uint8_t *chunk = mm_alloc_pages(1, PAGE_SIZE);
	struct vfs_stat stat;
	if (!chunk || vfs_stat(EXT2_BOOT_MOUNT, &stat) || make_file(chunk)) {
		console_print("storage_bench: no ext2 disk at " EXT2_BOOT_MOUNT "\n");
		power_stop(POWER_REQUESTED);
	}
	pcache_shrink(0);
	timed_reads("seq-cold", false, chunk);
	timed_reads("seq-cached", false, chunk);
	pcache_shrink(0);
	timed_reads("random-cold", true, chunk);
	timed_reads("random-cached", true, chunk);
	hit_cost();
	struct pcache_stats stats;
	pcache_get_stats(&stats);
	console_print("storage_bench: pcache hits %lu misses %lu evictions %lu writebacks %lu\n",
		      stats.hits, stats.misses, stats.evictions, stats.writebacks);
	power_stop(POWER_REQUESTED);
}
