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
#include "linker/internal.h"
#include "scope/scope.h"
#include "telemetry/telemetry.h"

/* Makes sure a monitor runs and has aspect linked (once per aspect, counted:
 * shm and msg share it).  Thread context, control mutex held.  Returns the
 * aspect's id (> 0), or -ENOENT (no /bin/monitor), -ETIMEDOUT (it did not
 * attach or answer), -ENOSPC, or the monitor's link error. */
int monitor_load_aspect(struct aspect *aspect);
/* Runs the monitor's pending events of aspect and merges its counters into
 * aspect->counters.  Returns 0 or the error of the call (the monitor is gone:
 * what it had not reported is lost, and counted as drops). */
int monitor_flush_aspect(struct aspect *aspect);
/* Drops one reference taken by monitor_load_aspect; the last one flushes and
 * tells the monitor to forget the aspect. */
void monitor_unload_aspect(struct aspect *aspect);

/* For the join-point side (any context). */
struct ipc_endpoint *monitor_endpoint(void); /* NULL when none */
struct tel_channel *monitor_channel(void);   /* NULL before the first monitor */
bool monitor_is_gone(void);
/* True when the event comes from the monitor process itself (not sent). */
bool monitor_is_caller(const struct jp_context *context);
void monitor_fill_event(struct scope_event *event, uint32_t aspect_id, unsigned advice_index,
			const struct jp_context *context, bool after);

#endif
