// host-test-sources: kernel/panic/ksyms.c
/*
 * Host test of the embedded symbol table lookups (kernel/panic/ksyms.c)
 * against a synthetic table laid out exactly as tools/mkksyms.py lays out the
 * real one: a count, the sorted entries, then the names.  The same table is
 * also the `ksym_table` symbol, so ksym_lookup and ksym_address_of are
 * tested too.  Prints KTAP; exits non-zero when a case fails.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "panic/ksyms.h"

#define SYMBOL_COUNT 4

/* mkksyms.py's layout; names at offsets 0, 6, 11, 17. */
struct synthetic_table {
	uint64_t count;
	struct ksym symbols[SYMBOL_COUNT];
	char names[32];
};

/* alpha [0x1000,0x1010), beta [0x1010,0x1030), gap, gamma size 0 (ends at
 * delta), delta [0x2000,0x2008). */
const struct synthetic_table synthetic_ksym_table = {
    SYMBOL_COUNT,
    {{0x1000, 0, 0x10}, {0x1010, 6, 0x20}, {0x1800, 11, 0}, {0x2000, 17, 0x8}},
    "alpha\0beta\0gamma\0delta",
};
/* The kernel's table symbol, at the same bytes (an asm alias: a C alias would
 * give it the declared type's size, which AddressSanitizer would enforce). */
__asm__(".globl ksym_table\n.set ksym_table, synthetic_ksym_table");
extern const struct ksym_table ksym_table;

static const struct ksym_table empty_table = {0};

static int failures, case_number;

static void check(int ok, const char *name)
{
	printf("%s %d %s\n", ok ? "ok" : "not ok", ++case_number, name);
	failures += !ok;
}

static int is_named(const char *got, const char *want)
{
	return got && want && strcmp(got, want) == 0;
}

static void test_lookup_inside_and_at_start(void)
{
	uint64_t offset = 99;
	check(is_named(ksym_lookup(0x1000, &offset), "alpha") && offset == 0,
	      "start of a function has offset 0");
	check(is_named(ksym_lookup(0x100f, &offset), "alpha") && offset == 0xf,
	      "last byte of a function");
	check(is_named(ksym_lookup(0x1010, &offset), "beta") && offset == 0,
	      "adjacent function starts where the previous ends");
	check(is_named(ksym_lookup(0x2007, &offset), "delta") && offset == 7,
	      "last byte of the last function");
}

static void test_lookup_outside(void)
{
	uint64_t offset = 42;
	check(ksym_lookup(0xfff, &offset) == NULL && offset == 42,
	      "below the first symbol is unknown and offset is untouched");
	check(ksym_lookup(0x1030, NULL) == NULL, "the gap after a sized function is unknown");
	check(ksym_lookup(0x2008, NULL) == NULL, "past the last sized function is unknown");
	check(ksym_lookup(0, NULL) == NULL, "address 0 is unknown");
	check(ksym_lookup(UINT64_MAX, NULL) == NULL, "the top address is unknown");
}

static void test_size_zero_ends_at_next(void)
{
	uint64_t offset;
	check(is_named(ksym_lookup(0x1fff, &offset), "gamma") && offset == 0x7ff,
	      "a size-0 symbol extends to the next symbol");
	check(is_named(ksym_lookup(0x2000, &offset), "delta"), "and not into it");
}

static void test_null_offset_and_other_tables(void)
{
	check(is_named(ksym_lookup(0x1020, NULL), "beta"), "offset may be NULL");
	check(ksym_lookup_in(&empty_table, 0x1000, NULL) == NULL, "an empty table knows nothing");
	check(is_named(ksym_lookup_in(&ksym_table, 0x1004, NULL), "alpha"),
	      "ksym_lookup_in on the kernel table");
}

static void test_address_of(void)
{
	check(ksym_address_of("gamma") == 0x1800, "address of a name");
	check(ksym_address_of("delta") == 0x2000, "address of the last name");
	check(ksym_address_of("epsilon") == 0, "unknown name gives 0");
	check(ksym_address_of("alph") == 0, "a prefix is not a match");
}

int main(void)
{
	printf("KTAP version 1\n1..18\n");
	test_lookup_inside_and_at_start();
	test_lookup_outside();
	test_size_zero_ends_at_next();
	test_null_offset_and_other_tables();
	test_address_of();
	if (case_number != 18)
		printf("# plan said 18 cases, ran %d\n", case_number);
	return failures || case_number != 18;
}
