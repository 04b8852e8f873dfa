/*
 * Bringing up the interrupt controllers, and saying what the CPU is.
 *
 * apic_init runs once on the boot CPU after acpi_init: the 8259s are masked,
 * the LAPIC base comes from the MADT (or IA32_APIC_BASE without one), the
 * boot CPU's LAPIC is enabled and every IOAPIC pin masked.  Drivers then route
 * what they need.  Other CPUs call apic_init_cpu as they start.
 */
#include "arch/x86_64/apic.h"

#include "arch/x86_64/apic_internal.h"
#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "irq/irq.h"
#include "lib/string.h"
#include "panic/panic.h"

#define CPUID1_EDX_APIC              (1u << 9)
#define CPUID1_ECX_X2APIC            (1u << 21)
#define CPUID1_ECX_TSC_DEADLINE      (1u << 24)
#define CPUID7_EBX_FSGSBASE          (1u << 0)
#define CPUID_EXT1_EDX_PDPE1GB       (1u << 26)
#define CPUID_EXT7_EDX_INVARIANT_TSC (1u << 8)

static void cpu_vendor(char out[13])
{
	uint32_t regs[4];
	cpuid(0, 0, regs);
	memcpy(out, &regs[1], 4);
	memcpy(out + 4, &regs[3], 4);
	memcpy(out + 8, &regs[2], 4);
	out[12] = '\0';
}

/* Does CPUID leaf exist (basic or extended, each has its own maximum)? */
static bool cpuid_has_leaf(uint32_t leaf)
{
	uint32_t regs[4];
	cpuid(leaf & 0x80000000, 0, regs);
	return leaf <= regs[0];
}

/* Is bit set in register reg (0-3: EAX-EDX) of CPUID leaf, if it exists? */
static bool has_feature(uint32_t leaf, unsigned reg, uint32_t bit)
{
	uint32_t regs[4];
	if (!cpuid_has_leaf(leaf))
		return false;
	cpuid(leaf, 0, regs);
	return regs[reg] & bit;
}

/* The brand string, leading spaces dropped; "" when the CPU has none. */
static const char *cpu_brand(char out[49])
{
	out[0] = '\0';
	if (!cpuid_has_leaf(0x80000004))
		return out;
	for (uint32_t i = 0; i < 3; i++) {
		uint32_t regs[4];
		cpuid(0x80000002 + i, 0, regs);
		memcpy(out + 16 * i, regs, 16);
	}
	out[48] = '\0';
	const char *p = out;
	while (*p == ' ')
		p++;
	return p;
}

static const char *yes_no(bool value)
{
	return value ? "yes" : "no";
}

static void print_cpu_facts(void)
{
	char vendor[13], brand[49];
	uint32_t regs[4];
	cpu_vendor(vendor);
	cpuid(1, 0, regs);
	unsigned family = ((regs[0] >> 8) & 0xf) + ((regs[0] >> 20) & 0xff);
	unsigned model = ((regs[0] >> 4) & 0xf) | ((regs[0] >> 12) & 0xf0);
	pr_info("cpu: %s '%s', family %u model %u stepping %u\n", vendor, cpu_brand(brand), family,
		model, regs[0] & 0xf);
	pr_info("cpu: x2apic %s, tsc-deadline %s, invariant TSC %s, pdpe1gb %s, fsgsbase %s\n",
		yes_no(regs[2] & CPUID1_ECX_X2APIC), yes_no(regs[2] & CPUID1_ECX_TSC_DEADLINE),
		yes_no(has_feature(0x80000007, 3, CPUID_EXT7_EDX_INVARIANT_TSC)),
		yes_no(has_feature(0x80000001, 3, CPUID_EXT1_EDX_PDPE1GB)),
		yes_no(has_feature(7, 1, CPUID7_EBX_FSGSBASE)));
}

/* The MADT's LAPIC address, else the one the CPU reports. */
static uint64_t lapic_physical_base(const struct acpi_madt *madt)
{
	if (madt && madt->lapic_address)
		return madt->lapic_address;
	return rdmsr(MSR_APIC_BASE) & 0x000ffffffffff000ULL;
}

static void apic_eoi(unsigned vector)
{
	lapic_eoi();
}

static void lapic_error_interrupt(struct trap_frame *frame, void *ctx)
{
	pr_warn("apic: LAPIC error on CPU %u: ESR %#x\n", this_cpu_id(), lapic_read_error());
}

void apic_init(void)
{
	const struct acpi_madt *madt = acpi_get_madt();
	uint32_t regs[4];
	cpuid(1, 0, regs);
	print_cpu_facts();
	if (!(regs[3] & CPUID1_EDX_APIC))
		panic("apic: this CPU has no local APIC");
	pic_disable();
	uint64_t base = lapic_physical_base(madt);
	lapic_set_base(base);
	lapic_enable();
	this_cpu()->apic_id = lapic_id();
	irq_set_eoi(apic_eoi);
	if (irq_register(APIC_VECTOR_ERROR, lapic_error_interrupt, NULL, "lapic-error"))
		pr_warn("apic: vector %#x taken; LAPIC errors go unreported\n", APIC_VECTOR_ERROR);
	uint32_t version = lapic_version();
	pr_info("apic: LAPIC at %#lx, boot CPU APIC id %u, version %#x, %u LVT entries\n", base,
		lapic_id(), version & 0xff, ((version >> 16) & 0xff) + 1);
	if (madt)
		pr_info("apic: %u CPU(s) in the MADT\n", madt->cpu_count);
	ioapic_init();
}

void apic_init_cpu(void)
{
	lapic_enable();
	this_cpu()->apic_id = lapic_id();
}
