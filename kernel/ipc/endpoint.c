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
 * caller that may sleep blocks, and when a receiver is blocked in receive it
 * hands its CPU straight to it (sched_handoff: the direct switch of L4 and
 * seL4), whose reply, with ipc_reply_receive, switches straight back: a
 * round trip on one CPU is two switches and no search.  When the receiver
 * may not run on the caller's CPU, the caller wakes it and spins for up to
 * ADAPTIVE_SPIN_NS before blocking, and a receiver whose last caller was on
 * another CPU polls as long before it blocks, so that a prompt reply, or the
 * next call of a stream, costs no idle wake-up (an interrupt to a halted
 * CPU) on either side.  A caller that may not sleep (advice in its
 * section, a lock held, an interrupt) spins until the reply or the deadline,
 * which only a receiver on another CPU can meet: when the last receiver may
 * run on this CPU only, the call fails at once with -EDEADLK (counted in
 * unserved) instead of spinning to its deadline.
 *
 * Waiters are the endpoint's own (internal.h): receivers blocked in receive
 * on `receivers`, a blocked caller in its call's `waiter`.  Wakers wake them
 * under the endpoint lock, so a waiter that gave up (its deadline) has
 * either been woken already or is no longer named anywhere.
 *
 * The fast path (seL4's call / reply-receive): a call that finds the queue
 * empty and a receiver blocked in receive delivers itself into that
 * receiver's buffer, already received (pending, with its token), takes it
 * off the list and hands it the CPU; no queue slot, no second copy.  A
 * waiter resumed by a hand-off (sched_resumed_by_handoff) whose condition
 * the hander set under the lock (the receiver's `delivered`, the caller's
 * call DONE) returns without taking the lock again: the hander finished with
 * it before it switched.  A receiver that polls (its last caller ran on
 * another CPU) is on the list too, with no thread to wake: a call delivers into it
 * the same way and wakes nothing, and it sees `delivered` while it polls.
 * Every other case (queue not empty, one-way messages, a waiter woken by
 * its deadline or from another CPU) takes the lock and the queue as before.
 */
#include "ipc/internal.h"

#include <stddef.h>

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "time/time.h"

/* Sleepers look for a signal at least this often (a kill may not wake them). */
#define SIGNAL_CHECK_NS (50 * NSEC_PER_MSEC)
/* A caller whose receiver runs on another CPU first spins this long for the
 * reply: two idle wake-ups (interrupts to halted CPUs) cost more. */
#define ADAPTIVE_SPIN_NS (20 * NSEC_PER_USEC)
/* A token's low bits are its pending entry's index, all of them: any
 * token names an entry, so looking one up needs no range check. */
#define TOKEN_INDEX_BITS 6
_Static_assert(IPC_QUEUE_MAX == 1 << TOKEN_INDEX_BITS, "every token index is an entry");
/* The steps of the call / reply-receive path, inlined into the join points
 * that use them: a call and a return cost about fifteen instructions here
 * (frame pointers, callee-saved registers), a tenth of the IPC's share of a
 * round trip. */
#define HOT static inline __attribute__((always_inline))

/* ---- Endpoints ------------------------------------------------------------ */

/* The bytes of an endpoint of capacity (0: the default). */
static uint64_t endpoint_bytes(unsigned capacity)
{
	return sizeof(struct ipc_endpoint) +
	       (capacity ? capacity : IPC_QUEUE_DEFAULT) * sizeof(struct ipc_slot);
}

struct ipc_endpoint *ipc_endpoint_create(const char *name, unsigned capacity)
{
	if (capacity == 0)
		capacity = IPC_QUEUE_DEFAULT;
	if (capacity > IPC_QUEUE_MAX)
		return NULL;
	struct ipc_endpoint *e = kzalloc(endpoint_bytes(capacity));
	if (!e)
		return NULL;
	spin_init(&e->lock, "ipc.endpoint");
	e->refs = 1;
	e->capacity = capacity;
	e->last_caller_cpu = -1;
	e->next_token = 1;
	strlcpy(e->name, name ? name : "ipc", sizeof e->name);
	return e;
}

struct ipc_endpoint *ipc_endpoint_create_charged(const char *name, unsigned capacity, uint32_t uid,
						 int *error)
{
	uint64_t bytes = endpoint_bytes(capacity);
	*error = capacity > IPC_QUEUE_MAX ? -EINVAL : proc_user_memory_charge(uid, bytes);
	if (*error)
		return NULL;
	struct ipc_endpoint *e = ipc_endpoint_create(name, capacity);
	if (!e) {
		proc_user_memory_release(uid, bytes);
		*error = -ENOMEM;
		return NULL;
	}
	e->charged_uid = uid;
	e->charged_bytes = bytes;
	return e;
}

_Static_assert(offsetof(struct ipc_endpoint, refs) == IPC_OFFSET_REFS,
	       "ipc.h takes references in line");

/* The last reference gone, out of line: ipc_endpoint_put, in line in its
 * callers, is one locked subtraction and a branch. */
__attribute__((noinline, cold)) void ipc_endpoint_release(struct ipc_endpoint *endpoint)
{
	ipc_endpoint_close(endpoint);
	if (endpoint->charged_bytes)
		proc_user_memory_release(endpoint->charged_uid, endpoint->charged_bytes);
	kfree(endpoint);
}

/* Ends a call (lock held) and returns the thread blocked for it, if any:
 * the caller wakes it before dropping the lock. */
static struct thread *finish_call(struct ipc_call *call, int result)
{
	struct thread *waiter = call->waiter; /* a spinning caller may return at once */
	call->result = result;
	__atomic_store_n(&call->state, IPC_CALL_DONE, __ATOMIC_RELEASE);
	return waiter;
}

static void wake(struct thread *t)
{
	if (t)
		sched_wakeup(t);
}

/* Takes the most recent receiver off `receivers`; returns its thread to be
 * woken, or NULL (none, or one polling: it is running). */
static struct thread *pop_receiver_locked(struct ipc_endpoint *e)
{
	struct ipc_receiver *r = e->receivers;
	if (!r)
		return NULL;
	e->receivers = r->next;
	r->next = NULL;
	struct thread *t = r->wake;
	r->thread = NULL; /* it is no longer on the list */
	return t;
}

/* Fails every queued and pending call with -EPIPE and empties the queue. */
static void fail_everything_locked(struct ipc_endpoint *e)
{
	for (unsigned i = 0; i < e->count; i++) {
		struct ipc_slot *slot = &e->slots[(e->head + i) % e->capacity];
		if (slot->call)
			wake(finish_call(slot->call, -EPIPE));
		e->stats.peer_gone++;
	}
	e->count = 0;
	for (unsigned i = 0; i < IPC_QUEUE_MAX; i++) {
		if (e->pending[i]) {
			wake(finish_call(e->pending[i], -EPIPE));
			e->pending[i] = NULL;
			e->stats.peer_gone++;
		}
	}
	e->calls_outstanding = 0;
	while (e->receivers)
		wake(pop_receiver_locked(e));
}

void ipc_endpoint_close(struct ipc_endpoint *endpoint)
{
	uint64_t irq = spin_lock_irqsave(&endpoint->lock);
	bool was_open = !endpoint->closed;
	endpoint->closed = true;
	if (was_open)
		fail_everything_locked(endpoint);
	spin_unlock_irqrestore(&endpoint->lock, irq);
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
	/* A call delivered straight into a receiver's buffer was queued and
	 * received at once: deliver_locked counts it once, in delivered. */
	stats->calls += e->stats.delivered;
	stats->received += e->stats.delivered;
	stats->queued = e->count;
	stats->closed = e->closed;
	spin_unlock_irqrestore(&e->lock, irq);
}

/* ---- Queueing ------------------------------------------------------------- */

/* Copies the header and the payload bytes in use, rounded up to whole
 * words (both are whole struct ipc_message, so the rounding stays inside
 * them): a message is copied a word at a time, not a byte at a time. */
_Static_assert(offsetof(struct ipc_message, payload) % 8 == 0 && IPC_PAYLOAD_MAX % 8 == 0,
	       "messages are copied in words");

static void copy_message(struct ipc_message *dst, const struct ipc_message *src)
{
	uint64_t words = (IPC_HEADER_SIZE + src->length + 7) / 8;
	__asm__ volatile("rep movsq" : "+D"(dst), "+S"(src), "+c"(words) : : "memory");
}

/* The sending process's pid (0: the kernel, or an interrupt handler).  The
 * call and the reply-receive read the calling process (proc_current) once,
 * for the pid and for the signal check: a caller that may sleep (self) is in
 * no interrupt, so needs no other load. */
HOT uint32_t sender_pid_of(const struct thread *self, const struct process *proc)
{
	if (!proc || (!self && this_cpu_read(irq_depth)))
		return 0;
	return (uint32_t)proc_pid(proc);
}

static uint32_t sender_pid(void)
{
	return sender_pid_of(NULL, proc_current());
}

/* Puts message (and call, when not NULL) at the tail, lock held.  Returns 0,
 * -EPIPE or -EAGAIN, counting the outcome. */
static int enqueue_locked(struct ipc_endpoint *e, const struct ipc_message *message,
			  struct ipc_call *call, uint32_t sender)
{
	if (e->closed) {
		e->stats.peer_gone++;
		return -EPIPE;
	}
	if (e->count == e->capacity || (call && e->calls_outstanding == IPC_QUEUE_MAX)) {
		e->stats.dropped++;
		return -EAGAIN;
	}
	struct ipc_slot *slot = &e->slots[(e->head + e->count) % e->capacity];
	copy_message(&slot->message, message);
	slot->message.token = 0;
	slot->message.sender = sender;
	slot->call = call;
	e->count++;
	if (call) {
		call->state = IPC_CALL_QUEUED;
		e->calls_outstanding++;
		e->stats.calls++;
		e->last_caller_cpu = (int)this_cpu_id();
	} else {
		e->stats.sent++;
	}
	return 0;
}

/* Moves call, just received, to the pending table; returns its token. */
static uint64_t take_pending_locked(struct ipc_endpoint *e, struct ipc_call *call)
{
	unsigned i = 0;
	/* calls_outstanding <= IPC_QUEUE_MAX keeps one free; the first, mostly */
	while (__builtin_expect(e->pending[i] != NULL, 0))
		i++;
	uint64_t token = (e->next_token++ << TOKEN_INDEX_BITS) | i; /* not 0: it starts at 1 */
	e->pending[i] = call;
	e->pending_token[i] = token;
	call->state = IPC_CALL_TAKEN;
	return token;
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
	if (error)
		return error;
	uint64_t irq = spin_lock_irqsave(&endpoint->lock);
	error = enqueue_locked(endpoint, message, NULL, sender_pid());
	if (error == 0)
		wake(pop_receiver_locked(endpoint));
	spin_unlock_irqrestore(&endpoint->lock, irq);
	return error;
}

/* ---- Waiting -------------------------------------------------------------- */

/* The calling thread when it may block (interrupts on in flags, which the
 * caller read, no lock held, not in advice, a thread), else NULL, so that its
 * waits have it at hand.  Asked before the endpoint lock is taken (the call
 * and reply-receive take it with these flags:
 * spin_lock_irqsave_inline_with), with interrupts on: each count is read
 * %gs-relative, so a thread moved to another CPU between two reads reads
 * its new CPU's, never the old one's. */
HOT struct thread *sleeper_with(uint64_t flags)
{
	if (!(flags & RFLAGS_IF) || this_cpu_read(preempt_count) || this_cpu_read(irq_depth))
		return NULL;
	return thread_current(); /* one load: this CPU's, wherever it runs now */
}

static uint64_t deadline_after(uint64_t now, uint64_t timeout_ns)
{
	return timeout_ns > UINT64_MAX - now ? UINT64_MAX : now + timeout_ns;
}

/* When a blocked waiter wakes by itself: the deadline, or sooner to look
 * for a signal (a kill may not wake it). */
static uint64_t wake_time(uint64_t now, uint64_t deadline)
{
	uint64_t check = now + SIGNAL_CHECK_NS; /* the clock is centuries from wrapping */
	return deadline < check ? deadline : check;
}

/* Blocks with the endpoint lock dropped, handing the CPU to *handoff first
 * when there is one (the direct switch), and takes the lock again; returns
 * false.  Returns true without the lock when the thread that switched back
 * here was a hand-off and *done reads done_value: that thread set it under
 * the lock and was done with this waiter before it switched (sched.h), so
 * nothing is left to look at under the lock. */
HOT bool block_unlocked(struct ipc_endpoint *e, uint64_t *irq, struct thread **handoff,
			uint64_t now, uint64_t until, const volatile int *done, int done_value)
{
	bool handed;
	if (*handoff) {
		struct thread *next = *handoff;
		*handoff = NULL;
		/* marks this thread blocked, and drops the lock */
		handed = sched_block_handing_off_at(next, &e->lock, *irq, until, now);
	} else {
		sched_prepare_block();
		spin_unlock_irqrestore(&e->lock, *irq);
		sched_block(until);
		handed = sched_resumed_by_handoff();
	}
	if (handed && __atomic_load_n(done, __ATOMIC_ACQUIRE) == done_value)
		return true;
	*irq = spin_lock_irqsave(&e->lock);
	return false;
}

/* ---- Calls ---------------------------------------------------------------- */

/* The call ends without a reply (deadline, signal), lock held: takes it back
 * unless it finished meanwhile.  Returns the call's result, or reason when
 * it was withdrawn. */
static int withdraw_locked(struct ipc_endpoint *e, struct ipc_call *call, int reason)
{
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
		/* the entry is looked for here, not kept: every call would pay for it */
		for (unsigned i = 0; i < IPC_QUEUE_MAX; i++)
			if (e->pending[i] == call) {
				e->pending[i] = NULL; /* a call is in one entry */
				break;
			}
		e->calls_outstanding--;
	}
	if (result == -ETIMEDOUT)
		e->stats.timeouts++;
	return result;
}

/* The receiver cannot run on this CPU: wakes it, then waits for the reply
 * a little with the lock dropped before blocking.  The call names no
 * waiter meanwhile (a spinning caller), so a reply wakes nobody and the
 * caller returns as soon as it sees it, without the lock (the replier does
 * not touch a call it has ended).  Returns true so, else false with the
 * lock taken again. */
static bool spin_briefly(struct ipc_endpoint *e, struct ipc_call *call, uint64_t now,
			 uint64_t deadline, uint64_t *irq, struct thread **receiver)
{
	wake(*receiver);
	*receiver = NULL;
	spin_unlock_irqrestore(&e->lock, *irq);
	uint64_t until = deadline - now < ADAPTIVE_SPIN_NS ? deadline : now + ADAPTIVE_SPIN_NS;
	while (__atomic_load_n(&call->state, __ATOMIC_ACQUIRE) != IPC_CALL_DONE &&
	       clock_ns() < until)
		cpu_relax();
	if (__atomic_load_n(&call->state, __ATOMIC_ACQUIRE) == IPC_CALL_DONE)
		return true;
	*irq = spin_lock_irqsave(&e->lock);
	return false;
}

/* The caller (self, of process proc) blocks until its call is done, the
 * deadline or a signal, lock held on entry and on return unless *locked
 * comes back false (the reply seen while spinning, or handed back by the
 * replier).  receiver (blocked in receive, taken off the list) gets the CPU
 * first.  The call was queued or delivered under the lock, so it is not done
 * until this thread has dropped the lock once (blocked or spun). */
HOT int wait_sleeping_locked(struct ipc_endpoint *e, struct ipc_call *call, struct thread *self,
			     const struct process *proc, uint64_t now, uint64_t deadline,
			     uint64_t *irq, struct thread *receiver, bool *locked)
{
	if (e->receiver_cpus && !(e->receiver_cpus & (1ull << this_cpu_id()))) {
		call->waiter = NULL; /* it spins first: a reply meanwhile wakes nobody */
		if (spin_briefly(e, call, now, deadline, irq, &receiver)) {
			*locked = false;
			return call->result;
		}
		if (call->state == IPC_CALL_DONE)
			return call->result;
	}
	call->waiter = self; /* under the lock: a reply from now on wakes it */
	int result;
	for (;;) {
		if (proc_signals_interrupt(proc)) {
			result = withdraw_locked(e, call, -EINTR);
			break;
		}
		if (now >= deadline) {
			result = withdraw_locked(e, call, -ETIMEDOUT);
			break;
		}
		if (block_unlocked(e, irq, &receiver, now, wake_time(now, deadline), &call->state,
				   IPC_CALL_DONE)) {
			*locked = false; /* answered, and handed back by the replier */
			return call->result;
		}
		if (call->state == IPC_CALL_DONE) {
			result = call->result;
			break;
		}
		now = clock_ns_inline();
	}
	wake(receiver);
	return result;
}

static int wait_spinning(struct ipc_endpoint *e, struct ipc_call *call, uint64_t deadline)
{
	while (__atomic_load_n(&call->state, __ATOMIC_ACQUIRE) != IPC_CALL_DONE) {
		if (clock_ns() >= deadline) {
			uint64_t irq = spin_lock_irqsave(&e->lock);
			int result = withdraw_locked(e, call, -ETIMEDOUT);
			spin_unlock_irqrestore(&e->lock, irq);
			return result;
		}
		cpu_relax();
	}
	return call->result;
}

/* A caller that may not sleep is answered only from another CPU: true when
 * the endpoint's receiver may run on this CPU alone (lock held). */
static bool unservable_locked(const struct ipc_endpoint *e)
{
	uint64_t others = e->receiver_cpus & ~(1ull << this_cpu_id());
	return e->receiver_cpus && !others;
}

/* Can a call go straight to a receiver blocked in receive?  Only when
 * nothing is queued before it (lock held).  A closed endpoint has no
 * receivers (the close takes them all off, and a receive that finds it
 * closed never waits), so a call to one is queued, which fails it. */
static bool can_deliver_locked(const struct ipc_endpoint *e)
{
	return e->receivers && !e->count && e->calls_outstanding < IPC_QUEUE_MAX;
}

/* The call goes into the buffer of the most recent receiver blocked in
 * receive, as received (pending, with its token), and that receiver comes
 * off the list: no queue slot, no second copy.  Returns its thread, to be
 * handed the CPU or woken, or NULL when it polls (it is running). */
static struct thread *deliver_locked(struct ipc_endpoint *e, const struct ipc_message *message,
				     struct ipc_call *call, uint32_t sender)
{
	struct ipc_receiver *r = e->receivers;
	struct thread *t = r->wake;
	e->receivers = r->next;
	copy_message(r->buffer, message);
	struct ipc_message *m = r->buffer; /* a load again costs less than a register kept */
	m->sender = sender;
	m->token = take_pending_locked(e, call);
	e->calls_outstanding++;
	e->stats.delivered++; /* a call and a receive: ipc_get_stats counts it in both */
	e->last_caller_cpu = (int)this_cpu_id();
	__atomic_store_n(&r->delivered, 1, __ATOMIC_RELEASE); /* last: r may go once seen */
	return t;
}

JOINPOINT_DEFINE(ipc, call, int, struct ipc_endpoint *, endpoint, const struct ipc_message *,
		 message, struct ipc_message *, reply, uint64_t, timeout_ns)
{
	int error = check_message(endpoint, message);
	if (error || !reply)
		return error ? error : -EINVAL;
	uint64_t flags = read_rflags();
	struct thread *self = sleeper_with(flags);
	const struct process *proc = proc_current();
	struct ipc_call call; /* the rest is set as it goes (internal.h) */
	call.reply = reply;
	uint64_t now = clock_ns_inline(), deadline = deadline_after(now, timeout_ns);
	struct thread *receiver = NULL;
	uint64_t irq = spin_lock_irqsave_inline_with(&endpoint->lock, flags);
	uint32_t sender = sender_pid_of(self, proc);
	if (!self && unservable_locked(endpoint)) {
		endpoint->stats.unserved++;
		error = -EDEADLK;
	} else if (can_deliver_locked(endpoint)) {
		receiver = deliver_locked(endpoint, message, &call, sender);
	} else {
		error = enqueue_locked(endpoint, message, &call, sender);
		receiver = error ? NULL : pop_receiver_locked(endpoint);
	}
	if (error) {
		spin_unlock_irqrestore(&endpoint->lock, irq);
		return error;
	}
	if (self) {
		bool locked = true;
		error = wait_sleeping_locked(endpoint, &call, self, proc, now, deadline, &irq,
					     receiver, &locked);
		if (locked)
			spin_unlock_irqrestore(&endpoint->lock, irq);
		return error;
	}
	call.waiter = NULL; /* it spins: a reply wakes nobody */
	wake(receiver);
	spin_unlock_irqrestore(&endpoint->lock, irq);
	return wait_spinning(endpoint, &call, deadline);
}

/* ---- Receiving and replying ------------------------------------------------ */

/* Takes the head slot into *message; a call moves to the pending table. */
static void dequeue_locked(struct ipc_endpoint *e, struct ipc_message *message)
{
	struct ipc_slot *slot = &e->slots[e->head];
	copy_message(message, &slot->message);
	message->token = slot->call ? take_pending_locked(e, slot->call) : 0;
	e->head = (e->head + 1) % e->capacity;
	e->count--;
	e->stats.received++;
}

/* Takes self off `receivers` unless a waker did. */
static void remove_receiver_locked(struct ipc_endpoint *e, struct ipc_receiver *self)
{
	if (!self->thread || self->delivered)
		return; /* a delivery takes the receiver off and leaves its record as it was */
	for (struct ipc_receiver **p = &e->receivers; *p; p = &(*p)->next) {
		if (*p == self) {
			*p = self->next;
			break;
		}
	}
	self->thread = NULL;
}

enum wait_outcome {
	WAIT_NOTHING,           /* woken, lock held: look again */
	WAIT_DELIVERED,         /* a call is in the buffer, lock held */
	WAIT_DELIVERED_UNLOCKED /* a call is in the buffer, handed over: lock not held */
};

/* Queues the caller as a receiver into message and blocks (handing the CPU
 * to handoff). */
HOT enum wait_outcome wait_for_message(struct ipc_endpoint *e, struct thread *thread,
				       struct ipc_message *message, uint64_t *irq,
				       struct thread **handoff, uint64_t now, uint64_t until)
{
	struct ipc_receiver self = {
	    .next = e->receivers, .thread = thread, .buffer = message, .wake = thread};
	e->receivers = &self;
	e->receiver_cpus = thread_allowed_cpus(self.thread);
	if (block_unlocked(e, irq, handoff, now, until, &self.delivered, 1))
		return WAIT_DELIVERED_UNLOCKED;
	remove_receiver_locked(e, &self);
	return self.delivered ? WAIT_DELIVERED : WAIT_NOTHING;
}

/* Callers on another CPU: a receiver about to block polls for up to
 * ADAPTIVE_SPIN_NS first (lock dropped), so that a stream of calls from
 * there costs no idle wake-up of this CPU.  handoff, a caller answered on
 * another CPU, is woken first. */
static __attribute__((noinline)) bool poll_first_elsewhere(const struct ipc_endpoint *e,
							   const struct thread *handoff, int here)
{
	return e->last_caller_cpu >= 0 && (!handoff || thread_cpu(handoff) != (unsigned)here);
}

/* The round trip on one CPU asks one compare: the rest is out of line (the
 * compiler would otherwise compute both compares and branch once). */
HOT bool poll_first(const struct ipc_endpoint *e, const struct thread *handoff)
{
	int here = (int)this_cpu_id();
	return e->last_caller_cpu != here && poll_first_elsewhere(e, handoff, here);
}

/* Polls with the lock dropped, on `receivers` (with no thread to wake) so that a
 * call may be delivered straight into message meanwhile.  Returns as
 * wait_for_message; WAIT_DELIVERED_UNLOCKED when the delivery was seen
 * while polling (the caller set `delivered` last, under the lock, and does
 * not touch the record after it). */
static enum wait_outcome poll_briefly(struct ipc_endpoint *e, struct thread *thread,
				      struct ipc_message *message, uint64_t *irq, uint64_t now,
				      uint64_t deadline)
{
	struct ipc_receiver self = {
	    .next = e->receivers, .thread = thread, .buffer = message, .wake = NULL};
	e->receivers = &self;
	e->receiver_cpus = thread_allowed_cpus(self.thread);
	spin_unlock_irqrestore(&e->lock, *irq);
	uint64_t until = deadline - now < ADAPTIVE_SPIN_NS ? deadline : now + ADAPTIVE_SPIN_NS;
	while (!__atomic_load_n(&self.delivered, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&e->count, __ATOMIC_ACQUIRE) && !e->closed && clock_ns() < until)
		cpu_relax();
	if (__atomic_load_n(&self.delivered, __ATOMIC_ACQUIRE))
		return WAIT_DELIVERED_UNLOCKED;
	*irq = spin_lock_irqsave(&e->lock);
	remove_receiver_locked(e, &self);
	return self.delivered ? WAIT_DELIVERED : WAIT_NOTHING;
}

/* Takes the oldest queued message into message (0), or says why there is
 * none to wait for (-EPIPE, -EAGAIN: timeout_ns is 0), or 1: wait for one. */
HOT int receive_now_locked(struct ipc_endpoint *e, struct ipc_message *message, uint64_t timeout_ns)
{
	if (e->count) {
		dequeue_locked(e, message);
		return 0;
	}
	return e->closed ? -EPIPE : timeout_ns == 0 ? -EAGAIN : 1;
}

/* What a receiver does once its wait came back with outcome: 0 with a
 * message (*locked: whether the lock is still held), an error, or 1: wait
 * again (receive_now_locked). */
static inline __attribute__((always_inline)) int after_wait(struct ipc_endpoint *e,
							    struct ipc_message *message,
							    uint64_t timeout_ns,
							    enum wait_outcome outcome, bool *locked)
{
	if (outcome != WAIT_NOTHING) {
		*locked = outcome == WAIT_DELIVERED;
		return 0;
	}
	return receive_now_locked(e, message, timeout_ns);
}

/* The waits of receive_locked from now to deadline, lock held; may_poll
 * false once it polled (at most once).  A constant at each use: a flag
 * kept across the waits would take a stack slot and its loads. */
HOT int receive_waiting(struct ipc_endpoint *e, struct ipc_message *message, uint64_t timeout_ns,
			struct thread *self, uint64_t *irq, struct thread *handoff, bool *locked,
			uint64_t now, uint64_t deadline, bool may_poll);

/* receive_waiting whose receiver polls first (its last caller ran on another
 * CPU), then waits without polling again.  Out of line: a round trip on one
 * CPU never polls. */
static __attribute__((noinline)) int receive_polling(struct ipc_endpoint *e,
						     struct ipc_message *message,
						     uint64_t timeout_ns, struct thread *self,
						     uint64_t *irq, struct thread *handoff,
						     bool *locked, uint64_t now, uint64_t deadline)
{
	wake(handoff);
	enum wait_outcome outcome = poll_briefly(e, self, message, irq, now, deadline);
	int result = after_wait(e, message, timeout_ns, outcome, locked);
	if (result <= 0)
		return result;
	return receive_waiting(e, message, timeout_ns, self, irq, NULL, locked, clock_ns_inline(),
			       deadline, false);
}

HOT int receive_waiting(struct ipc_endpoint *e, struct ipc_message *message, uint64_t timeout_ns,
			struct thread *self, uint64_t *irq, struct thread *handoff, bool *locked,
			uint64_t now, uint64_t deadline, bool may_poll)
{
	int result;
	for (;;) {
		if (proc_signal_pending()) { /* one load: cheaper than a register kept */
			result = -EINTR;
			break;
		}
		if (now >= deadline || !self) {
			result = -ETIMEDOUT;
			break;
		}
		if (may_poll && poll_first(e, handoff))
			return receive_polling(e, message, timeout_ns, self, irq, handoff, locked,
					       now, deadline);
		enum wait_outcome outcome = wait_for_message(e, self, message, irq, &handoff, now,
							     wake_time(now, deadline));
		result = after_wait(e, message, timeout_ns, outcome, locked);
		if (result <= 0)
			break;
		now = clock_ns_inline();
	}
	wake(handoff); /* NULL once it blocked: the hand-off took it */
	return result;
}

/* The receive loop of self (NULL: the caller may not sleep), lock held on
 * entry and on return unless *locked comes back false (a call delivered by
 * a hand-off); handoff (a caller just answered) gets the CPU when this
 * blocks, or is woken at the end. */
HOT int receive_locked(struct ipc_endpoint *e, struct ipc_message *message, uint64_t timeout_ns,
		       struct thread *self, uint64_t *irq, struct thread *handoff, bool *locked)
{
	int result = receive_now_locked(e, message, timeout_ns);
	if (result <= 0) {
		wake(handoff);
		return result;
	}
	uint64_t now = clock_ns_inline(), deadline = deadline_after(now, timeout_ns);
	return receive_waiting(e, message, timeout_ns, self, irq, handoff, locked, now, deadline,
			       true);
}

JOINPOINT_DEFINE(ipc, receive, int, struct ipc_endpoint *, endpoint, struct ipc_message *, message,
		 uint64_t, timeout_ns)
{
	if (!endpoint || !message)
		return -EINVAL;
	struct thread *self = sleeper_with(read_rflags());
	bool locked = true;
	uint64_t irq = spin_lock_irqsave(&endpoint->lock);
	int result = receive_locked(endpoint, message, timeout_ns, self, &irq, NULL, &locked);
	if (locked)
		spin_unlock_irqrestore(&endpoint->lock, irq);
	return result;
}

/* Takes the pending call token names out of the table (lock held); NULL
 * when there is none: its entry is free, or holds a later call (the
 * sequence differs), or token is 0 (never issued). */
HOT struct ipc_call *take_back_pending_locked(struct ipc_endpoint *e, uint64_t token)
{
	unsigned index = token & (IPC_QUEUE_MAX - 1);
	struct ipc_call *call = e->pending[index];
	if (!call || e->pending_token[index] != token)
		return NULL;
	e->pending[index] = NULL;
	e->calls_outstanding--;
	return call;
}

/* Hands message to the call token names, lock held; *caller is the thread
 * blocked for it (NULL: it spins), to be woken.  Returns 0 or -ENOENT. */
HOT int reply_locked(struct ipc_endpoint *e, uint64_t token, const struct ipc_message *message,
		     uint32_t sender, struct thread **caller)
{
	struct ipc_call *call = take_back_pending_locked(e, token);
	if (!call)
		return -ENOENT;
	copy_message(call->reply, message);
	call->reply->token = token;
	call->reply->sender = sender;
	e->stats.replies++;
	*caller = finish_call(call, 0);
	return 0;
}

/* reply_locked with the answer given as its first two words (label 0, the
 * other words 0, no payload), written straight into the caller's reply:
 * no message is built to be copied. */
HOT int reply_words_locked(struct ipc_endpoint *e, uint64_t token, uint64_t word0, uint64_t word1,
			   uint32_t sender, struct thread **caller)
{
	struct ipc_call *call = take_back_pending_locked(e, token);
	if (!call)
		return -ENOENT;
	struct ipc_message *reply = call->reply;
	reply->label = 0;
	reply->words[0] = word0;
	reply->words[1] = word1;
	for (unsigned i = 2; i < IPC_WORDS; i++)
		reply->words[i] = 0;
	reply->length = 0;
	reply->token = token;
	reply->sender = sender;
	e->stats.replies++;
	*caller = finish_call(call, 0);
	return 0;
}

JOINPOINT_DEFINE(ipc, reply, int, struct ipc_endpoint *, endpoint, uint64_t, token,
		 const struct ipc_message *, message)
{
	int error = check_message(endpoint, message);
	if (error)
		return error;
	struct thread *caller = NULL;
	uint64_t irq = spin_lock_irqsave(&endpoint->lock);
	error = reply_locked(endpoint, token, message, sender_pid(), &caller);
	if (error)
		endpoint->stats.late_replies++;
	wake(caller);
	spin_unlock_irqrestore(&endpoint->lock, irq);
	return error;
}

JOINPOINT_DEFINE(ipc, reply_receive, int, struct ipc_endpoint *, endpoint, uint64_t, token,
		 const struct ipc_message *, reply, struct ipc_message *, message, uint64_t,
		 timeout_ns)
{
	int error = token ? check_message(endpoint, reply) : 0;
	if (error || !endpoint || !message)
		return error ? error : -EINVAL;
	uint64_t flags = read_rflags();
	struct thread *self = sleeper_with(flags), *caller = NULL;
	const struct process *proc = proc_current();
	bool locked = true;
	uint64_t irq = spin_lock_irqsave_inline_with(&endpoint->lock, flags);
	if (token && reply_locked(endpoint, token, reply, sender_pid_of(self, proc), &caller) < 0)
		endpoint->stats.late_replies++;
	error = receive_locked(endpoint, message, timeout_ns, self, &irq, caller, &locked);
	if (locked)
		spin_unlock_irqrestore(&endpoint->lock, irq);
	return error;
}

JOINPOINT_DEFINE(ipc, reply_words_receive, int, uint64_t, token, uint64_t, word0, uint64_t, word1,
		 struct ipc_message *, message, uint64_t, timeout_ns, struct ipc_endpoint *,
		 endpoint)
{
	if (!endpoint || !message)
		return -EINVAL;
	uint64_t flags = read_rflags();
	struct thread *self = sleeper_with(flags), *caller = NULL;
	const struct process *proc = proc_current();
	bool locked = true;
	uint64_t irq = spin_lock_irqsave_inline_with(&endpoint->lock, flags);
	if (token && reply_words_locked(endpoint, token, word0, word1, sender_pid_of(self, proc),
					&caller) < 0)
		endpoint->stats.late_replies++;
	int error = receive_locked(endpoint, message, timeout_ns, self, &irq, caller, &locked);
	if (locked)
		spin_unlock_irqrestore(&endpoint->lock, irq);
	return error;
}
