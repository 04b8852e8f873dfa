/*
 * Endpoints and messages.  An endpoint is a ring of `capacity` message slots
 * plus a table of calls that were received and wait for their reply.  A call
 * lives on its caller's stack: the slot (while queued) or the pending entry
 * (once received) points at it, and exactly one of these ends it, under the
 * endpoint lock: the reply (DONE, 0), the close (DONE, -EPIPE) or the caller
 * itself at its deadline (withdrawn: the slot forgets it, a late reply finds
 * no pending entry and gets -ENOENT).  So a caller that returned is never
 * written to again.
 *
 * Tokens name pending calls: a sequence number above the index of the
 * pending entry, so a stale token never matches a newer call.
 *
 * A sender never blocks: a full queue is -EAGAIN (counted in dropped).  A
 * caller that may sleep blocks on `callers`; one that may not (advice runs
 * with preemption off) spins until the reply or the deadline, which can only
 * be met by a receiver on another CPU.  There is no handoff primitive in the
 * scheduler's API: a call wakes the receiver and blocks at once, so on a CPU
 * with nothing else ready the receiver is the very next thread to run.
 */
#include "ipc/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "time/time.h"

/* Sleepers look for a signal at least this often (a kill may not wake them). */
#define SIGNAL_CHECK_NS  (50 * NSEC_PER_MSEC)
#define TOKEN_INDEX_BITS 8

/* ---- Endpoints ------------------------------------------------------------ */

struct ipc_endpoint *ipc_endpoint_create(const char *name, unsigned capacity)
{
	if (capacity == 0)
		capacity = IPC_QUEUE_DEFAULT;
	if (capacity > IPC_QUEUE_MAX)
		return NULL;
	struct ipc_endpoint *e = kzalloc(sizeof *e + capacity * sizeof(struct ipc_slot));
	if (!e)
		return NULL;
	spin_init(&e->lock, "ipc.endpoint");
	waitq_init(&e->receivers, "ipc.receivers");
	waitq_init(&e->callers, "ipc.callers");
	e->refs = 1;
	e->capacity = capacity;
	e->next_token = 1;
	strlcpy(e->name, name ? name : "ipc", sizeof e->name);
	return e;
}

struct ipc_endpoint *ipc_endpoint_get(struct ipc_endpoint *endpoint)
{
	__atomic_fetch_add(&endpoint->refs, 1, __ATOMIC_RELAXED);
	return endpoint;
}

void ipc_endpoint_put(struct ipc_endpoint *endpoint)
{
	if (!endpoint || __atomic_sub_fetch(&endpoint->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	ipc_endpoint_close(endpoint);
	kfree(endpoint);
}

static void finish_call(struct ipc_call *call, int result)
{
	call->result = result;
	__atomic_store_n(&call->state, IPC_CALL_DONE, __ATOMIC_RELEASE);
}

/* Fails every queued and pending call with -EPIPE and empties the queue. */
static void fail_everything_locked(struct ipc_endpoint *e)
{
	for (unsigned i = 0; i < e->count; i++) {
		struct ipc_slot *slot = &e->slots[(e->head + i) % e->capacity];
		if (slot->call)
			finish_call(slot->call, -EPIPE);
		e->stats.peer_gone++;
	}
	e->count = 0;
	for (unsigned i = 0; i < IPC_QUEUE_MAX; i++) {
		if (e->pending[i]) {
			finish_call(e->pending[i], -EPIPE);
			e->pending[i] = NULL;
			e->stats.peer_gone++;
		}
	}
	e->calls_outstanding = 0;
}

void ipc_endpoint_close(struct ipc_endpoint *endpoint)
{
	uint64_t irq = spin_lock_irqsave(&endpoint->lock);
	bool was_open = !endpoint->closed;
	endpoint->closed = true;
	if (was_open)
		fail_everything_locked(endpoint);
	spin_unlock_irqrestore(&endpoint->lock, irq);
	if (was_open) {
		waitq_wake_all(&endpoint->receivers);
		waitq_wake_all(&endpoint->callers);
	}
}

int ipc_endpoint_is_closed(const struct ipc_endpoint *endpoint)
{
	return endpoint->closed;
}

void ipc_get_stats(const struct ipc_endpoint *endpoint, struct ipc_stats *stats)
{
	struct ipc_endpoint *e = (struct ipc_endpoint *)endpoint;
	uint64_t irq = spin_lock_irqsave(&e->lock);
	*stats = e->stats;
	stats->queued = e->count;
	stats->closed = e->closed;
	spin_unlock_irqrestore(&e->lock, irq);
}

/* ---- Queueing ------------------------------------------------------------- */

static void copy_message(struct ipc_message *dst, const struct ipc_message *src)
{
	memcpy(dst, src, IPC_HEADER_SIZE + src->length);
}

static uint32_t sender_pid(void)
{
	struct process *p = this_cpu()->irq_depth ? NULL : proc_current();
	return p ? (uint32_t)proc_pid(p) : 0;
}

/* Puts message (and call, when not NULL) at the tail.  Returns 0, -EPIPE or
 * -EAGAIN, counting the outcome. */
static int enqueue(struct ipc_endpoint *e, const struct ipc_message *message, struct ipc_call *call)
{
	uint64_t irq = spin_lock_irqsave(&e->lock);
	int result = 0;
	if (e->closed) {
		e->stats.peer_gone++;
		result = -EPIPE;
	} else if (e->count == e->capacity || (call && e->calls_outstanding == IPC_QUEUE_MAX)) {
		e->stats.dropped++;
		result = -EAGAIN;
	} else {
		struct ipc_slot *slot = &e->slots[(e->head + e->count) % e->capacity];
		copy_message(&slot->message, message);
		slot->message.token = 0;
		slot->message.sender = sender_pid();
		slot->call = call;
		e->count++;
		if (call) {
			e->calls_outstanding++;
			e->stats.calls++;
		} else {
			e->stats.sent++;
		}
	}
	spin_unlock_irqrestore(&e->lock, irq);
	if (result == 0)
		waitq_wake_one(&e->receivers);
	return result;
}

static int check_message(const struct ipc_endpoint *e, const struct ipc_message *message)
{
	if (!e || !message || message->length > IPC_PAYLOAD_MAX)
		return -EINVAL;
	return 0;
}

JOINPOINT_DEFINE(ipc, send, int, struct ipc_endpoint *, endpoint, const struct ipc_message *,
		 message)
{
	int error = check_message(endpoint, message);
	return error ? error : enqueue(endpoint, message, NULL);
}

/* ---- Calls ---------------------------------------------------------------- */

static bool may_sleep(void)
{
	return irq_enabled() && this_cpu()->preempt_count == 0 && thread_current();
}

/* The deadline passed: takes the call back unless it finished meanwhile.
 * Returns the call's result, or -ETIMEDOUT when it was withdrawn. */
static int withdraw(struct ipc_endpoint *e, struct ipc_call *call, int reason)
{
	uint64_t irq = spin_lock_irqsave(&e->lock);
	int result = reason;
	if (call->state == IPC_CALL_DONE) {
		result = call->result;
	} else if (call->state == IPC_CALL_QUEUED) {
		for (unsigned i = 0; i < e->count; i++) {
			struct ipc_slot *slot = &e->slots[(e->head + i) % e->capacity];
			if (slot->call == call)
				slot->call = NULL; /* delivered as one-way; no reply expected */
		}
		e->calls_outstanding--;
	} else {
		e->pending[call->pending_index] = NULL;
		e->calls_outstanding--;
	}
	if (result == -ETIMEDOUT)
		e->stats.timeouts++;
	spin_unlock_irqrestore(&e->lock, irq);
	return result;
}

struct call_wait {
	struct ipc_call *call;
};

static bool call_done_or_signal(void *arg)
{
	struct ipc_call *call = ((struct call_wait *)arg)->call;
	return call->state == IPC_CALL_DONE || proc_signal_pending();
}

static uint64_t deadline_after(uint64_t timeout_ns)
{
	uint64_t now = clock_ns();
	return timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
}

static int wait_sleeping(struct ipc_endpoint *e, struct ipc_call *call, uint64_t deadline)
{
	struct call_wait arg = {call};
	for (;;) {
		uint64_t now = clock_ns();
		if (call->state == IPC_CALL_DONE)
			return call->result;
		if (proc_signal_pending())
			return withdraw(e, call, -EINTR);
		if (now >= deadline)
			return withdraw(e, call, -ETIMEDOUT);
		uint64_t slice =
		    deadline - now < SIGNAL_CHECK_NS ? deadline - now : SIGNAL_CHECK_NS;
		waitq_wait_timeout(&e->callers, call_done_or_signal, &arg, slice);
	}
}

static int wait_spinning(struct ipc_endpoint *e, struct ipc_call *call, uint64_t deadline)
{
	while (__atomic_load_n(&call->state, __ATOMIC_ACQUIRE) != IPC_CALL_DONE) {
		if (clock_ns() >= deadline)
			return withdraw(e, call, -ETIMEDOUT);
		cpu_relax();
	}
	return call->result;
}

JOINPOINT_DEFINE(ipc, call, int, struct ipc_endpoint *, endpoint, const struct ipc_message *,
		 message, struct ipc_message *, reply, uint64_t, timeout_ns)
{
	int error = check_message(endpoint, message);
	if (error || !reply)
		return error ? error : -EINVAL;
	struct ipc_call call = {.reply = reply, .state = IPC_CALL_QUEUED};
	uint64_t deadline = deadline_after(timeout_ns);
	error = enqueue(endpoint, message, &call);
	if (error)
		return error;
	if (may_sleep())
		return wait_sleeping(endpoint, &call, deadline);
	return wait_spinning(endpoint, &call, deadline);
}

/* ---- Receiving and replying ------------------------------------------------ */

/* Takes the head slot into *message; a call moves to the pending table. */
static void dequeue_locked(struct ipc_endpoint *e, struct ipc_message *message)
{
	struct ipc_slot *slot = &e->slots[e->head];
	copy_message(message, &slot->message);
	message->token = 0;
	if (slot->call) {
		unsigned i = 0;
		while (e->pending[i])
			i++; /* calls_outstanding <= IPC_QUEUE_MAX keeps one free */
		uint64_t token = (e->next_token++ << TOKEN_INDEX_BITS) | (i + 1);
		e->pending[i] = slot->call;
		e->pending_token[i] = token;
		slot->call->pending_index = i;
		slot->call->state = IPC_CALL_TAKEN;
		message->token = token;
	}
	e->head = (e->head + 1) % e->capacity;
	e->count--;
	e->stats.received++;
}

/* One attempt: 0 (got one), -EPIPE (closed and empty) or -EAGAIN (empty). */
static int try_receive(struct ipc_endpoint *e, struct ipc_message *message)
{
	uint64_t irq = spin_lock_irqsave(&e->lock);
	int result = -EAGAIN;
	if (e->count) {
		dequeue_locked(e, message);
		result = 0;
	} else if (e->closed) {
		result = -EPIPE;
	}
	spin_unlock_irqrestore(&e->lock, irq);
	return result;
}

static bool message_or_closed(void *arg)
{
	struct ipc_endpoint *e = arg;
	return e->count || e->closed || proc_signal_pending();
}

JOINPOINT_DEFINE(ipc, receive, int, struct ipc_endpoint *, endpoint, struct ipc_message *, message,
		 uint64_t, timeout_ns)
{
	if (!endpoint || !message)
		return -EINVAL;
	uint64_t deadline = deadline_after(timeout_ns);
	for (;;) {
		int result = try_receive(endpoint, message);
		if (result != -EAGAIN || timeout_ns == 0)
			return result;
		uint64_t now = clock_ns();
		if (proc_signal_pending())
			return -EINTR;
		if (now >= deadline || !may_sleep())
			return -ETIMEDOUT;
		uint64_t slice =
		    deadline - now < SIGNAL_CHECK_NS ? deadline - now : SIGNAL_CHECK_NS;
		waitq_wait_timeout(&endpoint->receivers, message_or_closed, endpoint, slice);
	}
}

/* The pending entry token names, or -1. */
static int find_pending_locked(const struct ipc_endpoint *e, uint64_t token)
{
	uint64_t index = (token & ((1u << TOKEN_INDEX_BITS) - 1)) - 1;
	if (token == 0 || index >= IPC_QUEUE_MAX || !e->pending[index] ||
	    e->pending_token[index] != token)
		return -1;
	return (int)index;
}

JOINPOINT_DEFINE(ipc, reply, int, struct ipc_endpoint *, endpoint, uint64_t, token,
		 const struct ipc_message *, message)
{
	int error = check_message(endpoint, message);
	if (error)
		return error;
	uint64_t irq = spin_lock_irqsave(&endpoint->lock);
	int index = find_pending_locked(endpoint, token);
	if (index >= 0) {
		struct ipc_call *call = endpoint->pending[index];
		endpoint->pending[index] = NULL;
		endpoint->calls_outstanding--;
		copy_message(call->reply, message);
		call->reply->token = token;
		call->reply->sender = sender_pid();
		endpoint->stats.replies++;
		finish_call(call, 0);
	}
	spin_unlock_irqrestore(&endpoint->lock, irq);
	if (index < 0)
		return -ENOENT;
	waitq_wake_all(&endpoint->callers);
	return 0;
}
