/*
 * The latency-tracker part of the aspect ABI as the kernel implements it
 * (direct binding, and every aspect's kernel-side MS_INIT/MS_EXIT).  A handle
 * is a slot of one table: the aspect that made it and an owned tracker
 * (kernel/lattrack's lattrack_open_owned, as root with
 * LATTRACK_CREATE_OR_OPEN, so the aspect's monitor image opens the same
 * tracker through ms_lattrack_create).  Slots are filled only in MS_INIT
 * (thread context, no advice of the aspect runs yet) and emptied only when
 * the aspect is unloaded (linker_lattrack_release, after its last advice and
 * its exit), so advice reads them without a lock; a handle of another
 * aspect is refused.  Keys come from aspect memory and are read without
 * risking a fault.
 */
#include "arch/x86_64/traps.h"
#include "lattrack/lattrack.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/internal.h"
#include "uapi/lattrack.h"

#define ABI_KEY_MAX 8

static struct {
	struct aspect *aspect;
	struct lattrack *tracker;
	bool closed; /* ms_lattrack_destroy: the handle no longer works */
} handles[LATTRACK_TRACKERS_MAX];

/* The aspect running on this CPU if it runs its init or exit, else NULL. */
static struct aspect *aspect_in_init(void)
{
	struct linker_run *run = linker_current_run();
	return run && run->aspect && !run->frame.context ? run->aspect : NULL;
}

static struct lattrack *tracker_of(int handle)
{
	struct linker_run *run = linker_current_run();
	if (handle < 0 || handle >= LATTRACK_TRACKERS_MAX || !run || !run->aspect ||
	    handles[handle].aspect != run->aspect || handles[handle].closed)
		return NULL;
	return handles[handle].tracker;
}

static long read_name(const char *address, char name[LATTRACK_UAPI_NAME_MAX])
{
	uint64_t at = (uint64_t)address;
	for (size_t n = 0; n < LATTRACK_UAPI_NAME_MAX; n++) {
		uint64_t word;
		if (!address || trap_read_kernel_word((at + n) & ~7ULL, &word))
			return -EFAULT;
		name[n] = (char)(word >> (8 * ((at + n) & 7)));
		if (!name[n])
			return (long)n;
	}
	return -EINVAL; /* too long */
}

static int read_key(const void *address, unsigned length, uint8_t key[ABI_KEY_MAX])
{
	uint64_t at = (uint64_t)address;
	if (!address || length == 0 || length > ABI_KEY_MAX)
		return -EINVAL;
	for (unsigned n = 0; n < length; n++) {
		uint64_t word;
		if (trap_read_kernel_word((at + n) & ~7ULL, &word))
			return -EINVAL;
		key[n] = (uint8_t)(word >> (8 * ((at + n) & 7)));
	}
	return 0;
}

static int free_handle(void)
{
	for (int i = 0; i < LATTRACK_TRACKERS_MAX; i++)
		if (!handles[i].tracker)
			return i;
	return -ENOSPC;
}

int ms_lattrack_create(const char *name, uint64_t threshold_ns, uint64_t timeout_ns)
{
	struct aspect *aspect = aspect_in_init();
	struct lattrack_config config = {.threshold_ns = threshold_ns,
					 .timeout_ns = timeout_ns,
					 .flags = LATTRACK_CREATE_OR_OPEN};
	if (!aspect || read_name(name, config.name) <= 0)
		return -EINVAL;
	int handle = free_handle();
	if (handle < 0)
		return handle;
	struct lattrack *tracker;
	int error = lattrack_open_owned(&config, 0, true, &tracker);
	if (error)
		return error;
	handles[handle].aspect = aspect;
	handles[handle].closed = false;
	__atomic_store_n(&handles[handle].tracker, tracker, __ATOMIC_RELEASE);
	return handle;
}

int ms_lattrack_event_in(int handle, const void *key, unsigned length, unsigned unique)
{
	uint8_t copy[ABI_KEY_MAX];
	struct lattrack *tracker = tracker_of(handle);
	if (!tracker || read_key(key, length, copy))
		return -EINVAL;
	return lattrack_event_in(tracker, copy, length,
				 unique ? LATTRACK_IN_UNIQUE : LATTRACK_IN_SHARED, NULL);
}

int ms_lattrack_event_out(int handle, const void *key, unsigned length, unsigned id)
{
	uint8_t copy[ABI_KEY_MAX];
	struct lattrack *tracker = tracker_of(handle);
	if (!tracker || read_key(key, length, copy))
		return -EINVAL;
	return lattrack_event_out(tracker, copy, length, id);
}

int ms_lattrack_destroy(int handle)
{
	if (!tracker_of(handle))
		return -EINVAL;
	handles[handle].closed = true; /* released at unload: exit cannot wait here */
	return 0;
}

void linker_lattrack_release(struct aspect *aspect)
{
	for (int i = 0; i < LATTRACK_TRACKERS_MAX; i++) {
		if (handles[i].aspect != aspect || !handles[i].tracker)
			continue;
		struct lattrack *tracker = handles[i].tracker;
		memset(&handles[i], 0, sizeof handles[i]);
		lattrack_release_owned(tracker);
	}
}
