/*
 * lwIP's operating-system port (NO_SYS=0) on the kernel's own primitives.
 *
 * Semaphores are a count and a wait queue: a waiter sleeps until the count is
 * positive, then takes a unit with a compare-and-swap (a thread that lost the
 * race sleeps again).  Mailboxes are rings of pointers under a spinlock with
 * two wait queues (not empty, not full); lwIP posts from threads only (the
 * NIC workers, the tcpip thread, socket callers), never from interrupts.
 * Mutexes are the scheduler's sleeping mutexes.  SYS_ARCH_PROTECT is one
 * global lock taken with interrupts off, re-entrant on the CPU that holds it
 * (lwIP's sections are short and never sleep).  Every object lwIP allocates
 * here is counted (net_port_objects), so leaks show up in the statistics.
 *
 * The core lock (LOCK_TCPIP_CORE) holds back the wake-ups of the mailboxes
 * its holder posts to until it unlocks.  The loopback interface hands every
 * packet to the tcpip thread through its mailbox while the sender holds the
 * lock; woken at once, the tcpip thread (which outranks socket callers) ran
 * only to wait for that lock: a wake-up and two switches for nothing, twice
 * per loopback request and answer.
 */
#include <stdlib.h>

#include "arch/sys_arch.h"
#include "lwip/sys.h"
#include "lwip/tcpip.h"

#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "mm/mm.h"
#include "net/internal.h"
#include "sched/sched.h"
#include "time/time.h"

struct net_sys_sem {
	struct waitq queue;
	volatile int64_t count;
};

struct net_sys_mbox {
	struct spinlock lock;
	struct waitq not_empty, not_full;
	unsigned size;
	volatile unsigned head, tail; /* head - tail messages queued; grow forever */
	void *slots[];
};

static volatile int64_t port_objects;

int64_t net_port_objects(void)
{
	return __atomic_load_n(&port_objects, __ATOMIC_RELAXED);
}

static void *port_alloc(size_t size)
{
	void *p = kzalloc(size);
	if (p)
		__atomic_add_fetch(&port_objects, 1, __ATOMIC_RELAXED);
	return p;
}

static void port_free(void *p)
{
	if (!p)
		return;
	kfree(p);
	__atomic_sub_fetch(&port_objects, 1, __ATOMIC_RELAXED);
}

void sys_init(void)
{
}

u32_t sys_now(void)
{
	return (u32_t)(clock_ns() / NSEC_PER_MSEC);
}

/* ---- The core lock -------------------------------------------------------- */

/* Mailboxes posted to while the core lock was held, one entry per post, to
 * be woken at the unlock; a post beyond them wakes at once. */
#define CORE_HELD_WAKES 8

static struct thread *core_holder; /* written only by the holder */
static struct net_sys_mbox *core_held_wakes[CORE_HELD_WAKES];
static unsigned core_held_count;

void net_core_lock(void)
{
	sys_mutex_lock(&lock_tcpip_core);
	__atomic_store_n(&core_holder, thread_current(), __ATOMIC_RELAXED);
}

/* The held wake-ups, now (before the holder may sleep, and at the unlock). */
static void core_wake_held(void)
{
	while (core_held_count)
		waitq_wake_one(&core_held_wakes[--core_held_count]->not_empty);
}

/* The held wake-ups are done while the lock is still held (a mailbox may be
 * freed by the next holder, and only under the lock), with preemption off
 * until the unlock: a reader that outranks the holder runs right after it,
 * and finds the lock free. */
void net_core_unlock(void)
{
	preempt_disable();
	core_wake_held();
	__atomic_store_n(&core_holder, NULL, __ATOMIC_RELAXED);
	sys_mutex_unlock(&lock_tcpip_core);
	preempt_enable();
}

/* A mailbox freed under the core lock takes its held wake-ups with it. */
static void core_forget_held(const struct net_sys_mbox *m)
{
	unsigned kept = 0;
	for (unsigned i = 0; i < core_held_count; i++)
		if (core_held_wakes[i] != m)
			core_held_wakes[kept++] = core_held_wakes[i];
	core_held_count = kept;
}

/* True when the caller holds the core lock (in a thread, not an interrupt
 * that came in on its CPU). */
static bool core_held_here(void)
{
	return this_cpu()->irq_depth == 0 &&
	       __atomic_load_n(&core_holder, __ATOMIC_RELAXED) == thread_current();
}

/* Holds back m's wake-up until the core lock's unlock, if the caller holds
 * it and there is room.  Returns whether it did. */
static bool core_hold_wake(struct net_sys_mbox *m)
{
	if (!core_held_here() || core_held_count == CORE_HELD_WAKES)
		return false;
	core_held_wakes[core_held_count++] = m;
	return true;
}

/* Before a wait that may sleep: a holder of the core lock wakes what it
 * held back (the thread it waits for may be among them). */
static void core_wake_held_before_sleep(void)
{
	if (core_held_here())
		core_wake_held();
}

/* ---- Semaphores ----------------------------------------------------------- */

err_t sys_sem_new(sys_sem_t *sem, u8_t count)
{
	struct net_sys_sem *s = port_alloc(sizeof *s);
	if (!s)
		return ERR_MEM;
	waitq_init(&s->queue, "net.sem");
	s->count = count;
	*sem = s;
	return ERR_OK;
}

void sys_sem_free(sys_sem_t *sem)
{
	port_free(*sem);
	*sem = NULL;
}

void sys_sem_signal(sys_sem_t *sem)
{
	__atomic_add_fetch(&(*sem)->count, 1, __ATOMIC_RELEASE);
	waitq_wake_one(&(*sem)->queue);
}

static bool sem_available(void *arg)
{
	return __atomic_load_n(&((struct net_sys_sem *)arg)->count, __ATOMIC_ACQUIRE) > 0;
}

static bool sem_take(struct net_sys_sem *s)
{
	int64_t count = __atomic_load_n(&s->count, __ATOMIC_ACQUIRE);
	while (count > 0) {
		if (__atomic_compare_exchange_n(&s->count, &count, count - 1, false,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
	}
	return false;
}

/* Returns the milliseconds waited, or SYS_ARCH_TIMEOUT; timeout 0 = forever. */
u32_t sys_arch_sem_wait(sys_sem_t *sem, u32_t timeout)
{
	struct net_sys_sem *s = *sem;
	uint64_t start = clock_ns();
	uint64_t deadline = start + (uint64_t)timeout * NSEC_PER_MSEC;
	while (!sem_take(s)) {
		core_wake_held_before_sleep();
		if (!timeout) {
			waitq_wait(&s->queue, sem_available, s);
			continue;
		}
		uint64_t now = clock_ns();
		if (now >= deadline ||
		    waitq_wait_timeout(&s->queue, sem_available, s, deadline - now) == -ETIMEDOUT) {
			if (sem_take(s))
				break;
			return SYS_ARCH_TIMEOUT;
		}
	}
	return (u32_t)((clock_ns() - start) / NSEC_PER_MSEC);
}

/* ---- Mutexes -------------------------------------------------------------- */

err_t sys_mutex_new(sys_mutex_t *mutex)
{
	struct mutex *m = port_alloc(sizeof *m);
	if (!m)
		return ERR_MEM;
	mutex_init(m, "net.mutex");
	*mutex = m;
	return ERR_OK;
}

void sys_mutex_free(sys_mutex_t *mutex)
{
	port_free(*mutex);
	*mutex = NULL;
}

void sys_mutex_lock(sys_mutex_t *mutex)
{
	mutex_lock(*mutex);
}

void sys_mutex_unlock(sys_mutex_t *mutex)
{
	mutex_unlock(*mutex);
}

/* ---- Mailboxes ------------------------------------------------------------ */

err_t sys_mbox_new(sys_mbox_t *mbox, int size)
{
	unsigned slots = size > 0 ? (unsigned)size : 64;
	struct net_sys_mbox *m = port_alloc(sizeof *m + slots * sizeof(void *));
	if (!m)
		return ERR_MEM;
	spin_init(&m->lock, "net.mbox");
	waitq_init(&m->not_empty, "net.mbox.not_empty");
	waitq_init(&m->not_full, "net.mbox.not_full");
	m->size = slots;
	*mbox = m;
	return ERR_OK;
}

void sys_mbox_free(sys_mbox_t *mbox)
{
	if (core_held_here())
		core_forget_held(*mbox);
	port_free(*mbox);
	*mbox = NULL;
}

static bool mbox_has_room(void *arg)
{
	struct net_sys_mbox *m = arg;
	return m->head - m->tail < m->size;
}

static bool mbox_has_message(void *arg)
{
	struct net_sys_mbox *m = arg;
	return m->head != m->tail;
}

static bool mbox_put(struct net_sys_mbox *m, void *msg)
{
	uint64_t flags = spin_lock_irqsave(&m->lock);
	bool room = mbox_has_room(m);
	if (room) {
		m->slots[m->head % m->size] = msg;
		m->head++;
	}
	spin_unlock_irqrestore(&m->lock, flags);
	if (room && !core_hold_wake(m))
		waitq_wake_one(&m->not_empty);
	return room;
}

static bool mbox_get(struct net_sys_mbox *m, void **msg)
{
	uint64_t flags = spin_lock_irqsave(&m->lock);
	bool any = mbox_has_message(m);
	if (any) {
		void *value = m->slots[m->tail % m->size];
		m->tail++;
		if (msg)
			*msg = value;
	}
	spin_unlock_irqrestore(&m->lock, flags);
	if (any)
		waitq_wake_one(&m->not_full);
	return any;
}

void sys_mbox_post(sys_mbox_t *mbox, void *msg)
{
	while (!mbox_put(*mbox, msg)) {
		core_wake_held_before_sleep();
		waitq_wait(&(*mbox)->not_full, mbox_has_room, *mbox);
	}
}

err_t sys_mbox_trypost(sys_mbox_t *mbox, void *msg)
{
	return mbox_put(*mbox, msg) ? ERR_OK : ERR_MEM;
}

err_t sys_mbox_trypost_fromisr(sys_mbox_t *mbox, void *msg)
{
	return sys_mbox_trypost(mbox, msg);
}

/* Returns the milliseconds waited, or SYS_ARCH_TIMEOUT; timeout 0 = forever. */
u32_t sys_arch_mbox_fetch(sys_mbox_t *mbox, void **msg, u32_t timeout)
{
	struct net_sys_mbox *m = *mbox;
	uint64_t start = clock_ns();
	uint64_t deadline = start + (uint64_t)timeout * NSEC_PER_MSEC;
	while (!mbox_get(m, msg)) {
		core_wake_held_before_sleep();
		if (!timeout) {
			waitq_wait(&m->not_empty, mbox_has_message, m);
			continue;
		}
		uint64_t now = clock_ns();
		if (now >= deadline || waitq_wait_timeout(&m->not_empty, mbox_has_message, m,
							  deadline - now) == -ETIMEDOUT) {
			if (mbox_get(m, msg))
				break;
			return SYS_ARCH_TIMEOUT;
		}
	}
	return (u32_t)((clock_ns() - start) / NSEC_PER_MSEC);
}

u32_t sys_arch_mbox_tryfetch(sys_mbox_t *mbox, void **msg)
{
	return mbox_get(*mbox, msg) ? 0 : SYS_MBOX_EMPTY;
}

/* ---- Threads -------------------------------------------------------------- */

struct thread_start {
	lwip_thread_fn fn;
	void *arg;
};

static int thread_trampoline(void *arg)
{
	struct thread_start start = *(struct thread_start *)arg;
	port_free(arg);
	start.fn(start.arg);
	return 0;
}

sys_thread_t sys_thread_new(const char *name, lwip_thread_fn fn, void *arg, int stacksize, int prio)
{
	struct thread_start *start = port_alloc(sizeof *start);
	if (!start)
		panic("net: no memory for thread %s", name);
	start->fn = fn;
	start->arg = arg;
	struct thread *t = thread_create(thread_trampoline, start, name, prio);
	if (!t)
		panic("net: cannot start thread %s", name);
	thread_detach(t);
	return t;
}

/* ---- Critical sections ------------------------------------------------------ */

/* lwIP's SYS_ARCH_PROTECT (pools, pbuf references, socket events): nested,
 * with interrupts off for the whole hold, so nothing preempts the holder and
 * the lock leaves the preemption count alone (spin_lock_handed): a
 * connection takes it about 60 times.  The lock's owner says whether this
 * CPU already holds it. */
static struct spinlock protect_lock = SPINLOCK_INIT("net.protect");
static unsigned protect_depth;

sys_prot_t sys_arch_protect(void)
{
	uint64_t flags = irq_save();
	if (__atomic_load_n(&protect_lock.owner_cpu, __ATOMIC_RELAXED) != (int)this_cpu_id())
		spin_lock_handed(&protect_lock);
	protect_depth++;
	return flags;
}

void sys_arch_unprotect(sys_prot_t flags)
{
	if (--protect_depth == 0)
		spin_unlock_handed(&protect_lock);
	irq_restore(flags);
}

/* ---- The C library bits lwIP needs ------------------------------------------ */

uint32_t net_port_random(void)
{
	static uint64_t state;
	uint64_t x = __atomic_load_n(&state, __ATOMIC_RELAXED);
	if (!x)
		x = rdtsc() | 1;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	__atomic_store_n(&state, x, __ATOMIC_RELAXED);
	return (uint32_t)(x >> 16);
}

int atoi(const char *text)
{
	int value = 0, sign = 1;
	if (*text == '-') {
		sign = -1;
		text++;
	}
	while (*text >= '0' && *text <= '9')
		value = value * 10 + (*text++ - '0');
	return sign * value;
}

void net_port_diag(const char *format, ...)
{
	char line[160];
	va_list args;
	va_start(args, format);
	vsnprintf(line, sizeof line, format, args);
	va_end(args);
	pr_info("lwip: %s", line);
}
