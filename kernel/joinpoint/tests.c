/*
 * The joinpoint suite: the bytes at a site, advice order, what advice sees,
 * the recursion guard, nested join points, every weaving error, patterns,
 * advice on the interrupt path, attach/detach racing threads and the timer
 * tick, and the join points at interrupt entry, exceptions and switches; the
 * fast path of _NOSLEEP join points (every shape, nesting both ways, the
 * same storm); after advice on the CPU a call ended on.  The jptest.* join
 * points below exist for these tests only.
 */
#include "joinpoint/defer.h"
#include "joinpoint/internal.h"
#include "joinpoint/section.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/traps.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "kshell/kshell.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "smp/smp.h"
#include "time/time.h"

JOINPOINT_DEFINE(jptest, add, long, long, a, long, b)
{
	return a + b;
}

JOINPOINT_DEFINE(jptest, outer, long, long, value)
{
	return jptest_add(value, 1) * 2;
}

JOINPOINT_DEFINE_VOID(jptest, touch, uint64_t *, counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* The same on the fast path, plus one without arguments. */
JOINPOINT_DEFINE_NOSLEEP(jptest, fast_add, long, long, a, long, b)
{
	return a + b;
}

JOINPOINT_DEFINE_NOSLEEP(jptest, fast_outer, long, long, value)
{
	return jptest_fast_add(value, 1) * 2 + jptest_add(0, 0);
}

JOINPOINT_DEFINE_VOID_NOSLEEP(jptest, fast_touch, uint64_t *, counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

static uint64_t fast_bumps;

JOINPOINT_DEFINE(jptest, slow_outer, long, long, value)
{
	return jptest_fast_add(value, 2);
}

JOINPOINT_DEFINE_VOID_NOSLEEP(jptest, fast_bump)
{
	fast_bumps++;
}

JOINPOINT_DEFINE_NOSLEEP(jptest, fast_six, long, long, a, long, b, long, c, long, d, long, e, long,
			 f)
{
	return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f;
}

/* Moves the calling thread to CPU cpu: thread_set_affinity returns on an
 * allowed CPU, so the call ends on another CPU than it began on, as a call
 * that sleeps may. */
JOINPOINT_DEFINE(jptest, move_to, long, long, cpu)
{
	return thread_set_affinity(thread_current(), SMP_CPU_BIT(cpu));
}

/* ---- Recording advice ----------------------------------------------------- */

#define TRACE_MAX 32

static char trace[TRACE_MAX + 1];
static unsigned trace_length;

static void trace_reset(void)
{
	trace_length = 0;
	trace[0] = '\0';
}

static void trace_add(char c)
{
	if (trace_length < TRACE_MAX) {
		trace[trace_length++] = c;
		trace[trace_length] = '\0';
	}
}

/* The cookie is the letter: upper case before, lower case after. */
static void trace_before(struct jp_context *context, void *cookie)
{
	trace_add((char)(uintptr_t)cookie);
}

static void trace_after(struct jp_context *context, void *cookie)
{
	trace_add((char)((uintptr_t)cookie + ('a' - 'A')));
}

#define TRACER(letter, prio)                                                            \
	{                                                                               \
		.name = "trace-" #letter, .before = trace_before, .after = trace_after, \
		.cookie = (void *)(uintptr_t) #letter[0], .priority = prio              \
	}

struct tally {
	uint64_t before;
	uint64_t after;
};

static void tally_before(struct jp_context *context, void *cookie)
{
	__atomic_fetch_add(&((struct tally *)cookie)->before, 1, __ATOMIC_RELAXED);
}

static void tally_after(struct jp_context *context, void *cookie)
{
	__atomic_fetch_add(&((struct tally *)cookie)->after, 1, __ATOMIC_RELAXED);
}

static bool sites_are(const char *name, enum jp_site_state state)
{
	const struct joinpoint *jp = jp_find(name);
	const struct jp_site *first, *last;
	unsigned found = 0;
	jp_site_bounds(&first, &last);
	for (const struct jp_site *site = first; jp && site < last; site++) {
		if (site->joinpoint != jp)
			continue;
		found++;
		if (jp_site_read(site) != state)
			return false;
	}
	return found > 0;
}

static unsigned advice_on(const char *name)
{
	struct jp_stats stats;
	jp_get_stats(jp_find(name), &stats);
	return stats.advice;
}

/* ---- Cases ---------------------------------------------------------------- */

/* Is a disabled join point a NOP, patched to a jump and back? */
static void disabled_site_is_nop_until_attached(struct ktest *t)
{
	static const struct jp_advice tracer = TRACER(A, 0);
	const struct joinpoint *jp = jp_find("jptest.add");
	ASSERT_TRUE(t, jp != NULL);
	if (advice_on("jptest.add"))
		return ktest_skip(t, "jptest.add has advice from the command line");
	const struct jp_site *first, *last;
	jp_site_bounds(&first, &last);
	const uint8_t *code = NULL;
	for (const struct jp_site *site = first; site < last && !code; site++)
		code = site->joinpoint == jp ? (const uint8_t *)site->code : NULL;
	ASSERT_TRUE(t, code != NULL);
	static const uint8_t nop[5] = {0x0f, 0x1f, 0x44, 0x00, 0x00};
	EXPECT_EQ(t, memcmp(code, nop, 5), 0);

	int handle = jp_attach("jptest.add", &tracer);
	ASSERT_TRUE(t, handle > 0);
	EXPECT_EQ(t, code[0], 0xe9);
	EXPECT_TRUE(t, sites_are("jptest.add", JP_SITE_JUMP));
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_EQ(t, memcmp(code, nop, 5), 0);
	EXPECT_TRUE(t, sites_are("jptest.add", JP_SITE_NOP));
}

/* Does before run in priority order and after in the reverse? */
static void advice_runs_in_priority_order(struct ktest *t)
{
	static const struct jp_advice a = TRACER(A, 10), b = TRACER(B, -5), c = TRACER(C, 10);
	int ha = jp_attach("jptest.add", &a);
	int hb = jp_attach("jptest.add", &b);
	int hc = jp_attach("jptest.add", &c);
	ASSERT_TRUE(t, ha > 0 && hb > 0 && hc > 0);
	trace_reset();
	EXPECT_EQ(t, jptest_add(2, 3), 5);
	EXPECT_EQ(t, strcmp(trace, "BACcab"), 0);
	jp_detach(hb);
	trace_reset();
	jptest_add(0, 0);
	EXPECT_EQ(t, strcmp(trace, "ACca"), 0);
	jp_detach(ha);
	jp_detach(hc);
	trace_reset();
	jptest_add(0, 0);
	EXPECT_EQ(t, trace_length, 0);
}

static uint64_t seen_args[2], seen_ret;
static const struct joinpoint *seen_jp;

static void look_before(struct jp_context *context, void *cookie)
{
	seen_jp = context->joinpoint;
	seen_args[0] = context->args[0];
	seen_args[1] = context->args[1];
}

static void look_after(struct jp_context *context, void *cookie)
{
	seen_ret = context->ret;
	if (cookie)
		context->ret = 1000;
}

/* Does advice see the arguments and the result, and can after replace it? */
static void advice_sees_args_and_result(struct ktest *t)
{
	static const struct jp_advice look = {
	    .name = "look", .before = look_before, .after = look_after};
	static const struct jp_advice replace = {
	    .name = "replace", .after = look_after, .cookie = (void *)1};
	int handle = jp_attach("jptest.add", &look);
	ASSERT_TRUE(t, handle > 0);
	EXPECT_EQ(t, jptest_add(-7, 3), -4);
	EXPECT_TRUE(t, seen_jp == jp_find("jptest.add"));
	EXPECT_EQ(t, seen_args[0], (uint64_t)-7);
	EXPECT_EQ(t, seen_args[1], 3);
	EXPECT_EQ(t, seen_ret, (uint64_t)-4);
	int second = jp_attach("jptest.add", &replace);
	ASSERT_TRUE(t, second > 0);
	EXPECT_EQ(t, jptest_add(1, 1), 1000);
	jp_detach(second);
	jp_detach(handle);
	EXPECT_EQ(t, jptest_add(1, 1), 2);
}

static void reenter_before(struct jp_context *context, void *cookie)
{
	trace_add('R');
	jptest_add(100, 100); /* a join point inside advice: runs no advice */
}

/* Can advice call a module API without running advice again? */
static void advice_calling_a_joinpoint_does_not_recurse(struct ktest *t)
{
	static const struct jp_advice reenter = {.name = "reenter", .before = reenter_before};
	struct jp_stats before, after;
	jp_get_stats(jp_find("jptest.add"), &before);
	int handle = jp_attach("jptest.add", &reenter);
	ASSERT_TRUE(t, handle > 0);
	trace_reset();
	EXPECT_EQ(t, jptest_add(1, 2), 3);
	EXPECT_EQ(t, jptest_add(1, 2), 3);
	EXPECT_EQ(t, strcmp(trace, "RR"), 0);
	jp_get_stats(jp_find("jptest.add"), &after);
	EXPECT_EQ(t, after.skipped - before.skipped, 2);
	EXPECT_EQ(t, this_cpu()->jp_sections & 1, 0);
	jp_detach(handle);
}

/* A module API calling another: does each level run its advice, nested? */
static void nested_joinpoints_each_run_advice(struct ktest *t)
{
	static const struct jp_advice outer = TRACER(O, 0), inner = TRACER(I, 0);
	int ho = jp_attach("jptest.outer", &outer);
	int hi = jp_attach("jptest.add", &inner);
	ASSERT_TRUE(t, ho > 0 && hi > 0);
	trace_reset();
	EXPECT_EQ(t, jptest_outer(4), 10);
	EXPECT_EQ(t, strcmp(trace, "OIio"), 0);
	jp_detach(hi);
	jp_detach(ho);
}

static void noop_advice(struct jp_context *context, void *cookie)
{
}

/* Does every bad request fail with its own error and change nothing? */
static void weaving_errors_are_distinct_and_change_nothing(struct ktest *t)
{
	static struct jp_advice filler[JP_MAX_ADVICE];
	static const struct jp_advice empty = {.name = "empty"};
	static const struct jp_advice once = {.name = "once", .before = noop_advice};

	EXPECT_EQ(t, jp_attach("nosuch.*", &once), -ENOENT);
	EXPECT_EQ(t, jp_attach("jptest.add", &empty), -EINVAL);
	EXPECT_EQ(t, jp_attach(NULL, &once), -EINVAL);
	EXPECT_EQ(t, jp_detach(0), -EINVAL);
	EXPECT_EQ(t, jp_detach(12345), -EINVAL);

	int handle = jp_attach("jptest.add", &once);
	ASSERT_TRUE(t, handle > 0);
	EXPECT_EQ(t, jp_attach("jptest.*", &once), -EEXIST);
	EXPECT_EQ(t, advice_on("jptest.outer"), 0);
	EXPECT_TRUE(t, sites_are("jptest.outer", JP_SITE_NOP));

	int handles[JP_MAX_ADVICE];
	for (unsigned i = 0; i + 1 < JP_MAX_ADVICE; i++) {
		filler[i] = (struct jp_advice){.name = "filler", .before = noop_advice};
		handles[i] = jp_attach("jptest.add", &filler[i]);
		EXPECT_TRUE(t, handles[i] > 0);
	}
	filler[JP_MAX_ADVICE - 1] = (struct jp_advice){.name = "extra", .after = noop_advice};
	EXPECT_EQ(t, jp_attach("jptest.*", &filler[JP_MAX_ADVICE - 1]), -ENOSPC);
	EXPECT_EQ(t, advice_on("jptest.add"), JP_MAX_ADVICE);
	EXPECT_EQ(t, advice_on("jptest.outer"), 0);
	EXPECT_EQ(t, jptest_add(20, 22), 42);

	for (unsigned i = 0; i + 1 < JP_MAX_ADVICE; i++)
		EXPECT_EQ(t, jp_detach(handles[i]), 0);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_EQ(t, jp_detach(handle), -EINVAL);
	EXPECT_EQ(t, advice_on("jptest.add"), 0);
	EXPECT_TRUE(t, sites_are("jptest.add", JP_SITE_NOP));
}

/* Attaches filler advice to one module's join points after another ("vfs.*",
 * "net.*", ...; not the jptest module's, which the test uses) until fewer
 * lists than keep are free (a module too large for what is left is passed
 * over: -ENOMEM).  Returns how many handles it put in handles. */
static unsigned drain_the_list_pool(int *handles, unsigned max, unsigned keep)
{
	static const struct jp_advice filler = {.name = "pool-filler", .before = noop_advice};
	const struct joinpoint *first, *last;
	jp_section_bounds(&first, &last);
	unsigned count = 0;
	for (const struct joinpoint *jp = first; jp < last && count < max; jp++) {
		if (jp_list_available() < keep)
			break;
		char pattern[64];
		if (!strcmp(jp->module, "jptest") || !strcmp(jp->module, "sys") ||
		    snprintf(pattern, sizeof pattern, "%s.*", jp->module) >= (int)sizeof pattern)
			continue;
		int handle = jp_attach(pattern, &filler); /* -EEXIST once its module has it */
		if (handle > 0)
			handles[count++] = handle;
	}
	return count;
}

/* The join points of the sys module whose names start with one of the
 * prefixes: where the test's second advice goes. */
static const char *const beside_patterns[] = {"sys.s*", "sys.g*", "sys.m*", "sys.r*"};

static bool beside_matches(const char *name)
{
	for (unsigned i = 0; i < sizeof beside_patterns / sizeof beside_patterns[0]; i++)
		if (!strncmp(name, beside_patterns[i], strlen(beside_patterns[i]) - 1))
			return true;
	return false;
}

/* A detach that needs more new lists than the pool has free (every join
 * point holding one, and the advice sharing many join points with another)
 * still detaches, in rounds, instead of failing and leaving advice its
 * owner is about to free woven. */
static void detach_goes_on_when_the_list_pool_is_short(struct ktest *t)
{
	static const struct jp_advice shared_advice = {.name = "shared", .before = noop_advice};
	static const struct jp_advice beside = {.name = "beside", .before = noop_advice};
	static int fillers[JP_MAX_ATTACHMENTS], besides[4];
	int shared = jp_attach("sys.*", &shared_advice);
	ASSERT_TRUE(t, shared > 0);
	for (unsigned i = 0; i < 4; i++)
		besides[i] = jp_attach(beside_patterns[i], &beside);
	const struct joinpoint *first, *last, *probe = NULL;
	jp_section_bounds(&first, &last);
	unsigned needed = 0;
	for (const struct joinpoint *jp = first; jp < last; jp++)
		if (!strncmp(jp->name, "sys.", 4) && beside_matches(jp->name)) {
			needed++;
			probe = jp;
		}
	ASSERT_TRUE(t, probe != NULL);
	unsigned filled = drain_the_list_pool(fillers, JP_MAX_ATTACHMENTS - 8, needed);
	EXPECT_TRUE(t, jp_list_available() < needed); /* the case under test */
	EXPECT_EQ(t, advice_on(probe->name), 2);
	EXPECT_EQ(t, jp_detach(shared), 0);
	EXPECT_EQ(t, advice_on(probe->name), 1);
	EXPECT_EQ(t, advice_on("sys.close"), 0); /* the shared advice alone was there */
	for (unsigned i = 0; i < filled; i++)
		EXPECT_EQ(t, jp_detach(fillers[i]), 0);
	for (unsigned i = 0; i < 4; i++)
		if (besides[i] > 0)
			EXPECT_EQ(t, jp_detach(besides[i]), 0);
	EXPECT_EQ(t, advice_on(probe->name), 0);
}

/* Does one pattern weave every join point it matches, and only those? */
static void pattern_attaches_every_match(struct ktest *t)
{
	jp_reset_stats();
	int handle = jp_attach("jptest.*", &jp_advice_count);
	ASSERT_TRUE(t, handle > 0);
	EXPECT_TRUE(t, sites_are("jptest.add", JP_SITE_JUMP));
	EXPECT_TRUE(t, sites_are("jptest.outer", JP_SITE_JUMP));
	EXPECT_TRUE(t, sites_are("jptest.touch", JP_SITE_JUMP));
	EXPECT_TRUE(t, sites_are("jp.bench_nop", JP_SITE_NOP) || advice_on("jp.bench_nop"));
	uint64_t counter = 0;
	jptest_outer(1);
	jptest_touch(&counter);
	struct jp_stats stats;
	jp_get_stats(jp_find("jptest.add"), &stats);
	EXPECT_EQ(t, stats.calls, 1);
	jp_get_stats(jp_find("jptest.outer"), &stats);
	EXPECT_EQ(t, stats.calls, 1);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_TRUE(t, sites_are("jptest.touch", JP_SITE_NOP));
}

/* ---- The fast path ---------------------------------------------------------- */

static void fast_reenter_before(struct jp_context *context, void *cookie)
{
	trace_add('R');
	jptest_fast_add(100, 100); /* inside advice: runs no advice */
}

#define TRACE_IS(t, expected) EXPECT_EQ(t, strcmp(trace, expected), 0)

/* On a join point with arguments and a result: does each shape (one before,
 * one after, both, more, timestamps) run its advice in order, see the
 * arguments and the result, and let after replace it? */
static void fast_path_shapes_with_arguments(struct ktest *t)
{
	static const struct jp_advice a = TRACER(A, 10), b = TRACER(B, -5);
	static const struct jp_advice before_only = {
	    .name = "before-only", .before = trace_before, .cookie = (void *)'X'};
	static const struct jp_advice after_only = {
	    .name = "after-only", .after = trace_after, .cookie = (void *)'Y'};
	static const struct jp_advice look = {
	    .name = "look", .before = look_before, .after = look_after};
	static const struct jp_advice replace = {
	    .name = "replace", .after = look_after, .cookie = (void *)1};

	int h = jp_attach("jptest.fast_add", &before_only);
	trace_reset();
	EXPECT_EQ(t, jptest_fast_add(2, 3), 5);
	TRACE_IS(t, "X");
	EXPECT_EQ(t, jp_detach(h), 0);
	h = jp_attach("jptest.fast_add", &after_only);
	trace_reset();
	EXPECT_EQ(t, jptest_fast_add(2, 3), 5);
	TRACE_IS(t, "y");
	EXPECT_EQ(t, jp_detach(h), 0);

	h = jp_attach("jptest.fast_add", &look);
	ASSERT_TRUE(t, h > 0);
	EXPECT_EQ(t, jptest_fast_add(-7, 3), -4);
	EXPECT_TRUE(t, seen_jp == jp_find("jptest.fast_add"));
	EXPECT_EQ(t, seen_args[0], (uint64_t)-7);
	EXPECT_EQ(t, seen_args[1], 3);
	EXPECT_EQ(t, seen_ret, (uint64_t)-4);
	int second = jp_attach("jptest.fast_add", &replace);
	EXPECT_EQ(t, jptest_fast_add(1, 1), 1000);
	EXPECT_EQ(t, jp_detach(second), 0);
	EXPECT_EQ(t, jp_detach(h), 0);

	int ha = jp_attach("jptest.fast_add", &a), hb = jp_attach("jptest.fast_add", &b);
	trace_reset();
	EXPECT_EQ(t, jptest_fast_add(20, 22), 42);
	TRACE_IS(t, "BAab");
	jp_detach(ha);
	jp_detach(hb);

	jp_reset_stats();
	h = jp_attach("jptest.fast_*", &jp_advice_time);
	jptest_fast_add(1, 2);
	struct jp_stats stats;
	jp_get_stats(jp_find("jptest.fast_add"), &stats);
	EXPECT_EQ(t, stats.timed_calls, 1);
	EXPECT_EQ(t, jp_detach(h), 0);

	h = jp_attach("jptest.fast_six", &look);
	EXPECT_EQ(t, jptest_fast_six(1, 2, 3, 4, 5, 6), 91);
	EXPECT_EQ(t, seen_args[1], 2);
	EXPECT_EQ(t, seen_ret, 91);
	EXPECT_EQ(t, jp_detach(h), 0);
	EXPECT_EQ(t, jptest_fast_add(1, 1), 2);
	EXPECT_EQ(t, this_cpu()->jp_sections & 3, 0);
}

/* The same for a join point with neither arguments nor result. */
static void fast_path_shapes_without_arguments(struct ktest *t)
{
	static const struct jp_advice a = TRACER(A, 0), b = TRACER(B, 1);
	static const struct jp_advice before_only = {
	    .name = "before-only", .before = trace_before, .cookie = (void *)'X'};
	static const struct jp_advice after_only = {
	    .name = "after-only", .after = trace_after, .cookie = (void *)'Y'};
	fast_bumps = 0;
	int h = jp_attach("jptest.fast_bump", &before_only);
	trace_reset();
	jptest_fast_bump();
	TRACE_IS(t, "X");
	int h2 = jp_attach("jptest.fast_bump", &after_only);
	trace_reset();
	jptest_fast_bump();
	TRACE_IS(t, "Xy");
	EXPECT_EQ(t, jp_detach(h), 0);
	trace_reset();
	jptest_fast_bump();
	TRACE_IS(t, "y");
	EXPECT_EQ(t, jp_detach(h2), 0);
	int ha = jp_attach("jptest.fast_bump", &a), hb = jp_attach("jptest.fast_bump", &b);
	trace_reset();
	jptest_fast_bump();
	TRACE_IS(t, "ABba");
	jp_detach(hb);
	trace_reset();
	jptest_fast_bump();
	TRACE_IS(t, "Aa");
	jp_detach(ha);
	jptest_fast_bump();
	EXPECT_EQ(t, fast_bumps, 6);
	EXPECT_TRUE(t, sites_are("jptest.fast_bump", JP_SITE_NOP));
}

/* Fast inside fast, slow inside fast, fast inside slow, and advice calling
 * the fast join point it advises: does each level run its own advice once? */
static void fast_path_nests_and_does_not_recurse(struct ktest *t)
{
	static const struct jp_advice outer = TRACER(O, 0), inner = TRACER(I, 0),
				      slow = TRACER(S, 0),
				      reenter = {.name = "reenter", .before = fast_reenter_before};
	int ho = jp_attach("jptest.fast_outer", &outer);
	int hi = jp_attach("jptest.fast_add", &inner);
	int hs = jp_attach("jptest.add", &slow);
	ASSERT_TRUE(t, ho > 0 && hi > 0 && hs > 0);
	trace_reset();
	EXPECT_EQ(t, jptest_fast_outer(4), 10);
	TRACE_IS(t, "OIiSso");
	EXPECT_EQ(t, jp_detach(ho), 0);
	int hso = jp_attach("jptest.slow_outer", &outer);
	trace_reset();
	EXPECT_EQ(t, jptest_slow_outer(4), 6);
	TRACE_IS(t, "OIio");
	jp_detach(hso);
	jp_detach(hi);
	jp_detach(hs);

	struct jp_stats before, after;
	jp_get_stats(jp_find("jptest.fast_add"), &before);
	int hr = jp_attach("jptest.fast_add", &reenter);
	trace_reset();
	EXPECT_EQ(t, jptest_fast_add(1, 2), 3);
	EXPECT_EQ(t, jptest_fast_add(1, 2), 3);
	TRACE_IS(t, "RR");
	jp_get_stats(jp_find("jptest.fast_add"), &after);
	EXPECT_EQ(t, after.skipped - before.skipped, 2);
	EXPECT_EQ(t, jp_detach(hr), 0);
	EXPECT_EQ(t, this_cpu()->jp_sections & 3, 0);
	EXPECT_EQ(t, this_cpu()->preempt_count, 0);
}

/* ---- Interrupts and threads ------------------------------------------------ */

static uint64_t tick_calls;
static uint64_t tick_advice_in_irq;
static timer_tick_fn previous_tick;

/* Spins with interrupts on until *counter reaches want, or 5 s pass.  Not a
 * fixed delay: under TCG on a busy host a virtual CPU can be off the host's
 * CPU for longer than any tick period, and the tick it owes comes late.  The
 * bound only keeps a broken tick from hanging the suite; the caller checks. */
static void spin_until_counted(const uint64_t *counter, uint64_t want)
{
	uint64_t deadline = clock_ns() + 5 * NSEC_PER_SEC;
	while (__atomic_load_n(counter, __ATOMIC_RELAXED) < want && clock_ns() < deadline)
		cpu_relax();
}

static void tick_hammer(void)
{
	if (previous_tick)
		previous_tick();
	jptest_touch(&tick_calls);
}

static void irq_seen_before(struct jp_context *context, void *cookie)
{
	if (this_cpu()->irq_depth > 0)
		__atomic_fetch_add(&tick_advice_in_irq, 1, __ATOMIC_RELAXED);
}

/* Does advice run on the interrupt path (a join point called by the tick)? */
static void advice_runs_on_the_interrupt_path(struct ktest *t)
{
	static const struct jp_advice seen = {.name = "irq-seen", .before = irq_seen_before};
	tick_advice_in_irq = 0;
	int handle = jp_attach("jptest.touch", &seen);
	ASSERT_TRUE(t, handle > 0);
	tick_calls = 0;
	previous_tick = timer_set_tick_callback(tick_hammer);
	spin_until_counted(&tick_calls, 2);
	timer_set_tick_callback(previous_tick);
	jp_detach(handle);
	EXPECT_TRUE(t, tick_advice_in_irq > 0);
}

#define HAMMER_ROUNDS 10000
/* A guard against a hang, not part of any result: once a storm has done a
 * hundredth of its rounds it stops when STORM_GUARD_NS have passed.  Every
 * round waits for other CPUs (a form change three times for every CPU, idle
 * ones included), and a loaded host can leave a vCPU unrun for hundreds of
 * milliseconds: 1,000 form changes took 365 s there, past a run's timeout.
 * The expectations hold for the rounds done. */
#define STORM_GUARD_NS (30 * NSEC_PER_SEC)

static volatile bool hammer_stop;
static void (*hammered)(uint64_t *counter);
static uint64_t fast_tick_calls;

static void touch(uint64_t *counter)
{
	jptest_touch(counter);
}

static void fast_touch(uint64_t *counter)
{
	jptest_fast_touch(counter);
}

static void tick_hammer_fast(void)
{
	if (previous_tick)
		previous_tick();
	jptest_fast_touch(&fast_tick_calls);
}

static int hammer_thread(void *arg)
{
	uint64_t *counter = arg;
	while (!hammer_stop)
		hammered(counter);
	return 0;
}

struct hammer_result {
	struct tally steady, toggled;
	uint64_t total, skipped, threads[2], tick;
	unsigned failures, rounds;
};

static bool storm_guard_passed(unsigned done, unsigned rounds, uint64_t started_ns)
{
	return done >= rounds / 100 && clock_ns() - started_ns > STORM_GUARD_NS;
}

static uint32_t running_threads(const struct joinpoint *jp);

/* Attaches a steady advice to name (for the threads steady_scope names, or
 * every thread), then attaches and detaches a toggled one rounds times (or
 * fewer, should the guard stop it: r->rounds says) while two threads and the
 * tick call it; 0, or -ENOMEM when the threads cannot start. */
static int hammer(const char *name, void (*fn)(uint64_t *), timer_tick_fn tick,
		  uint64_t *tick_counter, uint32_t (*steady_scope)(const struct joinpoint *jp),
		  unsigned rounds, struct hammer_result *r)
{
	static struct jp_advice steady_advice, toggled_advice;
	uint64_t own_calls = 0;
	*r = (struct hammer_result){0};
	steady_advice = (struct jp_advice){.name = "steady",
					   .before = tally_before,
					   .after = tally_after,
					   .cookie = &r->steady,
					   .thread_scope = steady_scope};
	toggled_advice = (struct jp_advice){.name = "toggled",
					    .before = tally_before,
					    .after = tally_after,
					    .cookie = &r->toggled,
					    .priority = 1};
	hammered = fn;
	hammer_stop = false;
	*tick_counter = 0;
	struct jp_stats before_stats, after_stats;
	jp_get_stats(jp_find(name), &before_stats);

	int steady_handle = jp_attach(name, &steady_advice);
	struct thread *threads[2];
	threads[0] = thread_create(hammer_thread, &r->threads[0], "hammer0", SCHED_PRIORITY_NORMAL);
	threads[1] = thread_create(hammer_thread, &r->threads[1], "hammer1", SCHED_PRIORITY_NORMAL);
	if (!threads[0] || !threads[1] || steady_handle <= 0)
		return -ENOMEM;
	previous_tick = timer_set_tick_callback(tick);

	uint64_t started_ns = clock_ns();
	while (r->rounds < rounds && !storm_guard_passed(r->rounds, rounds, started_ns)) {
		int handle = jp_attach(name, &toggled_advice);
		fn(&own_calls);
		r->failures += handle <= 0 || jp_detach(handle) != 0;
		fn(&own_calls);
		r->rounds++;
	}
	sched_sleep_ns(5 * NSEC_PER_MSEC); /* let the threads run with the steady advice */

	timer_set_tick_callback(previous_tick);
	hammer_stop = true;
	thread_join(threads[0], NULL);
	thread_join(threads[1], NULL);
	r->failures += jp_detach(steady_handle) != 0;
	jp_get_stats(jp_find(name), &after_stats);
	r->tick = *tick_counter;
	r->total = own_calls + r->threads[0] + r->threads[1] + r->tick;
	r->skipped = after_stats.skipped - before_stats.skipped;
	console_print("    # hammer %s: %u rounds, %lu calls (threads %lu + %lu, tick %lu), "
		      "%lu skipped, toggled advice %lu before / %lu after\n",
		      name, r->rounds, r->total, r->threads[0], r->threads[1], r->tick, r->skipped,
		      r->toggled.before, r->toggled.after);
	return 0;
}

/* What every storm must show: no weaving error, the steady advice on every
 * call (or the call counted as skipped), never an after without its before
 * (on the fast path, every after), the toggled advice attached each round,
 * all three callers running, and the sites back to NOPs. */
static void expect_storm(struct ktest *t, const struct hammer_result *r, const char *name,
			 bool fast_path)
{
	EXPECT_EQ(t, r->failures, 0);
	EXPECT_EQ(t, r->steady.before + r->skipped, r->total);
	EXPECT_EQ(t, r->steady.after, r->steady.before);
	if (fast_path)
		EXPECT_EQ(t, r->toggled.after, r->toggled.before);
	else
		EXPECT_TRUE(t, r->toggled.after <= r->toggled.before);
	EXPECT_TRUE(t, r->rounds > 0 && r->toggled.before >= r->rounds);
	EXPECT_TRUE(t, r->threads[0] > 0 && r->threads[1] > 0 && r->tick > 0);
	EXPECT_TRUE(t, sites_are(name, JP_SITE_NOP));
}

/* Attach/detach 10,000 times while two threads and the tick call the join
 * point: does a permanent advice see every call (or count it as skipped), and
 * does the toggled one never get an after without its before? */
static void attach_detach_while_hammered(struct ktest *t)
{
	static struct hammer_result r;
	if (!thread_current())
		return ktest_skip(t, "no scheduler");
	ASSERT_EQ(
	    t, hammer("jptest.touch", touch, tick_hammer, &tick_calls, NULL, HAMMER_ROUNDS, &r), 0);
	expect_storm(t, &r, "jptest.touch", false);
}

/* The same storm on the fast path, where a call holds its section from
 * before to after: is every after call made, the toggled advice's too? */
static void fast_path_attach_detach_while_hammered(struct ktest *t)
{
	static struct hammer_result r;
	if (!thread_current())
		return ktest_skip(t, "no scheduler");
	ASSERT_EQ(t,
		  hammer("jptest.fast_touch", fast_touch, tick_hammer_fast, &fast_tick_calls, NULL,
			 HAMMER_ROUNDS, &r),
		  0);
	expect_storm(t, &r, "jptest.fast_touch", true);
	EXPECT_EQ(t, this_cpu()->jp_sections & 3, 0);
}

/* ---- Interrupt entry, exceptions and the scheduler's switch ---------------- */

struct entry_seen {
	uint64_t calls;
	uint64_t afters;
	uint64_t arg0;
	uint64_t arg1;
	int irq_depth;
};

static void entry_seen_before(struct jp_context *context, void *cookie)
{
	struct entry_seen *seen = cookie;
	seen->arg0 = context->args[0];
	seen->arg1 = context->args[1];
	seen->irq_depth = this_cpu()->irq_depth;
	__atomic_fetch_add(&seen->calls, 1, __ATOMIC_RELAXED);
}

static void entry_seen_after(struct jp_context *context, void *cookie)
{
	__atomic_fetch_add(&((struct entry_seen *)cookie)->afters, 1, __ATOMIC_RELAXED);
}

#define ENTRY_SEEN(record)                                                                    \
	{                                                                                     \
		.name = "entry-seen", .before = entry_seen_before, .after = entry_seen_after, \
		.cookie = record                                                              \
	}

/* Does irq.entry run advice for the tick, inside the interrupt, with its vector? */
static void irq_entry_runs_advice_inside_the_interrupt(struct ktest *t)
{
	static struct entry_seen seen;
	static const struct jp_advice advice = ENTRY_SEEN(&seen);
	seen = (struct entry_seen){0};
	int handle = jp_attach("irq.entry", &advice);
	ASSERT_TRUE(t, handle > 0);
	spin_until_counted(&seen.calls, 2);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_TRUE(t, seen.calls > 0);
	EXPECT_EQ(t, seen.afters, seen.calls);
	EXPECT_TRUE(t, seen.arg0 >= 32 && seen.arg0 < 256);
	EXPECT_TRUE(t, seen.irq_depth > 0);
}

/* Does trap.entry run advice for an exception the kernel recovers from? */
static void trap_entry_runs_advice_for_a_recovered_fault(struct ktest *t)
{
	static struct entry_seen seen;
	static const struct jp_advice advice = ENTRY_SEEN(&seen);
	seen = (struct entry_seen){0};
	int handle = jp_attach("trap.entry", &advice);
	ASSERT_TRUE(t, handle > 0);
	uint64_t value = 0;
	EXPECT_EQ(t, trap_read_kernel_word(0x8000000000000000ULL, &value), -EFAULT);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_EQ(t, seen.calls, 1);
	EXPECT_EQ(t, seen.afters, 1);
	EXPECT_EQ(t, seen.arg0, TRAP_GENERAL_PROTECTION);
}

static int return_at_once(void *arg)
{
	return 0;
}

/* Does sched.switch tell advice about a switch away from this thread? */
static void sched_switch_passes_prev_and_next(struct ktest *t)
{
	static struct entry_seen seen;
	static const struct jp_advice advice = ENTRY_SEEN(&seen);
	struct thread *me = thread_current();
	if (!me)
		return ktest_skip(t, "no scheduler");
	seen = (struct entry_seen){0};
	int handle = jp_attach("sched.switch", &advice);
	ASSERT_TRUE(t, handle > 0);
	struct thread *other =
	    thread_create(return_at_once, NULL, "switchee", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, other != NULL);
	thread_join(other, NULL);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_TRUE(t, seen.calls > 0);
	EXPECT_TRUE(t, seen.arg0 != seen.arg1);
}

/* Does the shell's jp command attach, count, list, detach by pattern and
 * handle, and refuse what it cannot do? */
static void shell_command_attaches_and_detaches(struct ktest *t)
{
	char *attach[] = {"jp", "attach", "jptest.*", "count", NULL};
	char *attach_bad[] = {"jp", "attach", "jptest.*", "bogus", NULL};
	char *attach_none[] = {"jp", "attach", "nosuch.*", "time", NULL};
	char *stats[] = {"jp", "stats", "jptest.*", NULL};
	char *list[] = {"jp", "list", "jptest.a*", NULL};
	char *detach[] = {"jp", "detach", "jptest.*", NULL};
	char *junk[] = {"jp", "frobnicate", NULL};
	jp_reset_stats();
	EXPECT_EQ(t, jp_shell_command(4, attach), 0);
	EXPECT_EQ(t, advice_on("jptest.outer"), 1);
	jptest_add(1, 2);
	struct jp_stats s;
	jp_get_stats(jp_find("jptest.add"), &s);
	EXPECT_EQ(t, s.calls, 1);
	EXPECT_EQ(t, jp_shell_command(3, stats), 0);
	EXPECT_EQ(t, jp_shell_command(3, list), 0);
	EXPECT_EQ(t, jp_shell_command(4, attach), -EEXIST);
	EXPECT_EQ(t, jp_shell_command(4, attach_bad), KSHELL_USAGE);
	EXPECT_EQ(t, jp_shell_command(4, attach_none), -ENOENT);
	EXPECT_EQ(t, jp_shell_command(2, junk), KSHELL_USAGE);
	EXPECT_EQ(t, jp_shell_command(3, detach), 0);
	EXPECT_EQ(t, advice_on("jptest.outer"), 0);
	EXPECT_EQ(t, jp_shell_command(3, detach), -ENOENT);
}

/* Is attaching from inside advice refused instead of deadlocking? */
static uint64_t nested_attach_result;

static void attach_inside_before(struct jp_context *context, void *cookie)
{
	nested_attach_result = (uint64_t)jp_attach("jptest.outer", &jp_advice_count);
}

static void weaving_from_advice_is_refused(struct ktest *t)
{
	static const struct jp_advice inside = {.name = "inside", .before = attach_inside_before};
	int handle = jp_attach("jptest.add", &inside);
	ASSERT_TRUE(t, handle > 0);
	jptest_add(1, 1);
	EXPECT_EQ(t, (int)nested_attach_result, -EDEADLK);
	EXPECT_EQ(t, advice_on("jptest.outer"), 0);
	jp_detach(handle);
}

/* ---- An advice's own fast path -------------------------------------------- */

/* The smallest own fast path (joinpoint.h's contract): count, note the
 * list's word, make the call with the slots in %rdi and JP_SECTION_CALLING
 * around it, leave. */
static uint64_t own_fast_calls;
static uint32_t own_fast_word_seen;
extern const char jptest_own_fast0[], jptest_own_fast1[];
// clang-format off
__attribute__((used)) static void own_fast_code(void)
{
	__asm__ volatile(
	".pushsection .text\n"
	".macro JPTEST_OWN_FAST arguments\n"
	"jptest_own_fast\\arguments:\n"
	"	incq %c[calls]\n"
	"	mov %c[word](%%rbx), %%eax\n"
	"	mov %%eax, %c[seen]\n"
	"	mov %%rsp, %%rdi\n"
	"	addl %[calling], %%gs:%c[sections]\n"
	"	call *%c[call](%%rbx)\n"
	"	subl %[calling], %%gs:%c[sections]\n"
	"	jmp jp_fast_path_leave\\arguments\n"
	".endm\n"
	"JPTEST_OWN_FAST 0\n"
	"JPTEST_OWN_FAST 1\n"
	".purgem JPTEST_OWN_FAST\n"
	".popsection\n"
	:
	: [calls] "i"(&own_fast_calls), [seen] "i"(&own_fast_word_seen),
	  [word] "i"(offsetof(struct jp_fast_list, word)), [calling] "i"(JP_SECTION_CALLING),
	  [sections] "i"(offsetof(struct cpu, jp_sections)),
	  [call] "i"(offsetof(struct jp_fast_list, call)));
}
// clang-format on

/* The word the advice wants its code to find for jp: one per join point. */
static uint32_t own_fast_word(const struct joinpoint *jp)
{
	return 0x5000 + jp_index(jp);
}

static struct tally own_tally;
static const struct jp_advice own_fast = {.name = "own-fast",
					  .before = tally_before,
					  .after = tally_after,
					  .cookie = &own_tally,
					  .fast_path = {jptest_own_fast0, jptest_own_fast1},
					  .fast_word = own_fast_word};

/* Alone on a _NOSLEEP join point, the advice's code runs the call (with six
 * arguments, two, or none) and finds the word it asked for that join point
 * in the list; beside other advice, or nested in another fast call, its
 * before and after run instead. */
static void own_fast_path_runs_when_alone(struct ktest *t)
{
	own_fast_calls = 0;
	own_tally = (struct tally){0};
	int handle = jp_attach("jptest.fast_*", &own_fast);
	ASSERT_TRUE(t, handle > 0);
	EXPECT_EQ(t, jptest_fast_add(40, 2), 42);
	EXPECT_EQ(t, own_fast_word_seen, 0x5000 + jp_index(jp_find("jptest.fast_add")));
	EXPECT_EQ(t, jptest_fast_six(1, 1, 1, 1, 1, 1), 21);
	EXPECT_EQ(t, own_fast_word_seen, 0x5000 + jp_index(jp_find("jptest.fast_six")));
	uint64_t bumps = fast_bumps;
	jptest_fast_bump();
	EXPECT_EQ(t, fast_bumps, bumps + 1);
	EXPECT_EQ(t, own_fast_calls, 3);
	EXPECT_EQ(t, own_tally.before + own_tally.after, 0);

	EXPECT_EQ(t, jptest_fast_outer(1), 4); /* its inner fast_add nests */
	EXPECT_EQ(t, own_fast_calls, 4);
	EXPECT_EQ(t, own_tally.before, 1);
	EXPECT_EQ(t, own_tally.after, 1);

	int counting = jp_attach("jptest.fast_add", &jp_advice_count);
	ASSERT_TRUE(t, counting > 0);
	EXPECT_EQ(t, jptest_fast_add(1, 2), 3);
	EXPECT_EQ(t, own_fast_calls, 4);
	EXPECT_EQ(t, own_tally.before, 2);
	EXPECT_EQ(t, own_tally.after, 2);
	EXPECT_EQ(t, jp_detach(counting), 0);
	EXPECT_EQ(t, jptest_fast_add(2, 2), 4);
	EXPECT_EQ(t, own_fast_calls, 5);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_EQ(t, jptest_fast_add(3, 2), 5);
	EXPECT_EQ(t, own_fast_calls, 5);
}

/* ---- A native advice's around ---------------------------------------------- */

/* The smallest around (joinpoint.h's contract): note whether it was called
 * inside its section with its join point's list and its advice's cookie
 * there, leave it, make the call,
 * and return its result plus 1000 so that the caller shows whose result it
 * got. */
static uint64_t around_calls, around_inside, around_listed, around_cookied;
static struct tally around_tally;
static uint64_t jptest_around(const struct joinpoint *jp, uint64_t *args,
			      const struct jp_fast_list *list)
{
	around_calls++;
	unsigned bits = this_cpu()->jp_sections & (JP_SECTION_INSIDE | JP_SECTION_CALLING);
	around_inside += bits == JP_SECTION_INSIDE;
	around_listed += list == &jp->state->list->fast;
	around_cookied += list->cookie == &around_tally;
	jp_section_leave();
	return jp->call(args) + 1000;
}

static const struct jp_advice around_native = {.name = "around",
					       .before = tally_before,
					       .after = tally_after,
					       .cookie = &around_tally,
					       .flags = JP_ADVICE_NATIVE,
					       .around = jptest_around};

static unsigned section_bits(void)
{
	return this_cpu()->jp_sections & (JP_SECTION_INSIDE | JP_SECTION_CALLING);
}

/* Alone on a join point that may sleep, a native advice's around runs the
 * whole call, called inside a section and leaving it; beside other advice
 * its before and after run instead, and on a _NOSLEEP join point it is
 * never called. */
static void around_runs_whole_calls_when_alone(struct ktest *t)
{
	around_calls = around_inside = around_listed = around_cookied = 0;
	around_tally = (struct tally){0};
	int handle = jp_attach("jptest.add", &around_native);
	ASSERT_TRUE(t, handle > 0);
	EXPECT_EQ(t, jptest_add(40, 2), 1042);
	EXPECT_EQ(t, jptest_outer(1), 2004); /* outer has no advice; its add does */
	EXPECT_EQ(t, around_calls, 2);
	EXPECT_EQ(t, around_inside, 2);
	EXPECT_EQ(t, around_listed, 2);
	EXPECT_EQ(t, around_cookied, 2);
	EXPECT_EQ(t, section_bits(), 0); /* left, nothing held */
	EXPECT_EQ(t, around_tally.before + around_tally.after, 0);

	int counting = jp_attach("jptest.add", &jp_advice_count);
	ASSERT_TRUE(t, counting > 0);
	EXPECT_EQ(t, jptest_add(1, 2), 3);
	EXPECT_EQ(t, around_calls, 2);
	EXPECT_EQ(t, around_tally.before, 1);
	EXPECT_EQ(t, around_tally.after, 1);
	EXPECT_EQ(t, jp_detach(counting), 0);
	EXPECT_EQ(t, jptest_add(2, 2), 1004);
	EXPECT_EQ(t, around_calls, 3);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_EQ(t, jptest_add(3, 2), 5);
	EXPECT_EQ(t, around_calls, 3);

	handle = jp_attach("jptest.fast_add", &around_native);
	ASSERT_TRUE(t, handle > 0);
	EXPECT_EQ(t, jptest_fast_add(1, 1), 2);
	EXPECT_EQ(t, around_calls, 3);
	EXPECT_EQ(t, around_tally.before, 2);
	EXPECT_EQ(t, jp_detach(handle), 0);
}

/* Attaches advice alone to jptest.add (a join point that may sleep) after
 * noting its statistics in *before, and checks that the list runs whole
 * calls through the advice's around.  Returns the handle; 0: skipped or
 * failed. */
static int attach_alone(struct ktest *t, const struct jp_advice *advice, struct jp_stats *before)
{
	const struct joinpoint *jp = jp_find("jptest.add");
	if (!EXPECT_TRUE(t, jp != NULL))
		return 0;
	if (advice_on("jptest.add")) {
		ktest_skip(t, "jptest.add has advice from the command line");
		return 0;
	}
	jp_get_stats(jp, before);
	int handle = jp_attach("jptest.add", advice);
	if (!EXPECT_TRUE(t, handle > 0))
		return 0;
	EXPECT_TRUE(t, jp->state->list->around != NULL);
	return handle;
}

/* The built-in counting, alone on a join point that may sleep, runs the
 * whole call (its around): every call counted, the section left before the
 * call; beside other advice it counts through the dispatcher's before, as
 * every advice does. */
static void counting_alone_runs_whole_calls(struct ktest *t)
{
	static const struct jp_advice tracer = TRACER(A, 0);
	const struct joinpoint *jp = jp_find("jptest.add");
	struct jp_stats before, after;
	int counting = attach_alone(t, &jp_advice_count, &before);
	if (!counting)
		return;
	EXPECT_EQ(t, jptest_add(40, 2), 42);
	EXPECT_EQ(t, jptest_outer(1), 4); /* outer has no advice; its add does */
	EXPECT_EQ(t, section_bits(), 0);
	jp_get_stats(jp, &after);
	EXPECT_EQ(t, after.calls - before.calls, 2);

	trace_reset();
	int traced = jp_attach("jptest.add", &tracer);
	ASSERT_TRUE(t, traced > 0);
	EXPECT_TRUE(t, jp->state->list->around == NULL);
	EXPECT_EQ(t, jptest_add(1, 2), 3);
	TRACE_IS(t, "Aa");
	jp_get_stats(jp, &after);
	EXPECT_EQ(t, after.calls - before.calls, 3);
	EXPECT_EQ(t, jp_detach(traced), 0);
	EXPECT_EQ(t, jp_detach(counting), 0);
	EXPECT_EQ(t, jptest_add(1, 1), 2);
	jp_get_stats(jp, &after);
	EXPECT_EQ(t, after.calls - before.calls, 3);
}

/* The built-in timing, alone on a join point that may sleep, times the whole
 * call the same way (its around): every call timed, the figures in order. */
static void timing_alone_runs_whole_calls(struct ktest *t)
{
	struct jp_stats before, after;
	int timing = attach_alone(t, &jp_advice_time, &before);
	if (!timing)
		return;
	EXPECT_EQ(t, jptest_add(40, 2), 42);
	EXPECT_EQ(t, jptest_add(1, 2), 3);
	EXPECT_EQ(t, section_bits(), 0);
	EXPECT_EQ(t, jp_detach(timing), 0);
	jp_get_stats(jp_find("jptest.add"), &after);
	EXPECT_EQ(t, after.timed_calls - before.timed_calls, 2);
	EXPECT_TRUE(t, after.min_ns <= after.max_ns);
	EXPECT_TRUE(t, after.total_ns - before.total_ns >= after.min_ns);
}

/* ---- A native advice's nested call ------------------------------------------ */

/* The smallest nested_call (joinpoint.h's contract): note the section bits
 * it was called with, make the call with JP_SECTION_CALLING around it, and
 * return its result plus 1000 so that the caller shows whose result it got. */
static uint64_t nested_calls, nested_as_advice;
static uint64_t jptest_nested_call(const struct jp_fast_list *list, uint64_t *args)
{
	nested_calls++;
	nested_as_advice += section_bits() == JP_SECTION_INSIDE;
	jp_section_calling(true);
	uint64_t ret = list->call(args);
	jp_section_calling(false);
	return ret + 1000;
}

static struct tally nested_tally;
static const struct jp_advice nested_native = {.name = "nested",
					       .before = tally_before,
					       .after = tally_after,
					       .cookie = &nested_tally,
					       .flags = JP_ADVICE_NATIVE,
					       .nested_call = jptest_nested_call};

/* Alone on a join point reached inside a _NOSLEEP call (fast_outer, woven),
 * a native advice's nested_call runs the whole call, as advice (CALLING
 * clear), and the outer call finds its section as it left it; outermost, or
 * beside other advice, its before and after run instead. */
static void nested_call_runs_whole_nested_calls_when_alone(struct ktest *t)
{
	nested_calls = nested_as_advice = 0;
	nested_tally = (struct tally){0};
	int handle = jp_attach("jptest.fast_add", &nested_native);
	ASSERT_TRUE(t, handle > 0);
	EXPECT_EQ(t, jptest_fast_add(1, 1), 2); /* outermost: before and after */
	EXPECT_EQ(t, nested_calls, 0);
	EXPECT_EQ(t, nested_tally.before, 1);
	int outer = jp_attach("jptest.fast_outer", &jp_advice_count);
	ASSERT_TRUE(t, outer > 0);
	EXPECT_EQ(t, jptest_fast_outer(1), 2004); /* (1 + 1 + 1000) * 2 */
	EXPECT_EQ(t, nested_calls, 1);
	EXPECT_EQ(t, nested_as_advice, 1);
	EXPECT_EQ(t, nested_tally.before, 1);
	EXPECT_EQ(t, section_bits(), 0);
	int counting = jp_attach("jptest.fast_add", &jp_advice_count);
	ASSERT_TRUE(t, counting > 0);
	EXPECT_EQ(t, jptest_fast_outer(1), 4); /* shared: before and after */
	EXPECT_EQ(t, nested_calls, 1);
	EXPECT_EQ(t, nested_tally.before, 2);
	EXPECT_EQ(t, nested_tally.after, 2);
	EXPECT_EQ(t, jp_detach(counting), 0);
	EXPECT_EQ(t, jp_detach(outer), 0);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_EQ(t, jptest_fast_outer(1), 4);
	EXPECT_EQ(t, nested_calls, 1);
}

/* ---- Advice for some threads ----------------------------------------------- */

/* Scopes (thread_scope) that this kernel thread is out of (it has no process)
 * and in (it runs). */
static uint32_t processes_only(const struct joinpoint *jp)
{
	return (uint32_t)offsetof(struct cpu, process);
}

static uint32_t running_threads(const struct joinpoint *jp)
{
	return (uint32_t)offsetof(struct cpu, current);
}

static struct tally for_processes, for_running, for_all;
static const struct jp_advice processes_advice = {.name = "processes",
						  .before = tally_before,
						  .after = tally_after,
						  .cookie = &for_processes,
						  .thread_scope = processes_only};
static const struct jp_advice running_advice = {.name = "running",
						.before = tally_before,
						.after = tally_after,
						.cookie = &for_running,
						.thread_scope = running_threads};
static const struct jp_advice all_advice = {
    .name = "all", .before = tally_before, .after = tally_after, .cookie = &for_all};

static bool tallied(const struct tally *tally, uint64_t calls)
{
	return tally->before == calls && tally->after == calls;
}

/* While all the advice on name names one word of struct cpu, its sites jump
 * to the check of that word, and this thread, for which the word is 0, calls
 * the function without the advice; advice for another word or for every
 * thread beside it makes the sites plain jumps again, and then every advice
 * runs; what it leaves behind decides the sites' form again. */
static void scoped_advice_runs_for_its_threads(struct ktest *t, const char *name,
					       long (*add)(long, long))
{
	if (advice_on(name))
		return ktest_skip(t, "the join point has advice from the command line");
	ASSERT_TRUE(t, this_cpu_read(process) == NULL); /* a kernel thread */
	for_processes = for_running = for_all = (struct tally){0};
	int processes = jp_attach(name, &processes_advice);
	ASSERT_TRUE(t, processes > 0);
	EXPECT_TRUE(t, sites_are(name, JP_SITE_SCOPED));
	EXPECT_EQ(t, add(2, 3), 5);
	EXPECT_TRUE(t, tallied(&for_processes, 0));

	int running = jp_attach(name, &running_advice); /* another word: unscoped */
	ASSERT_TRUE(t, running > 0);
	EXPECT_TRUE(t, sites_are(name, JP_SITE_JUMP));
	EXPECT_EQ(t, add(2, 3), 5);
	EXPECT_TRUE(t, tallied(&for_processes, 1) && tallied(&for_running, 1));

	EXPECT_EQ(t, jp_detach(processes), 0); /* running's word alone: this thread is in it */
	EXPECT_TRUE(t, sites_are(name, JP_SITE_SCOPED));
	EXPECT_EQ(t, add(2, 3), 5);
	EXPECT_TRUE(t, tallied(&for_processes, 1) && tallied(&for_running, 2));

	int all = jp_attach(name, &all_advice); /* for every thread: unscoped */
	ASSERT_TRUE(t, all > 0);
	EXPECT_TRUE(t, sites_are(name, JP_SITE_JUMP));
	EXPECT_EQ(t, jp_detach(all), 0);
	EXPECT_TRUE(t, sites_are(name, JP_SITE_SCOPED));
	EXPECT_EQ(t, jp_detach(running), 0);
	EXPECT_TRUE(t, sites_are(name, JP_SITE_NOP));
	EXPECT_EQ(t, add(2, 3), 5);
	EXPECT_TRUE(t, tallied(&for_running, 2) && tallied(&for_all, 0));
}

static void scoped_advice_runs_for_its_threads_may_sleep(struct ktest *t)
{
	scoped_advice_runs_for_its_threads(t, "jptest.add", jptest_add);
}

static void scoped_advice_runs_for_its_threads_nosleep(struct ktest *t)
{
	scoped_advice_runs_for_its_threads(t, "jptest.fast_add", jptest_fast_add);
}

/* The storm again with the steady advice for every running thread's calls
 * (all of them, so it must still see each call) but scoped: each attach of
 * the toggled advice, which is for every thread, turns the sites from the
 * scoped jump into the plain one, and each detach back, while two threads
 * and the tick run through them.  Fewer rounds: each one patches the text
 * twice, with three waits for every CPU (and STORM_GUARD_NS may end it
 * sooner on a slow host). */
#define FORM_ROUNDS 1000
static void scoped_sites_change_form_while_hammered(struct ktest *t)
{
	static struct hammer_result r;
	if (!thread_current())
		return ktest_skip(t, "no scheduler");
	ASSERT_EQ(t,
		  hammer("jptest.touch", touch, tick_hammer, &tick_calls, running_threads,
			 FORM_ROUNDS, &r),
		  0);
	expect_storm(t, &r, "jptest.touch", false);
	ASSERT_EQ(t,
		  hammer("jptest.fast_touch", fast_touch, tick_hammer_fast, &fast_tick_calls,
			 running_threads, FORM_ROUNDS, &r),
		  0);
	expect_storm(t, &r, "jptest.fast_touch", true);
}

/* ---- Deferral (defer.h) ---------------------------------------------- */

static int first_deferral, second_deferral;
static bool deferred_outside_section, deferred_may_sleep;

static void deferred_work(struct jp_context *context, void *cookie)
{
	trace_add((char)(uintptr_t)cookie);
	/* preemptible here: each field read %gs-relative, in one load */
	deferred_outside_section = !(this_cpu_read(jp_sections) & JP_SECTION_INSIDE);
	deferred_may_sleep = this_cpu_read(preempt_count) == 0 && irq_enabled();
}

/* The cookie is the letter the deferred work leaves: before, after. */
static void defer_twice(struct jp_context *context, void *cookie)
{
	trace_add('A');
	first_deferral = jp_defer(context, deferred_work, cookie);
	second_deferral = jp_defer(context, deferred_work, cookie);
}

/* Does an outermost call of a join point that may sleep run what its advice
 * deferred once, right after the section, where it may sleep; and is every
 * other call refused: a second deferral in the section, a _NOSLEEP join
 * point, a call with preemption off, an advice not flagged as deferring? */
static void deferred_work_runs_after_the_section_once(struct ktest *t)
{
	static const struct jp_advice defers = {.name = "defers",
						.before = defer_twice,
						.after = defer_twice,
						.cookie = (void *)'D',
						.flags = JP_ADVICE_DEFERS};
	static const struct jp_advice unflagged = {
	    .name = "unflagged", .before = defer_twice, .cookie = (void *)'U'};
	int handle = jp_attach("jptest.add", &defers);
	ASSERT_TRUE(t, handle > 0);
	trace_reset();
	first_deferral = second_deferral = 1;
	EXPECT_EQ(t, jptest_add(2, 3), 5);
	EXPECT_EQ(t, strcmp(trace, "ADAD"), 0);
	EXPECT_EQ(t, first_deferral, 0);
	EXPECT_EQ(t, second_deferral, -EWOULDBLOCK);
	EXPECT_TRUE(t, deferred_outside_section);
	EXPECT_TRUE(t, deferred_may_sleep);
	trace_reset();
	preempt_disable();
	EXPECT_EQ(t, jptest_add(2, 3), 5);
	preempt_enable();
	EXPECT_EQ(t, strcmp(trace, "AA"), 0);
	EXPECT_EQ(t, first_deferral, -EWOULDBLOCK);
	jp_detach(handle);

	handle = jp_attach("jptest.fast_add", &defers);
	ASSERT_TRUE(t, handle > 0);
	trace_reset();
	EXPECT_EQ(t, jptest_fast_add(2, 3), 5);
	EXPECT_EQ(t, strcmp(trace, "AA"), 0);
	EXPECT_EQ(t, first_deferral, -EWOULDBLOCK);
	jp_detach(handle);

	handle = jp_attach("jptest.add", &unflagged);
	ASSERT_TRUE(t, handle > 0);
	trace_reset();
	EXPECT_EQ(t, jptest_add(2, 3), 5);
	EXPECT_EQ(t, strcmp(trace, "A"), 0);
	EXPECT_EQ(t, first_deferral, -EWOULDBLOCK);
	jp_detach(handle);
	EXPECT_TRUE(t, this_cpu_read(jp_deferring) == NULL);
}

/* ---- After advice on the CPU the call ended on ------------------------------ */

static unsigned cpu_before_saw, cpu_after_saw, cpu_after_ran_on, cpu_deferred_saw;

static void note_cpu_before(struct jp_context *context, void *cookie)
{
	cpu_before_saw = context->cpu;
}

static void note_deferred_cpu(struct jp_context *context, void *cookie)
{
	cpu_deferred_saw = context->cpu;
}

static void note_cpu_after(struct jp_context *context, void *cookie)
{
	cpu_after_saw = context->cpu;
	cpu_after_ran_on = this_cpu_id();
	if (jp_defer(context, note_deferred_cpu, NULL) != 0)
		cpu_deferred_saw = ~0u;
}

/* A call that moves its thread to another CPU: does the before advice see
 * the CPU the call began on, and the after advice (and the work it defers)
 * the CPU it runs on, where the call ended? */
static void after_advice_sees_the_cpu_the_call_ended_on(struct ktest *t)
{
	static const struct jp_advice notes = {.name = "cpu-notes",
					       .before = note_cpu_before,
					       .after = note_cpu_after,
					       .flags = JP_ADVICE_DEFERS};
	if (!thread_current())
		return ktest_skip(t, "no scheduler");
	if (smp_online_count() < 2)
		return ktest_skip(t, "one CPU");
	int handle = jp_attach("jptest.move_to", &notes);
	ASSERT_TRUE(t, handle > 0);
	cpu_before_saw = cpu_after_saw = cpu_after_ran_on = cpu_deferred_saw = ~0u;
	uint64_t affinity = thread_pin_here();
	unsigned here = this_cpu_id();
	unsigned there = (unsigned)__builtin_ctzll(smp_online_mask() & ~SMP_CPU_BIT(here));
	EXPECT_EQ(t, jptest_move_to(there), 0);
	thread_set_affinity(thread_current(), affinity);
	EXPECT_EQ(t, jp_detach(handle), 0);
	EXPECT_EQ(t, cpu_before_saw, here);
	EXPECT_EQ(t, cpu_after_ran_on, there);
	EXPECT_EQ(t, cpu_after_saw, there);
	EXPECT_EQ(t, cpu_deferred_saw, there);
}

KTEST_SUITE(joinpoint, KTEST_CASE(disabled_site_is_nop_until_attached),
	    KTEST_CASE(advice_runs_in_priority_order), KTEST_CASE(advice_sees_args_and_result),
	    KTEST_CASE(advice_calling_a_joinpoint_does_not_recurse),
	    KTEST_CASE(nested_joinpoints_each_run_advice),
	    KTEST_CASE(weaving_errors_are_distinct_and_change_nothing),
	    KTEST_CASE(detach_goes_on_when_the_list_pool_is_short),
	    KTEST_CASE(pattern_attaches_every_match), KTEST_CASE(advice_runs_on_the_interrupt_path),
	    KTEST_CASE(attach_detach_while_hammered), KTEST_CASE(weaving_from_advice_is_refused),
	    KTEST_CASE(irq_entry_runs_advice_inside_the_interrupt),
	    KTEST_CASE(trap_entry_runs_advice_for_a_recovered_fault),
	    KTEST_CASE(sched_switch_passes_prev_and_next),
	    KTEST_CASE(shell_command_attaches_and_detaches),
	    KTEST_CASE(fast_path_shapes_with_arguments),
	    KTEST_CASE(fast_path_shapes_without_arguments),
	    KTEST_CASE(fast_path_nests_and_does_not_recurse),
	    KTEST_CASE(fast_path_attach_detach_while_hammered),
	    KTEST_CASE(around_runs_whole_calls_when_alone),
	    KTEST_CASE(counting_alone_runs_whole_calls), KTEST_CASE(timing_alone_runs_whole_calls),
	    KTEST_CASE(nested_call_runs_whole_nested_calls_when_alone),
	    KTEST_CASE(own_fast_path_runs_when_alone),
	    KTEST_CASE(scoped_advice_runs_for_its_threads_may_sleep),
	    KTEST_CASE(scoped_advice_runs_for_its_threads_nosleep),
	    KTEST_CASE(scoped_sites_change_form_while_hammered),
	    KTEST_CASE(deferred_work_runs_after_the_section_once),
	    KTEST_CASE(after_advice_sees_the_cpu_the_call_ended_on));
