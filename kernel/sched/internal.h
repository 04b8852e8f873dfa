/*
 * The scheduler's own declarations: the thread structure, per-CPU run queues,
 * intrusive lists, and the calls between thread.c, sched.c, waitq.c and
 * mutex.c.  Nothing outside kernel/sched/ includes this file.
 *
 * Lock order: threads_lock, then a waitq's or mutex's lock, then a run
 * queue's lock; two run queues' locks in the order of their CPU indices
 * (rq_lock_two).  All of them are taken with interrupts off.
 */
#ifndef KERNEL_SCHED_INTERNAL_H
#define KERNEL_SCHED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/fpu.h"
#include "arch/x86_64/switch.h"
#include "cpu/percpu.h"
#include "mm/mm.h"
#include "sched/sched.h"
#include "time/time.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

/* ---- Intrusive doubly linked lists (a head is a link to itself) --------- */

static inline void link_init(struct sched_link *head)
{
	head->next = head;
	head->prev = head;
}

/* The nodes on head's list, counted under lock. */
static inline unsigned link_count_locked(struct spinlock *lock, const struct sched_link *head)
{
	unsigned n = 0;
	uint64_t flags = spin_lock_irqsave(lock);
	for (const struct sched_link *l = head->next; l != head; l = l->next)
		n++;
	spin_unlock_irqrestore(lock, flags);
	return n;
}

static inline bool link_empty(const struct sched_link *head)
{
	return head->next == head;
}

/* Inserts node just before position (at the tail when position is the head). */
static inline void link_insert_before(struct sched_link *position, struct sched_link *node)
{
	node->prev = position->prev;
	node->next = position;
	position->prev->next = node;
	position->prev = node;
}

static inline void link_remove(struct sched_link *node)
{
	node->prev->next = node->next;
	node->next->prev = node->prev;
	node->next = node;
	node->prev = node;
}

/* ---- Threads ------------------------------------------------------------- */

enum thread_flags {
	THREAD_STATIC = 1u << 0,   /* boot thread: structure and stack are not ours to free */
	THREAD_IDLE = 1u << 1,     /* a CPU's idle thread: never queued, never ends */
	THREAD_DETACHED = 1u << 2, /* freed when it ends */
	THREAD_JOINED = 1u << 3,   /* somebody is in thread_join on it */
	THREAD_MONITOR = THREAD_FLAG_MONITOR, /* may run on CPUs reserved for monitors */
};

struct thread {
	uint64_t saved_rsp; /* while switched out: what arch_switch_stacks restores */
	uint64_t id;
	char name[THREAD_NAME_MAX];
	volatile enum thread_state state;
	int priority;
	/* the ready_mask bits above priority's, set with it (outranked_here) */
	uint32_t higher_priorities;
	unsigned cpu;        /* whose run queue holds it; changes under that queue's lock */
	uint64_t affinity;   /* CPUs it may run on (bit per CPU), under its queue's lock */
	unsigned flags;      /* enum thread_flags, under threads_lock */
	bool untraced;       /* its events stay out of the trace stream (thread_set_untraced) */
	int saved_irq_depth; /* this_cpu()->irq_depth while switched out */
	unsigned slice_left; /* ticks before round-robin moves on */
	struct kstack stack;
	thread_fn entry;
	void *arg;
	int exit_status;

	struct sched_link run_link;   /* run queue, under its lock */
	struct sched_link sleep_link; /* run queue's sleepers, under its lock */
	uint64_t wake_deadline_ns;
	uint32_t expiry_wakers; /* ticks waking it after its deadline (sched.c's wake_expired) */
	bool sleeping;          /* on sleep_link (not when in its queue's parked) */
	bool handed_off;        /* its block ended with a sched_handoff to it */
	struct sched_link all_link; /* every thread, under threads_lock */
	struct waitq exit_queue;    /* joiners wait here for THREAD_DEAD */

	uint64_t ready_since_ns;
	struct thread_stats stats;
	struct fpu_state fpu;

	struct process *process;     /* NULL for a kernel thread */
	int32_t pid;                 /* process's pid (0: none), for the trace's switch records */
	struct address_space *space; /* loaded while it runs; NULL: the kernel's */
	void *acct;                  /* kernel/acct's state of the thread, NULL: none */
	const char *wait_channel;    /* while it blocks: the waitq or mutex it waits on */
	const char *wait_site;       /* what its system call waits for (thread_set_wait_site) */
};

/* One per CPU, reached through this_cpu()->sched. */
struct run_queue {
	struct spinlock lock;
	struct sched_link ready[SCHED_PRIORITY_LEVELS];
	uint32_t ready_mask; /* bit p set: ready[p] is not empty */
	unsigned ready_count;
	struct sched_link sleepers; /* blocked with a deadline, earliest first */
	struct thread *parked;      /* blocked in a hand-off with a deadline (sched.c) */
	struct thread *idle;
	/* switched out to be moved to another CPU (THREAD_READY) or reaped
	 * (THREAD_EXITING) by the thread that runs next, in finish_switch */
	struct thread *left_behind;
#ifdef KERNEL_TESTS
	struct thread *test_switched_from; /* for sched_test_switch_finished */
#endif
	struct thread *next; /* sched_wakeup_next: on this queue, to run first */
	uint64_t last_account_ns;
	struct cpu *cpu;
	/* wakes the soonest sleeper when it is due before the CPU's next tick
	 * (sched.c); sleeper_timer_ns: the deadline it is armed for, 0: none */
	struct timer_oneshot sleeper_timer;
	uint64_t sleeper_timer_ns;
};

/* A thread parked on a waitq or a mutex; lives on the waiter's stack. */
struct waiter {
	struct sched_link link;
	struct thread *thread;
	bool queued;        /* still on the list: nobody has picked it to wake */
	waitq_cond_fn cond; /* what it waits for (waitq_wake_ready asks it) */
	void *arg;
};

/* waitq.c */
enum wake_count { WAKE_ONE, WAKE_ALL };
/* Wakes the first waiter or all of them, queue lock held.  Returns how many. */
int waitq_wake_locked(struct waitq *queue, enum wake_count count);

/* thread.c */
struct thread *thread_alloc(const char *name, int priority, unsigned flags);
void thread_free(struct thread *t);
void thread_setup_boot(struct thread *t, const char *name, uint64_t stack_base, uint64_t stack_top);
void thread_prepare_stack(struct thread *t, void (*start)(void *), void *start_arg);
/* Called once a THREAD_EXITING thread is off its stack for good. */
void thread_reap(struct thread *t);
/* Sets or clears THREAD_MONITOR (under threads_lock). */
void thread_mark_monitor(struct thread *t, bool monitor);

/* sched.c */
/* Puts a new thread on this CPU's run queue. */
void sched_start_thread(struct thread *t);
/* sched_prepare_block and sched_block are public (sched.h). */
/* The one function every context switch goes through: run queue lock held,
 * interrupts off, prev is the running thread. */
void sched_switch_to(struct thread *prev, struct thread *next);
/* Switches away from an exiting thread for good. */
__attribute__((noreturn)) void sched_exit_current(void);

/* Puts t (THREAD_READY) on rq's ready list, and takes it off again. */
void rq_enqueue(struct run_queue *rq, struct thread *t, uint64_t now);
void rq_dequeue(struct run_queue *rq, struct thread *t);
/* Locks the run queue that holds t; t->cpu cannot change until unlocked. */
struct run_queue *rq_lock_thread(struct thread *t, uint64_t *flags);
/* Marks the CPU of rq for a reschedule when t outranks what runs there, and
 * tells that CPU. */
void rq_kick(struct run_queue *rq, const struct thread *t);

/* balance.c: where threads run */
/* sched_cpu_allowed's answer without the whole mask, for CPU index, which is
 * online (this CPU): in t's affinity and not reserved for monitors, or t is
 * a monitor, or t's affinity names monitor CPUs only (then those are what
 * it has).  False may still be allowed (an affinity with no CPU online). */
static inline __attribute__((always_inline)) bool sched_cpu_allowed_quickly(const struct thread *t,
									    unsigned index)
{
	uint64_t affinity = __atomic_load_n(&t->affinity, __ATOMIC_RELAXED);
	uint64_t monitors = __atomic_load_n(&sched_reserved_cpus, __ATOMIC_RELAXED);
	/* bits tested by shifting the mask, not by making one: a BT each */
	/* on a monitor CPU, the affinity test first: monitors and the threads
	 * pinned beside them (IPC's round trip) pass it without the flags */
	return ((affinity >> index) & 1) &&
	       (!((monitors >> index) & 1) || !(affinity & ~monitors) ||
		(t->flags & THREAD_MONITOR));
}
/* The run queue of CPU index. */
struct run_queue *rq_of_cpu(unsigned index);
/* Locks two run queues (or one, when the same) in index order, interrupts
 * already off; and unlocks them. */
void rq_lock_two(struct run_queue *a, struct run_queue *b);
void rq_unlock_two(struct run_queue *a, struct run_queue *b);
/* Whether t may run on CPU index now (thread_allowed_cpus, sched.h:
 * neither rule empties the set, the affinity wins over the reservation and
 * all online CPUs over an affinity with none online). */
bool sched_cpu_allowed(const struct thread *t, unsigned index);
/* The CPU a waking thread should go to: its last CPU when that is allowed
 * and no busier than any other allowed CPU, else the least loaded. */
unsigned sched_select_cpu(const struct thread *t);
/* Moves t (THREAD_READY, on no list) to the run queue sched_select_cpu picks,
 * choosing again when t's affinity or the monitor CPUs changed between the
 * choice and the locks. */
void sched_push_thread(struct thread *t);
/* Called by sched_push_thread between its choice (target) and taking the
 * locks, interrupts off: the sched suite changes t's affinity there (the
 * window of a racing thread_set_affinity).  Nothing outside the test kernel. */
#ifdef KERNEL_TESTS
void sched_test_push_chosen(struct thread *t, unsigned target);
#else
static inline void sched_test_push_chosen(struct thread *t, unsigned target)
{
	(void)t;
	(void)target;
}
#endif
/* Called by finish_switch, in the thread that runs after prev, right after
 * it lets go of the run queue's lock and turns interrupts back on, when prev
 * is the thread the sched suite watches (sched_test_watched, NULL but while
 * one case runs): the suite wakes prev there and has it end on another CPU
 * (the window in which whether prev was exiting must already be known).
 * Nothing outside the test kernel. */
#ifdef KERNEL_TESTS
extern struct thread *volatile sched_test_watched;
void sched_test_switch_finished(struct thread *prev);
#endif
/* Idle CPU: takes a ready thread from the busiest other queue.  Returns true
 * when this CPU now has one.  Interrupts off. */
bool sched_pull_thread(void);

#endif
