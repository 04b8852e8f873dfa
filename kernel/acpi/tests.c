/*
 * In-kernel checks of what ACPI found on this machine: the tables are there
 * and intact, and the MADT describes the CPU running the test.
 */
#include "acpi/acpi.h"
#include "acpi/internal.h"
#include "arch/x86_64/apic.h"
#include "ktest/ktest.h"

static void madt_is_found(struct ktest *t)
{
	ASSERT_TRUE(t, acpi_find_table("APIC") != NULL);
	EXPECT_TRUE(t, acpi_get_madt() != NULL);
}

static void every_table_checksums(struct ktest *t)
{
	const struct acpi_tables *tables = acpi_get_tables();
	ASSERT_TRUE(t, tables != NULL);
	EXPECT_TRUE(t, tables->count > 0);
	for (unsigned i = 0; i < tables->count; i++)
		EXPECT_EQ(t, acpi_checksum(tables->tables[i].data, tables->tables[i].length), 0);
}

static void boot_cpu_is_listed(struct ktest *t)
{
	const struct acpi_madt *madt = acpi_get_madt();
	ASSERT_TRUE(t, madt != NULL);
	uint32_t id = lapic_id();
	bool found = false;
	for (unsigned i = 0; i < madt->cpu_count; i++)
		found |= madt->cpus[i].apic_id == id;
	EXPECT_TRUE(t, found);
}

static void an_ioapic_exists(struct ktest *t)
{
	const struct acpi_madt *madt = acpi_get_madt();
	ASSERT_TRUE(t, madt != NULL);
	EXPECT_TRUE(t, madt->ioapic_count >= 1);
	EXPECT_NE(t, madt->ioapics[0].address, 0);
}

static void fadt_is_found(struct ktest *t)
{
	EXPECT_TRUE(t, acpi_find_table("FACP") != NULL);
	EXPECT_TRUE(t, acpi_find_table("NONE") == NULL);
}

KTEST_SUITE(acpi, KTEST_CASE(madt_is_found), KTEST_CASE(every_table_checksums),
	    KTEST_CASE(boot_cpu_is_listed), KTEST_CASE(an_ioapic_exists),
	    KTEST_CASE(fadt_is_found));
