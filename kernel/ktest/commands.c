/*
 * The `ktest` command of the kernel shell: run suites now, on a running
 * system, and print them as KTAP (the boot-time runner, ktest.c, runs the
 * selection of the ktest= parameter and then stops the machine).
 *
 *     ktest all           ktest mm sched
 */
#include "ktest/ktest.h"

#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/string.h"

/* FIXME: a copy of the ktest runner's loop, because kernel/ktest runs only the
 * boot-time selection; it should offer "run this selection now" itself. */
extern const struct ktest_suite __ktest_suites_start[], __ktest_suites_end[];

static bool suite_selected(const struct ktest_suite *suite, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "all") || !strcmp(argv[i], suite->name))
			return true;
	}
	return false;
}

/* Runs one suite as KTAP; returns its failed cases. */
static int run_suite(const struct ktest_suite *suite, unsigned number)
{
	int failed = 0;
	kshell_print("    # Subtest: %s\n    1..%zu\n", suite->name, suite->case_count);
	for (size_t i = 0; i < suite->case_count; i++) {
		struct ktest t = {.name = suite->cases[i].name};
		suite->cases[i].run(&t);
		failed += t.failures && !t.skipped;
		kshell_print("    %s %zu %s%s%s\n", t.failures && !t.skipped ? "not ok" : "ok",
			     i + 1, t.name, t.skipped ? " # SKIP " : "",
			     t.skipped ? t.skip_reason : "");
	}
	kshell_print("%s %u %s\n", failed ? "not ok" : "ok", number, suite->name);
	return failed;
}

static int cmd_ktest(int argc, char **argv)
{
	unsigned suites = 0;
	int failed = 0;
	if (argc < 2)
		return KSHELL_USAGE;
	for (const struct ktest_suite *s = __ktest_suites_start; s < __ktest_suites_end; s++) {
		if (suite_selected(s, argc, argv))
			failed += run_suite(s, ++suites);
	}
	if (!suites)
		return -ENOENT;
	kshell_print("ktest: %u suite(s), %d case(s) failed\n", suites, failed);
	return 0;
}
KSHELL_COMMAND(ktest, cmd_ktest, "ktest <suite...|all>", "run in-kernel test suites now");
