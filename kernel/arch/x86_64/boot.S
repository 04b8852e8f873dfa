/*
 * The first instructions: both multiboot headers, the 32-bit entry, the switch
 * to long mode and the jump to the higher half.
 *
 * Both loaders enter here in 32-bit protected mode with paging off, EAX holding
 * the loader's magic and EBX the physical address of its information block.
 * Boot page tables map the first 4 GiB three times: identity (to survive
 * turning paging on), at PHYSMAP_BASE, and the first 2 GiB at KERNEL_VMA.
 * mm replaces them once it knows the memory map.  Until then everything here
 * runs at physical addresses, so every symbol is written "sym - KERNEL_VMA".
 */
#include "arch/x86_64/layout.h"

#define MB1_MAGIC 0x1badb002
#define MB1_FLAGS 0x00010003 /* page-align modules, memory info, a.out kludge */
#define MB2_MAGIC 0xe85250d6
#define PHYS(sym) ((sym) - KERNEL_VMA)

	.section .boot.header, "a"
	.balign 4
mb1_header:
	.long MB1_MAGIC
	.long MB1_FLAGS
	.long -(MB1_MAGIC + MB1_FLAGS)
	.long PHYS(mb1_header)
	.long KERNEL_PHYS
	.long PHYS(__load_end)
	.long PHYS(__image_end)
	.long PHYS(_start)

	.balign 8
mb2_header:
	.long MB2_MAGIC
	.long 0
	.long mb2_header_end - mb2_header
	.long -(MB2_MAGIC + (mb2_header_end - mb2_header))
	/* entry address: the ELF entry is a higher-half address */
	.balign 8
	.word 3, 0
	.long 12
	.long PHYS(_start)
	/* framebuffer, optional, any mode: the console for UEFI machines */
	.balign 8
	.word 5, 1
	.long 20
	.long 0, 0, 32
	/* page-aligned modules (the initrd) */
	.balign 8
	.word 6, 0
	.long 8
	/* end */
	.balign 8
	.word 0, 0
	.long 8
mb2_header_end:

	.section .boot.text, "ax"
	.code32
	.global _start
_start:
	cli
	cld
	/* CPUID clobbers every register: park the loader's values in .data. */
	mov %eax, PHYS(boot_loader_magic)
	mov %ebx, PHYS(boot_loader_info)

	/* Zero .bss ourselves: not every loader promises to. */
	mov $PHYS(__bss_start), %edi
	mov $PHYS(__bss_end), %ecx
	sub %edi, %ecx
	shr $2, %ecx
	xor %eax, %eax
	rep stosl

	mov $PHYS(boot_stack_top), %esp

	call check_long_mode
	call build_boot_page_tables

	mov %cr4, %eax
	or $(1 << 5), %eax /* PAE */
	mov %eax, %cr4
	mov $PHYS(boot_pml4), %eax
	mov %eax, %cr3

	mov $0xc0000080, %ecx /* EFER */
	rdmsr
	or $(1 << 8), %eax /* LME */
	or boot_efer_nxe - KERNEL_VMA, %eax
	wrmsr

	mov %cr0, %eax
	or $0x80010001, %eax /* PG | WP | PE */
	mov %eax, %cr0

	lgdt PHYS(boot_gdtr)
	ljmp $0x08, $PHYS(long_mode_entry)

/* Long mode and, if present, NX; anything less cannot run this kernel. */
check_long_mode:
	pushfl
	pop %eax
	mov %eax, %ecx
	xor $(1 << 21), %eax /* can CPUID be used at all? */
	push %eax
	popfl
	pushfl
	pop %eax
	cmp %eax, %ecx
	je no_long_mode
	mov $0x80000000, %eax
	cpuid
	cmp $0x80000001, %eax
	jb no_long_mode
	mov $0x80000001, %eax
	cpuid
	test $(1 << 29), %edx
	jz no_long_mode
	test $(1 << 20), %edx
	jz 1f
	movl $(1 << 11), PHYS(boot_efer_nxe)
1:	ret

no_long_mode:
	mov $PHYS(no_long_mode_msg), %esi
1:	lodsb
	test %al, %al
	jz 2f
	mov $0x3f8, %dx
	outb %al, %dx
	jmp 1b
2:	hlt
	jmp 2b

/* 2 MiB pages over the first 4 GiB, reachable from the three windows. */
build_boot_page_tables:
	mov $PHYS(boot_pd), %edi
	xor %ecx, %ecx
1:	mov %ecx, %eax
	shl $21, %eax
	or $0x83, %eax /* present, writable, 2 MiB */
	mov %eax, (%edi, %ecx, 8)
	movl $0, 4(%edi, %ecx, 8)
	inc %ecx
	cmp $2048, %ecx
	jne 1b

	mov $PHYS(boot_pdpt_low), %edi
	xor %ecx, %ecx
2:	mov %ecx, %eax
	shl $12, %eax
	add $(PHYS(boot_pd) + 3), %eax
	mov %eax, (%edi, %ecx, 8)
	inc %ecx
	cmp $4, %ecx
	jne 2b

	movl $(PHYS(boot_pd) + 3), PHYS(boot_pdpt_high) + 510 * 8
	movl $(PHYS(boot_pd) + 4096 + 3), PHYS(boot_pdpt_high) + 511 * 8
	movl $(PHYS(boot_pdpt_low) + 3), PHYS(boot_pml4)
	movl $(PHYS(boot_pdpt_low) + 3), PHYS(boot_pml4) + 256 * 8
	movl $(PHYS(boot_pdpt_high) + 3), PHYS(boot_pml4) + 511 * 8
	ret

	.code64
long_mode_entry:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	xor %ax, %ax
	mov %ax, %fs
	mov %ax, %gs
	movabs $higher_half_entry, %rax
	jmp *%rax

	.text
higher_half_entry:
	movabs $boot_stack_top, %rsp
	mov boot_loader_magic(%rip), %edi
	mov boot_loader_info(%rip), %esi /* physical, zero-extended */
	xor %ebp, %ebp /* end of the frame-pointer chain */
	call kernel_entry
1:	cli
	hlt
	jmp 1b

	.section .rodata
no_long_mode_msg:
	.asciz "microScope: this CPU has no 64-bit long mode; halting.\r\n"

	.data
	.balign 8
boot_gdt:
	.quad 0
	.quad 0x00af9a000000ffff /* 0x08: 64-bit code */
	.quad 0x00cf92000000ffff /* 0x10: data */
boot_gdt_end:
boot_gdtr:
	.word boot_gdt_end - boot_gdt - 1
	.long PHYS(boot_gdt)
boot_efer_nxe:
	.long 0
boot_loader_magic:
	.long 0
boot_loader_info:
	.long 0

	.bss
	.balign 4096
	.global boot_pml4
boot_pml4:
	.skip 4096
boot_pdpt_low:
	.skip 4096
boot_pdpt_high:
	.skip 4096
boot_pd:
	.skip 4 * 4096
	.balign 16
	.global boot_stack_bottom, boot_stack_top
boot_stack_bottom:
	.skip BOOT_STACK_SIZE
boot_stack_top:
