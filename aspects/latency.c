/*
 * latency: a log2 histogram of the time spent in each VFS join point, in
 * nanoseconds, one histogram per join point (named after it).  The after
 * advice asks for timestamps, so the join point takes them on entry and exit.
 */
#include <microscope/aspect.h>

MS_ASPECT("latency", "log2 latency histogram per vfs join point");

static void record_latency(struct ms_ctx *ctx)
{
	uint64_t entry = ms_entry_ns(ctx), exit = ms_exit_ns(ctx);
	if (entry && exit >= entry)
		ms_hist_record(ms_joinpoint_name(ctx), exit - entry);
	else
		ms_counter_add("untimed", 1);
}

MS_ADVICE(MS_ADVICE_AFTER, "vfs.*", record_latency, 0, MS_WANT_TIMESTAMPS);
