/*
 * Join points: every call across a module boundary can run monitoring code
 * ("advice") before and after it.  A module declares each API function once
 * with JOINPOINT_DEFINE, which yields the public function, a descriptor in the
 * .joinpoints section (the registry: nothing registers at run time) and a
 * 5-byte NOP at the function's entry that jp_attach patches into a jump to the
 * generic dispatcher.  With no advice attached the join point costs that NOP.
 *
 *     JOINPOINT_DEFINE(mm, alloc_page, void *, unsigned, flags) { ...body... }
 *     int handle = jp_attach("mm.*", &jp_advice_count);   // or a negative error
 *     jp_print_stats(); jp_detach(handle);
 *
 * Rules for a join point: at most JP_MAX_ARGS arguments, each a scalar or a
 * pointer (a function pointer needs a typedef), and the function must return
 * to its caller (a function that never returns or switches stacks gets its
 * join point on a notification function beside it).  Advice runs with
 * preemption off and must not sleep (jp_defer hands sleeping work to the
 * calling thread after the advice); a join point reached from inside advice
 * runs no advice (per-CPU recursion guard), so advice may call module APIs.
 *
 * A function that never sleeps or blocks can be declared with the _NOSLEEP
 * forms instead; its enabled join point then takes a faster path (one reader
 * section around before, the call and after, with preemption off throughout).
 */
#ifndef KERNEL_JOINPOINT_JOINPOINT_H
#define KERNEL_JOINPOINT_JOINPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JP_MAX_ARGS        6
#define JP_MAX_ADVICE      8  /* advice on one join point */
#define JP_MAX_ATTACHMENTS 64 /* live jp_attach handles */

struct thread;
struct jp_list;

/* Mutable state of one join point, owned by kernel/joinpoint (declared here
 * only so that JOINPOINT_DEFINE can allocate it).  Read it through
 * jp_get_stats. */
struct jp_state {
	struct jp_list *list; /* published advice, NULL when none */
	uint64_t calls;       /* counted by jp_advice_count */
	uint64_t timed_calls; /* the rest by jp_advice_time */
	uint64_t total_ns;
	uint64_t min_ns;
	uint64_t max_ns;
	uint64_t skipped;                  /* calls reached inside advice, which ran none */
	const struct joinpoint *joinpoint; /* back to the descriptor (the fast path needs it) */
	/* The struct cpu word every advice on the list names (thread_scope),
	 * 0 when one does not: the scoped sites' check reads it. */
	uint32_t scope;
};

/* One join point, as JOINPOINT_DEFINE lays it out in .joinpoints. */
struct joinpoint {
	const char *name;        /* "module.function" */
	const char *module;      /* "module" */
	const char *return_type; /* C spelling, "void" for none */
	unsigned argc;
	bool may_sleep; /* false for the _NOSLEEP forms */
	const char *arg_names[JP_MAX_ARGS];
	const char *arg_types[JP_MAX_ARGS];
	/* Calls the real function with args[0..argc) converted back to their
	 * types; returns its result widened to 64 bits (0 for void). */
	uint64_t (*call)(const uint64_t *args);
	struct jp_state *state;
};

/* What advice sees.  Timestamps are raw TSC values (clock_tsc_to_ns converts
 * a difference), taken only when an advice on the join point asked for them
 * with JP_ADVICE_TIMESTAMPS (0 otherwise); exit_tsc and ret are set for
 * `after` only.  Advice may
 * change args (in `before`) and ret (in `after`): the call uses and returns
 * what they hold then. */
struct jp_context {
	/* In this order: the fast path (trampoline.c) builds it with pushes. */
	const struct joinpoint *joinpoint;
	uint64_t ret;
	uint64_t entry_tsc;
	uint64_t exit_tsc;
	unsigned cpu;
	struct thread *thread; /* NULL before the scheduler runs */
	uint64_t activity;     /* activity token slot, 0 = none; before may set it for after */
	uint64_t *args;
};

typedef void (*jp_advice_fn)(struct jp_context *context, void *cookie);

struct jp_fast_list;

/* A piece of advice.  The struct must outlive its attachments: the join point
 * copies the function pointers but identifies the advice by this address. */
struct jp_advice {
	const char *name;
	jp_advice_fn before; /* either may be NULL, not both */
	jp_advice_fn after;
	void *cookie;   /* passed to before and after */
	int priority;   /* lower runs first before the call, last after it */
	unsigned flags; /* JP_ADVICE_* */
	/* Optional: code that runs a whole call of a _NOSLEEP join point on
	 * which this advice is alone, in place of before and after (which still
	 * serve every other case: the dispatcher, nested calls, shared lists).
	 * [0] for join points without arguments, [1] for those with.  See "Fast
	 * paths of their own" below. */
	const void *fast_path[2];
	/* Optional, with fast_path or around: a word of the advice's own for
	 * each join point, computed when the list is built and kept in its
	 * jp_fast_list (the recorder's: its record's header), so that the
	 * code need not work it out at every call. */
	uint32_t (*fast_word)(const struct joinpoint *jp);
	/* Optional, for kernel code only (the accounting's native advice, the
	 * built-in counting and timing, the msg binding's before advice, which
	 * holds its aspect's data itself): the whole call of a join point that
	 * may sleep, on which this advice is alone, in place of before and
	 * after.  See "Fast paths of their own" below. */
	uint64_t (*around)(const struct joinpoint *jp, uint64_t *args,
			   const struct jp_fast_list *list);
	/* Optional, for JP_ADVICE_NATIVE advice only: the whole call of a join
	 * point reached inside the call of a _NOSLEEP one (nested), on which
	 * this advice is alone, in place of before and after.  See "Fast paths
	 * of their own" below. */
	uint64_t (*nested_call)(const struct jp_fast_list *list, uint64_t *args);
	/* Optional: which threads' calls of jp this advice is for.  0: every
	 * thread's; else the offset in struct cpu of a word that is nonzero
	 * while such a thread runs (the running thread's own state, which the
	 * scheduler keeps there).  See "Advice for some threads" below. */
	uint32_t (*thread_scope)(const struct joinpoint *jp);
};

/* jp_advice.flags: the context's entry_tsc and exit_tsc are wanted. */
#define JP_ADVICE_TIMESTAMPS 0x1u
/* jp_advice.flags: kernel code that lives as long as the kernel, never
 * sleeps, defers or reads timestamps, and has both a before and an after (the
 * accounting's native advice).  A join point that may sleep and has only such
 * an advice is dispatched without the deferral slot. */
#define JP_ADVICE_NATIVE 0x2u
/* jp_advice.flags: the advice may call jp_defer (the msg binding's), so the
 * dispatcher opens this CPU's deferral slot around its calls; a list without
 * such advice skips the slot. */
#define JP_ADVICE_DEFERS 0x4u

/* Work an advice cannot do in its section because it sleeps is deferred to
 * just after it: jp_defer, in line (joinpoint/defer.h). */

/* The built-in advice: count calls, or count and time them (total, min, max),
 * into the join point's statistics. */
extern const struct jp_advice jp_advice_count;
extern const struct jp_advice jp_advice_time;

struct jp_stats {
	uint64_t calls;
	uint64_t timed_calls;
	uint64_t total_ns;
	uint64_t min_ns; /* 0 when timed_calls is 0 */
	uint64_t max_ns;
	uint64_t skipped; /* calls that ran no advice: reached inside advice */
	unsigned advice;  /* advice attached right now */
};

/* ---- The registry -------------------------------------------------------- */

/* Returns the join point named name ("vfs.read"), or NULL. */
const struct joinpoint *jp_find(const char *name);
/* Calls fn for every join point, in section order, until it returns non-zero;
 * returns that value, or 0. */
int jp_for_each(int (*fn)(const struct joinpoint *jp, void *arg), void *arg);
/* Number of join points in the kernel. */
unsigned jp_count(void);
/* A join point's place in the registry (0 .. jp_count() - 1), and back (NULL
 * past the end): stable for the life of the kernel image.  The registry is
 * one section of the image, so the place is a subtraction from its start,
 * in line: every shm and msg event names its join point so. */
extern const struct joinpoint __joinpoints_start[];
static inline unsigned jp_index(const struct joinpoint *jp)
{
	return (unsigned)(jp - __joinpoints_start);
}
const struct joinpoint *jp_at(unsigned index);
/* True when name matches pattern: '*' matches any run of characters (dots
 * too), '?' any one character, everything else itself.  "sched.*", "*.alloc". */
bool jp_pattern_match(const char *pattern, const char *name);

/* ---- Weaving ------------------------------------------------------------- */

/* Attaches advice to every join point matching pattern, in priority order
 * (ties: after the advice already there), enabling each join point's sites.
 * Returns a handle (> 0) for jp_detach, or, with nothing changed:
 *   -EINVAL   advice or pattern is NULL, or advice has neither before nor after
 *   -ENOENT   pattern matches no join point
 *   -EEXIST   this advice is already on one of the matching join points
 *   -ENOSPC   a matching join point has JP_MAX_ADVICE advice, or all
 *             JP_MAX_ATTACHMENTS handles are in use
 *   -ENOMEM   no memory for the new advice lists
 *   -EDEADLK  called from advice or an interrupt handler (it waits for a
 *             grace period, which cannot end there)
 * Waits for a grace period before returning. */
int jp_attach(const char *pattern, const struct jp_advice *advice);
/* jp_attach to the join points matching pattern for which where(jp) is
 * true (where NULL: all of them); -ENOENT when none is left. */
int jp_attach_where(const char *pattern, bool (*where)(const struct joinpoint *jp),
		    const struct jp_advice *advice);
/* Removes what jp_attach(handle) attached, disabling join points left with no
 * advice.  When it returns, no CPU runs that advice for this attachment any
 * more (a grace period has passed); a call in progress that ran its before
 * may miss its after (not on a _NOSLEEP join point, whose calls in progress
 * are waited for).  Never short of lists: when the pool is, it detaches in
 * rounds, a grace period between them.  Returns 0, or with nothing changed:
 * -EINVAL (handle is not attached: never was, or detached already),
 * -EDEADLK. */
int jp_detach(int handle);
/* Waits until every CPU has left the advice it was running when this was
 * called (a grace period).  Must not be called from advice or interrupts. */
void jp_synchronize(void);

/* ---- Statistics and listings --------------------------------------------- */

/* Fills *stats for jp. */
void jp_get_stats(const struct joinpoint *jp, struct jp_stats *stats);
/* Zeroes the statistics (built-in advice, skipped calls) of every join point. */
void jp_reset_stats(void);
/* Prints every join point with its signature and attached advice count. */
void jp_print_list(void);
/* Prints calls and time of every join point that was counted or timed. */
void jp_print_stats(void);
/* At boot, after the clock: applies jp_attach= and runs jp_bench if given. */
void jp_boot_init(void);
/* Before the kernel stops: prints the statistics if jp_attach= was given. */
void jp_boot_report(void);

/* ---- Fast paths of their own --------------------------------------------- */

/*
 * An advice whose work is small and fixed (kernel/trace's recorder writes one
 * record) can give the trampoline its own code instead of a before and an
 * after call: jp_advice.fast_path.  That code is jumped to inside the reader
 * section, with preemption off, before any context is built:
 *   %rbx  the join point's advice list, which begins with struct jp_fast_list;
 *   %rsp  16-byte aligned; at 0(%rsp) the six argument slots, the first argc
 *         of them holding the arguments (fast_path[1]); or, for a join point
 *         without arguments (fast_path[0]), the saved %rbx, and no slots.
 * It must call the join point through list->call with %rdi pointing at the
 * slots, adding JP_SECTION_CALLING to this CPU's jp_sections around the call
 * (so that join points inside it run their advice), keep %rbx, and end with
 * %rsp where it found it, the call's result in %rax, by jumping to
 * jp_fast_path_leave1 (with arguments) or jp_fast_path_leave0.  It must not
 * sleep, and may take interrupts off for its own work.
 */
/*
 * Advice that is kernel code and data living as long as the kernel (the
 * accounting's native advice, the built-in counting and timing) may also run
 * whole calls of join points that may sleep: jp_advice.around.  The
 * dispatcher calls around(jp, args, list) inside the reader section of an
 * outermost call (preemption off; not for a call nested in a _NOSLEEP one,
 * nor while another advice shares the list), in place of the before and after
 * calls and the call itself; list is the head of the join point's list, which
 * the section keeps valid (its word: jp_advice.fast_word).  It must leave that
 * section
 * with jp_section_leave (joinpoint/section.h) before it calls jp->call(args),
 * where the thread may sleep, and return the call's result; after the call
 * it may enter a section of its own again (jp_section_enter, never held
 * across a sleep).  What runs after the call may run after a detach has
 * returned: that is why only such advice may have one.  The linker gives
 * one to a before advice of the msg binding (bind_msg.c), whose code is the
 * kernel's and whose data, an aspect's that goes with an unweave, it keeps
 * past the section as its deferred call does (a waiter slot the unweave
 * waits for) and leaves before the call, after which it touches nothing of
 * the advice.  list->cookie is the advice's cookie.
 */
/*
 * And a native advice may run the whole call of a join point reached inside
 * the call of a _NOSLEEP one (whose section is still held), where neither the
 * trampoline's fast path nor an around is taken: jp_advice.nested_call.  The
 * dispatcher calls nested_call(list, args) in the nested section it enters
 * (preemption off, JP_SECTION_CALLING clear: the CPU reads as in advice), with
 * the join point's list and its argument slots; like fast path code it must
 * call list->call(args) with JP_SECTION_CALLING added around the call
 * (jp_section_calling), must not sleep, and returns the call's result.
 */
struct jp_fast_list {
	const void *shape;                      /* the code the trampoline jumps to */
	uint64_t (*call)(const uint64_t *args); /* the join point's call */
	uint32_t index;                         /* the join point's place in the registry */
	uint32_t word; /* the fast path's word for the join point (jp_advice.fast_word), or 0 */
	void *cookie;  /* the cookie of the advice alone on the list (an around's), or NULL */
};
#define JP_SECTION_CALLING 2u /* in struct cpu's jp_sections: the real function runs */
extern const char jp_fast_path_leave0[], jp_fast_path_leave1[];

/* ---- Advice for some threads ---------------------------------------------- */

/*
 * An advice that is only for some threads' calls (the per-activity
 * accounting's: the threads with an accounting owner) says so with
 * jp_advice.thread_scope: for each join point, the offset in struct cpu of a
 * word that is nonzero while such a thread runs.  While every advice on a
 * join point names the same word, its state's scope holds that offset and its
 * sites jump to a check of the word (JP__SITE's, five instructions)
 * instead of straight to the dispatching path: another thread's call goes on
 * into the function as if nothing were woven, without the trampoline's or the
 * dispatcher's section.  A list with any other advice is not scoped, and its
 * sites jump as before, with no check.  The advice still sees every call of
 * a thread it is for; it may see others' too (a list being changed, a word
 * that is nonzero for threads it then finds it is not for), so it tests the
 * thread itself as it did before.
 */

/* ---- The dispatcher (called by the code JOINPOINT_DEFINE generates) ------ */

/* Runs the advice around jp->call(args); returns the call's result. */
uint64_t jp_dispatch(const struct joinpoint *jp, uint64_t *args);

/* The fast path of a _NOSLEEP join point (trampoline.c): the arguments in
 * their registers, the join point's state last; returns the call's result. */
uint64_t jp_enter0(struct jp_state *state);
uint64_t jp_enter1(uint64_t a0, struct jp_state *state);
uint64_t jp_enter2(uint64_t a0, uint64_t a1, struct jp_state *state);
uint64_t jp_enter3(uint64_t a0, uint64_t a1, uint64_t a2, struct jp_state *state);
uint64_t jp_enter4(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, struct jp_state *state);
uint64_t jp_enter5(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
		   struct jp_state *state);
uint64_t jp_enter6(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
		   struct jp_state *state);

/* One patchable site, emitted into .jump_table beside the NOP. */
struct jp_site {
	uint64_t code;   /* address of the 5-byte NOP */
	uint64_t target; /* where the patched jump goes: the dispatching path */
	const struct joinpoint *joinpoint;
	uint64_t scoped_target; /* the same behind the check of the state's scope */
};

/* ---- Declaring a join point ---------------------------------------------- */

/*
 * JOINPOINT_DEFINE(module, function, return type, type1, name1, ...) { body }
 * defines `return type module_function(type1 name1, ...)` as a join point
 * named "module.function"; JOINPOINT_DEFINE_VOID(module, function, type1,
 * name1, ...) the same for a function returning nothing.  The body follows the
 * macro as a function body does.  The _AS forms take the C function's name
 * separately, for APIs whose names predate the convention:
 * JOINPOINT_DEFINE_AS(mm, kmalloc, kmalloc, void *, size_t, size) { ... }.
 *
 * The _NOSLEEP forms (JOINPOINT_DEFINE_NOSLEEP, JOINPOINT_DEFINE_VOID_NOSLEEP
 * and their _AS forms) take the same arguments, for a function that never
 * sleeps, blocks or switches threads: its advice runs on the fast path, which
 * holds one reader section and keeps preemption off from before to after.
 * Detaching waits for calls in progress there, and no call misses an after.
 */
#define JOINPOINT_DEFINE(module, function, ret, ...)                                      \
	JOINPOINT_DEFINE_AS(module, function, JP__CAT(JP__CAT(module, _), function), ret, \
			    __VA_ARGS__)
#define JOINPOINT_DEFINE_VOID(module, function, ...)                                      \
	JOINPOINT_DEFINE_VOID_AS(module, function, JP__CAT(JP__CAT(module, _), function), \
				 __VA_ARGS__)
#define JOINPOINT_DEFINE_AS(module, function, c_name, ret, ...)                               \
	JP__DEFINE(JP__PAIRS(__VA_ARGS__), #module "." #function, #module, c_name, ret, #ret, \
		   JP__CHECK_RETURN, JP__RETURN_VALUE, JP__CALL_VALUE, JP__SLEEPS, __VA_ARGS__)
#define JOINPOINT_DEFINE_VOID_AS(module, function, c_name, ...)                                  \
	JP__DEFINE(JP__PAIRS(__VA_ARGS__), #module "." #function, #module, c_name, void, "void", \
		   JP__CHECK_NONE, JP__RETURN_VOID, JP__CALL_VOID, JP__SLEEPS, __VA_ARGS__)

#define JOINPOINT_DEFINE_NOSLEEP(module, function, ret, ...)                                      \
	JOINPOINT_DEFINE_NOSLEEP_AS(module, function, JP__CAT(JP__CAT(module, _), function), ret, \
				    __VA_ARGS__)
#define JOINPOINT_DEFINE_VOID_NOSLEEP(module, function, ...)                                      \
	JOINPOINT_DEFINE_VOID_NOSLEEP_AS(module, function, JP__CAT(JP__CAT(module, _), function), \
					 __VA_ARGS__)
#define JOINPOINT_DEFINE_NOSLEEP_AS(module, function, c_name, ret, ...)                       \
	JP__DEFINE(JP__PAIRS(__VA_ARGS__), #module "." #function, #module, c_name, ret, #ret, \
		   JP__CHECK_RETURN, JP__RETURN_VALUE, JP__CALL_VALUE, JP__NOSLEEP, __VA_ARGS__)
#define JOINPOINT_DEFINE_VOID_NOSLEEP_AS(module, function, c_name, ...)                          \
	JP__DEFINE(JP__PAIRS(__VA_ARGS__), #module "." #function, #module, c_name, void, "void", \
		   JP__CHECK_NONE, JP__RETURN_VOID, JP__CALL_VOID, JP__NOSLEEP, __VA_ARGS__)

/* Host tests link position-independent executables, where the table's
 * absolute addresses need a writable section to avoid text relocations; they
 * have no trampoline, so _NOSLEEP join points take the dispatcher there. */
#ifdef HOST_TEST
#define JP__TABLE_FLAGS "\"aw\""
#define JP__NOSLEEP_ATTRIBUTES
#define JP__NOSLEEP_ADVISED JP__SLEEPS_ADVISED
#else
#define JP__TABLE_FLAGS        "\"a\""
/* The advised path ends in a jump to jp_enterN, not a call (the kernel is
 * built without sibling calls), so the trampoline returns straight to the
 * caller: GCC's per-function optimize attribute turns them back on here. */
#define JP__NOSLEEP_ATTRIBUTES __attribute__((optimize("optimize-sibling-calls")))
#define JP__NOSLEEP_ADVISED(n, c_name, RETURN, ret, ...) \
	RETURN(ret, JP__CAT(jp_enter, n)(JP__CAT(JP__PACK_, n)(__VA_ARGS__) & jp_state_##c_name))
#endif
#define JP__SLEEPS_ATTRIBUTES
#define JP__SLEEPS_MAY_SLEEP  true
#define JP__NOSLEEP_MAY_SLEEP false
#define JP__SLEEPS_ADVISED(n, c_name, RETURN, ret, ...)              \
	uint64_t jp_args[] = {JP__CAT(JP__PACK_, n)(__VA_ARGS__) 0}; \
	RETURN(ret, jp_dispatch(&jp_desc_##c_name, jp_args))

/* The static branch: a 5-byte NOP (0f 1f 44 00 00) recorded in .jump_table;
 * patched into "jmp label" while the join point has advice, or into a jump to
 * the check beside it (2:, in .text.jp_scoped) while all of it is for some
 * threads: the state's scope names a word of struct cpu, and a thread for
 * which that word is 0 goes on after the NOP as if nothing were woven.  The
 * check is assembly that keeps every register (its scratch one pushed; the
 * kernel has no red zone), so the function around the site compiles as it
 * would without it. */
#define JP__SITE(desc, state, label)                                                \
	__asm__ goto("1: .byte 0x0f, 0x1f, 0x44, 0x00, 0x00\n\t"                    \
		     "jp_scoped_check %c1+%c2, %l[" #label "]\n\t"                  \
		     ".pushsection .jump_table, " JP__TABLE_FLAGS "\n\t"            \
		     ".balign 8\n\t"                                                \
		     ".quad 1b, %l[" #label "], %c0, 2b; .popsection"               \
		     :                                                              \
		     : "i"(desc), "i"(state), "i"(offsetof(struct jp_state, scope)) \
		     :                                                              \
		     : label)
/* The check a scoped site jumps to (see JP__SITE), as an assembler macro: GCC
 * sizes an asm by its statements when it decides what to inline around it,
 * and the check written out in the statement above made it inline other
 * bodies into the functions with sites (60 instructions more on a file
 * request with nothing woven).  A scope of 0 (the list stopped being scoped
 * while the site still jumps here) reads struct cpu's first word, its self
 * pointer, which is never 0: such a call goes on to the dispatching path.
 * pop leaves the flags. */
__asm__(".macro jp_scoped_check scope, advised\n"
	"\t.pushsection .text.jp_scoped, \"ax\"\n"
	"2:\tpush %rax\n"
	"\tmovl \\scope(%rip), %eax\n"
	"\tcmpq $0, %gs:(%rax)\n"
	"\tpop %rax\n"
	"\tje 1b + 5\n"
	"\tjmp \\advised\n"
	"\t.popsection\n"
	".endm");

/* The expansion: argument checks, the prototype, the thunk the dispatcher
 * calls with unpacked arguments, the state and descriptor, the public
 * function (NOP site, then the body inlined; the jump target packs the
 * arguments and dispatches, or for MODE JP__NOSLEEP jumps to the trampoline
 * with the arguments still in registers), and the body's own header, which
 * the macro's user completes with { ... }.  c_name is expanded before it is
 * pasted. */
#define JP__DEFINE(n, name_text, module_text, c_name, ret, ret_text, CHECK_RETURN, RETURN, CALL,  \
		   MODE, ...)                                                                     \
	JP__DEFINE_(n, name_text, module_text, c_name, ret, ret_text, CHECK_RETURN, RETURN, CALL, \
		    MODE, __VA_ARGS__)
// clang-format off
#define JP__DEFINE_(n, name_text, module_text, c_name, ret, ret_text, CHECK_RETURN, RETURN, CALL, MODE, ...) \
	JP__CAT(JP__CHECK_, n)(__VA_ARGS__)                                                     \
	CHECK_RETURN(ret)                                                                       \
	ret c_name(JP__CAT(JP__PARAMS_, n)(__VA_ARGS__));                                       \
	static inline ret jp_impl_##c_name(JP__CAT(JP__PARAMS_, n)(__VA_ARGS__));               \
	static uint64_t jp_call_##c_name(const uint64_t *jp_args)                               \
	{                                                                                       \
		(void)jp_args;                                                                  \
		CALL(jp_impl_##c_name(JP__CAT(JP__UNPACK_, n)(__VA_ARGS__)));                   \
	}                                                                                       \
	extern const struct joinpoint jp_desc_##c_name;                                         \
	static struct jp_state jp_state_##c_name = {.joinpoint = &jp_desc_##c_name};           \
	const struct joinpoint jp_desc_##c_name                                                 \
		__attribute__((section(".joinpoints"), used, aligned(8))) = {                   \
			.name = name_text,                                                      \
			.module = module_text,                                                  \
			.return_type = ret_text,                                                \
			.argc = n,                                                              \
			.may_sleep = MODE##_MAY_SLEEP,                                          \
			.arg_names = {JP__CAT(JP__NAMES_, n)(__VA_ARGS__)},                     \
			.arg_types = {JP__CAT(JP__TYPES_, n)(__VA_ARGS__)},                     \
			.call = jp_call_##c_name,                                               \
			.state = &jp_state_##c_name,                                            \
	};                                                                                      \
	MODE##_ATTRIBUTES ret c_name(JP__CAT(JP__PARAMS_, n)(__VA_ARGS__))                      \
	{                                                                                       \
		JP__SITE(&jp_desc_##c_name, &jp_state_##c_name, jp_advised);                    \
		return jp_impl_##c_name(JP__CAT(JP__NAMES_ONLY_, n)(__VA_ARGS__));              \
	jp_advised: __attribute__((cold));                                                      \
		MODE##_ADVISED(n, c_name, RETURN, ret, __VA_ARGS__);                            \
	}                                                                                       \
	static inline ret jp_impl_##c_name(JP__CAT(JP__PARAMS_, n)(__VA_ARGS__))
// clang-format on

#define JP__RETURN_VALUE(ret, value) return (ret)(value)
#define JP__RETURN_VOID(ret, value)  (void)(value)
#define JP__CALL_VALUE(call)         return (uint64_t)(call)
#define JP__CALL_VOID(call) \
	call;               \
	return 0

#define JP__CAT(a, b)  JP__CAT_(a, b)
#define JP__CAT_(a, b) a##b

/* Number of (type, name) pairs; an odd count names JP__PAIRS_ODD_. */
#define JP__PAIRS(...)                                                           JP__CAT(JP__PAIRS_, JP__NARGS(__VA_ARGS__))
#define JP__NARGS(...)                                                           JP__NARGS_(_, ##__VA_ARGS__, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define JP__NARGS_(_, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, n, ...) n
#define JP__PAIRS_0                                                              0
#define JP__PAIRS_2                                                              1
#define JP__PAIRS_4                                                              2
#define JP__PAIRS_6                                                              3
#define JP__PAIRS_8                                                              4
#define JP__PAIRS_10                                                             5
#define JP__PAIRS_12                                                             6

/* A scalar (integer, enum, bool, char) or a pointer, in at most 64 bits. */
#define JP__IS_SCALAR(type)                                                                        \
	((__builtin_classify_type(*(type *)0) == 1 || __builtin_classify_type(*(type *)0) == 5) && \
	 sizeof(type) <= sizeof(uint64_t))
#define JP__CHECK_ARG(i, type, name)        \
	_Static_assert(JP__IS_SCALAR(type), \
		       "join point argument '" #name "' must be a scalar or a pointer");
#define JP__CHECK_RETURN(type)                                                              \
	_Static_assert(JP__IS_SCALAR(type), "join point return type must be a scalar or a " \
					    "pointer");
#define JP__CHECK_NONE(type)

#define JP__PARAM(i, type, name)      type name
#define JP__NAME_ONLY(i, type, name)  name
#define JP__NAME_TEXT(i, type, name)  #name,
#define JP__TYPE_TEXT(i, type, name)  #type,
#define JP__PACK_ONE(i, type, name)   (uint64_t)(name),
#define JP__UNPACK_ONE(i, type, name) (type) jp_args[i]

/* Per pair count: a macro applied to (index, type, name) of every pair. */
#define JP__EACH_0(m, sep, ...)
#define JP__EACH_1(m, sep, t0, n0)         m(0, t0, n0)
#define JP__EACH_2(m, sep, t0, n0, t1, n1) m(0, t0, n0) sep m(1, t1, n1)
#define JP__EACH_3(m, sep, t0, n0, t1, n1, t2, n2) \
	m(0, t0, n0) sep m(1, t1, n1)              \
	sep m(2, t2, n2)
#define JP__EACH_4(m, sep, t0, n0, t1, n1, t2, n2, t3, n3) \
	m(0, t0, n0) sep m(1, t1, n1)                      \
	sep m(2, t2, n2)                                   \
	sep m(3, t3, n3)
#define JP__EACH_5(m, sep, t0, n0, t1, n1, t2, n2, t3, n3, t4, n4) \
	m(0, t0, n0) sep m(1, t1, n1)                              \
	sep m(2, t2, n2)                                           \
	sep m(3, t3, n3)                                           \
	sep m(4, t4, n4)
#define JP__EACH_6(m, sep, t0, n0, t1, n1, t2, n2, t3, n3, t4, n4, t5, n5) \
	m(0, t0, n0) sep m(1, t1, n1)                                      \
	sep m(2, t2, n2)                                                   \
	sep m(3, t3, n3)                                                   \
	sep m(4, t4, n4)                                                   \
	sep m(5, t5, n5)
#define JP__COMMA ,
#define JP__NOTHING

#define JP__CHECK_0(...)
#define JP__CHECK_1(...) JP__EACH_1(JP__CHECK_ARG, JP__NOTHING, __VA_ARGS__)
#define JP__CHECK_2(...) JP__EACH_2(JP__CHECK_ARG, JP__NOTHING, __VA_ARGS__)
#define JP__CHECK_3(...) JP__EACH_3(JP__CHECK_ARG, JP__NOTHING, __VA_ARGS__)
#define JP__CHECK_4(...) JP__EACH_4(JP__CHECK_ARG, JP__NOTHING, __VA_ARGS__)
#define JP__CHECK_5(...) JP__EACH_5(JP__CHECK_ARG, JP__NOTHING, __VA_ARGS__)
#define JP__CHECK_6(...) JP__EACH_6(JP__CHECK_ARG, JP__NOTHING, __VA_ARGS__)

#define JP__PARAMS_0(...) void
#define JP__PARAMS_1(...) JP__EACH_1(JP__PARAM, JP__COMMA, __VA_ARGS__)
#define JP__PARAMS_2(...) JP__EACH_2(JP__PARAM, JP__COMMA, __VA_ARGS__)
#define JP__PARAMS_3(...) JP__EACH_3(JP__PARAM, JP__COMMA, __VA_ARGS__)
#define JP__PARAMS_4(...) JP__EACH_4(JP__PARAM, JP__COMMA, __VA_ARGS__)
#define JP__PARAMS_5(...) JP__EACH_5(JP__PARAM, JP__COMMA, __VA_ARGS__)
#define JP__PARAMS_6(...) JP__EACH_6(JP__PARAM, JP__COMMA, __VA_ARGS__)

#define JP__NAMES_ONLY_0(...)
#define JP__NAMES_ONLY_1(...) JP__EACH_1(JP__NAME_ONLY, JP__COMMA, __VA_ARGS__)
#define JP__NAMES_ONLY_2(...) JP__EACH_2(JP__NAME_ONLY, JP__COMMA, __VA_ARGS__)
#define JP__NAMES_ONLY_3(...) JP__EACH_3(JP__NAME_ONLY, JP__COMMA, __VA_ARGS__)
#define JP__NAMES_ONLY_4(...) JP__EACH_4(JP__NAME_ONLY, JP__COMMA, __VA_ARGS__)
#define JP__NAMES_ONLY_5(...) JP__EACH_5(JP__NAME_ONLY, JP__COMMA, __VA_ARGS__)
#define JP__NAMES_ONLY_6(...) JP__EACH_6(JP__NAME_ONLY, JP__COMMA, __VA_ARGS__)

#define JP__UNPACK_0(...)
#define JP__UNPACK_1(...) JP__EACH_1(JP__UNPACK_ONE, JP__COMMA, __VA_ARGS__)
#define JP__UNPACK_2(...) JP__EACH_2(JP__UNPACK_ONE, JP__COMMA, __VA_ARGS__)
#define JP__UNPACK_3(...) JP__EACH_3(JP__UNPACK_ONE, JP__COMMA, __VA_ARGS__)
#define JP__UNPACK_4(...) JP__EACH_4(JP__UNPACK_ONE, JP__COMMA, __VA_ARGS__)
#define JP__UNPACK_5(...) JP__EACH_5(JP__UNPACK_ONE, JP__COMMA, __VA_ARGS__)
#define JP__UNPACK_6(...) JP__EACH_6(JP__UNPACK_ONE, JP__COMMA, __VA_ARGS__)

#define JP__NAMES_0(...)
#define JP__NAMES_1(...) JP__EACH_1(JP__NAME_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__NAMES_2(...) JP__EACH_2(JP__NAME_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__NAMES_3(...) JP__EACH_3(JP__NAME_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__NAMES_4(...) JP__EACH_4(JP__NAME_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__NAMES_5(...) JP__EACH_5(JP__NAME_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__NAMES_6(...) JP__EACH_6(JP__NAME_TEXT, JP__NOTHING, __VA_ARGS__)

#define JP__TYPES_0(...)
#define JP__TYPES_1(...) JP__EACH_1(JP__TYPE_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__TYPES_2(...) JP__EACH_2(JP__TYPE_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__TYPES_3(...) JP__EACH_3(JP__TYPE_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__TYPES_4(...) JP__EACH_4(JP__TYPE_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__TYPES_5(...) JP__EACH_5(JP__TYPE_TEXT, JP__NOTHING, __VA_ARGS__)
#define JP__TYPES_6(...) JP__EACH_6(JP__TYPE_TEXT, JP__NOTHING, __VA_ARGS__)

#define JP__PACK_0(...)
#define JP__PACK_1(...) JP__EACH_1(JP__PACK_ONE, JP__NOTHING, __VA_ARGS__)
#define JP__PACK_2(...) JP__EACH_2(JP__PACK_ONE, JP__NOTHING, __VA_ARGS__)
#define JP__PACK_3(...) JP__EACH_3(JP__PACK_ONE, JP__NOTHING, __VA_ARGS__)
#define JP__PACK_4(...) JP__EACH_4(JP__PACK_ONE, JP__NOTHING, __VA_ARGS__)
#define JP__PACK_5(...) JP__EACH_5(JP__PACK_ONE, JP__NOTHING, __VA_ARGS__)
#define JP__PACK_6(...) JP__EACH_6(JP__PACK_ONE, JP__NOTHING, __VA_ARGS__)

#endif
