/*
 * The `msg` binding: the join point sends the event (struct scope_event) to
 * the monitor through kernel IPC.  One-way (the default) queues it and goes
 * on; a full queue drops and counts.  Synchronous (SCOPE_SET_MSG_MODE) waits
 * for the monitor's reply until a deadline.  Advice may not sleep, so where
 * the join point's thread may (a join point that may sleep, outside
 * interrupts, no lock held) the call is made just after the advice's
 * section: a before advice alone on the join point runs the whole call
 * (msg_around_before: its checks in the section, the call to the monitor,
 * then the join point's), any other defers its call (jp_defer); either way
 * the thread blocks in ipc_call, handing its CPU
 * straight to the monitor, which answers with ms_ipc_reply_receive and
 * hands it back: the monitor may share the CPU.  Elsewhere (a _NOSLEEP join
 * point, a lock held) the advice spins, which only a monitor on another CPU
 * can answer (reserve one with monitor_cpus=); when the monitor may only run
 * on this CPU the call fails at once (-EDEADLK) and the event is counted as
 * dropped.  An event from inside the scheduler (sched.switch, whose advice
 * runs under the run queue's lock) is dropped and counted too: the message
 * would wake the monitor, and a wake-up takes that lock.  A missed deadline
 * or a closed endpoint (the monitor ended) reports the aspect, which
 * unlinks it; the join point completes either way.
 *
 * A sleeping call runs outside every section, so nothing that a grace period
 * protects may be used there: it holds a waiter slot naming its advice until
 * its last use of it (unweaving waits for those), takes its own reference
 * to the endpoint, and
 * while it runs, join points of its own thread send nothing (`waiting`, the
 * recursion guard that advice has from its section), so that a msg aspect
 * on ipc.* or sched.* cannot call itself.  Its slot there and the endpoint
 * reference are taken in the section (a grace period keeps the endpoint
 * pointer valid there: no lock); with all MSG_WAITERS slots taken the event
 * is sent as from a join point that may not sleep.
 *
 * The reply steers the join point's owner: the value the advice gave
 * ms_reply is posted under the join point and its first argument (the owner
 * takes it with aspect_reply_take, the same in every binding: reply.c).
 */
#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "joinpoint/defer.h"
#include "joinpoint/section.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/monitor_internal.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "time/time.h"

#define MSG_DEFAULT_DEADLINE_NS (10 * NSEC_PER_MSEC)
#define MSG_WAITERS             16 /* threads in a sleeping call at once */

static bool synchronous;
static uint64_t deadline_ns = MSG_DEFAULT_DEADLINE_NS;

void scope_set_msg_mode(int sync, uint64_t deadline)
{
	__atomic_store_n(&deadline_ns, deadline ? deadline : MSG_DEFAULT_DEADLINE_NS,
			 __ATOMIC_RELAXED);
	__atomic_store_n(&synchronous, sync != 0, __ATOMIC_RELEASE);
}

static int unserved_noted;         /* the -EDEADLK warning was printed */
static int inside_scheduler_noted; /* drop_inside_scheduler's was */

/* The threads in a sleeping call, one a slot, and how many there are; each
 * slot also holds what its call after the section needs (the cookie jp_defer
 * passes on, or what msg_around_before keeps), and its message and reply:
 * only the thread holding the slot uses them.  The message's header (label, words, length) is the same for every
 * call and is set here once, so a call writes only its event. */
struct msg_waiter {
	struct thread *thread; /* NULL: the slot is free */
	struct monitor_advice *advice;
	struct ipc_endpoint *endpoint; /* referenced, or NULL: no monitor */
	volatile bool calling;         /* in the call, not only deferred to it */
	struct ipc_message message;
	struct ipc_message reply;
};
static struct msg_waiter waiters[MSG_WAITERS] = {
    [0 ... MSG_WAITERS -
     1] = {.message = {.label = SCOPE_MSG_EVENT, .length = sizeof(struct scope_event)}},
};
static unsigned waiting_count;

/* Names t as in a sleeping call.  Returns its slot, or NULL when all are
 * taken. */
static inline __attribute__((always_inline)) struct msg_waiter *enter_waiting(struct thread *t)
{
	for (struct msg_waiter *w = waiters; w < waiters + MSG_WAITERS; w++) {
		struct thread *none = NULL;
		if (__atomic_compare_exchange_n(&w->thread, &none, t, false, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			__atomic_fetch_add(&waiting_count, 1, __ATOMIC_RELEASE);
			return w;
		}
	}
	return NULL;
}

static inline __attribute__((always_inline)) void leave_waiting(struct msg_waiter *w)
{
	w->calling = false;
	__atomic_fetch_sub(&waiting_count, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&w->thread, NULL, __ATOMIC_RELEASE);
}

bool msg_advice_calling(const struct monitor_advice *a)
{
	for (const struct msg_waiter *w = waiters; w < waiters + MSG_WAITERS; w++)
		if (__atomic_load_n(&w->thread, __ATOMIC_ACQUIRE) &&
		    __atomic_load_n(&w->advice, __ATOMIC_RELAXED) == a)
			return true;
	return false;
}

/* True when t is in a sleeping call: its join points send nothing.  (One
 * only deferred, from the section still running, does not count: the other
 * advice of that section send as usual.)  In line in the advice: most often
 * no thread is waiting, one load says so. */
static inline __attribute__((always_inline)) bool is_waiting(const struct thread *t)
{
	if (!__atomic_load_n(&waiting_count, __ATOMIC_ACQUIRE))
		return false;
	for (int i = 0; i < MSG_WAITERS; i++)
		if (__atomic_load_n(&waiters[i].thread, __ATOMIC_RELAXED) == t &&
		    waiters[i].calling)
			return true;
	return false;
}

static inline __attribute__((always_inline)) void take_reply(const struct jp_context *context,
							     const struct ipc_message *reply)
{
	if (reply->words[0] == 1) {
		uint64_t key = context->joinpoint->argc ? context->args[0] : 0;
		aspect_reply_post(context->joinpoint, key, (int64_t)reply->words[1]);
	}
}

/* The event's first word: synchronous events are marked as calls. */
static inline uint64_t event_head(const struct monitor_advice *a, bool after, bool sync)
{
	uint64_t flags = (after ? SCOPE_EVENT_AFTER : 0) | (sync ? SCOPE_EVENT_CALL : 0);
	return a->event_head | MONITOR_EVENT_FLAGS(flags);
}

/* The event as a message of its own. */
static inline __attribute__((always_inline)) void build_message(struct ipc_message *m,
								struct monitor_advice *a,
								const struct jp_context *context,
								bool after, bool sync)
{
	m->label = SCOPE_MSG_EVENT;
	for (unsigned i = 0; i < IPC_WORDS; i++)
		m->words[i] = 0; /* the message goes to another process: nothing left over */
	m->length = sizeof(struct scope_event);
	monitor_fill_event((struct scope_event *)m->payload, event_head(a, after, sync), context,
			   after);
}

/* The deferred call's event into its slot's message (whose header is set
 * already), headed by its advice's call_head: a deferred event is always a
 * call.  The call runs on its context's thread, the running one and never
 * NULL (jp_defer allows no other), so its process and id are the running
 * thread's. */
static inline __attribute__((always_inline)) void
fill_deferred_event(struct msg_waiter *w, const struct jp_context *context, bool after)
{
	uint64_t head = w->advice->call_head | MONITOR_EVENT_FLAGS(after ? SCOPE_EVENT_AFTER : 0);
	monitor_fill_event_of((struct scope_event *)w->message.payload, head, context, after,
			      proc_current(), (int32_t)thread_id(context->thread));
}

/* Counts a failed event; a dead or late monitor is reported. */
static __attribute__((noinline, cold)) void count_failure(struct monitor_advice *a, int error)
{
	aspect_count_drop(a->aspect);
	if (error == -EPIPE)
		aspect_report_failure(a->aspect, "msg: the monitor process ended");
	else if (error == -ETIMEDOUT)
		aspect_report_failure(a->aspect, "msg: the monitor missed its deadline");
	else if (error == -EDEADLK && !__atomic_exchange_n(&unserved_noted, 1, __ATOMIC_RELAXED))
		pr_warn("linker: aspect '%s' msg: a synchronous event that may not sleep "
			"cannot be answered by a monitor on its own CPU: dropped (counted)\n",
			a->aspect->name);
}

/* Counts the outcome of one event: a success in line (every event's), a
 * failure out of line. */
static inline __attribute__((always_inline)) void count_outcome(struct monitor_advice *a, int error,
								uint64_t start)
{
	if (__builtin_expect(error == 0, 1))
		aspect_count_event(a->aspect, rdtsc() - start);
	else
		count_failure(a, error);
}

/* The sleeping call, after the advice's section (jp_defer); inlined into
 * its two entries, as msg_deliver is. */
static inline __attribute__((always_inline)) void
msg_call_sleeping(struct msg_waiter *w, struct jp_context *context, bool after)
{
	uint64_t start = rdtsc();
	struct monitor_advice *a = w->advice;
	w->calling = true;
	struct ipc_endpoint *e = w->endpoint;
	/* Sent even if the aspect was relinked meanwhile: unweaving waits for
	 * this call before the monitor's counts are collected. */
	int error = e ? 0 : -EPIPE;
	if (!error) {
		fill_deferred_event(w, context, after);
		error = ipc_call(e, &w->message, &w->reply,
				 __atomic_load_n(&deadline_ns, __ATOMIC_RELAXED));
		if (error == 0)
			take_reply(context, &w->reply);
	}
	count_outcome(a, error, start);
	if (e)
		ipc_endpoint_put(e);
	leave_waiting(w); /* last: unweaving waits for the slot (msg_advice_calling) */
}

static void msg_call_before(struct jp_context *context, void *cookie)
{
	msg_call_sleeping(cookie, context, false);
}

static void msg_call_after(struct jp_context *context, void *cookie)
{
	msg_call_sleeping(cookie, context, true);
}

/* Defers the synchronous call to just after the section when this thread
 * may sleep there.  Its waiter slot is taken here, and the monitor's
 * endpoint referenced here, where a grace period still keeps the pointer
 * valid (no lock).  Returns false, with nothing taken, when the call may not
 * be deferred or every slot is in use: the caller then calls without
 * sleeping.  In line in the advice, whose frame serves it too. */
static inline __attribute__((always_inline)) bool defer_call(struct monitor_advice *a,
							     struct jp_context *context, bool after)
{
	struct msg_waiter *w = enter_waiting(context->thread);
	if (!w)
		return false;
	__atomic_store_n(&w->advice, a, __ATOMIC_RELAXED); /* read by msg_advice_calling */
	if (jp_defer(context, after ? msg_call_after : msg_call_before, w) != 0) {
		leave_waiting(w);
		return false;
	}
	w->endpoint = monitor_endpoint_get_of(a->generation);
	return true;
}

/* An event of a join point inside the scheduler (sched.switch, its run
 * queue's lock held): a message wakes the monitor, and a wake-up takes that
 * lock, so the event is dropped and counted, with one warning (printing
 * wakes nobody). */
static __attribute__((noinline, cold)) void drop_inside_scheduler(struct monitor_advice *a)
{
	aspect_count_drop(a->aspect);
	if (!__atomic_exchange_n(&inside_scheduler_noted, 1, __ATOMIC_RELAXED))
		pr_warn(
		    "linker: aspect '%s' msg: an event from inside the scheduler (sched.switch) "
		    "cannot be sent, since a message wakes the monitor: dropped (counted); "
		    "link it direct or shm\n",
		    a->aspect->name);
}

/* The event sent from the advice itself: one-way, or synchronous without
 * sleeping (the call could not be deferred).  Out of line: its message and
 * reply take 600 bytes of stack that the deferring path does not need. */
static __attribute__((noinline)) void
msg_send_here(struct monitor_advice *a, struct jp_context *context, bool after, bool sync)
{
	/* A deferred call runs outside the section with preemption and
	 * interrupts on (jp_defer says so), so never inside the scheduler,
	 * whose run queue's lock is held with interrupts off: only an event
	 * sent from here is asked about. */
	if (__builtin_expect(!sched_may_wake_here(), 0)) {
		drop_inside_scheduler(a);
		return;
	}
	struct ipc_endpoint *e = monitor_endpoint_of(a->generation);
	uint64_t start = rdtsc();
	struct ipc_message m, reply;
	build_message(&m, a, context, after, sync);
	int error = !e ? -EPIPE
		    : sync
			? ipc_call(e, &m, &reply, __atomic_load_n(&deadline_ns, __ATOMIC_RELAXED))
			: ipc_send(e, &m);
	if (error == 0 && sync)
		take_reply(context, &reply);
	count_outcome(a, error, start);
}

/* The advice's checks and the deferral, for an event of process p (NULL:
 * the kernel's), in line, calling nothing, so that a synchronous event that
 * may sleep (the common case) sets up no frame beyond its own; the rest goes
 * on in msg_send_here. */
static inline __attribute__((always_inline)) void msg_deliver_as(struct monitor_advice *a,
								 struct jp_context *context,
								 bool after,
								 const struct process *p)
{
	if (monitor_is_process(p) || is_waiting(context->thread))
		return;
	bool sync = __atomic_load_n(&synchronous, __ATOMIC_ACQUIRE);
	if (sync && defer_call(a, context, after))
		return;
	msg_send_here(a, context, after, sync);
}

/* A context of another thread than the one running (not the dispatcher's:
 * its advice runs on the calling thread): that thread's process is asked
 * of the scheduler, by a call the common case need not make room for. */
static __attribute__((noinline, cold)) void
msg_deliver_for_other_thread(struct monitor_advice *a, struct jp_context *context, bool after)
{
	msg_deliver_as(a, context, after, monitor_other_context_process(context));
}

static inline __attribute__((always_inline)) void
msg_deliver(struct monitor_advice *a, struct jp_context *context, bool after)
{
	if (!aspect_is_active(a->aspect, ASPECT_BINDING_MSG))
		return;
	if (monitor_context_is_current(context))
		msg_deliver_as(a, context, after, proc_current());
	else
		msg_deliver_for_other_thread(a, context, after);
}

/* Sibling calls on (the kernel is built without them): msg_send_here or
 * msg_deliver_for_other_thread is jumped to. */
static __attribute__((optimize("optimize-sibling-calls"))) void
msg_before(struct jp_context *context, void *cookie)
{
	msg_deliver(cookie, context, false);
}

static __attribute__((optimize("optimize-sibling-calls"))) void
msg_after(struct jp_context *context, void *cookie)
{
	msg_deliver(cookie, context, true);
}

/* The context of a before advice of the running thread's outermost call,
 * the dispatcher's (dispatch.c) as the advice sees it. */
static inline __attribute__((always_inline)) struct jp_context
around_context(const struct joinpoint *jp, uint64_t *args, uint64_t entry_tsc)
{
	struct jp_context context;
	context.joinpoint = jp;
	context.args = args;
	context.activity = 0;
	context.entry_tsc = entry_tsc;
	context.exit_tsc = 0;
	context.ret = 0;
	context.cpu = this_cpu_read(id);
	context.thread = this_cpu_read(current);
	return context;
}

/* msg_around_before's event sent from the section, with a context of its
 * own: out of line, so that the around's stays in registers. */
static __attribute__((noinline)) void msg_around_send_here(struct monitor_advice *a,
							   const struct joinpoint *jp,
							   uint64_t *args, uint64_t entry_tsc,
							   bool sync)
{
	struct jp_context context = around_context(jp, args, entry_tsc);
	msg_send_here(a, &context, false, sync);
}

/* The advice's checks and its event for the whole call of a join point
 * that may sleep (msg_around_before), in the dispatcher's section: the
 * waiter slot of a synchronous call the thread may sleep in after the
 * section (taken, with the endpoint referenced, as defer_call takes them),
 * or NULL when the event went from here or is not sent. */
static inline __attribute__((always_inline)) struct msg_waiter *
msg_deliver_in_section(struct monitor_advice *a, const struct jp_context *context)
{
	if (!aspect_is_active(a->aspect, ASPECT_BINDING_MSG) ||
	    monitor_is_process(proc_current()) || is_waiting(context->thread))
		return NULL;
	bool sync = __atomic_load_n(&synchronous, __ATOMIC_ACQUIRE);
	if (sync && jp_may_sleep_after_section(this_cpu())) {
		struct msg_waiter *w = enter_waiting(context->thread);
		if (w) {
			__atomic_store_n(&w->advice, a, __ATOMIC_RELAXED);
			w->endpoint = monitor_endpoint_get_of(a->generation);
			return w;
		}
	}
	msg_around_send_here(a, context->joinpoint, context->args, context->entry_tsc, sync);
	return NULL;
}

/* The whole call of a join point that may sleep on which a before advice
 * of this binding is alone (jp_advice.around, joinpoint.h): the advice's
 * checks in the dispatcher's section, a synchronous call after it as a
 * deferred one runs (its waiter slot holds the advice to its last use),
 * then the join point's own call, after which nothing of the advice is
 * touched.  The events are the dispatcher's, without its context and
 * deferral built around them. */
static uint64_t msg_around_before(const struct joinpoint *jp, uint64_t *args,
				  const struct jp_fast_list *list)
{
	struct monitor_advice *a = list->cookie;
	uint64_t entry_tsc = __builtin_expect(a->jp.flags & JP_ADVICE_TIMESTAMPS, 0) ? rdtsc() : 0;
	struct jp_context context = around_context(jp, args, entry_tsc);
	struct msg_waiter *w = msg_deliver_in_section(a, &context);
	jp_section_leave();
	if (w)
		msg_call_sleeping(w, &context, false);
	return jp->call(args);
}

static int msg_attach(struct aspect *aspect)
{
	static const struct monitor_advice_code code = {
	    .before = msg_before, .after = msg_after, .around_before = msg_around_before};
	return monitor_weave_aspect(aspect, ASPECT_BINDING_MSG, &code);
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
