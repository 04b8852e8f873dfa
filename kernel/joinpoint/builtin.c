/*
 * The built-in advice and the kernel-side controls until the shell exists.
 * jp_advice_count counts calls; jp_advice_time counts and times them (from
 * the dispatcher's entry and exit stamps, so advice that runs before it is
 * included; alone on a join point that may sleep, from its own stamps around
 * the call).  Both keep their figures in the join point's own jp_state with
 * atomic updates: any CPU and interrupts may hit a join point at once.  The
 * minimum is stored inverted so that the zeroed state means "no call yet".
 * Alone on a join point that may sleep, each runs the whole call (its
 * around: joinpoint.h), which they may because they are kernel code for good
 * and what they do after a call touches only the join point's state.
 *
 * Boot controls: jp_attach=pattern[:count|time] (up to BOOT_REQUESTS words)
 * attaches a built-in advice once the clock runs, and jp_boot_report prints
 * the statistics before the kernel stops.
 */
#include "joinpoint/internal.h"
#include "joinpoint/section.h"

#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "time/time.h"

#define BOOT_REQUESTS    4
#define BOOT_PATTERN_MAX 64

static void count_before(struct jp_context *context, void *cookie)
{
	__atomic_fetch_add(&context->joinpoint->state->calls, 1, __ATOMIC_RELAXED);
}

/* The whole call of a join point that may sleep, where counting is alone on
 * it (jp_advice.around): the count in the dispatcher's section, then the
 * call outside it. */
static uint64_t count_around(const struct joinpoint *jp, uint64_t *args,
			     const struct jp_fast_list *list)
{
	__atomic_fetch_add(&jp->state->calls, 1, __ATOMIC_RELAXED);
	jp_section_leave();
	return jp->call(args);
}

static void store_min(uint64_t *inverted_min, uint64_t ns)
{
	uint64_t seen = __atomic_load_n(inverted_min, __ATOMIC_RELAXED);
	while (~ns > seen && !__atomic_compare_exchange_n(inverted_min, &seen, ~ns, true,
							  __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static void store_max(uint64_t *max, uint64_t ns)
{
	uint64_t seen = __atomic_load_n(max, __ATOMIC_RELAXED);
	while (ns > seen && !__atomic_compare_exchange_n(max, &seen, ns, true, __ATOMIC_RELAXED,
							 __ATOMIC_RELAXED))
		;
}

static void record_time(struct jp_state *state, uint64_t ns)
{
	__atomic_fetch_add(&state->timed_calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&state->total_ns, ns, __ATOMIC_RELAXED);
	store_min(&state->min_ns, ns);
	store_max(&state->max_ns, ns);
}

static void time_after(struct jp_context *context, void *cookie)
{
	record_time(context->joinpoint->state,
		    clock_tsc_to_ns(context->exit_tsc - context->entry_tsc));
}

/* The whole call where timing is alone on a join point that may sleep: the
 * TSC in the dispatcher's section, the call outside it, the figures after
 * (into the join point's own state, which outlives any detach). */
static uint64_t time_around(const struct joinpoint *jp, uint64_t *args,
			    const struct jp_fast_list *list)
{
	uint64_t entry = rdtsc();
	jp_section_leave();
	uint64_t result = jp->call(args);
	record_time(jp->state, clock_tsc_to_ns(rdtsc() - entry));
	return result;
}

const struct jp_advice jp_advice_count = {
    .name = "count", .before = count_before, .around = count_around};
const struct jp_advice jp_advice_time = {
    .name = "time", .after = time_after, .flags = JP_ADVICE_TIMESTAMPS, .around = time_around};

void jp_get_stats(const struct joinpoint *jp, struct jp_stats *stats)
{
	const struct jp_state *state = jp->state;
	stats->calls = __atomic_load_n(&state->calls, __ATOMIC_RELAXED);
	stats->timed_calls = __atomic_load_n(&state->timed_calls, __ATOMIC_RELAXED);
	stats->total_ns = __atomic_load_n(&state->total_ns, __ATOMIC_RELAXED);
	stats->min_ns = ~__atomic_load_n(&state->min_ns, __ATOMIC_RELAXED);
	if (!stats->timed_calls)
		stats->min_ns = 0;
	stats->max_ns = __atomic_load_n(&state->max_ns, __ATOMIC_RELAXED);
	stats->skipped = __atomic_load_n(&state->skipped, __ATOMIC_RELAXED);
	stats->advice = jp_list_length(__atomic_load_n(&state->list, __ATOMIC_ACQUIRE));
}

static int reset_one(const struct joinpoint *jp, void *arg)
{
	struct jp_state *state = jp->state;
	__atomic_store_n(&state->calls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&state->timed_calls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&state->total_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&state->min_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&state->max_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&state->skipped, 0, __ATOMIC_RELAXED);
	return 0;
}

void jp_reset_stats(void)
{
	jp_for_each(reset_one, NULL);
}

static int print_signature(const struct joinpoint *jp, void *arg)
{
	if (!jp_pattern_match(arg, jp->name))
		return 0;
	char text[160];
	size_t n = 0;
	for (unsigned i = 0; i < jp->argc && n < sizeof text; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "%s%s %s", i ? ", " : "",
				      jp->arg_types[i], jp->arg_names[i]);
	if (!jp->argc)
		strlcpy(text, "void", sizeof text);
	struct jp_stats stats;
	jp_get_stats(jp, &stats);
	console_print("  %-28s %s %s(%s)  advice %u\n", jp->name, jp->return_type, jp->name, text,
		      stats.advice);
	return 0;
}

void jp_print_matching(const char *pattern)
{
	console_print("join points: %u\n", jp_count());
	jp_for_each(print_signature, (void *)pattern);
}

void jp_print_list(void)
{
	jp_print_matching("*");
}

static int print_one_stats(const struct joinpoint *jp, void *arg)
{
	struct jp_stats s;
	jp_get_stats(jp, &s);
	if (!jp_pattern_match(arg, jp->name) || (!s.calls && !s.timed_calls && !s.skipped))
		return 0;
	uint64_t mean = s.timed_calls ? s.total_ns / s.timed_calls : 0;
	console_print("  %-28s %10lu %10lu %12lu %8lu %8lu %8lu %8lu\n", jp->name, s.calls,
		      s.timed_calls, s.total_ns, s.min_ns, mean, s.max_ns, s.skipped);
	return 0;
}

void jp_print_matching_stats(const char *pattern)
{
	console_print("  %-28s %10s %10s %12s %8s %8s %8s %8s\n", "join point", "counted", "timed",
		      "total ns", "min", "mean", "max", "skipped");
	jp_for_each(print_one_stats, (void *)pattern);
}

void jp_print_stats(void)
{
	jp_print_matching_stats("*");
}

/* ---- Boot controls ------------------------------------------------------- */

struct boot_request {
	char pattern[BOOT_PATTERN_MAX];
	const struct jp_advice *advice;
};

static struct boot_request boot_requests[BOOT_REQUESTS];
static unsigned boot_request_count;
static unsigned boot_attached;

/* jp_attach=pattern[:count|time]; count is the default. */
static int set_jp_attach(const char *value)
{
	if (!value || !*value || boot_request_count == BOOT_REQUESTS)
		return -1;
	struct boot_request *request = &boot_requests[boot_request_count];
	const char *colon = strchr(value, ':');
	size_t length = colon ? (size_t)(colon - value) : strlen(value);
	if (!length || length >= BOOT_PATTERN_MAX)
		return -1;
	if (!colon || !strcmp(colon + 1, "count"))
		request->advice = &jp_advice_count;
	else if (!strcmp(colon + 1, "time"))
		request->advice = &jp_advice_time;
	else
		return -1;
	memcpy(request->pattern, value, length);
	request->pattern[length] = '\0';
	boot_request_count++;
	return 0;
}
KERNEL_PARAM(jp_attach, set_jp_attach, "pattern[:count|time]: attach a built-in advice at boot");

static void apply_boot_request(const struct boot_request *request)
{
	int handle = jp_attach(request->pattern, request->advice);
	if (handle < 0) {
		pr_warn("joinpoint: jp_attach=%s:%s failed (%d)\n", request->pattern,
			request->advice->name, handle);
		return;
	}
	boot_attached++;
	pr_info("joinpoint: %s advice on '%s'\n", request->advice->name, request->pattern);
}

void jp_boot_init(void)
{
	pr_info("joinpoint: %u join points, %lu patch sites\n", jp_count(), jp_site_count());
	for (unsigned i = 0; i < boot_request_count; i++)
		apply_boot_request(&boot_requests[i]);
	jp_bench_run_if_requested();
}

void jp_boot_report(void)
{
	if (!boot_attached)
		return;
	pr_info("joinpoint: statistics of the advice attached at boot\n");
	jp_print_stats();
}
