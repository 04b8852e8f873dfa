/*
 * Where threads run: placement on wake-up, pulling work to idle CPUs,
 * affinity, CPUs reserved for monitors, and the per-CPU statistics report.
 *
 * A CPU's load is its ready threads plus one when it runs something other
 * than its idle thread; it is read without locks, as a hint.  A waking
 * thread stays on its last CPU while that is no busier than any other it may
 * use (its cache is warm there), else goes to the least loaded.  An idle CPU
 * pulls the best ready thread it may run from the queue with the most ready
 * threads.  There is no periodic rebalancing of busy CPUs: placement at each
 * wake-up and pulling when idle keep every CPU busy while there is work.
 *
 * The CPUs a thread may use (thread_allowed_cpus, sched.h) are its affinity among the
 * online CPUs, minus the CPUs reserved for monitors unless the thread is a
 * monitor.  A change is acted on at once: a queued thread is moved, a running
 * one is asked to reschedule and moved when it switches out (sched.c).
 */
#include "sched/internal.h"

#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "smp/smp.h"
#include "telemetry/tracepoint.h"
#include "time/time.h"

uint64_t sched_reserved_cpus;       /* reserved for monitors (internal.h) */
static uint64_t monitor_cpus_asked; /* monitor_cpus= on the command line */

struct run_queue *rq_of_cpu(unsigned index)
{
	return cpus[index].sched;
}

void rq_lock_two(struct run_queue *a, struct run_queue *b)
{
	ASSERT(!irq_enabled());
	if (a == b) {
		spin_lock(&a->lock);
	} else if (a->cpu->id < b->cpu->id) {
		spin_lock(&a->lock);
		spin_lock(&b->lock);
	} else {
		spin_lock(&b->lock);
		spin_lock(&a->lock);
	}
}

void rq_unlock_two(struct run_queue *a, struct run_queue *b)
{
	if (a != b)
		spin_unlock(&b->lock);
	spin_unlock(&a->lock);
}

bool sched_cpu_allowed(const struct thread *t, unsigned index)
{
	/* This CPU is online: in t's affinity, it is allowed without the whole
	 * mask (the hand-off's question, at every direct switch) when it is not
	 * reserved for monitors, t is a monitor, or t's affinity names monitor
	 * CPUs only (then those are what it has). */
	if (index == this_cpu_id() && sched_cpu_allowed_quickly(t, index))
		return true;
	return thread_allowed_cpus(t) & SMP_CPU_BIT(index);
}

static unsigned cpu_load(unsigned index)
{
	struct run_queue *rq = rq_of_cpu(index);
	unsigned ready = __atomic_load_n(&rq->ready_count, __ATOMIC_RELAXED);
	return ready + (__atomic_load_n(&rq->cpu->current, __ATOMIC_RELAXED) != rq->idle);
}

unsigned sched_select_cpu(const struct thread *t)
{
	uint64_t allowed = thread_allowed_cpus(t);
	unsigned best = t->cpu, best_load = ~0u;
	if (allowed & SMP_CPU_BIT(best))
		best_load = cpu_load(best);
	for (uint64_t m = allowed; m && best_load; m &= m - 1) {
		unsigned index = (unsigned)__builtin_ctzll(m);
		unsigned load = cpu_load(index);
		if (load < best_load) {
			best = index;
			best_load = load;
		}
	}
	return best;
}

static void trace_migrate(const struct thread *t, unsigned from, unsigned to)
{
	if (from == to || !tracepoint_on())
		return;
	struct trace_sched_migrate event = {
	    .tid = (int32_t)t->id, .from_cpu = (int32_t)from, .to_cpu = (int32_t)to};
	tracepoint_write(TRACE_SCHED_MIGRATE, &event, sizeof event);
}

void sched_push_thread(struct thread *t)
{
	uint64_t flags = irq_save();
	struct run_queue *from, *to;
	for (;;) {
		from = rq_of_cpu(t->cpu);
		unsigned target = sched_select_cpu(t);
		sched_test_push_chosen(t, target);
		to = rq_of_cpu(target);
		rq_lock_two(from, to);
		/* The choice was made unlocked: an affinity change (made under
		 * from's lock) or a reservation since then chooses again. */
		if (from == rq_of_cpu(t->cpu) && sched_cpu_allowed(t, target))
			break;
		rq_unlock_two(from, to);
	}
	ASSERT(t->state == THREAD_READY && link_empty(&t->run_link));
	trace_migrate(t, from->cpu->id, to->cpu->id);
	t->cpu = to->cpu->id;
	rq_enqueue(to, t, clock_ns());
	rq_kick(to, t);
	preempt_disable();
	rq_unlock_two(from, to);
	irq_restore(flags);
	preempt_enable();
}

/* The other CPU with the most ready threads, or NULL when none has any. */
static struct run_queue *busiest_queue(unsigned self)
{
	struct run_queue *busiest = NULL;
	unsigned most = 0;
	uint64_t others = smp_online_mask() & ~SMP_CPU_BIT(self);
	for (; others; others &= others - 1) {
		struct run_queue *rq = rq_of_cpu((unsigned)__builtin_ctzll(others));
		unsigned ready = __atomic_load_n(&rq->ready_count, __ATOMIC_RELAXED);
		if (ready > most) {
			most = ready;
			busiest = rq;
		}
	}
	return busiest;
}

/* The highest-priority ready thread of rq that may run on index, or NULL. */
static struct thread *find_movable(struct run_queue *rq, unsigned index)
{
	for (int level = SCHED_PRIORITY_LEVELS - 1; level >= 0; level--) {
		for (struct sched_link *l = rq->ready[level].next; l != &rq->ready[level];
		     l = l->next) {
			struct thread *t = container_of(l, struct thread, run_link);
			if (sched_cpu_allowed(t, index))
				return t;
		}
	}
	return NULL;
}

/* The other queue is only tried (spin_trylock): idle CPUs poll at every
 * tick, and queueing on a busy CPU's lock would slow that CPU down most when
 * it has the most work (worst under emulation, where a waiting vCPU may not
 * be running when its ticket comes up). */
bool sched_pull_thread(void)
{
	ASSERT(!irq_enabled());
	unsigned self = this_cpu_id();
	struct run_queue *here = rq_of_cpu(self);
	struct run_queue *busiest = busiest_queue(self);
	if (!busiest)
		return false;
	spin_lock(&here->lock);
	if (!spin_trylock(&busiest->lock)) {
		spin_unlock(&here->lock);
		return false;
	}
	struct thread *t = find_movable(busiest, self);
	if (t) {
		rq_dequeue(busiest, t);
		trace_migrate(t, t->cpu, self);
		t->cpu = self;
		rq_enqueue(here, t, clock_ns());
		here->cpu->need_resched = 1;
	}
	spin_unlock(&busiest->lock);
	spin_unlock(&here->lock);
	return t != NULL;
}

/* Moves t off a CPU it may no longer use: a queued thread now, a running
 * one when it next switches out.  Takes and drops t's queue lock. */
static void move_if_disallowed(struct thread *t)
{
	uint64_t flags;
	struct run_queue *rq = rq_lock_thread(t, &flags);
	bool push = false;
	if (!sched_cpu_allowed(t, rq->cpu->id)) {
		if (t->state == THREAD_READY && !link_empty(&t->run_link)) {
			rq_dequeue(rq, t);
			push = true;
		} else if (rq->cpu->current == t) {
			rq->cpu->need_resched = 1;
			smp_send_reschedule(rq->cpu->id);
		}
	}
	spin_unlock_irqrestore(&rq->lock, flags);
	if (push)
		sched_push_thread(t);
}

/* ---- Affinity and monitors ------------------------------------------------ */

JOINPOINT_DEFINE_AS(sched, set_affinity, thread_set_affinity, int, struct thread *, t, uint64_t,
		    mask)
{
	if (!t || (t->flags & THREAD_IDLE) || !(mask & smp_online_mask()))
		return -EINVAL;
	uint64_t flags;
	struct run_queue *rq = rq_lock_thread(t, &flags);
	__atomic_store_n(&t->affinity, mask, __ATOMIC_RELAXED);
	spin_unlock_irqrestore(&rq->lock, flags);
	move_if_disallowed(t);
	if (t == thread_current()) {
		while (!sched_cpu_allowed(t, thread_cpu(t)))
			sched_yield();
	}
	return 0;
}

uint64_t thread_affinity(const struct thread *t)
{
	return __atomic_load_n(&t->affinity, __ATOMIC_RELAXED);
}

unsigned thread_cpu(const struct thread *t)
{
	return __atomic_load_n(&t->cpu, __ATOMIC_RELAXED);
}

uint64_t thread_pin_here(void)
{
	struct thread *self = thread_current();
	uint64_t affinity = thread_affinity(self);
	thread_set_affinity(self, SMP_CPU_BIT(thread_cpu(self)));
	return affinity;
}

void thread_set_kind(struct thread *t, enum thread_kind kind)
{
	thread_mark_monitor(t, kind == THREAD_KIND_MONITOR);
	move_if_disallowed(t);
	if (t == thread_current()) {
		while (!sched_cpu_allowed(t, thread_cpu(t)))
			sched_yield();
	}
}

enum thread_kind thread_get_kind(const struct thread *t)
{
	return (t->flags & THREAD_MONITOR) ? THREAD_KIND_MONITOR : THREAD_KIND_ORDINARY;
}

/* Moves every thread that may no longer use CPU index off it. */
static void evict_cpu(unsigned index)
{
	struct run_queue *rq = rq_of_cpu(index);
	for (;;) {
		struct thread *victim = NULL;
		uint64_t flags = spin_lock_irqsave(&rq->lock);
		for (int level = 0; level < SCHED_PRIORITY_LEVELS && !victim; level++) {
			for (struct sched_link *l = rq->ready[level].next; l != &rq->ready[level];
			     l = l->next) {
				struct thread *t = container_of(l, struct thread, run_link);
				if (!sched_cpu_allowed(t, index)) {
					victim = t;
					break;
				}
			}
		}
		if (victim)
			rq_dequeue(rq, victim);
		else if (rq->cpu->current != rq->idle &&
			 !sched_cpu_allowed(rq->cpu->current, index)) {
			rq->cpu->need_resched = 1;
			smp_send_reschedule(index);
		}
		spin_unlock_irqrestore(&rq->lock, flags);
		if (!victim)
			return;
		sched_push_thread(victim);
	}
}

int cpu_reserve_for_monitors(unsigned index)
{
	if (!smp_cpu_online(index))
		return -EINVAL;
	uint64_t reserved =
	    __atomic_load_n(&sched_reserved_cpus, __ATOMIC_RELAXED) | SMP_CPU_BIT(index);
	if (!(smp_online_mask() & ~reserved))
		return -EBUSY;
	__atomic_or_fetch(&sched_reserved_cpus, SMP_CPU_BIT(index), __ATOMIC_SEQ_CST);
	evict_cpu(index);
	pr_info("sched: cpu %u runs monitors only\n", index);
	return 0;
}

int cpu_release_from_monitors(unsigned index)
{
	if (index >= MAX_CPUS || !(sched_monitor_cpus() & SMP_CPU_BIT(index)))
		return -EINVAL;
	__atomic_and_fetch(&sched_reserved_cpus, ~SMP_CPU_BIT(index), __ATOMIC_SEQ_CST);
	return 0;
}

uint64_t sched_monitor_cpus(void)
{
	return __atomic_load_n(&sched_reserved_cpus, __ATOMIC_RELAXED);
}

/* monitor_cpus=1,3: kept until the CPUs are online (sched_apply_monitor_cpus). */
static int set_monitor_cpus(const char *value)
{
	uint64_t mask = 0;
	unsigned n = 0;
	bool digits = false;
	for (const char *p = value; p; p++) {
		if (*p >= '0' && *p <= '9') {
			n = n * 10 + (unsigned)(*p - '0');
			digits = true;
			if (n >= MAX_CPUS)
				return -1;
		} else if ((*p == ',' || *p == '\0') && digits) {
			mask |= SMP_CPU_BIT(n);
			n = 0;
			digits = false;
			if (*p == '\0')
				break;
		} else {
			return -1;
		}
	}
	if (!mask)
		return -1;
	monitor_cpus_asked = mask;
	return 0;
}
KERNEL_PARAM(monitor_cpus, set_monitor_cpus, "CPU list (1,3): CPUs that run monitor threads only");

void sched_apply_monitor_cpus(void)
{
	for (uint64_t m = monitor_cpus_asked; m; m &= m - 1) {
		unsigned index = (unsigned)__builtin_ctzll(m);
		int error = cpu_reserve_for_monitors(index);
		if (error)
			pr_warn("sched: monitor_cpus: cannot reserve cpu %u (%d)\n", index, error);
	}
}

/* ---- Statistics ------------------------------------------------------------ */

int sched_get_cpu_stats(unsigned index, struct cpu_stats *stats)
{
	if (!smp_cpu_online(index))
		return -EINVAL;
	const struct cpu_stats *live = &cpus[index].stats;
	stats->busy_ns = __atomic_load_n(&live->busy_ns, __ATOMIC_RELAXED);
	stats->idle_ns = __atomic_load_n(&live->idle_ns, __ATOMIC_RELAXED);
	stats->irq_ns = __atomic_load_n(&live->irq_ns, __ATOMIC_RELAXED);
	stats->context_switches = __atomic_load_n(&live->context_switches, __ATOMIC_RELAXED);
	stats->interrupts = __atomic_load_n(&live->interrupts, __ATOMIC_RELAXED);
	stats->direct_switches = __atomic_load_n(&live->direct_switches, __ATOMIC_RELAXED);
	stats->sleeps_ended_between_ticks =
	    __atomic_load_n(&live->sleeps_ended_between_ticks, __ATOMIC_RELAXED);
	return 0;
}

void sched_print_cpu_stats(void)
{
	uint64_t monitors = sched_monitor_cpus();
	for (uint64_t m = smp_online_mask(); m; m &= m - 1) {
		unsigned index = (unsigned)__builtin_ctzll(m);
		struct cpu_stats stats;
		if (sched_get_cpu_stats(index, &stats))
			continue;
		uint64_t total = stats.busy_ns + stats.idle_ns;
		uint64_t busy_permille = total ? stats.busy_ns * 1000 / total : 0;
		/* The microseconds last: a quiet stretch under -icount is a few
		 * hundred of them, below the milliseconds' resolution. */
		pr_info("cpu %u%s: busy %lu ms (%lu.%lu%%) idle %lu ms irq %lu ms, %lu switches, "
			"%lu interrupts, %lu calls, %u ready, %lu sleeps ended between ticks; busy "
			"%lu us "
			"idle %lu us\n",
			index, (monitors & SMP_CPU_BIT(index)) ? " [monitors]" : "",
			(uint64_t)(stats.busy_ns / NSEC_PER_MSEC), busy_permille / 10,
			busy_permille % 10, (uint64_t)(stats.idle_ns / NSEC_PER_MSEC),
			(uint64_t)(stats.irq_ns / NSEC_PER_MSEC), stats.context_switches,
			stats.interrupts, smp_calls_received(index),
			__atomic_load_n(&rq_of_cpu(index)->ready_count, __ATOMIC_RELAXED),
			stats.sleeps_ended_between_ticks, (uint64_t)(stats.busy_ns / NSEC_PER_USEC),
			(uint64_t)(stats.idle_ns / NSEC_PER_USEC));
	}
}
