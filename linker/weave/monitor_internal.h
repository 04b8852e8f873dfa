/*
 * The monitor process as the `shm` and `msg` bindings see it (bind_monitor.c):
 * one session at a time, started on demand, reached through its IPC endpoint,
 * fed through one telemetry channel.  Private to linker/.
 */
#ifndef LINKER_MONITOR_INTERNAL_H
#define LINKER_MONITOR_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/spinlock.h"
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

/* An id the monitor knows an aspect by.  aspect, refs and generation change
 * under the control mutex and session.lock (the monitor's system calls look
 * them up under the lock alone); report under report_lock. */
struct aspect_id {
	struct aspect *aspect;
	int refs;
	uint64_t generation;
	bool rings;                     /* the monitor was told its events come through the rings */
	struct linker_counters *report; /* what ms_scope_report handed in, not merged yet */
};

/* The one monitor session (bind_monitor.c).  Its fields change under `lock`;
 * the join-point side reads endpoint, generation, process and pid without
 * it, in line below. */
struct monitor_session {
	struct spinlock lock;
	struct ipc_endpoint *endpoint; /* the attached monitor's, or a dead one's */
	struct tel_channel *channel;
	int pid;
	/* the attached monitor's (with pid: which one), or the last one's, in
	 * which the inbox and rings stay mapped while it runs */
	struct process *process;
	uint32_t execs; /* the programs process had exec'd when it attached */
	uint64_t generation;
	struct aspect_id ids[ASPECT_MAX];
};
extern struct monitor_session monitor_session;

/* For the join-point side (any context). */
static inline struct ipc_endpoint *monitor_endpoint(void) /* NULL when none */
{
	return __atomic_load_n(&monitor_session.endpoint, __ATOMIC_ACQUIRE);
}
/* The endpoint for advice woven under the monitor of generation; NULL when
 * that monitor is gone, even when another has attached since.  The endpoint
 * first: attach stores the generation before it (release), so a new
 * monitor's endpoint comes with its new generation. */
static inline struct ipc_endpoint *monitor_endpoint_of(uint64_t generation)
{
	struct ipc_endpoint *e = monitor_endpoint();
	return __atomic_load_n(&monitor_session.generation, __ATOMIC_RELAXED) == generation ? e
											    : NULL;
}
/* monitor_endpoint_of, referenced (ipc_endpoint_put it). */
static inline struct ipc_endpoint *monitor_endpoint_get_of(uint64_t generation)
{
	struct ipc_endpoint *e = monitor_endpoint_of(generation);
	return e ? ipc_endpoint_get(e) : NULL;
}
struct tel_channel *monitor_channel(void); /* NULL before the first monitor */
bool monitor_is_gone(void);
/* Where an shm event of context, woven under the monitor of generation,
 * goes: that monitor's channel; NULL for the monitor's own events (not sent),
 * and NULL with *gone set when it ended (another may have attached since). */
struct tel_channel *monitor_event_channel(const struct jp_context *context, uint64_t generation,
					  bool *gone);
/* True when p (NULL: the kernel) is the monitor process.  The monitor's own
 * system calls reach join points too (its endpoint is a descriptor: vfs.*);
 * running its advice for them would feed it its own work, so its events
 * are not sent.  The process pointer answers for every other process at
 * once; its pid confirms a match (a process that reuses a dead monitor's
 * memory has another pid).  In line: every event asks. */
static inline __attribute__((always_inline)) bool monitor_is_process(const struct process *p)
{
	return p && p == __atomic_load_n(&monitor_session.process, __ATOMIC_RELAXED) &&
	       proc_pid(p) == __atomic_load_n(&monitor_session.pid, __ATOMIC_RELAXED);
}
/* True when the event comes from the monitor process itself (not sent). */
static inline __attribute__((always_inline)) bool
monitor_is_caller(const struct jp_context *context)
{
	return monitor_is_process(monitor_context_process(context));
}
/* One woven advice of an aspect bound to the monitor (shm or msg): the
 * join-point advice and what its event names. */
struct monitor_advice {
	struct jp_advice jp;
	struct aspect *aspect;
	uint64_t event_head; /* monitor_event_head(its aspect's id, its index, 0) */
	uint64_t call_head;  /* event_head with SCOPE_EVENT_CALL: a synchronous msg event's */
	uint64_t generation; /* of the monitor that gave aspect_id */
};
/* True while a synchronous msg event of a sleeps outside its section
 * (bind_msg.c). */
bool msg_advice_calling(const struct monitor_advice *a);

/* A binding's code for the advice it weaves: before and after, and
 * optionally the whole call of a join point that may sleep on which a
 * before advice is alone (jp_advice.around; NULL: none). */
struct monitor_advice_code {
	void (*before)(struct jp_context *, void *);
	void (*after)(struct jp_context *, void *);
	uint64_t (*around_before)(const struct joinpoint *jp, uint64_t *args,
				  const struct jp_fast_list *list);
};
/* Loads aspect into the monitor and weaves each of its advice with code's
 * before or after (as the advice's kind says) under binding; the cookie is
 * the struct monitor_advice.  Returns 0, or an error with nothing left
 * behind. */
int monitor_weave_aspect(struct aspect *aspect, enum aspect_binding binding,
			 const struct monitor_advice_code *code);
/* Unweaves binding (a grace period, then the wait for synchronous msg events
 * still sleeping: no event of it is left in flight), then the monitor runs
 * what it still holds and hands the counts back. */
void monitor_unweave_aspect(struct aspect *aspect, enum aspect_binding binding);

#endif
