/*
 * The ipc suite: messages arrive whole and in order, a full queue drops and
 * counts, calls get their reply or their deadline, a closed endpoint fails
 * every waiter with -EPIPE, stale tokens match nothing, a caller that may
 * not sleep (advice) gets its reply from another CPU by spinning and fails
 * at once when the receiver may only run on its own CPU, and a caller that
 * may sleep is answered by a receiver on its own CPU (the direct switch),
 * within its deadline, or -EPIPE when the receiver goes away.
 */
#include "ipc/internal.h"

#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "time/time.h"

/* How long a test waits for a peer that will answer: a hang guard, never a
 * result (a busy host can stall QEMU for seconds).  The cases about
 * deadlines use short ones of their own. */
#define PEER_GUARD_NS (60 * NSEC_PER_SEC)

static struct ipc_message make_message(uint64_t label, const char *text)
{
	struct ipc_message m;
	memset(&m, 0, sizeof m);
	m.label = label;
	for (unsigned i = 0; i < IPC_WORDS; i++)
		m.words[i] = label * 100 + i;
	m.length = text ? strlen(text) + 1 : 0;
	if (text)
		memcpy(m.payload, text, m.length);
	return m;
}

/* Does a message sent come out whole, in order, marked as from the kernel? */
static void send_then_receive_in_order(struct ktest *t)
{
	struct ipc_endpoint *e = ipc_endpoint_create("test", 4);
	ASSERT_TRUE(t, e != NULL);
	struct ipc_message a = make_message(1, "first"), b = make_message(2, NULL), out;
	EXPECT_EQ(t, ipc_send(e, &a), 0);
	EXPECT_EQ(t, ipc_send(e, &b), 0);
	EXPECT_EQ(t, ipc_receive(e, &out, 0), 0);
	EXPECT_EQ(t, out.label, 1);
	EXPECT_EQ(t, out.words[5], 105);
	EXPECT_EQ(t, out.length, 6);
	EXPECT_TRUE(t, strcmp((char *)out.payload, "first") == 0);
	EXPECT_EQ(t, out.token, 0);
	EXPECT_EQ(t, out.sender, 0);
	EXPECT_EQ(t, ipc_receive(e, &out, 0), 0);
	EXPECT_EQ(t, out.label, 2);
	EXPECT_EQ(t, ipc_receive(e, &out, 0), -EAGAIN);
	ipc_endpoint_put(e);
}

/* What if one-way messages come faster than they are taken? */
static void full_queue_drops_and_counts(struct ktest *t)
{
	struct ipc_endpoint *e = ipc_endpoint_create("test", 2);
	ASSERT_TRUE(t, e != NULL);
	struct ipc_message m = make_message(7, NULL);
	EXPECT_EQ(t, ipc_send(e, &m), 0);
	EXPECT_EQ(t, ipc_send(e, &m), 0);
	EXPECT_EQ(t, ipc_send(e, &m), -EAGAIN);
	struct ipc_stats stats;
	ipc_get_stats(e, &stats);
	EXPECT_EQ(t, stats.sent, 2);
	EXPECT_EQ(t, stats.dropped, 1);
	EXPECT_EQ(t, stats.queued, 2);
	ipc_endpoint_put(e);
}

static void bad_arguments_are_refused(struct ktest *t)
{
	EXPECT_TRUE(t, ipc_endpoint_create("big", IPC_QUEUE_MAX + 1) == NULL);
	struct ipc_endpoint *e = ipc_endpoint_create(NULL, 0);
	ASSERT_TRUE(t, e != NULL);
	struct ipc_message m = make_message(1, NULL), r;
	m.length = IPC_PAYLOAD_MAX + 1;
	EXPECT_EQ(t, ipc_send(e, &m), -EINVAL);
	EXPECT_EQ(t, ipc_call(e, &m, &r, 1000), -EINVAL);
	EXPECT_EQ(t, ipc_reply(e, 1, &m), -EINVAL);
	m.length = 0;
	EXPECT_EQ(t, ipc_reply(e, 0, &m), -ENOENT);
	EXPECT_EQ(t, ipc_reply(e, 0x101, &m), -ENOENT);
	ipc_endpoint_put(e);
}

/* A server thread: answers `count` calls with label + 1 and "pong"; with
 * SERVE_CLOSE receives and closes; with SERVE_HOLD receives and never
 * replies; with SERVE_REPLY_RECEIVE answers through ipc_reply_receive; with
 * SERVE_REPLY_WORDS through ipc_reply_words_receive, the words (label + 1,
 * REPLY_WORD1). */
enum serve_mode { SERVE_REPLY, SERVE_CLOSE, SERVE_HOLD, SERVE_REPLY_RECEIVE, SERVE_REPLY_WORDS };
#define REPLY_WORD1 0x5eedull

struct server {
	struct ipc_endpoint *endpoint;
	uint64_t affinity; /* 0: anywhere */
	int started;
	int count;
	int mode;
	uint64_t reply_delay_ns;
	struct completion *reply_after; /* when set, each reply waits until it is signalled */
	bool wait_for_a_call;           /* receive only once a call is queued */
	int last_reply_result;
	int not_ping; /* messages received that were not make_message(_, "ping") */
};

/* Was m sent as make_message(label, "ping"), whole? */
static bool is_ping(const struct ipc_message *m)
{
	return m->length == 5 && strcmp((const char *)m->payload, "ping") == 0 &&
	       m->words[5] == m->label * 100 + 5;
}

/* The server loop of SERVE_REPLY_RECEIVE and SERVE_REPLY_WORDS: one call
 * per message. */
static int serve_reply_receive(struct server *s)
{
	struct ipc_message m, r;
	int error = ipc_receive(s->endpoint, &m, PEER_GUARD_NS);
	for (int i = 0; i < s->count && error == 0; i++) {
		s->not_ping += !is_ping(&m);
		r = make_message(m.label + 1, "pong");
		uint64_t timeout = i + 1 < s->count ? PEER_GUARD_NS : 0;
		error = s->mode == SERVE_REPLY_WORDS
			    ? ipc_reply_words_receive(m.token, m.label + 1, REPLY_WORD1, &m,
						      timeout, s->endpoint)
			    : ipc_reply_receive(s->endpoint, m.token, &r, &m, timeout);
		if (i + 1 == s->count && error == -EAGAIN)
			error = 0; /* nothing more was sent */
	}
	return error ? 1 : 0;
}

static int serve(void *arg)
{
	struct server *s = arg;
	if (s->affinity)
		thread_set_affinity(thread_current(), s->affinity);
	__atomic_store_n(&s->started, 1, __ATOMIC_RELEASE);
	for (struct ipc_stats stats = {0}; s->wait_for_a_call && !stats.queued;) {
		sched_sleep_ns(NSEC_PER_MSEC);
		ipc_get_stats(s->endpoint, &stats);
	}
	if (s->mode == SERVE_REPLY_RECEIVE || s->mode == SERVE_REPLY_WORDS)
		return serve_reply_receive(s);
	for (int i = 0; i < s->count; i++) {
		struct ipc_message m, r;
		if (ipc_receive(s->endpoint, &m, PEER_GUARD_NS) < 0)
			return 1;
		if (s->mode == SERVE_CLOSE) {
			ipc_endpoint_close(s->endpoint);
			return 0;
		}
		if (s->mode == SERVE_HOLD) {
			sched_sleep_ns(s->reply_delay_ns);
			return 0;
		}
		if (s->reply_delay_ns)
			sched_sleep_ns(s->reply_delay_ns);
		if (s->reply_after)
			completion_wait_timeout(s->reply_after, PEER_GUARD_NS);
		r = make_message(m.label + 1, "pong");
		s->last_reply_result = ipc_reply(s->endpoint, m.token, &r);
	}
	return 0;
}

/* Does a call come back with the owner's reply? */
static void call_gets_the_reply(struct ktest *t)
{
	struct server s = {.endpoint = ipc_endpoint_create("test", 4), .count = 3};
	ASSERT_TRUE(t, s.endpoint != NULL);
	struct thread *server = thread_create(serve, &s, "ipc-server", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, server != NULL);
	for (int i = 0; i < 3; i++) {
		struct ipc_message m = make_message(10 * i, "ping"), r;
		EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), 0);
		EXPECT_EQ(t, r.label, 10 * i + 1);
		EXPECT_TRUE(t, strcmp((char *)r.payload, "pong") == 0);
		EXPECT_NE(t, r.token, 0);
	}
	int status = -1;
	thread_join(server, &status);
	EXPECT_EQ(t, status, 0);
	struct ipc_stats stats;
	ipc_get_stats(s.endpoint, &stats);
	EXPECT_EQ(t, stats.calls, 3);
	EXPECT_EQ(t, stats.replies, 3);
	ipc_endpoint_put(s.endpoint);
}

/* What if nobody ever answers?  The deadline ends the call. */
static void call_times_out_without_receiver(struct ktest *t)
{
	struct ipc_endpoint *e = ipc_endpoint_create("test", 4);
	ASSERT_TRUE(t, e != NULL);
	struct ipc_message m = make_message(1, NULL), r;
	uint64_t start = clock_ns();
	EXPECT_EQ(t, ipc_call(e, &m, &r, 5 * NSEC_PER_MSEC), -ETIMEDOUT);
	EXPECT_TRUE(t, clock_ns() - start >= 5 * NSEC_PER_MSEC);
	/* The withdrawn call is still delivered, as one-way: no token. */
	EXPECT_EQ(t, ipc_receive(e, &m, 0), 0);
	EXPECT_EQ(t, m.token, 0);
	struct ipc_stats stats;
	ipc_get_stats(e, &stats);
	EXPECT_EQ(t, stats.timeouts, 1);
	ipc_endpoint_put(e);
}

/* A reply after the deadline must find nothing (the caller has returned).
 * The server replies only once the caller has seen its deadline pass, so
 * the order holds however the host stalls either thread. */
static void late_reply_finds_no_call(struct ktest *t)
{
	struct completion caller_returned;
	completion_init(&caller_returned, "ipc-late");
	struct server s = {.endpoint = ipc_endpoint_create("test", 4),
			   .count = 1,
			   .reply_after = &caller_returned};
	ASSERT_TRUE(t, s.endpoint != NULL);
	struct thread *server = thread_create(serve, &s, "ipc-late", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, server != NULL);
	struct ipc_message m = make_message(1, NULL), r;
	EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, 5 * NSEC_PER_MSEC), -ETIMEDOUT);
	completion_signal(&caller_returned);
	thread_join(server, NULL);
	EXPECT_EQ(t, s.last_reply_result, -ENOENT);
	ipc_endpoint_put(s.endpoint);
}

struct one_call {
	struct ipc_endpoint *endpoint;
	struct ipc_message reply;
	int result;
};

static int call_once(void *arg)
{
	struct one_call *c = arg;
	struct ipc_message m = make_message(7, "ping");
	c->result = ipc_call(c->endpoint, &m, &c->reply, PEER_GUARD_NS);
	return 0;
}

/* Only the token a call was given answers it: its entry under another
 * sequence, the entry's index alone, a neighbouring entry, 0 and a high bit
 * set find nothing (each a counted late reply), and the call still gets
 * the answer sent with its own. */
static void only_its_own_token_answers_a_call(struct ktest *t)
{
	struct one_call c = {.endpoint = ipc_endpoint_create("test", 4), .result = 1};
	ASSERT_TRUE(t, c.endpoint != NULL);
	struct thread *caller = thread_create(call_once, &c, "ipc-token", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, caller != NULL);
	struct ipc_message m, r = make_message(8, "pong");
	ASSERT_EQ(t, ipc_receive(c.endpoint, &m, PEER_GUARD_NS), 0);
	uint64_t token = m.token;
	EXPECT_NE(t, token, 0);
	uint64_t others[] = {token + IPC_QUEUE_MAX,       token + 256,
			     token & (IPC_QUEUE_MAX - 1), token ^ 1,
			     token | (1ull << 63),        0};
	for (unsigned i = 0; i < sizeof others / sizeof others[0]; i++)
		EXPECT_EQ(t, ipc_reply(c.endpoint, others[i], &r), -ENOENT);
	EXPECT_EQ(t, ipc_reply(c.endpoint, token, &r), 0);
	thread_join(caller, NULL);
	EXPECT_EQ(t, c.result, 0);
	EXPECT_EQ(t, c.reply.label, 8);
	struct ipc_stats stats;
	ipc_get_stats(c.endpoint, &stats);
	EXPECT_EQ(t, stats.late_replies, sizeof others / sizeof others[0]);
	EXPECT_EQ(t, stats.replies, 1);
	ipc_endpoint_put(c.endpoint);
}

/* A peer that goes away while a caller waits: -EPIPE, at once. */
static void close_fails_waiting_caller(struct ktest *t)
{
	struct server s = {
	    .endpoint = ipc_endpoint_create("test", 4), .count = 1, .mode = SERVE_CLOSE};
	ASSERT_TRUE(t, s.endpoint != NULL);
	struct thread *server = thread_create(serve, &s, "ipc-closer", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, server != NULL);
	struct ipc_message m = make_message(1, NULL), r;
	EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), -EPIPE);
	thread_join(server, NULL);
	EXPECT_EQ(t, ipc_send(s.endpoint, &m), -EPIPE);
	EXPECT_EQ(t, ipc_receive(s.endpoint, &m, 0), -EPIPE);
	EXPECT_TRUE(t, ipc_endpoint_is_closed(s.endpoint));
	ipc_endpoint_put(s.endpoint);
}

static int receive_once(void *arg)
{
	struct ipc_message m;
	return -ipc_receive(arg, &m, PEER_GUARD_NS);
}

/* A receiver blocked on an endpoint that closes is woken with -EPIPE. */
static void close_wakes_receiver(struct ktest *t)
{
	struct ipc_endpoint *e = ipc_endpoint_create("test", 4);
	ASSERT_TRUE(t, e != NULL);
	struct thread *receiver = thread_create(receive_once, e, "ipc-recv", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, receiver != NULL);
	sched_sleep_ns(5 * NSEC_PER_MSEC);
	ipc_endpoint_close(e);
	int status = 0;
	thread_join(receiver, &status);
	EXPECT_EQ(t, status, EPIPE);
	ipc_endpoint_put(e);
}

static void receive_times_out(struct ktest *t)
{
	struct ipc_endpoint *e = ipc_endpoint_create("test", 1);
	ASSERT_TRUE(t, e != NULL);
	struct ipc_message m;
	EXPECT_EQ(t, ipc_receive(e, &m, 2 * NSEC_PER_MSEC), -ETIMEDOUT);
	ipc_endpoint_put(e);
}

/* A caller that may not sleep (advice) spins: with the server on another
 * CPU it gets its reply; alone on one CPU it meets its deadline. */
static void call_without_sleeping(struct ktest *t)
{
	struct server s = {.endpoint = ipc_endpoint_create("test", 4), .count = 1};
	ASSERT_TRUE(t, s.endpoint != NULL);
	bool other_cpu = cpu_count > 1;
	struct thread *server = NULL;
	if (other_cpu) {
		s.affinity = 1u << 1; /* it blocks in receive there */
		server = thread_create(serve, &s, "ipc-spin", SCHED_PRIORITY_NORMAL);
		ASSERT_TRUE(t, server != NULL);
		/* wait until it sleeps in receive on CPU 1 */
		while (!__atomic_load_n(&s.started, __ATOMIC_ACQUIRE) ||
		       thread_state(server) != THREAD_BLOCKED)
			sched_sleep_ns(NSEC_PER_MSEC);
	}
	struct ipc_message m = make_message(5, NULL), r;
	uint64_t affinity = thread_affinity(thread_current());
	if (other_cpu)
		thread_set_affinity(thread_current(), 1u << 0); /* not the server's CPU */
	preempt_disable();
	/* on SMP only a guard: TCG may run the other vCPU late on a loaded host */
	uint64_t timeout = other_cpu ? PEER_GUARD_NS : 20 * NSEC_PER_MSEC;
	int result = ipc_call(s.endpoint, &m, &r, timeout);
	preempt_enable();
	thread_set_affinity(thread_current(), affinity);
	EXPECT_EQ(t, result, other_cpu ? 0 : -ETIMEDOUT);
	if (other_cpu) {
		EXPECT_EQ(t, r.label, 6);
		thread_join(server, NULL);
	}
	ipc_endpoint_put(s.endpoint);
}

/* Starts s's server pinned to the calling CPU and pins the caller there
 * too; returns once the server blocks in receive.  *saved gets the caller's
 * affinity back for unpin_caller. */
static struct thread *start_server_here(struct server *s, const char *name, uint64_t *saved)
{
	*saved = thread_affinity(thread_current());
	thread_set_affinity(thread_current(), 1ull << this_cpu_id());
	s->affinity = 1ull << this_cpu_id();
	struct thread *server = thread_create(serve, s, name, SCHED_PRIORITY_NORMAL);
	while (server && (!__atomic_load_n(&s->started, __ATOMIC_ACQUIRE) ||
			  thread_state(server) != THREAD_BLOCKED))
		sched_sleep_ns(NSEC_PER_MSEC);
	return server;
}

/* The direct switch: with the server on the caller's own CPU (the only one
 * on a one-CPU boot), a caller that may sleep hands it the CPU and gets
 * every answer, through ipc_reply_receive. */
static void call_answered_on_the_same_cpu(struct ktest *t)
{
	struct server s = {
	    .endpoint = ipc_endpoint_create("test", 4), .count = 8, .mode = SERVE_REPLY_RECEIVE};
	ASSERT_TRUE(t, s.endpoint != NULL);
	uint64_t saved;
	struct thread *server = start_server_here(&s, "ipc-same", &saved);
	ASSERT_TRUE(t, server != NULL);
	for (int i = 0; i < s.count; i++) {
		struct ipc_message m = make_message(10 + i, "ping"), r;
		EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), 0);
		EXPECT_EQ(t, r.label, 11 + i);
		EXPECT_EQ(t, thread_cpu(server), thread_cpu(thread_current()));
	}
	int status = -1;
	thread_join(server, &status);
	thread_set_affinity(thread_current(), saved);
	EXPECT_EQ(t, status, 0);
	struct ipc_stats stats;
	ipc_get_stats(s.endpoint, &stats);
	EXPECT_EQ(t, stats.replies, s.count);
	EXPECT_EQ(t, stats.timeouts, 0);
	ipc_endpoint_put(s.endpoint);
}

/* A receiver on the caller's CPU that takes the call and never answers:
 * the caller still returns at its deadline. */
static void deadline_holds_when_the_receiver_never_replies(struct ktest *t)
{
	struct server s = {.endpoint = ipc_endpoint_create("test", 4),
			   .count = 1,
			   .mode = SERVE_HOLD,
			   .reply_delay_ns = 40 * NSEC_PER_MSEC};
	ASSERT_TRUE(t, s.endpoint != NULL);
	uint64_t saved;
	struct thread *server = start_server_here(&s, "ipc-hold", &saved);
	ASSERT_TRUE(t, server != NULL);
	struct ipc_message m = make_message(1, NULL), r;
	uint64_t start = clock_ns();
	EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, 5 * NSEC_PER_MSEC), -ETIMEDOUT);
	EXPECT_TRUE(t, clock_ns() - start >= 5 * NSEC_PER_MSEC);
	thread_join(server, NULL);
	thread_set_affinity(thread_current(), saved);
	struct ipc_stats stats;
	ipc_get_stats(s.endpoint, &stats);
	EXPECT_EQ(t, stats.timeouts, 1);
	EXPECT_EQ(t, stats.delivered, 1); /* the fast path took it: the deadline still holds */
	ipc_endpoint_put(s.endpoint);
}

/* The receiver goes away (its process was killed: the last descriptor
 * closes the endpoint) while the call is taken: -EPIPE, not the deadline. */
static void receiver_gone_mid_call_gives_epipe(struct ktest *t)
{
	struct server s = {
	    .endpoint = ipc_endpoint_create("test", 4), .count = 1, .mode = SERVE_CLOSE};
	ASSERT_TRUE(t, s.endpoint != NULL);
	uint64_t saved;
	struct thread *server = start_server_here(&s, "ipc-gone", &saved);
	ASSERT_TRUE(t, server != NULL);
	struct ipc_message m = make_message(1, NULL), r;
	EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), -EPIPE);
	thread_join(server, NULL);
	thread_set_affinity(thread_current(), saved);
	struct ipc_stats stats;
	ipc_get_stats(s.endpoint, &stats);
	EXPECT_EQ(t, stats.delivered, 1); /* taken by the fast path, then the close */
	EXPECT_EQ(t, stats.peer_gone, 1);
	ipc_endpoint_put(s.endpoint);
}

/* The fast path: a call that finds the receiver blocked in receive (here
 * on the caller's CPU, answering with ipc_reply_receive, which leaves it
 * blocked in receive again for the next call) goes straight into its
 * buffer, whole, and the reply comes back whole. */
static void call_delivered_straight_to_a_waiting_receiver(struct ktest *t)
{
	struct server s = {
	    .endpoint = ipc_endpoint_create("test", 4), .count = 6, .mode = SERVE_REPLY_RECEIVE};
	ASSERT_TRUE(t, s.endpoint != NULL);
	uint64_t saved;
	struct thread *server = start_server_here(&s, "ipc-fast", &saved);
	ASSERT_TRUE(t, server != NULL);
	for (int i = 0; i < s.count; i++) {
		struct ipc_message m = make_message(20 + i, "ping"), r;
		EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), 0);
		EXPECT_EQ(t, r.label, 21 + i);
		EXPECT_TRUE(t, strcmp((char *)r.payload, "pong") == 0);
	}
	int status = -1;
	thread_join(server, &status);
	thread_set_affinity(thread_current(), saved);
	EXPECT_EQ(t, status, 0);
	EXPECT_EQ(t, s.not_ping, 0);
	struct ipc_stats stats;
	ipc_get_stats(s.endpoint, &stats);
	EXPECT_EQ(t, stats.delivered, s.count);
	/* counted once when delivered, a call and a receive in the stats */
	EXPECT_EQ(t, stats.calls, s.count);
	EXPECT_EQ(t, stats.received, s.count);
	EXPECT_EQ(t, stats.replies, s.count);
	EXPECT_EQ(t, stats.queued, 0);
	ipc_endpoint_put(s.endpoint);
}

/* The hand-off's fast path both ways: with the server blocked in receive on
 * the caller's CPU, each call switches straight to it and each
 * ipc_reply_receive straight back (the CPU counts them), and the time the
 * server ran is charged to it at those switches. */
static void same_cpu_round_trip_is_a_direct_switch_both_ways(struct ktest *t)
{
	struct server s = {
	    .endpoint = ipc_endpoint_create("test", 4), .count = 8, .mode = SERVE_REPLY_RECEIVE};
	ASSERT_TRUE(t, s.endpoint != NULL);
	uint64_t saved;
	struct thread *server = start_server_here(&s, "ipc-direct", &saved);
	ASSERT_TRUE(t, server != NULL);
	struct cpu_stats before, after;
	struct thread_stats server_before, server_after;
	sched_get_cpu_stats(this_cpu_id(), &before);
	thread_get_stats(server, &server_before);
	for (int i = 0; i < s.count; i++) {
		struct ipc_message m = make_message(30 + i, "ping"), r;
		EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), 0);
		EXPECT_EQ(t, r.label, 31 + i);
	}
	sched_get_cpu_stats(this_cpu_id(), &after);
	thread_get_stats(server, &server_after);
	/* Each call in, each answer but the last (its receive does not wait)
	 * back; a tick that made something else ready may send one the
	 * general way, never many. */
	EXPECT_TRUE(t, after.direct_switches - before.direct_switches >= 2 * (uint64_t)s.count - 3);
	EXPECT_TRUE(t, server_after.switches - server_before.switches >= (uint64_t)s.count);
	EXPECT_TRUE(t, server_after.run_ns > server_before.run_ns);
	int status = -1;
	thread_join(server, &status);
	thread_set_affinity(thread_current(), saved);
	EXPECT_EQ(t, status, 0);
	ipc_endpoint_put(s.endpoint);
}

/* An answer in two words (ipc_reply_words_receive, the monitor's): does the
 * caller get exactly them, every other word and the length cleared over
 * what its reply buffer held, with the token and a kernel sender (0), and
 * is a token that names no call a counted late reply? */
static void reply_words_receive_answers_with_exactly_two_words(struct ktest *t)
{
	struct server s = {
	    .endpoint = ipc_endpoint_create("test", 4), .count = 3, .mode = SERVE_REPLY_WORDS};
	ASSERT_TRUE(t, s.endpoint != NULL);
	uint64_t saved;
	struct thread *server = start_server_here(&s, "ipc-words", &saved);
	ASSERT_TRUE(t, server != NULL);
	for (int i = 0; i < s.count; i++) {
		struct ipc_message m = make_message(40 + i, "ping"), r;
		memset(&r, 0xa5, sizeof r);
		EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), 0);
		EXPECT_EQ(t, r.label, 0);
		EXPECT_EQ(t, r.words[0], 41 + i);
		EXPECT_EQ(t, r.words[1], REPLY_WORD1);
		for (unsigned w = 2; w < IPC_WORDS; w++)
			EXPECT_EQ(t, r.words[w], 0);
		EXPECT_EQ(t, r.length, 0);
		EXPECT_EQ(t, r.sender, 0);
		EXPECT_NE(t, r.token, 0);
	}
	int status = -1;
	thread_join(server, &status);
	thread_set_affinity(thread_current(), saved);
	EXPECT_EQ(t, status, 0);
	EXPECT_EQ(t, s.not_ping, 0);
	struct ipc_message m;
	EXPECT_EQ(t, ipc_reply_words_receive(0x12345601, 1, 2, &m, 0, s.endpoint), -EAGAIN);
	EXPECT_EQ(t, ipc_reply_words_receive(0, 1, 2, NULL, 0, s.endpoint), -EINVAL);
	struct ipc_stats stats;
	ipc_get_stats(s.endpoint, &stats);
	EXPECT_EQ(t, stats.replies, 3);
	EXPECT_EQ(t, stats.late_replies, 1);
	ipc_endpoint_put(s.endpoint);
}

/* A receiver blocked on this CPU whose affinity changed since it blocked
 * (now another CPU only) is not switched to: the hand-off wakes it where
 * it may run, the caller blocks, and the call still gets its answer. */
static void receiver_moved_off_this_cpu_is_woken_not_switched_to(struct ktest *t)
{
	if (cpu_count < 2) {
		ktest_skip(t, "one CPU");
		return;
	}
	struct server s = {
	    .endpoint = ipc_endpoint_create("test", 4), .count = 1, .mode = SERVE_REPLY_RECEIVE};
	ASSERT_TRUE(t, s.endpoint != NULL);
	uint64_t saved;
	struct thread *server = start_server_here(&s, "ipc-moved", &saved);
	ASSERT_TRUE(t, server != NULL);
	unsigned here = this_cpu_id(), there = here == 0 ? 1 : 0;
	EXPECT_EQ(t, thread_set_affinity(server, 1ull << there), 0);
	struct cpu_stats before, after;
	sched_get_cpu_stats(here, &before);
	struct ipc_message m = make_message(40, "ping"), r;
	EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), 0);
	EXPECT_EQ(t, r.label, 41);
	EXPECT_EQ(t, this_cpu_id(), here); /* pinned: never pulled to the server's CPU */
	sched_get_cpu_stats(here, &after);
	EXPECT_EQ(t, after.direct_switches, before.direct_switches);
	EXPECT_EQ(t, thread_cpu(server), there);
	int status = -1;
	thread_join(server, &status);
	thread_set_affinity(thread_current(), saved);
	EXPECT_EQ(t, status, 0);
	ipc_endpoint_put(s.endpoint);
}

/* Calls from another CPU to a server answering with ipc_reply_receive:
 * after each answer the server polls for the next call (its last caller
 * ran elsewhere), and a call that comes meanwhile goes straight into its
 * buffer, one that comes later into the queue or to it blocked.  Whichever
 * way each went, every call arrives whole and is answered once. */
static void calls_from_another_cpu_arrive_whole(struct ktest *t)
{
	if (cpu_count < 2) {
		ktest_skip(t, "one CPU");
		return;
	}
	struct server s = {.endpoint = ipc_endpoint_create("test", 4),
			   .affinity = 1u << 1,
			   .count = 16,
			   .mode = SERVE_REPLY_RECEIVE};
	ASSERT_TRUE(t, s.endpoint != NULL);
	uint64_t saved = thread_affinity(thread_current());
	thread_set_affinity(thread_current(), 1u << 0);
	struct thread *server = thread_create(serve, &s, "ipc-other", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, server != NULL);
	for (int i = 0; i < s.count; i++) {
		struct ipc_message m = make_message(40 + i, "ping"), r;
		EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), 0);
		EXPECT_EQ(t, r.label, 41 + i);
	}
	int status = -1;
	thread_join(server, &status);
	thread_set_affinity(thread_current(), saved);
	EXPECT_EQ(t, status, 0);
	EXPECT_EQ(t, s.not_ping, 0);
	struct ipc_stats stats;
	ipc_get_stats(s.endpoint, &stats);
	EXPECT_EQ(t, stats.received, s.count);
	EXPECT_EQ(t, stats.replies, s.count);
	EXPECT_TRUE(t, stats.delivered <= stats.received);
	EXPECT_EQ(t, stats.queued, 0);
	ipc_endpoint_put(s.endpoint);
}

/* The slow path: no receiver waits when the call comes (the server starts
 * receiving once it is queued), so it is taken from the queue. */
static void call_queued_when_no_receiver_waits(struct ktest *t)
{
	struct server s = {.endpoint = ipc_endpoint_create("test", 4),
			   .count = 1,
			   .mode = SERVE_REPLY_RECEIVE,
			   .wait_for_a_call = true};
	ASSERT_TRUE(t, s.endpoint != NULL);
	struct thread *server = thread_create(serve, &s, "ipc-late", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, server != NULL);
	while (!__atomic_load_n(&s.started, __ATOMIC_ACQUIRE))
		sched_sleep_ns(NSEC_PER_MSEC);
	struct ipc_message m = make_message(30, "ping"), r;
	EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), 0);
	EXPECT_EQ(t, r.label, 31);
	int status = -1;
	thread_join(server, &status);
	EXPECT_EQ(t, status, 0);
	EXPECT_EQ(t, s.not_ping, 0);
	struct ipc_stats stats;
	ipc_get_stats(s.endpoint, &stats);
	EXPECT_EQ(t, stats.delivered, 0);
	EXPECT_EQ(t, stats.received, 1);
	EXPECT_EQ(t, stats.replies, 1);
	ipc_endpoint_put(s.endpoint);
}

/* A caller that may not sleep, whose receiver may only run on the caller's
 * CPU: refused at once (-EDEADLK, counted), nothing queued. */
static void call_that_cannot_be_served_fails_fast(struct ktest *t)
{
	struct server s = {.endpoint = ipc_endpoint_create("test", 4), .count = 1};
	ASSERT_TRUE(t, s.endpoint != NULL);
	uint64_t saved;
	struct thread *server = start_server_here(&s, "ipc-unserved", &saved);
	ASSERT_TRUE(t, server != NULL);
	struct ipc_message m = make_message(3, NULL), r;
	preempt_disable();
	int result = ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS);
	preempt_enable();
	struct ipc_stats stats;
	ipc_get_stats(s.endpoint, &stats);
	EXPECT_EQ(t, result, -EDEADLK);
	EXPECT_EQ(t, stats.unserved, 1);
	EXPECT_EQ(t, stats.calls, 0);
	EXPECT_EQ(t, ipc_call(s.endpoint, &m, &r, PEER_GUARD_NS), 0); /* sleeping: served */
	thread_join(server, NULL);
	thread_set_affinity(thread_current(), saved);
	ipc_endpoint_put(s.endpoint);
}

static void join_points_are_declared(struct ktest *t)
{
	EXPECT_TRUE(t, jp_find("ipc.send") != NULL);
	EXPECT_TRUE(t, jp_find("ipc.call") != NULL);
	EXPECT_TRUE(t, jp_find("ipc.receive") != NULL);
	EXPECT_TRUE(t, jp_find("ipc.reply") != NULL);
	EXPECT_TRUE(t, jp_find("ipc.reply_receive") != NULL);
	EXPECT_TRUE(t, jp_find("ipc.reply_words_receive") != NULL);
	EXPECT_TRUE(t, jp_find("sched.wakeup_next") != NULL);
}

KTEST_SUITE(ipc, KTEST_CASE(send_then_receive_in_order), KTEST_CASE(full_queue_drops_and_counts),
	    KTEST_CASE(bad_arguments_are_refused), KTEST_CASE(call_gets_the_reply),
	    KTEST_CASE(call_times_out_without_receiver), KTEST_CASE(late_reply_finds_no_call),
	    KTEST_CASE(only_its_own_token_answers_a_call), KTEST_CASE(close_fails_waiting_caller),
	    KTEST_CASE(close_wakes_receiver), KTEST_CASE(receive_times_out),
	    KTEST_CASE(call_without_sleeping), KTEST_CASE(call_answered_on_the_same_cpu),
	    KTEST_CASE(deadline_holds_when_the_receiver_never_replies),
	    KTEST_CASE(receiver_gone_mid_call_gives_epipe),
	    KTEST_CASE(call_that_cannot_be_served_fails_fast),
	    KTEST_CASE(call_delivered_straight_to_a_waiting_receiver),
	    KTEST_CASE(same_cpu_round_trip_is_a_direct_switch_both_ways),
	    KTEST_CASE(reply_words_receive_answers_with_exactly_two_words),
	    KTEST_CASE(receiver_moved_off_this_cpu_is_woken_not_switched_to),
	    KTEST_CASE(call_queued_when_no_receiver_waits),
	    KTEST_CASE(calls_from_another_cpu_arrive_whole), KTEST_CASE(join_points_are_declared));
