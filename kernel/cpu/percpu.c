/*
 * The per-CPU areas themselves.  A static array keeps them usable before the
 * heap exists, which the boot CPU needs for printk's locks and the panic path.
 */
#include "cpu/percpu.h"

#include <stddef.h>

#include "arch/x86_64/cpu.h"

struct cpu cpus[MAX_CPUS];
unsigned cpu_count = 1;

_Static_assert(offsetof(struct cpu, self) == 0, "syscall entry uses %gs:0");
_Static_assert(offsetof(struct cpu, syscall_stack) == 8, "syscall entry uses %gs:8");
_Static_assert(offsetof(struct cpu, user_stack_saved) == 16, "syscall entry uses %gs:16");

void percpu_install(unsigned index, uint32_t apic_id)
{
	struct cpu *cpu = &cpus[index];

	cpu->self = cpu;
	cpu->id = index;
	cpu->apic_id = apic_id;
	wrmsr(MSR_GS_BASE, (uint64_t)cpu);
	wrmsr(MSR_KERNEL_GS_BASE, 0);
}
