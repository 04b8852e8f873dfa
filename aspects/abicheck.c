/*
 * abicheck: the aspect ABI calls that reach the kernel from wherever the
 * advice runs (for the tests).  On each vfs.stat it emits one record and
 * reads the timer's tick count, counting each call that worked ("emitted",
 * "device_read").  Linked direct, shm or msg, the counts must be the same,
 * and the records land in the same "aspects" telemetry channel.
 */
#include <microscope/aspect.h>

MS_ASPECT("abicheck", "emits a record and reads a device counter per vfs.stat (for the tests)");

#define ABICHECK_RECORD 0x6162 /* "ab" */

static void check(struct ms_ctx *ctx)
{
	uint64_t pid = (uint64_t)ms_pid(ctx), ticks = 0;
	if (ms_emit(ABICHECK_RECORD, &pid, sizeof pid) == 0)
		ms_counter_add("emitted", 1);
	if (ms_device_counter("timer", "ticks", &ticks) == 0 && ticks > 0)
		ms_counter_add("device_read", 1);
}

MS_BEFORE("vfs.stat", check, 0);
