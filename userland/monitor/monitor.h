/*
 * The monitor process's own declarations: linked aspects (link.c), the
 * aspect ABI in user space (abi.c) and the event loop (main.c).
 */
#ifndef USERLAND_MONITOR_MONITOR_H
#define USERLAND_MONITOR_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "linker/object/object.h"
#include "uapi/scope.h"

#define MONITOR_ASPECTS 32 /* ids 1..32, as the kernel numbers them */

struct monitor_aspect {
	uint32_t id; /* the kernel's number for it */
	bool linked;
	bool rings; /* its events come through the rings (LOAD words[1]) */
	struct linker_object object;
	struct linker_counters counters; /* since the last report */
	char error[160];
};

/* Indexed by id - 1 (link.c). */
extern struct monitor_aspect monitor_aspects[MONITOR_ASPECTS];

/* The aspect the kernel calls id, or NULL.  In line: every event looks its
 * aspect up, and a call costs more than the test. */
static inline struct monitor_aspect *monitor_aspect(uint32_t id)
{
	if (id - 1 >= MONITOR_ASPECTS || !monitor_aspects[id - 1].linked)
		return NULL;
	return &monitor_aspects[id - 1];
}
/* Fetches object id from the kernel and links it.  Returns 0 or a negative
 * error (the message in the aspect's error). */
int monitor_link(uint32_t id);
void monitor_unlink(uint32_t id);
/* True when a linked aspect's events come through the rings. */
bool monitor_rings_in_use(void);

/* What an advice's struct ms_ctx is in the monitor. */
struct ms_ctx {
	const struct scope_event *event;
	struct monitor_aspect *aspect;
	bool replied;
	int64_t reply;
};
/* Whose advice runs now, for the aspect ABI's calls (abi.c); NULL between
 * advice. */
extern struct monitor_aspect *monitor_running;
/* Runs call(arg) as aspect's init or exit (the ABI knows whose it is). */
void monitor_run_lifecycle(struct monitor_aspect *aspect, void (*call)(void *), void *arg);
/* Closes the latency trackers aspect opened (ms_lattrack_create). */
void monitor_lattrack_release(struct monitor_aspect *aspect);

/* Runs the advice the event names; returns the context it ran with.  In
 * line: it runs for every event, and a call costs about what it does. */
static inline void monitor_run_event(const struct scope_event *event, struct ms_ctx *ctx)
{
	struct monitor_aspect *a = monitor_aspect(event->aspect_id);
	*ctx = (struct ms_ctx){.event = event, .aspect = a};
	if (!a || event->advice_index >= a->object.advice_count)
		return;
	monitor_running = a;
	a->object.advice[event->advice_index].function(ctx);
	monitor_running = NULL;
}

#endif
