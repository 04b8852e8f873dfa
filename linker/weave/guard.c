/*
 * Fault containment for `direct` advice.  Every call into aspect code (advice,
 * init, exit) goes through linker_run_advice/linker_run_init, which record on
 * this CPU which aspect runs, since when, and a recovery point
 * (linker_guard_call in guard.S).  Two things can abort the call there:
 *   - an exception in kernel mode whose instruction pointer lies in the text
 *     of the aspect running on this CPU, or in the ABI's string loops it
 *     called (guard.S; the traps code's kernel fault hook);
 *   - interrupts, normally the tick, that find the CPU in that aspect's
 *     text past the aspect's time budget twice, a budget apart (checked at
 *     interrupt exit).
 * Either reports the aspect (which stops its advice at once and has it
 * unlinked by the linker's thread), then rewrites the trap frame so the
 * interrupted context resumes at linker_guard_abort: the guarded call returns
 * -EFAULT and the join point completes as if the advice had returned.
 *
 * Invariants: aspect code runs with preemption off, so the per-CPU record
 * belongs to one call at a time; a join point reached from advice runs no
 * advice, so calls never nest (a nested attempt is refused).  Only faults in
 * aspect text are caught: a fault inside the kernel (an ABI function given a
 * bad pointer) is a kernel bug and panics as before, which is why the ABI
 * functions read aspect-supplied memory with trap_read_kernel_word, and
 * memcpy, memmove, memset and memcmp are loops of the guard's own.  Advice
 * that spins with interrupts off cannot be seen by the tick (a limit).
 */
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/traps.h"
#include "boot/cmdline.h"
#include "cpu/percpu.h"
#include "cpu/spinlock.h"
#include "irq/irq.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "linker/weave/guard_internal.h"
#include "linker/weave/internal.h"
#include "panic/panic.h"
#include "time/time.h"

static struct linker_run runs[MAX_CPUS];
static uint64_t default_budget_ns = LINKER_DEFAULT_BUDGET_NS;
static irq_exit_hook_fn previous_exit_hook;

static int set_budget(const char *value)
{
	uint64_t us = 0;
	if (!value || !*value)
		return -EINVAL;
	for (const char *c = value; *c; c++) {
		if (*c < '0' || *c > '9')
			return -EINVAL;
		us = us * 10 + (uint64_t)(*c - '0');
	}
	if (us == 0 || us > 10 * 1000 * 1000)
		return -EINVAL;
	default_budget_ns = us * NSEC_PER_USEC;
	return 0;
}
KERNEL_PARAM(aspect_budget_us, set_budget,
	     "time a direct advice may run before it is aborted, in microseconds (1000)");

int aspect_set_budget(struct aspect *aspect, uint64_t budget_ns)
{
	if (!aspect || !budget_ns)
		return -EINVAL;
	__atomic_store_n(&aspect->budget_ns, budget_ns, __ATOMIC_RELAXED);
	return 0;
}

uint64_t linker_default_budget_ns(void)
{
	return default_budget_ns;
}

struct linker_run *linker_current_run(void)
{
	struct linker_run *run = &runs[this_cpu_id()];
	return __atomic_load_n(&run->aspect, __ATOMIC_RELAXED) ? run : NULL;
}

const struct linker_advice_frame *linker_advice_frame(const struct ms_ctx *ctx)
{
	struct linker_run *run = linker_current_run();
	return run && ctx == (const struct ms_ctx *)run ? &run->frame : NULL;
}

bool linker_may_write_for_aspect(const void *address, size_t length, const char *what)
{
	struct linker_run *run = linker_current_run();
	if (!run)
		return true; /* no advice runs here: the kernel itself asks (a monitor's system call) */
	const struct aspect *aspect = run->aspect;
	uint64_t start = (uint64_t)address, end = start + length;
	uint64_t data = (uint64_t)aspect->object.region[LINKER_REGION_DATA];
	uint64_t data_end = data + aspect->object.region_size[LINKER_REGION_DATA];
	/* The advice's own frames: below the stack pointer the guard saved, above
	 * the frame of the ABI function that asks (its saved frame pointer and
	 * return address included: the advice may not have it write over them).
	 * This function's frame record holds that function's frame pointer. */
	uint64_t asker_frame = *(const uint64_t *)__builtin_frame_address(0);
	uint64_t frames = asker_frame + 16, frames_end = run->jmp.rsp;
	if (end >= start &&
	    ((data && start >= data && end <= data_end) || (start >= frames && end <= frames_end)))
		return true;
	char reason[sizeof run->aspect->last_failure];
	snprintf(reason, sizeof reason,
		 "%s: asked the kernel to write %zu bytes at %#lx, outside its data", what, length,
		 start);
	aspect_report_failure(run->aspect, reason);
	return false;
}

/* The last budget converted on each CPU, by the interrupt-exit check only
 * (the deadline is worked out there, not on every call): the conversion takes
 * two divisions, and every aspect has the same budget unless set otherwise.
 * The clock's rate is final before the first aspect links
 * (clock_calibrate_hpet runs at boot), so the budget in ns is the whole key. */
static struct budget_cache {
	uint64_t budget_ns; /* 0: nothing cached (a budget is never 0) */
	uint64_t tsc;
} budgets[MAX_CPUS];

/* aspect's budget in TSC ticks. */
static uint64_t budget_tsc(const struct aspect *aspect, unsigned cpu)
{
	struct budget_cache *cache = &budgets[cpu];
	if (cache->budget_ns == aspect->budget_ns)
		return cache->tsc;
	uint64_t hz = clock_tsc_hz();
	uint64_t tsc = hz ? aspect->budget_ns * (hz / 1000) / 1000000 : UINT64_MAX / 2;
	if (hz) {
		cache->budget_ns = aspect->budget_ns;
		cache->tsc = tsc;
	}
	return tsc;
}

/* Runs fn(arg) with run, this CPU's record, set; returns 0 or -EFAULT
 * (aborted).  In line in linker_run_advice: it is on every event of every
 * direct aspect, so it is kept to the record's stores, the recovery point and
 * two TSC reads (the start, which the overrun check measures from, and the
 * end, for the aspect's time); the deadline is worked out only by the check. */
static inline __attribute__((always_inline)) int
run_guarded(const struct cpu *cpu, struct linker_run *run, struct aspect *aspect,
	    void (*fn)(void *), void *arg, struct jp_context *context)
{
	ASSERT(cpu->preempt_count > 0 || !irq_enabled());
	if (run->aspect)
		return -EBUSY;
	run->frame.context = context;
	run->frame.start_tsc = rdtsc();
	run->overrun_interrupts = 0;
	__atomic_store_n(&run->aspect, aspect, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	int aborted = linker_guard_call(&run->jmp, fn, arg);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint64_t spent = rdtsc() - run->frame.start_tsc;
	__atomic_store_n(&run->aspect, NULL, __ATOMIC_RELEASE);
	aspect_count_event(aspect, spent);
	return aborted ? -EFAULT : 0;
}

int linker_run_advice(struct aspect *aspect, ms_advice_fn fn, struct jp_context *context,
		      bool after)
{
	struct cpu *cpu = this_cpu();
	struct linker_run *run = &runs[cpu->id];
	run->after = after;
	/* The advice gets this CPU's record as its opaque struct ms_ctx. */
	return run_guarded(cpu, run, aspect, (void (*)(void *))(void (*)(void))fn, run, context);
}

/* The direct binding's advice (guard_internal.h): the binding check, the
 * record and the guarded call in one function per side, with nothing in
 * between that is not needed on every event. */
static inline __attribute__((always_inline)) void run_direct(const struct linker_direct_call *d,
							     ms_advice_fn fn,
							     struct jp_context *context, bool after)
{
	struct aspect *aspect = d->aspect;
	if (!aspect_is_active(aspect, ASPECT_BINDING_DIRECT))
		return;
	struct cpu *cpu = this_cpu();
	struct linker_run *run = &runs[cpu->id];
	__asm__("" : "+r"(run)); /* one pointer, not an index scaled again at each use */
	run->after = after;
	run_guarded(cpu, run, aspect, (void (*)(void *))(void (*)(void))fn, run, context);
}

void linker_direct_before(struct jp_context *context, void *cookie)
{
	const struct linker_direct_call *d = cookie;
	run_direct(d, d->before, context, false);
}

void linker_direct_after(struct jp_context *context, void *cookie)
{
	const struct linker_direct_call *d = cookie;
	run_direct(d, d->after, context, true);
}

struct init_call {
	ms_init_fn fn;
	ms_exit_fn exit;
	int result;
};

static void call_init(void *arg)
{
	struct init_call *call = arg;
	call->result = call->fn();
}

int linker_run_init(struct aspect *aspect, ms_init_fn fn)
{
	struct init_call call = {.fn = fn};
	preempt_disable();
	struct cpu *cpu = this_cpu();
	struct linker_run *run = &runs[cpu->id];
	run->after = false;
	int err = run_guarded(cpu, run, aspect, call_init, &call, NULL);
	preempt_enable();
	return err ? err : call.result;
}

static void call_exit(void *arg)
{
	((struct init_call *)arg)->exit();
}

void linker_run_exit(struct aspect *aspect, ms_exit_fn fn)
{
	struct init_call call = {.exit = fn};
	preempt_disable();
	struct cpu *cpu = this_cpu();
	struct linker_run *run = &runs[cpu->id];
	run->after = false;
	run_guarded(cpu, run, aspect, call_exit, &call, NULL);
	preempt_enable();
}

static void resume_at_abort(struct trap_frame *frame, struct linker_run *run)
{
	frame->rip = (uint64_t)linker_guard_abort;
	frame->rdi = (uint64_t)&run->jmp;
}

static uint64_t text_offset(const struct aspect *aspect, uint64_t rip)
{
	return rip - (uint64_t)aspect->object.region[LINKER_REGION_TEXT];
}

/* True when rip lies in the ABI's string loops (guard.S), which run only
 * for the advice on this CPU. */
static bool in_aspect_strings(uint64_t rip)
{
	return rip >= (uint64_t)linker_string_start && rip < (uint64_t)linker_string_end;
}

/* The aspect whose advice runs at rip: in its text, or in the string loops
 * it called; else NULL. */
static struct aspect *advice_at(struct linker_run *run, uint64_t rip)
{
	struct aspect *aspect = __atomic_load_n(&run->aspect, __ATOMIC_ACQUIRE);
	if (!aspect)
		return NULL;
	return in_aspect_strings(rip) || linker_text_owner(rip) == aspect ? aspect : NULL;
}

/* Where the fault was, for the report: its text offset, or the ABI's
 * string functions. */
static void describe_fault_site(const struct aspect *aspect, uint64_t rip, char *where, size_t size)
{
	if (in_aspect_strings(rip))
		snprintf(where, size, "in the ABI's memcpy/memmove/memset/memcmp");
	else
		snprintf(where, size, "at text+%#lx", text_offset(aspect, rip));
}

/* An NMI, #DF or #MC is not the advice's doing (and one arriving while advice
 * runs must not unlink it): only a fault the code itself raised aborts it. */
static bool is_fault_of_the_code(uint64_t vector)
{
	return vector != TRAP_NMI && vector != TRAP_DOUBLE_FAULT && vector != TRAP_MACHINE_CHECK;
}

static bool on_kernel_fault(struct trap_frame *frame, uint64_t cr2)
{
	if (!is_fault_of_the_code(frame->vector))
		return false;
	struct linker_run *run = &runs[this_cpu_id()];
	struct aspect *aspect = advice_at(run, frame->rip);
	if (!aspect)
		return false;
	char reason[sizeof aspect->last_failure], where[48];
	describe_fault_site(aspect, frame->rip, where, sizeof where);
	if (frame->vector == TRAP_PAGE_FAULT)
		snprintf(reason, sizeof reason, "%s %s (address %#lx)",
			 trap_name_of((unsigned)frame->vector), where, cr2);
	else
		snprintf(reason, sizeof reason, "%s %s", trap_name_of((unsigned)frame->vector),
			 where);
	aspect_report_failure(aspect, reason);
	resume_at_abort(frame, run);
	return true;
}

static void check_overrun(struct trap_frame *frame)
{
	if (trap_frame_from_user(frame))
		return;
	unsigned cpu = this_cpu_id();
	struct linker_run *run = &runs[cpu];
	struct aspect *aspect = advice_at(run, frame->rip);
	if (!aspect)
		return;
	uint64_t now = rdtsc();
	if (run->overrun_interrupts == 0)
		run->deadline_tsc = run->frame.start_tsc + budget_tsc(aspect, cpu);
	if ((int64_t)(now - run->deadline_tsc) < 0)
		return;
	/* Twice, a budget apart: one late interrupt, or a burst of them right
	 * after it, may only mean this virtual CPU was not running for a while
	 * (a host under load), not that the advice spins; advice that spins is
	 * still there one budget later. */
	if (++run->overrun_interrupts < 2) {
		run->deadline_tsc = now + budget_tsc(aspect, cpu);
		return;
	}
	char reason[sizeof aspect->last_failure], where[48];
	describe_fault_site(aspect, frame->rip, where, sizeof where);
	snprintf(reason, sizeof reason, "ran past its budget of %lu us %s",
		 (unsigned long)(aspect->budget_ns / NSEC_PER_USEC), where);
	aspect_report_failure(aspect, reason);
	resume_at_abort(frame, run);
}

/* Chained in front of the scheduler's interrupt-exit hook: runs after every
 * outermost interrupt, the tick included. */
static void on_irq_exit(struct trap_frame *frame)
{
	check_overrun(frame);
	if (previous_exit_hook)
		previous_exit_hook(frame);
}

void linker_guard_init(void)
{
	static int done;
	if (__atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	trap_set_kernel_fault_handler(on_kernel_fault);
	uint64_t flags = irq_save();
	previous_exit_hook = irq_set_exit_hook(on_irq_exit);
	irq_restore(flags);
}
