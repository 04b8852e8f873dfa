/*
 * Finding the ACPI tables: the RSDP, the root table (XSDT when the RSDP is
 * version 2 and names one, else the RSDT) and every table it lists.
 *
 * Nothing the firmware wrote is trusted: each table's header is mapped first,
 * its length bounded, then the whole table mapped and its checksum verified
 * before it is recorded.  A bad table is recorded as rejected, with the reason,
 * and the walk goes on; only a bad RSDP or root table fails the whole load.
 * Everything is read through the map callback or memcpy, so unaligned or
 * truncated input never faults or reads past what was mapped.
 */
#include "acpi/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "lib/unaligned.h"

#define ACPI_TABLE_MAX_LENGTH (16u << 20) /* larger is a corrupt length field */

uint8_t acpi_checksum(const void *data, size_t length)
{
	const uint8_t *bytes = data;
	uint8_t sum = 0;
	for (size_t i = 0; i < length; i++)
		sum += bytes[i];
	return sum;
}

int acpi_validate_rsdp(const void *rsdp, size_t available)
{
	const uint8_t *p = rsdp;
	if (available < ACPI_RSDP_V1_SIZE || memcmp(p, "RSD PTR ", 8))
		return -EINVAL;
	if (acpi_checksum(p, ACPI_RSDP_V1_SIZE))
		return -EBADMSG;
	if (p[15] < 2)
		return 0;
	if (available < ACPI_RSDP_V2_SIZE)
		return -ERANGE;
	uint32_t length = read_le32(p + 20);
	if (length < ACPI_RSDP_V2_SIZE)
		return -EBADMSG;
	if (length > available)
		return -ERANGE;
	return acpi_checksum(p, length) ? -EBADMSG : 0;
}

long acpi_scan_rsdp(const void *area, size_t length)
{
	const uint8_t *p = area;
	for (size_t offset = 0; offset + ACPI_RSDP_V1_SIZE <= length; offset += 16) {
		if (!acpi_validate_rsdp(p + offset, length - offset))
			return (long)offset;
	}
	return -ENOENT;
}

static void copy_signature(char out[5], const uint8_t *header)
{
	memcpy(out, header, 4);
	out[4] = '\0';
}

static void reject(struct acpi_tables *out, const uint8_t *header, uint64_t phys, int error)
{
	if (out->rejected_count == ACPI_MAX_REJECTED) {
		out->dropped++;
		return;
	}
	struct acpi_rejected_table *r = &out->rejected[out->rejected_count++];
	if (header)
		copy_signature(r->signature, header);
	else
		memcpy(r->signature, "????", 5);
	r->phys = phys;
	r->error = error;
}

/* Maps and checks one table; returns its data or NULL with *error set. */
static const uint8_t *map_table(acpi_map_fn map, uint64_t phys, const uint8_t **header, int *error)
{
	*header = phys ? map(phys, ACPI_HEADER_SIZE) : NULL;
	if (!*header) {
		*error = -EFAULT;
		return NULL;
	}
	uint32_t length = read_le32(*header + 4);
	if (length < ACPI_HEADER_SIZE || length > ACPI_TABLE_MAX_LENGTH) {
		*error = -EBADMSG;
		return NULL;
	}
	const uint8_t *data = map(phys, length);
	if (!data) {
		*error = -EFAULT;
		return NULL;
	}
	if (acpi_checksum(data, length)) {
		*error = -EBADMSG;
		return NULL;
	}
	return data;
}

static void add_table(acpi_map_fn map, uint64_t phys, struct acpi_tables *out)
{
	const uint8_t *header;
	int error;
	const uint8_t *data = map_table(map, phys, &header, &error);
	if (!data) {
		reject(out, header, phys, error);
		return;
	}
	if (out->count == ACPI_MAX_TABLES) {
		out->dropped++;
		return;
	}
	struct acpi_table *t = &out->tables[out->count++];
	copy_signature(t->signature, data);
	t->revision = data[8];
	t->length = read_le32(data + 4);
	t->phys = phys;
	t->data = data;
}

int acpi_load_tables(const void *rsdp, size_t rsdp_length, acpi_map_fn map, struct acpi_tables *out)
{
	const uint8_t *p = rsdp;
	memset(out, 0, sizeof *out);
	if (acpi_validate_rsdp(rsdp, rsdp_length))
		return -EINVAL;
	out->revision = p[15];
	memcpy(out->oem_id, p + 9, 6);
	out->root_is_xsdt = p[15] >= 2 && read_le64(p + 24) != 0;
	out->root_phys = out->root_is_xsdt ? read_le64(p + 24) : read_le32(p + 16);

	const uint8_t *header;
	int error;
	const uint8_t *root = map_table(map, out->root_phys, &header, &error);
	if (!root)
		return error;
	if (memcmp(root, out->root_is_xsdt ? "XSDT" : "RSDT", 4))
		return -EBADMSG;

	unsigned entry_size = out->root_is_xsdt ? 8 : 4;
	uint32_t length = read_le32(root + 4);
	for (uint32_t offset = ACPI_HEADER_SIZE; offset + entry_size <= length;
	     offset += entry_size) {
		uint64_t phys =
		    out->root_is_xsdt ? read_le64(root + offset) : read_le32(root + offset);
		add_table(map, phys, out);
	}
	return 0;
}

const struct acpi_table *acpi_lookup_table(const struct acpi_tables *tables, const char *signature,
					   unsigned instance)
{
	for (unsigned i = 0; i < tables->count; i++) {
		if (memcmp(tables->tables[i].signature, signature, 4))
			continue;
		if (instance-- == 0)
			return &tables->tables[i];
	}
	return NULL;
}
