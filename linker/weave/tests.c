/*
 * The linker suite: the example aspects (embedded in the kernel by the build)
 * loaded, linked `direct` and counted against calls the test makes itself;
 * hostile objects, made by mutating a real one, refused with the right
 * message; a faulting and a looping advice unlinked and reported while the
 * join point they were woven into completes and the kernel keeps serving.
 * Every aspect here is woven into vfs.stat, which nothing else calls while
 * the suites run.
 */
#include "console/console.h"
#include "kshell/kshell.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/internal.h"
#include "mm/mm.h"
#include "time/time.h"
#include "vfs/vfs.h"

#define CALLS 10

/* KTAP diagnostics lines. */
#define ktest_log(t, format, ...) pr_info("    # %s: " format "\n", (t)->name, __VA_ARGS__)

static bool contains(const char *text, const char *part)
{
	size_t n = strlen(part);
	for (; *text; text++)
		if (strncmp(text, part, n) == 0)
			return true;
	return false;
}

/* Loads the embedded aspect name; NULL (and a failure) when it cannot. */
#define TEST_BUDGET_NS (5ULL * 1000 * 1000 * 1000)

static struct aspect *load(struct ktest *t, const char *name)
{
	size_t size;
	const void *image = linker_builtin_image(name, &size);
	EXPECT_TRUE(t, image != NULL);
	if (!image)
		return NULL;
	char error[LINKER_ERROR_MAX];
	struct aspect *aspect = NULL;
	int err = linker_load(image, size, &aspect, error, sizeof error);
	EXPECT_EQ(t, err, 0);
	if (err)
		ktest_log(t, "loading %s: %s", name, error);
	/* The budget is wall-clock time, and a busy host can stall QEMU for
	 * longer than the default inside correct advice: only the budget's own
	 * test (looping_advice_is_aborted_by_the_tick) runs with a short one. */
	if (aspect)
		aspect->budget_ns = TEST_BUDGET_NS;
	return err ? NULL : aspect;
}

static void stat_root(struct ktest *t, int times)
{
	struct vfs_stat st;
	for (int i = 0; i < times; i++)
		EXPECT_EQ(t, vfs_stat("/", &st), 0);
}

static void every_example_loads_and_unloads(struct ktest *t)
{
	static const char *const names[] = {"callcount", "latency", "tracer",
					    "faulty",    "loopy",   "scribbler"};
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		struct aspect *aspect = load(t, names[i]);
		if (!aspect)
			continue;
		EXPECT_TRUE(t, strcmp(aspect->name, names[i]) == 0);
		EXPECT_TRUE(t, aspect->object.advice_count >= 1);
		struct aspect *found = aspect_find(names[i]);
		EXPECT_TRUE(t, found == aspect);
		aspect_put(found);
		EXPECT_EQ(t, aspect_unload(aspect), 0);
		EXPECT_EQ(t, aspect_unload(aspect), -ENOENT); /* once only */
		aspect_put(aspect);
		EXPECT_TRUE(t, aspect_find(names[i]) == NULL);
	}
}

static void callcount_counts_every_call_direct(struct ktest *t)
{
	struct aspect *aspect = load(t, "callcount");
	ASSERT_TRUE(t, aspect != NULL);
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	stat_root(t, CALLS);
	EXPECT_EQ(t, aspect_counter_value(aspect, "vfs.stat"), CALLS);
	struct aspect_stats stats;
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_LIVE);
	EXPECT_EQ(t, stats.binding, ASPECT_BINDING_DIRECT);
	EXPECT_TRUE(t, stats.events >= CALLS);
	EXPECT_EQ(t, aspect_unlink(aspect), 0);
	stat_root(t, CALLS); /* not counted: unlinked */
	EXPECT_EQ(t, aspect_counter_value(aspect, "vfs.stat"), CALLS);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
}

static void counts_carry_over_relink_and_unlink(struct ktest *t)
{
	struct aspect *aspect = load(t, "callcount");
	ASSERT_TRUE(t, aspect != NULL);
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	stat_root(t, CALLS);
	EXPECT_EQ(t, aspect_relink(aspect, ASPECT_BINDING_DIRECT), 0);     /* the same: nothing */
	EXPECT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), -EINVAL); /* live already */
	EXPECT_EQ(t, aspect_unlink(aspect), 0);
	EXPECT_EQ(t, aspect_unlink(aspect), -EINVAL);
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	stat_root(t, CALLS);
	EXPECT_EQ(t, aspect_counter_value(aspect, "vfs.stat"), 2 * CALLS);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
}

static void bindings_not_built_in_are_refused(struct ktest *t)
{
	struct aspect *aspect = load(t, "callcount");
	ASSERT_TRUE(t, aspect != NULL);
	EXPECT_EQ(t, aspect_link(aspect, ASPECT_BINDING_NONE), -EINVAL);
	if (!linker_binding_ops(ASPECT_BINDING_SHM))
		EXPECT_EQ(t, aspect_link(aspect, ASPECT_BINDING_SHM), -ENOSYS);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
}

static void latency_fills_a_histogram_per_joinpoint(struct ktest *t)
{
	struct aspect *aspect = load(t, "latency");
	ASSERT_TRUE(t, aspect != NULL);
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	stat_root(t, CALLS);
	EXPECT_EQ(t, aspect_histogram_count(aspect, "vfs.stat_ns"), CALLS);
	EXPECT_EQ(t, aspect_counter_value(aspect, "untimed"), 0);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
}

/* Do an aspect's counters stay readable once it is unlinked and unloaded,
 * until cleared or an aspect of that name is loaded again, and is clearing
 * refused while it is linked? */
static void unloaded_aspect_keeps_its_last_values(struct ktest *t)
{
	struct linker_counters *store = kmalloc(sizeof *store);
	struct aspect_counters_owner owner;
	ASSERT_TRUE(t, store != NULL);
	struct aspect *aspect = load(t, "callcount");
	ASSERT_TRUE(t, aspect != NULL);
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	stat_root(t, CALLS);
	EXPECT_EQ(t, aspect_clear_counters("callcount"), -EBUSY);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
	ASSERT_EQ(t, aspect_copy_counters("callcount", store, &owner), 0);
	EXPECT_EQ(t, owner.state, ASPECT_GONE);
	EXPECT_EQ(t, linker_counter_get(store, "vfs.stat"), CALLS);
	EXPECT_EQ(t, aspect_clear_counters("callcount"), 0);
	EXPECT_EQ(t, aspect_copy_counters("callcount", store, &owner), -ENOENT);
	EXPECT_EQ(t, aspect_clear_counters("callcount"), -ENOENT);

	aspect = load(t, "callcount");
	ASSERT_TRUE(t, aspect != NULL);
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	stat_root(t, CALLS);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
	aspect = load(t, "callcount"); /* a new life: the old values are gone */
	ASSERT_TRUE(t, aspect != NULL);
	ASSERT_EQ(t, aspect_copy_counters("callcount", store, &owner), 0);
	EXPECT_EQ(t, owner.state, ASPECT_LOADED);
	EXPECT_EQ(t, linker_counter_get(store, "vfs.stat"), 0);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
	EXPECT_EQ(t, aspect_clear_counters("callcount"), 0);
	kfree(store);
}

static void tracer_emits_a_record_per_call(struct ktest *t)
{
	struct aspect *aspect = load(t, "tracer");
	ASSERT_TRUE(t, aspect != NULL);
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	stat_root(t, CALLS);
	EXPECT_EQ(t,
		  aspect_counter_value(aspect, "records") + aspect_counter_value(aspect, "dropped"),
		  CALLS);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
}

/* The failure is reported at once; the linker's thread unlinks it later, the
 * test does it now. */
static void expect_contained(struct ktest *t, struct aspect *aspect, const char *why)
{
	struct aspect_stats stats;
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.faults, 1);
	EXPECT_TRUE(t, contains(stats.last_failure, why));
	ktest_log(t, "reported: %s", stats.last_failure);
	linker_reap_failed();
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_LOADED);
	EXPECT_EQ(t, stats.weaves, 0);
	stat_root(t, CALLS); /* the kernel keeps serving, without the aspect */
}

static void faulting_advice_is_unlinked_and_the_call_completes(struct ktest *t)
{
	struct aspect *aspect = load(t, "faulty");
	ASSERT_TRUE(t, aspect != NULL);
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	stat_root(t, 1);
	expect_contained(t, aspect, "page fault at text+0x");
	EXPECT_EQ(t, aspect_counter_value(aspect, "before_fault"), 1);
	EXPECT_EQ(t, aspect_counter_value(aspect, "after_fault"), 0);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
}

/* One more misuse by scribbler (one stat): is it contained (failure number
 * faults, naming why), is the aspect unlinked, and does the kernel go on?
 * Then it is linked again for the next. */
static void expect_scribble_contained(struct ktest *t, struct aspect *aspect, uint64_t faults,
				      const char *why)
{
	stat_root(t, 1);
	struct aspect_stats stats;
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.faults, faults);
	EXPECT_TRUE(t, contains(stats.last_failure, why));
	ktest_log(t, "contained: %s", stats.last_failure);
	linker_reap_failed();
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_LOADED);
	stat_root(t, CALLS); /* the kernel keeps serving, without the aspect */
	EXPECT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
}

/* Is an aspect that misuses memory outside its own data caught every way it
 * tries (the ABI asked to write kernel memory, a made-up context, writes to
 * read-only text and data, a non-canonical pointer, an unmapped kernel
 * address), unlinked each time, with the kernel serving throughout? */
static void aspect_writing_outside_its_data_is_contained(struct ktest *t)
{
	struct aspect *aspect = load(t, "scribbler");
	ASSERT_TRUE(t, aspect != NULL);
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	expect_scribble_contained(t, aspect, 1, "ms_program_name: asked the kernel to write");
	expect_scribble_contained(t, aspect, 2, "ms_device_counter: asked the kernel to write");
	stat_root(t, 1); /* a made-up ms_ctx: zeros, no fault */
	EXPECT_EQ(t, aspect_counter_value(aspect, "made_up_ctx_answered"), 1);
	struct aspect_stats stats;
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_LIVE);
	expect_scribble_contained(t, aspect, 3, "page fault at text+0x");
	expect_scribble_contained(t, aspect, 4, "general protection");
	expect_scribble_contained(t, aspect, 5, "page fault at text+0x");
	expect_scribble_contained(t, aspect, 6, "page fault at text+0x");
	EXPECT_EQ(t, aspect_counter_value(aspect, "read"), 0);
	expect_scribble_contained(t, aspect, 7, "memset: asked the kernel to write");
	expect_scribble_contained(t, aspect, 8, "page fault in the ABI's memcpy");
	expect_scribble_contained(t, aspect, 9, "page fault in the ABI's memcpy");
	EXPECT_EQ(t, aspect_counter_value(aspect, "compared"), 0);
	stat_root(t, 1); /* memmove both ways within its data: allowed, right */
	EXPECT_EQ(t, aspect_counter_value(aspect, "moved_right"), 1);
	expect_scribble_contained(t, aspect, 10, "memcpy: asked the kernel to write");
	expect_scribble_contained(t, aspect, 11, "ms_program_name: asked the kernel to write");
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
}

static void looping_advice_is_aborted_by_the_tick(struct ktest *t)
{
	struct aspect *aspect = load(t, "loopy");
	ASSERT_TRUE(t, aspect != NULL);
	aspect->budget_ns = LINKER_DEFAULT_BUDGET_NS;
	ASSERT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	uint64_t start = clock_ns();
	stat_root(t, 1);
	uint64_t took = clock_ns() - start;
	ktest_log(t, "the looping call returned after %lu us", (unsigned long)(took / 1000));
	EXPECT_TRUE(t, took >= aspect->budget_ns);
	expect_contained(t, aspect, "ran past its budget");
	EXPECT_EQ(t, aspect_counter_value(aspect, "entered"), 1);
	EXPECT_EQ(t, aspect_unload(aspect), 0);
	aspect_put(aspect);
}

/* ---- Hostile objects: a real object with one thing broken ------------------ */

struct mutated {
	uint8_t *bytes;
	size_t size;
	struct linker_ehdr *header;
	struct linker_shdr *sections;
};

static bool mutate_begin(struct ktest *t, struct mutated *m)
{
	const void *image = linker_builtin_image("callcount", &m->size);
	if (!EXPECT_TRUE(t, image != NULL))
		return false;
	m->bytes = kmalloc(m->size);
	if (!EXPECT_TRUE(t, m->bytes != NULL))
		return false;
	memcpy(m->bytes, image, m->size);
	m->header = (struct linker_ehdr *)m->bytes;
	m->sections = (struct linker_shdr *)(m->bytes + m->header->e_shoff);
	return true;
}

static unsigned find_section(struct mutated *m, uint32_t type, unsigned from)
{
	for (unsigned i = from; i < m->header->e_shnum; i++)
		if (m->sections[i].sh_type == type)
			return i;
	return 0;
}

/* The first relocation of a loaded section. */
static struct linker_rela *first_relocation(struct mutated *m)
{
	for (unsigned i = 1; (i = find_section(m, LINKER_SHT_RELA, i)); i++) {
		struct linker_shdr *target = &m->sections[m->sections[i].sh_info];
		if ((target->sh_flags & LINKER_SHF_ALLOC) && m->sections[i].sh_size)
			return (struct linker_rela *)(m->bytes + m->sections[i].sh_offset);
	}
	return NULL;
}

static void expect_refused(struct ktest *t, struct mutated *m, size_t size, int expected_err,
			   const char *message)
{
	char error[LINKER_ERROR_MAX];
	struct aspect *aspect = NULL;
	int err = linker_load(m->bytes, size, &aspect, error, sizeof error);
	EXPECT_EQ(t, err, expected_err);
	EXPECT_TRUE(t, contains(error, message));
	ktest_log(t, "refused: %s", error);
	if (!err) {
		aspect_unload(aspect);
		aspect_put(aspect);
	}
	kfree(m->bytes);
}

static void truncated_object_is_refused(struct ktest *t)
{
	struct mutated m;
	if (!mutate_begin(t, &m))
		return;
	expect_refused(t, &m, 40, -ENOEXEC, "truncated");
	if (!mutate_begin(t, &m))
		return;
	expect_refused(t, &m, m.size - 100, -ENOEXEC, "past end of file");
}

static void section_past_end_is_refused(struct ktest *t)
{
	struct mutated m;
	if (!mutate_begin(t, &m))
		return;
	unsigned text = 1;
	m.sections[text].sh_offset = m.size - 2;
	expect_refused(t, &m, m.size, -ENOEXEC, "section 1 extends past end of file");
}

static void four_gib_section_is_refused(struct ktest *t)
{
	struct mutated m;
	if (!mutate_begin(t, &m))
		return;
	m.sections[1].sh_size = 1ULL << 32;
	expect_refused(t, &m, m.size, -ENOEXEC, "section 1 is too large (4294967296 bytes");
}

static void overlapping_sections_are_refused(struct ktest *t)
{
	struct mutated m;
	if (!mutate_begin(t, &m))
		return;
	unsigned symtab = find_section(&m, LINKER_SHT_SYMTAB, 1);
	ASSERT_TRUE(t, symtab != 0);
	m.sections[symtab].sh_offset = m.sections[1].sh_offset;
	expect_refused(t, &m, m.size, -ENOEXEC, "overlap");
}

static void symbol_index_out_of_range_is_refused(struct ktest *t)
{
	struct mutated m;
	if (!mutate_begin(t, &m))
		return;
	struct linker_rela *r = first_relocation(&m);
	ASSERT_TRUE(t, r != NULL);
	r->r_info = (9999ULL << 32) | (r->r_info & 0xffffffffu);
	expect_refused(t, &m, m.size, -ENOEXEC, "symbol index 9999 out of range");
}

static void unsupported_relocation_is_refused(struct ktest *t)
{
	struct mutated m;
	if (!mutate_begin(t, &m))
		return;
	struct linker_rela *r = first_relocation(&m);
	ASSERT_TRUE(t, r != NULL);
	r->r_info = (r->r_info & ~0xffffffffULL) | 24;
	expect_refused(t, &m, m.size, -ENOEXEC, "relocation type 24 not supported");
}

static void import_outside_the_abi_is_refused(struct ktest *t)
{
	struct mutated m;
	if (!mutate_begin(t, &m))
		return;
	unsigned symtab = find_section(&m, LINKER_SHT_SYMTAB, 1);
	ASSERT_TRUE(t, symtab != 0);
	struct linker_shdr *strtab = &m.sections[m.sections[symtab].sh_link];
	char *strings = (char *)m.bytes + strtab->sh_offset;
	char *name = NULL;
	for (size_t at = 0; at < strtab->sh_size; at += strlen(strings + at) + 1)
		if (strcmp(strings + at, "ms_counter_add") == 0)
			name = strings + at;
	ASSERT_TRUE(t, name != NULL);
	memcpy(name, "kmalloc", 8);
	expect_refused(t, &m, m.size, -ENOENT,
		       "undefined symbol 'kmalloc' (not in the aspect ABI)");
}

static void not_an_aspect_is_refused(struct ktest *t)
{
	struct mutated m;
	if (!mutate_begin(t, &m))
		return;
	m.header->e_type = 2; /* ET_EXEC */
	expect_refused(t, &m, m.size, -ENOEXEC, "not ET_REL");
}

/* A caller that looked an aspect up while another unloaded it (the shell and
 * scopectl at once) holds a reference: every call on it fails or reads its
 * last state, a second unload is refused, and the memory goes with the last
 * reference, not before. */
static void a_reference_outlives_an_unload_by_another(struct ktest *t)
{
	struct aspect *loaded = load(t, "callcount");
	ASSERT_TRUE(t, loaded != NULL);
	ASSERT_EQ(t, aspect_link(loaded, ASPECT_BINDING_DIRECT), 0);
	stat_root(t, CALLS);
	struct aspect *held = aspect_find("callcount");
	ASSERT_TRUE(t, held == loaded);
	EXPECT_EQ(t, kshell_execute_line("aspect unload callcount"), 0);
	EXPECT_TRUE(t, aspect_find("callcount") == NULL);
	EXPECT_EQ(t, aspect_unload(held), -ENOENT);
	EXPECT_EQ(t, aspect_link(held, ASPECT_BINDING_DIRECT), -EINVAL);
	EXPECT_EQ(t, aspect_relink(held, ASPECT_BINDING_SHM), -EINVAL);
	EXPECT_EQ(t, aspect_unlink(held), -EINVAL);
	struct aspect_stats stats;
	EXPECT_EQ(t, aspect_get_stats(held, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_GONE);
	EXPECT_EQ(t, aspect_counter_value(held, "vfs.stat"), 0); /* kept by name */
	EXPECT_FALSE(t, aspect_has_counter(held, "vfs.stat"));
	EXPECT_EQ(t, kshell_execute_line("aspect counters callcount"), 0);
	aspect_put(held);
	aspect_put(loaded); /* the last reference: freed here */
	EXPECT_EQ(t, aspect_clear_counters("callcount"), 0);
}

static void kernel_console_command_drives_the_linker(struct ktest *t)
{
	EXPECT_EQ(t, kshell_execute_line("aspect load callcount"), 0);
	EXPECT_EQ(t, kshell_execute_line("aspect link callcount direct"), 0);
	stat_root(t, 3);
	EXPECT_EQ(t, kshell_execute_line("aspect stats"), 0);
	EXPECT_EQ(t, kshell_execute_line("aspect counters callcount"), 0);
	EXPECT_EQ(t, kshell_execute_line("aspect unlink callcount"), 0);
	EXPECT_EQ(t, kshell_execute_line("aspect unload callcount"), 0);
	EXPECT_EQ(t, kshell_execute_line("aspect load nosuch"), -ENOENT);
}

KTEST_SUITE(linker, KTEST_CASE(every_example_loads_and_unloads),
	    KTEST_CASE(callcount_counts_every_call_direct),
	    KTEST_CASE(counts_carry_over_relink_and_unlink),
	    KTEST_CASE(bindings_not_built_in_are_refused),
	    KTEST_CASE(latency_fills_a_histogram_per_joinpoint),
	    KTEST_CASE(unloaded_aspect_keeps_its_last_values),
	    KTEST_CASE(aspect_writing_outside_its_data_is_contained),
	    KTEST_CASE(tracer_emits_a_record_per_call),
	    KTEST_CASE(faulting_advice_is_unlinked_and_the_call_completes),
	    KTEST_CASE(looping_advice_is_aborted_by_the_tick),
	    KTEST_CASE(truncated_object_is_refused), KTEST_CASE(section_past_end_is_refused),
	    KTEST_CASE(four_gib_section_is_refused), KTEST_CASE(overlapping_sections_are_refused),
	    KTEST_CASE(symbol_index_out_of_range_is_refused),
	    KTEST_CASE(unsupported_relocation_is_refused),
	    KTEST_CASE(import_outside_the_abi_is_refused), KTEST_CASE(not_an_aspect_is_refused),
	    KTEST_CASE(a_reference_outlives_an_unload_by_another),
	    KTEST_CASE(kernel_console_command_drives_the_linker));
