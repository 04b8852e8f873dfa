/*
 * x87/SSE state for threads, saved eagerly: every context switch saves the
 * outgoing thread's registers and loads the incoming thread's, whether or not
 * either used them.  FXSAVE/FXRSTOR of 512 bytes costs a few hundred cycles,
 * small beside the rest of a switch, and eager saving needs no #NM trap, no
 * CR0.TS juggling and no per-CPU "owner of the FPU" that would have to follow
 * threads between CPUs.  A lazy scheme can be added later behind the same four
 * functions without touching the scheduler.
 *
 * The clean state is captured once, right after FNINIT and loading the default
 * MXCSR, with every data register zeroed, so a new thread starts as after a
 * processor reset.
 */
#include "arch/x86_64/fpu.h"

#include <stdbool.h>

#include "arch/x86_64/cpu.h"
#include "lib/string.h"

#define CR0_MP                  (1UL << 1)
#define CR0_EM                  (1UL << 2)
#define CR0_TS                  (1UL << 3)
#define CR0_NE                  (1UL << 5)
#define CR4_OSFXSR              (1UL << 9)
#define CR4_OSXMMEXCPT          (1UL << 10)
#define FXSAVE_REGISTERS_OFFSET 32 /* ST0-7 then XMM0-15 */
#define FXSAVE_REGISTERS_SIZE   384

static struct fpu_state clean_state;
static bool clean_state_ready;

void fpu_init_state(struct fpu_state *state)
{
	memcpy(state, &clean_state, sizeof *state);
}

void fpu_init_cpu(void)
{
	uint32_t mxcsr = FPU_MXCSR_DEFAULT;

	write_cr0((read_cr0() | CR0_MP | CR0_NE) & ~(CR0_EM | CR0_TS));
	write_cr4(read_cr4() | CR4_OSFXSR | CR4_OSXMMEXCPT);
	__asm__ volatile("fninit; ldmxcsr %0" : : "m"(mxcsr));
	if (!clean_state_ready) {
		fpu_save(&clean_state);
		/* FNINIT leaves the data registers alone: whatever the firmware
		 * left there must not leak into threads. */
		memset(clean_state.bytes + FXSAVE_REGISTERS_OFFSET, 0, FXSAVE_REGISTERS_SIZE);
		clean_state_ready = true;
	}
}
