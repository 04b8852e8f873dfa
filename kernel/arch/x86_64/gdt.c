/*
 * Per-CPU GDT and TSS.  Every CPU owns one struct arch_cpu (indexed by its
 * dense CPU index, reached later through this_cpu()->arch): seven GDT slots
 * (null, kernel code/data, user data/code, the 16-byte TSS descriptor), the
 * TSS, and the IST stacks for double fault, NMI and machine check, so those
 * three always start on a known-good stack even when the kernel stack is
 * exhausted.  The tables are static: they exist before any allocator, and a
 * CPU's tables are written only by that CPU during its own bring-up.
 *
 * Loading the GDT reloads CS (far return) and DS/ES/SS, but never FS or GS:
 * writing a selector to GS would zero the GS base that percpu_install set.
 */
#include "arch/x86_64/gdt.h"

#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/idt.h"
#include "cpu/percpu.h"
#include "panic/panic.h"

#define GDT_ENTRIES 7

struct tss {
	uint32_t reserved0;
	uint64_t rsp[3];
	uint64_t reserved1;
	uint64_t ist[7];
	uint64_t reserved2;
	uint16_t reserved3;
	uint16_t iomap_base;
} __attribute__((packed));
_Static_assert(sizeof(struct tss) == 104, "64-bit TSS layout");

struct arch_cpu {
	uint64_t gdt[GDT_ENTRIES];
	struct tss tss;
	uint8_t ist_stacks[TSS_IST_COUNT][TSS_IST_STACK_SIZE] __attribute__((aligned(16)));
};

struct descriptor_register {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

_Static_assert(offsetof(struct arch_cpu, tss) + offsetof(struct tss, rsp) ==
		   ARCH_CPU_TSS_RSP0_OFFSET,
	       "tss_set_kernel_stack_of writes TSS.RSP0");

static struct arch_cpu arch_cpus[MAX_CPUS] __attribute__((aligned(64)));

#define SEGMENT_KERNEL_CODE 0x00af9a000000ffffULL /* present, DPL 0, code, long mode */
#define SEGMENT_KERNEL_DATA 0x00cf92000000ffffULL
#define SEGMENT_USER_DATA   0x00cff2000000ffffULL /* DPL 3 */
#define SEGMENT_USER_CODE   0x00affa000000ffffULL /* DPL 3, long mode */
#define TSS_TYPE_AVAILABLE  0x89ULL               /* present, 64-bit TSS, not busy */

static void fill_tss_descriptor(uint64_t *slot, const struct tss *tss)
{
	uint64_t base = (uint64_t)tss;
	uint64_t limit = sizeof *tss - 1;

	slot[0] = (limit & 0xffff) | ((base & 0xffffff) << 16) | (TSS_TYPE_AVAILABLE << 40) |
		  (((limit >> 16) & 0xf) << 48) | (((base >> 24) & 0xff) << 56);
	slot[1] = base >> 32;
}

static void build_tables(struct arch_cpu *arch)
{
	arch->gdt[0] = 0;
	arch->gdt[GDT_KERNEL_CODE >> 3] = SEGMENT_KERNEL_CODE;
	arch->gdt[GDT_KERNEL_DATA >> 3] = SEGMENT_KERNEL_DATA;
	arch->gdt[GDT_USER_DATA >> 3] = SEGMENT_USER_DATA;
	arch->gdt[GDT_USER_CODE >> 3] = SEGMENT_USER_CODE;
	fill_tss_descriptor(&arch->gdt[GDT_TSS >> 3], &arch->tss);

	arch->tss = (struct tss){.iomap_base = sizeof(struct tss)}; /* no I/O bitmap */
	for (int i = 0; i < TSS_IST_COUNT; i++)
		arch->tss.ist[i] = (uint64_t)&arch->ist_stacks[i][TSS_IST_STACK_SIZE];
}

static void load_tables(struct arch_cpu *arch)
{
	struct descriptor_register gdtr = {sizeof arch->gdt - 1, (uint64_t)arch->gdt};

	__asm__ volatile("lgdt %0" : : "m"(gdtr) : "memory");
	__asm__ volatile("pushq %[code]\n\t"
			 "leaq 1f(%%rip), %%rax\n\t"
			 "pushq %%rax\n\t"
			 "lretq\n"
			 "1:\n\t"
			 "mov %w[data], %%ds\n\t"
			 "mov %w[data], %%es\n\t"
			 "mov %w[data], %%ss"
			 :
			 : [code] "i"(GDT_KERNEL_CODE), [data] "r"(GDT_KERNEL_DATA)
			 : "rax", "memory");
	__asm__ volatile("ltr %w0" : : "r"(GDT_TSS) : "memory");
}

void arch_cpu_tables_init(unsigned cpu_index)
{
	ASSERT(cpu_index < MAX_CPUS);
	ASSERT(this_cpu() == &cpus[cpu_index]);
	ASSERT(cpu_index == 0 || cpus[0].arch != NULL);

	struct arch_cpu *arch = &arch_cpus[cpu_index];
	build_tables(arch);
	load_tables(arch);
	cpus[cpu_index].arch = arch;
	if (cpu_index == 0)
		idt_init();
	idt_load();
}

void tss_set_kernel_stack(uint64_t rsp0)
{
	struct arch_cpu *arch = this_cpu()->arch;
	ASSERT(arch != NULL);
	arch->tss.rsp[0] = rsp0;
}

int tss_ist_stack_of(uint64_t address)
{
	struct arch_cpu *arch = this_cpu()->arch;
	if (!arch)
		return 0;
	for (int i = 0; i < TSS_IST_COUNT; i++) {
		uint64_t bottom = (uint64_t)arch->ist_stacks[i];
		if (address >= bottom && address < bottom + TSS_IST_STACK_SIZE)
			return i + 1;
	}
	return 0;
}
