/*
 * The IDT: one table for all CPUs, written once on the boot CPU before any
 * other CPU starts and read-only afterwards.  Every gate is an interrupt gate
 * (interrupts stay off until a handler turns them on) to the stub isr.S made
 * for that vector; the stubs' addresses come from isr_stub_table.
 */
#include "arch/x86_64/idt.h"

#include <stdint.h>

#include "arch/x86_64/gdt.h"
#include "arch/x86_64/traps.h"

struct idt_gate {
	uint16_t offset_low;
	uint16_t selector;
	uint8_t ist;
	uint8_t type_attributes;
	uint16_t offset_middle;
	uint32_t offset_high;
	uint32_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct idt_gate) == 16, "64-bit IDT gate");

struct descriptor_register {
	uint16_t limit;
	uint64_t base;
} __attribute__((packed));

#define GATE_INTERRUPT_KERNEL 0x8e /* present, DPL 0, 64-bit interrupt gate */
#define GATE_INTERRUPT_USER   0xee /* present, DPL 3: "int $n" allowed from user mode */

extern const uint64_t isr_stub_table[IDT_VECTORS];
void syscall_int80_entry(void); /* syscall.S: system calls by "int $0x80" */

static struct idt_gate idt[IDT_VECTORS] __attribute__((aligned(16)));

static uint8_t ist_of(unsigned vector)
{
	switch (vector) {
	case TRAP_DOUBLE_FAULT: return TSS_IST_DOUBLE_FAULT;
	case TRAP_NMI: return TSS_IST_NMI;
	case TRAP_MACHINE_CHECK: return TSS_IST_MACHINE_CHECK;
	default: return 0;
	}
}

static uint8_t attributes_of(unsigned vector)
{
	if (vector == TRAP_BREAKPOINT || vector == TRAP_OVERFLOW || vector == IDT_SYSCALL_VECTOR)
		return GATE_INTERRUPT_USER;
	return GATE_INTERRUPT_KERNEL;
}

static void set_gate(unsigned vector, uint64_t handler)
{
	idt[vector] = (struct idt_gate){
	    .offset_low = handler & 0xffff,
	    .selector = GDT_KERNEL_CODE,
	    .ist = ist_of(vector),
	    .type_attributes = attributes_of(vector),
	    .offset_middle = (handler >> 16) & 0xffff,
	    .offset_high = handler >> 32,
	};
}

void idt_init(void)
{
	for (unsigned vector = 0; vector < IDT_VECTORS; vector++)
		set_gate(vector, isr_stub_table[vector]);
	set_gate(IDT_SYSCALL_VECTOR, (uint64_t)syscall_int80_entry);
}

void idt_load(void)
{
	struct descriptor_register idtr = {sizeof idt - 1, (uint64_t)idt};
	__asm__ volatile("lidt %0" : : "m"(idtr) : "memory");
}
