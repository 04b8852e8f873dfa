/*
 * Where an application processor starts: 16-bit real mode at the page that
 * the STARTUP IPI names (below 1 MiB, CS = page << 8, IP = 0).  The bring-up
 * code copies [smp_trampoline_start, smp_trampoline_end) to that page and
 * fills the parameter block at its end (struct trampoline_params in smp.c).
 * The code is position-independent: it finds its own base from CS and
 * patches its two far-jump targets and its GDT pointer with it.
 *
 * Real mode → protected mode (flat 32-bit segments of the trampoline's GDT)
 * → long mode on the boot page tables (boot.S), which map the first 4 GiB
 * at 0, so the trampoline keeps running after paging is on, and the kernel
 * at KERNEL_VMA.  Then it jumps to smp_ap_start64 in the kernel's text.
 */
#include "arch/x86_64/layout.h"

#define REL(sym) ((sym) - smp_trampoline_start)
#define EFER_MSR 0xc0000080

	.section .rodata
	.balign 16
	.global smp_trampoline_start, smp_trampoline_end, smp_trampoline_params
	.code16
smp_trampoline_start:
	cli
	cld
	mov %cs, %ax
	mov %ax, %ds
	xor %ebx, %ebx
	mov %ax, %bx
	shl $4, %ebx /* EBX = physical base of this page, for the whole trip */
	lea REL(trampoline_gdt)(%ebx), %eax
	mov %eax, REL(trampoline_gdtr) + 2
	lea REL(protected_mode)(%ebx), %eax
	mov %eax, REL(far_jump_32)
	lea REL(long_mode)(%ebx), %eax
	mov %eax, REL(far_jump_64)
	lgdtl REL(trampoline_gdtr)
	mov %cr0, %eax
	or $1, %eax /* PE */
	mov %eax, %cr0
	ljmpl *REL(far_jump_32)

	.code32
protected_mode:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov %cr4, %eax
	or $(1 << 5), %eax /* PAE */
	mov %eax, %cr4
	mov REL(smp_trampoline_params)(%ebx), %eax /* boot_cr3 */
	mov %eax, %cr3
	mov $EFER_MSR, %ecx
	rdmsr
	or REL(smp_trampoline_params) + 4(%ebx), %eax /* LME, NXE as the boot CPU */
	wrmsr
	mov %cr0, %eax
	or $0x80010000, %eax /* PG | WP */
	mov %eax, %cr0
	ljmp *REL(far_jump_64)(%ebx)

	.code64
long_mode:
	mov %ebx, %ebx /* the upper halves are undefined after the mode switch */
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov REL(smp_trampoline_params) + 32(%rbx), %rdi /* cpu index */
	mov REL(smp_trampoline_params) + 16(%rbx), %rsi /* stack top */
	mov REL(smp_trampoline_params) + 24(%rbx), %rdx /* kernel CR3 */
	mov REL(smp_trampoline_params) + 8(%rbx), %rax  /* smp_ap_start64 */
	jmp *%rax

	.balign 8
trampoline_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff /* 0x08: 32-bit code */
	.quad 0x00cf92000000ffff /* 0x10: data */
	.quad 0x00af9a000000ffff /* 0x18: 64-bit code */
trampoline_gdt_end:
	.balign 8
trampoline_gdtr:
	.word trampoline_gdt_end - trampoline_gdt - 1
	.long 0 /* base: patched */
	.balign 8
far_jump_32:
	.long 0 /* offset: patched */
	.word 0x08
	.balign 8
far_jump_64:
	.long 0 /* offset: patched */
	.word 0x18
	.balign 8
smp_trampoline_params:
	.long 0 /* boot_cr3: physical address of boot_pml4 */
	.long 0 /* efer_bits */
	.quad 0 /* entry */
	.quad 0 /* stack_top */
	.quad 0 /* kernel_cr3 */
	.quad 0 /* cpu_index */
smp_trampoline_end:

/*
 * In the higher half, still on the boot tables: switch to the kernel's own
 * tables and the new CPU's stack, then C.  RDI = CPU index, RSI = stack top,
 * RDX = kernel CR3.
 */
	.text
	.global smp_ap_start64
	.type smp_ap_start64, @function
smp_ap_start64:
	mov %rdx, %cr3
	mov %rsi, %rsp
	xor %ebp, %ebp /* end of the frame-pointer chain */
	call smp_ap_main
1:	cli
	hlt
	jmp 1b
	.size smp_ap_start64, . - smp_ap_start64
