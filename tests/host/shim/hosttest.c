/*
 * The host test runner behind hosttest.h.  Output is KTAP version 1 on stdout:
 * the plan, then one "ok N name" / "not ok N name" line per case, with the
 * failed checks as "    # " diagnostics before it.  State is per process and
 * single-threaded, like the tests.
 */
#include "hosttest.h"

#include <stdio.h>
#include <string.h>

static int case_failures;
static const char *skip_reason;

bool hosttest_check(bool ok, const char *file, int line, const char *what)
{
	if (!ok) {
		printf("    # %s:%d: expected %s\n", file, line, what);
		case_failures++;
	}
	return ok;
}

bool hosttest_check_eq(long long a, long long b, const char *file, int line, const char *a_text,
		       const char *b_text)
{
	if (a != b) {
		printf("    # %s:%d: expected %s == %s, got %lld (%#llx) != %lld (%#llx)\n", file,
		       line, a_text, b_text, a, a, b, b);
		case_failures++;
	}
	return a == b;
}

bool hosttest_check_str(const char *a, const char *b, const char *file, int line,
			const char *a_text, const char *b_text)
{
	bool ok = a && b && strcmp(a, b) == 0;
	if (!ok) {
		printf("    # %s:%d: expected %s == %s, got \"%s\" != \"%s\"\n", file, line, a_text,
		       b_text, a ? a : "(null)", b ? b : "(null)");
		case_failures++;
	}
	return ok;
}

void hosttest_skip(const char *reason)
{
	skip_reason = reason;
}

int hosttest_run(const struct hosttest_case *cases, size_t count)
{
	int failed = 0;
	printf("KTAP version 1\n1..%zu\n", count);
	for (size_t i = 0; i < count; i++) {
		case_failures = 0;
		skip_reason = NULL;
		hosttest_console_clear();
		fflush(stdout);
		cases[i].run();
		if (skip_reason && !case_failures)
			printf("ok %zu %s # SKIP %s\n", i + 1, cases[i].name, skip_reason);
		else
			printf("%s %zu %s\n", case_failures ? "not ok" : "ok", i + 1,
			       cases[i].name);
		failed += case_failures != 0;
		fflush(stdout);
	}
	printf("# %d of %zu failed\n", failed, count);
	return failed ? 1 : 0;
}
