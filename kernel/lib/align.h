/*
 * Rounding to a power-of-two boundary, for the allocators and the address
 * windows that all need it the same way.
 */
#ifndef KERNEL_LIB_ALIGN_H
#define KERNEL_LIB_ALIGN_H

#include <stdint.h>

/* value rounded up to a multiple of align, a power of two. */
static inline uint64_t align_up(uint64_t value, uint64_t align)
{
	return (value + align - 1) & ~(align - 1);
}

#endif
