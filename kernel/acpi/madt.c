/*
 * The MADT ("APIC") and HPET tables, parsed into plain structs.
 *
 * The MADT is a list of variable-length entries.  An entry shorter than its
 * type's fixed part, or one that runs past the table, ends the parse with an
 * error: everything after it is unreliable.  Entries may be longer than this
 * parser knows (later ACPI revisions append fields); the extra is skipped.
 * Unknown types are counted and skipped.  CPUs that are neither enabled nor
 * online-capable are left out, and an APIC id listed twice (once as local
 * APIC, once as x2APIC) is kept once.
 */
#include "acpi/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "lib/unaligned.h"

#define MADT_ENTRIES_OFFSET 44
#define HPET_TABLE_LENGTH   56
#define GAS_SYSTEM_MEMORY   0

enum madt_type {
	MADT_LOCAL_APIC = 0,
	MADT_IOAPIC = 1,
	MADT_OVERRIDE = 2,
	MADT_NMI_SOURCE = 3,
	MADT_LOCAL_APIC_NMI = 4,
	MADT_LAPIC_ADDRESS = 5,
	MADT_LOCAL_X2APIC = 9,
	MADT_LOCAL_X2APIC_NMI = 10,
};

/* MPS INTI flags: polarity in bits 0-1, trigger mode in bits 2-3; "conforms
 * to the bus" (0) means ISA's active high, edge. */
static enum acpi_polarity inti_polarity(uint16_t flags)
{
	return (flags & 3) == 3 ? ACPI_POLARITY_LOW : ACPI_POLARITY_HIGH;
}

static enum acpi_trigger inti_trigger(uint16_t flags)
{
	return ((flags >> 2) & 3) == 3 ? ACPI_TRIGGER_LEVEL : ACPI_TRIGGER_EDGE;
}

static void add_cpu(struct acpi_madt *out, uint32_t apic_id, uint32_t uid, uint32_t flags)
{
	if (!(flags & (ACPI_CPU_ENABLED | ACPI_CPU_ONLINE_CAPABLE))) {
		out->disabled_cpus++;
		return;
	}
	for (unsigned i = 0; i < out->cpu_count; i++) {
		if (out->cpus[i].apic_id == apic_id)
			return;
	}
	if (out->cpu_count == ACPI_MAX_CPUS) {
		out->dropped++;
		return;
	}
	out->cpus[out->cpu_count++] = (struct acpi_cpu){apic_id, uid, flags};
}

static void add_ioapic(struct acpi_madt *out, const uint8_t *entry)
{
	if (out->ioapic_count == ACPI_MAX_IOAPICS) {
		out->dropped++;
		return;
	}
	out->ioapics[out->ioapic_count++] =
	    (struct acpi_ioapic){entry[2], read_le32(entry + 4), read_le32(entry + 8)};
}

static void add_override(struct acpi_madt *out, const uint8_t *entry)
{
	if (out->override_count == ACPI_MAX_OVERRIDES) {
		out->dropped++;
		return;
	}
	uint16_t flags = read_le16(entry + 8);
	out->overrides[out->override_count++] = (struct acpi_override){
	    entry[2], entry[3], read_le32(entry + 4), inti_polarity(flags), inti_trigger(flags)};
}

static void add_nmi(struct acpi_madt *out, struct acpi_nmi nmi)
{
	if (out->nmi_count == ACPI_MAX_NMIS) {
		out->dropped++;
		return;
	}
	out->nmis[out->nmi_count++] = nmi;
}

static struct acpi_nmi local_nmi(uint32_t uid, uint16_t flags, uint8_t lint)
{
	return (struct acpi_nmi){ACPI_NMI_LOCAL,     uid, lint, 0, inti_polarity(flags),
				 inti_trigger(flags)};
}

static struct acpi_nmi source_nmi(uint16_t flags, uint32_t gsi)
{
	return (struct acpi_nmi){ACPI_NMI_SOURCE,    0, 0, gsi, inti_polarity(flags),
				 inti_trigger(flags)};
}

/* The fixed size of each known entry type; 0 for types not parsed. */
static uint8_t entry_minimum_length(uint8_t type)
{
	switch (type) {
	case MADT_LOCAL_APIC: return 8;
	case MADT_IOAPIC: return 12;
	case MADT_OVERRIDE: return 10;
	case MADT_NMI_SOURCE: return 8;
	case MADT_LOCAL_APIC_NMI: return 6;
	case MADT_LAPIC_ADDRESS: return 12;
	case MADT_LOCAL_X2APIC: return 16;
	case MADT_LOCAL_X2APIC_NMI: return 12;
	default: return 0;
	}
}

/* entry holds at least entry_minimum_length(entry[0]) bytes. */
static void parse_entry(struct acpi_madt *out, const uint8_t *entry)
{
	switch (entry[0]) {
	case MADT_LOCAL_APIC: add_cpu(out, entry[3], entry[2], read_le32(entry + 4) & 3); break;
	case MADT_IOAPIC: add_ioapic(out, entry); break;
	case MADT_OVERRIDE: add_override(out, entry); break;
	case MADT_NMI_SOURCE:
		add_nmi(out, source_nmi(read_le16(entry + 2), read_le32(entry + 4)));
		break;
	case MADT_LOCAL_APIC_NMI:
		add_nmi(out, local_nmi(entry[2] == 0xff ? ACPI_NMI_ALL_CPUS : entry[2],
				       read_le16(entry + 3), entry[5]));
		break;
	case MADT_LAPIC_ADDRESS: out->lapic_address = read_le64(entry + 4); break;
	case MADT_LOCAL_X2APIC:
		add_cpu(out, read_le32(entry + 4), read_le32(entry + 12),
			(read_le32(entry + 8) & 3) | ACPI_CPU_X2APIC);
		break;
	case MADT_LOCAL_X2APIC_NMI:
		add_nmi(out, local_nmi(read_le32(entry + 4), read_le16(entry + 2), entry[8]));
		break;
	default: out->unknown++; break;
	}
}

int acpi_parse_madt(const void *table, uint32_t length, struct acpi_madt *out)
{
	const uint8_t *p = table;
	memset(out, 0, sizeof *out);
	if (length < MADT_ENTRIES_OFFSET || memcmp(p, "APIC", 4))
		return -EBADMSG;
	out->lapic_address = read_le32(p + 36);
	out->flags = read_le32(p + 40);
	for (uint32_t offset = MADT_ENTRIES_OFFSET; offset < length;) {
		if (length - offset < 2)
			return -EBADMSG;
		const uint8_t *entry = p + offset;
		uint8_t entry_length = entry[1];
		if (entry_length < 2 || entry_length < entry_minimum_length(entry[0]) ||
		    entry_length > length - offset)
			return -EBADMSG;
		parse_entry(out, entry);
		offset += entry_length;
	}
	return 0;
}

int acpi_parse_hpet(const void *table, uint32_t length, struct acpi_hpet *out)
{
	const uint8_t *p = table;
	memset(out, 0, sizeof *out);
	if (length < HPET_TABLE_LENGTH || memcmp(p, "HPET", 4))
		return -EBADMSG;
	if (p[40] != GAS_SYSTEM_MEMORY)
		return -ENOTSUP;
	out->address = read_le64(p + 44);
	out->number = p[52];
	out->minimum_tick = read_le16(p + 53);
	return out->address ? 0 : -EBADMSG;
}

struct acpi_irq_route acpi_route_isa_irq(const struct acpi_madt *madt, uint8_t irq)
{
	struct acpi_irq_route route = {irq, ACPI_POLARITY_HIGH, ACPI_TRIGGER_EDGE};
	for (unsigned i = 0; madt && i < madt->override_count; i++) {
		const struct acpi_override *o = &madt->overrides[i];
		if (o->bus == 0 && o->source_irq == irq)
			return (struct acpi_irq_route){o->gsi, o->polarity, o->trigger};
	}
	return route;
}
