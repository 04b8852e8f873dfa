/*
 * latency: a log2 histogram of the time spent in each VFS join point, in
 * nanoseconds, one histogram per join point (named after it, with the unit
 * suffix _ns that scopectl shows).  The after advice asks for timestamps, so
 * the join point takes them on entry and exit.
 */
#include <microscope/aspect.h>

MS_ASPECT("latency", "log2 latency histogram per vfs join point");

/* name + "_ns" into out[MS_NAME_MAX], cut to fit. */
static void with_unit(const char *name, char *out)
{
	static const char suffix[] = "_ns";
	unsigned n = 0;
	while (name[n] && n < MS_NAME_MAX - sizeof suffix)
		out[n] = name[n], n++;
	for (unsigned i = 0; i < sizeof suffix; i++)
		out[n + i] = suffix[i];
}

static void record_latency(struct ms_ctx *ctx)
{
	uint64_t entry = ms_entry_ns(ctx), exit = ms_exit_ns(ctx);
	char name[MS_NAME_MAX];
	if (entry && exit >= entry) {
		with_unit(ms_joinpoint_name(ctx), name);
		ms_hist_record(name, exit - entry);
	} else
		ms_counter_add("untimed", 1);
}

MS_ADVICE(MS_ADVICE_AFTER, "vfs.*", record_latency, 0, MS_WANT_TIMESTAMPS);
