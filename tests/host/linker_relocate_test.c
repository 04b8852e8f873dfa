// host-test-sources: linker/object/*.c tests/host/shim/linker_shim.c
/* Are relocations computed right (S + A, S + A - P) for every supported type,
 * and does a value that does not fit its field fail with a message instead of
 * being truncated?  And do the counters and histograms behind ms_counter_add
 * and ms_hist_record add, bucket and merge as documented? */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hosttest.h"
#include "lib/errno.h"
#include "linker/object/object.h"
#include "linker_shim.h"

static char error[160];

/* Recomputes every relocation of every loaded section from the file and
 * compares with what is in memory.  Returns the number checked. */
static unsigned verify_relocations(const struct linker_object *o)
{
	unsigned checked = 0;
	for (unsigned i = 1; i < o->section_count; i++) {
		const struct linker_shdr *s = &o->sections[i];
		if (s->sh_type != LINKER_SHT_RELA || !o->section_address[s->sh_info])
			continue;
		const struct linker_rela *r = (const void *)(o->image + s->sh_offset);
		for (size_t n = 0; n < s->sh_size / sizeof *r; n++, checked++) {
			unsigned type = (unsigned)r[n].r_info;
			uint64_t place = o->section_address[s->sh_info] + r[n].r_offset;
			uint64_t value =
			    o->symbol_address[r[n].r_info >> 32] + (uint64_t)r[n].r_addend;
			if (type == LINKER_R_X86_64_PC32 || type == LINKER_R_X86_64_PLT32)
				value -= place;
			uint64_t got = 0;
			memcpy(&got, (void *)(uintptr_t)place, type == LINKER_R_X86_64_64 ? 8 : 4);
			uint64_t want = type == LINKER_R_X86_64_64 ? value : (uint32_t)value;
			if (!CHECK_EQ(got, want))
				printf("    # relocation %zu (%s) of section %u\n", n,
				       linker_relocation_name(type), i);
		}
	}
	return checked;
}

static unsigned count_type(const struct linker_object *o, unsigned type)
{
	unsigned count = 0;
	for (unsigned i = 1; i < o->section_count; i++) {
		const struct linker_shdr *s = &o->sections[i];
		if (s->sh_type != LINKER_SHT_RELA || !o->section_address[s->sh_info])
			continue;
		const struct linker_rela *r = (const void *)(o->image + s->sh_offset);
		for (size_t n = 0; n < s->sh_size / sizeof *r; n++)
			count += (unsigned)r[n].r_info == type;
	}
	return count;
}

static void link_and_verify(const char *aspect, const char *flags, unsigned type)
{
	size_t size;
	uint8_t *image = linker_shim_build_aspect(aspect, flags, &size);
	REQUIRE(image != NULL);
	struct linker_object o;
	REQUIRE_EQ(linker_validate_object(&o, image, size, error, sizeof error), 0);
	int err = linker_link_object(&o, &linker_shim_env);
	if (!CHECK_EQ(err, 0))
		printf("    # %s\n", error);
	if (!err) {
		CHECK(count_type(&o, type) > 0);
		CHECK(verify_relocations(&o) > 0);
		linker_release_object(&o, &linker_shim_env, false);
	}
	linker_shim_reset();
	free(image);
}

static void large_model_uses_absolute_64(void)
{
	link_and_verify("tracer", "", LINKER_R_X86_64_64);
}

static void pc_relative_32_and_plt32_are_computed(void)
{
	/* Small PIC model: calls are PLT32, strings PC32; the arena and the fake
	 * ABI are in the same binary, so everything is in range. */
	link_and_verify("callcount", "-mcmodel=small -fpie", LINKER_R_X86_64_PLT32);
	link_and_verify("tracer", "-mcmodel=small -fpie", LINKER_R_X86_64_PC32);
}

static void absolute_32_that_does_not_fit_is_refused(void)
{
	/* Small non-PIC model: addresses as 32-bit absolutes, which cannot hold
	 * an address above 4 GiB such as the (PIE) test binary's arena. */
	size_t size;
	uint8_t *image = linker_shim_build_aspect("callcount", "-mcmodel=small -fno-pie", &size);
	REQUIRE(image != NULL);
	struct linker_object o;
	REQUIRE_EQ(linker_validate_object(&o, image, size, error, sizeof error), 0);
	if (linker_shim_abi_address("ms_log") > UINT32_MAX) {
		CHECK_EQ(linker_link_object(&o, &linker_shim_env), -ERANGE);
		CHECK(strstr(error, "overflows (build with -mcmodel=large)") != NULL);
		printf("    # %s\n", error);
		CHECK_EQ(linker_shim_regions_in_use(), 0);
	} else {
		hosttest_skip("the test binary lies below 4 GiB");
	}
	linker_shim_reset();
	free(image);
}

static void counters_add_and_merge(void)
{
	static struct linker_counters a, b;
	memset(&a, 0, sizeof a);
	memset(&b, 0, sizeof b);
	CHECK_EQ(linker_counter_add(&a, "x", 2), 0);
	CHECK_EQ(linker_counter_add(&a, "x", 3), 0);
	CHECK_EQ(linker_counter_add(&a, "", 3), -EINVAL);
	CHECK_EQ(linker_counter_get(&a, "x"), 5);
	CHECK_EQ(linker_counter_add(&b, "x", 10), 0);
	CHECK_EQ(linker_counter_add(&b, "y", -1), 0);
	CHECK_EQ(linker_counters_merge(&a, &b), 0);
	CHECK_EQ(linker_counter_get(&a, "x"), 15);
	CHECK_EQ(linker_counter_get(&a, "y"), -1);
	CHECK_EQ(linker_counter_get(&a, "z"), 0);
	char name[16];
	for (int i = 0; i < MS_MAX_COUNTERS - 2; i++) {
		snprintf(name, sizeof name, "c%d", i);
		CHECK_EQ(linker_counter_add(&a, name, 1), 0);
	}
	CHECK_EQ(linker_counter_add(&a, "one too many", 1), -ENOSPC);
}

static void histograms_use_log2_buckets(void)
{
	static struct linker_counters a;
	memset(&a, 0, sizeof a);
	CHECK_EQ(linker_hist_bucket(0), 0);
	CHECK_EQ(linker_hist_bucket(1), 1);
	CHECK_EQ(linker_hist_bucket(2), 2);
	CHECK_EQ(linker_hist_bucket(3), 2);
	CHECK_EQ(linker_hist_bucket(1024), 11);
	CHECK_EQ(linker_hist_bucket(~0ULL), 64);
	uint64_t values[] = {0, 1, 5, 7, 1000, ~0ULL};
	for (unsigned i = 0; i < 6; i++)
		CHECK_EQ(linker_hist_record(&a, "lat", values[i]), 0);
	const struct linker_histogram *h = linker_hist_find(&a, "lat");
	REQUIRE(h != NULL);
	CHECK_EQ(h->count, 6);
	CHECK_EQ(h->buckets[3], 2); /* 5 and 7 in [4, 8) */
	CHECK_EQ(h->buckets[64], 1);
	CHECK(linker_hist_find(&a, "none") == NULL);
}

static void long_names_are_truncated_consistently(void)
{
	static struct linker_counters a;
	memset(&a, 0, sizeof a);
	char long_name[100];
	memset(long_name, 'n', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = '\0';
	CHECK_EQ(linker_counter_add(&a, long_name, 1), 0);
	CHECK_EQ(linker_counter_add(&a, long_name, 1), 0);
	CHECK_EQ(linker_counter_get(&a, long_name), 2);
	CHECK_EQ(strlen(a.counters[0].name), MS_NAME_MAX - 1);
}

HOSTTEST_MAIN(HOSTTEST_CASE(large_model_uses_absolute_64),
	      HOSTTEST_CASE(pc_relative_32_and_plt32_are_computed),
	      HOSTTEST_CASE(absolute_32_that_does_not_fit_is_refused),
	      HOSTTEST_CASE(counters_add_and_merge), HOSTTEST_CASE(histograms_use_log2_buckets),
	      HOSTTEST_CASE(long_names_are_truncated_consistently))
