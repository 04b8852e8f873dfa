/*
 * monitor: the process the kernel starts for aspects bound `shm` or `msg`.
 * It attaches an IPC endpoint to the kernel (ms_scope_attach), then loops:
 * messages first (LOAD / UNLOAD / FLUSH from the kernel's linker, EVENT from
 * `msg` join points, answered when they are calls), then the `shm` rings of
 * every CPU, read in place from the channel the kernel maps into it
 * (ms_tel_map: acquire load of the producer's head, release store of our
 * position; ms_tel_read only if mapping failed), running the aspect's advice once per event.  A
 * FLUSH drains the rings before it reports the aspect's counters, so counts
 * handed back include every event written before the binding was unwoven.
 *
 * One system call per message: ms_scope_reply_receive hands the answer to the
 * last call back (two words, in registers) and waits for the next message on
 * the attached endpoint, which it receives into the inbox the attach mapped
 * (read in place, not copied out), and when it blocks the CPU goes straight back to the
 * caller it answered (on one CPU a synchronous event is two switches).  While
 * an aspect's events come through the rings (shm: the kernel says so when it
 * loads the aspect) it never blocks longer than POLL_NS while the rings bring
 * records, and drains the rings after every wait that brought no call and
 * every DRAIN_EVERY calls, so ring records run within about that time even
 * under a stream of calls; while the rings stay empty the wait doubles up to
 * IDLE_POLL_NS, and a record or a message brings it back to POLL_NS.  A
 * monitor whose aspects take only messages (`msg`), or that has none, waits
 * for the next message alone: it does not wake while nothing is sent.  If
 * the kernel's side goes away it exits.
 */
#include <stdio.h>
#include <string.h>

#include <microscope/syscall.h>

#include "monitor.h"
#include "uapi/ipc.h"
#include "uapi/telemetry.h"

#define POLL_NS      (2 * 1000 * 1000)
#define IDLE_POLL_NS (64 * 1000 * 1000)
#define WAIT_FOREVER UINT64_MAX /* the kernel's deadline saturates */
#define DRAIN_EVERY  32
#define MAX_CPUS     64

static int endpoint;
static int channel;
static uint8_t ring_buffer[16 * 1024] __attribute__((aligned(16)));
static struct tel_map map; /* map.cpus == 0: not mapped */

static unsigned long records_run; /* since the start: tells a drain that found some */

static void run_records(const uint8_t *data, long bytes)
{
	for (long at = 0; at < bytes;) {
		const struct tel_record *r = (const void *)(data + at);
		if (r->type == SCOPE_RECORD_EVENT &&
		    tel_record_payload_bytes(r) >= sizeof(struct scope_event)) {
			struct scope_event event;
			memcpy(&event, tel_record_payload(r), sizeof event);
			struct ms_ctx ctx;
			monitor_run_event(&event, &ctx);
			records_run++;
		}
		at += (long)tel_record_bytes(r);
	}
}

/* Runs what CPU cpu's mapped ring holds and hands the room back. */
static void drain_mapped(unsigned cpu)
{
	const uint8_t *ring = (const uint8_t *)(map.base + cpu * map.stride);
	const struct tel_ring_header *header = (const void *)ring;
	struct tel_ring_position *position = (void *)(ring + map.position_offset);
	const uint8_t *data = ring + map.data_offset;
	uint64_t head = __atomic_load_n(&header->head, __ATOMIC_ACQUIRE);
	uint64_t tail = position->tail;
	while (tail != head) {
		const struct tel_record *r = (const void *)(data + (tail & (map.size - 1)));
		uint64_t size = tel_record_bytes(r);
		if (size == 0 || size > head - tail) {
			tail = head; /* cannot happen with a sound producer */
			break;
		}
		run_records((const uint8_t *)r, r->type == TEL_TYPE_PAD ? 0 : (long)size);
		tail += size;
	}
	__atomic_store_n(&position->tail, tail, __ATOMIC_RELEASE);
}

static void drain_rings(void)
{
	if (map.cpus) {
		for (unsigned cpu = 0; cpu < map.cpus; cpu++)
			drain_mapped(cpu);
		return;
	}
	for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++) {
		long n;
		while ((n = ms_syscall6(__NR_ms_tel_read, channel, cpu, (long)ring_buffer,
					sizeof ring_buffer, 0, 0)) > 0)
			run_records(ring_buffer, n);
		if (n < 0)
			break; /* past the last CPU */
	}
}

static long flush(uint32_t id)
{
	drain_rings();
	struct monitor_aspect *a = monitor_aspect(id);
	if (!a)
		return -2;
	long error = ms_syscall3(__NR_ms_scope_report, id, (long)&a->counters, 0);
	if (error == 0)
		memset(&a->counters, 0, sizeof a->counters);
	return error;
}

/* Are any linked aspect's events in the rings?  Only a LOAD or an UNLOAD
 * changes it, so it is worked out there, not on every message; so is the
 * wait after a message, which depends on nothing else. */
static bool rings_in_use;
static uint64_t wait_after_message = WAIT_FOREVER;

static void note_rings_in_use(void)
{
	rings_in_use = monitor_rings_in_use();
	wait_after_message = rings_in_use ? POLL_NS : WAIT_FOREVER;
}

/* LOAD, UNLOAD, FLUSH and anything unknown: the rare messages.  Returns the
 * first word of the answer (the second is 0). */
static __attribute__((noinline)) uint64_t handle_control(const struct ipc_message *m)
{
	uint32_t id = (uint32_t)m->words[0];
	switch (m->label) {
	case SCOPE_MSG_LOAD: {
		int error = monitor_link(id);
		if (!error && m->words[1])
			monitor_aspect(id)->rings = true;
		if (error)
			printf("monitor: cannot link aspect %u: %s\n", id,
			       monitor_aspect(id) ? "" : "see the kernel log");
		note_rings_in_use();
		return (uint64_t)(int64_t)error;
	}
	case SCOPE_MSG_UNLOAD:
		monitor_unlink(id);
		note_rings_in_use();
		return 0;
	case SCOPE_MSG_FLUSH: return (uint64_t)flush(id);
	default: return (uint64_t)-22;
	}
}

/* Runs message m and sets the two words the next ms_scope_reply_receive
 * answers it with.  An event is tested for first: it is nearly every
 * message. */
static inline void handle(const struct ipc_message *m, uint64_t reply[2])
{
	if (__builtin_expect(m->label == SCOPE_MSG_EVENT, 1)) {
		/* In place: the payload is 8-byte aligned and stays put until
		 * the next receive. */
		const struct scope_event *event = (const void *)m->payload;
		struct ms_ctx ctx;
		monitor_run_event(event, &ctx);
		reply[0] = ctx.replied ? 1 : 0;
		reply[1] = (uint64_t)ctx.reply;
		return;
	}
	reply[0] = handle_control(m);
	reply[1] = 0;
}

/* After a wait that brought nothing: the rings are drained, and the next
 * wait is POLL_NS if they held records, else twice this one's up to
 * IDLE_POLL_NS. */
static uint64_t drain_after_quiet_wait(uint64_t wait_ns)
{
	unsigned long before = records_run;
	drain_rings();
	if (records_run != before)
		return POLL_NS;
	return wait_ns < IDLE_POLL_NS ? wait_ns * 2 : wait_ns;
}

int main(void)
{
	endpoint = (int)ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	if (endpoint < 0) {
		printf("monitor: no endpoint (error %d)\n", endpoint);
		return 1;
	}
	channel = (int)ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0) {
		printf("monitor: cannot attach (error %d)\n", channel);
		return 1;
	}
	if (ms_syscall3(__NR_ms_tel_map, channel, (long)&map, 0) != 0)
		map.cpus = 0;
	/* The inbox the attach mapped: each message is read there in place. */
	const struct ipc_message *m = (const void *)SCOPE_INBOX_ADDRESS;
	/* The answer to the last call, sent by the next ms_scope_reply_receive
	 * in registers. */
	uint64_t token = 0, reply[2] = {0, 0}, wait_ns = POLL_NS;
	uint64_t wait = wait_after_message;
	for (unsigned calls = 0;;) {
		long error = ms_syscall6(__NR_ms_scope_reply_receive, (long)token, (long)reply[0],
					 (long)reply[1], (long)m, (long)wait, 0);
		if (error == 0) {
			handle(m, reply);
			token = m->token; /* a call: answered by the next reply_receive */
			wait_ns = POLL_NS;
			wait = wait_after_message; /* read after handle: a LOAD changes it */
			if (!token || ++calls % DRAIN_EVERY == 0)
				drain_rings();
			continue;
		}
		if (error != -110 && error != -11)
			return 1; /* -EPIPE, -EINTR: the kernel side is gone */
		token = 0;
		wait_ns = drain_after_quiet_wait(wait_ns);
		wait = rings_in_use ? wait_ns : WAIT_FOREVER;
	}
}
