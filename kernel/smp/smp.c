/*
 * Cross-CPU calls and IPIs.  Each CPU owns one call request (requests[], by
 * source CPU): the function, its argument and a mask of the targets that
 * have not finished it.  A caller fills its request, publishes the mask with
 * a release store, and sends each target an IPI on APIC_VECTOR_CALL.  A
 * target, in the IPI handler, scans every online CPU's request for its own
 * bit, runs the function and clears the bit; when the mask is empty the
 * request is free again.
 *
 * Invariants:
 *  - a source has one request in flight at a time: it waits for the previous
 *    one to drain before reusing it, with preemption off throughout (so the
 *    request stays the one of the CPU it runs on);
 *  - a CPU runs incoming calls only with interrupts off (handler, or the
 *    polling loop of a waiting caller), so no call runs twice;
 *  - a caller that waits runs the calls sent to it meanwhile: two CPUs that
 *    call each other both make progress.
 *
 * Rescheduling needs no data: the waker sets the target's need_resched
 * before the IPI, and the interrupt exit hook acts on it.
 *
 * A call whose IPI never reaches a target would leave its caller spinning
 * for ever (one did, under TCG on a loaded host: the targets idle and
 * ticking, the caller in wait_for_targets).  So a caller still waiting
 * CALL_RESEND_NS after it sent sends the IPI again to the targets left and
 * counts it (smp_calls_resent): a second IPI is harmless, a target runs only
 * calls with its bit set.  A target busy with interrupts off, or (under an
 * emulator) a virtual CPU its host has not run for a while, is why most
 * resends happen; a target still pending after CALL_REPORT_NS while running
 * its idle thread (which takes interrupts at once) most likely lost its IPI,
 * and that is said on the console (the first few times).
 */
#include "smp/smp.h"

#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/spinlock.h"
#include "irq/irq.h"
#include "lib/errno.h"
#include "panic/panic.h"
#include "time/time.h"

#define CALL_RESEND_NS  (5 * NSEC_PER_MSEC)
#define CALL_REPORT_NS  (100 * NSEC_PER_MSEC)
#define RESEND_WARNINGS 5
#define SPINS_PER_CHECK 1024

struct call_request {
	smp_call_fn fn;
	void *arg;
	uint64_t pending; /* targets that have not finished fn */
} __attribute__((aligned(64)));

static struct call_request requests[MAX_CPUS];
static uint64_t calls_received[MAX_CPUS];
uint64_t smp_online_cpus; /* bit i: CPU i is online (smp_online_mask, in line) */
static uint64_t calls_resent;
static uint64_t lost_ipis; /* resent to a target that was idle */
static bool drop_next_ipi; /* the smp suite's lost IPI */

/* Bits set in mask (no libgcc: __builtin_popcountll would call it). */
static unsigned count_bits(uint64_t mask)
{
	unsigned n = 0;
	for (; mask; mask &= mask - 1)
		n++;
	return n;
}

unsigned smp_online_count(void)
{
	return count_bits(smp_online_mask());
}

bool smp_cpu_online(unsigned index)
{
	return index < MAX_CPUS && (smp_online_mask() & SMP_CPU_BIT(index));
}

void smp_set_online(void)
{
	ASSERT(!irq_enabled());
	uint64_t mask =
	    __atomic_or_fetch(&smp_online_cpus, SMP_CPU_BIT(this_cpu_id()), __ATOMIC_SEQ_CST);
	__atomic_store_n(&cpu_count, count_bits(mask), __ATOMIC_RELEASE);
}

uint64_t smp_calls_received(unsigned index)
{
	return index < MAX_CPUS ? __atomic_load_n(&calls_received[index], __ATOMIC_RELAXED) : 0;
}

/* Runs every call addressed to this CPU.  Interrupts off. */
static void run_incoming_calls(void)
{
	unsigned self = this_cpu_id();
	uint64_t bit = SMP_CPU_BIT(self);
	uint64_t sources = smp_online_mask();

	while (sources) {
		unsigned source = (unsigned)__builtin_ctzll(sources);
		struct call_request *request = &requests[source];
		sources &= sources - 1;
		if (!(__atomic_load_n(&request->pending, __ATOMIC_ACQUIRE) & bit))
			continue;
		request->fn(request->arg);
		calls_received[self]++;
		__atomic_fetch_and(&request->pending, ~bit, __ATOMIC_RELEASE);
	}
}

static void send_to_each(uint64_t mask, uint8_t vector)
{
	while (mask) {
		unsigned target = (unsigned)__builtin_ctzll(mask);
		mask &= mask - 1;
		lapic_send_ipi(cpus[target].apic_id, vector);
	}
}

/* The CPUs of mask running their idle thread: they take interrupts at once. */
static uint64_t idle_among(uint64_t mask)
{
	uint64_t idle = 0;
	for (uint64_t m = mask; m; m &= m - 1) {
		unsigned cpu = (unsigned)__builtin_ctzll(m);
		struct thread *current = __atomic_load_n(&cpus[cpu].current, __ATOMIC_RELAXED);
		if (current && current == cpus[cpu].idle_thread)
			idle |= SMP_CPU_BIT(cpu);
	}
	return idle;
}

/* A caller's wait: when it began, when it last sent, whether it has said so. */
struct call_wait {
	uint64_t start_ns, sent_ns;
	bool reported;
};

/* Sends the call IPI again to the targets still pending once CALL_RESEND_NS
 * have passed since the last send.  A target that runs with interrupts off
 * that long is normal, and so, under an emulator, is a virtual CPU the host
 * has not run for a few milliseconds; a target still pending and idle after
 * CALL_REPORT_NS has most likely lost its IPI, and that is reported. */
static void resend_if_stuck(uint64_t pending, struct call_wait *wait)
{
	uint64_t now = clock_ns();
	if (!wait->start_ns) {
		wait->start_ns = wait->sent_ns = now;
		return;
	}
	if (now - wait->sent_ns < CALL_RESEND_NS)
		return;
	wait->sent_ns = now;
	__atomic_fetch_add(&calls_resent, 1, __ATOMIC_RELAXED);
	send_to_each(pending, APIC_VECTOR_CALL);
	uint64_t idle = idle_among(pending);
	if (!idle || wait->reported || now - wait->start_ns < CALL_REPORT_NS)
		return;
	wait->reported = true;
	if (__atomic_add_fetch(&lost_ipis, 1, __ATOMIC_RELAXED) <= RESEND_WARNINGS)
		pr_warn("smp: a call from CPU %u still pending on idle CPUs %#lx after %lu ms: "
			"IPI sent again\n",
			this_cpu_id(), idle,
			(unsigned long)((now - wait->start_ns) / NSEC_PER_MSEC));
}

/* Spins until request has no pending target, serving calls meanwhile. */
static void wait_for_targets(struct call_request *request)
{
	uint64_t pending;
	struct call_wait wait = {0};
	unsigned spins = 0;
	while ((pending = __atomic_load_n(&request->pending, __ATOMIC_ACQUIRE))) {
		uint64_t flags = irq_save();
		run_incoming_calls();
		irq_restore(flags);
		cpu_relax();
		if (++spins % SPINS_PER_CHECK == 0)
			resend_if_stuck(pending, &wait);
	}
}

uint64_t smp_calls_resent(void)
{
	return __atomic_load_n(&calls_resent, __ATOMIC_RELAXED);
}

void smp_drop_next_call_ipi(void)
{
	__atomic_store_n(&drop_next_ipi, true, __ATOMIC_RELEASE);
}

int smp_call(uint64_t cpu_mask, smp_call_fn fn, void *arg, enum smp_call_wait wait)
{
	if (!fn || this_cpu()->irq_depth)
		return -EINVAL;
	preempt_disable();
	unsigned self = this_cpu_id();
	struct call_request *request = &requests[self];
	uint64_t targets = cpu_mask & smp_online_mask() & ~SMP_CPU_BIT(self);

	wait_for_targets(request);
	request->fn = fn;
	request->arg = arg;
	__atomic_store_n(&request->pending, targets, __ATOMIC_RELEASE);
	if (!__atomic_load_n(&drop_next_ipi, __ATOMIC_ACQUIRE) ||
	    !__atomic_exchange_n(&drop_next_ipi, false, __ATOMIC_ACQ_REL))
		send_to_each(targets, APIC_VECTOR_CALL);
	if (cpu_mask & SMP_CPU_BIT(self)) {
		uint64_t flags = irq_save();
		fn(arg);
		irq_restore(flags);
	}
	if (wait == SMP_CALL_WAIT)
		wait_for_targets(request);
	preempt_enable();
	return 0;
}

int smp_call_all(smp_call_fn fn, void *arg)
{
	return smp_call(~0ULL, fn, arg, SMP_CALL_WAIT);
}

void smp_send_reschedule(unsigned index)
{
	uint64_t flags = irq_save();
	if (index != this_cpu_id() && smp_cpu_online(index))
		lapic_send_ipi(cpus[index].apic_id, APIC_VECTOR_RESCHEDULE);
	irq_restore(flags);
}

static void call_interrupt(struct trap_frame *frame, void *ctx)
{
	run_incoming_calls();
}

/* need_resched is already set; the interrupt exit hook switches. */
static void reschedule_interrupt(struct trap_frame *frame, void *ctx)
{
}

void smp_init(void)
{
	if (irq_register(APIC_VECTOR_CALL, call_interrupt, NULL, "ipi-call") ||
	    irq_register(APIC_VECTOR_RESCHEDULE, reschedule_interrupt, NULL, "ipi-resched"))
		panic("smp: the IPI vectors are taken");
	uint64_t flags = irq_save();
	smp_set_online();
	irq_restore(flags);
}
