/*
 * Where the kernel sits in physical and virtual memory.  Shared by assembly,
 * the linker script and C, so it holds only plain constants.
 *
 * The kernel image is linked at KERNEL_VMA + its physical address (the top
 * 2 GiB, as -mcmodel=kernel requires).  All of physical memory is also mapped
 * at PHYSMAP_BASE so the kernel can reach any frame without a temporary
 * mapping.
 */
#ifndef ARCH_X86_64_LAYOUT_H
#define ARCH_X86_64_LAYOUT_H

#define KERNEL_VMA      0xffffffff80000000
#define KERNEL_PHYS     0x100000
#define PHYSMAP_BASE    0xffff800000000000
#define BOOT_STACK_SIZE 16384
#define PAGE_SIZE       4096

#endif
