/*
 * The monitor process as the `shm` and `msg` bindings see it (bind_monitor.c):
 * one session at a time, started on demand, reached through its IPC endpoint,
 * fed through one telemetry channel.  Private to linker/.
 */
#ifndef LINKER_MONITOR_INTERNAL_H
#define LINKER_MONITOR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "ipc/ipc.h"
#include "joinpoint/joinpoint.h"
#include "linker/weave/event_fill.h"
#include "linker/weave/internal.h"
#include "telemetry/telemetry.h"
#include "uapi/scope.h"

/* Makes sure a monitor runs and has aspect linked (once per aspect, counted:
 * shm and msg share it); rings: the aspect's events come through the rings
 * (shm), which the monitor then reads (a monitor whose aspects take only
 * messages waits for messages alone).  Thread context, control mutex held.
 * Returns the aspect's id (> 0), or -ENOENT (no /bin/monitor), -ETIMEDOUT
 * (it did not attach or answer), -ENOSPC, or the monitor's link error. */
int monitor_load_aspect(struct aspect *aspect, bool rings);
/* Runs the monitor's pending events of aspect and merges its counters into
 * aspect->counters.  Returns 0 or the error of the call (the monitor is gone:
 * what it had not reported is lost, and counted as drops). */
int monitor_flush_aspect(struct aspect *aspect);
/* Which monitor an id was given by: a new monitor gives ids afresh, so an
 * id of an earlier one names nothing (or another aspect) in it.  Control
 * mutex held; id from monitor_load_aspect. */
uint64_t monitor_id_generation(int id);
/* Drops one reference monitor_load_aspect gave id under generation; the last
 * one flushes and tells the monitor to forget the aspect.  Nothing when that
 * monitor is gone (its successor never knew the id). */
void monitor_unload_aspect(struct aspect *aspect, int id, uint64_t generation);

/* For the join-point side (any context). */
struct ipc_endpoint *monitor_endpoint(void); /* NULL when none */
/* The endpoint for advice woven under the monitor of generation; NULL when
 * that monitor is gone, even when another has attached since. */
struct ipc_endpoint *monitor_endpoint_of(uint64_t generation);
/* monitor_endpoint_of, referenced (ipc_endpoint_put it), in one call. */
struct ipc_endpoint *monitor_endpoint_get_of(uint64_t generation);
struct tel_channel *monitor_channel(void); /* NULL before the first monitor */
bool monitor_is_gone(void);
/* Where an shm event of context, woven under the monitor of generation,
 * goes: that monitor's channel; NULL for the monitor's own events (not sent),
 * and NULL with *gone set when it ended (another may have attached since). */
struct tel_channel *monitor_event_channel(const struct jp_context *context, uint64_t generation,
					  bool *gone);
/* True when the event comes from the monitor process itself (not sent). */
bool monitor_is_caller(const struct jp_context *context);
/* One woven advice of an aspect bound to the monitor (shm or msg): the
 * join-point advice and what its event names. */
struct monitor_advice {
	struct jp_advice jp;
	struct aspect *aspect;
	uint64_t event_head; /* monitor_event_head(its aspect's id, its index, 0) */
	unsigned in_flight;  /* synchronous msg events sleeping outside their section */
	uint64_t generation; /* of the monitor that gave aspect_id */
};

/* Loads aspect into the monitor and weaves each of its advice with before or
 * after (as the advice's kind says) under binding; the cookie is the
 * struct monitor_advice.  Returns 0, or an error with nothing left behind. */
int monitor_weave_aspect(struct aspect *aspect, enum aspect_binding binding,
			 void (*before)(struct jp_context *, void *),
			 void (*after)(struct jp_context *, void *));
/* Unweaves binding (a grace period, then the wait for synchronous msg events
 * still sleeping: no event of it is left in flight), then the monitor runs
 * what it still holds and hands the counts back. */
void monitor_unweave_aspect(struct aspect *aspect, enum aspect_binding binding);

#endif
