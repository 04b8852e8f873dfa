/*
 * Linking an aspect in the monitor: the same object file the kernel linked,
 * fetched with ms_scope_image, linked by the kernel's own portable object
 * linker (linker/validate.c, layout.c, symbols.c, relocate.c, metadata.c,
 * built into this program) into anonymous executable mappings, with
 * undefined symbols resolved against this program's aspect ABI (abi.c).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <microscope/syscall.h>

#include "monitor.h"

struct monitor_aspect monitor_aspects[MONITOR_ASPECTS];

static void *alloc_region(void *env, enum linker_region region, size_t size)
{
	(void)env;
	int protection = PROT_READ | PROT_WRITE | (region == LINKER_REGION_TEXT ? PROT_EXEC : 0);
	void *p = mmap(NULL, size, protection, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void free_region(void *env, enum linker_region region, void *base, size_t size)
{
	(void)env;
	(void)region;
	munmap(base, size);
}

static void *alloc_scratch(void *env, size_t size)
{
	(void)env;
	return calloc(1, size);
}

static void free_scratch(void *env, void *pointer)
{
	(void)env;
	free(pointer);
}

int monitor_abi_resolve(void *env, const char *name, uint64_t *address);

static const struct linker_env user_env = {
    .alloc_region = alloc_region,
    .free_region = free_region,
    .alloc = alloc_scratch,
    .free = free_scratch,
    .resolve = monitor_abi_resolve,
};

/* The object's bytes, in a buffer that outlives the link (metadata points
 * into the regions, not here, but validate's view does). */
static uint8_t *fetch_image(uint32_t id, size_t *size)
{
	long n = ms_syscall3(__NR_ms_scope_image, id, 0, 0);
	if (n <= 0)
		return NULL;
	uint8_t *image = malloc((size_t)n);
	if (image && ms_syscall3(__NR_ms_scope_image, id, (long)image, n) != n) {
		free(image);
		return NULL;
	}
	*size = (size_t)n;
	return image;
}

static void call_init(void *arg)
{
	((struct monitor_aspect *)arg)->object.init();
}

static void call_exit(void *arg)
{
	((struct monitor_aspect *)arg)->object.exit();
}

int monitor_link(uint32_t id)
{
	if (id == 0 || id > MONITOR_ASPECTS)
		return -22;
	struct monitor_aspect *a = &monitor_aspects[id - 1];
	if (a->linked)
		return 0;
	memset(a, 0, sizeof *a);
	a->id = id;
	size_t size;
	uint8_t *image = fetch_image(id, &size);
	if (!image)
		return -2;
	int error = linker_validate_object(&a->object, image, size, a->error, sizeof a->error);
	if (!error)
		error = linker_link_object(&a->object, &user_env);
	if (error) {
		free(image);
		return error;
	}
	if (a->object.init)
		monitor_run_lifecycle(a, call_init, a);
	a->linked = true;
	return 0;
}

bool monitor_rings_in_use(void)
{
	for (unsigned i = 0; i < MONITOR_ASPECTS; i++)
		if (monitor_aspects[i].linked && monitor_aspects[i].rings)
			return true;
	return false;
}

void monitor_unlink(uint32_t id)
{
	struct monitor_aspect *a = monitor_aspect(id);
	if (!a)
		return;
	if (a->object.exit)
		monitor_run_lifecycle(a, call_exit, a);
	monitor_lattrack_release(a);
	linker_release_object(&a->object, &user_env, false);
	free((void *)a->object.image);
	a->linked = false;
}
