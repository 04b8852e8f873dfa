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
 * links `direct` only.  A join point's meaning is decided from its name the
 * first time it is seen and kept in a small table by the name's address, so
 * the advice compares no text on the way (it runs on every join point of
 * every thread while linked).
 *
 *     ms_acct via librscfl links it; `aspect stats rscfl` shows its events.
 */
#include <microscope/aspect.h>

MS_ASPECT("rscfl", "per-activity accounting: time, interrupts, memory per subsystem");

#define PAGE_FAULT_VECTOR 14
#define FRAME_BYTES       4096
#define KIND_SLOTS        256 /* a power of two */

/* What a join point means here, decided from its name once. */
enum kind {
	KIND_CALL = 1,   /* a call of its module */
	KIND_SYSCALL,    /* "sys.*": a call, outermost, and a system call */
	KIND_SWITCH,     /* sched.switch */
	KIND_IRQ,        /* irq.entry */
	KIND_TRAP,       /* trap.entry */
	KIND_KMALLOC,    /* mm.kmalloc */
	KIND_FRAME,      /* mm.alloc_frame */
	KIND_KFREE,      /* mm.kfree */
	KIND_FREE_FRAME, /* mm.free_frame */
	KIND_MM,         /* another mm.* */
};

/* The kinds of join points seen, by the address of their name (which stays
 * the same while the aspect is linked): one word per slot, the name's address
 * shifted up with the kind in its low byte, so that a slot written by one CPU
 * while another reads it is either the old entry or the new one, never half
 * of each.  Kernel addresses have their top byte all ones: the shift loses
 * nothing that tells two names apart. */
static unsigned long kinds[KIND_SLOTS];

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

static __attribute__((noinline)) enum kind kind_of_name(const char *name)
{
	if (starts_with(name, "sys."))
		return KIND_SYSCALL;
	if (same(name, "sched.switch"))
		return KIND_SWITCH;
	if (same(name, "irq.entry"))
		return KIND_IRQ;
	if (same(name, "trap.entry"))
		return KIND_TRAP;
	if (!starts_with(name, "mm."))
		return KIND_CALL;
	if (same(name, "mm.kmalloc"))
		return KIND_KMALLOC;
	if (same(name, "mm.alloc_frame"))
		return KIND_FRAME;
	if (same(name, "mm.kfree"))
		return KIND_KFREE;
	if (same(name, "mm.free_frame"))
		return KIND_FREE_FRAME;
	return KIND_MM;
}

/* The kind of ctx's join point: a load and a compare once it was seen (in
 * line in both advice: it runs twice per event). */
static inline __attribute__((always_inline)) enum kind kind_of(struct ms_ctx *ctx)
{
	const char *name = ms_joinpoint_name(ctx);
	unsigned long key = (unsigned long)name << 8;
	unsigned long *slot = &kinds[((unsigned long)name >> 4) & (KIND_SLOTS - 1)];
	unsigned long entry = __atomic_load_n(slot, __ATOMIC_RELAXED);
	if ((entry & ~0xfful) == key)
		return (enum kind)(entry & 0xff);
	enum kind kind = kind_of_name(name);
	__atomic_store_n(slot, key | kind, __ATOMIC_RELAXED);
	return kind;
}

static void on_entry(struct ms_ctx *ctx)
{
	enum kind kind = kind_of(ctx);
	if (kind == KIND_SWITCH)
		ms_acct_switch(ctx);
	else
		ms_acct_enter(ctx, kind == KIND_SYSCALL ? MS_ACCT_OUTERMOST : 0);
}

/* An allocator call made by the allocator itself is part of the outer one. */
static void charge_memory(struct ms_ctx *ctx, enum kind kind)
{
	if (same(ms_acct_innermost(ctx), "mm"))
		return;
	if (kind == KIND_KMALLOC && ms_retval(ctx))
		ms_acct_charge(ctx, MS_ACCT_ALLOC, ms_arg(ctx, 0));
	else if (kind == KIND_FRAME && ms_retval(ctx))
		ms_acct_charge(ctx, MS_ACCT_ALLOC, FRAME_BYTES);
	else if (kind == KIND_KFREE && ms_arg(ctx, 0))
		ms_acct_charge(ctx, MS_ACCT_FREE, 0);
	else if (kind == KIND_FREE_FRAME)
		ms_acct_charge(ctx, MS_ACCT_FREE, FRAME_BYTES);
}

static void on_exit(struct ms_ctx *ctx)
{
	if (!ms_activity(ctx))
		return; /* no call was opened: not accounted */
	enum kind kind = kind_of(ctx);
	uint64_t ns = ms_acct_exit(ctx, kind == KIND_SYSCALL ? MS_ACCT_SYSCALL : 0);
	if (kind == KIND_IRQ)
		ms_acct_charge(ctx, MS_ACCT_INTERRUPT, ns);
	else if (kind == KIND_TRAP && ms_arg(ctx, 0) == PAGE_FAULT_VECTOR)
		ms_acct_charge(ctx, MS_ACCT_PAGE_FAULT, 0);
	else if (kind >= KIND_KMALLOC)
		charge_memory(ctx, kind);
}

MS_BEFORE("*", on_entry, 100);
MS_AFTER("*", on_exit, 100);
