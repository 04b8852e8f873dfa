/*
 * nicmode: decides whether a NIC takes interrupts, polls, or runs hybrid
 * (interrupts until busy, polling until idle), from the NIC's own counters.
 * drivers/net calls the join point nic.sample(nic, index, mode, elapsed_us)
 * every 10 ms of worker activity; this advice reads the counters of device
 * "nic<index>" (frames in and out; the e1000's missed-packet and no-buffer
 * counts; the virtio-net receive ring's pending entries), turns them into a
 * rate and a pressure over the elapsed time, and answers with a mode
 * (ms_reply), which the driver follows.  The same object decides the same in
 * every binding: the inputs are the counters and the arguments, the state is
 * this file's, and nothing depends on where or when it runs.
 *
 * Policy, per sample (counted in samples, not time), from the frames in and
 * out per second and the pressure (missed or no-buffer frames, a backed-up
 * receive ring):
 *   pressure: polling at once (frames are being dropped; polling takes them
 *       sooner than any interrupt);
 *   busy (rate >= BUSY_RATE) or high (rate >= HIGH_RATE): a trial, once busy
 *       for STEADY_SAMPLES samples in a row or high (hybrid until then), and
 *       the mode it chose for as long as the choice holds (below);
 *   idle (no pressure, rate < IDLE_RATE): interrupts once idle for
 *       IDLE_SAMPLES samples in a row, or at once when no frame moved at all
 *       (the load has gone: NAPI's empty poll), else the mode the NIC has;
 *   anything between: hybrid, but a NIC that polls goes on polling (it polls
 *       until idle, as NAPI does), and one in the mode a trial chose keeps it.
 * Which of polling and interrupts serves a busy load better depends on the
 * machine (what an interrupt costs, what a poll that finds nothing costs,
 * what the device model does meanwhile), so it is measured rather than
 * assumed: a trial polls for TRIAL_SAMPLES samples, takes interrupts for as
 * many, and keeps the mode whose samples moved more frames per second
 * (under a load that keeps every connection busy, the server's throughput);
 * polling must do better by 1/POLLING_MARGIN, so a tie keeps interrupts,
 * which answer sooner at a low load and need nobody.  The choice holds for
 * CHOICE_DECISIONS busy decisions, or until the load has gone (idle as
 * above) or frames are dropped (pressure), and then the next busy load is
 * tried again.  A sample is counted for the mode the NIC had while it was
 * taken (the join point's argument), and the trial runs until each mode has
 * its samples, so an answer applied a sample late (shm, one-way msg) does
 * not leave one mode short; but there the counters are read when the
 * monitor gets to the event, a few milliseconds after the sample, so each
 * window is offset from its mode's by that much, which pulls the two rates
 * together: a close call then goes to interrupts.
 * The first sample of a NIC in a copy of this object only notes the
 * counters and answers the mode the NIC has.  (Linked shm or msg, the monitor
 * loads a fresh copy; the kernel's `direct` copy keeps its state while the
 * aspect is bound elsewhere, so its first sample back measures the frames of
 * that whole time over one sample's elapsed time: a rate too high, which
 * may start a trial, which then measures the load as it is; but a trial it
 * had running counts that sample, and a choice it had holds on for the rest
 * of its decisions.  Unloading it and loading it again starts afresh.)
 * A settled answer holds: the reply says for how long (mode | frames << 8 |
 * samples << 24), and the driver leaves out the samples that come due until
 * the NIC has moved that many frames or that many samples were left out.
 * Interrupts under an idle load hold for IDLE_HOLD_FRAMES frames (what could
 * change the answer is a load that comes back; it is taken on interrupts
 * until then) or IDLE_HOLD_SAMPLES samples; a busy load's settled answer (a
 * trial's choice, polling under pressure; never a trial's own samples) holds
 * for POLL_HOLD_SAMPLES samples (what could change it is the load going
 * away, and the driver ends a hold of polling at a sample that finds no
 * frame moved).  An idle NIC woken by a request every few hundred
 * milliseconds then costs a sample (a round trip to this advice and its
 * counter reads) every IDLE_HOLD_FRAMES frames or IDLE_HOLD_SAMPLES wake-ups
 * instead of at nearly every wake-up, and a busy one every
 * POLL_HOLD_SAMPLES + 1 samples' time instead of every one.
 * Each decision is also a telemetry record (NICMODE_RECORD: index, mode
 * before and after, frames per second) and counted ("to_interrupt", ...).
 */
#include <microscope/aspect.h>

MS_ASPECT("nicmode", "decides a NIC's mode (interrupt, polling, hybrid) from its counters");

#define NICMODE_RECORD 0x6e6d /* "nm" */
#define NICS           8

#define MODE_INTERRUPT 0 /* enum nic_mode */
#define MODE_POLLING   1
#define MODE_HYBRID    2

#define HIGH_RATE         1000 /* frames per second in and out: ~350 small requests/s */
#define BUSY_RATE         400
#define IDLE_RATE         50
#define PENDING_BUSY      32 /* virtio-net: used receive entries not yet taken */
#define STEADY_SAMPLES    3
#define IDLE_SAMPLES      2
#define IDLE_HOLD_FRAMES  64   /* one poll pass's budget */
#define IDLE_HOLD_SAMPLES 16   /* NIC_HOLD_MAX_SAMPLES */
#define POLL_HOLD_FRAMES  4096 /* NIC_HOLD_MAX_FRAMES: the samples end it */
#define POLL_HOLD_SAMPLES 4    /* ... and a busy load's settled answer, polling or not */
#define TRIAL_SAMPLES     3    /* each mode's samples in a trial */
#define TRIAL_MAX         (4 * TRIAL_SAMPLES)
#define CHOICE_DECISIONS  32
#define POLLING_MARGIN    32 /* polling must serve 1/32 more than interrupts */
#define FRAMES_SHIFT      8  /* NIC_REPLY_FRAMES_SHIFT */
#define SAMPLES_SHIFT     24 /* NIC_REPLY_SAMPLES_SHIFT */

/* What a trial measured under one mode: frames and the time they took. */
struct tally {
	uint64_t frames, us;
	unsigned samples;
};

struct nic_state {
	int seen;
	uint64_t frames, missed;
	unsigned busy_streak, idle_streak;
	unsigned trial;        /* samples the running trial has counted + 1; 0: none runs */
	unsigned choice_left;  /* busy decisions the last trial's choice holds for */
	unsigned chosen;       /* that choice */
	struct tally tried[2]; /* the trial's: [0] interrupts, [1] polling */
};

static struct nic_state nics[NICS];

struct nicmode_record {
	uint32_t index, from, to, reserved;
	uint64_t rate;
};

static void device_name(unsigned index, char name[8])
{
	name[0] = 'n', name[1] = 'i', name[2] = 'c';
	name[3] = (char)('0' + index % 10);
	name[4] = '\0';
}

static uint64_t counter(const char *device, const char *name)
{
	uint64_t value = 0;
	return ms_device_counter(device, name, &value) == 0 ? value : 0;
}

static void start_trial(struct nic_state *s)
{
	s->trial = 1;
	s->tried[0] = s->tried[1] = (struct tally){0, 0, 0};
	ms_counter_add("trials", 1);
}

/* Polling only when its samples moved more frames per second by the margin:
 * p/tp > i/ti * (1 + 1/m), as products (no division, no overflow at any
 * rate a NIC reaches in the milliseconds of a trial). */
static unsigned trial_winner(const struct nic_state *s)
{
	const struct tally *irq = &s->tried[0], *poll = &s->tried[1];
	if (!irq->us || !poll->us)
		return MODE_INTERRUPT;
	uint64_t polled = poll->frames * irq->us * POLLING_MARGIN;
	uint64_t interrupted = irq->frames * poll->us * (POLLING_MARGIN + 1);
	return polled > interrupted ? MODE_POLLING : MODE_INTERRUPT;
}

/* One busy sample, taken under mode, during a trial: counts it for that
 * mode, and answers polling until polling has its TRIAL_SAMPLES, then
 * interrupts until they have theirs, then the mode the trial chose.  Counted
 * by the mode each sample was taken under, so an answer applied a sample
 * late (shm, one-way msg) still gives each mode its samples; a trial whose
 * answers are not followed ends after TRIAL_MAX samples, on what it has. */
static unsigned trial_step(struct nic_state *s, unsigned mode, uint64_t delta, uint64_t us)
{
	if (mode == MODE_INTERRUPT || mode == MODE_POLLING) {
		s->tried[mode].frames += delta;
		s->tried[mode].us += us;
		s->tried[mode].samples++;
	}
	if (s->trial++ < TRIAL_MAX) {
		if (s->tried[MODE_POLLING].samples < TRIAL_SAMPLES)
			return MODE_POLLING;
		if (s->tried[MODE_INTERRUPT].samples < TRIAL_SAMPLES)
			return MODE_INTERRUPT;
	}
	s->trial = 0;
	s->chosen = trial_winner(s);
	s->choice_left = CHOICE_DECISIONS;
	return s->chosen;
}

static unsigned choose_busy(struct nic_state *s, unsigned mode, uint64_t delta, uint64_t us,
			    int high)
{
	if (s->trial)
		return trial_step(s, mode, delta, us);
	if (s->choice_left) {
		s->choice_left--;
		return s->chosen;
	}
	if (!high && s->busy_streak < STEADY_SAMPLES)
		return mode == MODE_POLLING ? MODE_POLLING : MODE_HYBRID;
	start_trial(s);
	return MODE_POLLING;
}

/* The load has gone (or frames are dropped): what a trial measured or chose
 * no longer says anything about the next busy load. */
static void forget_trials(struct nic_state *s)
{
	s->trial = 0;
	s->choice_left = 0;
}

static unsigned choose(struct nic_state *s, unsigned mode, uint64_t delta, uint64_t us,
		       int pressure)
{
	uint64_t rate = us ? delta * 1000000 / us : delta * 1000000;
	int high = rate >= HIGH_RATE;
	int busy = pressure || high || rate >= BUSY_RATE, idle = !busy && rate < IDLE_RATE;
	s->busy_streak = busy ? s->busy_streak + 1 : 0;
	s->idle_streak = idle ? s->idle_streak + 1 : 0;
	if (pressure) {
		forget_trials(s);
		return MODE_POLLING;
	}
	if (busy)
		return choose_busy(s, mode, delta, us, high);
	s->trial = 0; /* a trial measures a busy load only */
	if (idle && (s->idle_streak >= IDLE_SAMPLES || rate == 0)) {
		forget_trials(s); /* no frame at all: the load has gone (NAPI's empty poll) */
		return MODE_INTERRUPT;
	}
	if (idle || (s->choice_left && mode == s->chosen))
		return mode; /* a dip between busy samples keeps the choice */
	return mode == MODE_POLLING ? MODE_POLLING : MODE_HYBRID;
}

static int64_t hold_bits(int64_t frames, int64_t samples)
{
	return frames << FRAMES_SHIFT | samples << SAMPLES_SHIFT;
}

/* The hold of a settled answer, in the reply's bits; 0 for none. */
static int64_t holding(const struct nic_state *s, unsigned next)
{
	if (next == MODE_INTERRUPT && s->idle_streak > 0)
		return hold_bits(IDLE_HOLD_FRAMES, IDLE_HOLD_SAMPLES);
	if (next != MODE_HYBRID && s->busy_streak > 0 && !s->trial)
		return hold_bits(POLL_HOLD_FRAMES, POLL_HOLD_SAMPLES);
	return 0;
}

static void decide(struct ms_ctx *ctx)
{
	unsigned index = (unsigned)ms_arg(ctx, 1), mode = (unsigned)ms_arg(ctx, 2);
	uint64_t elapsed_us = ms_arg(ctx, 3);
	if (index >= NICS)
		return; /* no answer: the driver keeps its mode */
	if (mode > MODE_HYBRID)
		mode = MODE_INTERRUPT;
	char device[8];
	device_name(index, device);
	struct nic_state *s = &nics[index];
	uint64_t frames = counter(device, "rx_frames") + counter(device, "tx_frames");
	uint64_t missed = counter(device, "MPC") + counter(device, "RNBC");
	int backed_up = counter(device, "rx_used_pending") >= PENDING_BUSY;
	unsigned next = mode;
	uint64_t rate = 0;
	if (s->seen) {
		uint64_t delta = frames - s->frames;
		rate = elapsed_us ? delta * 1000000 / elapsed_us : delta * 1000000;
		next = choose(s, mode, delta, elapsed_us, missed != s->missed || backed_up);
	}
	s->seen = 1;
	s->frames = frames;
	s->missed = missed;
	int64_t hold = holding(s, next);
	ms_reply(ctx, (int64_t)next | hold);
	ms_counter_add("decisions", 1);
	if (hold)
		ms_counter_add("holds", 1);
	if (next != mode) {
		ms_counter_add(next == MODE_POLLING  ? "to_polling"
			       : next == MODE_HYBRID ? "to_hybrid"
						     : "to_interrupt",
			       1);
		struct nicmode_record r = {index, mode, next, 0, rate};
		ms_emit(NICMODE_RECORD, &r, sizeof r);
	}
}

MS_BEFORE("nic.sample", decide, 0);
