/*
 * scribbler: misuses memory on purpose, one way per call of vfs.stat, to prove
 * that fault containment covers an aspect's data as well as its text (the
 * tests link it `direct` again after each containment):
 *   0  has the kernel write a program name over its ms_ctx (kernel memory)
 *   1  has the kernel write a device counter into the kernel's read-only data
 *   2  hands the ABI a made-up ms_ctx (answered with zeros, not a fault)
 *   3  writes into its own text (read-only)
 *   4  writes through a non-canonical pointer (a general protection fault)
 *   5  writes into the kernel's read-only data (a join point's name)
 *   6  reads through a kernel address nothing is mapped at
 *   7  memset over its ms_ctx (kernel memory)
 *   8  memcpy from a kernel address nothing is mapped at
 *   9  memcmp against a kernel address nothing is mapped at
 *  10  memmove within its own data, overlapping both ways (allowed: counted
 *      when the bytes come out right, then the next call goes on at 11)
 *  11  memcpy onto its own text (read-only: refused by the ABI's check)
 *  12  has the kernel write a program name just below its stack pointer,
 *      where the ABI function's own frame and return address will be
 * 0, 1, 7, 11 and 12 are refused by the ABI, the others but 2 and 10 caught by
 * the guard (in the aspect's text or in the ABI's string loops); each
 * unlinks the aspect and the kernel goes on.
 */
#include <microscope/aspect.h>

MS_ASPECT("scribbler", "writes outside its own data (for the tests)");

static volatile unsigned calls;
/* volatile: the compiler may not turn a bad access into a trap instruction. */
static volatile uint64_t non_canonical = 0x8000000000000000UL;
static volatile uint64_t unmapped_kernel = 0xffffffff00000000UL;
/* volatile: the calls stay calls into the ABI, not stores in line. */
static volatile size_t sixty_four = 64;
static char own[16];

/* memmove up and down within own[]: true when both give the right bytes. */
static int moves_right(void)
{
	static const char start[] = "abcdefgh", up[] = "aabcdefg", down[] = "bcdefghh";
	size_t n = sixty_four / 8; /* 8 */
	memcpy(own, start, n);
	memmove(own + 1, own, n - 1);
	int ok = memcmp(own, up, n) == 0;
	memcpy(own, start, n);
	memmove(own, own + 1, n - 1);
	return ok && memcmp(own, down, n) == 0;
}

static void misuse(unsigned how, struct ms_ctx *ctx)
{
	uint64_t value;
	switch (how) {
	case 0: ms_program_name(ctx, (char *)ctx, 64); break;
	case 1: ms_device_counter("timer", "ticks", (uint64_t *)ms_joinpoint_name(ctx)); break;
	case 2: {
		struct ms_ctx *made_up = (struct ms_ctx *)0x1000;
		if (ms_arg(made_up, 0) == 0 && ms_pid(made_up) == 0 && ms_entry_ns(made_up) == 0)
			ms_counter_add("made_up_ctx_answered", 1);
		break;
	}
	case 3: /* the address of this very code */
		__asm__ volatile("lea 0(%%rip), %0" : "=r"(value));
		*(volatile uint8_t *)value = 0xcc;
		break;
	case 4: *(volatile uint64_t *)non_canonical = 1; break;
	case 5: *(volatile char *)ms_joinpoint_name(ctx) = 'x'; break;
	case 6:
		value = *(volatile uint64_t *)unmapped_kernel;
		ms_counter_add("read", (int64_t)value);
		break;
	case 7: memset(ctx, 0, sixty_four); break;
	case 8: memcpy(own, (const void *)unmapped_kernel, sizeof own); break;
	case 9:
		ms_counter_add("compared", memcmp(own, (const void *)unmapped_kernel, sixty_four));
		break;
	case 10:
		if (moves_right())
			ms_counter_add("moved_right", 1);
		break;
	case 11:
		__asm__ volatile("lea 0(%%rip), %0" : "=r"(value));
		memcpy((void *)value, own, sixty_four / 8);
		break;
	case 12:
		__asm__ volatile("mov %%rsp, %0" : "=r"(value));
		ms_program_name(ctx, (char *)(value - sixty_four), sixty_four);
		break;
	default: break;
	}
	ms_counter_add("survived", 1);
}

static void on_stat(struct ms_ctx *ctx)
{
	misuse(calls++, ctx);
}

MS_BEFORE("vfs.stat", on_stat, 0);
