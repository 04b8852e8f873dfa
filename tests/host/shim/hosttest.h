/*
 * A minimal KTAP test runner for host unit tests, and hooks into the generic
 * kernel shims (kernel_shim.c): the console output the code under test
 * printed, and catching a panic.  Each case runs in order; CHECK* records a
 * failure and goes on, REQUIRE* ends the case.
 *
 *     static void adds_up(void) { CHECK_EQ(1 + 1, 2); }
 *     HOSTTEST_MAIN(HOSTTEST_CASE(adds_up))
 *     // prints "KTAP version 1", "1..1", "ok 1 adds_up"; exit status 1 on failure
 */
#ifndef TESTS_HOST_SHIM_HOSTTEST_H
#define TESTS_HOST_SHIM_HOSTTEST_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

struct hosttest_case {
	const char *name;
	void (*run)(void);
};

#define HOSTTEST_CASE(fn) \
	{                 \
#fn, fn   \
	}

/* Defines main(): runs the cases, prints KTAP, returns 0 if all passed, else 1. */
#define HOSTTEST_MAIN(...)                                                     \
	int main(void)                                                         \
	{                                                                      \
		static const struct hosttest_case cases_[] = {__VA_ARGS__};    \
		return hosttest_run(cases_, sizeof cases_ / sizeof cases_[0]); \
	}

int hosttest_run(const struct hosttest_case *cases, size_t count);

/* Record a failed check ("    # file:line: ..." under the current case);
 * return ok. */
bool hosttest_check(bool ok, const char *file, int line, const char *what);
bool hosttest_check_eq(long long a, long long b, const char *file, int line, const char *a_text,
		       const char *b_text);
bool hosttest_check_str(const char *a, const char *b, const char *file, int line,
			const char *a_text, const char *b_text);
/* Marks the current case skipped, with a reason. */
void hosttest_skip(const char *reason);

#define CHECK(cond)        hosttest_check((cond), __FILE__, __LINE__, #cond)
#define CHECK_EQ(a, b)     hosttest_check_eq((long long)(a), (long long)(b), __FILE__, __LINE__, #a, #b)
#define CHECK_STR_EQ(a, b) hosttest_check_str((a), (b), __FILE__, __LINE__, #a, #b)
#define REQUIRE(cond)             \
	do {                      \
		if (!CHECK(cond)) \
			return;   \
	} while (0)
#define REQUIRE_EQ(a, b)             \
	do {                         \
		if (!CHECK_EQ(a, b)) \
			return;      \
	} while (0)

/* Everything printk/console_write printed since the last clear (kernel_shim.c). */
const char *hosttest_console_output(void);
void hosttest_console_clear(void);

/* Panic catching: panic() longjmps to the innermost catcher, if any. */
extern jmp_buf *hosttest_panic_catcher;
extern char hosttest_last_panic[256];

/* True when stmt panicked; the message is in hosttest_last_panic. */
#define HOSTTEST_PANICS(stmt)                       \
	({                                          \
		jmp_buf catcher_;                   \
		volatile bool panicked_ = false;    \
		hosttest_panic_catcher = &catcher_; \
		if (setjmp(catcher_) == 0) {        \
			stmt;                       \
		} else {                            \
			panicked_ = true;           \
		}                                   \
		hosttest_panic_catcher = NULL;      \
		panicked_;                          \
	})

#endif
