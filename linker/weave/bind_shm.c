/*
 * The `shm` binding: the join point writes one record (struct scope_event)
 * into the calling CPU's ring of the monitor's telemetry channel and returns;
 * the monitor process drains the rings and runs the aspect's advice on each
 * record.  The producer never blocks: a full ring drops the record and
 * counts it as the aspect's drop.  A monitor that ended is noticed at the
 * next event (its endpoint closed) and the aspect is reported, which
 * unlinks it.  Events counted here are records written; the advice's own
 * counts come back from the monitor at collect and detach (FLUSH).
 */
#include "arch/x86_64/cpu.h"
#include "lib/errno.h"
#include "linker/weave/monitor_internal.h"
#include "mm/mm.h"
#include "time/time.h"

/* One TSC reading stamps the record and starts the time spent; interrupts
 * are off from before the ring is picked until its commit (the ring's one
 * producer).  Drops (full ring) leave the ring as it was. */
static inline __attribute__((always_inline)) void
shm_produce(struct monitor_advice *a, struct jp_context *context, bool after)
{
	struct aspect *aspect = a->aspect;
	if (!aspect_is_active(aspect, ASPECT_BINDING_SHM))
		return;
	bool gone = false;
	struct tel_channel *channel = monitor_event_channel(context, a->generation, &gone);
	if (!channel) {
		if (!gone)
			return; /* the monitor's own event */
		aspect_count_drop(aspect);
		aspect_report_failure(aspect, "shm: the monitor process ended");
		return;
	}
	uint64_t start = rdtsc(), flags = irq_save();
	struct tel_ring *ring = tel_channel_this_ring(channel);
	struct scope_event *event =
	    ring ? tel_ring_reserve(ring, SCOPE_RECORD_EVENT, start, sizeof *event) : NULL;
	if (!event) {
		irq_restore(flags);
		aspect_count_drop(aspect);
		return;
	}
	monitor_fill_event(event,
			   a->event_head | (after ? MONITOR_EVENT_FLAGS(SCOPE_EVENT_AFTER) : 0),
			   context, after);
	tel_ring_commit(ring);
	irq_restore(flags);
	aspect_count_event(aspect, rdtsc() - start);
}

static void shm_before(struct jp_context *context, void *cookie)
{
	shm_produce(cookie, context, false);
}

static void shm_after(struct jp_context *context, void *cookie)
{
	shm_produce(cookie, context, true);
}

static int shm_attach(struct aspect *aspect)
{
	static const struct monitor_advice_code code = {.before = shm_before, .after = shm_after};
	return monitor_weave_aspect(aspect, ASPECT_BINDING_SHM, &code);
}

/* Unwoven first (a grace period: no producer is left), then the monitor
 * runs what is still in the rings and hands the counts back. */
static void shm_detach(struct aspect *aspect)
{
	monitor_unweave_aspect(aspect, ASPECT_BINDING_SHM);
}

static void shm_collect(struct aspect *aspect)
{
	monitor_flush_aspect(aspect);
}

const struct binding_ops binding_shm_ops = {
    .binding = ASPECT_BINDING_SHM,
    .name = "shm",
    .attach = shm_attach,
    .detach = shm_detach,
    .collect = shm_collect,
};
