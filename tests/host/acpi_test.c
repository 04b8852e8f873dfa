// host-test-sources: kernel/acpi/tables.c kernel/acpi/madt.c
/*
 * The ACPI parsers (kernel/acpi/tables.c, madt.c) on made-up firmware: a
 * small "physical memory" holding an RSDP, RSDT/XSDT and tables, some of them
 * corrupt (bad checksum, length past the end of memory, too short, address 0),
 * and MADTs with every entry type, truncated and malformed entries.  Every
 * table handed to a parser is a heap block of exactly its length, so the
 * sanitizers catch any read past it.  Prints KTAP; exits non-zero on failure.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acpi/internal.h"
#include "lib/errno.h"

static int failures;
static int case_failures;

#define EXPECT(cond)                                                                     \
	do {                                                                             \
		if (!(cond)) {                                                           \
			printf("    # %s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
			case_failures++;                                                 \
		}                                                                        \
	} while (0)

/* ---- Building tables ------------------------------------------------------ */

struct table {
	uint8_t bytes[1024];
	size_t length;
};

static void put(struct table *t, const void *data, size_t length)
{
	memcpy(t->bytes + t->length, data, length);
	t->length += length;
}

static void put8(struct table *t, uint8_t v)
{
	put(t, &v, 1);
}

static void put16(struct table *t, uint16_t v)
{
	put(t, &v, 2);
}

static void put32(struct table *t, uint32_t v)
{
	put(t, &v, 4);
}

static void put64(struct table *t, uint64_t v)
{
	put(t, &v, 8);
}

static uint8_t sum(const uint8_t *p, size_t length)
{
	uint8_t s = 0;
	while (length--)
		s += *p++;
	return s;
}

static void begin(struct table *t, const char *signature)
{
	memset(t, 0, sizeof *t);
	put(t, signature, 4);
	put32(t, 0); /* length, set by finish */
	put8(t, 1);  /* revision */
	put8(t, 0);  /* checksum, set by finish */
	put(t, "MSCOPE", 6);
	put(t, "TESTTBL ", 8);
	put32(t, 1);
	put32(t, 0);
	put32(t, 1);
}

static void finish(struct table *t)
{
	uint32_t length = (uint32_t)t->length;
	memcpy(t->bytes + 4, &length, 4);
	t->bytes[9] = 0;
	t->bytes[9] = (uint8_t)-sum(t->bytes, t->length);
}

/* An exact-size heap copy: reading past it is a sanitizer error. */
static void *exact_copy(const struct table *t)
{
	void *p = malloc(t->length);
	memcpy(p, t->bytes, t->length);
	return p;
}

static void make_rsdp(uint8_t rsdp[36], uint8_t revision, uint32_t rsdt, uint64_t xsdt)
{
	memset(rsdp, 0, 36);
	memcpy(rsdp, "RSD PTR ", 8);
	memcpy(rsdp + 9, "MSCOPE", 6);
	rsdp[15] = revision;
	memcpy(rsdp + 16, &rsdt, 4);
	rsdp[8] = (uint8_t)-sum(rsdp, 20);
	if (revision < 2)
		return;
	uint32_t length = 36;
	memcpy(rsdp + 20, &length, 4);
	memcpy(rsdp + 24, &xsdt, 8);
	rsdp[32] = (uint8_t)-sum(rsdp, 36);
}

/* ---- Made-up physical memory ---------------------------------------------- */

#define MEMORY_SIZE 0x10000
static uint8_t *memory; /* heap block of exactly MEMORY_SIZE */

static const void *map_memory(uint64_t phys, uint64_t length)
{
	if (phys + length < phys || phys + length > MEMORY_SIZE)
		return NULL;
	return memory + phys;
}

static void place(uint64_t phys, const struct table *t)
{
	memcpy(memory + phys, t->bytes, t->length);
}

static void reset_memory(void)
{
	free(memory);
	memory = calloc(1, MEMORY_SIZE);
}

static void simple_table(struct table *t, const char *signature)
{
	begin(t, signature);
	put32(t, 0x12345678);
	finish(t);
}

/* ---- Cases ---------------------------------------------------------------- */

static void rsdp_validation(void)
{
	uint8_t rsdp[36];
	make_rsdp(rsdp, 0, 0x1000, 0);
	EXPECT(acpi_validate_rsdp(rsdp, 20) == 0);
	EXPECT(acpi_validate_rsdp(rsdp, 19) == -EINVAL);
	rsdp[16] ^= 1;
	EXPECT(acpi_validate_rsdp(rsdp, 20) == -EBADMSG);
	make_rsdp(rsdp, 0, 0x1000, 0);
	rsdp[0] = 'X';
	EXPECT(acpi_validate_rsdp(rsdp, 20) == -EINVAL);

	make_rsdp(rsdp, 2, 0x1000, 0x2000);
	EXPECT(acpi_validate_rsdp(rsdp, 36) == 0);
	EXPECT(acpi_validate_rsdp(rsdp, 20) == -ERANGE);
	rsdp[30] ^= 1; /* inside the extended part only */
	EXPECT(acpi_validate_rsdp(rsdp, 36) == -EBADMSG);

	make_rsdp(rsdp, 2, 0x1000, 0x2000);
	uint32_t length = 4096; /* claims more than there is */
	memcpy(rsdp + 20, &length, 4);
	rsdp[8] = 0;
	rsdp[8] = (uint8_t)-sum(rsdp, 20);
	EXPECT(acpi_validate_rsdp(rsdp, 36) == -ERANGE);
	length = 10; /* shorter than a v2 RSDP */
	memcpy(rsdp + 20, &length, 4);
	rsdp[8] = 0;
	rsdp[8] = (uint8_t)-sum(rsdp, 20);
	EXPECT(acpi_validate_rsdp(rsdp, 36) == -EBADMSG);
}

static void rsdp_scan(void)
{
	uint8_t *area = calloc(1, 256);
	uint8_t rsdp[36];
	make_rsdp(rsdp, 0, 0x1000, 0);
	memcpy(area + 0x10, "RSD PTR ", 8); /* signature, bad checksum */
	memcpy(area + 0x45, rsdp, 20);      /* valid, but not 16-byte aligned */
	EXPECT(acpi_scan_rsdp(area, 256) == -ENOENT);
	memcpy(area + 256 - 32, rsdp, 20); /* v1 in the last 32 bytes */
	EXPECT(acpi_scan_rsdp(area, 256) == 256 - 32);
	memcpy(area + 0x30, rsdp, 20);
	EXPECT(acpi_scan_rsdp(area, 256) == 0x30);
	EXPECT(acpi_scan_rsdp(area, 0) == -ENOENT);
	EXPECT(acpi_scan_rsdp(area, 19) == -ENOENT);
	free(area);
}

static bool rejected_with(const struct acpi_tables *tables, uint64_t phys, int error)
{
	for (unsigned i = 0; i < tables->rejected_count; i++) {
		if (tables->rejected[i].phys == phys)
			return tables->rejected[i].error == error;
	}
	return false;
}

/* RSDT at 0x1000 listing good and corrupt tables. */
static void build_firmware(bool use_xsdt)
{
	reset_memory();
	struct table t;
	simple_table(&t, "FACP");
	place(0x2000, &t);
	simple_table(&t, "APIC");
	place(0x3000, &t);
	simple_table(&t, "SSDT");
	t.bytes[36] ^= 0xff; /* bad checksum */
	place(0x4000, &t);
	simple_table(&t, "LONG");
	uint32_t length = 0x200; /* runs past the end of memory */
	memcpy(t.bytes + 4, &length, 4);
	place(MEMORY_SIZE - 0x100, &t);
	simple_table(&t, "TINY");
	length = 20; /* shorter than a header */
	memcpy(t.bytes + 4, &length, 4);
	place(0x5000, &t);
	simple_table(&t, "SSDT");
	place(0x6000, &t);

	uint64_t entries[] = {
	    0x2000, 0x3000, 0x4000, MEMORY_SIZE - 0x100, 0x5000, 0, MEMORY_SIZE + 0x1000, 0x6000};
	begin(&t, use_xsdt ? "XSDT" : "RSDT");
	for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
		if (use_xsdt)
			put64(&t, entries[i]);
		else
			put32(&t, (uint32_t)entries[i]);
	}
	finish(&t);
	place(use_xsdt ? 0x1800 : 0x1000, &t);
}

static void check_loaded(const struct acpi_tables *tables)
{
	EXPECT(tables->count == 3);
	EXPECT(tables->rejected_count == 5);
	EXPECT(rejected_with(tables, 0x4000, -EBADMSG));
	EXPECT(rejected_with(tables, MEMORY_SIZE - 0x100, -EFAULT));
	EXPECT(rejected_with(tables, 0x5000, -EBADMSG));
	EXPECT(rejected_with(tables, 0, -EFAULT));
	EXPECT(rejected_with(tables, MEMORY_SIZE + 0x1000, -EFAULT));
	const struct acpi_table *apic = acpi_lookup_table(tables, "APIC", 0);
	EXPECT(apic && apic->phys == 0x3000 && apic->length == 40 && apic->revision == 1);
	EXPECT(apic && !strcmp(apic->signature, "APIC"));
	EXPECT(acpi_lookup_table(tables, "APIC", 1) == NULL);
	const struct acpi_table *ssdt = acpi_lookup_table(tables, "SSDT", 0);
	EXPECT(ssdt && ssdt->phys == 0x6000); /* the corrupt one is not listed */
	EXPECT(acpi_lookup_table(tables, "HPET", 0) == NULL);
	EXPECT(!strcmp(tables->oem_id, "MSCOPE"));
}

static void rsdt_walk_rejects_bad_tables(void)
{
	static struct acpi_tables tables;
	uint8_t rsdp[36];
	build_firmware(false);
	make_rsdp(rsdp, 0, 0x1000, 0);
	EXPECT(acpi_load_tables(rsdp, 20, map_memory, &tables) == 0);
	EXPECT(!tables.root_is_xsdt && tables.root_phys == 0x1000);
	check_loaded(&tables);
}

static void xsdt_is_preferred(void)
{
	static struct acpi_tables tables;
	uint8_t rsdp[36];
	build_firmware(true);
	make_rsdp(rsdp, 2, 0xdead0, 0x1800); /* the RSDT address is bogus */
	EXPECT(acpi_load_tables(rsdp, 36, map_memory, &tables) == 0);
	EXPECT(tables.root_is_xsdt && tables.root_phys == 0x1800 && tables.revision == 2);
	check_loaded(&tables);
}

static void bad_root_fails_the_load(void)
{
	static struct acpi_tables tables;
	uint8_t rsdp[36];
	build_firmware(false);
	make_rsdp(rsdp, 0, 0x1000, 0);
	memory[0x1000 + 40] ^= 1; /* RSDT checksum */
	EXPECT(acpi_load_tables(rsdp, 20, map_memory, &tables) == -EBADMSG);
	EXPECT(tables.count == 0);

	build_firmware(false);
	memcpy(memory + 0x1000, "XSDT", 4); /* wrong signature, checksum fixed */
	memory[0x1000 + 9] = 0;
	memory[0x1000 + 9] = (uint8_t)-sum(memory + 0x1000, 36 + 8 * 4);
	EXPECT(acpi_load_tables(rsdp, 20, map_memory, &tables) == -EBADMSG);

	make_rsdp(rsdp, 0, MEMORY_SIZE - 8, 0); /* root header past the end */
	EXPECT(acpi_load_tables(rsdp, 20, map_memory, &tables) == -EFAULT);
	rsdp[8] ^= 1;
	EXPECT(acpi_load_tables(rsdp, 20, map_memory, &tables) == -EINVAL);
}

static void madt_header(struct table *t)
{
	begin(t, "APIC");
	put32(t, 0xfee00000);
	put32(t, 1); /* PC-AT compatible */
}

static void local_apic(struct table *t, uint8_t uid, uint8_t apic_id, uint32_t flags)
{
	put8(t, 0), put8(t, 8), put8(t, uid), put8(t, apic_id), put32(t, flags);
}

static void ioapic(struct table *t, uint8_t id, uint32_t address, uint32_t gsi_base)
{
	put8(t, 1), put8(t, 12), put8(t, id), put8(t, 0), put32(t, address), put32(t, gsi_base);
}

static void override(struct table *t, uint8_t irq, uint32_t gsi, uint16_t flags)
{
	put8(t, 2), put8(t, 10), put8(t, 0), put8(t, irq), put32(t, gsi), put16(t, flags);
}

static void full_madt(struct table *t)
{
	madt_header(t);
	local_apic(t, 0, 0, 1);
	local_apic(t, 1, 1, 1);
	local_apic(t, 2, 2, 0); /* disabled: left out */
	local_apic(t, 3, 3, 2); /* online-capable: kept */
	ioapic(t, 0, 0xfec00000, 0);
	override(t, 0, 2, 0);
	override(t, 9, 9, 0x000d);   /* level, active high */
	override(t, 11, 11, 0x000f); /* level, active low */
	put8(t, 4), put8(t, 6), put8(t, 0xff), put16(t, 0x0005), put8(t, 1); /* LINT1 NMI, all */
	put8(t, 3), put8(t, 8), put16(t, 0x0003), put32(t, 30);              /* NMI source */
	put8(t, 5), put8(t, 12), put16(t, 0), put64(t, 0xfee10000);          /* LAPIC address */
	/* x2APIC: a new id, and id 0 again (kept once) */
	put8(t, 9), put8(t, 16), put16(t, 0), put32(t, 300), put32(t, 1), put32(t, 7);
	put8(t, 9), put8(t, 16), put16(t, 0), put32(t, 0), put32(t, 1), put32(t, 0);
	put8(t, 10), put8(t, 12), put16(t, 0), put32(t, 7), put8(t, 0), put8(t, 0), put16(t, 0);
	put8(t, 0x7f), put8(t, 4), put16(t, 0); /* unknown type */
	put8(t, 1), put8(t, 14), put8(t, 1), put8(t, 0), put32(t, 0xfec01000), put32(t, 24),
	    put16(t, 0); /* an IOAPIC entry longer than ACPI 6 defines */
	finish(t);
}

static void madt_every_entry_type(void)
{
	static struct acpi_madt madt;
	struct table t;
	full_madt(&t);
	void *copy = exact_copy(&t);
	EXPECT(acpi_parse_madt(copy, (uint32_t)t.length, &madt) == 0);
	free(copy);
	EXPECT(madt.lapic_address == 0xfee10000);
	EXPECT(madt.flags & ACPI_MADT_PCAT_COMPAT);
	EXPECT(madt.cpu_count == 4);
	EXPECT(madt.disabled_cpus == 1);
	EXPECT(madt.cpus[0].apic_id == 0 && madt.cpus[0].flags == ACPI_CPU_ENABLED);
	EXPECT(madt.cpus[2].apic_id == 3 && madt.cpus[2].flags == ACPI_CPU_ONLINE_CAPABLE);
	EXPECT(madt.cpus[3].apic_id == 300 && madt.cpus[3].uid == 7);
	EXPECT(madt.cpus[3].flags == (ACPI_CPU_ENABLED | ACPI_CPU_X2APIC));
	EXPECT(madt.ioapic_count == 2);
	EXPECT(madt.ioapics[0].address == 0xfec00000 && madt.ioapics[0].gsi_base == 0);
	EXPECT(madt.ioapics[1].id == 1 && madt.ioapics[1].gsi_base == 24);
	EXPECT(madt.override_count == 3);
	EXPECT(madt.overrides[1].source_irq == 9 &&
	       madt.overrides[1].trigger == ACPI_TRIGGER_LEVEL);
	EXPECT(madt.overrides[1].polarity == ACPI_POLARITY_HIGH);
	EXPECT(madt.overrides[2].polarity == ACPI_POLARITY_LOW);
	EXPECT(madt.nmi_count == 3);
	EXPECT(madt.nmis[0].kind == ACPI_NMI_LOCAL && madt.nmis[0].uid == 0xffffffffu);
	EXPECT(madt.nmis[0].lint == 1 && madt.nmis[0].polarity == ACPI_POLARITY_HIGH);
	EXPECT(madt.nmis[1].kind == ACPI_NMI_SOURCE && madt.nmis[1].gsi == 30);
	EXPECT(madt.nmis[1].polarity == ACPI_POLARITY_LOW);
	EXPECT(madt.nmis[2].kind == ACPI_NMI_LOCAL && madt.nmis[2].uid == 7);
	EXPECT(madt.unknown == 1 && madt.dropped == 0);
}

static void isa_irq_routing(void)
{
	static struct acpi_madt madt;
	struct table t;
	full_madt(&t);
	EXPECT(acpi_parse_madt(t.bytes, (uint32_t)t.length, &madt) == 0);
	struct acpi_irq_route timer = acpi_route_isa_irq(&madt, 0);
	EXPECT(timer.gsi == 2 && timer.trigger == ACPI_TRIGGER_EDGE);
	struct acpi_irq_route sci = acpi_route_isa_irq(&madt, 9);
	EXPECT(sci.gsi == 9 && sci.trigger == ACPI_TRIGGER_LEVEL);
	struct acpi_irq_route com1 = acpi_route_isa_irq(&madt, 4);
	EXPECT(com1.gsi == 4 && com1.polarity == ACPI_POLARITY_HIGH);
	EXPECT(acpi_route_isa_irq(NULL, 0).gsi == 0);
}

/* Parses a copy of t cut or patched as given; returns the result. */
static int parse_exact(const struct table *t, uint32_t length, struct acpi_madt *madt)
{
	void *copy = malloc(length);
	memcpy(copy, t->bytes, length);
	int result = acpi_parse_madt(copy, length, madt);
	free(copy);
	return result;
}

static void madt_malformed_entries(void)
{
	static struct acpi_madt madt;
	struct table t;

	madt_header(&t);
	local_apic(&t, 0, 0, 1);
	put8(&t, 1), put8(&t, 40), put8(&t, 0), put8(&t, 0); /* IOAPIC claiming 40 bytes */
	finish(&t);
	EXPECT(parse_exact(&t, (uint32_t)t.length, &madt) == -EBADMSG);
	EXPECT(madt.cpu_count == 1 && madt.ioapic_count == 0); /* what came before is kept */

	madt_header(&t);
	put8(&t, 0x7f), put8(&t, 0), put16(&t, 0); /* length 0 would loop forever */
	finish(&t);
	EXPECT(parse_exact(&t, (uint32_t)t.length, &madt) == -EBADMSG);

	madt_header(&t);
	put8(&t, 1), put8(&t, 8), put8(&t, 0), put8(&t, 0), put32(&t, 0xfec00000); /* IOAPIC, 8 */
	finish(&t);
	EXPECT(parse_exact(&t, (uint32_t)t.length, &madt) == -EBADMSG);

	madt_header(&t);
	local_apic(&t, 0, 0, 1);
	put8(&t, 0); /* one stray byte: not even a type and length */
	finish(&t);
	EXPECT(parse_exact(&t, (uint32_t)t.length, &madt) == -EBADMSG);

	full_madt(&t); /* truncated in the middle of an entry */
	EXPECT(parse_exact(&t, 44 + 8 + 5, &madt) == -EBADMSG);
	EXPECT(madt.cpu_count == 1);
	EXPECT(parse_exact(&t, 43, &madt) == -EBADMSG);
	memcpy(t.bytes, "APIX", 4);
	EXPECT(parse_exact(&t, (uint32_t)t.length, &madt) == -EBADMSG);
}

static void madt_overflow_is_counted(void)
{
	static struct acpi_madt madt;
	struct table t;
	madt_header(&t);
	for (unsigned i = 0; i < ACPI_MAX_IOAPICS + 3; i++)
		ioapic(&t, (uint8_t)i, 0xfec00000 + i * 0x1000, i * 24);
	finish(&t);
	EXPECT(parse_exact(&t, (uint32_t)t.length, &madt) == 0);
	EXPECT(madt.ioapic_count == ACPI_MAX_IOAPICS && madt.dropped == 3);
}

static void hpet_table(void)
{
	static struct acpi_hpet hpet;
	struct table t;
	begin(&t, "HPET");
	put32(&t, 0x8086a201);
	put8(&t, 0), put8(&t, 64), put8(&t, 0), put8(&t, 0), put64(&t, 0xfed00000);
	put8(&t, 0), put16(&t, 128), put8(&t, 0);
	finish(&t);
	void *copy = exact_copy(&t);
	EXPECT(acpi_parse_hpet(copy, (uint32_t)t.length, &hpet) == 0);
	EXPECT(hpet.address == 0xfed00000 && hpet.minimum_tick == 128);
	EXPECT(acpi_parse_hpet(copy, 55, &hpet) == -EBADMSG);
	free(copy);
	t.bytes[40] = 1; /* I/O space */
	EXPECT(acpi_parse_hpet(t.bytes, (uint32_t)t.length, &hpet) == -ENOTSUP);
	t.bytes[40] = 0;
	memset(t.bytes + 44, 0, 8);
	EXPECT(acpi_parse_hpet(t.bytes, (uint32_t)t.length, &hpet) == -EBADMSG);
}

static void checksum(void)
{
	uint8_t bytes[] = {1, 2, 3, 0xfa};
	EXPECT(acpi_checksum(bytes, 4) == 0);
	EXPECT(acpi_checksum(bytes, 3) == 6);
	EXPECT(acpi_checksum(bytes, 0) == 0);
}

static const struct {
	const char *name;
	void (*run)(void);
} cases[] = {
    {"checksum", checksum},
    {"rsdp_validation", rsdp_validation},
    {"rsdp_scan", rsdp_scan},
    {"rsdt_walk_rejects_bad_tables", rsdt_walk_rejects_bad_tables},
    {"xsdt_is_preferred", xsdt_is_preferred},
    {"bad_root_fails_the_load", bad_root_fails_the_load},
    {"madt_every_entry_type", madt_every_entry_type},
    {"isa_irq_routing", isa_irq_routing},
    {"madt_malformed_entries", madt_malformed_entries},
    {"madt_overflow_is_counted", madt_overflow_is_counted},
    {"hpet_table", hpet_table},
};

int main(void)
{
	size_t count = sizeof cases / sizeof cases[0];
	printf("KTAP version 1\n1..%zu\n", count);
	for (size_t i = 0; i < count; i++) {
		case_failures = 0;
		cases[i].run();
		printf("%s %zu %s\n", case_failures ? "not ok" : "ok", i + 1, cases[i].name);
		failures += case_failures != 0;
	}
	free(memory);
	return failures ? 1 : 0;
}
