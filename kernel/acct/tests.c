/*
 * The acct suite: what the kernel side does for callers that are not
 * accounted threads (a kernel thread here), and the flag checks; then the
 * rscfl aspect itself, with the test's kernel thread made an owner (an
 * unmapped results area) and test join points in two modules, "acctnest"
 * calling "acctleaf": exclusive against inclusive time, interrupts and
 * allocations charged, unattributed, the direct-only binding.  The user
 * side, with a real results page, is userland/rscfltest.
 */
#include "acct/acct.h"
#include "acct/internal.h"
#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/weave.h"
#include "mm/mm.h"
#include "pagecache/pagecache.h"
#include "sched/sched.h"
#include "time/time.h"
#include "workqueue/workqueue.h"

static void kernel_thread_gets_no_page(struct ktest *t)
{
	EXPECT_EQ(t, acct_init_thread(), -EPERM);
}

static void calls_without_init_are_errors(struct ktest *t)
{
	EXPECT_EQ(t, acct_get_token(), -ENOENT);
	EXPECT_EQ(t, acct_free_token(1), -ENOENT);
	EXPECT_EQ(t, acct_control(1, ACCT_START), -ENOENT);
	EXPECT_EQ(t, acct_control(1, ACCT_STOP), -ENOENT);
	EXPECT_EQ(t, acct_switch_token(1), -ENOENT);
}

static void nothing_is_woven_while_idle(struct ktest *t)
{
	struct jp_stats stats;
	const struct joinpoint *jp = jp_find("sched.switch");
	ASSERT_TRUE(t, jp != NULL);
	jp_get_stats(jp, &stats);
	EXPECT_EQ(t, stats.advice, 0);
}

/* Does work charged through a ref reach its token, and does a ref kept past
 * the token's free (and the token's reuse) charge nothing? */
static void stale_ref_charges_nothing(struct ktest *t)
{
	EXPECT_EQ(t, acct_current_ref(), 0); /* not an owner: no activity */
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int token = acct_get_token();
	EXPECT_EQ(t, acct_current_ref(), 0); /* allocated, not started */
	EXPECT_EQ(t, acct_control(token, ACCT_START), 0);
	acct_ref_t ref = acct_current_ref();
	EXPECT_NE(t, ref, 0);
	EXPECT_EQ(t, acct_control(token, ACCT_STOP), 0);
	struct acct_result *result = &page->results[token - 1];
	acct_charge_ref(ref, ACCT_TCP_BYTES_SENT, 100); /* stopped: work done later still counts */
	acct_charge_ref(ref, ACCT_NIC_PACKETS_RECEIVED, 2);
	acct_async_end(ref, acct_async_begin(ref));
	EXPECT_EQ(t, result->tcp_bytes_sent, 100);
	EXPECT_EQ(t, result->nic_packets_received, 2);
	EXPECT_EQ(t, result->async_items, 1);
	EXPECT_EQ(t, acct_free_token(token), 0);
	acct_charge_ref(ref, ACCT_TCP_BYTES_SENT, 100);
	EXPECT_EQ(t, result->tcp_bytes_sent, 0); /* freed */
	EXPECT_EQ(t, acct_get_token(), token);   /* the same index, a new generation */
	acct_charge_ref(ref, ACCT_TCP_BYTES_SENT, 100);
	acct_charge_ref(ref, ACCT_TCP_SEGMENTS_SENT, 1);
	acct_async_end(ref, acct_async_begin(ref));
	EXPECT_EQ(t, result->tcp_bytes_sent, 0);
	EXPECT_EQ(t, result->tcp_segments_sent, 0);
	EXPECT_EQ(t, result->async_items, 0);
	EXPECT_EQ(t, result->sequence % 2, 0);
	acct_charge_ref(0, ACCT_TCP_BYTES_SENT, 100); /* no activity: nothing, no crash */
	acct_detach_kernel_thread();
}

/* An owner entry given up and taken again goes on with its tokens'
 * generations: a ref of its earlier owner charges nothing.  The same thread
 * takes it again here; in use it is another thread, whose id has the same
 * low bits, the only ones a ref keeps, once thread ids pass 2^23. */
static void ref_of_an_earlier_owner_charges_nothing(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int token = acct_get_token();
	EXPECT_EQ(t, acct_control(token, ACCT_START), 0);
	acct_ref_t ref = acct_current_ref();
	EXPECT_NE(t, ref, 0);
	EXPECT_EQ(t, acct_control(token, ACCT_STOP), 0);
	acct_detach_kernel_thread();
	page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	EXPECT_EQ(t, acct_get_token(), token);
	acct_charge_ref(ref, ACCT_TCP_BYTES_SENT, 100);
	acct_async_end(ref, acct_async_begin(ref));
	EXPECT_EQ(t, page->results[token - 1].tcp_bytes_sent, 0);
	EXPECT_EQ(t, page->results[token - 1].async_items, 0);
	acct_detach_kernel_thread();
}

/* ---- The rscfl aspect, driven by a kernel thread made an owner ------------ */

/* Test join points in two modules (subsystems): acctnest calls acctleaf. */
void acctleaf_inner(void);
void acctnest_helper(void);
void acctnest_outer(void);
void acctleaf_wait_interrupt(void);
void acctleaf_allocate(void);

JOINPOINT_DEFINE_VOID_NOSLEEP(acctleaf, inner)
{
	for (volatile int i = 0; i < 1000; i++)
		;
}

JOINPOINT_DEFINE_VOID_NOSLEEP(acctnest, helper)
{
	acctleaf_inner();
}

JOINPOINT_DEFINE_VOID_NOSLEEP(acctnest, outer)
{
	acctleaf_inner();
	acctnest_helper();
}

/* Waits (a bounded time) until this CPU takes an interrupt. */
JOINPOINT_DEFINE_VOID(acctleaf, wait_interrupt)
{
	preempt_disable();
	uint64_t seen = this_cpu()->stats.interrupts, deadline = clock_ns() + NSEC_PER_SEC;
	while (this_cpu()->stats.interrupts == seen && clock_ns() < deadline)
		cpu_relax();
	preempt_enable();
}

JOINPOINT_DEFINE_VOID(acctleaf, allocate)
{
	kfree(kmalloc(100));
}

/* Join points that may sleep: one that calls acctleaf.inner (a _NOSLEEP
 * one), one that sleeps, and one that calls it. */
void acctnest_wrap(void);
void acctleaf_nap(void);
void acctnest_naps(void);

JOINPOINT_DEFINE_VOID(acctnest, wrap)
{
	acctleaf_inner();
}

#define NAP_NS (2 * 1000 * 1000ULL)

JOINPOINT_DEFINE_VOID(acctleaf, nap)
{
	sched_sleep_ns(NAP_NS);
}

JOINPOINT_DEFINE_VOID(acctnest, naps)
{
	acctleaf_nap();
}

static const struct acct_subsystem *subsystem(const struct acct_result *result, const char *name)
{
	for (unsigned i = 0; i < result->subsystem_count && i < ACCT_MAX_SUBSYSTEMS; i++)
		if (strcmp(result->subsystems[i].name, name) == 0)
			return &result->subsystems[i];
	return NULL;
}

/* Is a nested call to another subsystem left out of the caller's exclusive
 * time, and a nested call to the same subsystem not charged twice? */
static void exclusive_leaves_out_other_subsystems(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int token = acct_get_token();
	EXPECT_EQ(t, acct_control(token, ACCT_START), 0);
	const struct acct_result *result = &page->results[token - 1];
	uint64_t flags = irq_save(); /* no interrupt nests in the calls */
	acctnest_helper();
	irq_restore(flags);
	const struct acct_subsystem *nest = subsystem(result, "acctnest");
	const struct acct_subsystem *leaf = subsystem(result, "acctleaf");
	ASSERT_TRUE(t, nest && leaf);
	EXPECT_EQ(t, nest->calls, 1);
	EXPECT_EQ(t, leaf->calls, 1);
	EXPECT_EQ(t, leaf->exclusive_ns, leaf->inclusive_ns);
	EXPECT_EQ(t, nest->exclusive_ns + leaf->inclusive_ns, nest->inclusive_ns);
	struct acct_subsystem before_nest = *nest, before_leaf = *leaf;
	flags = irq_save();
	acctnest_outer(); /* outer -> inner, outer -> helper -> inner */
	irq_restore(flags);
	uint64_t nest_inclusive = nest->inclusive_ns - before_nest.inclusive_ns;
	uint64_t nest_exclusive = nest->exclusive_ns - before_nest.exclusive_ns;
	uint64_t leaf_inclusive = leaf->inclusive_ns - before_leaf.inclusive_ns;
	EXPECT_EQ(t, nest->calls, 3);
	EXPECT_EQ(t, leaf->calls, 3);
	/* helper's time is in outer's: inclusive counts it twice, exclusive once */
	EXPECT_TRUE(t, nest_exclusive + leaf_inclusive < nest_inclusive);
	EXPECT_TRUE(t, nest_exclusive > 0);
	EXPECT_EQ(t, acct_control(token, ACCT_STOP), 0);
	EXPECT_EQ(t, result->state, ACCT_TOKEN_IDLE);
	EXPECT_EQ(t, result->sequence % 2, 0);
	EXPECT_EQ(t, acct_free_token(token), 0);
	acct_detach_kernel_thread();
}

/* ---- The whole-call paths against the before/after (C) path ------------- */

extern const char acct_fast_path0[], acct_fast_path1[];

/* The code the trampoline jumps to for name's advice list (the list begins
 * with struct jp_fast_list, joinpoint.h). */
static const void *shape_of(const char *name)
{
	const struct joinpoint *jp = jp_find(name);
	const struct jp_fast_list *list = jp ? (const void *)jp->state->list : NULL;
	return list ? list->shape : NULL;
}

/* The built-in count advice on both test modules: the accounting is no
 * longer alone there, so its before and after run instead of its whole-call
 * paths. */
struct count_handles {
	int nest, leaf;
};

static struct count_handles share_test_join_points(struct ktest *t)
{
	struct count_handles handles = {jp_attach("acctnest.*", &jp_advice_count),
					jp_attach("acctleaf.*", &jp_advice_count)};
	EXPECT_TRUE(t, handles.nest > 0 && handles.leaf > 0);
	return handles;
}

static void unshare_test_join_points(struct count_handles handles)
{
	if (handles.nest > 0)
		jp_detach(handles.nest);
	if (handles.leaf > 0)
		jp_detach(handles.leaf);
}

/* acctnest.helper (_NOSLEEP, its acctleaf.inner nested in its section) and
 * acctnest.wrap (may sleep, its acctleaf.inner outermost) three and two
 * times, with interrupts off so that nothing else nests. */
static void nested_calls(void)
{
	uint64_t flags = irq_save();
	for (int i = 0; i < 3; i++)
		acctnest_helper();
	for (int i = 0; i < 2; i++)
		acctnest_wrap();
	irq_restore(flags);
}

/* What nested_calls must leave in a result, whichever path charged it. */
static void expect_nested_calls(struct ktest *t, const struct acct_result *result)
{
	const struct acct_subsystem *nest = subsystem(result, "acctnest");
	const struct acct_subsystem *leaf = subsystem(result, "acctleaf");
	ASSERT_TRUE(t, nest && leaf);
	EXPECT_EQ(t, nest->calls, 5);
	EXPECT_EQ(t, leaf->calls, 5);
	EXPECT_EQ(t, leaf->exclusive_ns, leaf->inclusive_ns);
	EXPECT_TRUE(t, leaf->inclusive_ns > 0);
	EXPECT_TRUE(t, nest->exclusive_ns > 0);
	EXPECT_EQ(t, nest->exclusive_ns + leaf->inclusive_ns, nest->inclusive_ns);
	EXPECT_EQ(t, nest->sched_out_ns + leaf->sched_out_ns, 0);
	EXPECT_EQ(t, nest->allocs + leaf->allocs + nest->interrupts + leaf->interrupts, 0);
	EXPECT_EQ(t, result->sequence % 2, 0);
}

/* Do the accounting's own paths (a _NOSLEEP join point's fast path, a
 * sleeping one's around) charge what its before and after charge, nested
 * calls included: the same calls, and inclusive and exclusive times that
 * add up the same way? */
static void whole_call_paths_charge_as_before_and_after_do(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int fast = acct_get_token(), general = acct_get_token();
	EXPECT_EQ(t, acct_control(fast, ACCT_START), 0);
	EXPECT_TRUE(t, shape_of("acctnest.helper") == acct_fast_path0); /* alone: its own path */
	EXPECT_TRUE(t, shape_of("acctleaf.inner") == acct_fast_path0);
	nested_calls();
	EXPECT_EQ(t, acct_control(fast, ACCT_STOP), 0);
	EXPECT_EQ(t, acct_control(general, ACCT_START), 0);
	struct count_handles handles = share_test_join_points(t);
	EXPECT_TRUE(t, shape_of("acctnest.helper") != acct_fast_path0); /* shared: before/after */
	struct jp_stats before, after;
	jp_get_stats(jp_find("acctnest.wrap"), &before);
	nested_calls();
	jp_get_stats(jp_find("acctnest.wrap"), &after);
	unshare_test_join_points(handles);
	EXPECT_EQ(t, acct_control(general, ACCT_STOP), 0);
	EXPECT_EQ(t, after.calls - before.calls, 2); /* the dispatcher ran the list of two */
	expect_nested_calls(t, &page->results[fast - 1]);
	expect_nested_calls(t, &page->results[general - 1]);
	EXPECT_EQ(t, acct_free_token(fast), 0);
	EXPECT_EQ(t, acct_free_token(general), 0);
	acct_detach_kernel_thread();
}

/* A call that sleeps inside acctleaf (sched.sleep, itself a join point of
 * "sched"), inside acctnest: is its time off the CPU charged to the activity
 * and to every subsystem with a call open, and in their inclusive time, on
 * either path?  Slept until a sleep really blocked (under a loaded host the
 * thread may be preempted past its deadline before it blocks). */
static void nap_until_blocked(const struct acct_result *result)
{
	const struct acct_subsystem *leaf;
	do
		acctnest_naps();
	while (!(leaf = subsystem(result, "acctleaf")) || leaf->blocked_ns == 0);
}

static void expect_nap(struct ktest *t, const struct acct_result *result)
{
	const struct acct_subsystem *nest = subsystem(result, "acctnest");
	const struct acct_subsystem *leaf = subsystem(result, "acctleaf");
	const struct acct_subsystem *sched = subsystem(result, "sched");
	ASSERT_TRUE(t, nest && leaf && sched);
	EXPECT_TRUE(t, leaf->calls >= 1);
	EXPECT_EQ(t, nest->calls, leaf->calls);
	EXPECT_TRUE(t, leaf->blocked_ns > 0);
	/* a thread blocks only inside sched.sleep, which is inside both */
	EXPECT_EQ(t, sched->blocked_ns, leaf->blocked_ns);
	EXPECT_EQ(t, nest->blocked_ns, leaf->blocked_ns);
	EXPECT_EQ(t, leaf->sched_out_ns, leaf->blocked_ns + leaf->preempted_ns);
	EXPECT_TRUE(t, nest->sched_out_ns >= leaf->sched_out_ns);
	EXPECT_TRUE(t, leaf->inclusive_ns >= leaf->sched_out_ns);
	/* interrupts nested in acctnest are other subsystems too */
	EXPECT_TRUE(t, nest->exclusive_ns + leaf->inclusive_ns <= nest->inclusive_ns);
	EXPECT_TRUE(t, result->blocked_ns >= leaf->blocked_ns);
	EXPECT_TRUE(t, result->sched_out_ns >= nest->sched_out_ns);
	EXPECT_TRUE(t, result->context_switches >= 1);
}

static void a_call_that_sleeps_is_charged_its_time_off_the_cpu(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int fast = acct_get_token(), general = acct_get_token();
	EXPECT_EQ(t, acct_control(fast, ACCT_START), 0);
	nap_until_blocked(&page->results[fast - 1]);
	EXPECT_EQ(t, acct_control(fast, ACCT_STOP), 0);
	EXPECT_EQ(t, acct_control(general, ACCT_START), 0);
	struct count_handles handles = share_test_join_points(t);
	nap_until_blocked(&page->results[general - 1]);
	unshare_test_join_points(handles);
	EXPECT_EQ(t, acct_control(general, ACCT_STOP), 0);
	expect_nap(t, &page->results[fast - 1]);
	expect_nap(t, &page->results[general - 1]);
	EXPECT_EQ(t, acct_free_token(fast), 0);
	EXPECT_EQ(t, acct_free_token(general), 0);
	acct_detach_kernel_thread();
}

/* Join points that change the charged result inside their call: one starts
 * another token, one resets the current one, each around a call of
 * acctleaf. */
static int token_to_start, token_to_reset;
void acctnest_starts_another(void);
void acctnest_resets(void);

JOINPOINT_DEFINE_VOID(acctnest, starts_another)
{
	acctleaf_inner();
	acct_control(token_to_start, ACCT_START);
	acctleaf_inner();
}

JOINPOINT_DEFINE_VOID(acctnest, resets)
{
	acctleaf_inner();
	acct_control(token_to_reset, ACCT_TK_RESET);
	acctleaf_inner();
}

/* Nothing of a call, or of its exclusive time: a slot with no calls, or
 * none. */
static bool charged_nothing(const struct acct_result *result, const char *name)
{
	const struct acct_subsystem *found = subsystem(result, name);
	return !found ||
	       (found->calls == 0 && found->inclusive_ns == 0 && found->exclusive_ns == 0);
}

/* A call opened for one token and closed while another is current: is it
 * charged to neither, its exclusive time before the START included, and the
 * calls it made before and after the START to the token current then? */
static void a_call_open_across_a_start_is_charged_to_neither(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int a = acct_get_token(), b = acct_get_token();
	token_to_start = b;
	EXPECT_EQ(t, acct_control(a, ACCT_START), 0);
	acctnest_starts_another();
	EXPECT_EQ(t, acct_control(b, ACCT_STOP), 0);
	EXPECT_EQ(t, acct_switch_token(a), 0);
	EXPECT_EQ(t, acct_control(a, ACCT_STOP), 0);
	const struct acct_result *in_a = &page->results[a - 1], *in_b = &page->results[b - 1];
	const struct acct_subsystem *leaf_a = subsystem(in_a, "acctleaf");
	const struct acct_subsystem *leaf_b = subsystem(in_b, "acctleaf");
	EXPECT_TRUE(t, charged_nothing(in_a, "acctnest"));
	EXPECT_TRUE(t, charged_nothing(in_b, "acctnest"));
	/* (an interrupt may nest in either: exclusive at most inclusive) */
	EXPECT_TRUE(t,
		    leaf_a && leaf_a->calls == 1 && leaf_a->exclusive_ns <= leaf_a->inclusive_ns);
	EXPECT_TRUE(t,
		    leaf_b && leaf_b->calls == 1 && leaf_b->exclusive_ns <= leaf_b->inclusive_ns);
	EXPECT_EQ(t, acct_free_token(a), 0);
	EXPECT_EQ(t, acct_free_token(b), 0);
	acct_detach_kernel_thread();
}

/* A TK_RESET of the current token inside a call: is what its calls charged
 * before it gone, the call open across it charged nothing, and the call
 * after it charged? */
static void a_reset_inside_a_call_keeps_only_what_follows(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int token = acct_get_token();
	token_to_reset = token;
	EXPECT_EQ(t, acct_control(token, ACCT_START), 0);
	acctnest_resets();
	EXPECT_EQ(t, acct_control(token, ACCT_STOP), 0);
	const struct acct_result *result = &page->results[token - 1];
	const struct acct_subsystem *leaf = subsystem(result, "acctleaf");
	EXPECT_TRUE(t, charged_nothing(result, "acctnest"));
	EXPECT_TRUE(t, leaf && leaf->calls == 1 && leaf->inclusive_ns > 0);
	EXPECT_EQ(t, result->sequence % 2, 0);
	EXPECT_EQ(t, acct_free_token(token), 0);
	acct_detach_kernel_thread();
}

/* A TK_RESET of the token being charged: wall and CPU time start again from
 * the reset, not from the START before it.  Another token stays started, so
 * the STOP does not unlink the accounting and the reset's time is most of
 * what the token keeps. */
static void a_reset_of_the_current_token_restarts_its_time(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int keeper = acct_get_token(), token = acct_get_token();
	EXPECT_EQ(t, acct_control(keeper, ACCT_START), 0);
	EXPECT_EQ(t, acct_control(token, ACCT_START), 0);
	uint64_t started = clock_ns();
	while (clock_ns() - started < 2 * NSEC_PER_MSEC)
		cpu_relax(); /* time before the reset, to be dropped by it */
	uint64_t reset = clock_ns();
	EXPECT_EQ(t, acct_control(token, ACCT_TK_RESET), 0);
	EXPECT_EQ(t, acct_control(token, ACCT_STOP), 0);
	uint64_t stopped = clock_ns();
	const struct acct_result *result = &page->results[token - 1];
	EXPECT_TRUE(t, result->wall_ns <= stopped - reset);
	EXPECT_TRUE(t, result->cpu_ns <= stopped - reset);
	EXPECT_EQ(t, result->sequence % 2, 0);
	EXPECT_EQ(t, acct_control(keeper, ACCT_STOP), 0);
	EXPECT_EQ(t, acct_free_token(token), 0);
	EXPECT_EQ(t, acct_free_token(keeper), 0);
	acct_detach_kernel_thread();
}

/* Hole B: a subsystem_count the kernel did not write (the results page is
 * shared with user space) must not steer the slot lookup or a reset. */
static void results_page_subsystem_count_is_not_trusted(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int token = acct_get_token();
	EXPECT_EQ(t, acct_control(token, ACCT_START), 0);
	struct acct_result *result = &page->results[token - 1];
	result->subsystem_count = 5000; /* what a writable page would let a process do */
	uint64_t flags = irq_save();
	acctnest_helper();
	irq_restore(flags);
	EXPECT_TRUE(t, subsystem(result, "acctnest") != NULL);
	EXPECT_TRUE(t, result->subsystem_count <= ACCT_MAX_SUBSYSTEMS);
	EXPECT_EQ(t, acct_control(token, ACCT_STOP), 0);
	result->subsystem_count = 0xffffffffu;
	EXPECT_EQ(t, acct_control(token, ACCT_TK_RESET), 0);
	EXPECT_EQ(t, result->subsystem_count, 0);
	EXPECT_EQ(t, acct_free_token(token), 0);
	acct_detach_kernel_thread();
}

/* Are an interrupt and an allocation inside a call charged to the call's
 * subsystem and to the activity? */
static void interrupts_and_allocations_are_charged(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int token = acct_get_token();
	EXPECT_EQ(t, acct_control(token, ACCT_START), 0);
	acctleaf_wait_interrupt();
	acctleaf_allocate();
	EXPECT_EQ(t, acct_control(token, ACCT_STOP), 0);
	const struct acct_result *result = &page->results[token - 1];
	const struct acct_subsystem *leaf = subsystem(result, "acctleaf");
	const struct acct_subsystem *irq = subsystem(result, "irq");
	const struct acct_subsystem *mm = subsystem(result, "mm");
	ASSERT_TRUE(t, leaf && irq && mm);
	EXPECT_TRUE(t, result->interrupts >= 1);
	EXPECT_TRUE(t, leaf->interrupts >= 1);
	EXPECT_TRUE(t, leaf->interrupts <= result->interrupts);
	EXPECT_TRUE(t, irq->calls >= result->interrupts);
	EXPECT_TRUE(t, result->irq_ns > 0);
	EXPECT_TRUE(t, result->irq_ns <= irq->inclusive_ns);
	EXPECT_TRUE(t, leaf->allocs >= 1);
	EXPECT_TRUE(t, leaf->alloc_bytes >= 100);
	EXPECT_TRUE(t, leaf->frees >= 1);
	EXPECT_TRUE(t, result->alloc_bytes >= leaf->alloc_bytes);
	EXPECT_TRUE(t, mm->calls >= 2);
	EXPECT_EQ(t, mm->allocs, 0); /* the allocator's own calls are not allocations of mm's */
	EXPECT_EQ(t, acct_free_token(token), 0);
	acct_detach_kernel_thread();
}

/* While no token is current but one is started, does the work go to
 * unattributed, so that the tokens plus unattributed are all of it? */
static void unattributed_takes_the_gaps(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int a = acct_get_token(), b = acct_get_token();
	EXPECT_EQ(t, acct_control(a, ACCT_START), 0);
	acctnest_helper();
	EXPECT_EQ(t, acct_control(b, ACCT_START), 0); /* a is suspended */
	acctnest_helper();
	acctnest_helper();
	EXPECT_EQ(t, acct_control(b, ACCT_STOP), 0); /* none current: unattributed */
	for (int i = 0; i < 4; i++)
		acctnest_helper();
	EXPECT_EQ(t, acct_switch_token(a), 0);
	acctnest_helper();
	EXPECT_EQ(t, acct_control(a, ACCT_STOP), 0); /* none started: unlinked */
	acctnest_helper();
	const struct acct_subsystem *in_a = subsystem(&page->results[a - 1], "acctnest");
	const struct acct_subsystem *in_b = subsystem(&page->results[b - 1], "acctnest");
	const struct acct_subsystem *in_u = subsystem(&page->unattributed, "acctnest");
	ASSERT_TRUE(t, in_a && in_b && in_u);
	EXPECT_EQ(t, in_a->calls, 2);
	EXPECT_EQ(t, in_b->calls, 2);
	EXPECT_EQ(t, in_u->calls, 4);
	EXPECT_TRUE(t, page->unattributed.wall_ns > 0);
	EXPECT_EQ(t, page->unattributed.state, ACCT_TOKEN_IDLE);
	EXPECT_EQ(t, acct_free_token(a), 0);
	EXPECT_EQ(t, acct_free_token(b), 0);
	acct_detach_kernel_thread();
}

/* Is the aspect linked direct only, and unlinked once accounting stops? */
static void aspect_links_direct_only(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int token = acct_get_token();
	EXPECT_EQ(t, acct_control(token, ACCT_START), 0);
	struct aspect *aspect = aspect_find("rscfl");
	ASSERT_TRUE(t, aspect != NULL);
	struct aspect_stats stats;
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_LIVE);
	EXPECT_EQ(t, stats.binding, ASPECT_BINDING_DIRECT);
	EXPECT_EQ(t, aspect_relink(aspect, ASPECT_BINDING_SHM), -EPERM);
	EXPECT_EQ(t, aspect_relink(aspect, ASPECT_BINDING_MSG), -EPERM);
	EXPECT_EQ(t, acct_control(token, ACCT_STOP), 0);
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_LOADED);
	EXPECT_TRUE(t, stats.events > 0);
	EXPECT_EQ(t, aspect_link(aspect, ASPECT_BINDING_SHM), -EPERM);
	EXPECT_EQ(t, acct_free_token(token), 0);
	acct_detach_kernel_thread();
	aspect_put(aspect);
}

/* An aspect someone linked by hand before the first token: is it used, with
 * unattributed counted, and unlinked when accounting stops? */
static void aspect_linked_by_hand_is_used(struct ktest *t)
{
	struct aspect *aspect = aspect_find("rscfl");
	char error[LINKER_ERROR_MAX];
	if (!aspect)
		EXPECT_EQ(t, linker_load_builtin("rscfl", &aspect, error, sizeof error), 0);
	ASSERT_TRUE(t, aspect != NULL);
	EXPECT_EQ(t, aspect_link(aspect, ASPECT_BINDING_DIRECT), 0);
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int a = acct_get_token(), b = acct_get_token();
	EXPECT_EQ(t, acct_control(a, ACCT_START), 0);
	EXPECT_EQ(t, acct_control(b, ACCT_START), 0);
	EXPECT_EQ(t, acct_control(b, ACCT_STOP), 0); /* a suspended: unattributed */
	acctnest_helper();
	EXPECT_EQ(t, acct_switch_token(a), 0);
	EXPECT_EQ(t, acct_control(a, ACCT_STOP), 0);
	const struct acct_subsystem *in_u = subsystem(&page->unattributed, "acctnest");
	EXPECT_TRUE(t, in_u && in_u->calls == 1);
	struct aspect_stats stats;
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_LOADED);
	EXPECT_EQ(t, acct_free_token(a), 0);
	EXPECT_EQ(t, acct_free_token(b), 0);
	acct_detach_kernel_thread();
	aspect_put(aspect);
}

/* Unlinked by another hand while a token stays started (the guard reports
 * an overrun, a fault, or someone unlinks it by hand): does the owner's next
 * call say so (-ENOLINK, once, its tokens stopped), and does the call after
 * it link the aspect again, although the control calls skip weaving while it
 * is linked?  (httpd's server token stays started for as long as it is
 * busy.) */
static void aspect_unlinked_under_a_started_token_is_an_error_then_linked_again(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int a = acct_get_token(), b = acct_get_token();
	EXPECT_EQ(t, acct_control(a, ACCT_START), 0);
	struct aspect *aspect = aspect_find("rscfl");
	ASSERT_TRUE(t, aspect != NULL);
	EXPECT_EQ(t, aspect_unlink(aspect), 0);
	sched_sleep_ns(2 * ACCT_LINK_RECHECK_NS);
	EXPECT_EQ(t, acct_control(b, ACCT_START), -ENOLINK);
	EXPECT_EQ(t, acct_switch_token(a), -EINVAL); /* stopped by the error */
	EXPECT_EQ(t, acct_control(b, ACCT_START), 0);
	struct aspect_stats stats;
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_LIVE);
	EXPECT_EQ(t, acct_control(b, ACCT_STOP), 0);
	EXPECT_EQ(t, aspect_get_stats(aspect, &stats), 0);
	EXPECT_EQ(t, stats.state, ASPECT_LOADED);
	EXPECT_EQ(t, acct_free_token(a), 0);
	EXPECT_EQ(t, acct_free_token(b), 0);
	acct_detach_kernel_thread();
	aspect_put(aspect);
}

/* ---- The page cache and work queues charge the activity ---------------- */

static int zero_page_read(struct pcache_mapping *mapping, uint64_t index, void *page)
{
	memset(page, (int)index, PAGE_SIZE);
	return 0;
}

static int discard_page_write(struct pcache_mapping *mapping, uint64_t index, const void *page)
{
	return 0;
}

static int zero_pages_read(struct pcache_mapping *mapping, uint64_t first, unsigned count,
			   void *buffer)
{
	for (unsigned i = 0; i < count; i++)
		zero_page_read(mapping, first + i, (uint8_t *)buffer + (size_t)i * PAGE_SIZE);
	return 0;
}

static const struct pcache_ops memory_pages = {
    .read_page = zero_page_read, .write_page = discard_page_write, .read_pages = zero_pages_read};

static void read_page_twice(struct pcache_mapping *mapping, uint64_t index)
{
	struct pcache_page *page;
	for (unsigned i = 0; i < 2; i++)
		if (pcache_get(mapping, index, PCACHE_READ, &page) == 0)
			pcache_put(page);
}

static void note_work(struct work *work)
{
	(*(unsigned *)work->arg)++;
}

/* A file read twice is a miss then a hit for the activity that read it, and
 * the other activity is charged nothing; a work item queued by an activity
 * is charged to it when the worker runs it, even after its STOP. */
static void page_cache_and_deferred_work_are_charged(struct ktest *t)
{
	static struct workqueue queue;
	if (!queue.worker)
		ASSERT_EQ(t, workqueue_start(&queue, "acct.test.wq"), 0);
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int reader = acct_get_token(), idle = acct_get_token();
	struct pcache_mapping file;
	pcache_mapping_init(&file, &memory_pages, NULL);
	EXPECT_EQ(t, acct_control(reader, ACCT_START), 0);
	read_page_twice(&file, 7);
	unsigned runs = 0;
	struct work work;
	work_init(&work, note_work, &runs);
	work_queue(&queue, &work);
	EXPECT_EQ(t, acct_control(reader, ACCT_STOP), 0);
	workqueue_flush(&queue);
	EXPECT_EQ(t, acct_control(idle, ACCT_START), 0);
	EXPECT_EQ(t, acct_control(idle, ACCT_STOP), 0);
	struct acct_result *r = &page->results[reader - 1], *other = &page->results[idle - 1];
	EXPECT_EQ(t, r->page_cache_misses, 1);
	EXPECT_EQ(t, r->page_cache_hits, 1);
	EXPECT_EQ(t, r->page_cache_read_bytes, PAGE_SIZE);
	EXPECT_EQ(t, runs, 1);
	EXPECT_EQ(t, r->async_items, 1);
	EXPECT_EQ(t, other->page_cache_misses + other->page_cache_hits + other->async_items, 0);
	EXPECT_EQ(t, file.stats.misses, 1);
	EXPECT_EQ(t, file.stats.hits, 1);
	pcache_forget(&file, 0);
	acct_free_token(reader);
	acct_free_token(idle);
	acct_detach_kernel_thread();
}

/* Eight pages read in order through read-ahead: a window of four at page 0,
 * the next four at page 4 (the file ends there), so two misses, six hits and
 * six pages read ahead, all charged to the reader. */
static void read_ahead_is_charged(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int reader = acct_get_token();
	struct pcache_mapping file;
	pcache_mapping_init(&file, &memory_pages, NULL);
	struct pcache_ahead ahead = {0};
	EXPECT_EQ(t, acct_control(reader, ACCT_START), 0);
	for (uint64_t index = 0; index < 8; index++) {
		struct pcache_page *cached;
		if (EXPECT_EQ(t, pcache_get_ahead(&file, index, &ahead, index + 1, 8, &cached),
			      0)) {
			EXPECT_EQ(t, cached->data[0], (uint8_t)index);
			pcache_put(cached);
		}
	}
	EXPECT_EQ(t, acct_control(reader, ACCT_STOP), 0);
	struct acct_result *r = &page->results[reader - 1];
	EXPECT_EQ(t, r->page_cache_misses, 2);
	EXPECT_EQ(t, r->page_cache_hits, 6);
	EXPECT_EQ(t, r->page_cache_read_ahead, 6);
	EXPECT_EQ(t, r->page_cache_read_bytes, 8 * PAGE_SIZE);
	EXPECT_EQ(t, file.stats.read_ahead, 6);
	EXPECT_EQ(t, file.stats.windows, 2);
	pcache_forget(&file, 0);
	acct_free_token(reader);
	acct_detach_kernel_thread();
}

static struct acct_owner *running_state(void)
{
	preempt_disable();
	struct acct_owner *owner = this_cpu()->acct;
	preempt_enable();
	return owner;
}

/* The advice finds the running thread's state in the CPU's structure: is it
 * the thread's own when it becomes an owner, after it was switched out and
 * back (the idle thread, with none, ran meanwhile), and gone once it is no
 * owner any more? */
static void running_state_follows_the_thread(struct ktest *t)
{
	EXPECT_TRUE(t, running_state() == NULL);
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	struct acct_owner *owner = thread_acct_state(thread_current());
	EXPECT_TRUE(t, owner != NULL);
	EXPECT_TRUE(t, running_state() == owner);
	sched_sleep_ns(NAP_NS);
	EXPECT_TRUE(t, running_state() == owner);
	acct_detach_kernel_thread();
	EXPECT_TRUE(t, running_state() == NULL);
	sched_sleep_ns(NAP_NS);
	EXPECT_TRUE(t, running_state() == NULL);
}

/* acctnest.outer's four _NOSLEEP calls (outer, inner, helper, inner) with
 * interrupts off: the accounting advice's events this CPU counted meanwhile. */
static uint64_t events_of_outer(void)
{
	uint64_t flags = irq_save();
	uint64_t before = acct_native_events[this_cpu_id()];
	acctnest_outer();
	uint64_t seen = acct_native_events[this_cpu_id()] - before;
	irq_restore(flags);
	return seen;
}

static int outsider_calls(void *events)
{
	*(uint64_t *)events = events_of_outer();
	return 0;
}

/* Accounting on for one thread costs the others only a check at the join
 * points' sites (joinpoint.h, "Advice for some threads"): while this thread
 * is an owner with a started token, its own calls reach the accounting, every
 * one, and another thread's calls of the same join points reach none. */
static void other_threads_calls_skip_the_accounting(struct ktest *t)
{
	struct acct_page *page = acct_attach_kernel_thread();
	ASSERT_TRUE(t, page != NULL);
	int token = acct_get_token();
	EXPECT_EQ(t, acct_control(token, ACCT_START), 0);
	EXPECT_EQ(t, events_of_outer(), 4);
	uint64_t outsider = UINT64_MAX;
	struct thread *other =
	    thread_create(outsider_calls, &outsider, "outsider", SCHED_PRIORITY_NORMAL);
	if (EXPECT_TRUE(t, other != NULL))
		thread_join(other, NULL);
	EXPECT_EQ(t, outsider, 0);
	EXPECT_EQ(t, events_of_outer(), 4);
	EXPECT_EQ(t, acct_control(token, ACCT_STOP), 0);
	EXPECT_EQ(t, acct_free_token(token), 0);
	acct_detach_kernel_thread();
}

/* Are the calls that start, stop and switch tokens told apart from other
 * system calls once, by name, so that they are never opened? */
static void control_calls_are_classed_apart(struct ktest *t)
{
	ASSERT_EQ(t, acct_classes_prepare(), 0);
	const struct joinpoint *control = jp_find("sys.ms_acct");
	const struct joinpoint *switching = jp_find("sys.ms_acct_switch_token");
	const struct joinpoint *getpid = jp_find("sys.getpid");
	const struct joinpoint *get_token = jp_find("sys.ms_acct_get_token");
	ASSERT_TRUE(t, control && switching && getpid && get_token);
	EXPECT_EQ(t, acct_class_of(control).kind, ACCT_KIND_CONTROL);
	EXPECT_EQ(t, acct_class_of(switching).kind, ACCT_KIND_CONTROL);
	EXPECT_EQ(t, acct_class_of(getpid).kind, ACCT_KIND_SYSCALL);
	EXPECT_EQ(t, acct_class_of(get_token).kind, ACCT_KIND_SYSCALL);
	EXPECT_EQ(t, acct_class_of(control).module, acct_class_of(getpid).module);
}

KTEST_SUITE(acct, KTEST_CASE(kernel_thread_gets_no_page), KTEST_CASE(calls_without_init_are_errors),
	    KTEST_CASE(nothing_is_woven_while_idle), KTEST_CASE(stale_ref_charges_nothing),
	    KTEST_CASE(ref_of_an_earlier_owner_charges_nothing),
	    KTEST_CASE(exclusive_leaves_out_other_subsystems),
	    KTEST_CASE(results_page_subsystem_count_is_not_trusted),
	    KTEST_CASE(a_call_open_across_a_start_is_charged_to_neither),
	    KTEST_CASE(a_reset_inside_a_call_keeps_only_what_follows),
	    KTEST_CASE(a_reset_of_the_current_token_restarts_its_time),
	    KTEST_CASE(interrupts_and_allocations_are_charged),
	    KTEST_CASE(unattributed_takes_the_gaps), KTEST_CASE(aspect_links_direct_only),
	    KTEST_CASE(aspect_linked_by_hand_is_used),
	    KTEST_CASE(aspect_unlinked_under_a_started_token_is_an_error_then_linked_again),
	    KTEST_CASE(page_cache_and_deferred_work_are_charged), KTEST_CASE(read_ahead_is_charged),
	    KTEST_CASE(whole_call_paths_charge_as_before_and_after_do),
	    KTEST_CASE(a_call_that_sleeps_is_charged_its_time_off_the_cpu),
	    KTEST_CASE(running_state_follows_the_thread),
	    KTEST_CASE(control_calls_are_classed_apart), KTEST_CASE(nothing_is_woven_while_idle),
	    KTEST_CASE(other_threads_calls_skip_the_accounting));
