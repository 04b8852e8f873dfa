/*
 * ACPI: the firmware's description of the machine.  acpi_init finds the RSDP
 * (from the boot loader or by scanning the BIOS areas), walks the RSDT/XSDT,
 * keeps every table whose checksum and length hold (reporting the rest), and
 * parses the MADT (CPUs, IOAPICs, interrupt overrides, NMIs) and the HPET
 * table.  Tables are read in place and never written.
 *
 *     const struct acpi_madt *madt = acpi_get_madt();
 *     for (unsigned i = 0; madt && i < madt->cpu_count; i++)
 *             pr_info("cpu apic id %u\n", madt->cpus[i].apic_id);
 */
#ifndef KERNEL_ACPI_ACPI_H
#define KERNEL_ACPI_ACPI_H

#include <stdbool.h>
#include <stdint.h>

#define ACPI_MAX_TABLES    64
#define ACPI_MAX_REJECTED  16
#define ACPI_MAX_CPUS      256
#define ACPI_MAX_IOAPICS   16
#define ACPI_MAX_OVERRIDES 32
#define ACPI_MAX_NMIS      32

/* A table whose checksum and length were verified; data is length bytes. */
struct acpi_table {
	char signature[5];
	uint8_t revision;
	uint32_t length;
	uint64_t phys;
	const void *data;
};

/* A table that was listed but refused, and why (a negative error). */
struct acpi_rejected_table {
	char signature[5]; /* "????" when the header itself was unreadable */
	uint64_t phys;
	int error;
};

struct acpi_tables {
	uint8_t revision; /* of the RSDP: 0 = ACPI 1.0, 2 = ACPI 2.0+ */
	char oem_id[7];
	bool root_is_xsdt;
	uint64_t root_phys;
	unsigned count;
	struct acpi_table tables[ACPI_MAX_TABLES];
	unsigned rejected_count;
	struct acpi_rejected_table rejected[ACPI_MAX_REJECTED];
	unsigned dropped; /* valid or not, listed beyond the arrays' room */
};

enum acpi_polarity { ACPI_POLARITY_HIGH, ACPI_POLARITY_LOW };
enum acpi_trigger { ACPI_TRIGGER_EDGE, ACPI_TRIGGER_LEVEL };

enum acpi_cpu_flags {
	ACPI_CPU_ENABLED = 1u << 0,
	ACPI_CPU_ONLINE_CAPABLE = 1u << 1,
	ACPI_CPU_X2APIC = 1u << 8, /* listed by a local x2APIC entry */
};

struct acpi_cpu {
	uint32_t apic_id;
	uint32_t uid; /* ACPI processor UID, matched by NMI entries */
	uint32_t flags;
};

struct acpi_ioapic {
	uint32_t id;
	uint32_t address; /* physical base of its registers */
	uint32_t gsi_base;
};

/* An ISA interrupt that does not arrive on the GSI of the same number, or
 * not with the ISA default (edge, active high). */
struct acpi_override {
	uint8_t bus;
	uint8_t source_irq;
	uint32_t gsi;
	enum acpi_polarity polarity;
	enum acpi_trigger trigger;
};

enum acpi_nmi_kind { ACPI_NMI_LOCAL, ACPI_NMI_SOURCE };

#define ACPI_NMI_ALL_CPUS 0xffffffffu /* an NMI entry's uid (0xff in a short entry) */

/* ACPI_NMI_LOCAL: LINT pin lint of the CPU with uid (ACPI_NMI_ALL_CPUS: all).
 * ACPI_NMI_SOURCE: global system interrupt gsi is the NMI. */
struct acpi_nmi {
	enum acpi_nmi_kind kind;
	uint32_t uid;
	uint8_t lint;
	uint32_t gsi;
	enum acpi_polarity polarity;
	enum acpi_trigger trigger;
};

#define ACPI_MADT_PCAT_COMPAT 1u /* dual 8259s present: mask them */

struct acpi_madt {
	uint64_t lapic_address; /* after any address override entry */
	uint32_t flags;
	unsigned cpu_count;
	struct acpi_cpu cpus[ACPI_MAX_CPUS];
	unsigned ioapic_count;
	struct acpi_ioapic ioapics[ACPI_MAX_IOAPICS];
	unsigned override_count;
	struct acpi_override overrides[ACPI_MAX_OVERRIDES];
	unsigned nmi_count;
	struct acpi_nmi nmis[ACPI_MAX_NMIS];
	unsigned disabled_cpus; /* neither enabled nor online-capable: left out */
	unsigned dropped;       /* entries beyond the arrays' room */
	unsigned unknown;       /* entry types this parser does not read */
};

struct acpi_hpet {
	uint64_t address; /* physical base of the register block */
	uint8_t number;
	uint16_t minimum_tick;
};

/* Where an ISA IRQ arrives: GSI and electrical characteristics. */
struct acpi_irq_route {
	uint32_t gsi;
	enum acpi_polarity polarity;
	enum acpi_trigger trigger;
};

/* Finds and validates the tables, parses MADT and HPET.  Returns 0, -ENODEV
 * when no RSDP was found, or -EBADMSG when the root table is unusable; the
 * system then runs with defaults (boot CPU only, no IOAPIC, no HPET). */
int acpi_init(void);
/* The validated table with this 4-character signature, or NULL. */
const struct acpi_table *acpi_find_table(const char *signature);
/* All validated tables; NULL before acpi_init succeeded. */
const struct acpi_tables *acpi_get_tables(void);
/* The parsed MADT, or NULL when there is none or it was malformed. */
const struct acpi_madt *acpi_get_madt(void);
/* The parsed HPET table, or NULL when there is none or it was malformed. */
const struct acpi_hpet *acpi_get_hpet(void);
/* Where ISA irq arrives per the MADT's overrides (identity, edge, high
 * without one).  madt may be NULL. */
struct acpi_irq_route acpi_route_isa_irq(const struct acpi_madt *madt, uint8_t irq);

#endif
