/*
 * ktest suite "smp": cross-CPU calls, threads on every CPU, affinity and
 * monitor CPUs, grace periods, TLB shootdown, a stress of allocation,
 * sleeping, waking and thread creation on every CPU, and join-point
 * attach/detach storms while every CPU runs through the join point.  Cases
 * that need a second CPU skip on one.  Stress phases run for a bounded time
 * (STRESS_NS) and check counts, never durations; a wait that lasts
 * LOST_WAKEUP_NS is a lost wake-up, reported rather than hung on.
 */
#include "smp/smp.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/traps.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "time/time.h"

#define STRESS_NS          (300 * NSEC_PER_MSEC)
#define LOST_WAKEUP_NS     (10 * NSEC_PER_SEC) /* far beyond any wait under load */
#define MAX_WORKERS        16
#define STRESS_FRAME_SLACK 8
#define TEST_VIRT          0xffffc7ff00000000UL /* kernel half, unused by anything else */

static unsigned online_cpus(void)
{
	return smp_online_count();
}

static bool skip_unless_smp(struct ktest *t)
{
	if (online_cpus() > 1)
		return false;
	ktest_skip(t, "one CPU online");
	return true;
}

/* The CPU the caller runs on, read with interrupts off. */
static unsigned current_cpu(void)
{
	uint64_t flags = irq_save();
	unsigned index = this_cpu_id();
	irq_restore(flags);
	return index;
}

/* Creates fn(arg) pinned to cpu; NULL when out of memory. */
static struct thread *spawn_on(unsigned cpu, thread_fn fn, void *arg, const char *name)
{
	struct thread *self = thread_current();
	uint64_t saved = thread_affinity(self);
	thread_set_affinity(self, SMP_CPU_BIT(cpu));
	struct thread *t = thread_create(fn, arg, name, SCHED_PRIORITY_NORMAL);
	thread_set_affinity(self, saved);
	return t;
}

/* ---- Cross-CPU calls ------------------------------------------------------ */

static uint64_t call_hits[MAX_CPUS];

static void count_call(void *arg)
{
	(void)arg;
	__atomic_fetch_add(&call_hits[this_cpu_id()], 1, __ATOMIC_RELAXED);
}

static void every_online_cpu_runs_a_call_once(struct ktest *t)
{
	for (unsigned i = 0; i < MAX_CPUS; i++)
		call_hits[i] = 0;
	EXPECT_EQ(t, smp_call_all(count_call, NULL), 0);
	for (unsigned i = 0; i < MAX_CPUS; i++)
		EXPECT_EQ(t, call_hits[i], smp_cpu_online(i) ? 1 : 0);
	EXPECT_EQ(t, smp_call(smp_online_mask(), count_call, NULL, SMP_CALL_NOWAIT), 0);
	EXPECT_EQ(t, smp_call_all(count_call, NULL), 0); /* drains the first */
	for (unsigned i = 0; i < MAX_CPUS; i++)
		EXPECT_EQ(t, call_hits[i], smp_cpu_online(i) ? 3 : 0);
	EXPECT_EQ(t, smp_call(~0ULL, NULL, NULL, SMP_CALL_WAIT), -EINVAL);
}

/* A call whose IPI is lost: does the waiting caller send it again, so that
 * the call still runs once on its target (and is counted as resent)? */
static void lost_call_ipi_is_sent_again(struct ktest *t)
{
	unsigned self = this_cpu_id();
	uint64_t others = smp_online_mask() & ~SMP_CPU_BIT(self);
	if (!others)
		return ktest_skip(t, "one CPU");
	unsigned target = (unsigned)__builtin_ctzll(others);
	preempt_disable(); /* the request stays this CPU's */
	uint64_t resent = smp_calls_resent(), hits = call_hits[target];
	smp_drop_next_call_ipi();
	EXPECT_EQ(t, smp_call(SMP_CPU_BIT(target), count_call, NULL, SMP_CALL_WAIT), 0);
	EXPECT_EQ(t, call_hits[target], hits + 1);
	EXPECT_TRUE(t, smp_calls_resent() > resent);
	preempt_enable();
}

/* ---- Threads on every CPU, affinity --------------------------------------- */

static int report_cpu(void *arg)
{
	(void)arg;
	return (int)current_cpu();
}

static void pinned_threads_run_on_their_cpu(struct ktest *t)
{
	for (uint64_t m = smp_online_mask(); m; m &= m - 1) {
		unsigned cpu = (unsigned)__builtin_ctzll(m);
		struct thread *worker = spawn_on(cpu, report_cpu, NULL, "pinned");
		ASSERT_TRUE(t, worker);
		int ran_on = -1;
		EXPECT_EQ(t, thread_join(worker, &ran_on), 0);
		EXPECT_EQ(t, ran_on, cpu);
	}
}

static void set_affinity_moves_the_caller(struct ktest *t)
{
	struct thread *self = thread_current();
	uint64_t saved = thread_affinity(self);
	for (uint64_t m = smp_online_mask(); m; m &= m - 1) {
		unsigned cpu = (unsigned)__builtin_ctzll(m);
		EXPECT_EQ(t, thread_set_affinity(self, SMP_CPU_BIT(cpu)), 0);
		EXPECT_EQ(t, current_cpu(), cpu);
		EXPECT_EQ(t, thread_cpu(self), cpu);
	}
	EXPECT_EQ(t, thread_set_affinity(self, 0), -EINVAL);
	EXPECT_EQ(t, thread_set_affinity(self, saved), 0);
	EXPECT_EQ(t, thread_affinity(self), saved);
}

/* ---- Monitor CPUs ---------------------------------------------------------- */

struct sampler {
	unsigned reserved;
	volatile bool stop;
	uint64_t seen_mask; /* CPUs the thread was seen on */
};

static int sample_cpus(void *arg)
{
	struct sampler *s = arg;
	uint64_t mask = 0, deadline = clock_ns() + LOST_WAKEUP_NS;
	while (!s->stop && clock_ns() < deadline) {
		mask |= SMP_CPU_BIT(current_cpu());
		if ((mask & 7) == 0)
			sched_yield();
	}
	__atomic_fetch_or(&s->seen_mask, mask, __ATOMIC_RELAXED);
	return 0;
}

static void monitor_cpu_runs_only_monitors(struct ktest *t)
{
	if (skip_unless_smp(t))
		return;
	struct sampler ordinary = {0}, monitor = {0};
	unsigned reserved = 63 - (unsigned)__builtin_clzll(smp_online_mask());
	ASSERT_EQ(t, cpu_reserve_for_monitors(reserved), 0);
	EXPECT_TRUE(t, sched_monitor_cpus() & SMP_CPU_BIT(reserved));
	struct thread *workers[MAX_WORKERS];
	unsigned n = 2 * online_cpus() < MAX_WORKERS ? 2 * online_cpus() : MAX_WORKERS;
	for (unsigned i = 0; i < n; i++)
		workers[i] =
		    thread_create(sample_cpus, &ordinary, "ordinary", SCHED_PRIORITY_NORMAL);
	struct thread *mon = spawn_on(reserved, sample_cpus, &monitor, "monitor");
	if (mon)
		thread_set_kind(mon, THREAD_KIND_MONITOR);
	sched_sleep_ns(50 * NSEC_PER_MSEC);
	ordinary.stop = monitor.stop = true;
	for (unsigned i = 0; i < n; i++)
		if (workers[i])
			EXPECT_EQ(t, thread_join(workers[i], NULL), 0);
	if (mon)
		EXPECT_EQ(t, thread_join(mon, NULL), 0);
	EXPECT_EQ(t, cpu_release_from_monitors(reserved), 0);
	EXPECT_EQ(t, ordinary.seen_mask & SMP_CPU_BIT(reserved), 0);
	EXPECT_TRUE(t, ordinary.seen_mask != 0);
	EXPECT_EQ(t, monitor.seen_mask, SMP_CPU_BIT(reserved));
	EXPECT_EQ(t, cpu_reserve_for_monitors(MAX_CPUS), -EINVAL);
}

/* ---- Grace periods --------------------------------------------------------- */

static volatile int reader_stage; /* 1: inside its section; 2: told to leave */
static volatile bool grace_done;

static int hold_reader_section(void *arg)
{
	(void)arg;
	uint64_t deadline = clock_ns() + LOST_WAKEUP_NS;
	preempt_disable();
	reader_stage = 1;
	while (reader_stage != 2 && clock_ns() < deadline)
		cpu_relax();
	preempt_enable();
	return 0;
}

static int run_grace(void *arg)
{
	(void)arg;
	grace_synchronize();
	grace_done = true;
	return 0;
}

static void grace_period_waits_for_a_reader_on_another_cpu(struct ktest *t)
{
	if (skip_unless_smp(t))
		return;
	unsigned here = current_cpu();
	unsigned other = (unsigned)__builtin_ctzll(smp_online_mask() & ~SMP_CPU_BIT(here));
	reader_stage = 0;
	grace_done = false;
	struct thread *reader = spawn_on(other, hold_reader_section, NULL, "reader");
	ASSERT_TRUE(t, reader);
	while (reader_stage != 1)
		sched_yield();
	struct thread *writer = spawn_on(here, run_grace, NULL, "grace");
	ASSERT_TRUE(t, writer);
	sched_sleep_ns(20 * NSEC_PER_MSEC);
	EXPECT_FALSE(t, grace_done); /* the reader is still inside */
	reader_stage = 2;
	EXPECT_EQ(t, thread_join(writer, NULL), 0);
	EXPECT_TRUE(t, grace_done);
	EXPECT_EQ(t, thread_join(reader, NULL), 0);
}

static volatile int spinner_stage;

static int spin_preemptible(void *arg)
{
	(void)arg;
	spinner_stage = 1;
	while (spinner_stage == 1)
		cpu_relax();
	return 0;
}

static void count_irq(struct jp_context *context, void *cookie)
{
	(void)context;
	__atomic_fetch_add((uint64_t *)cookie, 1, __ATOMIC_RELAXED);
}

/* With advice on irq.entry (a _NOSLEEP join point: its handler runs with
 * preemption off), does a grace period still pass a CPU that only runs one
 * busy, preemptible thread and so never switches or idles?  Its ticks must
 * count as quiescent points. */
static void grace_period_passes_a_busy_cpu_with_irq_entry_advised(struct ktest *t)
{
	static uint64_t interrupts;
	static const struct jp_advice probe = {
	    .name = "irq-probe", .before = count_irq, .cookie = &interrupts};
	if (skip_unless_smp(t))
		return;
	unsigned here = current_cpu();
	unsigned other = (unsigned)__builtin_ctzll(smp_online_mask() & ~SMP_CPU_BIT(here));
	int handle = jp_attach("irq.entry", &probe);
	ASSERT_TRUE(t, handle > 0);
	spinner_stage = 0;
	struct thread *spinner = spawn_on(other, spin_preemptible, NULL, "spinner");
	ASSERT_TRUE(t, spinner);
	while (spinner_stage != 1)
		sched_yield();
	grace_synchronize(); /* returns: the spinner's CPU took ticks */
	spinner_stage = 2;
	EXPECT_EQ(t, thread_join(spinner, NULL), 0);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_TRUE(t, interrupts > 0);
}

/* ---- TLB shootdown ------------------------------------------------------- */

/* Reads the word at address; -EFAULT when it faults. */
static int probe_read(uint64_t address, uint64_t *value)
{
	int error = -EFAULT;
	uint64_t result = 0;
	__asm__ volatile("1: movq (%2), %0\n\t"
			 "xor %k1, %k1\n"
			 "2:\n" EX_TABLE_ENTRY(1b, 2b)
			 : "+r"(result), "+r"(error)
			 : "r"(address)
			 : "memory");
	*value = result;
	return error;
}

struct tlb_reader {
	volatile int stage; /* 1: page read (in the TLB); 2: unmapped; 3: probed */
	int before, after;
};

static int read_around_unmap(void *arg)
{
	struct tlb_reader *r = arg;
	uint64_t value, deadline = clock_ns() + LOST_WAKEUP_NS;
	/* No switch away (the TLB stays warm); interrupts on, so the
	 * shootdown's call can come in. */
	preempt_disable();
	r->before = probe_read(TEST_VIRT, &value);
	r->stage = 1;
	while (r->stage != 2 && clock_ns() < deadline)
		cpu_relax();
	r->after = probe_read(TEST_VIRT, &value);
	r->stage = 3;
	preempt_enable();
	return 0;
}

static void unmapped_page_faults_on_every_other_cpu(struct ktest *t)
{
	if (skip_unless_smp(t))
		return;
	struct tlb_reader readers[MAX_CPUS];
	struct thread *threads[MAX_CPUS] = {0};
	struct thread *self = thread_current();
	uint64_t saved = thread_affinity(self);
	unsigned here = current_cpu();
	thread_set_affinity(self, SMP_CPU_BIT(here));
	uint64_t frame = pmm_alloc_frame();
	ASSERT_TRUE(t, frame);
	ASSERT_EQ(t, vm_map(vm_kernel_space(), TEST_VIRT, frame, VM_WRITE), 0);
	uint64_t others = smp_online_mask() & ~SMP_CPU_BIT(here);
	for (uint64_t m = others; m; m &= m - 1) {
		unsigned cpu = (unsigned)__builtin_ctzll(m);
		readers[cpu] = (struct tlb_reader){0, 1, 1};
		threads[cpu] = spawn_on(cpu, read_around_unmap, &readers[cpu], "tlb");
		while (threads[cpu] && readers[cpu].stage != 1)
			sched_yield();
	}
	EXPECT_EQ(t, vm_unmap(vm_kernel_space(), TEST_VIRT), (int64_t)frame);
	for (uint64_t m = others; m; m &= m - 1) {
		unsigned cpu = (unsigned)__builtin_ctzll(m);
		if (!threads[cpu])
			continue;
		readers[cpu].stage = 2;
		EXPECT_EQ(t, thread_join(threads[cpu], NULL), 0);
		EXPECT_EQ(t, readers[cpu].before, 0);
		EXPECT_EQ(t, readers[cpu].after, -EFAULT);
	}
	pmm_free_frame(frame);
	thread_set_affinity(self, saved);
}

/* ---- Stress: allocate, sleep, wake, create and exit on every CPU ---------- */

/* A ping-pong pair: ping asks, pong serves, each waits for the other on a
 * wait queue; a wait that times out is a lost wake-up. */
struct pair {
	struct waitq to_ping, to_pong;
	volatile uint64_t asked, served;
	volatile bool stop;
	uint64_t trips; /* round trips ping saw completed */
	int lost, failed;
};

static uint64_t stress_allocs, stress_frees, stress_children;

static int child_exits(void *arg)
{
	return (int)(uintptr_t)arg;
}

/* One unit of work: blocks of several sizes, a short sleep now and then,
 * and a child thread created and joined. */
static bool churn(uint64_t round)
{
	static const size_t sizes[4] = {24, 200, 1500, 5000};
	void *blocks[4];
	for (int i = 0; i < 4; i++) {
		blocks[i] = kmalloc(sizes[(i + round) % 4]);
		if (!blocks[i])
			return false;
		__atomic_fetch_add(&stress_allocs, 1, __ATOMIC_RELAXED);
	}
	for (int i = 0; i < 4; i++) {
		kfree(blocks[i]);
		__atomic_fetch_add(&stress_frees, 1, __ATOMIC_RELAXED);
	}
	if (round % 8 == 0)
		sched_sleep_ns(NSEC_PER_MSEC);
	if (round % 4 == 0) {
		int status = 0;
		struct thread *child =
		    thread_create(child_exits, (void *)7, "child", SCHED_PRIORITY_NORMAL);
		if (!child || thread_join(child, &status) || status != 7)
			return false;
		__atomic_fetch_add(&stress_children, 1, __ATOMIC_RELAXED);
	}
	return true;
}

static bool pong_answered(void *arg)
{
	struct pair *p = arg;
	return p->served == p->asked;
}

static bool ping_asked(void *arg)
{
	struct pair *p = arg;
	return p->asked != p->served || p->stop;
}

static int ping_side(void *arg)
{
	struct pair *p = arg;
	while (!p->stop) {
		__atomic_fetch_add(&p->asked, 1, __ATOMIC_SEQ_CST);
		waitq_wake_all(&p->to_pong);
		if (waitq_wait_timeout(&p->to_ping, pong_answered, p, LOST_WAKEUP_NS)) {
			p->lost++;
			break;
		}
		p->trips++;
		if (!churn(p->trips)) {
			p->failed++;
			break;
		}
	}
	return 0;
}

static int pong_side(void *arg)
{
	struct pair *p = arg;
	for (;;) {
		if (waitq_wait_timeout(&p->to_pong, ping_asked, p, LOST_WAKEUP_NS)) {
			p->lost++;
			break;
		}
		if (p->asked == p->served) /* stop */
			break;
		__atomic_fetch_add(&p->served, 1, __ATOMIC_SEQ_CST);
		waitq_wake_all(&p->to_ping);
		if (!churn(p->served + 1)) {
			p->failed++;
			break;
		}
	}
	return 0;
}

/* Runs one pair per online CPU (ping pinned there, pong wherever it is
 * placed) for ns.  Returns the pairs' totals in *trips, *served, *lost. */
static void run_pairs(struct ktest *t, uint64_t ns, uint64_t *trips, uint64_t *served, int *lost)
{
	static struct pair pairs[MAX_CPUS];
	struct thread *threads[2 * MAX_CPUS] = {0};
	unsigned n = 0;
	for (uint64_t m = smp_online_mask(); m; m &= m - 1) {
		unsigned cpu = (unsigned)__builtin_ctzll(m);
		struct pair *p = &pairs[cpu];
		*p = (struct pair){.asked = 0};
		waitq_init(&p->to_ping, "ping");
		waitq_init(&p->to_pong, "pong");
		threads[n++] = spawn_on(cpu, ping_side, p, "ping");
		threads[n++] = thread_create(pong_side, p, "pong", SCHED_PRIORITY_NORMAL);
	}
	sched_sleep_ns(ns);
	for (uint64_t m = smp_online_mask(); m; m &= m - 1) {
		struct pair *p = &pairs[__builtin_ctzll(m)];
		p->stop = true;
		waitq_wake_all(&p->to_pong);
		waitq_wake_all(&p->to_ping);
	}
	for (unsigned i = 0; i < n; i++) {
		ASSERT_TRUE(t, threads[i]);
		EXPECT_EQ(t, thread_join(threads[i], NULL), 0);
	}
	*trips = *served = 0;
	*lost = 0;
	for (uint64_t m = smp_online_mask(); m; m &= m - 1) {
		struct pair *p = &pairs[__builtin_ctzll(m)];
		EXPECT_EQ(t, p->failed, 0);
		/* ping counts a trip once pong served it: at most one in flight */
		EXPECT_TRUE(t, p->served == p->trips || p->served == p->trips + 1);
		*trips += p->trips;
		*served += p->served;
		*lost += p->lost;
	}
}

static void stress_on_every_cpu_comes_back_exact(struct ktest *t)
{
	uint64_t trips, served;
	int lost;
	run_pairs(t, 20 * NSEC_PER_MSEC, &trips, &served, &lost); /* warms the caches */
	unsigned threads_before = thread_count();
	uint64_t frames_before = pmm_count_free();
	stress_allocs = stress_frees = stress_children = 0;
	run_pairs(t, STRESS_NS, &trips, &served, &lost);
	EXPECT_EQ(t, lost, 0);
	EXPECT_TRUE(t, trips > 0);
	EXPECT_EQ(t, stress_allocs, stress_frees);
	EXPECT_TRUE(t, stress_children > 0);
	EXPECT_EQ(t, thread_count(), threads_before);
	/* Frames: page tables of the kernel-stack region and slabs needed only
	 * at a new high-water mark of concurrency stay allocated. */
	EXPECT_TRUE(t, pmm_count_free() + STRESS_FRAME_SLACK >= frames_before);
}

/* ---- Join-point attach/detach storm ---------------------------------------- */

struct probe_counts {
	uint64_t calls, before, after;
};

uint64_t smptest_probe(struct probe_counts *counts);
JOINPOINT_DEFINE(smptest, probe, uint64_t, struct probe_counts *, counts)
{
	return ++counts->calls;
}

static void count_before(struct jp_context *context, void *cookie)
{
	((struct probe_counts *)context->args[0])->before++;
}

static void count_after(struct jp_context *context, void *cookie)
{
	((struct probe_counts *)context->args[0])->after++;
}

static const struct jp_advice storm_advice = {
    .name = "smp-storm", .before = count_before, .after = count_after};

struct storm_worker {
	volatile bool *stop;
	uint64_t calls, bad, with_advice;
};

/* Each call must see before and after at most once, after only with before. */
static int call_probe_until_stopped(void *arg)
{
	struct storm_worker *w = arg;
	struct probe_counts counts = {0};
	while (!*w->stop) {
		struct probe_counts was = counts;
		smptest_probe(&counts);
		uint64_t before = counts.before - was.before, after = counts.after - was.after;
		if (counts.calls - was.calls != 1 || before > 1 || after > before)
			w->bad++;
		w->with_advice += before;
		w->calls++;
	}
	return 0;
}

static bool every_prober_called(const struct storm_worker *workers, struct thread *const *threads)
{
	for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
		if (threads[cpu] && !__atomic_load_n(&workers[cpu].calls, __ATOMIC_RELAXED))
			return false;
	return true;
}

static void attach_detach_storm_loses_and_doubles_nothing(struct ktest *t)
{
	volatile bool stop = false;
	struct storm_worker workers[MAX_CPUS];
	struct thread *threads[MAX_CPUS] = {0};
	for (uint64_t m = smp_online_mask(); m; m &= m - 1) {
		unsigned cpu = (unsigned)__builtin_ctzll(m);
		workers[cpu] = (struct storm_worker){&stop, 0, 0, 0};
		threads[cpu] = spawn_on(cpu, call_probe_until_stopped, &workers[cpu], "prober");
	}
	unsigned cycles = 0;
	int errors = 0;
	/* STRESS_NS is the least it runs, not what decides: it goes on until
	 * every prober has made calls through 100 cycles (a busy host may not
	 * run a vCPU at all for a while). */
	for (uint64_t end = clock_ns() + STRESS_NS;
	     clock_ns() < end || cycles < 100 || !every_prober_called(workers, threads); cycles++) {
		int handle = jp_attach("smptest.probe", &storm_advice);
		if (handle < 0 || jp_detach(handle))
			errors++;
	}
	stop = true;
	uint64_t calls = 0, bad = 0;
	for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++) {
		if (!threads[cpu])
			continue;
		EXPECT_EQ(t, thread_join(threads[cpu], NULL), 0);
		calls += workers[cpu].calls;
		bad += workers[cpu].bad;
	}
	EXPECT_EQ(t, errors, 0);
	EXPECT_EQ(t, bad, 0);
	EXPECT_TRUE(t, cycles > 0 && calls > 0);

	/* Attached throughout: every call gets both. */
	int handle = jp_attach("smptest.probe", &storm_advice);
	ASSERT_TRUE(t, handle > 0);
	struct probe_counts counts = {0};
	for (int i = 0; i < 1000; i++)
		smptest_probe(&counts);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_EQ(t, counts.calls, 1000);
	EXPECT_EQ(t, counts.before, 1000);
	EXPECT_EQ(t, counts.after, 1000);
}

KTEST_SUITE(smp, KTEST_CASE(every_online_cpu_runs_a_call_once),
	    KTEST_CASE(lost_call_ipi_is_sent_again), KTEST_CASE(pinned_threads_run_on_their_cpu),
	    KTEST_CASE(set_affinity_moves_the_caller), KTEST_CASE(monitor_cpu_runs_only_monitors),
	    KTEST_CASE(grace_period_waits_for_a_reader_on_another_cpu),
	    KTEST_CASE(grace_period_passes_a_busy_cpu_with_irq_entry_advised),
	    KTEST_CASE(unmapped_page_faults_on_every_other_cpu),
	    KTEST_CASE(stress_on_every_cpu_comes_back_exact),
	    KTEST_CASE(attach_detach_storm_loses_and_doubles_nothing));
