/*
 * The NIC module: a registry of network interfaces and, per interface, a
 * worker thread that moves received frames from the driver to the stack.
 *
 * The worker is the only caller of the driver's poll outside tests, and
 * poll_lock serialises passes anyway, so a driver's receive ring has one
 * consumer.  Interrupt mode works like NAPI: nic_irq (interrupt context)
 * masks the device, sets work_pending and wakes the worker; the worker polls
 * in passes of NIC_POLL_BUDGET frames until a pass comes back short, then
 * unmasks and polls once more, so a frame that landed between the last pass
 * and the unmask is picked up now rather than by the next interrupt (which,
 * with edge-triggered MSI, might never come).  Polling mode keeps the device
 * masked; the worker polls continuously, yielding after a busy pass and
 * sleeping NIC_POLL_IDLE_NS after an empty one.  A mode switch only sets a flag and wakes
 * the worker, which applies it between passes: frames stay in the device's
 * ring until some pass takes them, so none is lost.  Hybrid mode is interrupt
 * mode until a wake-up finds NIC_HYBRID_BUSY frames, then polling (as in
 * polling mode) until NIC_HYBRID_IDLE passes in a row find nothing, then
 * interrupts again.
 *
 * The decision loop: every NIC_SAMPLE_NS of worker passes the worker calls
 * the join point nic.sample; an aspect there (aspects/nicmode.c, in any
 * binding) reads the NIC's counters and answers with a mode (ms_reply,
 * posted under the join point and this NIC: linker/weave/reply.c), which
 * nic_steer_apply takes and applies.  An answer may carry a hold: the
 * worker leaves out its samples until the NIC has moved so many frames or
 * so many samples were left out (an idle NIC on interrupts then costs no
 * monitor round trip per wake-up, a busy one polling fewer); the driver
 * bounds both, so a hold given by a monitor that then dies ends after
 * NIC_HOLD_MAX_SAMPLES samples.  The answer is not trusted: one that names
 * no mode or a hold above the bounds, or answers that stop coming (a monitor
 * that died or was unlinked), put the NIC back in interrupt mode, which
 * needs nobody.
 *
 * A driver whose device counters stop counting unless read (the e1000's)
 * gives refresh_counters: the worker calls it every counter_refresh_ns
 * between passes, and wakes for it when idle, so that the counters hold
 * every event even when nobody reads them (no aspect linked) for hours.
 *
 * ms_device_counter reaches the NICs' counters through the source this module
 * registers with the linker: a device is a NIC's name or "nic<index>".
 *
 * NICs are never removed: the list is append-only and is walked without a
 * lock once a NIC has been published (its next pointer written last).
 */
#include "net/nic.h"

#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "linker/weave/weave.h"
#include "time/time.h"

static struct spinlock nic_list_lock = SPINLOCK_INIT("nic.list");
static struct nic *nic_head;
static struct nic *volatile *nic_tail = &nic_head;
static unsigned nic_total;

/* ---- Counters of the module ---------------------------------------------- */

static void nic_add(uint64_t *counter, uint64_t amount)
{
	__atomic_fetch_add(counter, amount, __ATOMIC_RELAXED);
}

struct nic_own_counter {
	const char *name;
	size_t offset;
};

#define NIC_OWN(field)                              \
	{                                           \
#field, offsetof(struct nic, field) \
	}
static const struct nic_own_counter nic_own_counters[] = {
    NIC_OWN(rx_frames),         NIC_OWN(rx_bytes),        NIC_OWN(rx_dropped),
    NIC_OWN(tx_frames),         NIC_OWN(tx_bytes),        NIC_OWN(tx_errors),
    NIC_OWN(tx_completions),    NIC_OWN(interrupts),      NIC_OWN(polls),
    NIC_OWN(empty_polls),       NIC_OWN(samples),         NIC_OWN(steer_replies),
    NIC_OWN(steer_bad_replies), NIC_OWN(steer_fallbacks), NIC_OWN(mode_switches),
    NIC_OWN(hybrid_polls),      NIC_OWN(samples_held),
};
#define NIC_OWN_COUNT (sizeof(nic_own_counters) / sizeof(nic_own_counters[0]))

static uint64_t nic_own_value(const struct nic *nic, unsigned i)
{
	const uint64_t *field = (const uint64_t *)((const char *)nic + nic_own_counters[i].offset);
	return __atomic_load_n(field, __ATOMIC_RELAXED);
}

/* ---- The worker ---------------------------------------------------------- */

static bool nic_worker_has_work(void *arg)
{
	struct nic *nic = arg;
	return nic->work_pending || nic->mode_changed || nic->mode == NIC_MODE_POLLING;
}

/* Takes the pending request and the mode change; returns the mode to run. */
static enum nic_mode nic_take_work(struct nic *nic)
{
	uint64_t flags = spin_lock_irqsave(&nic->lock);
	nic->work_pending = false;
	nic->mode_changed = false;
	enum nic_mode mode = nic->mode;
	spin_unlock_irqrestore(&nic->lock, flags);
	return mode;
}

static void nic_maybe_steer(struct nic *nic, uint64_t now)
{
	if (nic->sample_interval_ns == NIC_SAMPLE_NEVER)
		return;
	if (now - nic->last_due_ns >= nic->sample_interval_ns) {
		nic->last_due_ns = now;
		nic_steer_unless_held(nic);
	}
}

/* How often the driver's counters need a refresh; 0: never. */
static uint64_t nic_refresh_interval(const struct nic *nic)
{
	if (!nic->ops->refresh_counters)
		return 0;
	return __atomic_load_n(&nic->counter_refresh_ns, __ATOMIC_RELAXED);
}

static void nic_maybe_refresh_counters(struct nic *nic, uint64_t now)
{
	uint64_t interval = nic_refresh_interval(nic);
	if (interval && now - nic->last_refresh_ns >= interval) {
		nic->last_refresh_ns = now;
		nic->ops->refresh_counters(nic);
	}
}

/* Between passes, busy or not: the sample and the counters' refresh, when
 * due. */
static void nic_worker_periodic(struct nic *nic)
{
	uint64_t now = clock_ns();
	nic_maybe_steer(nic, now);
	nic_maybe_refresh_counters(nic, now);
}

/* Sleeps until there is work.  A NIC whose counters need refreshing wakes
 * when the refresh is due even if nothing else happens (interrupt mode, no
 * traffic: nobody else would wake it), refreshes and sleeps on, without a
 * poll pass. */
static void nic_worker_wait(struct nic *nic)
{
	for (;;) {
		uint64_t interval = nic_refresh_interval(nic);
		if (!interval) {
			waitq_wait(&nic->worker_queue, nic_worker_has_work, nic);
			return;
		}
		uint64_t elapsed = clock_ns() - nic->last_refresh_ns;
		uint64_t left = elapsed < interval ? interval - elapsed : 0;
		if (waitq_wait_timeout(&nic->worker_queue, nic_worker_has_work, nic, left) == 0)
			return;
		nic_maybe_refresh_counters(nic, clock_ns());
	}
}

/* Interrupt mode, device masked: drain, unmask, then catch the race window.
 * Returns the frames delivered. */
static unsigned nic_worker_interrupt_pass(struct nic *nic, enum nic_mode mode)
{
	unsigned total = 0, got;
	for (;;) {
		while ((got = nic_poll(nic, NIC_POLL_BUDGET)) == NIC_POLL_BUDGET) {
			total += got;
			nic_worker_periodic(nic);
			if (nic->mode != mode)
				return total;
			sched_yield();
		}
		total += got;
		if (nic->mode != mode)
			return total;
		if (mode == NIC_MODE_HYBRID && total >= NIC_HYBRID_BUSY)
			return total; /* busy: the hybrid pass polls on, masked */
		nic->ops->enable_interrupts(nic);
		if ((got = nic_poll(nic, NIC_POLL_BUDGET)) == 0)
			return total;
		total += got;
		nic->ops->disable_interrupts(nic);
	}
}

static void nic_worker_polling_pass(struct nic *nic)
{
	if (nic_poll(nic, NIC_POLL_BUDGET) == 0)
		sched_sleep_ns(NIC_POLL_IDLE_NS);
	else
		sched_yield();
}

/* Hybrid mode: an interrupt woke the worker.  A quiet wake-up is handled as
 * in interrupt mode; a busy one keeps the device masked and polls until
 * NIC_HYBRID_IDLE passes in a row find nothing (NAPI with a linger). */
static void nic_worker_hybrid_pass(struct nic *nic)
{
	if (nic_worker_interrupt_pass(nic, NIC_MODE_HYBRID) < NIC_HYBRID_BUSY)
		return; /* interrupts are on again (or the mode changed) */
	nic_add(&nic->hybrid_polls, 1);
	for (unsigned empty = 0; nic->mode == NIC_MODE_HYBRID;) {
		nic_worker_periodic(nic);
		if (nic_poll(nic, NIC_POLL_BUDGET)) {
			empty = 0;
			sched_yield();
			continue;
		}
		if (++empty < NIC_HYBRID_IDLE) {
			sched_sleep_ns(NIC_POLL_IDLE_NS);
			continue;
		}
		nic->ops->enable_interrupts(nic);
		if (nic_poll(nic, NIC_POLL_BUDGET) == 0)
			return;
		nic->ops->disable_interrupts(nic);
		empty = 0;
	}
}

static int nic_worker(void *arg)
{
	struct nic *nic = arg;
	enum nic_mode applied = NIC_MODE_INTERRUPT;

	for (;;) {
		nic_worker_wait(nic);
		enum nic_mode mode = nic_take_work(nic);
		if (mode != applied) {
			if (mode == NIC_MODE_POLLING)
				nic->ops->disable_interrupts(nic);
			if (nic->ops->set_mode)
				nic->ops->set_mode(nic, mode);
			applied = mode;
		}
		if (mode == NIC_MODE_POLLING)
			nic_worker_polling_pass(nic);
		else if (mode == NIC_MODE_HYBRID)
			nic_worker_hybrid_pass(nic);
		else
			nic_worker_interrupt_pass(nic, NIC_MODE_INTERRUPT);
		nic_worker_periodic(nic);
	}
	return 0;
}

/* ---- Registration -------------------------------------------------------- */

/* "nic<index>" (the NIC's number) or the NIC's own name. */
static struct nic *nic_by_device_name(const char *device)
{
	if (strncmp(device, "nic", 3) == 0 && device[3] >= '0' && device[3] <= '9') {
		unsigned index = 0;
		const char *p = device + 3;
		for (; *p >= '0' && *p <= '9' && index < 1000; p++)
			index = index * 10 + (unsigned)(*p - '0');
		for (struct nic *nic = nic_first(); !*p && nic;
		     nic = __atomic_load_n(&nic->next, __ATOMIC_ACQUIRE))
			if (nic->index == index)
				return nic;
		return NULL;
	}
	return nic_find(device);
}

/* The linker's device source: ms_device_counter("e1000.0" or "nic0", ...).
 * Runs inside direct advice too: every counter read is a load, a device
 * register or a spinlock. */
static int nic_device_counter(const char *device, const char *counter, uint64_t *value)
{
	struct nic *nic = nic_by_device_name(device);
	return nic ? nic_read_counter(nic, counter, value) : -ENOENT;
}

static unsigned nic_next_index(const char *base)
{
	unsigned index = 0;
	size_t length = strlen(base);
	for (struct nic *nic = nic_head; nic; nic = nic->next)
		if (strncmp(nic->name, base, length) == 0 && nic->name[length] == '.')
			index++;
	return index;
}

static bool nic_ops_complete(const struct nic_ops *ops)
{
	return ops && ops->transmit && ops->poll && ops->enable_interrupts &&
	       ops->disable_interrupts && ops->read_counter && ops->list_counters;
}

static void nic_init_state(struct nic *nic)
{
	nic->mode = NIC_MODE_INTERRUPT;
	nic->rx_handler = NULL;
	nic->rx_context = NULL;
	nic->next = NULL;
	nic->work_pending = true; /* a first pass picks up frames already there */
	nic->mode_changed = false;
	waitq_init(&nic->worker_queue, "nic.worker");
	spin_init(&nic->lock, "nic");
	mutex_init(&nic->poll_lock, "nic.poll");
	nic->rx_frames = nic->rx_bytes = nic->rx_dropped = 0;
	nic->tx_frames = nic->tx_bytes = nic->tx_errors = nic->tx_completions = 0;
	nic->interrupts = nic->polls = nic->empty_polls = 0;
	if (nic->sample_interval_ns != NIC_SAMPLE_NEVER) /* a test's NIC: samples by hand */
		nic->sample_interval_ns = NIC_SAMPLE_NS;
	nic->last_sample_ns = nic->last_due_ns = nic->last_refresh_ns = clock_ns();
	nic->steered = false;
	nic->steer_misses = 0;
	nic->hold_until_frames = 0;
	nic->hold_samples_left = 0;
	nic->samples = nic->steer_replies = nic->steer_bad_replies = 0;
	nic->steer_fallbacks = nic->mode_switches = nic->hybrid_polls = 0;
	nic->samples_held = 0;
	nic->history_count = 0;
}

int nic_register(struct nic *nic, const char *base)
{
	if (!nic || !base || !base[0] || strlen(base) > NIC_NAME_MAX - 4 ||
	    !nic_ops_complete(nic->ops))
		return -EINVAL;
	nic_init_state(nic);
	uint64_t flags = spin_lock_irqsave(&nic_list_lock);
	snprintf(nic->name, sizeof(nic->name), "%s.%u", base, nic_next_index(base));
	nic->index = nic_total; /* nic_total only grows, under this lock */
	spin_unlock_irqrestore(&nic_list_lock, flags);
	linker_set_device_source(nic_device_counter);

	nic->ops->disable_interrupts(nic);
	nic->worker = thread_create(nic_worker, nic, nic->name, SCHED_PRIORITY_HIGH);
	if (!nic->worker)
		return -ENOMEM;
	thread_detach(nic->worker);

	flags = spin_lock_irqsave(&nic_list_lock);
	__atomic_store_n(nic_tail, nic, __ATOMIC_RELEASE);
	nic_tail = &nic->next;
	nic_total++;
	spin_unlock_irqrestore(&nic_list_lock, flags);
	pr_info("nic: %s %02x:%02x:%02x:%02x:%02x:%02x mtu %u link %s\n", nic->name, nic->mac[0],
		nic->mac[1], nic->mac[2], nic->mac[3], nic->mac[4], nic->mac[5], nic->mtu,
		nic_link_name(nic->link));
	return 0;
}

/* ---- The join-point boundary --------------------------------------------- */

static bool nic_length_valid(size_t length)
{
	return length >= NIC_FRAME_MIN && length <= NIC_FRAME_MAX;
}

JOINPOINT_DEFINE_VOID(nic, rx, struct nic *, nic, const void *, frame, size_t, length)
{
	if (!frame || !nic_length_valid(length) || !nic->rx_handler) {
		nic_add(&nic->rx_dropped, 1);
		return;
	}
	nic_add(&nic->rx_frames, 1);
	nic_add(&nic->rx_bytes, length);
	nic->rx_handler(nic, frame, length, nic->rx_context);
}

/* nic.irq and nic.tx are _NOSLEEP: the first runs in the interrupt handler,
 * the second under lwIP's core lock; both take only spinlocks and the
 * driver's ops they call must not sleep either (nic.h).  nic.rx and nic.poll
 * hand frames to the stack, which takes its core mutex: they may sleep. */
JOINPOINT_DEFINE_VOID_NOSLEEP(nic, irq, struct nic *, nic)
{
	nic->ops->disable_interrupts(nic);
	nic_add(&nic->interrupts, 1);
	uint64_t flags = spin_lock_irqsave(&nic->lock);
	nic->work_pending = true;
	spin_unlock_irqrestore(&nic->lock, flags);
	waitq_wake_one(&nic->worker_queue);
}

JOINPOINT_DEFINE_NOSLEEP(nic, tx, int, struct nic *, nic, const void *, frame, size_t, length)
{
	if (!nic || !frame || !nic_length_valid(length))
		return -EINVAL;
	int error = nic->ops->transmit(nic, frame, length);
	if (error) {
		nic_add(&nic->tx_errors, 1);
		return error;
	}
	nic_add(&nic->tx_frames, 1);
	nic_add(&nic->tx_bytes, length);
	return 0;
}

/* nic.tx_queued and nic.tx_done: the frame's time in the device, seen
 * from the driver (done when its reclaim finds the slot written back: at the
 * next transmit or poll).  _NOSLEEP: under the driver's transmit lock. */
JOINPOINT_DEFINE_VOID_NOSLEEP(nic, tx_queued, struct nic *, nic, unsigned, slot)
{
}

JOINPOINT_DEFINE_VOID_NOSLEEP(nic, tx_done, struct nic *, nic, unsigned, slot)
{
	nic_add(&nic->tx_completions, 1);
}

bool nic_can_segment(const struct nic *nic)
{
	return nic && nic->ops && nic->ops->transmit_segmented;
}

/* nic.tx_segmented: like nic.tx, one call per large frame; the frames the
 * device makes of it count once, with all their payload bytes. */
JOINPOINT_DEFINE_NOSLEEP(nic, tx_segmented, int, struct nic *, nic, const void *, frame, size_t,
			 length, size_t, header_length)
{
	if (!nic_can_segment(nic) || !frame || length > NIC_SEGMENTED_MAX ||
	    header_length < NIC_FRAME_MIN || header_length >= length)
		return -EINVAL;
	int error = nic->ops->transmit_segmented(nic, frame, length, header_length);
	if (error) {
		nic_add(&nic->tx_errors, 1);
		return error;
	}
	nic_add(&nic->tx_frames, 1);
	nic_add(&nic->tx_bytes, length);
	return 0;
}

JOINPOINT_DEFINE(nic, poll, unsigned, struct nic *, nic, unsigned, budget)
{
	mutex_lock(&nic->poll_lock);
	unsigned delivered = nic->ops->poll(nic, budget);
	mutex_unlock(&nic->poll_lock);
	nic_add(&nic->polls, 1);
	if (delivered == 0)
		nic_add(&nic->empty_polls, 1);
	return delivered;
}

/* The decision point.  Its body only counts: what matters is the advice on
 * it, whose reply nic_steer_apply takes.  It may sleep, so a synchronous
 * msg advice blocks the worker here and hands the CPU to the monitor. */
JOINPOINT_DEFINE_VOID(nic, sample, struct nic *, nic, unsigned, index, unsigned, mode, uint64_t,
		      elapsed_us)
{
	nic_add(&nic->samples, 1);
}

/* ---- Following the replies ------------------------------------------------ */

/* The frames the NIC has moved, the count a hold is measured in. */
static uint64_t nic_frames_moved(const struct nic *nic)
{
	return __atomic_load_n(&nic->rx_frames, __ATOMIC_RELAXED) +
	       __atomic_load_n(&nic->tx_frames, __ATOMIC_RELAXED);
}

static void nic_fall_back(struct nic *nic)
{
	nic->steered = false;
	nic->steer_misses = 0;
	nic->hold_samples_left = 0;
	nic_add(&nic->steer_fallbacks, 1);
	if (nic->mode != NIC_MODE_INTERRUPT)
		nic_set_mode(nic, NIC_MODE_INTERRUPT);
}

int nic_steer_apply(struct nic *nic)
{
	int64_t reply;
	if (!aspect_reply_take(&jp_desc_nic_sample, (uint64_t)nic, &reply)) {
		if (nic->steered && ++nic->steer_misses >= NIC_STEER_MISSES)
			nic_fall_back(nic);
		return -ENOENT;
	}
	int64_t mode = reply & NIC_REPLY_MODE_MASK,
		frames = (reply >> NIC_REPLY_FRAMES_SHIFT) & NIC_REPLY_FIELD_MASK,
		samples = (reply >> NIC_REPLY_SAMPLES_SHIFT) & NIC_REPLY_FIELD_MASK;
	if (reply < 0 || reply >> NIC_REPLY_BITS || mode >= NIC_MODE_COUNT ||
	    frames > NIC_HOLD_MAX_FRAMES || samples > NIC_HOLD_MAX_SAMPLES) {
		nic_add(&nic->steer_bad_replies, 1);
		nic_fall_back(nic);
		return -EINVAL;
	}
	nic_add(&nic->steer_replies, 1);
	nic->steered = true;
	nic->steer_misses = 0;
	nic->hold_mode = (enum nic_mode)mode;
	nic->hold_seen_frames = nic_frames_moved(nic);
	nic->hold_until_frames = nic->hold_seen_frames + (uint64_t)frames;
	nic->hold_samples_left = frames ? (unsigned)samples : 0;
	if (nic->mode != (enum nic_mode)mode) {
		nic_add(&nic->mode_switches, 1);
		nic_set_mode(nic, (enum nic_mode)mode);
	}
	return (int)mode;
}

bool nic_steer_held(struct nic *nic)
{
	return nic->steered && nic->hold_samples_left && nic->mode == nic->hold_mode &&
	       nic_frames_moved(nic) < nic->hold_until_frames;
}

bool nic_steer_reply_waiting(struct nic *nic)
{
	return aspect_reply_waiting(&jp_desc_nic_sample, (uint64_t)nic);
}

int nic_steer(struct nic *nic)
{
	uint64_t now = clock_ns();
	uint64_t elapsed_us = (now - nic->last_sample_ns) / 1000;
	nic->last_sample_ns = now;
	nic_sample(nic, nic->index, nic->mode, elapsed_us);
	return nic_steer_apply(nic);
}

int nic_steer_unless_held(struct nic *nic)
{
	uint64_t frames = nic_frames_moved(nic);
	bool load_gone = nic->hold_mode != NIC_MODE_INTERRUPT && frames == nic->hold_seen_frames;
	if (!nic_steer_held(nic) || load_gone) {
		nic->hold_samples_left = 0;
		return nic_steer(nic);
	}
	nic->hold_seen_frames = frames;
	nic->hold_samples_left--;
	nic_add(&nic->samples_held, 1);
	return -EBUSY;
}

/* ---- Lookup, settings, counters ------------------------------------------ */

struct nic *nic_find(const char *name)
{
	if (!name)
		return NULL;
	for (struct nic *nic = nic_first(); nic;
	     nic = __atomic_load_n(&nic->next, __ATOMIC_ACQUIRE))
		if (strcmp(nic->name, name) == 0)
			return nic;
	return NULL;
}

struct nic *nic_first(void)
{
	return __atomic_load_n(&nic_head, __ATOMIC_ACQUIRE);
}

int nic_for_each(nic_visit_fn fn, void *arg)
{
	for (struct nic *nic = nic_first(); nic;
	     nic = __atomic_load_n(&nic->next, __ATOMIC_ACQUIRE)) {
		int result = fn(nic, arg);
		if (result)
			return result;
	}
	return 0;
}

unsigned nic_count(void)
{
	return __atomic_load_n(&nic_total, __ATOMIC_ACQUIRE);
}

int nic_set_rx_handler(struct nic *nic, nic_rx_fn fn, void *context)
{
	if (!nic)
		return -EINVAL;
	mutex_lock(&nic->poll_lock); /* no frame is being delivered to the old one */
	nic->rx_context = context;
	nic->rx_handler = fn;
	mutex_unlock(&nic->poll_lock);
	return 0;
}

int nic_set_mode(struct nic *nic, enum nic_mode mode)
{
	if (!nic || (unsigned)mode >= NIC_MODE_COUNT)
		return -EINVAL;
	uint64_t flags = spin_lock_irqsave(&nic->lock);
	if (nic->mode != mode) {
		nic->mode = mode;
		nic->mode_changed = true;
		nic->work_pending = true;
		struct nic_mode_change *c = &nic->history[nic->history_count++ % NIC_HISTORY];
		c->ns = clock_ns();
		c->mode = mode;
	}
	spin_unlock_irqrestore(&nic->lock, flags);
	waitq_wake_one(&nic->worker_queue);
	return 0;
}

int nic_set_mode_by_hand(struct nic *nic, enum nic_mode mode)
{
	int error = nic_set_mode(nic, mode);
	if (!error) {
		nic->steered = false;
		nic->steer_misses = 0;
		nic->hold_samples_left = 0;
	}
	return error;
}

void nic_mode_history(struct nic *nic, void (*fn)(uint64_t ns, enum nic_mode mode, void *arg),
		      void *arg)
{
	static struct nic_mode_change copy[NIC_HISTORY];
	static struct mutex copy_lock = MUTEX_INIT(copy_lock, "nic.history");
	mutex_lock(&copy_lock);
	uint64_t flags = spin_lock_irqsave(&nic->lock);
	uint64_t count = nic->history_count;
	unsigned kept = count < NIC_HISTORY ? (unsigned)count : NIC_HISTORY;
	for (unsigned i = 0; i < kept; i++)
		copy[i] = nic->history[(count - kept + i) % NIC_HISTORY];
	spin_unlock_irqrestore(&nic->lock, flags);
	for (unsigned i = 0; i < kept; i++)
		fn(copy[i].ns, copy[i].mode, arg);
	mutex_unlock(&copy_lock);
}

int nic_read_counter(struct nic *nic, const char *name, uint64_t *value)
{
	if (!nic || !name || !value)
		return -EINVAL;
	for (unsigned i = 0; i < NIC_OWN_COUNT; i++) {
		if (strcmp(nic_own_counters[i].name, name) == 0) {
			*value = nic_own_value(nic, i);
			return 0;
		}
	}
	return nic->ops->read_counter(nic, name, value);
}

void nic_list_counters(struct nic *nic, nic_counter_fn fn, void *arg)
{
	for (unsigned i = 0; i < NIC_OWN_COUNT; i++)
		fn(nic_own_counters[i].name, nic_own_value(nic, i), arg);
	nic->ops->list_counters(nic, fn, arg);
}

const char *nic_mode_name(enum nic_mode mode)
{
	return mode == NIC_MODE_POLLING  ? "polling"
	       : mode == NIC_MODE_HYBRID ? "hybrid"
					 : "interrupt";
}

enum nic_link nic_link_now(struct nic *nic)
{
	if (nic->ops->update_link)
		nic->ops->update_link(nic);
	return nic->link;
}

const char *nic_link_name(enum nic_link link)
{
	return link == NIC_LINK_UP ? "up" : "down";
}
