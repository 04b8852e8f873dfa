/*
 * In-kernel checks of what ACPI found on this machine: the tables are there
 * and intact, and the MADT describes the CPU running the test.
 */
#include "acpi/acpi.h"
#include "acpi/internal.h"
#include "arch/x86_64/apic.h"
#include "ktest/ktest.h"
#include "mm/mm.h"

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

/* An address past the physmap's size is mapped, not given the physmap alias:
 * that alias would land in the MMIO window, here on a page mapped to the
 * local APIC. */
static void address_past_the_physmap_is_mapped(struct ktest *t)
{
	const uint8_t *lapic = vm_map_mmio(0xfee00000, PAGE_SIZE);
	ASSERT_TRUE(t, lapic != NULL);
	uint64_t alias_phys = (uint64_t)lapic - PHYSMAP_BASE;
	ASSERT_TRUE(t, alias_phys >= PHYSMAP_MAX_BYTES);
	const void *mapped = acpi_map_physical(alias_phys, 16);
	EXPECT_TRUE(t, mapped != NULL);
	EXPECT_TRUE(t, mapped != (const void *)lapic);
	EXPECT_TRUE(t, acpi_map_physical(0x1000, 16) == phys_to_virt(0x1000));
}

KTEST_SUITE(acpi, KTEST_CASE(madt_is_found), KTEST_CASE(every_table_checksums),
	    KTEST_CASE(boot_cpu_is_listed), KTEST_CASE(an_ioapic_exists), KTEST_CASE(fadt_is_found),
	    KTEST_CASE(address_past_the_physmap_is_mapped));
