/* See linker_shim.h. */
#include "linker_shim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ARENA_SIZE (16u << 20)
static uint8_t arena[ARENA_SIZE] __attribute__((aligned(4096)));
static size_t arena_used, arena_live;

static const char *const abi_names[] = {
    "ms_argc",
    "ms_arg",
    "ms_retval",
    "ms_entry_ns",
    "ms_exit_ns",
    "ms_cpu",
    "ms_pid",
    "ms_tid",
    "ms_program_name",
    "ms_joinpoint_name",
    "ms_activity",
    "ms_now_ns",
    "ms_counter_add",
    "ms_hist_record",
    "ms_emit",
    "ms_device_counter",
    "ms_reply",
    "ms_log",
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "ms_lattrack_create",
    "ms_lattrack_event_in",
    "ms_lattrack_event_out",
    "ms_lattrack_destroy",
};
static uint8_t abi_slots[sizeof abi_names / sizeof abi_names[0]][16];

uint64_t linker_shim_abi_address(const char *name)
{
	for (size_t i = 0; i < sizeof abi_names / sizeof abi_names[0]; i++)
		if (strcmp(abi_names[i], name) == 0)
			return (uint64_t)(uintptr_t)abi_slots[i];
	return 0;
}

static void *alloc_region(void *env, enum linker_region region, size_t size)
{
	size_t rounded = (size + 4095) & ~(size_t)4095;
	if (rounded > ARENA_SIZE - arena_used)
		return NULL;
	uint8_t *at = arena + arena_used;
	memset(at, 0, rounded);
	arena_used += rounded;
	arena_live += rounded;
	return at;
}

static void free_region(void *env, enum linker_region region, void *base, size_t size)
{
	arena_live -= (size + 4095) & ~(size_t)4095;
}

static void *alloc_scratch(void *env, size_t size)
{
	return calloc(1, size ? size : 1);
}

static void free_scratch(void *env, void *pointer)
{
	free(pointer);
}

static int resolve(void *env, const char *name, uint64_t *address)
{
	uint64_t found = linker_shim_abi_address(name);
	if (!found)
		return -ENOENT;
	*address = found;
	return 0;
}

const struct linker_env linker_shim_env = {alloc_region, free_region, alloc_scratch,
					   free_scratch, resolve,     NULL};

void linker_shim_reset(void)
{
	arena_used = arena_live = 0;
}

size_t linker_shim_regions_in_use(void)
{
	return arena_live;
}

uint8_t *linker_shim_build_aspect(const char *name, const char *extra_flags, size_t *size)
{
	char path[] = "/tmp/linker-test-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return NULL;
	close(fd);
	char command[1024];
	snprintf(command, sizeof command,
		 "gcc -c -O2 -std=gnu11 -ffreestanding -fno-pic -mcmodel=large -mno-red-zone "
		 "-fno-stack-protector -mgeneral-regs-only -fno-asynchronous-unwind-tables "
		 "-fno-common -Iaspects/include %s aspects/%s.c -o %s",
		 extra_flags, name, path);
	uint8_t *image = NULL;
	FILE *f = NULL;
	if (system(command) != 0 || !(f = fopen(path, "rb")))
		goto out;
	fseek(f, 0, SEEK_END);
	long length = ftell(f);
	fseek(f, 0, SEEK_SET);
	image = aligned_alloc(8, ((size_t)length + 7) & ~(size_t)7);
	if (image && fread(image, 1, (size_t)length, f) != (size_t)length) {
		free(image);
		image = NULL;
	}
	*size = (size_t)length;
	fclose(f);
out:
	unlink(path);
	return image;
}
