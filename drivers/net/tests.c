/*
 * The nic suite: with a NIC on QEMU's user network (-netdev user,id=n0
 * -device e1000,netdev=n0 or virtio-net-pci,netdev=n0), the driver is up,
 * and ARP requests for the gateway 10.0.2.2 get their replies through the rx
 * handler, in interrupt mode, in polling mode and while the mode keeps
 * switching, with none lost; each frame sent is seen leaving the device
 * (nic.tx_queued, then nic.tx_done of its slot: the nictx latency tracker
 * times them).  Without a NIC every case is skipped.  The
 * handler the stack may have installed is saved, fed every frame meanwhile,
 * and restored.
 */
#include "ktest/ktest.h"
#include "lattrack/lattrack.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "lib/unaligned.h"
#include "net/nic.h"
#include "time/time.h"

#define ARP_FRAME_LENGTH 60
#define GUEST_IP         0x0a00020fu /* 10.0.2.15 */
#define GATEWAY_IP       0x0a000202u /* 10.0.2.2 */

struct arp_watch {
	nic_rx_fn previous;
	void *previous_context;
	volatile uint64_t replies;
	volatile uint64_t frames;
	uint8_t gateway_mac[NIC_MAC_LENGTH];
};

static void build_arp_request(const struct nic *nic, uint8_t *frame)
{
	memset(frame, 0, ARP_FRAME_LENGTH);
	memset(frame, 0xff, 6);
	memcpy(frame + 6, nic->mac, 6);
	write_be16(frame + 12, 0x0806);
	uint8_t *arp = frame + 14;
	write_be16(arp, 1);          /* Ethernet */
	write_be16(arp + 2, 0x0800); /* IPv4 */
	arp[4] = 6;
	arp[5] = 4;
	write_be16(arp + 6, 1); /* request */
	memcpy(arp + 8, nic->mac, 6);
	write_be32(arp + 14, GUEST_IP);
	write_be32(arp + 24, GATEWAY_IP);
}

static bool is_gateway_arp_reply(const uint8_t *frame, size_t length)
{
	const uint8_t *arp = frame + 14;
	return length >= 42 && frame[12] == 0x08 && frame[13] == 0x06 && arp[6] == 0 &&
	       arp[7] == 2 && read_be32(arp + 14) == GATEWAY_IP && read_be32(arp + 24) == GUEST_IP;
}

static void watch_frame(struct nic *nic, const void *frame, size_t length, void *context)
{
	struct arp_watch *watch = context;
	__atomic_fetch_add(&watch->frames, 1, __ATOMIC_RELAXED);
	if (is_gateway_arp_reply(frame, length)) {
		memcpy(watch->gateway_mac, (const uint8_t *)frame + 22, NIC_MAC_LENGTH);
		__atomic_fetch_add(&watch->replies, 1, __ATOMIC_RELAXED);
	}
	if (watch->previous)
		watch->previous(nic, frame, length, watch->previous_context);
}

static void watch_start(struct nic *nic, struct arp_watch *watch)
{
	memset(watch, 0, sizeof(*watch));
	watch->previous = nic->rx_handler;
	watch->previous_context = nic->rx_context;
	nic_set_rx_handler(nic, watch_frame, watch);
}

static void watch_stop(struct nic *nic, struct arp_watch *watch)
{
	nic_set_rx_handler(nic, watch->previous, watch->previous_context);
}

/* Sends one request, retrying while the ring is full.  Returns nic_tx's. */
static int send_arp_request(struct nic *nic)
{
	uint8_t frame[ARP_FRAME_LENGTH];
	build_arp_request(nic, frame);
	int error;
	for (unsigned tries = 0;
	     (error = nic_tx(nic, frame, sizeof(frame))) == -EAGAIN && tries < 1000; tries++)
		sched_sleep_ns(NSEC_PER_MSEC);
	return error;
}

/* Waits up to timeout_ns for watch to count want replies. */
static bool wait_replies(struct arp_watch *watch, uint64_t want, uint64_t timeout_ns)
{
	uint64_t deadline = clock_ns() + timeout_ns;
	while (__atomic_load_n(&watch->replies, __ATOMIC_RELAXED) < want && clock_ns() < deadline)
		sched_sleep_ns(NSEC_PER_MSEC);
	return watch->replies >= want;
}

static struct nic *test_nic(struct ktest *t)
{
	struct nic *nic = nic_first();
	if (!nic)
		ktest_skip(t, "no NIC (QEMU -netdev user,id=n0 -device e1000,netdev=n0)");
	return nic;
}

static void driver_comes_up(struct ktest *t)
{
	struct nic *nic = test_nic(t);
	if (!nic)
		return;
	EXPECT_TRUE(t, nic_find(nic->name) == nic);
	EXPECT_TRUE(t, nic_find("nope.0") == NULL);
	EXPECT_EQ(t, nic->mtu, 1500);
	EXPECT_EQ(t, nic->link, NIC_LINK_UP);
	EXPECT_EQ(t, nic_link_now(nic), NIC_LINK_UP); /* asked of the device */
	/* QEMU's default MAC unless -device ...,mac= says otherwise */
	static const uint8_t qemu_mac[NIC_MAC_LENGTH] = {0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
	EXPECT_EQ(t, memcmp(nic->mac, qemu_mac, NIC_MAC_LENGTH), 0);
	EXPECT_TRUE(t, nic->worker != NULL);
}

static void tx_rejects_bad_lengths(struct ktest *t)
{
	struct nic *nic = test_nic(t);
	if (!nic)
		return;
	uint8_t frame[NIC_FRAME_MAX + 1] = {0};
	EXPECT_EQ(t, nic_tx(nic, frame, 0), -EINVAL);
	EXPECT_EQ(t, nic_tx(nic, frame, NIC_FRAME_MIN - 1), -EINVAL);
	EXPECT_EQ(t, nic_tx(nic, frame, NIC_FRAME_MAX + 1), -EINVAL);
	EXPECT_EQ(t, nic_tx(NULL, frame, 60), -EINVAL);
	EXPECT_EQ(t, nic_set_mode(nic, (enum nic_mode)7), -EINVAL);
}

static void arp_in_mode(struct ktest *t, enum nic_mode mode)
{
	struct nic *nic = test_nic(t);
	if (!nic)
		return;
	enum nic_mode before = nic->mode;
	struct arp_watch watch;
	uint64_t interrupts_before = 0, interrupts_after = 0;
	watch_start(nic, &watch);
	ASSERT_EQ(t, nic_set_mode(nic, mode), 0);
	sched_sleep_ns(5 * NSEC_PER_MSEC); /* the worker applies the mode */
	nic_read_counter(nic, "interrupts", &interrupts_before);
	EXPECT_EQ(t, send_arp_request(nic), 0);
	EXPECT_TRUE(t, wait_replies(&watch, 1, 3 * NSEC_PER_SEC));
	nic_read_counter(nic, "interrupts", &interrupts_after);
	/* the reply came by interrupt, or with interrupts off by polling (hybrid:
	 * one frame is a quiet wake-up, taken as in interrupt mode) */
	if (mode != NIC_MODE_POLLING)
		EXPECT_TRUE(t, interrupts_after > interrupts_before);
	else
		EXPECT_EQ(t, interrupts_after, interrupts_before);
	watch_stop(nic, &watch);
	nic_set_mode(nic, before);
	static const uint8_t slirp_gateway[NIC_MAC_LENGTH] = {0x52, 0x55, 0x0a, 0x00, 0x02, 0x02};
	EXPECT_EQ(t, memcmp(watch.gateway_mac, slirp_gateway, NIC_MAC_LENGTH), 0);
}

static void arp_gateway_answers_with_interrupts(struct ktest *t)
{
	arp_in_mode(t, NIC_MODE_INTERRUPT);
}

static void arp_gateway_answers_when_polled(struct ktest *t)
{
	arp_in_mode(t, NIC_MODE_POLLING);
}

static void arp_gateway_answers_in_hybrid_mode(struct ktest *t)
{
	arp_in_mode(t, NIC_MODE_HYBRID);
}

/* What if the mode switches while replies are arriving?  Every request must
 * get its reply through the handler, and every frame the driver took from the
 * device must reach nic_rx. */
static void mode_switch_loses_nothing(struct ktest *t)
{
	struct nic *nic = test_nic(t);
	if (!nic)
		return;
	enum nic_mode before = nic->mode;
	enum { REQUESTS = 300 };
	uint64_t rx_before = 0, rx_after = 0;
	struct arp_watch watch;
	watch_start(nic, &watch);
	uint64_t driver_before = 0;
	mutex_lock(&nic->poll_lock);
	nic_read_counter(nic, "rx_frames", &rx_before);
	nic_read_counter(nic, "rx_packets", &driver_before);
	watch.frames = 0;
	mutex_unlock(&nic->poll_lock);
	unsigned sent = 0;
	for (unsigned i = 0; i < REQUESTS; i++) {
		if (i % 7 == 0)
			nic_set_mode(nic, (enum nic_mode)((i / 7) % NIC_MODE_COUNT));
		if (send_arp_request(nic) == 0)
			sent++;
		if (i % 16 == 0)
			sched_yield();
	}
	EXPECT_EQ(t, sent, REQUESTS);
	EXPECT_TRUE(t, wait_replies(&watch, sent, 5 * NSEC_PER_SEC));
	nic_set_mode(nic, before);
	sched_sleep_ns(20 * NSEC_PER_MSEC);
	/* at least: the stack may be asking the gateway too */
	EXPECT_TRUE(t, watch.replies >= sent);
	/* No frame is being delivered while the poll lock is held. */
	uint64_t driver_after = 0, frames;
	mutex_lock(&nic->poll_lock);
	nic_read_counter(nic, "rx_frames", &rx_after);
	nic_read_counter(nic, "rx_packets", &driver_after);
	frames = watch.frames;
	mutex_unlock(&nic->poll_lock);
	watch_stop(nic, &watch);
	EXPECT_EQ(t, rx_after - rx_before, frames);
	EXPECT_EQ(t, driver_after - driver_before, frames);
}

static void counters_by_name(struct ktest *t)
{
	struct nic *nic = test_nic(t);
	if (!nic)
		return;
	uint64_t value = 0;
	EXPECT_EQ(t, nic_read_counter(nic, "tx_frames", &value), 0);
	EXPECT_TRUE(t, value > 0);
	EXPECT_EQ(t, nic_read_counter(nic, "rx_packets", &value), 0);
	EXPECT_TRUE(t, value > 0);
	EXPECT_EQ(t, nic_read_counter(nic, "no_such_counter", &value), -ENOENT);
	EXPECT_EQ(t, nic_read_counter(nic, NULL, &value), -EINVAL);
	if (strncmp(nic->name, "e1000.", 6) == 0) {
		EXPECT_EQ(t, nic_read_counter(nic, "GPRC", &value), 0);
		EXPECT_TRUE(t, value > 0);
		EXPECT_EQ(t, nic_read_counter(nic, "GPTC", &value), 0);
		EXPECT_TRUE(t, value > 0);
	}
}

static struct {
	uint64_t nic_bits; /* the NIC's address below bit 48: the nictx key's */
	uint64_t reports;
	uint64_t other_flags;
} tx_seen;

#define SLOT_SHIFT 48

static void count_tx_report(const struct lattrack_report *report, void *context)
{
	uint64_t key = 0;
	memcpy(&key, report->key, report->key_length < 8 ? report->key_length : 8);
	if ((key & ((1ull << SLOT_SHIFT) - 1)) != tx_seen.nic_bits)
		return;
	if (report->flag == LATTRACK_NORMAL)
		__atomic_add_fetch(&tx_seen.reports, 1, __ATOMIC_RELAXED);
	else
		__atomic_add_fetch(&tx_seen.other_flags, 1, __ATOMIC_RELAXED);
}

/* Every frame this test sends is queued in a slot and found done there: the
 * nictx tracker (threshold 0) reports each, keyed by this NIC and the slot;
 * the driver's reclaim, which finds them done, runs at the latest in the poll
 * that brings the frame's reply. */
static void tx_completions_reach_the_nictx_tracker(struct ktest *t)
{
	struct nic *nic = test_nic(t);
	if (!nic)
		return;
	enum { FRAMES = 20 };
	memset(&tx_seen, 0, sizeof tx_seen);
	tx_seen.nic_bits = (uint64_t)(uintptr_t)nic & ((1ull << SLOT_SHIFT) - 1);
	ASSERT_EQ(t, lattrack_attach_kind_callback("t-nictx", "nictx", 0, 0, count_tx_report, NULL),
		  0);
	struct arp_watch watch;
	watch_start(nic, &watch);
	uint64_t completions_before = 0, completions_after = 0;
	nic_read_counter(nic, "tx_completions", &completions_before);
	unsigned sent = 0;
	for (unsigned i = 0; i < FRAMES; i++) {
		sent += send_arp_request(nic) == 0;
		EXPECT_TRUE(t, wait_replies(&watch, i + 1, 5 * NSEC_PER_SEC));
	}
	watch_stop(nic, &watch);
	nic_read_counter(nic, "tx_completions", &completions_after);
	EXPECT_EQ(t, lattrack_detach("t-nictx"), 0);
	EXPECT_EQ(t, sent, FRAMES);
	/* at least: the stack may send too */
	EXPECT_TRUE(t, tx_seen.reports >= FRAMES);
	EXPECT_TRUE(t, completions_after - completions_before >= FRAMES);
	EXPECT_EQ(t, tx_seen.other_flags, 0);
}

KTEST_SUITE(nic, KTEST_CASE(driver_comes_up), KTEST_CASE(tx_rejects_bad_lengths),
	    KTEST_CASE(arp_gateway_answers_with_interrupts),
	    KTEST_CASE(arp_gateway_answers_when_polled),
	    KTEST_CASE(arp_gateway_answers_in_hybrid_mode), KTEST_CASE(mode_switch_loses_nothing),
	    KTEST_CASE(counters_by_name), KTEST_CASE(tx_completions_reach_the_nictx_tracker));
