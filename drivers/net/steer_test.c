/*
 * The nicsteer suite: the decision loop of drivers/net (nic.sample, an
 * aspect's reply, nic_steer_apply) on a NIC of the test's own, whose
 * counters the test sets, so that a load change is synthetic and every
 * outcome is counted in samples, never timed.  aspects/nicmode.c, linked
 * direct, shm, msg one-way and msg synchronous, must answer one script of
 * loads with the same modes; a monitor that dies, or an aspect that answers
 * nonsense (aspects/nicbabble.c), must leave the NIC in interrupt mode.
 * shm and msg need /bin/monitor: boot with the initrd (the nicsteer run of
 * tests/run.py does); without it those cases are skipped.  Waits have
 * timeouts only against hangs.
 */
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/weave.h"
#include "net/nic.h"
#include "proc/proc.h"
#include "time/time.h"
#include "uapi/proc.h"
#include "uapi/scope.h"
#include "vfs/vfs.h"

#define SAMPLE_US     10000 /* what every synthetic sample says elapsed */
#define REPLY_WAIT_NS (5 * NSEC_PER_SEC)
#define SYNC_DEADLINE (2 * NSEC_PER_SEC) /* generous: a loaded host may be slow */

/* ---- A NIC whose counters the test sets ---------------------------------- */

static uint64_t synthetic_missed; /* its "MPC" */

static int steer_transmit(struct nic *nic, const void *frame, size_t length)
{
	return 0;
}

static unsigned steer_poll(struct nic *nic, unsigned budget)
{
	return 0;
}

static void steer_interrupts(struct nic *nic)
{
}

static int steer_read_counter(struct nic *nic, const char *name, uint64_t *value)
{
	if (strcmp(name, "MPC") != 0)
		return -ENOENT;
	*value = __atomic_load_n(&synthetic_missed, __ATOMIC_RELAXED);
	return 0;
}

static void steer_list_counters(struct nic *nic, nic_counter_fn fn, void *arg)
{
	fn("MPC", synthetic_missed, arg);
}

static volatile uint64_t counter_refreshes;

static void steer_refresh_counters(struct nic *nic)
{
	counter_refreshes++;
}

static const struct nic_ops steer_ops = {
    .transmit = steer_transmit,
    .poll = steer_poll,
    .enable_interrupts = steer_interrupts,
    .disable_interrupts = steer_interrupts,
    .read_counter = steer_read_counter,
    .list_counters = steer_list_counters,
    .refresh_counters = steer_refresh_counters,
};

static struct nic steer_nic = {
    .mac = {0x02, 0, 0, 0, 0x5e, 0x01},
    .mtu = 1500,
    .link = NIC_LINK_UP,
    .ops = &steer_ops,
    .sample_interval_ns = NIC_SAMPLE_NEVER, /* the test samples, the worker does not */
};

/* The test's NIC in interrupt mode, following nobody yet. */
static struct nic *fresh_nic(struct ktest *t)
{
	static bool registered;
	if (!registered) {
		if (nic_register(&steer_nic, "steer") != 0) {
			ktest_skip(t, "cannot register the test NIC");
			return NULL;
		}
		registered = true;
	}
	int64_t stale;
	aspect_reply_take(jp_find("nic.sample"), (uint64_t)&steer_nic, &stale);
	nic_set_mode(&steer_nic, NIC_MODE_INTERRUPT);
	steer_nic.steered = false;
	steer_nic.steer_misses = 0;
	steer_nic.hold_samples_left = 0;
	return &steer_nic;
}

/* ---- Linking ------------------------------------------------------------- */

static bool monitor_available(struct ktest *t, enum aspect_binding binding)
{
	if (binding == ASPECT_BINDING_DIRECT)
		return true;
	struct vfs_stat st;
	if (vfs_stat("/bin/monitor", &st) != 0) {
		ktest_skip(t, "no /bin/monitor (boot with the initrd)");
		return false;
	}
	return true;
}

#define STEER_TEST_BUDGET_NS (5ULL * 1000 * 1000 * 1000)

/* Loads a fresh copy of name (its state starts empty) and links it. */
static struct aspect *link_fresh(struct ktest *t, const char *name, enum aspect_binding binding,
				 bool synchronous)
{
	if (!monitor_available(t, binding))
		return NULL;
	struct aspect *a = NULL;
	char error[LINKER_ERROR_MAX];
	int err = linker_load_builtin(name, &a, error, sizeof error);
	if (!EXPECT_EQ(t, err, 0))
		return NULL;
	scope_set_msg_mode(synchronous, SYNC_DEADLINE);
	/* The budget is wall-clock time: a loaded host stalls QEMU for longer
	 * than the default inside correct advice. */
	aspect_set_budget(a, STEER_TEST_BUDGET_NS);
	err = aspect_link(a, binding);
	if (!EXPECT_EQ(t, err, 0)) {
		aspect_unload(a);
		aspect_put(a);
		return NULL;
	}
	return a;
}

/* The monitor process the kernel started for shm and msg is the test
 * thread's child: it is ended and reaped, so that later suites (proc's
 * "no children") find none. */
/* A fresh NIC with a fresh copy of aspect name linked (*a); NULL when
 * either could not be had (the case is then skipped or failed). */
static struct nic *nic_linked(struct ktest *t, const char *name, enum aspect_binding binding,
			      bool synchronous, struct aspect **a)
{
	struct nic *nic = fresh_nic(t);
	*a = nic ? link_fresh(t, name, binding, synchronous) : NULL;
	return *a ? nic : NULL;
}

static void end_monitor(void)
{
	int pid = linker_monitor_pid();
	if (pid <= 0)
		return;
	proc_kill(pid, SIGKILL);
	proc_wait(pid, NULL, 0);
}

static void unlink_and_unload(struct aspect *a)
{
	if (!a)
		return;
	aspect_unlink(a); /* -EINVAL when a dead monitor took it down already */
	aspect_unload(a);
	aspect_put(a);
	scope_set_msg_mode(0, 0);
	end_monitor();
}

/* ---- Samples --------------------------------------------------------------- */

/* One synthetic sample: frames more in, missed more missed, SAMPLE_US later.
 * Waits (against hangs only) for the reply when one must come, then applies
 * it.  Returns nic_steer_apply's. */
static int step_over(struct nic *nic, uint64_t frames, uint64_t missed, uint64_t us,
		     bool reply_expected)
{
	__atomic_fetch_add(&nic->rx_frames, frames, __ATOMIC_RELAXED);
	__atomic_fetch_add(&synthetic_missed, missed, __ATOMIC_RELAXED);
	nic_sample(nic, nic->index, nic->mode, us);
	uint64_t deadline = clock_ns() + REPLY_WAIT_NS;
	while (reply_expected && !nic_steer_reply_waiting(nic) && clock_ns() < deadline)
		sched_sleep_ns(NSEC_PER_MSEC); /* shm: the monitor runs meanwhile */
	return nic_steer_apply(nic);
}

/* One synthetic sample of SAMPLE_US. */
static int step(struct nic *nic, uint64_t frames, uint64_t missed, bool reply_expected)
{
	return step_over(nic, frames, missed, SAMPLE_US, reply_expected);
}

struct load_step {
	uint64_t frames; /* in the sample, taken on interrupts or hybrid */
	uint64_t polled; /* ... taken polling (a load one mode serves faster) */
	uint64_t missed;
	uint64_t us; /* the sample's elapsed time; 0: SAMPLE_US */
	enum nic_mode expected;
	unsigned hold; /* the samples the reply holds for (its frames: IDLE_HOLD, POLL_HOLD) */
};

#define I   NIC_MODE_INTERRUPT
#define P   NIC_MODE_POLLING
#define H   NIC_MODE_HYBRID
#define IDL 16     /* aspects/nicmode.c: interrupts, idle, hold 16 samples (or 64 frames) */
#define BSY 4      /* a busy load's settled answer: hold 4 samples (or 4096 frames) */
#define MS  100000 /* one frame in 100 ms: 10 per second, idle but not none */
/* In 10 ms: 100 frames is 10,000 per second (high), 5 is 500 (busy), 2 is
 * 200 (between), 0 none; a missed frame is pressure whatever the rate.  A
 * busy load is tried: three samples polling, three on interrupts, and the
 * mode that moved more frames kept (polling only by a margin: a tie keeps
 * interrupts).  Settled answers hold: interrupts under an idle load, a
 * trial's choice under a busy one. */
static const struct load_step load_script[] = {
    {0, 0, 0, 0, I, 0},       /* the first sample notes the counters */
    {0, 0, 0, 0, I, IDL},     /* no frame: interrupts, held */
    {5, 5, 0, 0, H, 0},       /* busy: hybrid at once */
    {5, 5, 0, 0, H, 0},       /* ... */
    {5, 5, 0, 0, P, 0},       /* steady from the third busy sample: a trial, polling first */
    {5, 8, 0, 0, P, 0},       /* polling serves 800/s */
    {5, 8, 0, 0, P, 0},       /* ... */
    {5, 8, 0, 0, I, 0},       /* its third sample: interrupts next */
    {5, 8, 0, 0, I, 0},       /* interrupts serve 500/s */
    {5, 8, 0, 0, I, 0},       /* ... */
    {5, 8, 0, 0, P, BSY},     /* the trial's end: polling served more, kept and held */
    {5, 8, 0, 0, P, BSY},     /* the choice holds */
    {2, 2, 0, 0, P, 0},       /* between: a polling NIC polls on */
    {1, 1, 0, MS, P, 0},      /* idle once */
    {1, 1, 0, MS, I, IDL},    /* idle twice: interrupts, the choice forgotten */
    {2, 2, 0, 0, H, 0},       /* between: hybrid */
    {0, 0, 1, 0, P, BSY},     /* missed frames: polling at once */
    {0, 0, 0, 0, I, IDL},     /* no frame: the load has gone, interrupts at once */
    {100, 100, 0, 0, P, 0},   /* high: a trial at once */
    {100, 100, 0, 0, P, 0},   /* both modes serve 10,000/s */
    {100, 100, 0, 0, P, 0},   /* ... */
    {100, 100, 0, 0, I, 0},   /* ... */
    {100, 100, 0, 0, I, 0},   /* ... */
    {100, 100, 0, 0, I, 0},   /* ... */
    {100, 100, 0, 0, I, BSY}, /* a tie: interrupts kept, and held */
    {100, 100, 0, 0, I, BSY}, /* the choice holds */
    {0, 0, 0, 0, I, IDL},     /* the load has gone */
};
#undef I
#undef P
#undef H
#undef IDL
#undef BSY
#undef MS
#define LOAD_HOLDS      9 /* the steps above that hold */
#define LOAD_TO_POLLING 4 /* ... that switch to polling */
#define LOAD_TRIALS     2
#define IDLE_HOLD       64 /* frames */
#define IDLE_HOLD_SAMPS 16
#define POLL_HOLD_SAMPS 4
#define LOAD_STEPS      (sizeof(load_script) / sizeof(load_script[0]))

static void decisions_follow_the_load(struct ktest *t, enum aspect_binding binding,
				      bool synchronous)
{
	struct aspect *a;
	struct nic *nic = nic_linked(t, "nicmode", binding, synchronous, &a);
	if (!nic)
		return;
	uint64_t switches_before = nic->mode_switches;
	unsigned matched = 0, switches = 0;
	enum nic_mode previous = nic->mode;
	for (unsigned i = 0; i < LOAD_STEPS; i++) {
		const struct load_step *l = &load_script[i];
		uint64_t frames = nic->mode == NIC_MODE_POLLING ? l->polled : l->frames;
		int got = step_over(nic, frames, l->missed, l->us ? l->us : SAMPLE_US, true);
		unsigned hold = nic_steer_held(nic) ? nic->hold_samples_left : 0;
		if (got == (int)load_script[i].expected && nic->mode == load_script[i].expected &&
		    hold == load_script[i].hold)
			matched++;
		else /* names the step's values */
			EXPECT_EQ(t, got * 100 + hold,
				  load_script[i].expected * 100 + load_script[i].hold);
		switches += nic->mode != previous;
		previous = nic->mode;
	}
	EXPECT_EQ(t, matched, LOAD_STEPS);
	EXPECT_EQ(t, aspect_counter_value(a, "holds"), LOAD_HOLDS);
	EXPECT_EQ(t, nic->mode_switches - switches_before, switches);
	EXPECT_TRUE(t, nic->steered);
	EXPECT_EQ(t, aspect_counter_value(a, "decisions"), LOAD_STEPS);
	EXPECT_EQ(t, aspect_counter_value(a, "to_polling"), LOAD_TO_POLLING);
	EXPECT_EQ(t, aspect_counter_value(a, "trials"), LOAD_TRIALS);
	unlink_and_unload(a);
}

static void decisions_follow_the_load_direct(struct ktest *t)
{
	decisions_follow_the_load(t, ASPECT_BINDING_DIRECT, false);
}

static void decisions_follow_the_load_shm(struct ktest *t)
{
	decisions_follow_the_load(t, ASPECT_BINDING_SHM, false);
}

static void decisions_follow_the_load_msg_call(struct ktest *t)
{
	decisions_follow_the_load(t, ASPECT_BINDING_MSG, true);
}

static void decisions_follow_the_load_msg_oneway(struct ktest *t)
{
	decisions_follow_the_load(t, ASPECT_BINDING_MSG, false);
}

/* Drives the NIC to polling, held, with a high load that polling serves
 * faster (a trial, or a choice that still holds). */
static void drive_to_polling(struct ktest *t, struct nic *nic)
{
	for (unsigned i = 0; i < 10 && !(nic->mode == NIC_MODE_POLLING && nic_steer_held(nic)); i++)
		step(nic, nic->mode == NIC_MODE_POLLING ? 200 : 100, 0, true);
	EXPECT_EQ(t, nic->mode, NIC_MODE_POLLING);
}

/* A trial's choice holds for CHOICE_DECISIONS busy decisions (aspects/
 * nicmode.c: 32), each answered at once and held; the busy decision after
 * them starts another trial (polling first, held by nothing). */
#define CHOICE_DECISIONS 32
static void a_choice_is_tried_again_when_it_runs_out(struct ktest *t)
{
	struct aspect *a;
	struct nic *nic = nic_linked(t, "nicmode", ASPECT_BINDING_DIRECT, false, &a);
	if (!nic)
		return;
	drive_to_polling(t, nic);
	EXPECT_EQ(t, aspect_counter_value(a, "trials"), 1);
	unsigned kept = 0;
	for (unsigned i = 0; i < CHOICE_DECISIONS; i++)
		kept += step(nic, 100, 0, true) == NIC_MODE_POLLING && nic_steer_held(nic);
	EXPECT_EQ(t, kept, CHOICE_DECISIONS);
	EXPECT_EQ(t, aspect_counter_value(a, "trials"), 1);
	EXPECT_EQ(t, step(nic, 100, 0, true), NIC_MODE_POLLING);
	EXPECT_FALSE(t, nic_steer_held(nic));
	EXPECT_EQ(t, aspect_counter_value(a, "trials"), 2);
	nic_set_mode(nic, NIC_MODE_INTERRUPT);
	unlink_and_unload(a);
}

/* Samples of a high load whose answers take effect one sample late, as
 * under shm and one-way msg when the monitor is slower than the worker:
 * sample k says the mode of answer k - 2 (every sample goes to the aspect,
 * direct, and the test keeps the NIC's own mode out of it).  faster: the
 * mode that moves 200 frames a sample, the other 100.  Returns the answer
 * once the trial has chosen (its answer held), or -1 after 16 samples. */
static int trial_with_late_answers(struct nic *nic, enum nic_mode faster)
{
	enum nic_mode said = NIC_MODE_INTERRUPT, applies_next = NIC_MODE_INTERRUPT;
	for (unsigned i = 0; i < 16; i++) {
		__atomic_fetch_add(&nic->rx_frames, said == faster ? 200 : 100, __ATOMIC_RELAXED);
		nic_sample(nic, nic->index, said, SAMPLE_US);
		int answer = nic_steer_apply(nic);
		if (answer < 0)
			return -1;
		if (nic_steer_held(nic) && i > 0)
			return answer;
		said = applies_next;
		applies_next = (enum nic_mode)answer;
	}
	return -1;
}

/* A trial whose answers are followed a sample late still tries both modes
 * and keeps the faster one. */
static void a_trial_with_late_answers_keeps_the_faster_mode(struct ktest *t)
{
	struct aspect *a;
	struct nic *nic = nic_linked(t, "nicmode", ASPECT_BINDING_DIRECT, false, &a);
	if (!nic)
		return;
	step(nic, 0, 0, true); /* the first sample notes the counters */
	EXPECT_EQ(t, trial_with_late_answers(nic, NIC_MODE_POLLING), NIC_MODE_POLLING);
	step(nic, 0, 0, true); /* the load goes: the choice is forgotten */
	EXPECT_EQ(t, trial_with_late_answers(nic, NIC_MODE_INTERRUPT), NIC_MODE_INTERRUPT);
	EXPECT_EQ(t, aspect_counter_value(a, "trials"), 2);
	nic_set_mode(nic, NIC_MODE_INTERRUPT);
	unlink_and_unload(a);
}

/* The monitor dies while the NIC polls on its word: the samples after that
 * get no reply, and the NIC is back on interrupts after exactly
 * NIC_STEER_MISSES of them. */
static void dead_monitor_leaves_interrupts(struct ktest *t)
{
	struct aspect *a;
	struct nic *nic = nic_linked(t, "nicmode", ASPECT_BINDING_MSG, true, &a);
	if (!nic)
		return;
	drive_to_polling(t, nic);
	int pid = linker_monitor_pid();
	ASSERT_TRUE(t, pid > 0);
	EXPECT_EQ(t, proc_kill(pid, SIGKILL), 0);
	EXPECT_EQ(t, proc_wait(pid, NULL, 0), pid); /* ended, and reaped */
	uint64_t deadline = clock_ns() + REPLY_WAIT_NS;
	while (linker_monitor_pid() == pid && clock_ns() < deadline)
		sched_sleep_ns(NSEC_PER_MSEC);
	EXPECT_EQ(t, linker_monitor_pid(), 0);
	uint64_t fallbacks = nic->steer_fallbacks;
	for (unsigned i = 1; i < NIC_STEER_MISSES; i++) {
		EXPECT_EQ(t, step(nic, 100, 0, false), -ENOENT);
		EXPECT_EQ(t, nic->mode, NIC_MODE_POLLING);
	}
	EXPECT_EQ(t, step(nic, 100, 0, false), -ENOENT);
	EXPECT_EQ(t, nic->mode, NIC_MODE_INTERRUPT);
	EXPECT_EQ(t, nic->steer_fallbacks - fallbacks, 1);
	EXPECT_FALSE(t, nic->steered);
	unlink_and_unload(a);
}

/* Answers that name no mode (-1, then 3) or a hold the driver does not allow
 * (more than NIC_HOLD_MAX_FRAMES frames, NIC_HOLD_MAX_SAMPLES samples, bits
 * beyond the fields) put the NIC on interrupts at once, whatever mode it was
 * in, and hold nothing. */
static void garbage_answers_leave_interrupts(struct ktest *t, enum aspect_binding binding)
{
	struct aspect *a;
	struct nic *nic = nic_linked(t, "nicbabble", binding, binding == ASPECT_BINDING_MSG, &a);
	if (!nic)
		return;
	uint64_t bad = nic->steer_bad_replies;
	enum nic_mode modes[] = {NIC_MODE_POLLING, NIC_MODE_HYBRID, NIC_MODE_POLLING,
				 NIC_MODE_HYBRID, NIC_MODE_POLLING};
	for (unsigned i = 0; i < 5; i++) {
		nic_set_mode(nic, modes[i]);
		EXPECT_EQ(t, step(nic, 100, 0, true), -EINVAL);
		EXPECT_EQ(t, nic->mode, NIC_MODE_INTERRUPT);
		EXPECT_FALSE(t, nic_steer_held(nic));
	}
	EXPECT_EQ(t, nic->steer_bad_replies - bad, 5);
	unlink_and_unload(a);
}

static void garbage_answers_leave_interrupts_direct(struct ktest *t)
{
	garbage_answers_leave_interrupts(t, ASPECT_BINDING_DIRECT);
}

static void garbage_answers_leave_interrupts_msg(struct ktest *t)
{
	garbage_answers_leave_interrupts(t, ASPECT_BINDING_MSG);
}

/* Drives the NIC idle until the aspect answers interrupts with a hold. */
static bool drive_to_idle_hold(struct ktest *t, struct nic *nic)
{
	for (unsigned i = 0; i < 3 && !(nic_steer_held(nic) && nic->mode == NIC_MODE_INTERRUPT);
	     i++)
		step(nic, 0, 0, true);
	EXPECT_EQ(t, nic->mode, NIC_MODE_INTERRUPT);
	return EXPECT_TRUE(t, nic_steer_held(nic));
}

/* Leaves out count samples under the hold; true when each was left out
 * (-EBUSY, counted, nothing sent). */
static bool leave_out(struct ktest *t, struct nic *nic, unsigned count)
{
	uint64_t samples = nic->samples, held = nic->samples_held;
	unsigned left_out = 0;
	for (unsigned i = 0; i < count; i++)
		left_out += nic_steer_unless_held(nic) == -EBUSY;
	return EXPECT_EQ(t, left_out, count) && EXPECT_EQ(t, nic->samples, samples) &&
	       EXPECT_EQ(t, nic->samples_held - held, count);
}

/* The sample after a hold goes to the aspect again: one more decision. */
static void sample_goes_out(struct ktest *t, struct nic *nic, struct aspect *a)
{
	uint64_t samples = nic->samples;
	int64_t decisions = aspect_counter_value(a, "decisions");
	nic_steer_unless_held(nic); /* its answer depends on the time since the last: not checked */
	EXPECT_EQ(t, nic->samples - samples, 1);
	EXPECT_EQ(t, aspect_counter_value(a, "decisions"), decisions + 1);
}

/* A hold lasts its frames, counted in and out, or its samples, whichever is
 * first: until then the worker's samples are left out (counted, nothing
 * sent: the aspect decides nothing), and the first one after it goes to the
 * aspect again.  Idle interrupts hold for 64 frames or 16 samples, busy
 * polling for 4 samples while frames move (a sample that finds none ends
 * it); a mode set by someone else ends a hold. */
static void a_hold_lasts_its_frames_or_samples(struct ktest *t, enum aspect_binding binding)
{
	struct aspect *a;
	struct nic *nic = nic_linked(t, "nicmode", binding, true, &a);
	if (!nic)
		return;
	if (drive_to_idle_hold(t, nic)) { /* by its frames */
		__atomic_fetch_add(&nic->rx_frames, IDLE_HOLD / 2, __ATOMIC_RELAXED);
		__atomic_fetch_add(&nic->tx_frames, IDLE_HOLD / 2 - 1, __ATOMIC_RELAXED);
		leave_out(t, nic, 5);
		__atomic_fetch_add(&nic->tx_frames, 1, __ATOMIC_RELAXED); /* the hold's last */
		EXPECT_FALSE(t, nic_steer_held(nic));
		sample_goes_out(t, nic, a);
	}
	if (drive_to_idle_hold(t, nic)) { /* by its samples */
		leave_out(t, nic, IDLE_HOLD_SAMPS);
		EXPECT_FALSE(t, nic_steer_held(nic));
		sample_goes_out(t, nic, a);
	}
	drive_to_polling(t, nic); /* busy polling: by its samples, while frames move */
	if (EXPECT_TRUE(t, nic_steer_held(nic))) {
		for (unsigned i = 0; i < POLL_HOLD_SAMPS; i++) {
			__atomic_fetch_add(&nic->rx_frames, 100, __ATOMIC_RELAXED);
			leave_out(t, nic, 1);
		}
		__atomic_fetch_add(&nic->rx_frames, 100, __ATOMIC_RELAXED);
		EXPECT_FALSE(t, nic_steer_held(nic));
		sample_goes_out(t, nic, a);
	}
	drive_to_polling(t, nic); /* busy polling: by a sample that finds no frame moved */
	if (EXPECT_TRUE(t, nic_steer_held(nic))) {
		__atomic_fetch_add(&nic->rx_frames, 100, __ATOMIC_RELAXED);
		leave_out(t, nic, 1);
		EXPECT_TRUE(t, nic_steer_held(nic)); /* by its frames and samples */
		sample_goes_out(t, nic, a);          /* but no frame moved */
	}
	if (drive_to_idle_hold(t, nic)) { /* by a mode set by hand */
		nic_set_mode(nic, NIC_MODE_POLLING);
		EXPECT_FALSE(t, nic_steer_held(nic));
	}
	nic_set_mode(nic, NIC_MODE_INTERRUPT);
	unlink_and_unload(a);
}

static void a_hold_lasts_its_frames_or_samples_direct(struct ktest *t)
{
	a_hold_lasts_its_frames_or_samples(t, ASPECT_BINDING_DIRECT);
}

static void a_hold_lasts_its_frames_or_samples_msg(struct ktest *t)
{
	a_hold_lasts_its_frames_or_samples(t, ASPECT_BINDING_MSG);
}

/* The monitor dies while its hold keeps the NIC polling under a load: the
 * hold ends after its samples, the samples after it get no answer, and
 * after NIC_STEER_MISSES of them the NIC follows nobody, on interrupts. */
static void dead_monitor_after_a_hold(struct ktest *t)
{
	struct aspect *a;
	struct nic *nic = nic_linked(t, "nicmode", ASPECT_BINDING_MSG, true, &a);
	if (!nic)
		return;
	drive_to_polling(t, nic);
	int pid = linker_monitor_pid();
	ASSERT_TRUE(t, pid > 0);
	EXPECT_EQ(t, proc_kill(pid, SIGKILL), 0);
	EXPECT_EQ(t, proc_wait(pid, NULL, 0), pid);
	uint64_t deadline = clock_ns() + REPLY_WAIT_NS;
	while (linker_monitor_pid() == pid && clock_ns() < deadline)
		sched_sleep_ns(NSEC_PER_MSEC);
	uint64_t fallbacks = nic->steer_fallbacks;
	for (unsigned i = 0; i < POLL_HOLD_SAMPS; i++) { /* polling, asking nobody */
		__atomic_fetch_add(&nic->rx_frames, 100, __ATOMIC_RELAXED);
		leave_out(t, nic, 1);
	}
	EXPECT_EQ(t, nic->mode, NIC_MODE_POLLING);
	for (unsigned i = 0; i < NIC_STEER_MISSES; i++) {
		EXPECT_TRUE(t, nic->steered);
		__atomic_fetch_add(&nic->rx_frames, 100, __ATOMIC_RELAXED);
		EXPECT_EQ(t, nic_steer_unless_held(nic), -ENOENT);
	}
	EXPECT_FALSE(t, nic->steered);
	EXPECT_EQ(t, nic->steer_fallbacks - fallbacks, 1);
	EXPECT_EQ(t, nic->mode, NIC_MODE_INTERRUPT);
	unlink_and_unload(a);
}

/* A mode set by hand (the console) is kept when the monitor that steered the
 * NIC goes: no fallback over it, however many samples get no answer. */
static void a_mode_set_by_hand_outlives_the_monitor(struct ktest *t)
{
	struct aspect *a;
	struct nic *nic = nic_linked(t, "nicmode", ASPECT_BINDING_DIRECT, false, &a);
	if (!nic)
		return;
	drive_to_polling(t, nic);
	EXPECT_TRUE(t, nic->steered);
	unlink_and_unload(a);
	EXPECT_EQ(t, nic_set_mode_by_hand(nic, NIC_MODE_HYBRID), 0);
	uint64_t fallbacks = nic->steer_fallbacks;
	for (unsigned i = 0; i < 2 * NIC_STEER_MISSES; i++)
		EXPECT_EQ(t, nic_steer_unless_held(nic), -ENOENT);
	EXPECT_EQ(t, nic->mode, NIC_MODE_HYBRID);
	EXPECT_EQ(t, nic->steer_fallbacks, fallbacks);
	nic_set_mode(nic, NIC_MODE_INTERRUPT);
}

/* ---- The monitor between samples ------------------------------------------ */

#define QUIET_NS        (200 * NSEC_PER_MSEC) /* longer than the monitor's longest ring poll (64 ms) */
#define SETTLE_POLL_NS  (10 * NSEC_PER_MSEC)
#define SETTLED_POLLS   3
#define SETTLE_GUARD_NS (60 * NSEC_PER_SEC) /* against a hang only */

/* The other NICs' workers sample too (nicmode answers every NIC): their
 * samples are held off while the monitor must be sent nothing. */
static int set_sample_interval(struct nic *nic, void *interval)
{
	if (nic != &steer_nic)
		__atomic_store_n(&nic->sample_interval_ns, *(uint64_t *)interval, __ATOMIC_RELAXED);
	return 0;
}

static void hold_off_other_samples(bool hold)
{
	uint64_t interval = hold ? NIC_SAMPLE_NEVER : NIC_SAMPLE_NS;
	nic_for_each(set_sample_interval, &interval);
}

/* Whether process pid's thread is blocked (it waits for something). */
static bool process_sleeps(int pid)
{
	static struct proc_info info[PROC_MAX]; /* the cases run one at a time */
	int n = proc_list(info, PROC_MAX);
	for (int i = 0; i < n && i < PROC_MAX; i++)
		if (info[i].pid == pid)
			return info[i].run_state == PROC_RUN_SLEEPING;
	return false;
}

/* Waits until the monitor is blocked and its receive count stays put over
 * SETTLED_POLLS polls in a row: it finished with the last message and is
 * back in its receive (it blocks nowhere else), whenever the host lets it
 * run.  False only when the hang guard ended the wait: the monitor never
 * stayed blocked, so it kept waking. */
static bool wait_until_monitor_settles(void)
{
	int pid = linker_monitor_pid();
	uint64_t guard = clock_ns() + SETTLE_GUARD_NS;
	uint64_t receives = linker_monitor_receives();
	for (unsigned steady = 0; steady < SETTLED_POLLS;) {
		if (clock_ns() > guard)
			return false;
		sched_sleep_ns(SETTLE_POLL_NS);
		uint64_t now = linker_monitor_receives();
		steady = now == receives && process_sleeps(pid) ? steady + 1 : 0;
		receives = now;
	}
	return true;
}

/* Whether the monitor came back to its loop while nothing was sent to it
 * for QUIET_NS. */
static bool monitor_woke_while_quiet(void)
{
	uint64_t before = linker_monitor_receives();
	sched_sleep_ns(QUIET_NS);
	return linker_monitor_receives() != before;
}

/* A monitor whose aspects take only messages does not come back to its loop
 * between them: the NIC's samples are all the decision loop costs while the
 * NIC is held (it used to wake every 2 to 64 ms to read the rings).  Once an
 * aspect linked shm brings the rings, it polls them again. */
static void msg_monitor_sleeps_between_samples(struct ktest *t)
{
	struct aspect *a;
	struct nic *nic = nic_linked(t, "nicmode", ASPECT_BINDING_MSG, true, &a);
	if (!nic)
		return;
	uint64_t receives = linker_monitor_receives();
	step(nic, 0, 0, true);
	ASSERT_TRUE(t, linker_monitor_receives() > receives); /* the count sees the sample */
	hold_off_other_samples(true);
	if (EXPECT_TRUE(t, wait_until_monitor_settles()))
		EXPECT_FALSE(t, monitor_woke_while_quiet());
	struct aspect *rings = link_fresh(t, "nicbabble", ASPECT_BINDING_SHM, true);
	if (rings) {
		EXPECT_TRUE(t, monitor_woke_while_quiet());
		aspect_unlink(rings);
		aspect_unload(rings);
		aspect_put(rings);
	}
	hold_off_other_samples(false);
	unlink_and_unload(a);
}

/* ---- The pieces under the loop ---------------------------------------------- */

/* A reply is kept per join point and first argument, taken once, and a
 * newer one replaces it; when every slot is taken a post is refused. */
static void replies_are_kept_per_joinpoint_and_key(struct ktest *t)
{
	const struct joinpoint *jp = jp_find("nic.sample"), *other = jp_find("nic.poll");
	ASSERT_TRUE(t, jp && other);
	int64_t value = 0;
	EXPECT_EQ(t, aspect_reply_post(jp, 1, 11), 0);
	EXPECT_EQ(t, aspect_reply_post(jp, 1, 12), 0);
	EXPECT_EQ(t, aspect_reply_take(other, 1, &value), 0);
	EXPECT_EQ(t, aspect_reply_take(jp, 2, &value), 0);
	EXPECT_TRUE(t, aspect_reply_waiting(jp, 1));
	EXPECT_EQ(t, aspect_reply_take(jp, 1, &value), 1);
	EXPECT_EQ(t, value, 12);
	EXPECT_EQ(t, aspect_reply_take(jp, 1, &value), 0);
	EXPECT_EQ(t, aspect_reply_post(NULL, 1, 1), -EINVAL);
	unsigned posted = 0;
	for (uint64_t key = 100; key < 200; key++) {
		if (aspect_reply_post(jp, key, 1) != 0)
			break;
		posted++;
	}
	EXPECT_TRUE(t, posted > 0 && posted < 100);
	EXPECT_EQ(t, aspect_reply_post(jp, 999, 1), -ENOSPC);
	for (uint64_t key = 100; key < 100 + posted; key++)
		EXPECT_EQ(t, aspect_reply_take(jp, key, &value), 1);
}

/* ms_device_counter reaches a NIC by its name and by "nic<index>". */
static void nic_counters_are_device_counters(struct ktest *t)
{
	struct nic *nic = fresh_nic(t);
	if (!nic)
		return;
	synthetic_missed = 42;
	char device[8] = "nic";
	device[3] = (char)('0' + nic->index);
	uint64_t value = 0;
	EXPECT_EQ(t, linker_device_source_read(device, "MPC", &value), 0);
	EXPECT_EQ(t, value, 42);
	value = 0;
	EXPECT_EQ(t, linker_device_source_read(nic->name, "MPC", &value), 0);
	EXPECT_EQ(t, value, 42);
	EXPECT_EQ(t, linker_device_source_read(device, "samples", &value), 0);
	EXPECT_EQ(t, linker_device_source_read(device, "nope", &value), -ENOENT);
	EXPECT_EQ(t, linker_device_source_read("nic99", "MPC", &value), -ENOENT);
	EXPECT_EQ(t, linker_device_source_read("nic1x", "MPC", &value), -ENOENT);
	EXPECT_EQ(t, linker_device_source_read("nobody.0", "MPC", &value), -ENOENT);
}

/* Without any aspect the NIC keeps the mode it was given: the loop steers
 * only a NIC that has had an answer. */
static void no_aspect_no_steering(struct ktest *t)
{
	struct nic *nic = fresh_nic(t);
	if (!nic)
		return;
	nic_set_mode(nic, NIC_MODE_POLLING);
	for (unsigned i = 0; i < 2 * NIC_STEER_MISSES; i++)
		EXPECT_EQ(t, step(nic, 100, 0, false), -ENOENT);
	EXPECT_EQ(t, nic->mode, NIC_MODE_POLLING);
	nic_set_mode(nic, NIC_MODE_INTERRUPT);
}

/* A device counter that only a refresh saves must be saved on a NIC that
 * nobody reads and no frame wakes: an idle worker still refreshes every
 * counter_refresh_ns, without a poll pass for it. */
static void an_idle_nic_refreshes_its_counters(struct ktest *t)
{
	struct nic *nic = fresh_nic(t);
	if (!nic)
		return;
	__atomic_store_n(&nic->counter_refresh_ns, NSEC_PER_MSEC, __ATOMIC_RELAXED);
	nic_irq(nic); /* one pass, after which the worker waits with the refresh due */
	uint64_t deadline = clock_ns() + REPLY_WAIT_NS, first = counter_refreshes;
	while (counter_refreshes == first && clock_ns() < deadline)
		sched_sleep_ns(NSEC_PER_MSEC);
	uint64_t polls = nic->polls, refreshed = counter_refreshes;
	while (counter_refreshes < refreshed + 3 && clock_ns() < deadline)
		sched_sleep_ns(NSEC_PER_MSEC);
	__atomic_store_n(&nic->counter_refresh_ns, 0, __ATOMIC_RELAXED);
	EXPECT_TRUE(t, counter_refreshes >= refreshed + 3);
	EXPECT_EQ(t, nic->polls, polls);
}

KTEST_SUITE(nicsteer, KTEST_CASE(replies_are_kept_per_joinpoint_and_key),
	    KTEST_CASE(nic_counters_are_device_counters), KTEST_CASE(no_aspect_no_steering),
	    KTEST_CASE(decisions_follow_the_load_direct), KTEST_CASE(decisions_follow_the_load_shm),
	    KTEST_CASE(decisions_follow_the_load_msg_call),
	    KTEST_CASE(decisions_follow_the_load_msg_oneway),
	    KTEST_CASE(garbage_answers_leave_interrupts_direct),
	    KTEST_CASE(garbage_answers_leave_interrupts_msg),
	    KTEST_CASE(dead_monitor_leaves_interrupts),
	    KTEST_CASE(a_choice_is_tried_again_when_it_runs_out),
	    KTEST_CASE(a_trial_with_late_answers_keeps_the_faster_mode),
	    KTEST_CASE(a_hold_lasts_its_frames_or_samples_direct),
	    KTEST_CASE(a_hold_lasts_its_frames_or_samples_msg),
	    KTEST_CASE(dead_monitor_after_a_hold), KTEST_CASE(msg_monitor_sleeps_between_samples),
	    KTEST_CASE(a_mode_set_by_hand_outlives_the_monitor),
	    KTEST_CASE(an_idle_nic_refreshes_its_counters));
