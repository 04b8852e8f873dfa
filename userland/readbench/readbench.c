/*
 * readbench: the reader of `make bench-storage`, one source for both sides
 * of the comparison: microScope builds it as a program (its init in the
 * bench), the Linux guest's build (tools/linux-guest/build.sh) with the
 * host's gcc and READBENCH_LINUX defined (the host's compiler and the one
 * for microScope's programs both define __linux__).  It reads a file with 4 KiB read()s, in order and at
 * pseudo-random pages (the same sequence on both), first with nothing cached
 * ("cold") and then again with the pages cached, PASSES times over (the
 * first pass also pays for QEMU translating the code it runs), and prints
 * per case and pass
 *     readbench: <case> reads <n> bytes <b> ns <t>
 * Emptying the cache: Linux drops its caches (sync, drop_caches = 3);
 * microScope unmounts the disk and mounts it again (a mount starts with none
 * of the file's pages cached).
 *
 * Usage: readbench [FILE MOUNT-POINT DEVICE]   (default /disk/bench.bin /disk vda, or nvme0n1)
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef READBENCH_LINUX
#include <microscope/syscall.h>
#endif

#define CHUNK        4096
#define RANDOM_READS 512
#define PASSES       3

static char chunk[CHUNK];

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

#ifndef READBENCH_LINUX
/* Mounts device at mount_point; the default device (vda) falls back to the
 * first NVMe namespace, the boot disk when the bench attaches it as NVMe. */
static long mount_again(const char *mount_point, const char *device)
{
	long error =
	    ms_syscall6(__NR_mount, (long)device, (long)mount_point, (long)"ext2", 0, 0, 0);
	if (error && strcmp(device, "vda") == 0)
		error = ms_syscall6(__NR_mount, (long)"nvme0n1", (long)mount_point, (long)"ext2", 0,
				    0, 0);
	return error;
}
#endif

/* Returns 0, or -1 after saying why. */
static int empty_cache(const char *mount_point, const char *device)
{
#ifdef READBENCH_LINUX
	(void)mount_point;
	(void)device;
	sync();
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0 || write(fd, "3\n", 2) != 2) {
		perror("readbench: drop_caches");
		return -1;
	}
	close(fd);
#else
	long error = ms_syscall3(__NR_umount2, (long)mount_point, 0, 0);
	if (!error)
		error = mount_again(mount_point, device);
	if (error) {
		printf("readbench: cannot mount %s again at %s: %ld\n", device, mount_point, error);
		return -1;
	}
#endif
	return 0;
}

/* Reads path in CHUNK pieces (random: RANDOM_READS at pseudo-random pages)
 * and prints the time taken.  Returns 0 or -1. */
static int timed_reads(const char *name, const char *path, int random)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		printf("readbench: cannot open %s\n", path);
		return -1;
	}
	off_t size = lseek(fd, 0, SEEK_END);
	lseek(fd, 0, SEEK_SET);
	uint64_t pages = (uint64_t)size / CHUNK, x = 88172645463325252ull, bytes = 0;
	unsigned reads = random ? RANDOM_READS : (unsigned)pages;
	uint64_t start = now_ns();
	for (unsigned i = 0; i < reads; i++) {
		if (random) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			lseek(fd, (off_t)(x % pages) * CHUNK, SEEK_SET);
		}
		ssize_t n = read(fd, chunk, CHUNK);
		if (n <= 0)
			break;
		bytes += (uint64_t)n;
	}
	uint64_t ns = now_ns() - start;
	close(fd);
	printf("readbench: %s reads %u bytes %llu ns %llu\n", name, reads,
	       (unsigned long long)bytes, (unsigned long long)ns);
	fflush(stdout);
	return bytes == (uint64_t)reads * CHUNK ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *path = argc > 3 ? argv[1] : "/disk/bench.bin";
	const char *mount_point = argc > 3 ? argv[2] : "/disk";
	const char *device = argc > 3 ? argv[3] : "vda";
	int failed = 0;
	for (int pass = 0; pass < PASSES && !failed; pass++)
		failed = empty_cache(mount_point, device) || timed_reads("seq-cold", path, 0) ||
			 timed_reads("seq-cached", path, 0) || empty_cache(mount_point, device) ||
			 timed_reads("random-cold", path, 1) ||
			 timed_reads("random-cached", path, 1);
	printf("readbench: %s\n", failed ? "failed" : "done");
	return failed;
}
