/*
 * The e1000 suite: the receive and transmit paths against a device that
 * lies.  A fake e1000 (registers in ordinary memory, real rings) gets
 * descriptors with garbage lengths, error bits and frames spread over several
 * descriptors; the driver must deliver only the good frames, count every bad
 * one, give every descriptor back (in batches), and refuse to overfill the
 * transmit ring.  TCP frames get the device's checksum behind a context
 * descriptor written only when the last one does not fit.
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
	e->nic.rx_handler = capture_frame;
	e->nic.rx_context = capture;
	if (!e->regs || e1000_rings_alloc(e)) {
		e1000_rings_free(e);
		kfree((void *)e->regs);
		kfree(e);
		return NULL;
	}
	return e;
}

static void fake_free(struct e1000 *e)
{
	e1000_rings_free(e);
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

KTEST_SUITE(e1000, KTEST_CASE(bad_descriptors_are_dropped_and_counted),
	    KTEST_CASE(descriptors_go_back_in_batches), KTEST_CASE(receive_stops_at_the_budget),
	    KTEST_CASE(a_device_that_never_stops_cannot_trap_the_poll),
	    KTEST_CASE(transmit_ring_fills_then_drains),
	    KTEST_CASE(tcp_frames_get_the_devices_checksum));
