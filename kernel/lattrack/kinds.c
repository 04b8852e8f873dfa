/*
 * Trackers on join points, made by name:
 *   wakeup   sched.wakeup -> the sched.switch that puts the thread on a CPU
 *   ttfb     net.accept -> the socket's first net.send (a close first: id 1)
 *   syscall  sys.X before -> sys.X after, per thread; "syscall:NAME" tracks
 *            sys.NAME only; the out id is the join point's index
 *   offcpu   sched.switch away from a thread -> the switch back onto a CPU
 *   irq      irq.entry before -> after on this CPU (the handler); id: vector
 *   nic      nic.irq (the device asked) -> the nic.poll after it (frames
 *            handed to the stack; id 1 when it found none)
 *   block    block.submit -> block.complete of the request (a refused
 *            submit ends it at once, id 1)
 * Their advice only calls event_in/out, which never sleep, so it is safe where
 * those join points run (sched.switch holds a run-queue lock, irq.entry and
 * block.complete run in interrupts).  A slow event asks for a flight-recorder
 * snapshot when one runs, or calls the creator's callback.
 */
#include "lattrack/internal.h"

#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"

#define KIND_ADVICE 3 /* join points per kind, at most */
#define PATTERN_MAX 40

enum { OUT_NORMAL, OUT_NOT_WOKEN_OR_CLOSED, OUT_REFUSED_OR_EMPTY = 1 };

struct kind {
	const char *name;
	const char *patterns[KIND_ADVICE];
	jp_advice_fn before[KIND_ADVICE];
	jp_advice_fn after[KIND_ADVICE];
	bool (*where)(const struct joinpoint *jp); /* NULL: every match */
};

struct instance {
	struct lattrack *tracker;
	char pattern[PATTERN_MAX]; /* "sys.NAME" for "syscall:NAME" */
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

/* ---- syscall ---------------------------------------------------------------- */

static uint64_t thread_key(const struct jp_context *context)
{
	return (uint64_t)(uintptr_t)context->thread;
}

static void syscall_before(struct jp_context *context, void *cookie)
{
	uint64_t thread = thread_key(context);
	lattrack_event_in(cookie, &thread, sizeof thread, LATTRACK_IN_SHARED, NULL);
}

static void syscall_after(struct jp_context *context, void *cookie)
{
	uint64_t thread = thread_key(context);
	lattrack_event_out(cookie, &thread, sizeof thread, jp_index(context->joinpoint));
}

/* Calls that never return to their after advice. */
static bool returns(const struct joinpoint *jp)
{
	return strcmp(jp->name, "sys.exit") && strcmp(jp->name, "sys.exit_group") &&
	       strcmp(jp->name, "sys.execve");
}

/* ---- offcpu ----------------------------------------------------------------- */

static void offcpu_switch(struct jp_context *context, void *cookie)
{
	uint64_t prev = context->args[0], next = context->args[1];
	if (prev == next)
		return;
	lattrack_event_out(cookie, &next, sizeof next, OUT_NORMAL);
	lattrack_event_in(cookie, &prev, sizeof prev, LATTRACK_IN_UNIQUE, NULL);
}

/* ---- irq --------------------------------------------------------------------- */

static void irq_before(struct jp_context *context, void *cookie)
{
	uint64_t cpu = context->cpu;
	lattrack_event_in(cookie, &cpu, sizeof cpu, LATTRACK_IN_SHARED, NULL);
}

static void irq_after(struct jp_context *context, void *cookie)
{
	uint64_t cpu = context->cpu;
	lattrack_event_out(cookie, &cpu, sizeof cpu, (unsigned)context->args[0]);
}

/* ---- nic --------------------------------------------------------------------- */

static void nic_irq_before(struct jp_context *context, void *cookie)
{
	uint64_t nic = context->args[0];
	lattrack_event_in(cookie, &nic, sizeof nic, LATTRACK_IN_UNIQUE, NULL);
}

static void nic_poll_after(struct jp_context *context, void *cookie)
{
	uint64_t nic = context->args[0];
	unsigned delivered = (unsigned)context->ret;
	lattrack_event_out(cookie, &nic, sizeof nic, delivered ? OUT_NORMAL : OUT_REFUSED_OR_EMPTY);
}

/* ---- block ------------------------------------------------------------------- */

static void block_submit_before(struct jp_context *context, void *cookie)
{
	uint64_t request = context->args[0];
	if (request)
		lattrack_event_in(cookie, &request, sizeof request, LATTRACK_IN_UNIQUE, NULL);
}

/* A refused request never completes; an accepted one may have completed
 * already (then its key is out and this finds nothing). */
static void block_submit_after(struct jp_context *context, void *cookie)
{
	uint64_t request = context->args[0];
	if ((int)context->ret != 0 && request)
		lattrack_event_out(cookie, &request, sizeof request, OUT_REFUSED_OR_EMPTY);
}

static void block_complete_before(struct jp_context *context, void *cookie)
{
	uint64_t request = context->args[0];
	lattrack_event_out(cookie, &request, sizeof request, OUT_NORMAL);
}

static const struct kind kinds[] = {
	{"wakeup", {"sched.wakeup", "sched.switch"}, {wakeup_before, switch_before},
	 {wakeup_after, NULL}, NULL},
	{"ttfb", {"net.accept", "net.send", "net.close"}, {NULL, send_before, close_before},
	 {accept_after, NULL, NULL}, NULL},
	{"syscall", {"sys.*"}, {syscall_before}, {syscall_after}, returns},
	{"offcpu", {"sched.switch"}, {offcpu_switch}, {NULL}, NULL},
	{"irq", {"irq.entry"}, {irq_before}, {irq_after}, NULL},
	{"nic", {"nic.irq", "nic.poll"}, {nic_irq_before, NULL}, {NULL, nic_poll_after}, NULL},
	{"block", {"block.submit", "block.complete"}, {block_submit_before, block_complete_before},
	 {block_submit_after, NULL}, NULL},
};

static void on_slow(const struct lattrack_report *report, void *context)
{
	if (report->flag != LATTRACK_GC && lattrack_flight_running())
		lattrack_snapshot_request();
}

/* The kind a name gives ("syscall:read" is "syscall" on "sys.read"), and
 * the pattern that replaces its first, or "". */
static const struct kind *kind_named(const char *name, char pattern[PATTERN_MAX])
{
	const char *colon = strchr(name, ':');
	size_t length = colon ? (size_t)(colon - name) : strlen(name);
	pattern[0] = '\0';
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (strlen(kinds[i].name) != length || strncmp(kinds[i].name, name, length))
			continue;
		if (!colon)
			return &kinds[i];
		if (strcmp(kinds[i].name, "syscall") || !colon[1] ||
		    strlen(colon + 1) + 5 > PATTERN_MAX)
			return NULL;
		strlcpy(pattern, "sys.", PATTERN_MAX);
		strlcpy(pattern + 4, colon + 1, PATTERN_MAX - 4);
		return &kinds[i];
	}
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
		const char *pattern = i == 0 && instance->pattern[0] ? instance->pattern
								     : kind->patterns[i];
		instance->handles[i] = jp_attach_where(pattern, kind->where, &instance->advice[i]);
		if (instance->handles[i] < 0)
			return instance->handles[i];
	}
	return 0;
}

static int configure(struct lattrack *tracker, const struct kind *kind, uint64_t threshold_ns,
		     uint64_t timeout_ns, lattrack_callback callback, void *context)
{
	tracker->kind = kind->name;
	lattrack_set_threshold_ns(tracker, threshold_ns);
	lattrack_set_timeout_ns(tracker, timeout_ns);
	lattrack_set_callback(tracker, callback ? callback : on_slow, context);
	if (timeout_ns) /* what never comes out is collected, reported GC */
		lattrack_set_gc_age_ns(tracker, 10 * timeout_ns);
	return lattrack_enable(tracker);
}

int lattrack_attach_kind_callback(const char *name, const char *kind_name,
				  uint64_t threshold_ns, uint64_t timeout_ns,
				  lattrack_callback callback, void *context)
{
	char pattern[PATTERN_MAX];
	const struct kind *kind = kind_name ? kind_named(kind_name, pattern) : NULL;
	if (!kind)
		return -ENOENT;
	int slot = free_instance();
	if (slot < 0)
		return -ENOSPC;
	struct lattrack *tracker;
	int error = lattrack_create(name, &tracker);
	if (error)
		return error;
	error = configure(tracker, kind, threshold_ns, timeout_ns, callback, context);
	if (error)
		goto out_destroy;
	instances[slot].tracker = tracker;
	strlcpy(instances[slot].pattern, pattern, PATTERN_MAX);
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

int lattrack_attach_kind(const char *name, const char *kind_name, uint64_t threshold_ns,
			 uint64_t timeout_ns)
{
	return lattrack_attach_kind_callback(name, kind_name, threshold_ns, timeout_ns, NULL, NULL);
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
