/*
 * Reading little-endian fields at any alignment from byte buffers that come
 * from outside (loader blocks, ACPI tables, ELF files, packets).  memcpy keeps
 * it defined behaviour; GCC turns each into one load.
 *
 *     uint32_t length = read_le32(table + 4);
 */
#ifndef KERNEL_LIB_UNALIGNED_H
#define KERNEL_LIB_UNALIGNED_H

#include <stdint.h>

#include "lib/string.h"

static inline uint16_t read_le16(const void *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline uint32_t read_le32(const void *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline uint64_t read_le64(const void *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

#endif
