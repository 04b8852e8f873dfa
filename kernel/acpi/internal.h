/*
 * The ACPI parsers, apart from the kernel glue so the host tests can feed them
 * synthetic and corrupt tables.  They read memory only through the map
 * callback and the (pointer, length) pairs they are given, never past them.
 */
#ifndef KERNEL_ACPI_INTERNAL_H
#define KERNEL_ACPI_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "acpi/acpi.h"

#define ACPI_HEADER_SIZE  36
#define ACPI_RSDP_V1_SIZE 20
#define ACPI_RSDP_V2_SIZE 36

/* Maps length bytes at physical address phys; NULL when it cannot. */
typedef const void *(*acpi_map_fn)(uint64_t phys, uint64_t length);

/* The kernel's acpi_map_fn (acpi.c; not in host tests): the physmap alias of
 * RAM inside the physmap, else a permanent uncached mapping. */
const void *acpi_map_physical(uint64_t phys, uint64_t length);

/* Sum of the bytes modulo 256 (0 for a valid ACPI structure). */
uint8_t acpi_checksum(const void *data, size_t length);
/* Checks an RSDP of available bytes: signature, v1 checksum, and for v2 the
 * length and extended checksum.  Returns 0, -EINVAL (not an RSDP), -EBADMSG
 * (bad checksum) or -ERANGE (claims more bytes than available). */
int acpi_validate_rsdp(const void *rsdp, size_t available);
/* Looks for a valid RSDP on 16-byte boundaries of area.  Returns its offset,
 * or -ENOENT. */
long acpi_scan_rsdp(const void *area, size_t length);
/* Walks the RSDT or XSDT the RSDP names and fills out.  Returns 0, -EINVAL for
 * a bad RSDP, -EFAULT when the root table cannot be mapped, or -EBADMSG when
 * its header, length or checksum is bad.  Bad listed tables do not fail the
 * call: they are recorded in out->rejected. */
int acpi_load_tables(const void *rsdp, size_t rsdp_length, acpi_map_fn map,
		     struct acpi_tables *out);
/* The instance-th validated table with signature (4 chars), or NULL. */
const struct acpi_table *acpi_lookup_table(const struct acpi_tables *tables, const char *signature,
					   unsigned instance);
/* Parses a validated MADT of length bytes.  Returns 0, or -EBADMSG for a
 * table too short or an entry whose length is below its type's size or runs
 * past the end (out then holds the entries before it). */
int acpi_parse_madt(const void *table, uint32_t length, struct acpi_madt *out);
/* Parses a validated HPET table.  Returns 0, -EBADMSG when it is too short,
 * or -ENOTSUP when the registers are not in system memory. */
int acpi_parse_hpet(const void *table, uint32_t length, struct acpi_hpet *out);

#endif
