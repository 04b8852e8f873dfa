/*
 * The e1000 suite: the receive and transmit paths against a device that
 * lies.  A fake e1000 (registers in ordinary memory, real rings) gets
 * descriptors with garbage lengths, error bits and frames spread over several
 * descriptors; the driver must deliver only the good frames, count every bad
 * one, give every descriptor back (in batches), and refuse to overfill the
 * transmit ring.  TCP frames get the device's checksum behind a context
 * descriptor written only when the last one does not fit.  The statistics
 * registers count as the device's do (clear on read, stuck at 0xffffffff):
 * hours of line rate that nobody reads must reach the totals whole.
 */
#include "e1000/internal.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "net/test_frames.h"

struct capture {
	unsigned frames;
	size_t last_length;
};

static void capture_frame(struct nic *nic, const void *frame, size_t length, void *context)
{
	struct capture *capture = context;
	capture->frames++;
	capture->last_length = length;
}

static struct e1000 *fake_e1000(struct capture *capture)
{
	struct e1000 *e = kzalloc(sizeof(*e));
	if (!e)
		return NULL;
	e->regs = kzalloc(E1000_REGS_SIZE);
	spin_init(&e->tx_lock, "e1000.tx");
	spin_init(&e->stats_lock, "e1000.stats");
	e->nic.driver = e;
	e->nic.ops = &e1000_nic_ops;
	e->nic.counter_refresh_ns = E1000_COUNTER_REFRESH_NS;
	e->nic.rx_handler = capture_frame;
	e->nic.rx_context = capture;
	if (!e->regs || e1000_rings_alloc(e) || e1000_stats_init(e)) {
		e1000_rings_free(e);
		kfree(e->hardware_totals);
		kfree((void *)e->regs);
		kfree(e);
		return NULL;
	}
	return e;
}

static void fake_free(struct e1000 *e)
{
	e1000_rings_free(e);
	kfree(e->hardware_totals);
	kfree((void *)e->regs);
	kfree(e);
}

static void device_writes(struct e1000 *e, unsigned i, uint8_t status, uint8_t errors,
			  uint16_t length)
{
	e->rx_ring[i].length = length;
	e->rx_ring[i].errors = errors;
	e->rx_ring[i].status = status;
}

static void bad_descriptors_are_dropped_and_counted(struct ktest *t)
{
	struct capture capture = {0};
	struct e1000 *e = fake_e1000(&capture);
	ASSERT_TRUE(t, e != NULL);
	const uint8_t done = E1000_RX_DD | E1000_RX_EOP;
	device_writes(e, 0, done, 0, 60);
	device_writes(e, 1, done, 0, 5000);       /* longer than the buffer */
	device_writes(e, 2, done, 0, 4);          /* shorter than a header */
	device_writes(e, 3, done, 0x80, 60);      /* an error bit */
	device_writes(e, 4, E1000_RX_DD, 0, 100); /* a frame over two descriptors */
	device_writes(e, 5, done, 0, 100);
	device_writes(e, 6, done, 0, NIC_FRAME_MAX);
	device_writes(e, 7, done | 0x80, 0, 0xffff); /* garbage everywhere */
	EXPECT_EQ(t, e1000_rx_poll(e, 64), 2);
	EXPECT_EQ(t, capture.frames, 2);
	EXPECT_EQ(t, capture.last_length, NIC_FRAME_MAX);
	EXPECT_EQ(t, e->soft.rx_bad_length, 3);
	EXPECT_EQ(t, e->soft.rx_errors, 1);
	EXPECT_EQ(t, e->soft.rx_fragments, 2);
	EXPECT_EQ(t, e->rx_next, 8);
	EXPECT_EQ(t, e->rx_held, 8); /* every descriptor emptied, to go back in a batch */
	for (unsigned i = 0; i < 8; i++)
		EXPECT_EQ(t, e->rx_ring[i].status, 0);
	fake_free(e);
}

/* Emptied descriptors go back to the device E1000_RX_RETURN_BATCH at a
 * time, each batch in one RDT write that names the last of them, across the
 * ring's end too. */
static void descriptors_go_back_in_batches(struct ktest *t)
{
	struct capture capture = {0};
	struct e1000 *e = fake_e1000(&capture);
	ASSERT_TRUE(t, e != NULL);
	e1000_write(e, E1000_RDT, E1000_RX_RING - 1); /* as programmed */
	unsigned filled = 0;
	for (unsigned batch = 0; batch < E1000_RX_RING / E1000_RX_RETURN_BATCH + 2; batch++) {
		for (unsigned i = 0; i < E1000_RX_RETURN_BATCH - 1; i++, filled++)
			device_writes(e, filled % E1000_RX_RING, E1000_RX_DD | E1000_RX_EOP, 0, 64);
		unsigned tail = e1000_read(e, E1000_RDT);
		EXPECT_EQ(t, e1000_rx_poll(e, 64), E1000_RX_RETURN_BATCH - 1);
		EXPECT_EQ(t, e1000_read(e, E1000_RDT), tail); /* one short: held */
		device_writes(e, filled++ % E1000_RX_RING, E1000_RX_DD | E1000_RX_EOP, 0, 64);
		EXPECT_EQ(t, e1000_rx_poll(e, 64), 1);
		EXPECT_EQ(t, e1000_read(e, E1000_RDT), (filled - 1) % E1000_RX_RING);
		EXPECT_EQ(t, e->rx_held, 0);
	}
	EXPECT_EQ(t, capture.frames, filled);
	fake_free(e);
}

static void receive_stops_at_the_budget(struct ktest *t)
{
	struct capture capture = {0};
	struct e1000 *e = fake_e1000(&capture);
	ASSERT_TRUE(t, e != NULL);
	for (unsigned i = 0; i < 3; i++)
		device_writes(e, i, E1000_RX_DD | E1000_RX_EOP, 0, 64);
	EXPECT_EQ(t, e1000_rx_poll(e, 2), 2);
	EXPECT_EQ(t, e1000_rx_poll(e, 2), 1);
	EXPECT_EQ(t, e1000_rx_poll(e, 2), 0);
	EXPECT_EQ(t, capture.frames, 3);
	fake_free(e);
}

/* What if the device says every descriptor is done forever?  The poll must
 * still end after one lap of the ring. */
static void a_device_that_never_stops_cannot_trap_the_poll(struct ktest *t)
{
	struct capture capture = {0};
	struct e1000 *e = fake_e1000(&capture);
	ASSERT_TRUE(t, e != NULL);
	for (unsigned i = 0; i < E1000_RX_RING; i++)
		device_writes(e, i, E1000_RX_DD | E1000_RX_EOP, 0, 64);
	EXPECT_EQ(t, e1000_rx_poll(e, 100000), E1000_RX_RING);
	fake_free(e);
}

static void transmit_ring_fills_then_drains(struct ktest *t)
{
	struct capture capture = {0};
	struct e1000 *e = fake_e1000(&capture);
	ASSERT_TRUE(t, e != NULL);
	uint8_t frame[60] = {0};
	unsigned sent = 0;
	while (e1000_tx_frame(e, frame, sizeof(frame)) == 0 && sent < 2 * E1000_TX_RING)
		sent++;
	EXPECT_EQ(t, sent, E1000_TX_RING - 1);
	EXPECT_EQ(t, e->soft.tx_ring_full, 1);
	EXPECT_EQ(t, e1000_tx_frame(e, frame, NIC_FRAME_MAX + 1), -EINVAL);
	for (unsigned i = 0; i < E1000_TX_RING; i++)
		e->tx_ring[i].status = E1000_TX_DD; /* the device finished them all */
	EXPECT_EQ(t, e1000_tx_frame(e, frame, sizeof(frame)), 0);
	EXPECT_EQ(t, e1000_read(e, E1000_TDT), (sent + 1) % E1000_TX_RING);
	fake_free(e);
}

static bool asks_for_checksum(const volatile struct e1000_tx_desc *d)
{
	return d->cso == E1000_TX_DTYP_D && (d->command & E1000_TX_DEXT) &&
	       d->css == E1000_POPTS_TXSM && !(d->command & E1000_TX_TSE);
}

static void tcp_frames_get_the_devices_checksum(struct ktest *t)
{
	struct capture capture = {0};
	struct e1000 *e = fake_e1000(&capture);
	ASSERT_TRUE(t, e != NULL);
	e->nic.tx_tcp_checksum = true;
	uint8_t frame[200], other[60] = {0};
	test_tcp_frame(frame, sizeof frame);

	/* The first TCP frame: a checksum context, then its data descriptor. */
	ASSERT_EQ(t, e1000_tx_frame(e, frame, sizeof frame), 0);
	EXPECT_EQ(t, e->tx_tail, 2);
	const volatile struct e1000_context_desc *c = (const void *)&e->tx_ring[0];
	EXPECT_EQ(t, c->tucss, TEST_TCP_START);
	EXPECT_EQ(t, c->tucso, TEST_TCP_START + 16);
	EXPECT_EQ(t, c->tucse, 0);
	EXPECT_EQ(t, c->payload_and_command >> 24 & E1000_TX_TSE, 0);
	EXPECT_TRUE(t, asks_for_checksum(&e->tx_ring[1]));
	EXPECT_EQ(t, e->tx_ring[1].length, sizeof frame);
	const uint8_t *copy = e->tx_buffers + E1000_BUFFER_SIZE;
	uint16_t pseudo = nic_tcp_pseudo_sum(frame + 14, sizeof frame - TEST_TCP_START);
	EXPECT_EQ(t, memcmp(copy + TEST_TCP_START + 16, &pseudo, 2), 0);
	EXPECT_EQ(t,
		  memcmp(copy + TEST_TCP_HEADERS, frame + TEST_TCP_HEADERS,
			 sizeof frame - TEST_TCP_HEADERS),
		  0);

	/* The next one reuses the context; a frame that is not TCP asks nothing. */
	ASSERT_EQ(t, e1000_tx_frame(e, frame, sizeof frame), 0);
	EXPECT_EQ(t, e->tx_tail, 3);
	EXPECT_TRUE(t, asks_for_checksum(&e->tx_ring[2]));
	ASSERT_EQ(t, e1000_tx_frame(e, other, sizeof other), 0);
	EXPECT_EQ(t, e->tx_ring[3].command, E1000_TX_EOP | E1000_TX_IFCS | E1000_TX_RS);
	EXPECT_EQ(t, e->soft.tx_checksummed, 2);

	/* A TSO frame's context replaces it: the next TCP frame writes one again. */
	uint8_t *large = kmalloc(8000);
	ASSERT_TRUE(t, large != NULL);
	test_tcp_frame(large, 8000);
	ASSERT_EQ(t, e1000_tx_segmented(e, large, 8000, TEST_TCP_HEADERS), 0);
	unsigned before = e->tx_tail;
	ASSERT_EQ(t, e1000_tx_frame(e, frame, sizeof frame), 0);
	EXPECT_EQ(t, e->tx_tail, (before + 2) % E1000_TX_RING);
	kfree(large);

	/* No room for a context and the frame: refused, nothing written. */
	e->nic.tx_tcp_checksum = false;
	while (e1000_tx_frame(e, other, sizeof other) == 0)
		;
	for (unsigned i = 0; i < E1000_TX_RING; i++)
		e->tx_ring[i].status = 0;
	e->tx_clean = (e->tx_tail + 2) % E1000_TX_RING; /* one slot free */
	e->nic.tx_tcp_checksum = true;
	e->tx_checksum_context = 0;
	unsigned tail = e->tx_tail;
	EXPECT_EQ(t, e1000_tx_frame(e, frame, sizeof frame), -EAGAIN);
	EXPECT_EQ(t, e->tx_tail, tail);
	fake_free(e);
}

/* ---- Statistics registers ------------------------------------------------ */

#define STATS_FIRST 0x4000 /* the statistics registers' block */
#define STATS_END   0x4100
#define TPR         0x40d0
#define GPRC        0x4074
#define PRC64       0x405c
#define GORC        0x4088 /* 64 bits: low, then high */

/* The fake device receives `frames` frames of 64 bytes: each frame counter stops
 * at 0xffffffff, the octet counter at 2^64 - 1, as the device's do. */
static void device_receives(struct e1000 *e, uint64_t frames)
{
	static const uint16_t frame_counters[] = {TPR, GPRC, PRC64};
	for (unsigned i = 0; i < sizeof frame_counters / sizeof frame_counters[0]; i++) {
		uint64_t value = e1000_read(e, frame_counters[i]) + frames;
		e1000_write(e, frame_counters[i],
			    value > 0xffffffffu ? 0xffffffffu : (uint32_t)value);
	}
	uint64_t octets = e1000_read(e, GORC) | (uint64_t)e1000_read(e, GORC + 4) << 32;
	octets += 64 * frames;
	e1000_write(e, GORC, (uint32_t)octets);
	e1000_write(e, GORC + 4, (uint32_t)(octets >> 32));
}

/* The device clears what the driver read: one register, or all of them
 * after a pass over every counter. */
static void device_clears(struct e1000 *e, unsigned reg)
{
	e1000_write(e, reg, 0);
	if (reg == GORC)
		e1000_write(e, GORC + 4, 0);
}

static void device_clears_all(struct e1000 *e)
{
	for (unsigned reg = STATS_FIRST; reg < STATS_END; reg += 4)
		e1000_write(e, reg, 0);
}

/* What the NIC worker does every counter_refresh_ns, read or not. */
static void worker_refreshes(struct e1000 *e)
{
	if (!e->nic.ops->refresh_counters)
		return;
	e->nic.ops->refresh_counters(&e->nic);
	device_clears_all(e);
}

static uint64_t counter(struct e1000 *e, const char *name, unsigned reg)
{
	uint64_t value = 0;
	e1000_read_counter(&e->nic, name, &value);
	device_clears(e, reg);
	return value;
}

/* Three hours of the smallest frames at line rate and nobody reading the
 * counters (the NIC decision aspect unlinked): only the worker's refreshes
 * fold the registers, each before any of them can stop counting, so the
 * totals hold every frame. */
static void unread_counters_survive_hours_at_line_rate(struct ktest *t)
{
	struct capture capture = {0};
	struct e1000 *e = fake_e1000(&capture);
	ASSERT_TRUE(t, e != NULL);
	uint64_t interval_ns = e->nic.counter_refresh_ns;
	ASSERT_TRUE(t, interval_ns > 0);
	uint64_t per_refresh = E1000_LINE_RATE_FRAMES * interval_ns / 1000000000ull;
	EXPECT_TRUE(t, per_refresh < 0xffffffffu);
	uint64_t refreshes = 3ull * 3600 * 1000000000ull / interval_ns;
	for (uint64_t i = 0; i < refreshes; i++) {
		device_receives(e, per_refresh);
		worker_refreshes(e);
	}
	uint64_t frames = per_refresh * refreshes;
	EXPECT_EQ(t, counter(e, "TPR", TPR), frames);
	EXPECT_EQ(t, counter(e, "GPRC", GPRC), frames);
	EXPECT_EQ(t, counter(e, "PRC64", PRC64), frames);
	EXPECT_EQ(t, counter(e, "GORC", GORC), 64 * frames);
	fake_free(e);
}

struct listed {
	uint64_t gprc, gorc;
};

static void note_listed(const char *name, uint64_t value, void *arg)
{
	struct listed *listed = arg;
	if (strcmp(name, "GPRC") == 0)
		listed->gprc = value;
	else if (strcmp(name, "GORC") == 0)
		listed->gorc = value;
}

/* Two readers (an aspect by name, the shell's list) and the worker's
 * refreshes, in every order: whoever reads sees every frame received so
 * far, never a share of them. */
static void two_readers_and_the_refresh_agree(struct ktest *t)
{
	struct capture capture = {0};
	struct e1000 *e = fake_e1000(&capture);
	ASSERT_TRUE(t, e != NULL);
	uint64_t frames = 0;
	for (unsigned round = 0; round < 12; round++) {
		device_receives(e, 1000 + round);
		frames += 1000 + round;
		if (round % 3 == 0)
			worker_refreshes(e);
		if (round % 2 == 0) {
			EXPECT_EQ(t, counter(e, "GPRC", GPRC), frames);
			EXPECT_EQ(t, counter(e, "GORC", GORC), 64 * frames);
		}
		if (round % 4 != 1) {
			struct listed listed = {0};
			e1000_list_counters(&e->nic, note_listed, &listed);
			device_clears_all(e);
			EXPECT_EQ(t, listed.gprc, frames);
			EXPECT_EQ(t, listed.gorc, 64 * frames);
		}
	}
	fake_free(e);
}

KTEST_SUITE(e1000, KTEST_CASE(bad_descriptors_are_dropped_and_counted),
	    KTEST_CASE(descriptors_go_back_in_batches), KTEST_CASE(receive_stops_at_the_budget),
	    KTEST_CASE(a_device_that_never_stops_cannot_trap_the_poll),
	    KTEST_CASE(transmit_ring_fills_then_drains),
	    KTEST_CASE(tcp_frames_get_the_devices_checksum),
	    KTEST_CASE(unread_counters_survive_hours_at_line_rate),
	    KTEST_CASE(two_readers_and_the_refresh_agree));
