/*
 * Threads and the scheduler: kernel threads with fixed priorities, preempted
 * by the timer tick, and the ways a thread waits for another: wait queues with
 * a condition, sleeping mutexes, completions, semaphores and sleeping for a
 * while.  Each CPU has its own run queue; threads move between CPUs on
 * wake-up and when a CPU goes idle, within the CPUs their affinity allows
 * (inherited from the creator); CPUs can be reserved for monitor threads.
 *
 *     struct thread *t = thread_create(worker, &job, "worker", SCHED_PRIORITY_NORMAL);
 *     waitq_wait(&job.done_queue, job_finished, &job);
 *     int status; thread_join(t, &status);
 */
#ifndef KERNEL_SCHED_SCHED_H
#define KERNEL_SCHED_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/spinlock.h"
#include "panic/panic.h"
#include "smp/smp.h"

/* ---- Threads ------------------------------------------------------------- */

/* Priorities: a higher number runs first; threads of equal priority share the
 * CPU round-robin, one time slice each.  The idle threads sit below them all. */
enum sched_priority {
	SCHED_PRIORITY_MIN = 0,
	SCHED_PRIORITY_LOW = 2,
	SCHED_PRIORITY_NORMAL = 4,
	SCHED_PRIORITY_HIGH = 6,
	SCHED_PRIORITY_MAX = 7,
};
#define SCHED_PRIORITY_LEVELS 8
#define SCHED_SLICE_TICKS     10 /* round-robin time slice */
#define THREAD_NAME_MAX       24
#define THREAD_STACK_PAGES    4

enum thread_state {
	THREAD_READY,   /* on a run queue */
	THREAD_RUNNING, /* on a CPU */
	THREAD_BLOCKED, /* waiting for a wake-up (or about to) */
	THREAD_EXITING, /* called thread_exit, not yet off its stack */
	THREAD_DEAD,    /* off its stack for good: join reclaims it */
};

struct thread;

/* A thread's body; its return value is the exit status thread_join reports. */
typedef int (*thread_fn)(void *arg);

struct thread_stats {
	uint64_t run_ns;   /* time on a CPU */
	uint64_t wait_ns;  /* time ready but waiting for a CPU */
	uint64_t switches; /* times switched in */
};

/* Starts fn(arg) in a new thread, with the caller's affinity and kind, on the
 * least loaded CPU it allows.  name is copied (truncated to THREAD_NAME_MAX -
 * 1).  A thread of higher priority than the caller placed on the caller's CPU
 * runs before this returns.  Returns the thread, or NULL when fn is NULL, priority
 * is out of range, or memory (thread or stack) ran out. */
struct thread *thread_create(thread_fn fn, void *arg, const char *name, int priority);
/* As thread_create (the same checks, the same sched.spawn join point), but
 * the thread does not run until thread_launch: its creator can first store
 * it where others find it, and then no longer touch what the thread may free
 * as it ends (a process's thread).  It must be launched, once: there is no
 * way to discard it, so nothing that can fail may come between.  The join
 * point ends with the creation, so its after advice (and thread_create's)
 * sees a thread not yet on any run queue. */
struct thread *thread_create_unstarted(thread_fn fn, void *arg, const char *name, int priority);
/* Lets a thread from thread_create_unstarted run, as thread_create would
 * have: a higher-priority one placed on the caller's CPU runs before this
 * returns. */
void thread_launch(struct thread *t);
/* Ends the calling thread with status; its stack is reclaimed by thread_join,
 * or at once if it was detached.  Never returns. */
__attribute__((noreturn)) void thread_exit(int status);
/* Waits for t to end, stores its status (status may be NULL) and frees it.
 * Returns 0, -EDEADLK (t is the caller) or -EINVAL (t is detached, already
 * being joined, or cannot end: the boot and idle threads). */
int thread_join(struct thread *t, int *status);
/* Lets t be reclaimed by itself when it ends; it can no longer be joined.
 * Returns 0 or -EINVAL (already detached or joined). */
int thread_detach(struct thread *t);
/* The calling thread; NULL before sched_init.  One load of the CPU's
 * current thread, in line: IPC and system calls ask at every step. */
static inline struct thread *thread_current(void)
{
	return this_cpu_read(current);
}
/* Accessors: id (0 = the boot thread), name, priority, state, statistics.
 * The id in line, at its fixed offset (thread.c checks it): every msg and
 * shm event carries it. */
#define THREAD_OFFSET_ID 8
static inline uint64_t thread_id(const struct thread *t)
{
	return *(const uint64_t *)((const char *)t + THREAD_OFFSET_ID);
}
const char *thread_name(const struct thread *t);
/* Renames t (truncated as thread_create does): a process's thread takes the
 * program's name at exec. */
void thread_set_name(struct thread *t, const char *name);
int thread_priority(const struct thread *t);
enum thread_state thread_state(const struct thread *t);
/* What t waits on while it is blocked (ps's wait channel): the name its
 * system call gave (thread_set_wait_site), else the waitq's or mutex's name,
 * "sleep" for sched_sleep_ns; NULL when it is not blocked on anything. */
const char *thread_wait_channel(const struct thread *t);
/* Names what the calling thread's blocking waits are for, until reset with
 * NULL (a system call around a wait on a shared queue: "accept", "recv"). */
void thread_set_wait_site(const char *name);
/* The accounting state kernel/acct attached to t (NULL: none), a hint that
 * kernel/acct checks against its own tables.  Set by kernel/acct only; the
 * running thread's is also in this_cpu()->acct (set at every switch, and by
 * thread_set_acct_state when t is the caller). */
void *thread_acct_state(const struct thread *t);
void thread_set_acct_state(struct thread *t, void *state);
void thread_get_stats(const struct thread *t, struct thread_stats *stats);
/* t's time on a CPU up to now: its run_ns, plus the stretch it is running
 * if it is this CPU's current thread (the CPU-time clocks). */
uint64_t thread_cpu_time_ns(const struct thread *t);
/* Threads that exist right now (not yet reclaimed), idle threads included. */
unsigned thread_count(void);
/* Prints one line per thread: id, name, state, priority, CPU, statistics. */
void thread_print_all(void);
/* Writes every thread's name, pid and tid into the trace stream (a trace
 * starting: the threads that exist already get named). */
void thread_trace_names(void);
/* Keeps the calling thread's events out of the trace stream (or lets them
 * in again): for the threads that carry the stream, whose own work would
 * otherwise feed it. */
void thread_set_untraced(bool untraced);

/* ---- Threads of user processes ------------------------------------------ */

struct process;
struct address_space;

/* Makes t a thread of process, running in space (NULL: the kernel's space,
 * for a kernel thread): every switch to t loads space.  For the calling thread
 * (space is loaded at once) or a thread that has not run yet. */
void thread_set_process(struct thread *t, struct process *process, struct address_space *space);
/* The process t runs for, or NULL for a kernel thread. */
struct process *thread_process(const struct thread *t);

/* ---- Scheduling ---------------------------------------------------------- */

/* Makes the boot context thread 0 of CPU 0, creates CPU 0's idle thread and
 * hooks the timer tick and interrupt exit.  Once, after the timer and the
 * interrupt tables are set up; panics when memory runs out. */
void sched_init(void);
/* Before starting CPU index (boot CPU): creates its run queue and idle
 * thread.  Returns the top of the idle thread's stack, which the new CPU
 * starts on, or 0 when memory ran out. */
uint64_t sched_prepare_cpu(unsigned index);
/* On that CPU, on that stack, once its tables and timer are up and it is
 * online: becomes its idle thread and starts scheduling.  Never returns. */
__attribute__((noreturn)) void sched_start_cpu(void);
/* Gives the CPU to the next ready thread of the same or higher priority, if
 * any.  Must not be called with a spinlock held. */
void sched_yield(void);
/* Blocks the caller for at least ns nanoseconds (it wakes at the deadline:
 * a tick, or the run queue's one-shot when that comes first).  0 just
 * yields. */
void sched_sleep_ns(uint64_t ns);
/* Makes a blocked thread ready (or cancels a block it is about to enter).
 * Every wake-up in the kernel goes through here.  Returns true when t was
 * blocked, false when it was already runnable or gone past waking. */
bool sched_wakeup(struct thread *t);
/* False while this CPU holds its run queue's lock (the sched.switch join
 * point's advice runs there): a wake-up from here would take that lock
 * again.  Code that may run at any join point asks before it wakes a thread
 * (the msg binding, whose message wakes the monitor).  Preemption off. */
bool sched_may_wake_here(void);
/* Switches now if this CPU was asked to reschedule and may: preempt_enable
 * calls it when the preemption count drops to 0 with interrupts on. */
void sched_preempt(void);

/* ---- Blocking by hand, and the direct switch of message passing ---------- */

/* For primitives that keep their own waiters (kernel/ipc) instead of a wait
 * queue.  The waiter marks itself with sched_prepare_block while it holds the
 * lock guarding its condition, drops the lock and calls sched_block; a waker
 * changes the condition and calls sched_wakeup (or sched_wakeup_next) under
 * that lock, so the waiter's thread cannot be gone, and no wake-up is lost:
 * one that comes before sched_block makes it return at once. */
void sched_prepare_block(void);
/* Blocks the caller (marked by sched_prepare_block) until woken or, if
 * deadline_ns is not 0, until clock_ns() passes it.  Returns 0, or
 * -ETIMEDOUT when the deadline has passed.  Wake-ups may be spurious:
 * callers re-check their condition. */
int sched_block(uint64_t deadline_ns);
/* The direct switch (L4 and seL4 style): wakes t, blocked, onto the calling
 * CPU as the next thread it runs, so that the caller, which is about to
 * block (sched_prepare_block done), hands its CPU straight to t when it calls
 * sched_block: no other CPU, no interrupt, no run-queue search.  t runs next
 * unless a thread of higher priority is ready here.  When t may not run on
 * this CPU (affinity, CPUs reserved for monitors) this is sched_wakeup.
 * Returns true when t was blocked, false when it was already runnable. */
bool sched_wakeup_next(struct thread *t);
/* The direct switch in one step.  The caller holds exactly one lock, held
 * (taken with spin_lock_irqsave, which returned irq_flags), guarding the
 * condition it waits for, and has marked itself (sched_prepare_block); next
 * is blocked and known to the caller under held.  Claims next for this CPU,
 * releases held, and switches straight to next: no run queue, no search.
 * Returns when the caller is woken or deadline_ns (0: none) has passed,
 * spurious wake-ups included: callers re-check their condition and their
 * deadline.  When next may not run here, a thread of higher priority is
 * ready, or either thread was woken meanwhile, it is sched_wakeup_next, the
 * unlock and sched_block.  Returns what sched_resumed_by_handoff would. */
bool sched_handoff(struct thread *next, struct spinlock *held, uint64_t irq_flags,
		   uint64_t deadline_ns);
/* sched_handoff with the clock the caller read just before (clock_ns()):
 * the switch charges the time up to now (or to the CPU's last charge, when
 * a tick came after the reading), and the caller saves a reading. */
bool sched_handoff_at(struct thread *next, struct spinlock *held, uint64_t irq_flags,
		      uint64_t deadline_ns, uint64_t now);
/* sched_prepare_block then sched_handoff_at, in one call (IPC's direct
 * switch): the caller is marked blocked under held, as it would mark itself. */
bool sched_block_handing_off_at(struct thread *next, struct spinlock *held, uint64_t irq_flags,
				uint64_t deadline_ns, uint64_t now);
/* True when the calling thread's last block (since its sched_prepare_block)
 * ended with another thread's sched_handoff switching straight to it: that
 * thread was done with it, and with whatever it changed under the lock it
 * handed over, before the switch, so the woken thread may read that
 * condition without taking the lock again.  False after any other wake-up
 * (which may still be under way on another CPU). */
bool sched_resumed_by_handoff(void);
/* The CPUs t may run on now (bit i: CPU i): its affinity among the online
 * CPUs, minus the CPUs reserved for monitors unless t is a monitor.  In
 * line, reading t's affinity and flags at their fixed offsets (thread.c
 * checks them): IPC asks at every receive, where a call cost more than
 * the answer. */
#define THREAD_OFFSET_AFFINITY 56
#define THREAD_OFFSET_FLAGS    64
#define THREAD_FLAG_MONITOR    (1u << 4)
/* The CPUs reserved for monitors (sched_monitor_cpus), read relaxed. */
extern uint64_t sched_reserved_cpus;
static inline __attribute__((always_inline)) uint64_t thread_allowed_cpus(const struct thread *t)
{
	const char *base = (const char *)t;
	uint64_t online = smp_online_mask();
	uint64_t allowed =
	    __atomic_load_n((const uint64_t *)(base + THREAD_OFFSET_AFFINITY), __ATOMIC_RELAXED) &
	    online;
	if (!allowed)
		return online;
	if (!(*(const unsigned *)(base + THREAD_OFFSET_FLAGS) & THREAD_FLAG_MONITOR)) {
		uint64_t ordinary =
		    allowed & ~__atomic_load_n(&sched_reserved_cpus, __ATOMIC_RELAXED);
		if (ordinary)
			allowed = ordinary;
	}
	return allowed;
}

/* ---- CPUs: affinity, monitor CPUs, statistics ---------------------------- */

struct cpu_stats;

/* Ordinary threads stay off CPUs reserved for monitors; monitor threads may
 * run anywhere their affinity allows. */
enum thread_kind { THREAD_KIND_ORDINARY, THREAD_KIND_MONITOR };

/* Lets t run only on the CPUs in mask (bit i: CPU i), moving it at once if
 * it is queued or running elsewhere (the caller itself returns on an allowed
 * CPU).  Returns 0, or -EINVAL (t NULL or an idle thread, or no online CPU
 * in mask).  The syscall for processes wraps this. */
int thread_set_affinity(struct thread *t, uint64_t mask);
/* t's affinity mask, and the CPU it runs or last ran on. */
uint64_t thread_affinity(const struct thread *t);
unsigned thread_cpu(const struct thread *t);
/* Pins the running thread to the CPU it is on (a test or a benchmark about
 * one CPU); returns the affinity it had, to give back with
 * thread_set_affinity. */
uint64_t thread_pin_here(void);
/* Makes t a monitor thread or an ordinary one (moving it off monitor CPUs). */
void thread_set_kind(struct thread *t, enum thread_kind kind);
enum thread_kind thread_get_kind(const struct thread *t);
/* Keeps ordinary threads off CPU index from now on (moving those there
 * away).  Returns 0, -EINVAL (CPU not online) or -EBUSY (no CPU would be left
 * for ordinary threads). */
int cpu_reserve_for_monitors(unsigned index);
/* Gives CPU index back to every thread.  Returns 0 or -EINVAL (not reserved). */
int cpu_release_from_monitors(unsigned index);
/* The CPUs reserved for monitors. */
uint64_t sched_monitor_cpus(void);
/* Reserves the CPUs that monitor_cpus= named, once they are online. */
void sched_apply_monitor_cpus(void);
/* Copies CPU index's statistics (busy, idle and interrupt time, switches,
 * interrupts).  Returns 0 or -EINVAL (CPU not online). */
int sched_get_cpu_stats(unsigned index, struct cpu_stats *stats);
/* Prints one line per online CPU: times, switches, interrupts, calls. */
void sched_print_cpu_stats(void);

/* ---- Wait queues --------------------------------------------------------- */

/* A list of threads waiting for something.  Waiters pass a condition that the
 * queue re-checks under its lock before sleeping, so a wake-up that comes
 * between the check and the sleep is never lost.  The waker changes the state
 * first, then calls waitq_wake_*. */
struct sched_link {
	struct sched_link *next, *prev;
};

struct waitq {
	struct spinlock lock;
	struct sched_link waiters;
	const char *name;
};

#define WAITQ_INIT(queue, queue_name)                                                       \
	{                                                                                   \
		SPINLOCK_INIT(queue_name), {&(queue).waiters, &(queue).waiters}, queue_name \
	}

/* The condition waited for.  It runs with the queue's lock held and
 * interrupts off: it may only read state (no sleeping, no other waitq). */
typedef bool (*waitq_cond_fn)(void *arg);

void waitq_init(struct waitq *queue, const char *name);
/* Sleeps until cond(arg) is true.  Returns 0. */
int waitq_wait(struct waitq *queue, waitq_cond_fn cond, void *arg);
/* As waitq_wait, but gives up timeout_ns after the call.  Returns 0 (cond
 * true; checked once more at the deadline) or -ETIMEDOUT. */
int waitq_wait_timeout(struct waitq *queue, waitq_cond_fn cond, void *arg, uint64_t timeout_ns);
/* Wakes the longest waiter.  Returns how many threads were woken (0 or 1). */
int waitq_wake_one(struct waitq *queue);
/* Wakes every waiter.  Returns how many threads were woken. */
int waitq_wake_all(struct waitq *queue);
/* Wakes the waiters whose condition holds now, asking each under the queue's
 * lock here, in the waker (so a condition that reads the current thread's
 * state reads the waker's: it may wake too often, never too seldom as long
 * as what it waits for is in the state it reads).  For a queue whose waiters
 * wait for different things.  Returns how many threads were woken. */
int waitq_wake_ready(struct waitq *queue);
/* How many threads wait on queue now (tests that must see waiters queued). */
unsigned waitq_waiters(struct waitq *queue);

/* ---- Completions: "this has happened", once and for everybody ------------ */

struct completion {
	struct waitq queue;
	volatile bool done;
};

void completion_init(struct completion *c, const char *name);
/* Sleeps until completion_signal was called.  Returns 0. */
int completion_wait(struct completion *c);
/* Returns 0, or -ETIMEDOUT when timeout_ns passed first. */
int completion_wait_timeout(struct completion *c, uint64_t timeout_ns);
/* Marks c done and wakes every waiter, present and future. */
void completion_signal(struct completion *c);
/* True once completion_signal was called. */
bool completion_is_done(struct completion *c);

/* ---- Counting semaphores ------------------------------------------------- */

struct semaphore {
	struct waitq queue;
	volatile int64_t count;
};

void semaphore_init(struct semaphore *s, int64_t count, const char *name);
/* Takes one unit, sleeping until one is available.  Returns 0. */
int semaphore_down(struct semaphore *s);
/* Takes one unit if available.  Returns 0 or -EAGAIN. */
int semaphore_trydown(struct semaphore *s);
/* Gives one unit back and wakes one waiter. */
void semaphore_up(struct semaphore *s);

/* ---- Sleeping mutexes ---------------------------------------------------- */

/* A lock that sleeps instead of spinning; it has an owner, only the owner may
 * unlock, and waiters get it in priority order (FIFO within a priority), by
 * direct hand-over so none can be overtaken.  Not for interrupt context. */
struct mutex {
	struct spinlock lock; /* guards the waiters */
	uintptr_t owner_word; /* the owning thread, | 1 while waiters may be queued */
	struct sched_link waiters;
	const char *name;
};

#define MUTEX_INIT(m, mutex_name)                                                      \
	{                                                                              \
		SPINLOCK_INIT(mutex_name), 0, {&(m).waiters, &(m).waiters}, mutex_name \
	}

void mutex_init(struct mutex *m, const char *name);
/* Sleeps until the mutex is the caller's.  Panics if the caller owns it. */
void mutex_lock(struct mutex *m);
/* Takes the mutex if it is free.  Returns true when the caller now owns it. */
bool mutex_trylock(struct mutex *m);
/* Releases the mutex, handing it to the best waiter.  Panics unless the
 * caller owns it. */
void mutex_unlock(struct mutex *m);
/* True when the calling thread owns m. */
bool mutex_held_by_me(const struct mutex *m);
/* True when nobody owns m (and so nobody waits for it). */
bool mutex_is_free(const struct mutex *m);
/* How many threads wait for m now (tests that must see waiters queued). */
unsigned mutex_waiters(struct mutex *m);

#define mutex_assert_held(m) ASSERT(mutex_held_by_me(m))

#endif
