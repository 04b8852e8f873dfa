/*
 * rscfl: per-activity accounting (Resourceful), the measuring policy.  The
 * kernel links it `direct` when the first activity starts and unlinks it
 * when the last one stops (kernel/acct/weave.c), so accounting off costs the
 * join points' NOPs.  The kernel keeps who is accounted and their results
 * pages behind the ms_acct_* ABI; this file decides what each join point
 * means for an activity:
 *   - every join point is a call of its module (the subsystem), timed from
 *     before to after; a system call ("sys.*") is a thread's outermost call
 *     and also counts as a system call;
 *   - sched.switch is time off the CPU, not a call;
 *   - irq.entry is an interrupt taken while the thread ran (its handler's
 *     time is irq_ns, and the "irq" subsystem's);
 *   - trap.entry with vector 14 is a page fault;
 *   - mm.kmalloc / mm.alloc_frame that succeed are allocations of their size
 *     (a frame is 4096 bytes), mm.kfree / mm.free_frame frees (kfree's size
 *     is not known at its join point: 0 bytes); calls the allocator makes
 *     inside itself (a cache refilled from frames) are not counted again.
 * Results are written synchronously into the owners' pages, so this aspect
 * links `direct` only.
 *
 *     ms_acct via librscfl links it; `aspect stats rscfl` shows its events.
 */
#include <microscope/aspect.h>

MS_ASPECT("rscfl", "per-activity accounting: time, interrupts, memory per subsystem");

#define PAGE_FAULT_VECTOR 14
#define FRAME_BYTES       4096

static int same(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

static int starts_with(const char *text, const char *prefix)
{
	while (*prefix && *text == *prefix) {
		text++;
		prefix++;
	}
	return *prefix == '\0';
}

static void on_entry(struct ms_ctx *ctx)
{
	const char *name = ms_joinpoint_name(ctx);
	if (same(name, "sched.switch")) {
		ms_acct_switch(ctx);
		return;
	}
	ms_acct_enter(ctx, starts_with(name, "sys.") ? MS_ACCT_OUTERMOST : 0);
}

/* An allocator call made by the allocator itself is part of the outer one. */
static void charge_memory(struct ms_ctx *ctx, const char *name)
{
	if (same(ms_acct_innermost(ctx), "mm"))
		return;
	if (same(name, "mm.kmalloc") && ms_retval(ctx))
		ms_acct_charge(ctx, MS_ACCT_ALLOC, ms_arg(ctx, 0));
	else if (same(name, "mm.alloc_frame") && ms_retval(ctx))
		ms_acct_charge(ctx, MS_ACCT_ALLOC, FRAME_BYTES);
	else if (same(name, "mm.kfree") && ms_arg(ctx, 0))
		ms_acct_charge(ctx, MS_ACCT_FREE, 0);
	else if (same(name, "mm.free_frame"))
		ms_acct_charge(ctx, MS_ACCT_FREE, FRAME_BYTES);
}

static void on_exit(struct ms_ctx *ctx)
{
	if (!ms_activity(ctx))
		return; /* no call was opened: not accounted */
	const char *name = ms_joinpoint_name(ctx);
	uint64_t ns = ms_acct_exit(ctx, starts_with(name, "sys.") ? MS_ACCT_SYSCALL : 0);
	if (same(name, "irq.entry"))
		ms_acct_charge(ctx, MS_ACCT_INTERRUPT, ns);
	else if (same(name, "trap.entry") && ms_arg(ctx, 0) == PAGE_FAULT_VECTOR)
		ms_acct_charge(ctx, MS_ACCT_PAGE_FAULT, 0);
	else if (starts_with(name, "mm."))
		charge_memory(ctx, name);
}

MS_BEFORE("*", on_entry, 100);
MS_AFTER("*", on_exit, 100);
