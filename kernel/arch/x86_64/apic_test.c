/*
 * The lapic suite: which LINT pins of a CPU become NMI inputs.  An MADT local
 * NMI entry names one CPU by its ACPI processor UID (which need not equal its
 * APIC id), or every CPU; a CPU it does not name keeps the pin masked.  The
 * MADTs here are made up, so the rule is checked for CPUs QEMU never lists.
 */
#include "acpi/acpi.h"
#include "arch/x86_64/apic_internal.h"
#include "ktest/ktest.h"
#include "lib/string.h"

#define LVT_DELIVERY_MODE (7u << 8)

static struct acpi_madt madt; /* the cases run one at a time */

static void two_cpus_with_uids_unlike_their_apic_ids(void)
{
	memset(&madt, 0, sizeof madt);
	madt.cpu_count = 2;
	madt.cpus[0] = (struct acpi_cpu){.apic_id = 0, .uid = 7, .flags = ACPI_CPU_ENABLED};
	madt.cpus[1] = (struct acpi_cpu){.apic_id = 1, .uid = 0, .flags = ACPI_CPU_ENABLED};
}

static void add_local_nmi(uint32_t uid, uint8_t lint)
{
	madt.nmis[madt.nmi_count++] = (struct acpi_nmi){.kind = ACPI_NMI_LOCAL,
							.uid = uid,
							.lint = lint,
							.polarity = ACPI_POLARITY_HIGH,
							.trigger = ACPI_TRIGGER_EDGE};
}

static bool is_nmi(uint32_t setting)
{
	return (setting & LVT_DELIVERY_MODE) == LVT_NMI && !(setting & LVT_MASKED);
}

static void nmi_entry_applies_to_the_cpu_with_its_uid(struct ktest *t)
{
	two_cpus_with_uids_unlike_their_apic_ids();
	add_local_nmi(0, 1); /* UID 0: the CPU with APIC id 1 */
	EXPECT_TRUE(t, is_nmi(lapic_lint_setting(&madt, 1, 1)));
	EXPECT_EQ(t, lapic_lint_setting(&madt, 0, 1), LVT_MASKED);
	EXPECT_EQ(t, lapic_lint_setting(&madt, 1, 0), LVT_MASKED);
	EXPECT_EQ(t, lapic_lint_setting(&madt, 5, 1), LVT_MASKED); /* not listed */
}

static void nmi_entry_for_all_cpus_applies_to_each(struct ktest *t)
{
	two_cpus_with_uids_unlike_their_apic_ids();
	add_local_nmi(ACPI_NMI_ALL_CPUS, 1);
	EXPECT_TRUE(t, is_nmi(lapic_lint_setting(&madt, 0, 1)));
	EXPECT_TRUE(t, is_nmi(lapic_lint_setting(&madt, 1, 1)));
	EXPECT_EQ(t, lapic_lint_setting(&madt, 0, 0), LVT_MASKED);
}

static void no_madt_masks_both_pins(struct ktest *t)
{
	EXPECT_EQ(t, lapic_lint_setting(NULL, 0, 0), LVT_MASKED);
	EXPECT_EQ(t, lapic_lint_setting(NULL, 0, 1), LVT_MASKED);
}

KTEST_SUITE(lapic, KTEST_CASE(nmi_entry_applies_to_the_cpu_with_its_uid),
	    KTEST_CASE(nmi_entry_for_all_cpus_applies_to_each),
	    KTEST_CASE(no_madt_masks_both_pins));
