/*
 * A trace session: start turns the stream on (trace points, the recorder on
 * the join points of its patterns, the names of the threads already there),
 * a drain thread moves each CPU's records into CTF packets for the sink, and
 * stop turns everything off, waits a grace period (so no CPU still writes a
 * record), drains what is left and sends END with the counts.
 *
 * A flight-recorder session has no drainer: its rings keep the newest
 * records, overwriting the oldest, and trace_snapshot pauses recording
 * (a grace period: no writer left), moves what the rings hold into packets,
 * and resumes.  A snapshot starts each CPU at its first record with a full
 * time (the ones before it are dropped: at most an eighth of the ring).
 *
 * The channels (one per mode, TRACE_RING_BYTES per CPU) are made once and
 * kept for good, so a trace point that read the channel just before stop
 * still writes into live memory.  Counts are taken against the channel's totals at
 * start: recorded = written + refused; delivered = sealed into packets the
 * sink took; dropped = refused by a full ring + in packets the sink refused
 * (in flight-recorder mode: every record not delivered by a snapshot).
 */
#include "trace/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "smp/smp.h"
#include "telemetry/telemetry.h"
#include "telemetry/tracepoint.h"
#include "time/time.h"
#include "trace/ctf.h"

#define TRACE_RING_BYTES (512 * 1024)
/* The packet buffer: a header and a whole ring (a snapshot takes it all). */
#define PACKET_PAGES (TRACE_RING_BYTES / PAGE_SIZE + 1)
/* A stream packet's records at most (16 of the console's 4 KiB transmit
 * descriptors, copied or lent); a ring that holds more is read in walks. */
#define PACKET_RECORDS (64 * 1024)
/* A packet lent to a sink that reads it in place: a header and PACKET_RECORDS
 * (records a walk copies); records lent where they lie, as many. */
#define LENT_PACKET_PAGES (PACKET_RECORDS / PAGE_SIZE + 1)
/* The drain thread's pauses.  A ring read before it holds a packet is taken
 * without a walk (a walk reads and copies every record), and a
 * pass costs a wake-up, two switches and a frame per stream, so a slow
 * stream is read less often: each pause is the last one scaled by how far
 * the fullest ring's bytes since were from DRAIN_FILL, within
 * DRAIN_BUSY_NS..DRAIN_IDLE_NS (the bytes, not the pause asked for, set
 * the next).  A pass that found nothing waits
 * DRAIN_IDLE_NS; one that found half a packet or more goes again at once. */
#define DRAIN_IDLE_NS (5 * 1000 * 1000)
#define DRAIN_BUSY_NS (1000 * 1000)
#define DRAIN_FILL    (PACKET_RECORDS * 3 / 8)

struct session {
	bool running;
	bool flight;                     /* flight recorder: no drainer, snapshots on request */
	bool stacks_only;                /* the trace map's stacks and their system calls only */
	struct tel_channel *channels[2]; /* stream, flight recorder: made once */
	volatile bool stopping;
	const struct trace_sink *sink;
	struct tel_channel *channel;
	int handles[2 * TRACE_PATTERNS_MAX];
	unsigned handle_count;
	struct ctf_stream streams[MAX_CPUS];
	uint64_t base_dropped[MAX_CPUS];
	struct tel_ring_stats base;
	uint8_t *packet;
	/* A stream's packets for a sink that takes them without a copy
	 * (frame_lent): the header in a buffer per CPU, the records where they
	 * lie in the ring (or copied after the header when a walk reads them);
	 * both untouched, the ring's room not freed, until the sink settles. */
	uint8_t *lent_packets[MAX_CPUS];
	struct tel_ring_lent lent[MAX_CPUS];
	bool lent_pending[MAX_CPUS]; /* lent[cpu] holds records to release */
	bool lending;                /* this session lends its packets */
	struct thread *drainer;
	bool drain_again; /* the last pass sealed half a copied packet or more, or walked */
	uint64_t fullest; /* the most bytes of records one ring gave in this pass */
	uint64_t delivered, refused_by_sink;
	struct trace_end final;
};

static struct session session;
static struct mutex start_stop = MUTEX_INIT(start_stop, "trace.session");

static const char *joinpoint_name(unsigned index, void *arg)
{
	return jp_at(index)->name;
}

static void new_uuid(uint8_t uuid[16])
{
	uint64_t a = rdtsc() * 0x9e3779b97f4a7c15ULL, b = (a ^ clock_ns()) * 0xbf58476d1ce4e5b9ULL;
	memcpy(uuid, &a, 8);
	memcpy(uuid + 8, &b, 8);
	uuid[6] = (uint8_t)((uuid[6] & 0x0f) | 0x40); /* version 4 */
	uuid[8] = (uint8_t)((uuid[8] & 0x3f) | 0x80);
}

/* Writes the metadata and hands it to the sink. */
static int send_metadata(const uint8_t uuid[16])
{
	struct ctf_trace trace = {
	    .clock_hz = clock_tsc_hz(), .joinpoints = jp_count(), .joinpoint_name = joinpoint_name};
	memcpy(trace.uuid, uuid, 16);
	struct ctf_text text = {0};
	ctf_write_metadata(&text, &trace);
	size_t pages = (text.length + 1 + PAGE_SIZE - 1) / PAGE_SIZE;
	text.buffer = mm_alloc_pages(pages, PAGE_SIZE);
	if (!text.buffer)
		return -ENOMEM;
	text.size = pages * PAGE_SIZE;
	text.length = 0;
	ctf_write_metadata(&text, &trace);
	int error = session.sink->frame(session.sink->context, TRACE_FRAME_METADATA, 0, text.buffer,
					(uint32_t)text.length);
	mm_free_pages(text.buffer, pages);
	return error;
}

static uint64_t ring_dropped(unsigned cpu)
{
	struct tel_ring_stats stats;
	return tel_channel_get_stats(session.channel, cpu, &stats) ? 0 : stats.dropped;
}

/* The bytes of records before the first one with a full time: a stream's
 * first packet must start there (they are dropped). */
static uint64_t untimed_bytes(const uint8_t *records, int64_t bytes)
{
	int64_t at = 0;
	while (at < bytes && ((const struct tel_record *)(records + at))->kind != TEL_EXTENDED)
		at += (int64_t)tel_record_bytes((const void *)(records + at));
	return (uint64_t)(at < bytes ? at : bytes);
}

/* Reads what a flight recorder's CPU cpu ring holds after a packet header's
 * room; returns where the records start and, in *bytes, how many bytes of
 * them.  One that overwrote records since its last snapshot (or is on its
 * first) starts at its first full time: the records before it are left out
 * (counted as dropped at the end). */
static uint8_t *read_flight_records(unsigned cpu, uint64_t *bytes)
{
	struct ctf_stream *stream = &session.streams[cpu];
	uint8_t *records = session.packet + sizeof(struct ctf_packet_header);
	uint64_t room = PACKET_PAGES * PAGE_SIZE - sizeof(struct ctf_packet_header);
	int64_t read = tel_channel_read(session.channel, cpu, records, room);
	*bytes = read > 0 ? (uint64_t)read : 0;
	uint64_t discarded = ring_dropped(cpu) - session.base_dropped[cpu];
	bool restart = !stream->events || discarded != stream->events_discarded;
	stream->events_discarded = discarded;
	if (!restart || !*bytes)
		return records;
	uint64_t skip = untimed_bytes(records, (int64_t)*bytes);
	*bytes -= skip;
	return records + skip;
}

/* A flight recorder's records into one packet (a snapshot: walked twice,
 * once to find the first full time).  Returns the packet's size (0: none). */
static uint64_t seal_flight_packet(unsigned cpu, uint8_t **packet)
{
	uint64_t bytes;
	uint8_t *records = read_flight_records(cpu, &bytes);
	*packet = records - sizeof(struct ctf_packet_header);
	return bytes ? ctf_seal_packet(*packet, bytes, &session.streams[cpu]) : 0;
}

/* A stream's records into one packet: all the ring holds, taken without a
 * walk (the producer published their count and last time with them), or
 * PACKET_RECORDS of them by a walk when it holds more; the packet begins
 * where the one before ended (or at its first record).  Returns the packet's size (0:
 * none). */
static uint64_t seal_stream_packet(unsigned cpu, uint8_t **packet)
{
	struct ctf_stream *stream = &session.streams[cpu];
	struct tel_read_summary read = {.last_time = stream->last_time};
	*packet = session.lending ? session.lent_packets[cpu] : session.packet;
	int64_t bytes = -1;
	if (session.lending) {
		bytes = tel_channel_lend_all(session.channel, cpu, PACKET_RECORDS, &read,
					     &session.lent[cpu]);
		session.lent_pending[cpu] = bytes > 0;
	}
	if (bytes < 0) { /* not lent: copied after the header */
		session.lent[cpu].stretches = 0;
		session.drain_again = session.lending; /* more than a lent packet holds */
		bytes = tel_channel_take_all(session.channel, cpu,
					     *packet + sizeof(struct ctf_packet_header),
					     PACKET_RECORDS, &read);
	}
	stream->events_discarded = ring_dropped(cpu) - session.base_dropped[cpu];
	if (bytes <= 0)
		return 0;
	if ((uint64_t)bytes >= PACKET_RECORDS / 2)
		session.drain_again = true;
	if ((uint64_t)bytes > session.fullest)
		session.fullest = (uint64_t)bytes;
	uint64_t slack = ctf_read_slack(
	    *packet + sizeof(struct ctf_packet_header), (uint64_t)bytes,
	    &read); /* lent: the records lie elsewhere, but then read.last_bytes is 0 */
	return ctf_seal_packet_counted(*packet, (uint64_t)bytes, slack, stream, read.records,
				       read.first_time, read.last_time);
}

/* A lent packet's parts: its header, then its records where they lie (or
 * copied after the header).  Returns the sink's answer. */
static int send_lent_packet(unsigned cpu, const uint8_t *packet, uint64_t size)
{
	const struct tel_ring_lent *lent = &session.lent[cpu];
	struct trace_part parts[TRACE_LENT_PARTS] = {
	    {.data = packet, .length = lent->stretches ? sizeof(struct ctf_packet_header) : size}};
	unsigned count = 1;
	for (unsigned i = 0; i < lent->stretches; i++)
		parts[count++] =
		    (struct trace_part){.data = lent->data[i], .length = lent->bytes[i]};
	return session.sink->frame_lent(session.sink->context, TRACE_FRAME_PACKET, (uint16_t)cpu,
					parts, count);
}

/* Moves what CPU cpu's ring holds into one packet for the sink.  Returns the
 * records moved. */
static uint64_t drain_cpu(unsigned cpu)
{
	struct ctf_stream *stream = &session.streams[cpu];
	uint8_t *packet;
	uint64_t before = stream->events;
	uint64_t size =
	    session.flight ? seal_flight_packet(cpu, &packet) : seal_stream_packet(cpu, &packet);
	if (!size)
		return 0;
	uint64_t count = stream->events - before;
	int error = session.lending ? send_lent_packet(cpu, packet, size)
				    : session.sink->frame(session.sink->context, TRACE_FRAME_PACKET,
							  (uint16_t)cpu, packet, (uint32_t)size);
	__atomic_fetch_add(error ? &session.refused_by_sink : &session.delivered, count,
			   __ATOMIC_RELAXED);
	if (error) /* stacks in it may be referred to later: send them again */
		uscope_stream_lost();
	return count;
}

/* Once the sink has settled, every packet lent before is free again, and
 * so is the ring's room its records took.  Without wait, only if it already
 * has (a sink that failed needs nothing any more). */
static void release_lent(bool wait)
{
	if (session.sink->settle(session.sink->context, wait) == -EAGAIN)
		return;
	for (unsigned cpu = 0; cpu < cpu_count; cpu++)
		if (session.lent_pending[cpu]) {
			tel_channel_release(session.channel, cpu, &session.lent[cpu]);
			session.lent_pending[cpu] = false;
		}
}

static uint64_t drain_all(void)
{
	uint64_t moved = 0;
	if (session.lending)
		release_lent(true);
	for (unsigned cpu = 0; cpu < cpu_count; cpu++)
		moved += drain_cpu(cpu);
	if (session.lending) /* the device may have read them already: room sooner */
		release_lent(false);
	return moved;
}

uint64_t trace_drain_now(void)
{
	return drain_all();
}

/* The pause after the last one (last_ns, at most DRAIN_IDLE_NS), in which
 * the fullest ring gave fullest bytes. */
static uint64_t drain_pause_ns(uint64_t last_ns, uint64_t fullest)
{
	if (!fullest)
		return DRAIN_IDLE_NS;
	uint64_t pause = last_ns * DRAIN_FILL / fullest;
	return pause < DRAIN_BUSY_NS   ? DRAIN_BUSY_NS
	       : pause > DRAIN_IDLE_NS ? DRAIN_IDLE_NS
				       : pause;
}

/* One pass: every ring, again at once while one gave half a packet or more
 * (or was walked).  Returns the most bytes one ring gave, summed over the
 * turns. */
static uint64_t drain_pass(void)
{
	uint64_t fullest = 0;
	do {
		session.drain_again = false;
		session.fullest = 0;
		drain_all();
		fullest += session.fullest;
	} while (session.drain_again && !__atomic_load_n(&session.stopping, __ATOMIC_ACQUIRE));
	return fullest;
}

static int drain_loop(void *arg)
{
	thread_set_untraced(true);
	uint64_t pause = DRAIN_IDLE_NS;
	while (!__atomic_load_n(&session.stopping, __ATOMIC_ACQUIRE)) {
		pause = drain_pause_ns(pause, drain_pass());
		sched_sleep_ns(pause);
	}
	return 0;
}

void trace_get_counts(struct trace_end *counts)
{
	if (!session.running) {
		*counts = session.final;
		return;
	}
	struct tel_ring_stats now;
	tel_channel_get_totals(session.channel, &now);
	uint64_t refused = now.dropped - session.base.dropped;
	uint64_t by_sink = __atomic_load_n(&session.refused_by_sink, __ATOMIC_RELAXED);
	*counts =
	    (struct trace_end){.recorded = now.produced - session.base.produced + refused,
			       .delivered = __atomic_load_n(&session.delivered, __ATOMIC_RELAXED),
			       .dropped = refused + by_sink};
	if (session.flight) /* overwritten, skipped, or never asked for */
		counts->dropped = counts->recorded - counts->delivered;
}

bool trace_running(void)
{
	return __atomic_load_n(&session.running, __ATOMIC_ACQUIRE);
}

bool trace_running_into(const struct trace_sink *sink)
{
	return trace_running() && session.sink == sink;
}

static void detach_patterns(void)
{
	for (unsigned i = 0; i < session.handle_count; i++)
		jp_detach(session.handles[i]);
	session.handle_count = 0;
}

/* Attaches advice where the filter says; no match is no error here (the
 * pattern may hold join points of one kind only).  Returns 1 when attached,
 * 0 when nothing matched, or the error. */
static int attach_kind(const char *pattern, bool (*where)(const struct joinpoint *jp),
		       const struct jp_advice *advice)
{
	int handle = jp_attach_where(pattern, where, advice);
	if (handle == -ENOENT)
		return 0;
	if (handle < 0)
		return handle;
	session.handles[session.handle_count++] = handle;
	return 1;
}

/* Each pattern: the call recorder on the join points that cannot sleep, the
 * entry and exit recorder on the others.  -ENOENT when a pattern matches
 * nothing at all. */
static int attach_patterns(const char *const *patterns, unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		int nosleep = attach_kind(patterns[i], trace_cannot_sleep, &trace_record_nosleep);
		int sleeping =
		    nosleep < 0 ? 0
				: attach_kind(patterns[i], trace_may_sleep, &trace_record_sleeping);
		int error = nosleep < 0 ? nosleep : sleeping < 0 ? sleeping : 0;
		if (!error && !nosleep && !sleeping)
			error = -ENOENT;
		if (error) {
			detach_patterns();
			return error;
		}
	}
	return 0;
}

static int make_channel(void)
{
	unsigned mode = session.flight ? 1 : 0;
	if (!session.channels[mode])
		session.channels[mode] =
		    tel_channel_create(mode ? "trace-flight" : "trace", TRACE_RING_BYTES,
				       mode ? TEL_FLIGHT_RECORDER : TEL_STREAM);
	if (session.channels[mode])
		tel_channel_keep_for_kernel(session.channels[mode]); /* the drain's alone */
	session.channel = session.channels[mode];
	if (!session.packet)
		session.packet = mm_alloc_pages(PACKET_PAGES, PAGE_SIZE);
	return session.channel && session.packet ? 0 : -ENOMEM;
}

/* A stream into a sink that reads packets in place gets a packet buffer per
 * CPU (made once, kept); without memory for them it copies as others do. */
static void choose_lending(const struct trace_sink *sink)
{
	session.lending = false;
	if (session.flight || !sink->frame_lent || !sink->settle)
		return;
	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		if (!session.lent_packets[cpu])
			session.lent_packets[cpu] = mm_alloc_pages(LENT_PACKET_PAGES, PAGE_SIZE);
		if (!session.lent_packets[cpu])
			return;
	}
	session.lending = true;
}

/* Empties the rings of what an earlier session left, and notes where the
 * counts stand. */
static void reset_streams(const uint8_t uuid[16])
{
	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		while (tel_channel_read(session.channel, cpu, session.packet,
					PACKET_PAGES * PAGE_SIZE) > 0)
			;
		/* The first packet begins now (its first record has a full time). */
		session.streams[cpu] = (struct ctf_stream){.cpu = cpu, .last_time = rdtsc()};
		memcpy(session.streams[cpu].uuid, uuid, 16);
		session.base_dropped[cpu] = ring_dropped(cpu);
	}
	tel_channel_get_totals(session.channel, &session.base);
	session.delivered = session.refused_by_sink = 0;
}

/* The rings' next record must be extended (a CTF stream's first event times
 * the rest): a ring that held records before gets a fresh sync point. */
static void resync_rings(void)
{
	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		struct tel_ring *ring = tel_channel_ring(session.channel, cpu);
		if (ring) {
			ring->next_sync = ring->head;
			ring->fast_limit = 0;
		}
	}
}

static enum tracepoint_scope session_scope(void)
{
	return session.stacks_only ? TRACEPOINT_STACKS_ONLY : TRACEPOINT_ALL_EVENTS;
}

static int begin(const struct trace_sink *sink, const char *argument, const char *const *patterns,
		 unsigned count)
{
	int error = make_channel();
	if (error)
		return error;
	session.sink = sink;
	choose_lending(sink);
	if (sink->open && (error = sink->open(sink->context, argument ? argument : "")))
		return error;
	uint8_t uuid[16];
	new_uuid(uuid);
	reset_streams(uuid);
	resync_rings();
	/* The patterns first: a start they refuse sends the host nothing but
	 * the refusal (no metadata of a trace that never runs). */
	error = attach_patterns(patterns, count);
	if (!error && (error = send_metadata(uuid)))
		detach_patterns();
	if (error) {
		if (sink->close)
			sink->close(sink->context);
		return error;
	}
	session.stopping = false;
	uscope_stream_begins(!session.flight); /* before any record of the session */
	tracepoint_set_channel(session.channel, session_scope());
	thread_trace_names();
	if (!session.flight)
		session.drainer =
		    thread_create(drain_loop, NULL, "trace-drain", SCHED_PRIORITY_NORMAL);
	return 0;
}

enum start_kind { START_STREAM, START_FLIGHT, START_STACKS };

static int start(const struct trace_sink *sink, const char *argument, const char *const *patterns,
		 unsigned count, enum start_kind kind)
{
	if (!sink || !sink->frame || count > TRACE_PATTERNS_MAX || (kind == START_STACKS && count))
		return -EINVAL;
	mutex_lock(&start_stop);
	int error = -EBUSY;
	if (!session.running) {
		session.flight = kind == START_FLIGHT;
		session.stacks_only = kind == START_STACKS;
		error = begin(sink, argument, patterns, count);
	}
	if (!error)
		__atomic_store_n(&session.running, true, __ATOMIC_RELEASE);
	mutex_unlock(&start_stop);
	return error;
}

int trace_start(const struct trace_sink *sink, const char *argument, const char *const *patterns,
		unsigned count)
{
	return start(sink, argument, patterns, count, START_STREAM);
}

int trace_start_stacks(const struct trace_sink *sink, const char *argument)
{
	return start(sink, argument, NULL, 0, START_STACKS);
}

int trace_start_flight(const struct trace_sink *sink, const char *argument,
		       const char *const *patterns, unsigned count)
{
	return start(sink, argument, patterns, count, START_FLIGHT);
}

int trace_snapshot(void)
{
	mutex_lock(&start_stop);
	int error = !session.running ? -ENOENT : !session.flight ? -EINVAL : 0;
	if (!error) {
		tracepoint_set_channel(NULL, TRACEPOINT_ALL_EVENTS);
		grace_synchronize(); /* no CPU is writing: the rings hold still */
		drain_all();
		tracepoint_set_channel(session.channel, session_scope());
	}
	mutex_unlock(&start_stop);
	return error;
}

static void end_session(void)
{
	detach_patterns();
	tracepoint_set_channel(NULL, TRACEPOINT_ALL_EVENTS);
	uscope_stream_ends();
	grace_synchronize(); /* no CPU is still inside a trace point's write */
	__atomic_store_n(&session.stopping, true, __ATOMIC_RELEASE);
	if (session.drainer)
		thread_join(session.drainer, NULL);
	session.drainer = NULL;
	while (!session.flight && drain_all())
		;
	trace_get_counts(&session.final);
	session.sink->frame(session.sink->context, TRACE_FRAME_END, 0, &session.final,
			    sizeof session.final);
	if (session.sink->close)
		session.sink->close(session.sink->context);
}

int trace_stop(struct trace_end *end)
{
	mutex_lock(&start_stop);
	int error = session.running ? 0 : -ENOENT;
	if (!error) {
		end_session();
		__atomic_store_n(&session.running, false, __ATOMIC_RELEASE);
	}
	if (end)
		*end = session.final;
	mutex_unlock(&start_stop);
	return error;
}
