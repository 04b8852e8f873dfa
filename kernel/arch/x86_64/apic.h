/*
 * The interrupt controllers: the legacy 8259 pair (remapped and masked for
 * good), each CPU's local APIC (xAPIC, memory-mapped: end of interrupt, IPIs,
 * INIT/STARTUP for SMP bring-up, the timer) and the IOAPICs, which route a
 * global system interrupt (GSI) to a vector on a CPU.
 *
 *     apic_init();                                  // boot CPU, once
 *     ioapic_route_isa_irq(4, vector, lapic_id(), &gsi);  // COM1 → vector, here
 *     lapic_send_ipi(target_apic_id, APIC_VECTOR_RESCHEDULE);
 */
#ifndef ARCH_X86_64_APIC_H
#define ARCH_X86_64_APIC_H

#include <stdbool.h>
#include <stdint.h>

#include "acpi/acpi.h"

/* Vector plan (kernel/irq/irq.h hands out device vectors 32-239).  The 8259s
 * are remapped over 0x20-0x2f but masked, and LINT0 is masked, so nothing
 * arrives there.  The LAPIC's own vectors are fixed, from the system range
 * 240-254, plus the spurious vector 0xff. */
#define APIC_VECTOR_PIC_BASE   0x20
#define APIC_VECTOR_TIMER      0xf0
#define APIC_VECTOR_RESCHEDULE 0xf1 /* for the scheduler's cross-CPU wake-ups */
#define APIC_VECTOR_CALL       0xf2 /* for cross-CPU function calls */
#define APIC_VECTOR_ERROR      0xfe
#define APIC_VECTOR_SPURIOUS   0xff

/* The LAPIC timer counts the bus clock divided by this. */
#define LAPIC_TIMER_DIVIDER 16

enum lapic_timer_mode { LAPIC_TIMER_ONESHOT, LAPIC_TIMER_PERIODIC };

/* Boot CPU: masks the 8259s, enables this LAPIC, masks every IOAPIC pin and
 * prints the CPU and interrupt-controller facts.  Panics when the CPU has no
 * APIC.  Call after acpi_init. */
void apic_init(void);
/* Another CPU, at start-up: enables its LAPIC the way apic_init did the
 * boot CPU's. */
void apic_init_cpu(void);

/* Remaps the 8259s to APIC_VECTOR_PIC_BASE and masks all 16 lines. */
void pic_disable(void);

/* This CPU's APIC id (CPUID's initial id before the LAPIC is mapped). */
uint32_t lapic_id(void);
/* Signals end of interrupt to this CPU's LAPIC. */
void lapic_eoi(void);
/* Sends a fixed interrupt with vector to the CPU with apic_id. */
void lapic_send_ipi(uint32_t apic_id, uint8_t vector);
/* An NMI to the CPU with apic_id (its own included). */
void lapic_send_nmi(uint32_t apic_id);
/* INIT to apic_id (the first step of starting an application processor). */
void lapic_send_init(uint32_t apic_id);
/* STARTUP to apic_id: it begins in real mode at physical page * 4096 (the
 * page must lie below 1 MiB). */
void lapic_send_startup(uint32_t apic_id, uint8_t page);
/* Starts this CPU's timer: count ticks of bus clock / LAPIC_TIMER_DIVIDER,
 * then interrupt on vector (and reload, when periodic).  count 0 stops it. */
void lapic_timer_start(uint32_t count, uint8_t vector, enum lapic_timer_mode mode);
/* Counts down from count again, in the mode lapic_timer_start set (a
 * one-shot timer fires once more, count ticks from now). */
void lapic_timer_rearm(uint32_t count);
/* Stops this CPU's timer and masks its interrupt. */
void lapic_timer_stop(void);
/* The timer's current count (counts down to 0). */
uint32_t lapic_timer_current(void);

/* Routes gsi to vector on the CPU with apic_id, with the given electrical
 * characteristics, masked.  Returns 0, -ENODEV when no IOAPIC serves gsi, or
 * -EINVAL for a vector below 32 (the exceptions') or the spurious vector. */
int ioapic_route_gsi(uint32_t gsi, uint8_t vector, uint32_t apic_id, enum acpi_polarity polarity,
		     enum acpi_trigger trigger);
/* Routes ISA irq (0-15) following the MADT's overrides, masked.  Returns as
 * ioapic_route_gsi; *gsi_out (if not NULL) receives the GSI it arrives on. */
int ioapic_route_isa_irq(uint8_t irq, uint8_t vector, uint32_t apic_id, uint32_t *gsi_out);
/* Masks or unmasks gsi.  Returns 0 or -ENODEV when no IOAPIC serves it. */
int ioapic_mask_gsi(uint32_t gsi);
int ioapic_unmask_gsi(uint32_t gsi);
/* Masks every pin of every IOAPIC the MADT lists, and prints them. */
void ioapic_init(void);

#endif
