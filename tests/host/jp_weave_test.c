// host-test-sources: kernel/joinpoint/advice.c kernel/joinpoint/attach.c
// host-test-sources: kernel/joinpoint/registry.c kernel/joinpoint/pattern.c
// host-test-sources: kernel/joinpoint/dispatch.c kernel/joinpoint/grace.c
/*
 * The registry, advice-list updates and the dispatcher on made-up join
 * points, with a list pool shrunk to JP_LIST_POOL 6 to reach exhaustion.
 * Text patching is replaced by a record of which join points are enabled,
 * so the tests can check it follows the first and last advice.
 */
#include <stdio.h>
#include <string.h>

#include "cpu/percpu.h"
#include "hosttest.h"
#include "lib/errno.h"

#define JP_LIST_POOL 6
#include "../../kernel/joinpoint/pool.c"

/* grace.c reads every CPU's section counter; the shim's CPU is another. */
struct cpu cpus[MAX_CPUS];
unsigned cpu_count = 1;

/* ---- Made-up join points ------------------------------------------------- */

static uint64_t add_call(const uint64_t *args);
static uint64_t hook_call(const uint64_t *args);

static struct jp_state states[4];
/* The registry, named as the kernel's linker script names its start
 * (jp_index subtracts it). */
const struct joinpoint __joinpoints_start[] = {
    {.name = "a.add",
     .module = "a",
     .return_type = "long",
     .argc = 2,
     .arg_names = {"x", "y"},
     .arg_types = {"long", "long"},
     .call = add_call,
     .state = &states[0]},
    {.name = "a.hook",
     .module = "a",
     .return_type = "void",
     .argc = 0,
     .call = hook_call,
     .state = &states[1]},
    {.name = "b.add",
     .module = "b",
     .return_type = "long",
     .argc = 2,
     .arg_names = {"x", "y"},
     .arg_types = {"long", "long"},
     .call = add_call,
     .state = &states[2]},
    {.name = "b.other",
     .module = "b",
     .return_type = "void",
     .argc = 0,
     .call = hook_call,
     .state = &states[3]},
};
static const struct joinpoint *const points = __joinpoints_start;
#define POINTS (sizeof __joinpoints_start / sizeof __joinpoints_start[0])

static bool enabled[POINTS];
static unsigned patches;

void jp_section_bounds(const struct joinpoint **first, const struct joinpoint **last)
{
	*first = points;
	*last = points + POINTS;
}

void jp_site_bounds(const struct jp_site **first, const struct jp_site **last)
{
	*first = *last = NULL;
}

/* Like the kernel's: a form the sites already have changes nothing.  None of
 * these join points' advice is for some threads only, so a list's sites are
 * plain jumps. */
void jp_patch_sites(const struct joinpoint *jp, enum jp_site_state form)
{
	CHECK(form == JP_SITE_NOP || form == JP_SITE_JUMP);
	bool enable = form == JP_SITE_JUMP;
	if (enabled[jp - points] == enable)
		return;
	enabled[jp - points] = enable;
	patches++;
}

static uint64_t add_call(const uint64_t *args)
{
	return (uint64_t)((long)args[0] + (long)args[1]);
}

static void (*during_hook)(void);

static uint64_t hook_call(const uint64_t *args)
{
	if (during_hook)
		during_hook();
	return 0;
}

static uint64_t call(const char *name, long x, long y)
{
	uint64_t args[2] = {(uint64_t)x, (uint64_t)y};
	return jp_dispatch(jp_find(name), args);
}

/* ---- Recording advice ---------------------------------------------------- */

static char trace[64];

static void trace_before(struct jp_context *context, void *cookie)
{
	strncat(trace, cookie, sizeof trace - strlen(trace) - 1);
}

static void trace_after(struct jp_context *context, void *cookie)
{
	char lower[2] = {(char)(*(const char *)cookie + ('a' - 'A')), 0};
	strncat(trace, lower, sizeof trace - strlen(trace) - 1);
}

#define TRACER(letter, prio)                                                                    \
	{                                                                                       \
		.name = letter, .before = trace_before, .after = trace_after, .cookie = letter, \
		.priority = prio                                                                \
	}

/* Everything observable about the weaving state, to prove an error changed
 * nothing. */
struct snapshot {
	struct jp_list *lists[POINTS];
	bool enabled[POINTS];
	unsigned available;
	unsigned patches;
};

static void take(struct snapshot *s)
{
	memset(s, 0, sizeof *s); /* padding too: snapshots are compared whole */
	for (unsigned i = 0; i < POINTS; i++) {
		s->lists[i] = states[i].list;
		s->enabled[i] = enabled[i];
	}
	s->available = jp_list_available();
	s->patches = patches;
}

static bool unchanged(const struct snapshot *before)
{
	struct snapshot now;
	take(&now);
	return !memcmp(&now, before, sizeof now);
}

/* ---- Cases --------------------------------------------------------------- */

static void registry_finds_by_name(void)
{
	CHECK_EQ(jp_count(), POINTS);
	CHECK(jp_find("b.add") == &points[2]);
	CHECK(jp_find("b.ad") == NULL);
	CHECK(jp_find(NULL) == NULL);
}

static int stop_at_hook(const struct joinpoint *jp, void *arg)
{
	(*(unsigned *)arg)++;
	return strcmp(jp->name, "a.hook") ? 0 : 7;
}

static void for_each_stops_on_non_zero(void)
{
	unsigned visited = 0;
	CHECK_EQ(jp_for_each(stop_at_hook, &visited), 7);
	CHECK_EQ(visited, 2);
}

static void priority_orders_before_and_reverses_after(void)
{
	static const struct jp_advice a = TRACER("A", 5), b = TRACER("B", -1), c = TRACER("C", 5);
	int ha = jp_attach("a.add", &a), hb = jp_attach("a.add", &b), hc = jp_attach("a.add", &c);
	REQUIRE(ha > 0 && hb > 0 && hc > 0);
	CHECK(enabled[0]);
	trace[0] = 0;
	CHECK_EQ(call("a.add", 40, 2), 42);
	CHECK_STR_EQ(trace, "BACcab");
	CHECK_EQ(jp_detach(ha), 0);
	CHECK(enabled[0]);
	CHECK_EQ(jp_detach(hb), 0);
	CHECK_EQ(jp_detach(hc), 0);
	CHECK(!enabled[0]);
	CHECK_EQ(jp_list_length(states[0].list), 0);
	CHECK_EQ(jp_list_available(), JP_LIST_POOL);
}

static void errors_are_distinct_and_change_nothing(void)
{
	static const struct jp_advice a = TRACER("A", 0), none = {.name = "none"};
	static struct jp_advice fill[JP_MAX_ADVICE];
	struct snapshot s;

	take(&s);
	CHECK_EQ(jp_attach("c.*", &a), -ENOENT);
	CHECK_EQ(jp_attach("a.add", &none), -EINVAL);
	CHECK_EQ(jp_attach("a.add", NULL), -EINVAL);
	CHECK_EQ(jp_detach(1), -EINVAL);
	CHECK_EQ(jp_detach(-3), -EINVAL);
	CHECK(unchanged(&s));

	int handle = jp_attach("a.add", &a);
	REQUIRE(handle > 0);
	take(&s);
	CHECK_EQ(jp_attach("*.add", &a), -EEXIST);
	CHECK(unchanged(&s));

	this_cpu()->jp_sections += 1; /* as if inside advice */
	CHECK_EQ(jp_attach("b.add", &a), -EDEADLK);
	CHECK_EQ(jp_detach(handle), -EDEADLK);
	this_cpu()->jp_sections += 3; /* and out again, as a section's end does */
	CHECK(unchanged(&s));

	int handles[JP_MAX_ADVICE];
	for (unsigned i = 0; i + 1 < JP_MAX_ADVICE; i++) {
		fill[i] = (struct jp_advice){.name = "fill", .before = trace_before, .cookie = ""};
		handles[i] = jp_attach("a.add", &fill[i]);
		CHECK(handles[i] > 0);
	}
	fill[JP_MAX_ADVICE - 1] = (struct jp_advice){.name = "extra", .after = trace_before};
	take(&s);
	CHECK_EQ(jp_attach("*.add", &fill[JP_MAX_ADVICE - 1]), -ENOSPC);
	CHECK(unchanged(&s));
	for (unsigned i = 0; i + 1 < JP_MAX_ADVICE; i++)
		CHECK_EQ(jp_detach(handles[i]), 0);
	CHECK_EQ(jp_detach(handle), 0);
	CHECK_EQ(jp_detach(handle), -EINVAL); /* stale: detached already */
	CHECK_EQ(jp_list_available(), JP_LIST_POOL);
}

static void pool_exhaustion_is_enomem_and_changes_nothing(void)
{
	static const struct jp_advice a = TRACER("A", 0), b = TRACER("B", 0);
	int ha = jp_attach("*", &a); /* 4 lists of 6 */
	REQUIRE(ha > 0);
	struct snapshot s;
	take(&s);
	CHECK_EQ(jp_attach("*", &b), -ENOMEM);
	CHECK(unchanged(&s));
	int hb = jp_attach("a.*", &b); /* 2 more: fits */
	CHECK(hb > 0);
	CHECK_EQ(jp_detach(ha), 0);
	CHECK_EQ(jp_detach(hb), 0);
	CHECK_EQ(jp_list_available(), JP_LIST_POOL);
}

static void detach_removes_only_its_own_entries(void)
{
	static const struct jp_advice a = TRACER("A", 0);
	int on_a = jp_attach("a.*", &a);
	int on_b = jp_attach("b.*", &a);
	REQUIRE(on_a > 0 && on_b > 0);
	CHECK_EQ(jp_detach(on_a), 0);
	CHECK(!jp_list_length(states[0].list) && !jp_list_length(states[1].list));
	CHECK_EQ(jp_list_length(states[2].list), 1);
	CHECK(enabled[2] && !enabled[0]);
	trace[0] = 0;
	call("b.add", 1, 1);
	call("a.add", 1, 1);
	CHECK_STR_EQ(trace, "Aa");
	CHECK_EQ(jp_detach(on_b), 0);
}

static const struct jp_advice late = TRACER("L", 0);
static int late_handle;

static void attach_late(void)
{
	late_handle = jp_attach("a.hook", &late);
}

static void detach_late(void)
{
	CHECK_EQ(jp_detach(late_handle), 0);
}

/* Advice attached while a call is in progress must not get that call's after
 * (it never saw its before); advice detached mid-call misses its after. */
static void changes_during_a_call_never_give_after_without_before(void)
{
	static const struct jp_advice early = TRACER("E", 1);
	int handle = jp_attach("a.hook", &early);
	REQUIRE(handle > 0);
	trace[0] = 0;
	during_hook = attach_late;
	call("a.hook", 0, 0);
	CHECK_STR_EQ(trace, "Ee");
	trace[0] = 0;
	during_hook = detach_late;
	call("a.hook", 0, 0);
	CHECK_STR_EQ(trace, "LEe");
	during_hook = NULL;
	CHECK_EQ(jp_detach(handle), 0);
}

static void reenter(struct jp_context *context, void *cookie)
{
	call("b.add", 1, 2);
}

static void advice_reaching_a_joinpoint_runs_no_advice(void)
{
	static const struct jp_advice r = {.name = "r", .before = reenter};
	static const struct jp_advice a = TRACER("A", 0);
	int hr = jp_attach("a.add", &r), ha = jp_attach("b.add", &a);
	REQUIRE(hr > 0 && ha > 0);
	trace[0] = 0;
	CHECK_EQ(call("a.add", 2, 2), 4);
	CHECK_STR_EQ(trace, "");
	CHECK_EQ(states[2].skipped, 1);
	CHECK_EQ(this_cpu()->jp_sections & 1, 0);
	CHECK_EQ(this_cpu()->preempt_count, 0);
	jp_detach(hr);
	jp_detach(ha);
}

static uint64_t seen_args[2], seen_ret;
static const struct joinpoint *seen_jp;

static void look_before(struct jp_context *context, void *cookie)
{
	seen_jp = context->joinpoint;
	seen_args[0] = context->args[0];
	seen_args[1] = context->args[1];
	context->args[1] = 100; /* the call uses what before leaves here */
}

static void look_after(struct jp_context *context, void *cookie)
{
	seen_ret = context->ret;
	CHECK(context->exit_tsc >= context->entry_tsc);
	context->ret = 7;
}

static void the_context_carries_args_and_result(void)
{
	static const struct jp_advice look = {
	    .name = "look", .before = look_before, .after = look_after};
	int handle = jp_attach("b.add", &look);
	REQUIRE(handle > 0);
	CHECK_EQ(call("b.add", -5, 3), 7);
	CHECK(seen_jp == &points[2]);
	CHECK_EQ((long)seen_args[0], -5);
	CHECK_EQ(seen_args[1], 3);
	CHECK_EQ((long)seen_ret, 95);
	CHECK_EQ(jp_detach(handle), 0);
	CHECK_EQ(call("b.add", -5, 3), -2);
}

HOSTTEST_MAIN(HOSTTEST_CASE(registry_finds_by_name), HOSTTEST_CASE(for_each_stops_on_non_zero),
	      HOSTTEST_CASE(priority_orders_before_and_reverses_after),
	      HOSTTEST_CASE(errors_are_distinct_and_change_nothing),
	      HOSTTEST_CASE(pool_exhaustion_is_enomem_and_changes_nothing),
	      HOSTTEST_CASE(detach_removes_only_its_own_entries),
	      HOSTTEST_CASE(changes_during_a_call_never_give_after_without_before),
	      HOSTTEST_CASE(advice_reaching_a_joinpoint_runs_no_advice),
	      HOSTTEST_CASE(the_context_carries_args_and_result))
