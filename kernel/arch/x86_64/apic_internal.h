/*
 * Shared between the APIC sources of arch/x86_64 (apic.c, lapic.c, ioapic.c)
 * and nothing else.
 */
#ifndef ARCH_X86_64_APIC_INTERNAL_H
#define ARCH_X86_64_APIC_INTERNAL_H

#include <stdint.h>

/* Maps the LAPIC registers at phys for every CPU.  Boot CPU, once. */
void lapic_set_base(uint64_t phys);
/* Enables this CPU's LAPIC: spurious and error vectors, LINT pins per the
 * MADT's NMI entries, timer masked. */
void lapic_enable(void);
/* The version register: version in bits 0-7, last LVT index in bits 16-23. */
uint32_t lapic_version(void);

/* Latches and returns this LAPIC's error status (ESR), clearing it. */
uint32_t lapic_read_error(void);

#endif
