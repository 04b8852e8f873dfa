/*
 * statlat: a latency tracker fed by an aspect.  Its init makes the tracker
 * "statlat" (threshold 0: every call is reported); each vfs.stat goes in
 * before the call and out after it, keyed by the thread, with the call's
 * result as the out id.  Linked direct, shm or msg it feeds the same kernel
 * tracker, whose reports a reader takes from ms_lattrack_open("statlat").
 * It counts the ins and outs the ABI accepted ("in", "out").
 */
#include <microscope/aspect.h>

MS_ASPECT("statlat", "times each vfs.stat with a latency tracker (for the tests)");

static int tracker = -1;

static int make_tracker(void)
{
	tracker = ms_lattrack_create("statlat", 0, 0);
	return tracker < 0 ? tracker : 0;
}

static void end_tracker(void)
{
	ms_lattrack_destroy(tracker);
}

static void stat_in(struct ms_ctx *ctx)
{
	uint64_t thread = (uint64_t)ms_tid(ctx);
	if (ms_lattrack_event_in(tracker, &thread, sizeof thread, 0) == 0)
		ms_counter_add("in", 1);
}

static void stat_out(struct ms_ctx *ctx)
{
	uint64_t thread = (uint64_t)ms_tid(ctx);
	if (ms_lattrack_event_out(tracker, &thread, sizeof thread, (unsigned)ms_retval(ctx)) == 0)
		ms_counter_add("out", 1);
}

MS_INIT(make_tracker);
MS_EXIT(end_tracker);
MS_BEFORE("vfs.stat", stat_in, 0);
MS_AFTER("vfs.stat", stat_out, 0);
