/*
 * libFuzzer target for the object linker: every input is validated and, when
 * it passes, laid out, resolved, relocated and its metadata read, in memory
 * the harness owns, with AddressSanitizer and UndefinedBehaviorSanitizer
 * watching.  A valid input must come out linked with its pointers inside its
 * regions; an invalid one must be refused with a message.  Seeds are the
 * build's real aspect objects (tests/fuzz/fuzz.sh).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linker/object/object.h"

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
static size_t regions_live;

static void *alloc_region(void *env, enum linker_region region, size_t size)
{
	void *p = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
	if (p) {
		memset(p, 0, size);
		regions_live++;
	}
	return p;
}

static void free_region(void *env, enum linker_region region, void *base, size_t size)
{
	regions_live--;
	free(base);
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
	for (size_t i = 0; i < sizeof abi_names / sizeof abi_names[0]; i++) {
		if (strcmp(abi_names[i], name) == 0) {
			*address = (uint64_t)(uintptr_t)abi_slots[i];
			return 0;
		}
	}
	return -ENOENT;
}

static const struct linker_env env = {alloc_region, free_region, alloc_scratch,
				      free_scratch, resolve,     NULL};

static void check_linked(const struct linker_object *o)
{
	for (unsigned i = 0; i < o->advice_count; i++)
		if (!linker_object_contains(o, LINKER_REGION_TEXT,
					    (uint64_t)(uintptr_t)o->advice[i].function, 1))
			abort();
	if (!o->name[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy (malloc aligns to 16), so any read past the input
	 * is caught. */
	uint8_t *image = malloc(size ? size : 1);
	memcpy(image, data, size);
	char error[160];
	struct linker_object object;
	int err = linker_validate_object(&object, image, size, error, sizeof error);
	if (!err) {
		err = linker_link_object(&object, &env);
		if (!err) {
			check_linked(&object);
			linker_release_object(&object, &env, false);
		}
	}
	if (err && (err >= 0 || !error[0]))
		abort(); /* refused without a message */
	if (regions_live)
		abort(); /* a failed link leaked a region */
	free(image);
	return 0;
}
