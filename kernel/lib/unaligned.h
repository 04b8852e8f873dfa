/*
 * Reading little-endian fields at any alignment from byte buffers that come
 * from outside (loader blocks, ACPI tables, ELF files, packets).  memcpy keeps
 * it defined behaviour; GCC turns each into one load.  And the network's
 * big-endian fields, read and written a byte at a time.
 *
 *     uint32_t length = read_le32(table + 4);
 *     write_be16(ip + 2, total_length);
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

static inline uint16_t read_be16(const void *p)
{
	const uint8_t *b = p;
	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t read_be32(const void *p)
{
	const uint8_t *b = p;
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static inline void write_be16(void *p, uint16_t value)
{
	uint8_t *b = p;
	b[0] = (uint8_t)(value >> 8);
	b[1] = (uint8_t)value;
}

static inline void write_be32(void *p, uint32_t value)
{
	write_be16(p, (uint16_t)(value >> 16));
	write_be16((uint8_t *)p + 2, (uint16_t)value);
}

#endif
