/*
 * Trackers on join points, made by name:
 *   wakeup   sched.wakeup -> the sched.switch that puts the thread on a CPU
 *   ttfb     net.accept -> the socket's first net.send (a close first: id 1);
 *            one net.send advice serves every ttfb tracker (send_join)
 *   syscall  a system call's entry -> its return, per thread; "syscall:NAME"
 *            tracks NAME only; the out id is sys.NAME's join-point index; a
 *            report carries the user stack of the slow call, taken at its
 *            return.  Timed on the system-call path (spans.c), or with a
 *            timeout on the join points sys.X before -> sys.X after
 *   offcpu   sched.switch away from a thread -> the switch back onto a CPU;
 *            a report names the waker (sched.wakeup: who, on which CPU,
 *            from an interrupt or not, and the kernel's callers of the
 *            wake-up)
 *   irq      irq.entry before -> after on this CPU (the handler); id: vector
 *   nic      nic.irq (the device asked) -> the nic.poll after it (frames
 *            handed to the stack; id 1 when it found none)
 *   nictx    nic.tx_queued (a driver gave the device a frame in a ring slot)
 *            -> nic.tx_done of that slot (its reclaim found it written back)
 *   block    block.submit -> block.complete of the request (a refused
 *            submit ends it at once, id 1)
 * Their advice only calls event_in/out, which never sleep, so it is safe where
 * those join points run (sched.switch holds a run-queue lock, irq.entry and
 * block.complete run in interrupts).  A slow event asks for a flight-recorder
 * snapshot when one runs, or calls the creator's callback.
 */
#include "lattrack/internal.h"

#include "arch/x86_64/cpu.h"
#include "joinpoint/joinpoint.h"
#include "joinpoint/section.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "panic/ksyms.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "smp/smp.h"
#include "trace/trace.h"

#define KIND_ADVICE 3 /* join points per kind, at most */
#define PATTERN_MAX 40

enum { OUT_NORMAL, OUT_NOT_WOKEN_OR_CLOSED, OUT_REFUSED_OR_EMPTY = 1 };

#define WAKE_NOTES   32 /* wake-ups remembered per offcpu tracker (by the woken thread's hash) */
#define WAKE_CALLERS 8  /* kernel return addresses kept per wake-up */
#define KERNEL_HALF  0xffff800000000000ull

struct instance;
struct kind {
	const char *name;
	const char *patterns[KIND_ADVICE];
	jp_advice_fn before[KIND_ADVICE];
	jp_advice_fn after[KIND_ADVICE];
	bool (*where)(const struct joinpoint *jp); /* NULL: every match */
	lattrack_annotate_fn annotate;             /* NULL: reports say only the times */
	unsigned instance_cookie; /* bit i: advice i gets the instance, not the tracker */
	unsigned advice_flags;    /* JP_ADVICE_* of every advice */
	/* advice shared by every tracker of the kind: joined after the
	 * tracker is enabled, before its own advice; NULL: none */
	int (*join)(struct lattrack *tracker);
	void (*leave)(struct lattrack *tracker);
};

/* The last wake-up of a thread, as the offcpu tracker saw it. */
struct wake_note {
	uint32_t lock;      /* test-and-set, interrupts off */
	uint64_t thread;    /* the woken thread (0: empty) */
	uint64_t tsc;       /* when it was woken */
	uint32_t waker_tid; /* its process's number; 0: a kernel thread or an interrupt */
	uint32_t waker_cpu;
	uint32_t flags; /* LATTRACK_WAKER_* */
	char waker_name[16];
	uint64_t callers[WAKE_CALLERS]; /* from the advice outwards */
};

struct instance {
	struct lattrack *tracker;
	char pattern[PATTERN_MAX]; /* "sys.NAME" for "syscall:NAME" */
	struct jp_advice advice[KIND_ADVICE];
	int handles[KIND_ADVICE];
	bool span;                 /* a syscall tracker timed on the system-call path (spans.c) */
	const struct kind *joined; /* the kind whose shared advice it joined, or NULL */
	struct wake_note notes[WAKE_NOTES]; /* offcpu only */
};

static struct instance instances[LATTRACK_TRACKERS_MAX];

/* ---- wakeup ---------------------------------------------------------------- */

static void wakeup_before(struct jp_context *context, void *cookie)
{
	uint64_t thread = context->args[0];
	lattrack_event_in(cookie, &thread, sizeof thread, LATTRACK_IN_UNIQUE, NULL);
}

/* A thread that was not blocked is not woken: its event ends now, short. */
static void wakeup_after(struct jp_context *context, void *cookie)
{
	uint64_t thread = context->args[0];
	if (!(context->ret & 0xff))
		lattrack_event_out(cookie, &thread, sizeof thread, OUT_NOT_WOKEN_OR_CLOSED);
}

static void switch_before(struct jp_context *context, void *cookie)
{
	uint64_t next = context->args[1];
	lattrack_event_out(cookie, &next, sizeof next, OUT_NORMAL);
}

/* ---- ttfb ------------------------------------------------------------------ */

static void accept_after(struct jp_context *context, void *cookie)
{
	uint64_t *out = (uint64_t *)context->args[1];
	if ((int)context->ret != 0 || !out)
		return;
	uint64_t socket = *out;
	lattrack_event_in(cookie, &socket, sizeof socket, LATTRACK_IN_UNIQUE, NULL);
}

/* net.send ends its socket's event in every ttfb tracker through one
 * native advice that all of them share: alone on the join point (the usual
 * case), it runs whole calls (jp_advice.around, about 20 instructions)
 * where an advice of each tracker would take the dispatcher's way (about
 * 95).  The trackers are read in the dispatcher's section; one that leaves
 * is waited for (a grace period) before it may go.  send_lock orders joins
 * and leaves. */
static struct lattrack *send_trackers[LATTRACK_TRACKERS_MAX];
static unsigned send_used; /* bit i: send_trackers[i] is set */
static int send_handle;    /* the advice's attachment (0: none) */
static struct mutex send_lock = MUTEX_INIT(send_lock, "lattrack.ttfb");

static void end_first_send(uint64_t socket)
{
	for (unsigned used = __atomic_load_n(&send_used, __ATOMIC_ACQUIRE); used;
	     used &= used - 1) {
		struct lattrack *tracker =
		    __atomic_load_n(&send_trackers[__builtin_ctz(used)], __ATOMIC_ACQUIRE);
		if (tracker)
			lattrack_event_out(tracker, &socket, sizeof socket, OUT_NORMAL);
	}
}

static void send_before(struct jp_context *context, void *cookie)
{
	end_first_send(context->args[0]);
}

static void send_after(struct jp_context *context, void *cookie)
{
	/* nothing: native advice has both halves */
}

static uint64_t send_around(const struct joinpoint *jp, uint64_t *args,
			    const struct jp_fast_list *list)
{
	end_first_send(args[0]);
	jp_section_leave();
	return jp->call(args);
}

static const struct jp_advice send_advice = {.name = "lattrack",
					     .before = send_before,
					     .after = send_after,
					     .around = send_around,
					     .flags = JP_ADVICE_NATIVE};

/* Returns 0, or jp_attach's error for the first tracker. */
static int send_join(struct lattrack *tracker)
{
	int error = 0;
	mutex_lock(&send_lock);
	if (!send_handle) {
		int handle = jp_attach("net.send", &send_advice);
		if (handle < 0) {
			error = handle;
			goto out;
		}
		send_handle = handle;
	}
	unsigned i = (unsigned)__builtin_ctz(~send_used); /* instances: at most as many as slots */
	__atomic_store_n(&send_trackers[i], tracker, __ATOMIC_RELEASE);
	__atomic_or_fetch(&send_used, 1u << i, __ATOMIC_RELEASE);
out:
	mutex_unlock(&send_lock);
	return error;
}

static void send_leave(struct lattrack *tracker)
{
	mutex_lock(&send_lock);
	for (unsigned i = 0; i < LATTRACK_TRACKERS_MAX; i++) {
		if (!(send_used & (1u << i)) || send_trackers[i] != tracker)
			continue;
		__atomic_and_fetch(&send_used, ~(1u << i), __ATOMIC_RELEASE);
		__atomic_store_n(&send_trackers[i], NULL, __ATOMIC_RELEASE);
	}
	if (!send_used && jp_detach(send_handle) == 0)
		send_handle = 0; /* jp_detach waited for a grace period */
	else
		grace_synchronize(); /* no send reads the tracker any more */
	mutex_unlock(&send_lock);
}

static void close_before(struct jp_context *context, void *cookie)
{
	uint64_t socket = context->args[0];
	lattrack_event_out(cookie, &socket, sizeof socket, OUT_NOT_WOKEN_OR_CLOSED);
}

/* ---- syscall ---------------------------------------------------------------- */

static uint64_t thread_key(const struct jp_context *context)
{
	return (uint64_t)(uintptr_t)context->thread;
}

static void syscall_before(struct jp_context *context, void *cookie)
{
	uint64_t thread = thread_key(context);
	lattrack_event_in(cookie, &thread, sizeof thread, LATTRACK_IN_SHARED, NULL);
}

static void syscall_after(struct jp_context *context, void *cookie)
{
	uint64_t thread = thread_key(context);
	lattrack_event_out(cookie, &thread, sizeof thread, jp_index(context->joinpoint));
}

/* A slow call's report carries the user stack it was made from, walked at
 * its after advice (only reports pay for the walk). */
static void syscall_annotate(struct lattrack_report *report, void *context)
{
	uint64_t key;
	if ((report->flag != LATTRACK_NORMAL && report->flag != LATTRACK_LATE) ||
	    report->key_length != sizeof key)
		return;
	memcpy(&key, report->key, sizeof key);
	if (key != (uint64_t)(uintptr_t)thread_current())
		return; /* not in the caller's context */
	uint16_t flags;
	report->stack_count =
	    (uint16_t)uscope_take_stack(report->stack, LATTRACK_STACK_MAX, &flags);
	report->stack_flags = (flags & TRACE_STACK_TRUNCATED ? LATTRACK_STACK_TRUNCATED : 0) |
			      (flags & TRACE_STACK_UNREADABLE ? LATTRACK_STACK_UNREADABLE : 0);
}

/* Calls that never return to their after advice. */
static bool returns(const struct joinpoint *jp)
{
	return strcmp(jp->name, "sys.exit") && strcmp(jp->name, "sys.exit_group") &&
	       strcmp(jp->name, "sys.execve");
}

/* ---- offcpu ----------------------------------------------------------------- */

static struct wake_note *note_of(struct instance *instance, uint64_t thread)
{
	return &instance->notes[(uint32_t)((thread * 0x9e3779b97f4a7c15ull) >> 59) % WAKE_NOTES];
}

static void note_lock(struct wake_note *note)
{
	while (__atomic_exchange_n(&note->lock, 1, __ATOMIC_ACQUIRE))
		cpu_relax();
}

static void note_unlock(struct wake_note *note)
{
	__atomic_store_n(&note->lock, 0, __ATOMIC_RELEASE);
}

/* The return addresses on this kernel stack, from here outwards: the frame
 * pointers are followed only upwards, on kernel addresses, below the top of
 * the thread's kernel stack when this runs on it (else within 16 KiB: an
 * interrupt's own stack). */
static void kernel_callers(uint64_t callers[WAKE_CALLERS])
{
	uint64_t *frame = __builtin_frame_address(0), start = (uint64_t)(uintptr_t)frame;
	uint64_t top = this_cpu()->syscall_stack;
	uint64_t limit = top > start && top - start <= 65536 ? top : start + 16384;
	for (unsigned i = 0; i < WAKE_CALLERS; i++) {
		uint64_t at = (uint64_t)(uintptr_t)frame;
		if (!frame || (at & 7) || at < start || at + 16 > limit || at < KERNEL_HALF) {
			callers[i] = 0;
			continue;
		}
		callers[i] = frame[1];
		uint64_t *next = (uint64_t *)frame[0];
		frame = (uint64_t)(uintptr_t)next > at ? next : NULL;
	}
}

/* sched.wakeup after, when it woke a blocked thread: who woke it, where. */
static void offcpu_wakeup(struct jp_context *context, void *cookie)
{
	if (!(context->ret & 0xff))
		return;
	struct instance *instance = cookie;
	uint64_t thread = context->args[0];
	struct wake_note *note = note_of(instance, thread);
	struct thread *waker = thread_current();
	bool in_interrupt = this_cpu()->irq_depth > 0;
	struct process *process = waker && !in_interrupt ? thread_process(waker) : NULL;
	uint64_t flags = irq_save();
	note_lock(note);
	note->thread = thread;
	note->tsc = rdtsc();
	note->waker_cpu = context->cpu;
	note->flags = LATTRACK_WAKER_KNOWN | (in_interrupt ? LATTRACK_WAKER_INTERRUPT : 0);
	note->waker_tid = process ? (uint32_t)proc_pid(process) : 0;
	strlcpy(note->waker_name,
		in_interrupt ? "interrupt"
		: waker      ? thread_name(waker)
			     : "",
		sizeof note->waker_name);
	kernel_callers(note->callers);
	note_unlock(note);
	irq_restore(flags);
}

/* Frames of the wake-up's machinery: this file's advice, the join point's
 * trampoline and dispatcher (code without a symbol is the trampoline's). */
static bool machinery(uint64_t address)
{
	uint64_t offset;
	const char *name = ksym_lookup(address - 1, &offset);
	return !name || !strncmp(name, "jp_", 3) || !strncmp(name, "offcpu_", 7) ||
	       !strcmp(name, "kernel_callers") || !strcmp(name, "sched_wakeup");
}

/* The callers of the wake-up, from the one that called sched_wakeup out. */
static unsigned wakeup_callers(const uint64_t callers[WAKE_CALLERS], uint64_t *out)
{
	unsigned first = 0, count = 0;
	while (first < WAKE_CALLERS && callers[first] && machinery(callers[first]))
		first++;
	for (unsigned i = first; i < WAKE_CALLERS && callers[i] && count < LATTRACK_STACK_MAX; i++)
		out[count++] = callers[i];
	return count;
}

static void name_thread(struct lattrack_report *report, struct thread *thread)
{
	struct process *process = thread_process(thread);
	report->thread_tid = process ? (uint32_t)proc_pid(process) : 0;
	strlcpy(report->thread_name, thread_name(thread), sizeof report->thread_name);
}

/* An off-CPU report names the thread (when it goes back on a CPU, its out)
 * and the wake-up that ended its wait, when one was seen after the thread
 * left the CPU (a preempted thread has none). */
static void offcpu_annotate(struct lattrack_report *report, void *context)
{
	uint64_t thread;
	if (report->key_length != sizeof thread)
		return;
	memcpy(&thread, report->key, sizeof thread);
	if (report->flag == LATTRACK_NORMAL || report->flag == LATTRACK_LATE)
		name_thread(report, (struct thread *)(uintptr_t)thread); /* going on a CPU: alive */
	struct wake_note *note = note_of(context, thread), copy;
	uint64_t flags = irq_save();
	note_lock(note);
	copy = *note;
	note_unlock(note);
	irq_restore(flags);
	if (copy.thread != thread || clock_ns_at_tsc(copy.tsc) < report->start_ns)
		return;
	report->waker_tid = copy.waker_tid;
	report->waker_cpu = copy.waker_cpu;
	report->waker_flags = copy.flags;
	memcpy(report->waker_name, copy.waker_name, sizeof report->waker_name);
	report->stack_count = (uint16_t)wakeup_callers(copy.callers, report->stack);
	report->stack_flags = LATTRACK_STACK_KERNEL;
}

/* A thread leaving its CPU for good (exiting) puts no event in: nothing
 * would take it out, and the next thread made at its address would end it
 * as its own wait. */
static void offcpu_switch(struct jp_context *context, void *cookie)
{
	uint64_t prev = context->args[0], next = context->args[1];
	if (prev == next)
		return;
	lattrack_event_out(cookie, &next, sizeof next, OUT_NORMAL);
	enum thread_state leaving = thread_state((const struct thread *)(uintptr_t)prev);
	if (leaving != THREAD_EXITING && leaving != THREAD_DEAD)
		lattrack_event_in(cookie, &prev, sizeof prev, LATTRACK_IN_UNIQUE, NULL);
}

/* ---- irq --------------------------------------------------------------------- */

static void irq_before(struct jp_context *context, void *cookie)
{
	uint64_t cpu = context->cpu;
	lattrack_event_in(cookie, &cpu, sizeof cpu, LATTRACK_IN_SHARED, NULL);
}

static void irq_after(struct jp_context *context, void *cookie)
{
	uint64_t cpu = context->cpu;
	lattrack_event_out(cookie, &cpu, sizeof cpu, (unsigned)context->args[0]);
}

/* ---- nic --------------------------------------------------------------------- */

static void nic_irq_before(struct jp_context *context, void *cookie)
{
	uint64_t nic = context->args[0];
	lattrack_event_in(cookie, &nic, sizeof nic, LATTRACK_IN_UNIQUE, NULL);
}

static void nic_poll_after(struct jp_context *context, void *cookie)
{
	uint64_t nic = context->args[0];
	unsigned delivered = (unsigned)context->ret;
	lattrack_event_out(cookie, &nic, sizeof nic, delivered ? OUT_NORMAL : OUT_REFUSED_OR_EMPTY);
}

/* ---- nictx: a frame in the device, per ring slot -------------------------------- */

/* One word per (NIC, slot): NICs differ below bit 48 (kernel addresses
 * share their top bits), slots are below 65536. */
static uint64_t tx_slot_key(const struct jp_context *context)
{
	return context->args[0] ^ ((context->args[1] & 0xffff) << 48);
}

static void nic_tx_queued_before(struct jp_context *context, void *cookie)
{
	uint64_t key = tx_slot_key(context);
	lattrack_event_in(cookie, &key, sizeof key, LATTRACK_IN_UNIQUE, NULL);
}

static void nic_tx_done_before(struct jp_context *context, void *cookie)
{
	uint64_t key = tx_slot_key(context);
	lattrack_event_out(cookie, &key, sizeof key, OUT_NORMAL);
}

/* ---- block ------------------------------------------------------------------- */

static void block_submit_before(struct jp_context *context, void *cookie)
{
	uint64_t request = context->args[0];
	if (request)
		lattrack_event_in(cookie, &request, sizeof request, LATTRACK_IN_UNIQUE, NULL);
}

/* A refused request never completes; an accepted one may have completed
 * already (then its key is out and this finds nothing). */
static void block_submit_after(struct jp_context *context, void *cookie)
{
	uint64_t request = context->args[0];
	if ((int)context->ret != 0 && request)
		lattrack_event_out(cookie, &request, sizeof request, OUT_REFUSED_OR_EMPTY);
}

static void block_complete_before(struct jp_context *context, void *cookie)
{
	uint64_t request = context->args[0];
	lattrack_event_out(cookie, &request, sizeof request, OUT_NORMAL);
}

static const struct kind kinds[] = {
    {.name = "wakeup",
     .patterns = {"sched.wakeup", "sched.switch"},
     .before = {wakeup_before, switch_before},
     .after = {wakeup_after, NULL}},
    {.name = "ttfb",
     .patterns = {"net.accept", "net.close"},
     .before = {NULL, close_before},
     .after = {accept_after, NULL},
     .join = send_join,
     .leave = send_leave},
    /* native (joinpoint.h): kernel code in a static instance that never
	 * sleeps, defers or reads the context's timestamps: the dispatcher's
	 * short path */
    {.name = "syscall",
     .patterns = {"sys.*"},
     .before = {syscall_before},
     .after = {syscall_after},
     .where = returns,
     .annotate = syscall_annotate,
     .advice_flags = JP_ADVICE_NATIVE},
    {.name = "offcpu",
     .patterns = {"sched.switch", "sched.wakeup"},
     .before = {offcpu_switch, NULL},
     .after = {NULL, offcpu_wakeup},
     .annotate = offcpu_annotate,
     .instance_cookie = 1u << 1},
    {.name = "irq", .patterns = {"irq.entry"}, .before = {irq_before}, .after = {irq_after}},
    {.name = "nic",
     .patterns = {"nic.irq", "nic.poll"},
     .before = {nic_irq_before, NULL},
     .after = {NULL, nic_poll_after}},
    {.name = "nictx",
     .patterns = {"nic.tx_queued", "nic.tx_done"},
     .before = {nic_tx_queued_before, nic_tx_done_before}},
    {.name = "block",
     .patterns = {"block.submit", "block.complete"},
     .before = {block_submit_before, block_complete_before},
     .after = {block_submit_after, NULL}},
};

/* A slow event asks for a snapshot; a user stack it carries goes into the
 * recorder first, so that the snapshot holds it (a user_stack record of the
 * thread, right after the slow call). */
static void on_slow(const struct lattrack_report *report, void *context)
{
	if (report->flag == LATTRACK_GC || !lattrack_flight_running())
		return;
	struct thread *thread = thread_current();
	if (report->stack_count && !(report->stack_flags & LATTRACK_STACK_KERNEL) && thread) {
		uint16_t flags =
		    (report->stack_flags & LATTRACK_STACK_TRUNCATED ? TRACE_STACK_TRUNCATED : 0) |
		    (report->stack_flags & LATTRACK_STACK_UNREADABLE ? TRACE_STACK_UNREADABLE : 0);
		/* the trace's thread id, as its other records give it */
		uscope_write_stack((int)thread_id(thread), report->stack, report->stack_count,
				   flags);
	}
	lattrack_snapshot_request();
}

/* The kind a name gives ("syscall:read" is "syscall" on "sys.read"), and
 * the pattern that replaces its first, or "". */
static const struct kind *kind_named(const char *name, char pattern[PATTERN_MAX])
{
	const char *colon = strchr(name, ':');
	size_t length = colon ? (size_t)(colon - name) : strlen(name);
	pattern[0] = '\0';
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (strlen(kinds[i].name) != length || strncmp(kinds[i].name, name, length))
			continue;
		if (!colon)
			return &kinds[i];
		if (strcmp(kinds[i].name, "syscall") || !colon[1] ||
		    strlen(colon + 1) + 5 > PATTERN_MAX)
			return NULL;
		strlcpy(pattern, "sys.", PATTERN_MAX);
		strlcpy(pattern + 4, colon + 1, PATTERN_MAX - 4);
		return &kinds[i];
	}
	return NULL;
}

static int free_instance(void)
{
	for (int i = 0; i < LATTRACK_TRACKERS_MAX; i++)
		if (!instances[i].tracker)
			return i;
	return -1;
}

static void detach_instance(int slot)
{
	struct instance *instance = &instances[slot];
	if (instance->span)
		lattrack_span_detach(instance->tracker);
	if (instance->joined)
		instance->joined->leave(instance->tracker);
	for (int i = 0; i < KIND_ADVICE; i++)
		if (instance->handles[i] > 0)
			jp_detach(instance->handles[i]);
	memset(instance, 0, sizeof *instance);
}

static int attach_advice(int slot, const struct kind *kind)
{
	struct instance *instance = &instances[slot];
	if (kind->join) { /* first, so that no event goes in before its end can be seen */
		int error = kind->join(instance->tracker);
		if (error)
			return error;
		instance->joined = kind;
	}
	for (int i = 0; i < KIND_ADVICE && kind->patterns[i]; i++) {
		instance->advice[i] = (struct jp_advice){.name = "lattrack",
							 .before = kind->before[i],
							 .after = kind->after[i],
							 .flags = kind->advice_flags,
							 .cookie = kind->instance_cookie & (1u << i)
								       ? (void *)instance
								       : (void *)instance->tracker};
		const char *pattern =
		    i == 0 && instance->pattern[0] ? instance->pattern : kind->patterns[i];
		instance->handles[i] = jp_attach_where(pattern, kind->where, &instance->advice[i]);
		if (instance->handles[i] < 0)
			return instance->handles[i];
	}
	return 0;
}

/* A syscall tracker without a timeout is timed on the system-call path
 * (spans.c); "syscall:NAME" must name a system call's join point. */
static int attach_span(int slot)
{
	struct instance *instance = &instances[slot];
	const char *call = instance->pattern[0] ? instance->pattern + 4 : NULL;
	if (call && !jp_find(instance->pattern))
		return -ENOENT;
	int error = lattrack_span_attach(instance->tracker, call);
	instance->span = !error;
	return error;
}

static int configure(struct lattrack *tracker, const struct kind *kind, void *annotate_context,
		     uint64_t threshold_ns, uint64_t timeout_ns, lattrack_callback callback,
		     void *context)
{
	tracker->kind = kind->name;
	if (kind->annotate)
		lattrack_set_annotate(tracker, kind->annotate, annotate_context);
	lattrack_set_threshold_ns(tracker, threshold_ns);
	lattrack_set_timeout_ns(tracker, timeout_ns);
	lattrack_set_callback(tracker, callback ? callback : on_slow, context);
	if (timeout_ns) /* what never comes out is collected, reported GC */
		lattrack_set_gc_age_ns(tracker, lattrack_gc_age_for(timeout_ns));
	return lattrack_enable(tracker);
}

/* The instances change one caller at a time (the shell's thread, kcmd's, a
 * host's control line): a free slot found is the caller's until it is
 * filled, and a tracker detached is nobody else's half-made one. */
static struct mutex instances_lock = MUTEX_INIT(instances_lock, "lattrack.kinds");

/* Under instances_lock, with a reference of the caller's that this drops:
 * the tracker destroyed first (its timer stopped, the reference keeping its
 * memory), because the timer's reports are annotated from the instance,
 * which is cleared, or reused by the next attach, only after. */
static void destroy_then_detach(struct lattrack *tracker)
{
	lattrack_destroy(tracker);
	for (int i = 0; i < LATTRACK_TRACKERS_MAX; i++)
		if (instances[i].tracker == tracker)
			detach_instance(i);
	lattrack_put(tracker);
}

static int attach_kind_locked(const char *name, const char *kind_name, uint64_t threshold_ns,
			      uint64_t timeout_ns, lattrack_callback callback, void *context)
{
	char pattern[PATTERN_MAX];
	const struct kind *kind = kind_name ? kind_named(kind_name, pattern) : NULL;
	if (!kind)
		return -ENOENT;
	int slot = free_instance();
	if (slot < 0)
		return -ENOSPC;
	struct lattrack *tracker;
	int error = lattrack_create(name, &tracker);
	if (error)
		return error;
	memset(&instances[slot], 0, sizeof instances[slot]);
	error =
	    configure(tracker, kind, &instances[slot], threshold_ns, timeout_ns, callback, context);
	if (error)
		goto out_destroy;
	if (kind->annotate == syscall_annotate)
		uscope_prepare_stacks();
	instances[slot].tracker = tracker;
	strlcpy(instances[slot].pattern, pattern, PATTERN_MAX);
	error = kind->annotate == syscall_annotate && !timeout_ns ? attach_span(slot)
								  : attach_advice(slot, kind);
	if (error)
		goto out_detach;
	return 0;
out_detach:
	lattrack_get_reference(tracker);
	destroy_then_detach(tracker);
	return error;
out_destroy:
	lattrack_destroy(tracker);
	return error;
}

int lattrack_attach_kind_callback(const char *name, const char *kind_name, uint64_t threshold_ns,
				  uint64_t timeout_ns, lattrack_callback callback, void *context)
{
	mutex_lock(&instances_lock);
	int error =
	    attach_kind_locked(name, kind_name, threshold_ns, timeout_ns, callback, context);
	mutex_unlock(&instances_lock);
	return error;
}

int lattrack_attach_kind(const char *name, const char *kind_name, uint64_t threshold_ns,
			 uint64_t timeout_ns)
{
	return lattrack_attach_kind_callback(name, kind_name, threshold_ns, timeout_ns, NULL, NULL);
}

int lattrack_detach(const char *name)
{
	struct lattrack *tracker = lattrack_get(name);
	if (!tracker)
		return -ENOENT;
	mutex_lock(&instances_lock);
	destroy_then_detach(tracker);
	mutex_unlock(&instances_lock);
	return 0;
}
