/*
 * The KTAP runner.  Output follows KTAP version 1: a top-level plan over the
 * selected suites, each suite a nested subtest with a plan over its cases.
 * A failed check prints a "# " diagnostic line before its case's result, so
 * the report says where and what.  Suites are selected by the ktest= option.
 */
#include "ktest/ktest.h"

#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "lib/string.h"
#include "time/time.h"

#define SELECTION_MAX 256

extern const struct ktest_suite __ktest_suites_start[], __ktest_suites_end[];

static char selection[SELECTION_MAX];

static int set_ktest(const char *value)
{
	if (!value || !*value || strlen(value) >= SELECTION_MAX)
		return -1;
	strlcpy(selection, value, sizeof selection);
	return 0;
}
KERNEL_PARAM(ktest, set_ktest, "all or suite,suite,...: run in-kernel tests, then stop");

bool ktest_requested(void)
{
	return selection[0] != '\0';
}

bool ktest_check(struct ktest *t, bool ok, const char *file, int line, const char *what)
{
	if (!ok) {
		console_print("    # %s: %s:%d: expected %s\n", t->name, file, line, what);
		t->failures++;
	}
	return ok;
}

bool ktest_check_eq(struct ktest *t, uint64_t a, uint64_t b, const char *file, int line,
		    const char *a_text, const char *b_text)
{
	if (a != b) {
		console_print("    # %s: %s:%d: expected %s == %s, got %#lx != %#lx\n", t->name,
			      file, line, a_text, b_text, a, b);
		t->failures++;
	}
	return a == b;
}

bool ktest_spin_until(bool (*done)(void *arg), void *arg, uint64_t guard_ns)
{
	uint64_t give_up = clock_ns() + guard_ns;
	while (!done(arg)) {
		if (clock_ns() > give_up)
			return false;
		cpu_relax();
	}
	return true;
}

void ktest_skip(struct ktest *t, const char *reason)
{
	t->skipped = true;
	t->skip_reason = reason;
}

/* Is name in the comma-separated selection (or is the selection "all")? */
static bool selected(const char *name)
{
	if (!strcmp(selection, "all"))
		return true;
	size_t length = strlen(name);
	for (const char *p = selection; *p;) {
		const char *comma = strchr(p, ',');
		size_t word = comma ? (size_t)(comma - p) : strlen(p);
		if (word == length && !strncmp(p, name, length))
			return true;
		p += word + (comma ? 1 : 0);
	}
	return false;
}

static bool run_case(const struct ktest_case *c, unsigned number)
{
	struct ktest t = {.name = c->name};
	c->run(&t);
	if (t.skipped && t.failures == 0) {
		console_print("    ok %u %s # SKIP %s\n", number, c->name, t.skip_reason);
		return true;
	}
	if (t.skipped) /* a failure before the skip still fails the case */
		console_print("    # %s: skipped (%s) after %d failures\n", c->name, t.skip_reason,
			      t.failures);
	console_print("    %s %u %s\n", t.failures ? "not ok" : "ok", number, c->name);
	return t.failures == 0;
}

/* Runs one suite; returns the number of failed cases. */
static int run_suite(const struct ktest_suite *suite, unsigned number)
{
	int failed = 0;
	console_print("    KTAP version 1\n    # Subtest: %s\n    1..%zu\n", suite->name,
		      suite->case_count);
	for (size_t i = 0; i < suite->case_count; i++) {
		if (!run_case(&suite->cases[i], (unsigned)i + 1))
			failed++;
	}
	console_print("%s %u %s\n", failed ? "not ok" : "ok", number, suite->name);
	return failed;
}

static unsigned count_selected(void)
{
	unsigned n = 0;
	for (const struct ktest_suite *s = __ktest_suites_start; s < __ktest_suites_end; s++)
		n += selected(s->name);
	return n;
}

int ktest_run_selected(void)
{
	if (!ktest_requested())
		return -1;
	int failed = 0;
	unsigned number = 0;
	console_print("KTAP version 1\n1..%u\n", count_selected());
	for (const struct ktest_suite *s = __ktest_suites_start; s < __ktest_suites_end; s++) {
		if (selected(s->name))
			failed += run_suite(s, ++number);
	}
	return failed;
}
