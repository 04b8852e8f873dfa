/*
 * Thread life cycle: creation, exit, join, detach and reclamation.
 *
 * A thread's structure comes from its own object cache (64-byte aligned, as
 * the FXSAVE area inside needs 16) and its stack from kstack_alloc, with an
 * unmapped guard page below so an overflow faults instead of corrupting the
 * neighbour.  A thread cannot free the stack it runs on, so exit is two
 * steps: thread_exit marks it THREAD_EXITING and switches away for good; the
 * thread that runs next calls thread_reap, which frees it at once if it was
 * detached, or marks it THREAD_DEAD and wakes its joiner, who frees it.
 *
 * Every thread is on all_threads (under threads_lock) from creation until it
 * is freed, which is what thread_count and thread_print_all walk.  Ids grow
 * from 0 (the boot thread) and are never reused.
 */
#include "sched/internal.h"

#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/proc.h"
#include "telemetry/tracepoint.h"

static struct spinlock threads_lock = SPINLOCK_INIT("threads");
static struct sched_link all_threads = {&all_threads, &all_threads};
static unsigned live_threads;
static uint64_t next_thread_id;
static struct kmem_cache *thread_cache;

static void thread_list_add(struct thread *t)
{
	uint64_t flags = spin_lock_irqsave(&threads_lock);
	t->id = next_thread_id++;
	link_insert_before(&all_threads, &t->all_link);
	live_threads++;
	spin_unlock_irqrestore(&threads_lock, flags);
}

static void thread_init_fields(struct thread *t, const char *name, int priority, unsigned flags)
{
	struct thread *parent = thread_current();
	memset(t, 0, sizeof *t);
	strlcpy(t->name, name ? name : "?", sizeof t->name);
	t->state = THREAD_BLOCKED;
	t->priority = priority;
	t->higher_priorities = ~0u << (priority + 1);
	t->cpu = this_cpu_id();
	t->affinity = parent ? thread_affinity(parent) : ~0ULL;
	t->flags = flags | (parent ? parent->flags & THREAD_MONITOR : 0);
	t->slice_left = SCHED_SLICE_TICKS;
	link_init(&t->run_link);
	link_init(&t->sleep_link);
	waitq_init(&t->exit_queue, "thread-exit");
	fpu_init_state(&t->fpu);
}

/* Returns a thread with its stack, not yet runnable, or NULL (no memory). */
struct thread *thread_alloc(const char *name, int priority, unsigned flags)
{
	if (!thread_cache)
		thread_cache = kmem_cache_create("thread", sizeof(struct thread), 64);
	struct thread *t = thread_cache ? kmem_cache_alloc(thread_cache) : NULL;
	if (!t)
		return NULL;
	thread_init_fields(t, name, priority, flags);
	t->stack = kstack_alloc(THREAD_STACK_PAGES);
	if (!t->stack.base) {
		kmem_cache_free(thread_cache, t);
		return NULL;
	}
	thread_list_add(t);
	return t;
}

void thread_free(struct thread *t)
{
	uint64_t flags = spin_lock_irqsave(&threads_lock);
	link_remove(&t->all_link);
	live_threads--;
	spin_unlock_irqrestore(&threads_lock, flags);
	if (t->flags & THREAD_STATIC)
		return;
	/* A tick or one-shot on another CPU may still be waking t (its
	 * deadline expired as another waker woke it): a few instructions. */
	while (__atomic_load_n(&t->expiry_wakers, __ATOMIC_ACQUIRE))
		cpu_relax();
	kstack_free(&t->stack);
	kmem_cache_free(thread_cache, t);
}

/* Adopts the running context (a boot stack) as thread t. */
void thread_setup_boot(struct thread *t, const char *name, uint64_t stack_base, uint64_t stack_top)
{
	thread_init_fields(t, name, SCHED_PRIORITY_NORMAL, THREAD_STATIC | THREAD_DETACHED);
	t->state = THREAD_RUNNING;
	t->stack.base = stack_base;
	t->stack.top = stack_top;
	t->stack.pages = (stack_top - stack_base) / PAGE_SIZE;
	thread_list_add(t);
}

/*
 * Lays out the stack as a switch leaves it (arch/x86_64/switch.h): the
 * address the thread resumes at, arch_thread_trampoline, then start and its
 * argument for the trampoline to pop, then two zero words that keep RSP
 * 16-byte aligned at the trampoline's call, as the ABI wants.
 */
void thread_prepare_stack(struct thread *t, void (*start)(void *), void *start_arg)
{
	uint64_t *frame = (uint64_t *)(t->stack.top - 5 * sizeof(uint64_t));

	memset(frame, 0, 5 * sizeof(uint64_t));
	frame[0] = (uint64_t)arch_thread_trampoline;
	frame[1] = (uint64_t)start;
	frame[2] = (uint64_t)start_arg;
	t->saved_rsp = (uint64_t)frame;
}

/* The sched.spawn join point: every thread but the boot and idle ones is
 * made here, whether thread_create launches it at once or its creator
 * first publishes it (thread_create_unstarted). */
JOINPOINT_DEFINE_AS(sched, spawn, thread_create_unstarted, struct thread *, thread_fn, fn, void *,
		    arg, const char *, name, int, priority)
{
	if (!fn || priority < SCHED_PRIORITY_MIN || priority > SCHED_PRIORITY_MAX)
		return NULL;
	struct thread *t = thread_alloc(name, priority, 0);
	if (!t)
		return NULL;
	t->entry = fn;
	t->arg = arg;
	return t;
}

/* A thread that never ran has never had its stack laid out. */
void thread_launch(struct thread *t)
{
	ASSERT(t && !t->saved_rsp && t->state == THREAD_BLOCKED);
	sched_start_thread(t);
}

struct thread *thread_create(thread_fn fn, void *arg, const char *name, int priority)
{
	struct thread *t = thread_create_unstarted(fn, arg, name, priority);
	if (t)
		thread_launch(t);
	return t;
}

void thread_exit(int status)
{
	struct thread *self = thread_current();

	ASSERT(self && !(self->flags & THREAD_IDLE));
	self->exit_status = status;
	sched_exit_current();
}

/*
 * THREAD_DEAD is set and the joiner woken under the exit queue's lock, the
 * lock the joiner's condition is checked under: once the joiner sees
 * THREAD_DEAD, this function is done with t.
 */
void thread_reap(struct thread *t)
{
	uint64_t flags = spin_lock_irqsave(&threads_lock);
	bool detached = t->flags & THREAD_DETACHED;
	if (!detached) {
		spin_lock(&t->exit_queue.lock);
		t->state = THREAD_DEAD;
		waitq_wake_locked(&t->exit_queue, WAKE_ALL);
		spin_unlock(&t->exit_queue.lock);
	}
	spin_unlock_irqrestore(&threads_lock, flags);
	if (detached)
		thread_free(t);
}

static bool thread_is_dead(void *arg)
{
	return ((struct thread *)arg)->state == THREAD_DEAD;
}

/* Claims t for one joiner.  Returns 0, -EDEADLK or -EINVAL. */
static int thread_claim_join(struct thread *t)
{
	if (t == thread_current())
		return -EDEADLK;
	int error = 0;
	uint64_t flags = spin_lock_irqsave(&threads_lock);
	if (t->flags & (THREAD_DETACHED | THREAD_JOINED | THREAD_IDLE | THREAD_STATIC))
		error = -EINVAL;
	else
		t->flags |= THREAD_JOINED;
	spin_unlock_irqrestore(&threads_lock, flags);
	return error;
}

int thread_join(struct thread *t, int *status)
{
	int error = thread_claim_join(t);
	if (error)
		return error;
	waitq_wait(&t->exit_queue, thread_is_dead, t);
	if (status)
		*status = t->exit_status;
	thread_free(t);
	return 0;
}

int thread_detach(struct thread *t)
{
	bool free_now = false;
	int error = 0;
	uint64_t flags = spin_lock_irqsave(&threads_lock);
	if (t->flags & (THREAD_DETACHED | THREAD_JOINED))
		error = -EINVAL;
	else if (t->state == THREAD_DEAD)
		free_now = true;
	else
		t->flags |= THREAD_DETACHED;
	spin_unlock_irqrestore(&threads_lock, flags);
	if (free_now)
		thread_free(t);
	return error;
}

/* One load through %gs: a thread moved to another CPU between reading
 * this_cpu() and its current field would see the other CPU's thread. */
void thread_mark_monitor(struct thread *t, bool monitor)
{
	uint64_t flags = spin_lock_irqsave(&threads_lock);
	if (monitor)
		t->flags |= THREAD_MONITOR;
	else
		t->flags &= ~THREAD_MONITOR;
	spin_unlock_irqrestore(&threads_lock, flags);
}

_Static_assert(__builtin_offsetof(struct thread, id) == THREAD_OFFSET_ID,
	       "thread_id reads it in line");
_Static_assert(__builtin_offsetof(struct thread, affinity) == THREAD_OFFSET_AFFINITY,
	       "thread_allowed_cpus reads it in line");
_Static_assert(__builtin_offsetof(struct thread, flags) == THREAD_OFFSET_FLAGS,
	       "thread_allowed_cpus reads it in line");

void *thread_acct_state(const struct thread *t)
{
	return __atomic_load_n(&t->acct, __ATOMIC_RELAXED);
}

void thread_set_acct_state(struct thread *t, void *state)
{
	preempt_disable();
	__atomic_store_n(&t->acct, state, __ATOMIC_RELAXED);
	if (this_cpu()->current == t)
		__atomic_store_n(&this_cpu()->acct, state, __ATOMIC_RELAXED);
	preempt_enable();
}

const char *thread_name(const struct thread *t)
{
	return t->name;
}

void thread_set_name(struct thread *t, const char *name)
{
	uint64_t flags = spin_lock_irqsave(&threads_lock);
	strlcpy(t->name, name, sizeof t->name);
	spin_unlock_irqrestore(&threads_lock, flags);
}

int thread_priority(const struct thread *t)
{
	return t->priority;
}

enum thread_state thread_state(const struct thread *t)
{
	return t->state;
}

const char *thread_wait_channel(const struct thread *t)
{
	if (t->state != THREAD_BLOCKED)
		return NULL;
	const char *site = __atomic_load_n(&t->wait_site, __ATOMIC_RELAXED);
	return site ? site : __atomic_load_n(&t->wait_channel, __ATOMIC_RELAXED);
}

void thread_set_wait_site(const char *name)
{
	struct thread *self = thread_current();
	if (self)
		__atomic_store_n(&self->wait_site, name, __ATOMIC_RELAXED);
}

void thread_get_stats(const struct thread *t, struct thread_stats *stats)
{
	*stats = t->stats;
}

void thread_set_process(struct thread *t, struct process *process, struct address_space *space)
{
	uint64_t irq = irq_save();
	t->process = process;
	t->pid = process ? proc_pid(process) : 0;
	t->space = space;
	if (t == thread_current()) {
		this_cpu()->process = process; /* proc_current's copy */
		vm_space_activate(space ? space : vm_kernel_space());
	}
	irq_restore(irq);
}

struct process *thread_process(const struct thread *t)
{
	return t->process;
}

unsigned thread_count(void)
{
	return __atomic_load_n(&live_threads, __ATOMIC_RELAXED);
}

static const char *state_name(enum thread_state state)
{
	static const char *const names[] = {"ready", "running", "blocked", "exiting", "dead"};
	return (unsigned)state < sizeof names / sizeof names[0] ? names[state] : "?";
}

void thread_set_untraced(bool untraced)
{
	uint64_t flags = irq_save();
	thread_current()->untraced = untraced;
	cpu_set_untraced(this_cpu(), untraced);
	irq_restore(flags);
}

void thread_trace_names(void)
{
	uint64_t flags = spin_lock_irqsave(&threads_lock);
	/* Written even when the caller is left out of the trace (the thread
	 * that starts a trace for a host is): no switch while the lock is held. */
	bool untraced = this_cpu()->untraced;
	cpu_set_untraced(this_cpu(), false);
	for (struct sched_link *l = all_threads.next; l != &all_threads; l = l->next) {
		struct thread *t = container_of(l, struct thread, all_link);
		struct trace_thread_name event = {.pid = t->process ? proc_pid(t->process) : 0,
						  .tid = (int32_t)t->id};
		/* A process's thread by its program (it may have been forked under
		 * another one's name and exec'd since), as process_exec names it. */
		strlcpy(event.name, t->process ? proc_name(t->process) : t->name,
			sizeof event.name);
		tracepoint_write(TRACE_THREAD_NAME, &event, sizeof event); /* any scope */
	}
	cpu_set_untraced(this_cpu(), untraced);
	spin_unlock_irqrestore(&threads_lock, flags);
}

void thread_print_all(void)
{
	uint64_t flags = spin_lock_irqsave(&threads_lock);
	for (struct sched_link *l = all_threads.next; l != &all_threads; l = l->next) {
		struct thread *t = container_of(l, struct thread, all_link);
		const char *channel = t->state == THREAD_BLOCKED ? thread_wait_channel(t) : NULL;
		pr_info("thread %lu %-16s %-8s prio %d cpu %u run %lu us wait %lu us switches "
			"%lu%s%s\n",
			t->id, t->name, state_name(t->state), t->priority, t->cpu,
			t->stats.run_ns / 1000, t->stats.wait_ns / 1000, t->stats.switches,
			channel ? " on " : "", channel ? channel : "");
	}
	spin_unlock_irqrestore(&threads_lock, flags);
}
