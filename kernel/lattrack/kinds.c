/*
 * Trackers on join points, made by name: "wakeup" times a thread from
 * sched.wakeup to the sched.switch that puts it on a CPU (key: the thread);
 * "ttfb" times an accepted connection from net.accept to its first net.send
 * (key: the socket; a close before any send ends it with out id 1).  Their
 * advice only calls event_in/out, which never sleep, so it is safe where
 * those join points run (sched.switch holds a run-queue lock).  A slow
 * event asks for a flight-recorder snapshot when one runs.
 */
#include "lattrack/internal.h"

#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"

#define KIND_ADVICE 3 /* join points per kind, at most */

enum { OUT_NORMAL, OUT_NOT_WOKEN_OR_CLOSED };

struct kind {
	const char *name;
	const char *patterns[KIND_ADVICE];
	jp_advice_fn before[KIND_ADVICE];
	jp_advice_fn after[KIND_ADVICE];
};

struct instance {
	struct lattrack *tracker;
	struct jp_advice advice[KIND_ADVICE];
	int handles[KIND_ADVICE];
};

static struct instance instances[LATTRACK_TRACKERS_MAX];

/* ---- wakeup ---------------------------------------------------------------- */

static void wakeup_before(struct jp_context *context, void *cookie)
{
	uint64_t thread = context->args[0];
	lattrack_event_in(cookie, &thread, sizeof thread, LATTRACK_IN_UNIQUE, NULL);
}

/* A thread that was not blocked is not woken: its event ends now, short. */
static void wakeup_after(struct jp_context *context, void *cookie)
{
	uint64_t thread = context->args[0];
	if (!(context->ret & 0xff))
		lattrack_event_out(cookie, &thread, sizeof thread, OUT_NOT_WOKEN_OR_CLOSED);
}

static void switch_before(struct jp_context *context, void *cookie)
{
	uint64_t next = context->args[1];
	lattrack_event_out(cookie, &next, sizeof next, OUT_NORMAL);
}

/* ---- ttfb ------------------------------------------------------------------ */

static void accept_after(struct jp_context *context, void *cookie)
{
	uint64_t *out = (uint64_t *)context->args[1];
	if ((int)context->ret != 0 || !out)
		return;
	uint64_t socket = *out;
	lattrack_event_in(cookie, &socket, sizeof socket, LATTRACK_IN_UNIQUE, NULL);
}

static void send_before(struct jp_context *context, void *cookie)
{
	uint64_t socket = context->args[0];
	lattrack_event_out(cookie, &socket, sizeof socket, OUT_NORMAL);
}

static void close_before(struct jp_context *context, void *cookie)
{
	uint64_t socket = context->args[0];
	lattrack_event_out(cookie, &socket, sizeof socket, OUT_NOT_WOKEN_OR_CLOSED);
}

static const struct kind kinds[] = {
	{"wakeup", {"sched.wakeup", "sched.switch"}, {wakeup_before, switch_before},
	 {wakeup_after, NULL}},
	{"ttfb", {"net.accept", "net.send", "net.close"}, {NULL, send_before, close_before},
	 {accept_after, NULL, NULL}},
};

static void on_slow(const struct lattrack_report *report, void *context)
{
	if (report->flag != LATTRACK_GC && lattrack_flight_running())
		lattrack_snapshot_request();
}

static const struct kind *kind_named(const char *name)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (!strcmp(kinds[i].name, name))
			return &kinds[i];
	return NULL;
}

static int free_instance(void)
{
	for (int i = 0; i < LATTRACK_TRACKERS_MAX; i++)
		if (!instances[i].tracker)
			return i;
	return -1;
}

static void detach_instance(int slot)
{
	struct instance *instance = &instances[slot];
	for (int i = 0; i < KIND_ADVICE; i++)
		if (instance->handles[i] > 0)
			jp_detach(instance->handles[i]);
	memset(instance, 0, sizeof *instance);
}

static int attach_advice(int slot, const struct kind *kind)
{
	struct instance *instance = &instances[slot];
	for (int i = 0; i < KIND_ADVICE && kind->patterns[i]; i++) {
		instance->advice[i] = (struct jp_advice){.name = "lattrack",
							 .before = kind->before[i],
							 .after = kind->after[i],
							 .cookie = instance->tracker};
		instance->handles[i] = jp_attach(kind->patterns[i], &instance->advice[i]);
		if (instance->handles[i] < 0)
			return instance->handles[i];
	}
	return 0;
}

static int configure(struct lattrack *tracker, const struct kind *kind, uint64_t threshold_ns,
		     uint64_t timeout_ns)
{
	tracker->kind = kind->name;
	lattrack_set_threshold_ns(tracker, threshold_ns);
	lattrack_set_timeout_ns(tracker, timeout_ns);
	lattrack_set_callback(tracker, on_slow, NULL);
	if (timeout_ns) /* what never comes out is collected, reported GC */
		lattrack_set_gc_age_ns(tracker, 10 * timeout_ns);
	return lattrack_enable(tracker);
}

int lattrack_attach_kind(const char *name, const char *kind_name, uint64_t threshold_ns,
			 uint64_t timeout_ns)
{
	const struct kind *kind = kind_name ? kind_named(kind_name) : NULL;
	if (!kind)
		return -ENOENT;
	int slot = free_instance();
	if (slot < 0)
		return -ENOSPC;
	struct lattrack *tracker;
	int error = lattrack_create(name, &tracker);
	if (error)
		return error;
	error = configure(tracker, kind, threshold_ns, timeout_ns);
	if (error)
		goto out_destroy;
	instances[slot].tracker = tracker;
	error = attach_advice(slot, kind);
	if (error)
		goto out_detach;
	return 0;
out_detach:
	detach_instance(slot);
out_destroy:
	lattrack_destroy(tracker);
	return error;
}

int lattrack_detach(const char *name)
{
	struct lattrack *tracker = lattrack_get(name);
	if (!tracker)
		return -ENOENT;
	for (int i = 0; i < LATTRACK_TRACKERS_MAX; i++)
		if (instances[i].tracker == tracker)
			detach_instance(i);
	lattrack_destroy(tracker);
	lattrack_put(tracker);
	return 0;
}
