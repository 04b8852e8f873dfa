/*
 * Private to kernel/joinpoint: advice lists, their memory, the section
 * bounds, text patching and grace periods.
 */
#ifndef KERNEL_JOINPOINT_INTERNAL_H
#define KERNEL_JOINPOINT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"

#ifndef JP_LIST_POOL
#define JP_LIST_POOL 256 /* advice lists in existence at once (published + retiring) */
#endif

/* One attached advice, copied out of its struct jp_advice. */
struct jp_entry {
	jp_advice_fn before;
	jp_advice_fn after;
	void *cookie;
	const struct jp_advice *advice;
	uint64_t since; /* sequence number of the jp_attach that added it */
	int priority;
	unsigned flags; /* the advice's JP_ADVICE_* */
	unsigned owner; /* attachment slot */
};

/* One advice call as the dispatcher makes it: nothing else on the hot path. */
struct jp_call {
	jp_advice_fn fn;
	void *cookie;
	uint64_t since; /* the entry's since (after calls check it) */
};

/* An advice list: immutable once published; an update publishes a new one.
 * entries[] is in priority order and is what writers read; before[] and
 * after[] are compiled from it for the dispatcher: the non-NULL before
 * functions in priority order and the non-NULL after functions in reverse.
 * fast is for the fast path (trampoline.c).  A join point that
 * had advice and lost it publishes jp_list_empty, never NULL, so the fast
 * path needs no NULL test. */
struct jp_list {
	struct jp_fast_list fast; /* first: the fast path's code, the call, the index */
	uint64_t generation;      /* sequence number of the update that built it */
	unsigned before_count;
	unsigned after_count;
	unsigned flags; /* JP_ADVICE_* of every entry, or-ed */
	unsigned count;
	/* The around of the one advice on a join point that may sleep
	 * (joinpoint.h), or NULL. */
	uint64_t (*around)(const struct joinpoint *jp, uint64_t *args,
			   const struct jp_fast_list *list);
	/* The one native advice's nested_call (joinpoint.h), or NULL. */
	uint64_t (*nested_call)(const struct jp_fast_list *list, uint64_t *args);
	struct jp_call before[JP_MAX_ADVICE];
	struct jp_call after[JP_MAX_ADVICE];
	struct jp_list *retired_next; /* writer's chain once unpublished */
	struct jp_entry entries[JP_MAX_ADVICE];
};

/* ---- Section bounds (section.c; host tests supply their own) ------------- */

void jp_section_bounds(const struct joinpoint **first, const struct joinpoint **last);
void jp_site_bounds(const struct jp_site **first, const struct jp_site **last);

/* ---- Advice lists (advice.c: no locking, no memory management) ----------- */

/* Entries in list (0 for NULL). */
static inline unsigned jp_list_length(const struct jp_list *list)
{
	return list ? list->count : 0;
}
/* True when advice is in list. */
bool jp_list_has_advice(const struct jp_list *list, const struct jp_advice *advice);
/* Entries of list that belong to attachment slot owner. */
unsigned jp_list_count_owner(const struct jp_list *list, unsigned owner);
/* Fills out, for join point jp, with old's entries plus entry, placed after
 * every entry of lower or equal priority.  old must have fewer than
 * JP_MAX_ADVICE entries. */
void jp_list_build_with(struct jp_list *out, const struct jp_list *old,
			const struct jp_entry *entry, uint64_t generation,
			const struct joinpoint *jp);
/* Fills out, for join point jp, with old's entries except owner's. */
void jp_list_build_without(struct jp_list *out, const struct jp_list *old, unsigned owner,
			   uint64_t generation, const struct joinpoint *jp);
/* The list with no advice that jp publishes once its last advice is gone
 * (shared, never freed: jp_list_length gives 0). */
struct jp_list *jp_list_empty(const struct joinpoint *jp);

/* ---- List memory (pool.c; callers hold the writer lock) ------------------ */

/* Returns a free list, or NULL when all JP_LIST_POOL are in use. */
struct jp_list *jp_list_alloc(void);
void jp_list_free(struct jp_list *list);
/* Lists jp_list_alloc can still return. */
unsigned jp_list_available(void);

/* ---- Patching (patch.c) -------------------------------------------------- */

enum jp_site_state {
	JP_SITE_NOP,     /* 0f 1f 44 00 00 */
	JP_SITE_JUMP,    /* e9 <rel32 to site->target> */
	JP_SITE_SCOPED,  /* e9 <rel32 to site->scoped_target> */
	JP_SITE_CORRUPT, /* anything else */
};

/* Turns every site of jp into form (not JP_SITE_CORRUPT): the NOP, a jump to
 * its target, or one to its scoped target.  Caller holds the writer lock. */
void jp_patch_sites(const struct joinpoint *jp, enum jp_site_state form);
/* What a site holds now. */
enum jp_site_state jp_site_read(const struct jp_site *site);

/* Number of patch sites in the kernel. */
unsigned long jp_site_count(void);

/* ---- Listings (builtin.c) ------------------------------------------------ */

/* jp_print_list and jp_print_stats for the join points matching pattern. */
void jp_print_matching(const char *pattern);
void jp_print_matching_stats(const char *pattern);

/* ---- Shell command (commands.c) ------------------------------------------ */

/* The kernel shell's `jp` command (argv[0] is "jp"): 0, a negative error from
 * jp_attach or jp_detach, -ENOENT for a detach naming nothing attached here,
 * or KSHELL_USAGE. */
int jp_shell_command(int argc, char **argv);

/* ---- Benchmark (bench.c) ------------------------------------------------- */

/* The functions it measures (bench_target.c). */
void jp_bench_plain(void);
void jp_bench_nop(void);
void jp_bench_nop_sleeps(void);
/* Runs the jp_bench measurements and stops the machine, if jp_bench was given. */
#ifdef KERNEL_TESTS
void jp_bench_run_if_requested(void);
#else
static inline void jp_bench_run_if_requested(void)
{
} /* benchmarks: test kernel only */
#endif

/* ---- The fast path (trampoline.c) ---------------------------------------- */

/* The code the fast path jumps to for list on jp (list's counts and flags,
 * jp's argument count and return type).  Host tests have a stub. */
const void *jp_shape_select(const struct jp_list *list, const struct joinpoint *jp);
/* The fast path's general case, inside its section: every before call,
 * the call itself, every after call, timestamps if asked for. */
void jp_run_list(struct jp_context *context, const struct jp_list *list);
/* Called by section ends that saw need_resched set (dispatch.c). */
void jp_resched_after_section(void);

/* ---- Grace periods (grace.c) --------------------------------------------- */

/* Advice runs in reader sections, marked per CPU in struct cpu's
 * jp_sections:
 *   bit 0 (JP_SECTION_INSIDE)   the CPU is inside a section;
 *   bit 1 (JP_SECTION_CALLING)  ... of a _NOSLEEP join point whose real
 *                               function is running (advice is not);
 *   bits 2-31                   sections ended, modulo 2^30.
 * So "inside advice" (the recursion guard) is bits 1-0 == 01.  Only this
 * CPU writes the word, with one instruction per change (an interrupt sees
 * it whole and leaves it as it found it); entering is a locked bit set, a
 * full barrier.  A section entered while one is already held (a join point
 * inside the call of a _NOSLEEP one) leaves bit 0 and the count alone: the
 * outer section covers it.  True when the caller may wait for a grace
 * period: not inside any section and not in an interrupt handler. */
#define JP_SECTION_INSIDE 1u
#define JP_SECTION_ENDED  4u /* JP_SECTION_CALLING (2) is in joinpoint.h */
bool jp_may_wait(void);

#endif
