/*
 * Network interfaces: the one API between NIC drivers (e1000, virtio-net)
 * and the network stack.  A driver fills a struct nic (name, MAC, MTU, ops)
 * and registers it; the stack finds it by name, installs a receive handler
 * and transmits with nic_tx.  Each NIC runs in interrupt mode or polling mode,
 * switchable at run time: in both, a per-NIC worker thread calls the driver's
 * poll, which hands every received frame to nic_rx; in interrupt mode the
 * device's interrupt (nic_irq) masks the device and wakes the worker, which
 * re-enables interrupts once a poll finds less than its budget (NAPI-like).
 * Hybrid mode is interrupt mode that stays polling after a busy wake-up
 * until the device has been idle for a few passes.
 * "nic.tx", "nic.rx", "nic.irq" and "nic.poll" are join points, and so is
 * "nic.sample": the worker calls it every NIC_SAMPLE_NS, and an aspect there
 * (aspects/nicmode.c) reads the NIC's counters and answers with the mode the
 * NIC should run in (ms_reply); nic_steer_apply follows the answer and falls
 * back to interrupt mode when the answers stop or make no sense.
 *
 *     struct nic *nic = nic_find("e1000.0");                     // or NULL
 *     nic_set_rx_handler(nic, stack_input, stack);               // frames arrive here
 *     nic_tx(nic, frame, 60); nic_set_mode(nic, NIC_MODE_POLLING);
 */
#ifndef MODULES_NIC_NIC_H
#define MODULES_NIC_NIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/spinlock.h"
#include "sched/sched.h"

#define NIC_NAME_MAX         16
#define NIC_MAC_LENGTH       6
#define NIC_FRAME_MAX        1518   /* Ethernet frame without the FCS, with a VLAN tag: 1514 + 4 */
#define NIC_FRAME_MIN        14     /* an Ethernet header */
#define NIC_POLL_BUDGET      64     /* frames one worker pass may deliver */
#define NIC_POLL_IDLE_NS     100000 /* polling mode: sleep this long after an empty pass */
#define NIC_COUNTER_NAME_MAX 24
#define NIC_HYBRID_BUSY      2        /* hybrid: frames in one wake-up that make it poll on */
#define NIC_HYBRID_IDLE      4        /* hybrid: empty passes that end the polling */
#define NIC_SAMPLE_NS        10000000 /* the worker calls nic.sample this often, at most */
#define NIC_SAMPLE_NEVER     UINT64_MAX
#define NIC_STEER_MISSES     3 /* samples without a reply before a steered NIC falls back */
/* A reply to nic.sample is a mode and a hold (frames, samples): the worker
 * leaves out the samples that come due until the NIC has moved `frames`
 * more frames in and out or `samples` of them were left out, whichever is
 * first; the mode the answer set holds that long unless the NIC's load
 * changes enough.  reply = mode | frames << NIC_REPLY_FRAMES_SHIFT |
 * samples << NIC_REPLY_SAMPLES_SHIFT; either 0: no hold. */
#define NIC_REPLY_MODE_MASK     0xff
#define NIC_REPLY_FRAMES_SHIFT  8
#define NIC_REPLY_SAMPLES_SHIFT 24
#define NIC_REPLY_FIELD_MASK    0xffff
#define NIC_REPLY_BITS          40 /* a reply with a bit above these is not one */
#define NIC_HOLD_MAX_FRAMES     4096
#define NIC_HOLD_MAX_SAMPLES    16  /* a dead monitor's hold lasts this many samples at most */
#define NIC_HISTORY             256 /* mode changes remembered per NIC */
/* A TCP/IPv4 frame that the device cuts into MTU-sized segments
 * (transmit_segmented): at most this long, headers included. */
#define NIC_SEGMENTED_MAX 65535 /* an IPv4 length field's most, and the e1000's */

enum nic_mode {
	NIC_MODE_INTERRUPT, /* device interrupts wake the worker */
	NIC_MODE_POLLING,   /* interrupts off; the worker polls continuously */
	NIC_MODE_HYBRID,    /* interrupts; a busy wake-up polls on until idle */
	NIC_MODE_COUNT,
};

enum nic_link { NIC_LINK_DOWN, NIC_LINK_UP };

struct nic;

/* The stack's input: one received frame (Ethernet header first, no FCS),
 * valid only during the call.  Runs in the NIC's worker thread (may sleep
 * briefly, should not block for long). */
typedef void (*nic_rx_fn)(struct nic *nic, const void *frame, size_t length, void *context);

/* Called by nic_for_each and nic_list_counters. */
typedef int (*nic_visit_fn)(struct nic *nic, void *arg);
typedef void (*nic_counter_fn)(const char *name, uint64_t value, void *arg);

/* What a driver provides.  All are called with no NIC lock held, from thread
 * context except disable_interrupts (also from the interrupt handler).
 * transmit and disable_interrupts must not sleep (spinlocks and device
 * registers only): nic.tx and nic.irq are _NOSLEEP join points. */
struct nic_ops {
	/* Queues frame (length bytes, header first, no FCS) for transmission; the
	 * frame is copied before returning.  Returns 0, -EAGAIN (ring full),
	 * -EINVAL (length out of range) or -EIO (link down or device failed). */
	int (*transmit)(struct nic *nic, const void *frame, size_t length);
	/* Reclaims finished transmissions and hands up to budget received frames
	 * to nic_rx.  Returns the number of frames delivered (<= budget). */
	unsigned (*poll)(struct nic *nic, unsigned budget);
	/* Unmask / mask the device's interrupts (and, for virtio, used-buffer
	 * notifications).  enable must leave no frame unnoticed: a frame that
	 * arrived while masked raises an interrupt or is found by the next poll. */
	void (*enable_interrupts)(struct nic *nic);
	void (*disable_interrupts)(struct nic *nic);
	/* Optional: told about a mode change after it happened (NULL: nothing). */
	void (*set_mode)(struct nic *nic, enum nic_mode mode);
	/* Reads the counter called name (hardware or driver).  Returns 0 with
	 * *value, or -ENOENT (no such counter). */
	int (*read_counter)(struct nic *nic, const char *name, uint64_t *value);
	/* Calls fn(name, value, arg) for every counter the driver has. */
	void (*list_counters)(struct nic *nic, nic_counter_fn fn, void *arg);
	/* Optional: refreshes nic->link from the device (NULL: driver keeps it). */
	void (*update_link)(struct nic *nic);
	/* Optional (TCP segmentation offload; NULL: the device has none): queues
	 * one Ethernet + IPv4 + TCP frame of up to NIC_SEGMENTED_MAX bytes whose
	 * headers take header_length bytes; the device sends it as segments of
	 * mtu - IP and TCP header bytes of payload each, with the IP length, id
	 * and checksum, the sequence number, the flags (FIN and PSH on the last
	 * only) and the TCP checksum made per segment.  The frame is copied.
	 * Returns 0, -EINVAL (not such a frame), -EAGAIN (ring full) or -EIO. */
	int (*transmit_segmented)(struct nic *nic, const void *frame, size_t length,
				  size_t header_length);
	/* Optional: brings the driver's counter totals up to date from the
	 * device, for counters the device itself can only hold for so long
	 * (the e1000's clear-on-read registers stop at 0xffffffff).  The worker
	 * calls it at least every counter_refresh_ns, busy or idle, whether or
	 * not anybody reads the counters; thread context, may not sleep. */
	void (*refresh_counters)(struct nic *nic);
};

/* One interface.  The driver sets the fields above the line before
 * nic_register; the rest belongs to drivers/net. */
struct nic {
	char name[NIC_NAME_MAX]; /* "e1000.0", "virtio-net.0": nic_register fills the index */
	uint8_t mac[NIC_MAC_LENGTH];
	unsigned mtu; /* payload bytes, 1500 */
	volatile enum nic_link link;
	const struct nic_ops *ops;
	void *driver; /* the driver's own state */
	/* The device completes the TCP checksum of every TCP/IPv4 frame it is
	 * given (nic_tcp_checksum_start finds one), whatever the frame's checksum
	 * field holds: the stack may leave it out. */
	bool tx_tcp_checksum;
	/* With transmit_segmented: the most segments one frame may make (a
	 * driver that cuts frames itself offers them all at once, so no more
	 * than its transmit ring holds); 0: as many as NIC_SEGMENTED_MAX holds. */
	unsigned tx_segments_max;
	/* With refresh_counters: the longest the worker waits between two
	 * calls (0: it never calls it). */
	uint64_t counter_refresh_ns;

	/* ---- owned by drivers/net ---- */
	volatile enum nic_mode mode;
	nic_rx_fn rx_handler;
	void *rx_context;
	struct nic *next;
	struct thread *worker;
	struct waitq worker_queue;
	volatile bool work_pending;               /* an interrupt asked for a poll */
	volatile bool mode_changed;               /* the worker must apply mode */
	struct spinlock lock;                     /* mode, handler, pending */
	struct mutex poll_lock;                   /* one poll pass at a time */
	uint64_t rx_frames, rx_bytes, rx_dropped; /* seen by nic_rx */
	uint64_t tx_frames, tx_bytes, tx_errors;  /* seen by nic_tx */
	uint64_t tx_completions;                  /* nic_tx_done */
	uint64_t interrupts, polls, empty_polls;
	unsigned index; /* registration order: device "nic<index>" */
	/* NIC_SAMPLE_NS; NIC_SAMPLE_NEVER (set before nic_register): only the
	 * callers of nic_steer sample (tests) */
	uint64_t sample_interval_ns;
	uint64_t last_sample_ns;  /* the last nic.sample */
	uint64_t last_due_ns;     /* the last sample that came due, sent or left out */
	uint64_t last_refresh_ns; /* the last refresh_counters */
	bool steered;             /* the mode follows nic.sample's replies */
	unsigned steer_misses;    /* samples since the last reply */
	/* The last reply's hold: while the NIC is in hold_mode, has moved
	 * fewer than hold_until_frames (rx_frames + tx_frames) and
	 * hold_samples_left > 0, the worker leaves its samples out. */
	uint64_t hold_until_frames;
	uint64_t hold_seen_frames; /* at the reply or the last sample left out */
	unsigned hold_samples_left;
	enum nic_mode hold_mode;
	uint64_t samples, steer_replies, steer_bad_replies, steer_fallbacks, mode_switches;
	uint64_t samples_held; /* samples that were due but left out under a hold */
	uint64_t hybrid_polls; /* hybrid wake-ups busy enough to poll on */
	struct nic_mode_change {
		uint64_t ns; /* clock_ns() */
		enum nic_mode mode;
	} history[NIC_HISTORY]; /* the last mode changes, a ring (under lock) */
	uint64_t history_count; /* changes ever recorded */
};

/* ---- Drivers ------------------------------------------------------------- */

/* Adds nic under the name base + "." + the next index for base ("e1000" ->
 * "e1000.0"), in interrupt mode with interrupts enabled, and starts its
 * worker.  Returns 0, -EINVAL (missing ops or name), -ENOMEM (no worker). */
int nic_register(struct nic *nic, const char *base);
/* A driver hands each received frame here (from its poll).  Frames shorter
 * than NIC_FRAME_MIN or longer than NIC_FRAME_MAX are dropped and counted.
 * Calls the rx handler if one is set (else counts a drop). */
void nic_rx(struct nic *nic, const void *frame, size_t length);
/* A driver's interrupt handler calls this when the device signalled receive
 * (or transmit) work: masks the device and wakes the worker.  Interrupt-safe. */
void nic_irq(struct nic *nic);
/* A driver's transmit calls nic_tx_queued when it has handed a frame to the
 * device in ring slot slot (the slot whose completion says the frame is
 * sent: the last descriptor of a multi-descriptor frame), and its reclaim
 * calls nic_tx_done for each such slot it finds done (the device wrote it
 * back).  The join points nic.tx_queued and nic.tx_done, where the nictx
 * latency tracker times a frame in the device; counted in tx_completions.
 * Any context (drivers call them under their transmit lock). */
void nic_tx_queued(struct nic *nic, unsigned slot);
void nic_tx_done(struct nic *nic, unsigned slot);

/* ---- The stack and the shell --------------------------------------------- */

/* Returns the NIC named name, or NULL. */
struct nic *nic_find(const char *name);
/* The first registered NIC (the default interface), or NULL. */
struct nic *nic_first(void);
/* Calls fn(nic, arg) for each NIC in registration order until it returns
 * non-zero; returns that value, or 0. */
int nic_for_each(nic_visit_fn fn, void *arg);
/* Sets the receive handler (NULL: frames are counted and dropped).  Returns 0
 * or -EINVAL (nic NULL). */
int nic_set_rx_handler(struct nic *nic, nic_rx_fn fn, void *context);
/* Transmits one frame (copied).  Returns 0, or -EINVAL (nic NULL, length
 * outside NIC_FRAME_MIN..NIC_FRAME_MAX), -EAGAIN (ring full), -EIO (link
 * down or device failed). */
int nic_tx(struct nic *nic, const void *frame, size_t length);
/* Whether nic can cut large TCP frames into segments itself (the driver has
 * transmit_segmented). */
bool nic_can_segment(const struct nic *nic);
/* Transmits one TCP/IPv4 frame longer than the MTU (see transmit_segmented):
 * the device sends it as MTU-sized segments.  Returns 0, or -EINVAL (nic
 * NULL, no segmentation, length or header_length out of range), -EAGAIN,
 * -EIO. */
int nic_tx_segmented(struct nic *nic, const void *frame, size_t length, size_t header_length);
/* The IP header's length in frame, an Ethernet + IPv4 + TCP frame whose
 * headers take header_length bytes and leave a payload; 0 when it is not one
 * or the lengths do not add up (segment.c; a segmenting driver's check). */
size_t nic_tcp_ip_length(const void *frame, size_t length, size_t header_length);
/* The ones' complement sum (net_checksum's, in wire order) of the TCP
 * pseudo header for the IPv4 header at ip and tcp_bytes of TCP header and
 * payload: what a device that completes the checksum wants in the TCP
 * checksum field (tcp_bytes 0 for a device that adds each segment's length
 * itself, as the e1000's segmentation does). */
uint16_t nic_tcp_pseudo_sum(const void *ip, size_t tcp_bytes);
/* Writes that sum into the TCP checksum field of frame (an Ethernet + IPv4 +
 * TCP frame whose TCP header starts at start), for a device to complete. */
void nic_seed_tcp_checksum(void *frame, size_t start, size_t tcp_bytes);
/* Where the TCP header of frame (an Ethernet + IPv4 + TCP frame of length
 * bytes, not an IP fragment, its TCP header whole) starts, with the TCP
 * header and payload bytes the IP header says in *tcp_bytes; 0 for any other
 * frame (segment.c).  Where a device that completes checksums puts it. */
size_t nic_tcp_checksum_start(const void *frame, size_t length, size_t *tcp_bytes);
/* TCP segmentation in software (segment.c), for a driver's transmit_segmented
 * when its device cannot cut frames: frame and header_length as
 * transmit_segmented gets them, mtu the wire's (each segment carries the MTU
 * less the IP and TCP headers of payload).  The number of segments, 0 when
 * frame is not an IPv4 TCP frame with those headers or they fill the MTU. */
unsigned nic_segment_count(const void *frame, size_t length, size_t header_length, size_t mtu);
/* Writes segment index of frame into out (NIC_FRAME_MIN + mtu bytes at most)
 * with its own IP length, id, checksum, sequence number, flags (FIN and PSH
 * on the last only) and TCP checksum.  Returns its length, 0 when there is
 * no such segment. */
size_t nic_segment_write(const void *frame, size_t length, size_t header_length, size_t mtu,
			 unsigned index, void *out);
/* Runs one poll pass of at most budget frames in the caller's thread.  Returns
 * the frames delivered.  The worker calls it; tests may too. */
unsigned nic_poll(struct nic *nic, unsigned budget);
/* Switches between interrupt and polling mode; takes effect at the worker's
 * next pass, without losing a frame the device delivered.  Returns 0 or
 * -EINVAL (nic NULL or mode unknown). */
int nic_set_mode(struct nic *nic, enum nic_mode mode);
/* nic_set_mode by hand (the console): the NIC stops following the replies
 * to its samples (until the next one comes), so a monitor that goes away
 * later does not put it back on interrupts. */
int nic_set_mode_by_hand(struct nic *nic, enum nic_mode mode);
/* The decision join point: the NIC's number, its mode and the time since the
 * previous sample, for an aspect that reads the counters (ms_device_counter
 * on "nic<index>" or the NIC's name) and answers with an enum nic_mode and
 * a hold (ms_reply, NIC_REPLY_*).  Called by the worker every
 * sample_interval_ns unless a hold leaves it out; tests may. */
void nic_sample(struct nic *nic, unsigned index, unsigned mode, uint64_t elapsed_us);
/* Takes the reply to the NIC's samples, if one came, and switches to the
 * mode it names; its hold starts now.  With none, a NIC whose mode follows
 * the replies falls back to interrupt mode after NIC_STEER_MISSES samples
 * without one; a reply that names no mode or a hold above
 * NIC_HOLD_MAX_FRAMES or NIC_HOLD_MAX_SAMPLES makes it fall back at once.
 * Returns the mode applied, -ENOENT (no reply) or -EINVAL (a reply that
 * makes no sense). */
int nic_steer_apply(struct nic *nic);
/* True while the last reply's hold lasts: the NIC follows the replies, is in
 * the mode the reply set, has moved fewer frames than the hold's since it
 * came, and fewer samples than the hold's were left out.  The worker does
 * not sample then (nic_steer_unless_held). */
bool nic_steer_held(struct nic *nic);
/* True when a reply to the NIC's samples waits for nic_steer_apply. */
bool nic_steer_reply_waiting(struct nic *nic);
/* nic_sample with the time since the last one, then nic_steer_apply. */
int nic_steer(struct nic *nic);
/* What the worker does when a sample is due (sample_interval_ns after the
 * last one due): nic_steer, unless nic_steer_held, when it only counts the
 * sample left out (samples_held, and one of the hold's samples) and returns
 * -EBUSY.  A hold of polling or hybrid mode ends at a sample that finds no
 * frame moved since the one before (the load it was held for has gone). */
int nic_steer_unless_held(struct nic *nic);
/* Calls fn(ns, mode, arg) for the last mode changes (at most NIC_HISTORY),
 * oldest first: when each happened (clock_ns) and the mode it set. */
void nic_mode_history(struct nic *nic, void (*fn)(uint64_t ns, enum nic_mode mode, void *arg),
		      void *arg);
/* Reads a counter by name: the module's own ("rx_frames", "tx_frames",
 * "rx_dropped", "interrupts", "polls", ...) or the driver's ("rx_packets",
 * "GPRC", ...).  Returns 0 with *value, or -EINVAL (NULL), -ENOENT. */
int nic_read_counter(struct nic *nic, const char *name, uint64_t *value);
/* Calls fn for every counter, the module's then the driver's. */
void nic_list_counters(struct nic *nic, nic_counter_fn fn, void *arg);
/* Human-readable "interrupt"/"polling"/"hybrid" and "up"/"down". */
const char *nic_mode_name(enum nic_mode mode);
/* The link as the device reports it now (a driver whose interrupts do not
 * say when it changes, virtio-net's on MSI-X, is asked), else as kept. */
enum nic_link nic_link_now(struct nic *nic);
const char *nic_link_name(enum nic_link link);
/* Number of registered NICs. */
unsigned nic_count(void);

#endif
