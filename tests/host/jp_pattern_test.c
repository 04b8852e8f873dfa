// host-test-sources: kernel/joinpoint/pattern.c
/*
 * Join-point name patterns: exact names, '*' anywhere (dots included), '?',
 * and the inputs that make naive matchers slow or wrong.
 */
#include <string.h>

#include "hosttest.h"
#include "joinpoint/joinpoint.h"

static void exact_names_match_only_themselves(void)
{
	CHECK(jp_pattern_match("vfs.read", "vfs.read"));
	CHECK(!jp_pattern_match("vfs.read", "vfs.reads"));
	CHECK(!jp_pattern_match("vfs.read", "vfs.rea"));
	CHECK(!jp_pattern_match("", "vfs.read"));
	CHECK(jp_pattern_match("", ""));
}

static void star_matches_any_run_including_dots(void)
{
	CHECK(jp_pattern_match("sched.*", "sched.switch"));
	CHECK(jp_pattern_match("sched.*", "sched."));
	CHECK(!jp_pattern_match("sched.*", "sched"));
	CHECK(!jp_pattern_match("sched.*", "xsched.switch"));
	CHECK(jp_pattern_match("*.alloc", "mm.alloc"));
	CHECK(jp_pattern_match("*.alloc", "net.buf.alloc"));
	CHECK(!jp_pattern_match("*.alloc", "mm.alloc_page"));
	CHECK(jp_pattern_match("*", "anything.at.all"));
	CHECK(jp_pattern_match("*", ""));
	CHECK(jp_pattern_match("mm.*alloc*", "mm.kmalloc"));
	CHECK(jp_pattern_match("**", "a.b"));
}

static void question_mark_matches_one_character(void)
{
	CHECK(jp_pattern_match("irq.?", "irq.3"));
	CHECK(!jp_pattern_match("irq.?", "irq.32"));
	CHECK(jp_pattern_match("irq.??", "irq.32"));
	CHECK(!jp_pattern_match("irq.?", "irq."));
}

static void backtracking_finds_the_last_possible_split(void)
{
	CHECK(jp_pattern_match("*a*b", "aaaab"));
	CHECK(!jp_pattern_match("*a*b", "aaaa"));
	CHECK(jp_pattern_match("a*a*a", "aaa"));
	CHECK(jp_pattern_match("*.*.*", "a.b.c"));
	CHECK(!jp_pattern_match("*.*.*", "a.b"));
}

/* Many stars against a long non-matching name: must finish quickly (the
 * matcher keeps one backtrack point, not one per star). */
static void many_stars_stay_linear(void)
{
	char name[4001];
	memset(name, 'a', sizeof name - 1);
	name[sizeof name - 1] = '\0';
	CHECK(!jp_pattern_match("*a*a*a*a*a*a*a*a*a*a*b", name));
	CHECK(jp_pattern_match("*a*a*a*a*a*a*a*a*a*a*", name));
}

static void null_never_matches(void)
{
	CHECK(!jp_pattern_match(NULL, "a"));
	CHECK(!jp_pattern_match("a", NULL));
}

HOSTTEST_MAIN(HOSTTEST_CASE(exact_names_match_only_themselves),
	      HOSTTEST_CASE(star_matches_any_run_including_dots),
	      HOSTTEST_CASE(question_mark_matches_one_character),
	      HOSTTEST_CASE(backtracking_finds_the_last_possible_split),
	      HOSTTEST_CASE(many_stars_stay_linear), HOSTTEST_CASE(null_never_matches))
