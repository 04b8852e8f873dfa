/*
 * The vector table behind irq_register.  Writers (register, unregister,
 * alloc, free) serialize on irq_lock; the dispatch path takes no lock.  A
 * registration stores ctx and name first and publishes the handler last, so a
 * CPU that sees the handler sees its ctx.  Dispatch announces itself in the
 * vector's `active` count before reading the handler, and unregister clears
 * the handler and then waits for `active` to drain, so once it returns no CPU
 * runs the old handler or holds its ctx.
 *
 * Counts are shared atomics (one relaxed add per interrupt); per-CPU totals
 * are in this_cpu()->stats.interrupts, and the time spent in outermost
 * handlers in stats.irq_ns.  An interrupt on a vector without a
 * handler is counted, acknowledged and reported once per vector.  Every
 * handler runs through the irq.entry join point (vector, frame).
 */
#include "irq/irq.h"

#include <stdbool.h>
#include <stddef.h>

#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "cpu/spinlock.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "panic/panic.h"
#include "smp/smp.h"
#include "telemetry/tracepoint.h"
#include "time/time.h"

struct irq_vector {
	irq_handler_fn handler; /* NULL when none */
	void *ctx;
	const char *name;
	bool allocated;  /* handed out by irq_alloc_vector */
	bool reported;   /* "no handler" already printed */
	uint32_t active; /* CPUs inside the handler */
	uint64_t count;
};

static struct irq_vector vectors[IRQ_VECTORS];
static struct spinlock irq_lock = SPINLOCK_INIT("irq");
static irq_eoi_fn eoi_function;
static irq_exit_hook_fn exit_hook;

static int check_vector(unsigned vector)
{
	if (vector >= IRQ_VECTORS)
		return -EINVAL;
	if (vector < IRQ_FIRST_VECTOR || vector == IRQ_SPURIOUS_VECTOR)
		return -EPERM;
	/* The IDT sends 0x80 to the system-call entry, not to irq dispatch: a
	 * handler here would never run and its device would never get an EOI. */
	if (vector == IRQ_SYSCALL_VECTOR)
		return -EPERM;
	return 0;
}

int irq_register(unsigned vector, irq_handler_fn handler, void *ctx, const char *name)
{
	int error = check_vector(vector);
	if (error)
		return error;
	if (!handler)
		return -EINVAL;

	struct irq_vector *v = &vectors[vector];
	uint64_t flags = spin_lock_irqsave(&irq_lock);
	if (v->handler) {
		spin_unlock_irqrestore(&irq_lock, flags);
		return -EBUSY;
	}
	v->ctx = ctx;
	v->name = name ? name : "unnamed";
	v->reported = false;
	__atomic_store_n(&v->handler, handler, __ATOMIC_SEQ_CST);
	spin_unlock_irqrestore(&irq_lock, flags);
	return 0;
}

int irq_unregister(unsigned vector, irq_handler_fn handler)
{
	if (vector >= IRQ_VECTORS)
		return -EINVAL;

	struct irq_vector *v = &vectors[vector];
	uint64_t flags = spin_lock_irqsave(&irq_lock);
	if (!handler || v->handler != handler) {
		spin_unlock_irqrestore(&irq_lock, flags);
		return -ENOENT;
	}
	__atomic_store_n(&v->handler, NULL, __ATOMIC_SEQ_CST);
	spin_unlock_irqrestore(&irq_lock, flags);

	while (__atomic_load_n(&v->active, __ATOMIC_SEQ_CST))
		cpu_relax();
	return 0;
}

int irq_alloc_vector(void)
{
	int result = -ENOSPC;
	uint64_t flags = spin_lock_irqsave(&irq_lock);
	for (unsigned vector = IRQ_DEVICE_FIRST; vector <= IRQ_DEVICE_LAST; vector++) {
		struct irq_vector *v = &vectors[vector];
		if (vector == IRQ_SYSCALL_VECTOR)
			continue;
		if (!v->allocated && !v->handler) {
			v->allocated = true;
			result = (int)vector;
			break;
		}
	}
	spin_unlock_irqrestore(&irq_lock, flags);
	return result;
}

int irq_free_vector(unsigned vector)
{
	if (vector < IRQ_DEVICE_FIRST || vector > IRQ_DEVICE_LAST)
		return -EINVAL;

	struct irq_vector *v = &vectors[vector];
	int result = 0;
	uint64_t flags = spin_lock_irqsave(&irq_lock);
	if (!v->allocated)
		result = -EINVAL;
	else if (v->handler)
		result = -EBUSY;
	else
		v->allocated = false;
	spin_unlock_irqrestore(&irq_lock, flags);
	return result;
}

irq_eoi_fn irq_set_eoi(irq_eoi_fn eoi)
{
	return __atomic_exchange_n(&eoi_function, eoi, __ATOMIC_SEQ_CST);
}

irq_exit_hook_fn irq_set_exit_hook(irq_exit_hook_fn hook)
{
	return __atomic_exchange_n(&exit_hook, hook, __ATOMIC_SEQ_CST);
}

uint64_t irq_get_count(unsigned vector)
{
	if (vector >= IRQ_VECTORS)
		return 0;
	return __atomic_load_n(&vectors[vector].count, __ATOMIC_RELAXED);
}

const char *irq_get_name(unsigned vector)
{
	if (vector >= IRQ_VECTORS || !__atomic_load_n(&vectors[vector].handler, __ATOMIC_ACQUIRE))
		return NULL;
	return vectors[vector].name;
}

static void report_unhandled(unsigned vector, struct irq_vector *v)
{
	if (v->reported)
		return;
	v->reported = true;
	pr_warn("irq: vector %u fired with no handler (further ones counted silently)\n", vector);
}

static void run_handler(unsigned vector, struct trap_frame *frame)
{
	struct irq_vector *v = &vectors[vector];

	__atomic_fetch_add(&v->active, 1, __ATOMIC_SEQ_CST);
	irq_handler_fn handler = __atomic_load_n(&v->handler, __ATOMIC_SEQ_CST);
	if (handler)
		handler(frame, v->ctx);
	__atomic_fetch_sub(&v->active, 1, __ATOMIC_SEQ_CST);
	if (!handler)
		report_unhandled(vector, v);
}

/* The irq.entry join point: one interrupt's handler, with its vector, inside
 * irq_depth.  Not an API: irq_dispatch is its only caller.  _NOSLEEP: it runs
 * in interrupt context with interrupts off, where nothing may sleep, and the
 * scheduler switches only in the exit hook, after it returned. */
JOINPOINT_DEFINE_VOID_NOSLEEP_AS(irq, entry, irq_run_handler, unsigned, vector, struct trap_frame *,
				 frame)
{
	run_handler(vector, frame);
}

void irq_dispatch(struct trap_frame *frame)
{
	unsigned vector = (unsigned)frame->vector;
	struct cpu *cpu = this_cpu();

	ASSERT(vector >= IRQ_FIRST_VECTOR && vector < IRQ_VECTORS);
	__atomic_fetch_add(&vectors[vector].count, 1, __ATOMIC_RELAXED);
	cpu->stats.interrupts++;
	if (vector == IRQ_SPURIOUS_VECTOR)
		return;

	uint64_t entry_tsc = cpu->irq_depth ? 0 : rdtsc(); /* outermost: time it */
	/* Preemptible code was interrupted: it is outside every reader section
	 * (smp/grace.c).  Noted here, before irq.entry, whose advice (a _NOSLEEP
	 * join point) runs the handler with preemption off. */
	if (cpu->irq_depth == 0 && cpu->preempt_count == 0)
		grace_note_quiescent();
	cpu->irq_depth++;
	struct trace_irq event = {.vector = vector};
	tracepoint(TRACE_IRQ_ENTRY, &event, sizeof event);
	irq_run_handler(vector, frame);
	tracepoint(TRACE_IRQ_EXIT, &event, sizeof event);
	irq_eoi_fn eoi = __atomic_load_n(&eoi_function, __ATOMIC_ACQUIRE);
	if (eoi)
		eoi(vector);
	cpu->irq_depth--;
	if (entry_tsc)
		cpu->stats.irq_ns += clock_tsc_to_ns(rdtsc() - entry_tsc);

	irq_exit_hook_fn hook = __atomic_load_n(&exit_hook, __ATOMIC_ACQUIRE);
	if (cpu->irq_depth == 0 && hook)
		hook(frame);
}
