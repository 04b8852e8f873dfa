/*
 * Shared between the APIC sources of arch/x86_64 (apic.c, lapic.c, ioapic.c)
 * and nothing else.
 */
#ifndef ARCH_X86_64_APIC_INTERNAL_H
#define ARCH_X86_64_APIC_INTERNAL_H

#include <stdint.h>

struct acpi_madt;

#define LVT_MASKED (1u << 16)
#define LVT_NMI    (4u << 8) /* delivery mode NMI */

/* Maps the LAPIC registers at phys for every CPU.  Boot CPU, once. */
void lapic_set_base(uint64_t phys);
/* Enables this CPU's LAPIC: spurious and error vectors, LINT pins per the
 * MADT's NMI entries, timer masked. */
void lapic_enable(void);
/* The LVT value for LINT pin (0 or 1) of the CPU with apic_id: NMI (with the
 * entry's polarity and trigger) when a local NMI entry of the MADT names
 * that CPU's ACPI processor UID or all CPUs, else masked. */
uint32_t lapic_lint_setting(const struct acpi_madt *madt, uint32_t apic_id, uint8_t pin);
/* The version register: version in bits 0-7, last LVT index in bits 16-23. */
uint32_t lapic_version(void);

/* Latches and returns this LAPIC's error status (ESR), clearing it. */
uint32_t lapic_read_error(void);

#endif
