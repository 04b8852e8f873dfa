/*
 * In-kernel test suites, KUnit-style, printed as KTAP on the console.  A suite
 * is a static table placed in a linker section by KTEST_SUITE; the command
 * line picks which to run (ktest=all, ktest=mm,sched).  EXPECT_* records a
 * failure and goes on; ASSERT_* records it and ends the case.
 *
 *     static void frames_come_back(struct ktest *t) { EXPECT_EQ(t, 1, 1); }
 *     KTEST_SUITE(pmm, KTEST_CASE(frames_come_back));
 */
#ifndef KERNEL_KTEST_KTEST_H
#define KERNEL_KTEST_KTEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ktest {
	const char *name;
	int failures;
	bool skipped;
	const char *skip_reason;
};

struct ktest_case {
	const char *name;
	void (*run)(struct ktest *t);
};

struct ktest_suite {
	const char *name;
	const struct ktest_case *cases;
	size_t case_count;
};

#define KTEST_CASE(fn)  \
	{               \
#fn, fn \
	}

#define KTEST_SUITE(suite_name, ...)                                                     \
	static const struct ktest_case suite_name##_ktest_cases[] = {__VA_ARGS__};       \
	static const struct ktest_suite suite_name##_ktest_suite                         \
	    __attribute__((section(".ktest.suites." #suite_name), used, aligned(8))) = { \
		#suite_name, suite_name##_ktest_cases,                                   \
		sizeof(suite_name##_ktest_cases) / sizeof(suite_name##_ktest_cases[0])}

/* Records a failed check with its location; returns ok so ASSERT can return. */
bool ktest_check(struct ktest *t, bool ok, const char *file, int line, const char *what);
bool ktest_check_eq(struct ktest *t, uint64_t a, uint64_t b, const char *file, int line,
		    const char *a_text, const char *b_text);
void ktest_skip(struct ktest *t, const char *reason);

#define EXPECT_TRUE(t, cond)  ktest_check(t, (cond), __FILE__, __LINE__, #cond)
#define EXPECT_FALSE(t, cond) ktest_check(t, !(cond), __FILE__, __LINE__, "!(" #cond ")")
#define EXPECT_EQ(t, a, b) \
	ktest_check_eq(t, (uint64_t)(a), (uint64_t)(b), __FILE__, __LINE__, #a, #b)
#define EXPECT_NE(t, a, b) ktest_check(t, (a) != (b), __FILE__, __LINE__, #a " != " #b)
#define ASSERT_TRUE(t, cond)               \
	do {                               \
		if (!EXPECT_TRUE(t, cond)) \
			return;            \
	} while (0)
#define ASSERT_EQ(t, a, b)               \
	do {                             \
		if (!EXPECT_EQ(t, a, b)) \
			return;          \
	} while (0)
#define ASSERT_NE(t, a, b)               \
	do {                             \
		if (!EXPECT_NE(t, a, b)) \
			return;          \
	} while (0)

/* The suites exist only in the test kernel (KERNEL_TESTS=1); the kernel that
 * `make run` boots has none, and these say so. */
#ifdef KERNEL_TESTS
/* Runs the suites the command line selected; returns the number of failed
 * cases, or -1 when no suite was selected. */
int ktest_run_selected(void);
/* True when the command line asked for test suites (the kernel then stops
 * after running them). */
bool ktest_requested(void);
#else
static inline int ktest_run_selected(void)
{
	return -1;
}
static inline bool ktest_requested(void)
{
	return false;
}
#endif

/* Spins (cpu_relax) until done(arg) is true.  Returns false when it is not
 * after guard_ns: a bound against a hang only, which the caller reports as
 * a failure that names the hang; it never decides a result. */
bool ktest_spin_until(bool (*done)(void *arg), void *arg, uint64_t guard_ns);

#endif
