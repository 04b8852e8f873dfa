/*
 * The scheduler: per-CPU run queues, fixed priorities, round-robin within a
 * priority, preemption by the tick and by wake-ups.
 *
 * Each CPU's run queue holds one FIFO list per priority and a bit mask of the
 * non-empty ones, so picking the next thread is one bit scan.  The running
 * thread is on no list; the idle thread never is.  Threads move between CPUs
 * in three places (balance.c chooses where): a wake-up places the thread on
 * the least loaded CPU it may use, an idle CPU pulls a ready thread from the
 * busiest queue, and a thread switched out on a CPU it may no longer use
 * (affinity, monitor reservation) is pushed to another once off its stack.
 *
 * Invariants:
 *  - All run-queue state, and the state of every thread on that CPU, changes
 *    only under the run queue's lock, with interrupts off; thread->cpu
 *    changes only with both the old and the new queue's locks held, so
 *    rq_lock_thread (lock thread->cpu's queue, re-check) pins a thread.
 *  - A thread on a ready list is off its stack: a switched-out thread's
 *    queue lock is held until the next thread runs (finish_switch), so no
 *    other CPU can take it from the list before the switch is complete.
 *  - Every switch goes through sched_switch_to with exactly that lock held
 *    (so preempt_count is 1), and the lock is released by the thread that
 *    runs next, in finish_switch (or its first run, thread_start).
 *  - A thread blocks in two steps: it sets THREAD_BLOCKED while still holding
 *    the lock that guards its condition (sched_prepare_block), then, after
 *    dropping it, switches away in sched_block if the state is still
 *    THREAD_BLOCKED.  A wake-up in between finds the thread on its CPU and
 *    just sets it back to THREAD_RUNNING: no wake-up is lost.  Preemption in
 *    between puts it back on the run queue; its sched_block then returns at
 *    once, a spurious wake-up that callers' condition loops absorb.
 *  - Every wake-up goes through sched_wakeup, or sched_wakeup_next: the direct
 *    switch of message passing, which queues the woken thread on the waker's
 *    CPU and names it in rq->next, so that the waker's next switch (it is
 *    about to block) picks it without a search.  rq->next always names a
 *    thread on that queue's ready lists: rq_pick consumes it, rq_dequeue
 *    forgets it.  sched_handoff does the same in one step: it claims the
 *    blocked thread under both queues' locks while the caller's own lock
 *    still pins it, and switches to it without queueing it at all.
 *  - Every switch, the hand-off's included, goes through switch_at: the
 *    sched.switch join point (per-activity accounting's acct_note_switch
 *    is advice on it), run-time statistics, the grace period's quiescent
 *    state, irq_depth, TSS rsp0 and the SYSCALL stack, FPU state and the
 *    address space all change there and nowhere else.  A thread switched
 *    to from a ready list is charged its wait first (sched_switch_to); a
 *    hand-off's was never ready.  A kernel thread keeps the address space
 *    it finds loaded (mm's invariants).
 *  - A hand-off marks the thread it switches to (handed_off) after claiming
 *    it and before the switch, when the handing thread is done with it and
 *    with whatever it changed under its lock; sched_prepare_block clears the
 *    mark and sched_resumed_by_handoff reads it once.  No other wake-up sets
 *    it, so a thread that finds it set may read its condition without taking
 *    that lock again (the IPC fast path), while one woken any other way
 *    (its deadline, a wake-up from another CPU still in progress) may not.
 *
 * Preemption: the tick ends the current slice (need_resched when a thread of
 * the same or higher priority is ready); a wake-up of a thread that outranks
 * the current one sets need_resched at once.  need_resched is acted on at
 * interrupt exit and when preempt_enable brings the count to 0.
 *
 * Time accounting: at every switch and tick, the time since the last one is
 * charged to the running thread and to the CPU's busy or idle time; a thread
 * also collects the time it spent ready (wait_ns).  Sleepers: each run queue
 * keeps them sorted by deadline; the tick wakes those due, and when a sleep
 * or a timed wait (sched_block) comes due before the CPU's next tick, a
 * one-shot of the queue's own (sleeper_timer) wakes it then, so a sleep of
 * less than a tick lasts what it asked for.  An IPC hand-off's deadline
 * keeps the tick's resolution: it guards against a partner that never
 * answers, and the one-shot's check in line would cost the hand-off's fast
 * path about 30 instructions a round trip (in spilled registers).  It waits
 * in the queue's one parking place (rq->parked) instead of the sorted list:
 * the two sides of a round trip take turns there, a store each, and a thread
 * parked earlier moves to the list.  Every wake-up takes its thread off the
 * sleepers (rq_remove_sleeper, under the lock of the queue it slept on).
 */
#include "sched/internal.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/gdt.h"
#include "console/console.h"
#include "irq/irq.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "proc/proc.h"
#include "smp/smp.h"
#include "telemetry/tracepoint.h"
#include "time/time.h"

#define WAKEUPS_PER_TICK 16

enum switch_reason { SWITCH_BLOCK, SWITCH_YIELD, SWITCH_PREEMPT, SWITCH_EXIT };

static struct run_queue run_queues[MAX_CPUS];
static struct thread boot_thread;

extern char boot_stack_bottom[], boot_stack_top[];

static struct run_queue *this_rq(void)
{
	return this_cpu()->sched;
}

static struct run_queue *rq_of(const struct thread *t)
{
	return cpus[__atomic_load_n(&t->cpu, __ATOMIC_RELAXED)].sched;
}

bool sched_may_wake_here(void)
{
	struct cpu *cpu = this_cpu(); /* preemption is off: it stays this CPU */
	const struct run_queue *rq = cpu->sched;
	return rq->lock.owner_cpu != (int)cpu->id;
}

/* Locks this CPU's run queue.  Interrupts go off first: until then the
 * caller may be moved to another CPU. */
static struct run_queue *lock_this_rq(uint64_t *flags)
{
	*flags = irq_save();
	struct run_queue *rq = this_rq();
	spin_lock(&rq->lock);
	return rq;
}

struct run_queue *rq_lock_thread(struct thread *t, uint64_t *flags)
{
	for (;;) {
		struct run_queue *rq = rq_of(t);
		*flags = spin_lock_irqsave(&rq->lock);
		if (rq == rq_of(t))
			return rq;
		spin_unlock_irqrestore(&rq->lock, *flags);
	}
}

/* ---- Run queue ----------------------------------------------------------- */

void rq_enqueue(struct run_queue *rq, struct thread *t, uint64_t now)
{
	t->state = THREAD_READY;
	t->ready_since_ns = now;
	link_insert_before(&rq->ready[t->priority], &t->run_link);
	rq->ready_mask |= 1u << t->priority;
	rq->ready_count++;
}

/* Is a thread of a priority above t's ready on rq?  (rq_best_priority >
 * t->priority, without the bit scan or a shift: the mask's bits above t's
 * priority, which t keeps.) */
static inline __attribute__((always_inline)) bool outranked_here(const struct run_queue *rq,
								 const struct thread *t)
{
	return rq->ready_mask & t->higher_priorities;
}

/* Highest ready priority, or -1 when nothing is ready. */
static int rq_best_priority(const struct run_queue *rq)
{
	return rq->ready_mask ? 31 - __builtin_clz(rq->ready_mask) : -1;
}

void rq_dequeue(struct run_queue *rq, struct thread *t)
{
	if (rq->next == t)
		rq->next = NULL;
	link_remove(&t->run_link);
	if (link_empty(&rq->ready[t->priority]))
		rq->ready_mask &= ~(1u << t->priority);
	rq->ready_count--;
}

/* Removes and returns the next thread to run: the thread handed this CPU by
 * sched_wakeup_next unless something of higher priority is ready, else the
 * head of the best level, or the idle thread.  The hand-off is consumed
 * either way; it always names a thread on this queue's ready lists
 * (rq_dequeue forgets it when that thread leaves them otherwise). */
static struct thread *rq_pick(struct run_queue *rq)
{
	int level = rq_best_priority(rq);
	struct thread *next = rq->next;
	rq->next = NULL;
	if (next && next->priority >= level) {
		rq_dequeue(rq, next);
		return next;
	}
	if (level < 0)
		return rq->idle;
	struct sched_link *link = rq->ready[level].next;
	link_remove(link);
	if (link_empty(&rq->ready[level]))
		rq->ready_mask &= ~(1u << level);
	rq->ready_count--;
	return container_of(link, struct thread, run_link);
}

static inline void arm_sleeper_timer(struct run_queue *rq, uint64_t deadline);

/* Woken by the tick at or after its deadline (the IPC hand-off's callers:
 * a deadline that guards against a partner that never answers needs no
 * better, and the hand-off's fast path stays as it was). */
static void rq_add_sleeper(struct run_queue *rq, struct thread *t)
{
	struct sched_link *position = rq->sleepers.next;
	while (position != &rq->sleepers &&
	       container_of(position, struct thread, sleep_link)->wake_deadline_ns <=
		   t->wake_deadline_ns)
		position = position->next;
	link_insert_before(position, &t->sleep_link);
	t->sleeping = true;
}

/* rq_add_sleeper, woken at its deadline even before the next tick (a
 * sleep, a timed wait): the queue's one-shot is armed for it then. */
static void rq_add_sleeper_on_time(struct run_queue *rq, struct thread *t)
{
	rq_add_sleeper(rq, t);
	arm_sleeper_timer(rq, t->wake_deadline_ns);
}

/* A hand-off's deadline (tick's resolution): t waits in the queue's one
 * parking place rather than on the list, so that the round trip's two
 * threads, each parked while the other runs, cost a store each instead of a
 * sorted insert and a removal.  A thread parked before (a chain of
 * hand-offs) moves to the list; the tick looks at both. */
static inline __attribute__((always_inline)) void rq_park_sleeper(struct run_queue *rq,
								  struct thread *t)
{
	struct thread *earlier = rq->parked;
	if (earlier)
		rq_add_sleeper(rq, earlier);
	rq->parked = t;
}

/* Takes t off rq's sleepers (the parking place or the list), if it is
 * there; rq is t's queue, locked. */
static inline __attribute__((always_inline)) void rq_remove_sleeper(struct run_queue *rq,
								    struct thread *t)
{
	if (rq->parked == t) {
		rq->parked = NULL;
		return;
	}
	if (t->sleeping) {
		link_remove(&t->sleep_link);
		t->sleeping = false;
	}
}

/* Does t outrank what runs on its CPU now? */
static bool outranks_current(struct run_queue *rq, const struct thread *t)
{
	struct thread *current = rq->cpu->current;
	return current == rq->idle || t->priority > current->priority;
}

void rq_kick(struct run_queue *rq, const struct thread *t)
{
	if (!outranks_current(rq, t))
		return;
	rq->cpu->need_resched = 1;
	smp_send_reschedule(rq->cpu->id);
}

/* Charges the time since the last charge to prev, the thread running on
 * cpu (rq's), and to the CPU's busy or idle time.  A caller that knows prev
 * is not the idle thread (one that blocked: idle never does) says so with
 * may_be_idle false, and the test is left out. */
static inline __attribute__((always_inline)) void
account_switch_from(struct cpu *cpu, struct run_queue *rq, struct thread *prev, uint64_t now,
		    bool may_be_idle)
{
	uint64_t delta = now - rq->last_account_ns;

	rq->last_account_ns = now;
	prev->stats.run_ns += delta;
	if (may_be_idle && prev == rq->idle)
		cpu->stats.idle_ns += delta;
	else
		cpu->stats.busy_ns += delta;
}

/* Charges the time since the last charge to the running thread and CPU. */
static void account_current(struct run_queue *rq, uint64_t now)
{
	account_switch_from(rq->cpu, rq, rq->cpu->current, now, true);
}

uint64_t thread_cpu_time_ns(const struct thread *t)
{
	uint64_t flags = irq_save();
	struct run_queue *rq = this_rq();
	uint64_t ns = __atomic_load_n(&t->stats.run_ns, __ATOMIC_RELAXED);
	if (t == rq->cpu->current)
		ns += clock_ns() - rq->last_account_ns; /* the stretch running now */
	irq_restore(flags);
	return ns;
}

/* ---- Switching ----------------------------------------------------------- */

/* The sched.switch join point: a notification just before every switch from
 * prev to next (run queue lock held, interrupts off), since the switch itself
 * does not return to its caller as a join point must. */
JOINPOINT_DEFINE_VOID_NOSLEEP_AS(sched, switch, sched_note_switch, struct thread *, prev,
				 struct thread *, next)
{
}

static int32_t trace_state(const struct thread *t)
{
	enum thread_state state = t->state; /* read once */
	if (state == THREAD_EXITING || state == THREAD_DEAD)
		return TRACE_EXITED;
	return state == THREAD_BLOCKED ? TRACE_BLOCKED : TRACE_RUNNABLE;
}

/* In line in the switch, interrupts already off: it runs at every switch. */
static inline __attribute__((always_inline)) void trace_switch(const struct thread *prev,
							       const struct thread *next)
{
	struct trace_sched_switch event = {.prev_tid = (int32_t)prev->id,
					   .next_tid = (int32_t)next->id,
					   .prev_state = trace_state(prev),
					   .next_pid = next->pid};
	tracepoint_record_irqs_off(TRACE_SCHED_SWITCH, rdtsc(), &event, sizeof event);
}

/* The sched suite's window after a switch (sched_test_switch_finished):
 * the test kernel notes the thread switched away from when it is the one the
 * suite watches (a compare and a branch a switch); nothing otherwise. */
#ifdef KERNEL_TESTS
static __attribute__((noinline, cold)) void switch_finished_watched(struct run_queue *rq)
{
	struct thread *prev = rq->test_switched_from;
	rq->test_switched_from = NULL;
	sched_test_switch_finished(prev);
}
#endif

static inline __attribute__((always_inline)) void note_switched_from(struct run_queue *rq,
								     struct thread *prev)
{
#ifdef KERNEL_TESTS
	if (__builtin_expect(mem_eq(&sched_test_watched, prev), 0))
		rq->test_switched_from = prev;
#else
	(void)rq;
	(void)prev;
#endif
}

static inline __attribute__((always_inline)) void switch_finished(struct run_queue *rq)
{
#ifdef KERNEL_TESTS
	if (__builtin_expect(!mem_eq(&rq->test_switched_from, NULL), 0))
		switch_finished_watched(rq);
#else
	(void)rq;
#endif
}

/* The switch from prev, the running thread, to next, with the clock already
 * read (now); cpu is this CPU and rq its queue, locked, interrupts off.  In
 * line in the hand-off, the path of every IPC round trip, where the lock
 * was taken and prev read from cpu->current a few lines before: the checks
 * that only repeat that are the general path's (sched_switch_to).  next is
 * on this CPU already (next->cpu: every queue's threads are its own, and
 * the hand-off claims its thread here).  prev_may_be_idle: false from a
 * hand-off, whose caller blocked (account_switch_from). */
static inline __attribute__((always_inline)) void switch_at(struct cpu *cpu, struct run_queue *rq,
							    struct thread *prev,
							    struct thread *next, uint64_t now,
							    bool prev_may_be_idle)
{
	if (!this_cpu_eq(preempt_count, 1)) /* cpu's: one compare in place */
		panic("sched: switch from '%s' with preempt_count %d (sleeping with a lock held?)",
		      prev->name, cpu->preempt_count);

	account_switch_from(cpu, rq, prev, now, prev_may_be_idle);
	next->state = THREAD_RUNNING;
	cpu_set_untraced(cpu, next->untraced);
	next->slice_left = SCHED_SLICE_TICKS;
	next->stats.switches++;
	cpu->stats.context_switches++;
	grace_note_quiescent();
	sched_note_switch(prev, next); /* prev's stack, if traced: the flag is still prev's */
	/* prev is cpu->current until just below: read again, the compiler
	 * keeps no register for it across the join point's call; next's
	 * process is read after it, where a register is free (read before,
	 * it would wait on the stack across the call) */
	prev = cpu->current;
	struct process *process = next->process;
	cpu_set_user_stacks(cpu, (unsigned)proc_trace_slot(process));
	if (tracepoint_on())
		trace_switch(prev, next);

	/* irq_depth belongs to the thread: one preempted at interrupt exit
	 * resumes inside its handler. */
	prev->saved_irq_depth = cpu->irq_depth;
	cpu->irq_depth = next->saved_irq_depth;
	cpu->current = next;
	cpu->acct = next->acct;
	cpu->process = process;
	/* Traps and SYSCALL from user mode land on the thread's own stack. */
	uint64_t stack_top = next->stack.top;
	tss_set_kernel_stack_of(cpu->arch, stack_top);
	cpu->syscall_stack = stack_top;
	fpu_save(&prev->fpu);
	fpu_restore(&next->fpu);
	/* A kernel thread runs on whatever tables are loaded (the kernel half is
	 * the same in all): a round trip between a process and a kernel thread
	 * reloads nothing (mm's vm_space_destroy takes a dying space back). */
	struct address_space *space = next->space;
	if (space && space != cpu->loaded_space)
		vm_space_switch_on(cpu, space);
	note_switched_from(rq, prev);
	arch_switch_stacks(&prev->saved_rsp, next->saved_rsp);
}

/* A switch to a thread that was ready charges it the time it waited; a
 * hand-off's thread was never ready (its wait is nil). */
void sched_switch_to(struct thread *prev, struct thread *next)
{
	struct cpu *cpu = this_cpu();
	struct run_queue *rq = cpu->sched;
	uint64_t now = clock_ns();

	spin_assert_held(&rq->lock);
	ASSERT(!irq_enabled() && prev == cpu->current && next->cpu == cpu->id);
	if (next != rq->idle)
		next->stats.wait_ns += now - next->ready_since_ns;
	switch_at(cpu, rq, prev, next, now, true);
}

/* Picks the next thread and switches to it, run queue lock held.  Returns
 * when the caller runs again, with the lock of the run queue of the CPU it
 * runs on then held (maybe another CPU's than rq). */
static void schedule_locked(struct run_queue *rq, enum switch_reason reason)
{
	struct thread *prev = rq->cpu->current;
	bool stays_runnable = prev->state == THREAD_RUNNING ||
			      (reason == SWITCH_PREEMPT && prev->state == THREAD_BLOCKED);

	rq->cpu->need_resched = 0;
	if (stays_runnable && prev != rq->idle) {
		if (sched_cpu_allowed(prev, rq->cpu->id)) {
			rq_enqueue(rq, prev, clock_ns());
		} else {
			prev->state = THREAD_READY; /* pushed once off its stack */
			rq->left_behind = prev;
		}
	}
	if (reason == SWITCH_EXIT)
		rq->left_behind = prev; /* reaped once off its stack */
	struct thread *next = rq_pick(rq);
	if (next == prev) {
		prev->state = THREAD_RUNNING;
		return;
	}
	sched_switch_to(prev, next);
}

/* finish_switch's unlock when the switch left a thread behind: moves it if
 * it may not run here or reaps it if it was exiting, once the lock is
 * released and before this thread may be preempted (a thread to move is on
 * no queue until pushed, so no other CPU can find it, and one exiting keeps
 * its joiner waiting until reaped). */
static __attribute__((noinline)) void unlock_and_see_to(struct run_queue *rq, struct thread *left,
							uint64_t irq_flags)
{
	rq->left_behind = NULL;
	bool exiting = left->state == THREAD_EXITING; /* else THREAD_READY, to move */
	spin_unlock_handed(&rq->lock);
	irq_restore(irq_flags);
	switch_finished(rq);
	if (exiting)
		thread_reap(left);
	else
		sched_push_thread(left);
}

/* The second half of every switch, in the thread that now runs: releases the
 * run queue lock taken by the thread before it, and sees to that thread if
 * it left it behind (rq->left_behind: most switches leave nothing, and cost
 * one compare with memory and a branch here). */
static inline __attribute__((always_inline)) void finish_switch(uint64_t irq_flags)
{
	/* every field %gs-relative: no load of this CPU's address */
	struct run_queue *rq = this_cpu_read(sched);

	if (__builtin_expect(!mem_eq(&rq->left_behind, NULL), 0)) {
		unlock_and_see_to(rq, rq->left_behind, irq_flags);
	} else {
		spin_unlock_handed(&rq->lock); /* spin_unlock_irqrestore, in line */
		irq_restore(irq_flags);
		switch_finished(rq);
	}
	/* preempt_enable, in line */
	if (preempt_count_drop_leaves_resched() && irq_enabled())
		sched_preempt();
}

/* A new thread's first code, called by arch_thread_trampoline. */
__attribute__((noreturn)) static void thread_start(void *arg)
{
	struct thread *self = arg;

	finish_switch(RFLAGS_IF);
	thread_exit(self->entry(self->arg));
}

/* ---- Blocking and waking ------------------------------------------------- */

/* self is about to block: a hand-off sets handed_off only once it has
 * switched out. */
static inline __attribute__((always_inline)) void mark_blocked(struct thread *self)
{
	self->handed_off = false;
	self->state = THREAD_BLOCKED;
	__asm__ volatile("" : : : "memory");
}

void sched_prepare_block(void)
{
	mark_blocked(thread_current());
}

int sched_block(uint64_t deadline_ns)
{
	uint64_t flags;
	struct run_queue *rq = lock_this_rq(&flags);
	struct thread *self = rq->cpu->current;

	if (self->state != THREAD_BLOCKED) {
		spin_unlock_irqrestore(&rq->lock, flags);
		return 0;
	}
	if (deadline_ns && clock_ns() >= deadline_ns) {
		self->state = THREAD_RUNNING;
		spin_unlock_irqrestore(&rq->lock, flags);
		return -ETIMEDOUT;
	}
	if (deadline_ns) {
		self->wake_deadline_ns = deadline_ns;
		rq_add_sleeper_on_time(rq, self);
	}
	schedule_locked(rq, SWITCH_BLOCK);
	rq_remove_sleeper(this_rq(), self); /* (every wake-up took it off already) */
	finish_switch(flags);
	return deadline_ns && clock_ns() >= deadline_ns ? -ETIMEDOUT : 0;
}

/* Wakes t from its queue from onto the queue to; both locks held. */
static bool wakeup_locked(struct run_queue *from, struct run_queue *to, struct thread *t)
{
	if (t->state != THREAD_BLOCKED)
		return false;
	if (from->cpu->current == t) {
		t->state = THREAD_RUNNING; /* it has not switched away yet */
		return true;
	}
	rq_remove_sleeper(from, t);
	if (!sched_cpu_allowed(t, to->cpu->id))
		to = from; /* the affinity changed meanwhile: the switch-out path moves it */
	t->cpu = to->cpu->id;
	if (tracepoint_on()) {
		struct trace_sched_wakeup event = {.tid = (int32_t)t->id,
						   .target_cpu = (int32_t)t->cpu};
		tracepoint_record_irqs_off(TRACE_SCHED_WAKEUP, rdtsc(), &event, sizeof event);
	}
	rq_enqueue(to, t, clock_ns());
	rq_kick(to, t);
	return true;
}

/* The wake-up places t (balance.c) and moves it there under both queues'
 * locks; the choice is re-checked only for t->cpu, the rest is a hint. */
JOINPOINT_DEFINE_NOSLEEP_AS(sched, wakeup, sched_wakeup, bool, struct thread *, t)
{
	uint64_t flags = irq_save();
	struct run_queue *from, *to;
	for (;;) {
		from = rq_of(t);
		to = rq_of_cpu(sched_select_cpu(t));
		rq_lock_two(from, to);
		if (from == rq_of(t))
			break;
		rq_unlock_two(from, to);
	}
	bool woken = wakeup_locked(from, to, t);
	preempt_disable(); /* a reschedule due here happens once interrupts are back */
	rq_unlock_two(from, to);
	irq_restore(flags);
	preempt_enable();
	return woken;
}

/* The direct switch: t goes on this CPU's queue, marked to run next.  Both
 * queues' locks are held from the check to the enqueue, as in a wake-up. */
JOINPOINT_DEFINE_NOSLEEP_AS(sched, wakeup_next, sched_wakeup_next, bool, struct thread *, t)
{
	uint64_t flags = irq_save();
	struct run_queue *here = this_rq(), *from;
	if (!sched_cpu_allowed(t, here->cpu->id)) {
		irq_restore(flags);
		return sched_wakeup(t);
	}
	for (;;) {
		from = rq_of(t);
		rq_lock_two(from, here);
		if (from == rq_of(t))
			break;
		rq_unlock_two(from, here);
	}
	bool woken = t->state == THREAD_BLOCKED;
	if (woken && from->cpu->current == t) {
		t->state = THREAD_RUNNING; /* it has not switched away yet */
	} else if (woken) {
		rq_remove_sleeper(from, t);
		t->cpu = here->cpu->id;
		rq_enqueue(here, t, clock_ns());
		here->next = t;
	}
	rq_unlock_two(from, here);
	irq_restore(flags);
	return woken;
}

/* Can the caller switch straight to next?  Both queues locked. */
static bool can_hand_off(struct run_queue *here, struct run_queue *from, struct thread *self,
			 struct thread *next)
{
	return self->state == THREAD_BLOCKED && next->state == THREAD_BLOCKED &&
	       from->cpu->current != next && sched_cpu_allowed(next, here->cpu->id) &&
	       rq_best_priority(here) <= next->priority;
}

static bool handoff_general(struct thread *next, struct spinlock *held, uint64_t irq_flags,
			    uint64_t deadline_ns);

/* Reads and clears self's hand-off mark. */
static bool take_handed_off(struct thread *self)
{
	bool handed = self->handed_off;
	self->handed_off = false;
	return handed;
}

/* next leaves rq's sleepers and self, with a deadline, joins them; rq
 * locked.  In a round trip next waits in the parking place (it parked itself
 * there handing off to self) and self has a deadline too: self takes the
 * place in one store, where emptying it and parking again tested it twice. */
static inline __attribute__((always_inline)) void
swap_sleepers(struct run_queue *rq, struct thread *next, struct thread *self, uint64_t deadline_ns)
{
	if (!deadline_ns) {
		rq_remove_sleeper(rq, next);
		return;
	}
	self->wake_deadline_ns = deadline_ns;
	if (__builtin_expect(rq->parked == next, 1)) {
		rq->parked = self;
		return;
	}
	rq_remove_sleeper(rq, next);
	rq_park_sleeper(rq, self);
}

/* The hand-off's fast path, the IPC round trip's on one CPU (seL4's
 * fastpath): next is blocked on this very CPU, may run here, and nothing
 * ready here outranks it.  Then one run-queue lock is taken, which inherits
 * held's hold on preemption (spin_lock_handed: no preempt_enable between
 * the two), next is claimed under both, held is released and the switch
 * uses the clock the caller read (now, or the CPU's last charge if that is
 * later: time is never charged backwards).  Nothing a switch does is left out
 * (switch_at); next's wait is nil (it was never ready).  Returns false with
 * nothing changed when next is elsewhere or the check fails: the general
 * hand-off then decides. */
static inline __attribute__((always_inline)) bool
handoff_here(struct cpu *cpu, struct thread *self, struct thread *next, struct spinlock *held,
	     uint64_t irq_flags, uint64_t deadline_ns, uint64_t now, bool *handed)
{
	struct run_queue *here = cpu->sched;
	unsigned index = cpu->id;
	if (!mem_eq(&next->cpu, index)) /* a hint, checked again under the lock */
		return false;
	spin_lock_handed_on(&here->lock, index);
	if (next->cpu != index || !mem_eq(&self->state, THREAD_BLOCKED) ||
	    !mem_eq(&next->state, THREAD_BLOCKED) || !sched_cpu_allowed_quickly(next, index) ||
	    outranked_here(here, next)) {
		spin_unlock_handed_on(&here->lock, index);
		return false;
	}
	ASSERT(!irq_enabled());
	/* now was read before held was taken, with interrupts on: a tick since
	 * may have charged this CPU up to a later time, never to be undone. */
	if (now < here->last_account_ns)
		now = here->last_account_ns;
	swap_sleepers(here, next, self, deadline_ns);
	next->handed_off = true;
	spin_unlock_handed_on(held, index); /* next is ours; the count now stands for here->lock */
	cpu->need_resched = 0;
	cpu->stats.direct_switches++;
	switch_at(cpu, here, self, next, now, false);
	/* (whatever woke self took it off the sleepers) */
	finish_switch(irq_flags);
	/* self, read again rather than kept across the switch, which clobbers
	 * every register: kept, it lived on the stack, reloaded at each use */
	*handed = take_handed_off(thread_current());
	return true;
}

bool sched_handoff(struct thread *next, struct spinlock *held, uint64_t irq_flags,
		   uint64_t deadline_ns)
{
	return sched_handoff_at(next, held, irq_flags, deadline_ns, clock_ns());
}

bool sched_handoff_at(struct thread *next, struct spinlock *held, uint64_t irq_flags,
		      uint64_t deadline_ns, uint64_t now)
{
	struct cpu *cpu = this_cpu();
	bool handed;
	if (handoff_here(cpu, cpu->current, next, held, irq_flags, deadline_ns, now, &handed))
		return handed;
	return handoff_general(next, held, irq_flags, deadline_ns);
}

bool sched_block_handing_off_at(struct thread *next, struct spinlock *held, uint64_t irq_flags,
				uint64_t deadline_ns, uint64_t now)
{
	struct cpu *cpu = this_cpu();
	struct thread *self = cpu->current;
	mark_blocked(self); /* sched_prepare_block's, in line: held is still held */
	bool handed;
	if (handoff_here(cpu, self, next, held, irq_flags, deadline_ns, now, &handed))
		return handed;
	return handoff_general(next, held, irq_flags, deadline_ns);
}

/* Every other hand-off: next on another CPU's queue (both locked), or one
 * that turns into a wake-up and a block. */
static bool handoff_general(struct thread *next, struct spinlock *held, uint64_t irq_flags,
			    uint64_t deadline_ns)
{
	struct run_queue *here = this_rq(), *from;
	ASSERT(!irq_enabled());
	for (;;) {
		from = rq_of(next);
		if (from == here)
			spin_lock(&here->lock); /* the common case: next blocked here */
		else
			rq_lock_two(from, here);
		if (from == rq_of(next))
			break;
		rq_unlock_two(from, here);
	}
	struct thread *self = here->cpu->current;
	if (!can_hand_off(here, from, self, next)) {
		rq_unlock_two(from, here);
		sched_wakeup_next(next);
		spin_unlock_irqrestore(held, irq_flags);
		sched_block(deadline_ns);
		return take_handed_off(self);
	}
	uint64_t now = clock_ns();
	rq_remove_sleeper(from, next);
	next->cpu = here->cpu->id;
	next->handed_off = true;
	if (from != here)
		spin_unlock(&from->lock);
	spin_unlock(held); /* next is ours now; interrupts stay off */
	if (deadline_ns) {
		self->wake_deadline_ns = deadline_ns;
		rq_park_sleeper(here, self);
	}
	here->cpu->need_resched = 0;
	switch_at(here->cpu, here, self, next, now, false);
	/* (whatever woke self took it off the sleepers) */
	finish_switch(irq_flags);
	return take_handed_off(self);
}

bool sched_resumed_by_handoff(void)
{
	return take_handed_off(thread_current());
}

void sched_start_thread(struct thread *t)
{
	thread_prepare_stack(t, thread_start, t);
	t->state = THREAD_BLOCKED;
	sched_wakeup(t);
}

/* ---- Entry points ------------------------------------------------------- */

JOINPOINT_DEFINE_VOID_AS(sched, yield, sched_yield)
{
	uint64_t flags;
	struct run_queue *rq = lock_this_rq(&flags);
	schedule_locked(rq, SWITCH_YIELD);
	finish_switch(flags);
}

void sched_preempt(void)
{
	uint64_t flags = irq_save();
	struct cpu *cpu = this_cpu();
	if (!cpu->need_resched || cpu->preempt_count || !cpu->sched) {
		irq_restore(flags);
		return;
	}
	struct run_queue *rq = cpu->sched;
	spin_lock(&rq->lock);
	schedule_locked(rq, SWITCH_PREEMPT);
	finish_switch(flags);
}

void sched_exit_current(void)
{
	uint64_t flags;
	struct run_queue *rq = lock_this_rq(&flags);
	rq->cpu->current->state = THREAD_EXITING;
	schedule_locked(rq, SWITCH_EXIT);
	panic("sched: an exited thread ran again");
}

JOINPOINT_DEFINE_VOID_AS(sched, sleep, sched_sleep_ns, uint64_t, ns)
{
	if (!ns) {
		sched_yield();
		return;
	}
	uint64_t deadline = clock_deadline_after(clock_ns(), ns);
	struct thread *self = thread_current();
	const char *outer_channel = self ? self->wait_channel : NULL;
	if (self)
		__atomic_store_n(&self->wait_channel, "sleep", __ATOMIC_RELAXED);
	do
		sched_prepare_block();
	while (sched_block(deadline) == 0);
	if (self)
		__atomic_store_n(&self->wait_channel, outer_channel, __ATOMIC_RELAXED);
}

/* ---- Tick and interrupt exit --------------------------------------------- */

/* Takes up to max expired sleepers off the parking place and the list;
 * returns how many. */
static unsigned collect_expired(struct run_queue *rq, uint64_t now, struct thread **expired,
				unsigned max)
{
	unsigned count = 0;
	struct thread *parked = rq->parked;
	if (parked && parked->wake_deadline_ns <= now && max) {
		rq->parked = NULL;
		__atomic_fetch_add(&parked->expiry_wakers, 1,
				   __ATOMIC_RELAXED); /* see wake_expired */
		expired[count++] = parked;
	}
	while (count < max && !link_empty(&rq->sleepers)) {
		struct thread *t = container_of(rq->sleepers.next, struct thread, sleep_link);
		if (t->wake_deadline_ns > now)
			break;
		rq_remove_sleeper(rq, t);
		__atomic_fetch_add(&t->expiry_wakers, 1, __ATOMIC_RELAXED); /* see wake_expired */
		expired[count++] = t;
	}
	return count;
}

/* Wakes what collect_expired took, with the queue's lock dropped.  Another
 * CPU may wake one of them meanwhile, and it may run, exit and be reaped:
 * the count each holds keeps thread_free from freeing it until its wake-up
 * here is done. */
static void wake_expired(struct thread **expired, unsigned count)
{
	for (unsigned i = 0; i < count; i++) {
		sched_wakeup(expired[i]);
		__atomic_fetch_sub(&expired[i]->expiry_wakers, 1, __ATOMIC_RELEASE);
	}
}

/* The soonest sleeper's deadline, 0 when none sleeps; rq locked. */
static uint64_t soonest_deadline(struct run_queue *rq)
{
	if (link_empty(&rq->sleepers))
		return 0;
	return container_of(rq->sleepers.next, struct thread, sleep_link)->wake_deadline_ns;
}

/* The queue's one-shot, at a sleeper's deadline: wakes the sleepers due,
 * and arms itself again for the next when that too comes before the tick. */
static void wake_sleepers_due(struct timer_oneshot *timer, void *ctx)
{
	struct run_queue *rq = ctx;
	struct thread *expired[WAKEUPS_PER_TICK];
	uint64_t flags = spin_lock_irqsave(&rq->lock);
	rq->sleeper_timer_ns = 0;
	unsigned count = collect_expired(rq, clock_ns(), expired, WAKEUPS_PER_TICK);
	uint64_t next = soonest_deadline(rq);
	if (next)
		arm_sleeper_timer(rq, next);
	rq->cpu->stats.sleeps_ended_between_ticks += count;
	spin_unlock_irqrestore(&rq->lock, flags);
	wake_expired(expired, count);
}

/* A sleeper of this CPU's queue is due at deadline, before the next tick:
 * the queue's one-shot fires then (a tick would be up to a period late).
 * rq locked, interrupts off.  Another CPU's queue is left to its ticks;
 * a deadline at or after the next tick is the tick's. */
static inline void arm_sleeper_timer(struct run_queue *rq, uint64_t deadline)
{
	if (deadline >= timer_next_tick_ns() || rq->cpu != this_cpu())
		return;
	if (rq->sleeper_timer_ns && rq->sleeper_timer_ns <= deadline)
		return; /* armed for as soon or sooner */
	timer_cancel_oneshot(&rq->sleeper_timer);
	if (timer_arm_oneshot_ns(&rq->sleeper_timer, deadline, wake_sleepers_due, rq) == 0)
		rq->sleeper_timer_ns = deadline;
}

static void end_slice_if_due(struct run_queue *rq)
{
	struct thread *current = rq->cpu->current;
	if (current == rq->idle) {
		if (rq->ready_mask)
			rq->cpu->need_resched = 1;
		return;
	}
	if (current->slice_left && --current->slice_left)
		return;
	current->slice_left = SCHED_SLICE_TICKS;
	if (rq_best_priority(rq) >= current->priority)
		rq->cpu->need_resched = 1;
}

/* The timer tick, in interrupt context on each CPU. */
static void sched_tick(void)
{
	struct run_queue *rq = this_rq();
	struct thread *expired[WAKEUPS_PER_TICK];
	uint64_t now = clock_ns();

	if (!rq)
		return;
	/* (A tick that interrupted preemptible code is a quiescent point:
	 * irq_dispatch notes it, before any advice on irq.entry.) */
	uint64_t flags = spin_lock_irqsave(&rq->lock);
	account_current(rq, now);
	unsigned count = collect_expired(rq, now, expired, WAKEUPS_PER_TICK);
	end_slice_if_due(rq);
	spin_unlock_irqrestore(&rq->lock, flags);
	wake_expired(expired, count);
}

/* Called by the interrupt code on the way out of every handler. */
static void sched_irq_exit(struct trap_frame *frame)
{
	(void)frame;
	sched_preempt();
}

/* ---- Idle and start-up --------------------------------------------------- */

/* Halts until an interrupt makes something ready, after trying to pull a
 * ready thread from a busier CPU.  Interrupts go on and the CPU halts in one
 * step (STI's one-instruction shadow), so a wake-up from an interrupt between
 * the check and the HLT is not slept through. */
static int idle_loop(void *arg)
{
	(void)arg;
	for (;;) {
		irq_disable();
		grace_note_quiescent();
		if (this_cpu()->need_resched || sched_pull_thread()) {
			irq_enable();
			sched_yield();
			continue;
		}
		__asm__ volatile("sti; hlt" : : : "memory");
	}
	return 0;
}

static void run_queue_init(struct run_queue *rq, struct cpu *cpu)
{
	spin_init(&rq->lock, "runqueue");
	for (int i = 0; i < SCHED_PRIORITY_LEVELS; i++)
		link_init(&rq->ready[i]);
	link_init(&rq->sleepers);
	rq->cpu = cpu;
	rq->last_account_ns = clock_ns();
}

/* Returns CPU index's idle thread, not yet started, or NULL (no memory). */
static struct thread *alloc_idle_thread(unsigned index)
{
	char name[THREAD_NAME_MAX] = "idle/";
	if (index >= 10)
		name[5] = (char)('0' + index / 10);
	name[index >= 10 ? 6 : 5] = (char)('0' + index % 10);
	struct thread *idle = thread_alloc(name, SCHED_PRIORITY_MIN, THREAD_IDLE);
	if (idle) {
		idle->entry = idle_loop;
		idle->cpu = index;
		idle->affinity = SMP_CPU_BIT(index);
	}
	return idle;
}

static struct thread *create_idle_thread(struct cpu *cpu)
{
	struct thread *idle = alloc_idle_thread(cpu->id);
	if (!idle)
		panic("sched: no memory for cpu %u's idle thread", cpu->id);
	thread_prepare_stack(idle, thread_start, idle);
	idle->state = THREAD_READY;
	return idle;
}

void sched_init(void)
{
	struct cpu *cpu = this_cpu();
	struct run_queue *rq = &run_queues[cpu->id];

	fpu_init_cpu();
	run_queue_init(rq, cpu);
	thread_setup_boot(&boot_thread, "boot", (uint64_t)boot_stack_bottom,
			  (uint64_t)boot_stack_top);
	cpu->current = &boot_thread;
	cpu->sched = rq;
	rq->idle = create_idle_thread(cpu);
	cpu->idle_thread = rq->idle;
	timer_set_tick_callback(sched_tick);
	irq_set_exit_hook(sched_irq_exit);
	pr_info("sched: %d priorities, %u-tick slices, eager FPU save, boot thread %lu\n",
		SCHED_PRIORITY_LEVELS, SCHED_SLICE_TICKS, thread_id(&boot_thread));
}

uint64_t sched_prepare_cpu(unsigned index)
{
	ASSERT(index > 0 && index < MAX_CPUS && !smp_cpu_online(index));
	struct cpu *cpu = &cpus[index];
	struct run_queue *rq = &run_queues[index];
	if (!rq->idle) {
		rq->idle = alloc_idle_thread(index);
		if (!rq->idle)
			return 0;
	}
	run_queue_init(rq, cpu);
	rq->idle->state = THREAD_RUNNING;
	cpu->idle_thread = rq->idle;
	cpu->current = rq->idle;
	cpu->sched = rq;
	return rq->idle->stack.top;
}

void sched_start_cpu(void)
{
	struct cpu *cpu = this_cpu();
	struct run_queue *rq = cpu->sched;

	ASSERT(rq && cpu->current == rq->idle && !irq_enabled());
	fpu_init_cpu();
	rq->last_account_ns = clock_ns();
	tss_set_kernel_stack(rq->idle->stack.top);
	cpu->syscall_stack = rq->idle->stack.top;
	irq_enable();
	idle_loop(NULL);
	__builtin_unreachable();
}
