/*
 * The kernel's own symbol table, embedded in the image at build time (a
 * second link fills the .ksyms section from the first link's function symbols)
 * so panics and profilers can name code addresses without a host.
 *
 *     uint64_t offset;
 *     const char *name = ksym_lookup(rip, &offset);   // NULL if not kernel text
 */
#ifndef KERNEL_PANIC_KSYMS_H
#define KERNEL_PANIC_KSYMS_H

#include <stdint.h>

struct ksym {
	uint64_t address;
	uint32_t name_offset; /* into the string table after the last entry */
	uint32_t size;        /* 0 when the object file did not say */
};

struct ksym_table {
	uint64_t count;
	struct ksym symbols[]; /* sorted by address; strings follow */
};

/* Returns the name of the function containing address and its offset in it, or
 * NULL when the address lies outside every known function. */
const char *ksym_lookup_in(const struct ksym_table *table, uint64_t address, uint64_t *offset);
const char *ksym_lookup(uint64_t address, uint64_t *offset);
/* Returns the address of the named function, or 0. */
uint64_t ksym_address_of(const char *name);

#endif
