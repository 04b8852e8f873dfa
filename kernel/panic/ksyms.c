/*
 * Lookups in the embedded symbol table.  The table is sorted by address, so a
 * binary search finds the last symbol at or below an address; the symbol's
 * size (or, without one, the next symbol) bounds it.
 */
#include "panic/ksyms.h"

#include <stddef.h>

#include "lib/string.h"

extern const struct ksym_table ksym_table;

static const char *name_of(const struct ksym_table *table, const struct ksym *sym)
{
	const char *strings = (const char *)&table->symbols[table->count];
	return strings + sym->name_offset;
}

static const struct ksym *last_at_or_below(const struct ksym_table *table, uint64_t address)
{
	size_t low = 0, high = table->count;
	while (low < high) {
		size_t mid = low + (high - low) / 2;
		if (table->symbols[mid].address <= address)
			low = mid + 1;
		else
			high = mid;
	}
	return low ? &table->symbols[low - 1] : NULL;
}

const char *ksym_lookup_in(const struct ksym_table *table, uint64_t address, uint64_t *offset)
{
	const struct ksym *sym = last_at_or_below(table, address);
	if (!sym)
		return NULL;
	uint64_t end = sym->size ? sym->address + sym->size : address + 1;
	if (!sym->size && sym + 1 < &table->symbols[table->count])
		end = sym[1].address;
	if (address >= end)
		return NULL;
	if (offset)
		*offset = address - sym->address;
	return name_of(table, sym);
}

const char *ksym_lookup(uint64_t address, uint64_t *offset)
{
	return ksym_lookup_in(&ksym_table, address, offset);
}

uint64_t ksym_address_of(const char *name)
{
	for (uint64_t i = 0; i < ksym_table.count; i++) {
		if (!strcmp(name_of(&ksym_table, &ksym_table.symbols[i]), name))
			return ksym_table.symbols[i].address;
	}
	return 0;
}
