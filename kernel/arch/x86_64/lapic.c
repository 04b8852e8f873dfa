/*
 * The local APIC in xAPIC mode: 4 KiB of registers at the same physical
 * address on every CPU, each CPU seeing its own.  The base is set once by the
 * boot CPU (from the MADT, else IA32_APIC_BASE) before any other CPU starts,
 * and only read afterwards.  Firmware that left x2APIC mode on is taken back
 * to xAPIC through the disabled state, the only transition the SDM allows.
 *
 * An interrupt command is two register writes (destination, then command); a
 * CPU does them with interrupts off so a handler sending its own IPI cannot
 * slip in between.  Registers are per CPU, so no lock is needed across CPUs.
 */
#include "arch/x86_64/apic.h"
#include "arch/x86_64/apic_internal.h"
#include "arch/x86_64/cpu.h"
#include "mm/mm.h"
#include "panic/panic.h"

#define APIC_BASE_ENABLE       (1ULL << 11)
#define APIC_BASE_X2APIC       (1ULL << 10)
#define APIC_BASE_ADDRESS_MASK 0x000ffffffffff000ULL

#define LAPIC_ID            0x020
#define LAPIC_TPR           0x080
#define LAPIC_EOI           0x0b0
#define LAPIC_SVR           0x0f0
#define LAPIC_ESR           0x280
#define LAPIC_ICR_LOW       0x300
#define LAPIC_ICR_HIGH      0x310
#define LAPIC_LVT_TIMER     0x320
#define LAPIC_LVT_LINT0     0x350
#define LAPIC_LVT_LINT1     0x360
#define LAPIC_LVT_ERROR     0x370
#define LAPIC_TIMER_INITIAL 0x380
#define LAPIC_TIMER_CURRENT 0x390
#define LAPIC_TIMER_DIVIDE  0x3e0

#define SVR_ENABLE         (1u << 8)
#define LVT_LEVEL          (1u << 15)
#define LVT_ACTIVE_LOW     (1u << 13)
#define LVT_TIMER_PERIODIC (1u << 17)
#define TIMER_DIVIDE_BY_16 0x3
#define ICR_FIXED          (0u << 8)
#define ICR_NMI            (4u << 8)
#define ICR_INIT           (5u << 8)
#define ICR_STARTUP        (6u << 8)
#define ICR_PENDING        (1u << 12)
#define ICR_ASSERT         (1u << 14)
#define ICR_LEVEL          (1u << 15)

_Static_assert(LAPIC_TIMER_DIVIDER == 16, "TIMER_DIVIDE_BY_16 encodes the divider");

static volatile uint32_t *lapic_registers;

static uint32_t lapic_read(uint32_t reg)
{
	return lapic_registers[reg / 4];
}

static void lapic_write(uint32_t reg, uint32_t value)
{
	lapic_registers[reg / 4] = value;
}

void lapic_set_base(uint64_t phys)
{
	lapic_registers = vm_map_mmio(phys, PAGE_SIZE);
	if (!lapic_registers)
		panic("apic: cannot map the local APIC at %#lx", phys);
}

uint32_t lapic_id(void)
{
	if (!lapic_registers) {
		uint32_t regs[4];
		cpuid(1, 0, regs);
		return regs[1] >> 24;
	}
	return lapic_read(LAPIC_ID) >> 24;
}

void lapic_eoi(void)
{
	lapic_write(LAPIC_EOI, 0);
}

/* Globally enables this CPU's LAPIC in xAPIC mode. */
static void enable_xapic_mode(void)
{
	uint64_t base = rdmsr(MSR_APIC_BASE);
	if (base & APIC_BASE_X2APIC) {
		wrmsr(MSR_APIC_BASE, base & ~(APIC_BASE_ENABLE | APIC_BASE_X2APIC));
		base &= ~(APIC_BASE_ENABLE | APIC_BASE_X2APIC);
	}
	wrmsr(MSR_APIC_BASE, base | APIC_BASE_ENABLE);
}

/* The ACPI processor UID of the CPU with apic_id, as the MADT lists it. */
static bool uid_of(const struct acpi_madt *madt, uint32_t apic_id, uint32_t *uid)
{
	for (unsigned i = 0; i < madt->cpu_count; i++) {
		if (madt->cpus[i].apic_id == apic_id) {
			*uid = madt->cpus[i].uid;
			return true;
		}
	}
	return false;
}

/* A local NMI entry names one CPU by its ACPI UID, or all of them. */
static bool nmi_is_for(const struct acpi_nmi *nmi, const struct acpi_madt *madt, uint32_t apic_id)
{
	uint32_t uid;
	if (nmi->uid == ACPI_NMI_ALL_CPUS)
		return true;
	return uid_of(madt, apic_id, &uid) && uid == nmi->uid;
}

uint32_t lapic_lint_setting(const struct acpi_madt *madt, uint32_t apic_id, uint8_t pin)
{
	for (unsigned i = 0; madt && i < madt->nmi_count; i++) {
		const struct acpi_nmi *nmi = &madt->nmis[i];
		if (nmi->kind != ACPI_NMI_LOCAL || nmi->lint != pin ||
		    !nmi_is_for(nmi, madt, apic_id))
			continue;
		return LVT_NMI | (nmi->polarity == ACPI_POLARITY_LOW ? LVT_ACTIVE_LOW : 0) |
		       (nmi->trigger == ACPI_TRIGGER_LEVEL ? LVT_LEVEL : 0);
	}
	return LVT_MASKED;
}

void lapic_enable(void)
{
	ASSERT(lapic_registers);
	enable_xapic_mode();
	const struct acpi_madt *madt = acpi_get_madt();
	lapic_write(LAPIC_TPR, 0);
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | APIC_VECTOR_TIMER);
	uint32_t apic_id = lapic_id();
	lapic_write(LAPIC_LVT_LINT0, lapic_lint_setting(madt, apic_id, 0));
	lapic_write(LAPIC_LVT_LINT1, lapic_lint_setting(madt, apic_id, 1));
	lapic_write(LAPIC_LVT_ERROR, APIC_VECTOR_ERROR);
	lapic_write(LAPIC_ESR, 0);
	lapic_write(LAPIC_ESR, 0);
	lapic_write(LAPIC_SVR, SVR_ENABLE | APIC_VECTOR_SPURIOUS);
	lapic_eoi();
}

uint32_t lapic_version(void)
{
	return lapic_read(0x030);
}

uint32_t lapic_read_error(void)
{
	lapic_write(LAPIC_ESR, 0);
	return lapic_read(LAPIC_ESR);
}

static void wait_for_delivery(void)
{
	while (lapic_read(LAPIC_ICR_LOW) & ICR_PENDING)
		cpu_relax();
}

static void send_command(uint32_t apic_id, uint32_t command)
{
	uint64_t flags = irq_save();
	wait_for_delivery();
	lapic_write(LAPIC_ICR_HIGH, apic_id << 24);
	lapic_write(LAPIC_ICR_LOW, command);
	wait_for_delivery();
	irq_restore(flags);
}

void lapic_send_ipi(uint32_t apic_id, uint8_t vector)
{
	send_command(apic_id, ICR_FIXED | ICR_ASSERT | vector);
}

void lapic_send_nmi(uint32_t apic_id)
{
	send_command(apic_id, ICR_NMI | ICR_ASSERT);
}

void lapic_send_init(uint32_t apic_id)
{
	send_command(apic_id, ICR_INIT | ICR_LEVEL | ICR_ASSERT);
	send_command(apic_id, ICR_INIT | ICR_LEVEL); /* de-assert, for older parts */
}

void lapic_send_startup(uint32_t apic_id, uint8_t page)
{
	send_command(apic_id, ICR_STARTUP | ICR_ASSERT | page);
}

void lapic_timer_start(uint32_t count, uint8_t vector, enum lapic_timer_mode mode)
{
	lapic_write(LAPIC_TIMER_INITIAL, 0);
	lapic_write(LAPIC_TIMER_DIVIDE, TIMER_DIVIDE_BY_16);
	lapic_write(LAPIC_LVT_TIMER,
		    vector | (mode == LAPIC_TIMER_PERIODIC ? LVT_TIMER_PERIODIC : 0));
	lapic_write(LAPIC_TIMER_INITIAL, count);
}

void lapic_timer_rearm(uint32_t count)
{
	lapic_write(LAPIC_TIMER_INITIAL, count);
}

void lapic_timer_stop(void)
{
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED | APIC_VECTOR_TIMER);
	lapic_write(LAPIC_TIMER_INITIAL, 0);
}

uint32_t lapic_timer_current(void)
{
	return lapic_read(LAPIC_TIMER_CURRENT);
}
