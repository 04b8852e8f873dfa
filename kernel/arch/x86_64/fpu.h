/*
 * FPU/SSE state of threads.  The kernel itself never touches x87 or SSE
 * registers (it is built with -mgeneral-regs-only), so this state belongs to
 * threads alone and only a context switch has to move it.
 *
 *     fpu_init_cpu();                     once per CPU, before the first switch
 *     fpu_init_state(&thread->fpu);       a new thread's clean state
 *     fpu_save(&prev->fpu); fpu_restore(&next->fpu);
 */
#ifndef ARCH_X86_64_FPU_H
#define ARCH_X86_64_FPU_H

#include <stdint.h>

#define FPU_AREA_SIZE     512
#define FPU_MXCSR_DEFAULT 0x1f80u /* all SIMD exceptions masked, round to nearest */

/* The FXSAVE image: 512 bytes, 16-byte aligned, as FXSAVE/FXRSTOR require. */
struct fpu_state {
	uint8_t bytes[FPU_AREA_SIZE];
} __attribute__((aligned(16)));

/* Enables x87 and SSE on the calling CPU (CR0.MP set, CR0.EM and CR0.TS
 * clear, CR4.OSFXSR and CR4.OSXMMEXCPT set) and, on the first call, records
 * the clean state that fpu_init_state copies.  Returns nothing; cannot fail
 * on x86_64, where SSE2 is architectural. */
void fpu_init_cpu(void);
/* Fills state with the clean state: x87 and MXCSR at their reset values,
 * every register zero. */
void fpu_init_state(struct fpu_state *state);
/* Saves this CPU's x87/SSE registers into state (FXSAVE64).  In line: every
 * switch runs it, and a call costs as much as the instruction. */
static inline void fpu_save(struct fpu_state *state)
{
	__asm__ volatile("fxsave64 %0" : "=m"(*state));
}

/* The SIMD floating-point exceptions this CPU's MXCSR holds raised and not
 * masked (flags 0-5 without their masks, bits 7-12): what a #XM was for. */
static inline uint32_t fpu_unmasked_simd_exceptions(void)
{
	uint32_t mxcsr;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	return mxcsr & ~(mxcsr >> 7) & 0x3f;
}

/* The same for x87 (#MF): the status word's flags without the control
 * word's masks. */
static inline uint32_t fpu_unmasked_x87_exceptions(void)
{
	uint16_t status, control;
	__asm__ volatile("fnstsw %0" : "=m"(status));
	__asm__ volatile("fnstcw %0" : "=m"(control));
	return (uint32_t)(status & ~control) & 0x3f;
}

/* Loads this CPU's x87/SSE registers from state (FXRSTOR64), in line. */
static inline void fpu_restore(const struct fpu_state *state)
{
	__asm__ volatile("fxrstor64 %0" : : "m"(*state));
}

#endif
