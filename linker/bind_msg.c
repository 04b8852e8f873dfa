/*
 * The `msg` binding: the join point sends the event (struct scope_event) to
 * the monitor through kernel IPC.  One-way (the default) queues it and goes
 * on; a full queue drops and counts.  Synchronous (SCOPE_SET_MSG_MODE) waits
 * for the monitor's reply until a deadline: advice may not sleep, so the
 * join point spins, which is answered only by a monitor running on another
 * CPU (reserve one with monitor_cpus=).  A missed deadline or a closed
 * endpoint (the monitor ended) reports the aspect, which unlinks it; the
 * join point completes either way.
 *
 * The reply steers the join point's owner: the value the advice gave
 * ms_reply is kept per CPU with the join point it answered, and the owner
 * reads it with scope_msg_reply() right after the call.
 */
#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/monitor_internal.h"
#include "mm/mm.h"
#include "time/time.h"

#define MSG_DEFAULT_DEADLINE_NS (10 * NSEC_PER_MSEC)

static bool synchronous;
static uint64_t deadline_ns = MSG_DEFAULT_DEADLINE_NS;

/* The last reply on each CPU. */
static struct {
	const struct joinpoint *joinpoint;
	int64_t value;
} replies[MAX_CPUS];

void scope_set_msg_mode(int sync, uint64_t deadline)
{
	__atomic_store_n(&deadline_ns, deadline ? deadline : MSG_DEFAULT_DEADLINE_NS,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&synchronous, sync != 0, __ATOMIC_RELEASE);
}

int scope_msg_reply(const struct joinpoint *joinpoint, int64_t *value)
{
	unsigned cpu = this_cpu_id();
	if (replies[cpu].joinpoint != joinpoint || !joinpoint)
		return 0;
	*value = replies[cpu].value;
	replies[cpu].joinpoint = NULL;
	return 1;
}

static void take_reply(const struct jp_context *context, const struct ipc_message *reply)
{
	if (reply->words[0] == 1) {
		replies[context->cpu].joinpoint = context->joinpoint;
		replies[context->cpu].value = (int64_t)reply->words[1];
	}
}

static void msg_deliver(struct monitor_advice *a, struct jp_context *context, bool after)
{
	if (!aspect_is_active(a->aspect, ASPECT_BINDING_MSG) || monitor_is_caller(context))
		return;
	struct ipc_endpoint *e = monitor_endpoint();
	uint64_t start = rdtsc();
	struct ipc_message m, reply;
	m.label = SCOPE_MSG_EVENT;
	m.length = sizeof(struct scope_event);
	struct scope_event *event = (struct scope_event *)m.payload;
	monitor_fill_event(event, a->aspect_id, a->index, context, after);
	bool sync = __atomic_load_n(&synchronous, __ATOMIC_ACQUIRE);
	if (sync)
		event->flags |= SCOPE_EVENT_CALL;
	int error = !e ? -EPIPE
		    : sync
			? ipc_call(e, &m, &reply, __atomic_load_n(&deadline_ns, __ATOMIC_RELAXED))
			: ipc_send(e, &m);
	if (error == 0) {
		if (sync)
			take_reply(context, &reply);
		aspect_count_event(a->aspect, rdtsc() - start);
		return;
	}
	aspect_count_drop(a->aspect);
	if (error == -EPIPE)
		aspect_report_failure(a->aspect, "msg: the monitor process ended");
	else if (error == -ETIMEDOUT)
		aspect_report_failure(a->aspect, "msg: the monitor missed its deadline");
}

static void msg_before(struct jp_context *context, void *cookie)
{
	msg_deliver(cookie, context, false);
}

static void msg_after(struct jp_context *context, void *cookie)
{
	msg_deliver(cookie, context, true);
}

static int msg_attach(struct aspect *aspect)
{
	return monitor_weave_aspect(aspect, ASPECT_BINDING_MSG, msg_before, msg_after);
}

static void msg_detach(struct aspect *aspect)
{
	monitor_unweave_aspect(aspect, ASPECT_BINDING_MSG);
}

static void msg_collect(struct aspect *aspect)
{
	monitor_flush_aspect(aspect);
}

const struct binding_ops binding_msg_ops = {
    .binding = ASPECT_BINDING_MSG,
    .name = "msg",
    .attach = msg_attach,
    .detach = msg_detach,
    .collect = msg_collect,
};
