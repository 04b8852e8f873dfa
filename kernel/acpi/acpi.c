/*
 * ACPI in the kernel: where the RSDP comes from, how table memory is reached,
 * and the parsed results kept for the rest of the boot.
 *
 * The RSDP is the boot loader's copy when it gave one (multiboot2, the only
 * way on UEFI), else it is searched for the BIOS way: the first KiB of the
 * EBDA, then 0xE0000-0xFFFFF.  Tables in RAM are read through the physmap;
 * tables in memory the firmware kept for itself (not in the physmap) get a
 * permanent uncached mapping, since the parsed tables keep pointing into them.  acpi_init runs once, on the boot CPU,
 * before any other CPU starts; afterwards everything here is read-only, so
 * readers on any CPU need no lock.
 */
#include "acpi/acpi.h"

#include "acpi/internal.h"
#include "boot/bootinfo.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

#define BDA_EBDA_SEGMENT 0x40e
#define EBDA_SCAN_LENGTH 1024
#define BIOS_AREA_START  0xe0000
#define BIOS_AREA_LENGTH 0x20000

static struct acpi_tables tables;
static bool tables_loaded;
static struct acpi_madt madt;
static bool madt_valid;
static struct acpi_hpet hpet;
static bool hpet_valid;

/* The physmap alias when the range lies inside the physmap and every page of
 * it is mapped there (RAM), else a new permanent uncached mapping
 * (firmware-reserved memory).  Past the physmap's size, phys_to_virt would
 * point into the MMIO window, where a page may well be mapped, to a device. */
const void *acpi_map_physical(uint64_t phys, uint64_t length)
{
	if (!length || phys + length < phys)
		return NULL;
	if (phys + length > PHYSMAP_MAX_BYTES)
		return vm_map_mmio(phys, length);
	for (uint64_t page = phys & ~(uint64_t)(PAGE_SIZE - 1); page < phys + length;
	     page += PAGE_SIZE) {
		if (vm_translate(vm_kernel_space(), (uint64_t)phys_to_virt(page), NULL, NULL))
			return vm_map_mmio(phys, length);
	}
	return phys_to_virt(phys);
}

/* A valid RSDP on a 16-byte boundary of [phys, phys + length), or NULL. */
static const uint8_t *scan_area(uint64_t phys, uint64_t length, size_t *rsdp_length)
{
	const uint8_t *area = acpi_map_physical(phys, length);
	long offset = area ? acpi_scan_rsdp(area, length) : -ENOENT;
	if (offset < 0)
		return NULL;
	uint64_t remaining = length - (uint64_t)offset;
	*rsdp_length = remaining < ACPI_RSDP_V2_SIZE ? remaining : ACPI_RSDP_V2_SIZE;
	return area + offset;
}

/* The loader's copy, else a BIOS-area scan; returns NULL when neither has one. */
static const uint8_t *find_rsdp(size_t *length, const char **source)
{
	const struct boot_info *boot = bootinfo();
	if (boot->has_rsdp && !acpi_validate_rsdp(boot->rsdp, sizeof boot->rsdp)) {
		*length = sizeof boot->rsdp;
		*source = "boot loader";
		return boot->rsdp;
	}
	uint16_t segment = 0;
	const void *bda = acpi_map_physical(BDA_EBDA_SEGMENT, 2);
	if (bda)
		memcpy(&segment, bda, 2);
	uint64_t ebda = (uint64_t)segment << 4;
	const uint8_t *rsdp = NULL;
	if (ebda >= 0x80000 && ebda < 0xa0000)
		rsdp = scan_area(ebda, EBDA_SCAN_LENGTH, length);
	*source = "EBDA";
	if (!rsdp) {
		rsdp = scan_area(BIOS_AREA_START, BIOS_AREA_LENGTH, length);
		*source = "BIOS area";
	}
	return rsdp;
}

static void report_tables(const char *source)
{
	char names[ACPI_MAX_TABLES * 5 + 1];
	size_t used = 0;
	for (unsigned i = 0; i < tables.count; i++) {
		memcpy(names + used, tables.tables[i].signature, 4);
		names[used + 4] = ' ';
		used += 5;
	}
	names[used ? used - 1 : 0] = '\0';
	pr_info("acpi: RSDP rev %u from %s (OEM '%s'), %s at %#lx: %s\n", tables.revision, source,
		tables.oem_id, tables.root_is_xsdt ? "XSDT" : "RSDT", tables.root_phys, names);
	for (unsigned i = 0; i < tables.rejected_count; i++)
		pr_warn("acpi: table '%s' at %#lx rejected (%s)\n", tables.rejected[i].signature,
			tables.rejected[i].phys,
			tables.rejected[i].error == -EFAULT ? "not mappable"
							    : "bad length or checksum");
	if (tables.dropped)
		pr_warn("acpi: %u more table(s) ignored (no room)\n", tables.dropped);
}

static void parse_madt(void)
{
	const struct acpi_table *table = acpi_find_table("APIC");
	if (!table) {
		pr_warn("acpi: no MADT; only the boot CPU will run\n");
		return;
	}
	int error = acpi_parse_madt(table->data, table->length, &madt);
	if (error) {
		pr_err("acpi: MADT malformed (%d), ignored; only the boot CPU will run\n", error);
		return;
	}
	madt_valid = true;
	pr_info("acpi: MADT: %u CPU(s), %u IOAPIC(s), %u override(s), %u NMI(s), LAPIC at %#lx%s\n",
		madt.cpu_count, madt.ioapic_count, madt.override_count, madt.nmi_count,
		madt.lapic_address, madt.flags & ACPI_MADT_PCAT_COMPAT ? ", 8259s present" : "");
	for (unsigned i = 0; i < madt.ioapic_count; i++)
		pr_info("acpi: IOAPIC id %u at %#x, GSI base %u\n", madt.ioapics[i].id,
			madt.ioapics[i].address, madt.ioapics[i].gsi_base);
	if (madt.dropped || madt.disabled_cpus)
		pr_warn("acpi: MADT: %u entries ignored (no room), %u CPU(s) disabled\n",
			madt.dropped, madt.disabled_cpus);
}

static void parse_hpet(void)
{
	const struct acpi_table *table = acpi_find_table("HPET");
	if (!table)
		return;
	int error = acpi_parse_hpet(table->data, table->length, &hpet);
	if (error) {
		pr_warn("acpi: HPET table unusable (%d), ignored\n", error);
		return;
	}
	hpet_valid = true;
}

int acpi_init(void)
{
	size_t length = 0;
	const char *source = NULL;
	const uint8_t *rsdp = find_rsdp(&length, &source);
	if (!rsdp) {
		pr_warn("acpi: no RSDP found; running without ACPI\n");
		return -ENODEV;
	}
	int error = acpi_load_tables(rsdp, length, acpi_map_physical, &tables);
	if (error) {
		pr_err("acpi: root table unusable (%d); running without ACPI\n", error);
		return -EBADMSG;
	}
	tables_loaded = true;
	report_tables(source);
	parse_madt();
	parse_hpet();
	return 0;
}

const struct acpi_table *acpi_find_table(const char *signature)
{
	return tables_loaded ? acpi_lookup_table(&tables, signature, 0) : NULL;
}

const struct acpi_tables *acpi_get_tables(void)
{
	return tables_loaded ? &tables : NULL;
}

const struct acpi_madt *acpi_get_madt(void)
{
	return madt_valid ? &madt : NULL;
}

const struct acpi_hpet *acpi_get_hpet(void)
{
	return hpet_valid ? &hpet : NULL;
}
