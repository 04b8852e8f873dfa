/*
 * The holes a hostile process found in the kernel's shared pages, each
 * tested the way it was attacked (docs/SECURITY.md): the accounting results
 * pages and the telemetry rings are the kernel's regions of the process, so
 * they can be neither mapped over, nor unmapped, nor written.
 */
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/acct.h"
#include "uapi/ipc.h"
#include "uapi/telemetry.h"
#include "usertests.h"

#define PAGE 4096UL

static long raw_mmap_fixed(uint64_t address, uint64_t length)
{
	return ms_syscall6(__NR_mmap, (long)address, (long)length, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

static long raw_munmap(uint64_t address, uint64_t length)
{
	return ms_syscall3(__NR_munmap, (long)address, (long)length, 0);
}

/* Neither mapped over (alone, or inside a larger request) nor unmapped. */
static void expect_kernel_region(const char *what, uint64_t address, uint64_t length)
{
	long result = raw_mmap_fixed(address, length);
	if (result != -L_EINVAL)
		t_fail("mmap(MAP_FIXED) over %s: %ld, expected -EINVAL", what, result);
	result = raw_mmap_fixed(address - PAGE, length + 2 * PAGE);
	if (result != -L_EINVAL)
		t_fail("mmap(MAP_FIXED) around %s: %ld, expected -EINVAL", what, result);
	result = raw_munmap(address, length);
	if (result != -L_EINVAL)
		t_fail("munmap of %s: %ld, expected -EINVAL", what, result);
}

static void write_own_results_page(void *unused)
{
	(void)unused;
	long page = ms_syscall3(__NR_ms_acct_init, 0, 0, 0);
	if (page > 0)
		((volatile struct acct_page *)page)->results[0].subsystem_count = 5000;
	_exit(page > 0 ? 0 : 2);
}

/* Hole A: mmap(MAP_FIXED) over the results page made it writable; exit and
 * the next ms_acct_init then freed its frames twice. */
void hole_a_results_page_is_a_kernel_region(void)
{
	long page = ms_syscall3(__NR_ms_acct_init, 0, 0, 0);
	if (page < 0) {
		t_fail("ms_acct_init: %ld", page);
		return;
	}
	expect_kernel_region("the results pages", (uint64_t)page, ACCT_PAGES * PAGE);
	if (((volatile struct acct_page *)page)->magic != ACCT_PAGE_MAGIC)
		t_fail("the results page lost its magic");
	t_expect_signal("a write to the results page", write_own_results_page, NULL, SIGSEGV);
	if (ms_syscall3(__NR_ms_acct_init, 0, 0, 0) != page)
		t_fail("ms_acct_init again did not give the same page");
}

/* Hole E: a monitor that mapped over its ring with MAP_FIXED freed the
 * ring's pages while the kernel went on writing them. */
void hole_e_telemetry_ring_is_a_kernel_region(void)
{
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0) {
		t_fail("ms_ipc_create/ms_scope_attach: %ld", channel);
		return;
	}
	struct tel_map map;
	long result = ms_syscall3(__NR_ms_tel_map, channel, (long)&map, 0);
	if (result != 0 || map.cpus == 0) {
		t_fail("ms_tel_map: %ld", result);
		return;
	}
	expect_kernel_region("a ring's data", map.base + map.data_offset, map.size);
	expect_kernel_region("a ring's position", map.base + map.position_offset, PAGE);
	expect_kernel_region("a whole ring", map.base, map.stride);
	if (ms_syscall3(__NR_ms_tel_map, channel, (long)&map, 0) != 0)
		t_fail("ms_tel_map again failed");
	volatile const uint64_t *data = (const uint64_t *)(map.base + map.data_offset);
	(void)data[0]; /* still mapped: a fault would kill the test */
}
