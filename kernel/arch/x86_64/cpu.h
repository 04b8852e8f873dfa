/*
 * Thin wrappers over the x86_64 instructions the kernel needs by name: port
 * I/O, MSRs, control registers, interrupt flag, TSC, CPUID, a compare with
 * memory.  Nothing here keeps state; every function is one or two
 * instructions.
 */
#ifndef ARCH_X86_64_CPU_H
#define ARCH_X86_64_CPU_H

#include <stdbool.h>
#include <stdint.h>

#define MSR_EFER           0xc0000080
#define MSR_STAR           0xc0000081
#define MSR_LSTAR          0xc0000082
#define MSR_FMASK          0xc0000084
#define MSR_FS_BASE        0xc0000100
#define MSR_GS_BASE        0xc0000101
#define MSR_KERNEL_GS_BASE 0xc0000102
#define MSR_APIC_BASE      0x1b

#define RFLAGS_IF (1UL << 9)

/* *ptr == value as one compare with memory, for a 4- or 8-byte object (the
 * suffix is the object's size; value, immediate or register, is taken at that
 * width).  In C a volatile or atomic load followed by a test is a load and
 * then a compare, and a plain read the compiler may keep a register for: the
 * paths that only ask whether a word holds a value do it in place.  The asm
 * is a compiler barrier, as a volatile load is, and an x86 load an acquire. */
#define mem_eq(ptr, value)                                                                  \
	({                                                                                  \
		_Static_assert(sizeof(*(ptr)) == 4 || sizeof(*(ptr)) == 8,                  \
			       "a 4- or 8-byte object");                                    \
		__typeof__(__builtin_choose_expr(sizeof(*(ptr)) == 8, (uint64_t)0,          \
						 (uint32_t)0)) value_ = (uintptr_t)(value); \
		bool equal_;                                                                \
		__asm__ volatile("cmp%z2 %1, %2"                                            \
				 : "=@ccz"(equal_)                                          \
				 : "er"(value_), "m"(*(ptr))                                \
				 : "memory");                                               \
		equal_;                                                                     \
	})

static inline void outb(uint16_t port, uint8_t value)
{
	__asm__ volatile("outb %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint8_t inb(uint16_t port)
{
	uint8_t value;
	__asm__ volatile("inb %1, %0" : "=a"(value) : "Nd"(port));
	return value;
}

static inline void outw(uint16_t port, uint16_t value)
{
	__asm__ volatile("outw %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint16_t inw(uint16_t port)
{
	uint16_t value;
	__asm__ volatile("inw %1, %0" : "=a"(value) : "Nd"(port));
	return value;
}

static inline void outl(uint16_t port, uint32_t value)
{
	__asm__ volatile("outl %0, %1" : : "a"(value), "Nd"(port));
}

static inline uint32_t inl(uint16_t port)
{
	uint32_t value;
	__asm__ volatile("inl %1, %0" : "=a"(value) : "Nd"(port));
	return value;
}

static inline uint64_t rdmsr(uint32_t msr)
{
	uint32_t low, high;
	__asm__ volatile("rdmsr" : "=a"(low), "=d"(high) : "c"(msr));
	return ((uint64_t)high << 32) | low;
}

static inline void wrmsr(uint32_t msr, uint64_t value)
{
	__asm__ volatile("wrmsr" : : "c"(msr), "a"((uint32_t)value), "d"((uint32_t)(value >> 32)));
}

/* The halves are joined in the asm: RDTSC zeroes the upper halves of both
 * registers, which the compiler, joining them in C, does once more. */
static inline uint64_t rdtsc(void)
{
	uint64_t tsc;
	__asm__ volatile("rdtsc\n\tshl $32, %%rdx\n\tor %%rdx, %0" : "=a"(tsc) : : "rdx");
	return tsc;
}

static inline void cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4])
{
	__asm__ volatile("cpuid"
			 : "=a"(regs[0]), "=b"(regs[1]), "=c"(regs[2]), "=d"(regs[3])
			 : "a"(leaf), "c"(subleaf));
}

static inline uint64_t read_cr0(void)
{
	uint64_t value;
	__asm__ volatile("mov %%cr0, %0" : "=r"(value));
	return value;
}

static inline void write_cr0(uint64_t value)
{
	__asm__ volatile("mov %0, %%cr0" : : "r"(value) : "memory");
}

static inline uint64_t read_cr2(void)
{
	uint64_t value;
	__asm__ volatile("mov %%cr2, %0" : "=r"(value));
	return value;
}

static inline uint64_t read_cr3(void)
{
	uint64_t value;
	__asm__ volatile("mov %%cr3, %0" : "=r"(value));
	return value;
}

static inline void write_cr3(uint64_t value)
{
	__asm__ volatile("mov %0, %%cr3" : : "r"(value) : "memory");
}

/* DR6, the debug status: which condition raised a #DB (BS, bit 14: a
 * single step).  The CPU never clears it; DR6_CLEAR is its quiet value. */
#define DR6_SINGLE_STEP (1UL << 14)
#define DR6_CLEAR       0xffff0ff0UL

static inline uint64_t read_dr6(void)
{
	uint64_t value;
	__asm__ volatile("mov %%dr6, %0" : "=r"(value));
	return value;
}

static inline void write_dr6(uint64_t value)
{
	__asm__ volatile("mov %0, %%dr6" : : "r"(value));
}

static inline uint64_t read_cr4(void)
{
	uint64_t value;
	__asm__ volatile("mov %%cr4, %0" : "=r"(value));
	return value;
}

static inline void write_cr4(uint64_t value)
{
	__asm__ volatile("mov %0, %%cr4" : : "r"(value) : "memory");
}

static inline void invlpg(uint64_t address)
{
	__asm__ volatile("invlpg (%0)" : : "r"(address) : "memory");
}

static inline uint64_t read_rflags(void)
{
	uint64_t flags;
	__asm__ volatile("pushfq; popq %0" : "=r"(flags));
	return flags;
}

static inline void irq_enable(void)
{
	__asm__ volatile("sti" : : : "memory");
}

static inline void irq_disable(void)
{
	__asm__ volatile("cli" : : : "memory");
}

static inline bool irq_enabled(void)
{
	return read_rflags() & RFLAGS_IF;
}

/* Disables interrupts and returns whether they were on, for irq_restore. */
static inline uint64_t irq_save(void)
{
	uint64_t flags = read_rflags();
	irq_disable();
	return flags;
}

static inline void irq_restore(uint64_t flags)
{
	if (flags & RFLAGS_IF)
		irq_enable();
}

static inline void cpu_relax(void)
{
	__asm__ volatile("pause" : : : "memory");
}

static inline void cpu_halt(void)
{
	__asm__ volatile("hlt" : : : "memory");
}

static inline uint64_t read_frame_pointer(void)
{
	uint64_t rbp;
	__asm__ volatile("mov %%rbp, %0" : "=r"(rbp));
	return rbp;
}

#endif
