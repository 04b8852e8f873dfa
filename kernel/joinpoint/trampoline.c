/*
 * The fast path of _NOSLEEP join points.  The advised site jumps to the
 * function's cold block, which jumps on (a sibling call) to jp_enterN with
 * the N arguments still in their registers and the join point's state after
 * them.  jp_enterN:
 *
 *   1. enters one reader section for the whole call: preemption count up,
 *      `lock bts` of JP_SECTION_INSIDE (grace.c: a full barrier, so the list
 *      load below cannot pass it; the bit is the recursion guard as well);
 *      if the bit was already set the CPU is in advice or inside the call of
 *      another _NOSLEEP join point, and the call goes to jp_dispatch instead,
 *      which skips or nests (the outer section already covers it);
 *   2. spills the arguments into an array;
 *   3. loads the published list once, and jumps to list->shape, the code
 *      that jp_shape_select chose for it when the list was built, which
 *      first pushes the context (struct jp_context's field order is the
 *      reverse of these pushes).
 *
 * A shape for at most one before and one after call (and no timestamps)
 * calls them directly through the list, the real function through its
 * unpacking thunk (list->call) with JP_SECTION_CALLING set around it so that
 * join points inside it run their advice, and stores or reloads the result
 * only when it has one and an after call may read or change it.  Every other
 * list takes the general shape, jp_run_list in C, in the same section.  The
 * shape then pops the frame and leaves the section: one add clears the bit
 * and counts the section, the preemption count goes down and need_resched is
 * tested.  An advice alone on its join point may bring its own shape
 * (jp_advice.fast_path, joinpoint.h), which builds no context at all and
 * leaves through jp_fast_path_leave0/1.
 *
 * Because the section spans the call, the list loaded at entry stays valid
 * until the end: `after` runs the after calls of exactly the list `before`
 * used (never an after without its before), and a detach waits for calls in
 * progress instead of letting them miss their after.  The price is that the
 * call runs with preemption off: only for functions that never sleep.
 *
 * Stack: the ABI's alignment holds at every call made here (the cold block's
 * sibling call enters with the caller's alignment; pushes are counted so).
 * Six argument slots are reserved whenever N > 0, so that one epilogue serves
 * every N; the shapes come in N == 0 and N > 0 forms for that reason.
 */
#include "joinpoint/internal.h"

#include <stddef.h>

#include "arch/x86_64/cpu.h"
#include "lib/string.h"

#define CPU_FIELD(field)     offsetof(struct cpu, field)
#define LIST_FIELD(field)    offsetof(struct jp_list, field)
#define CONTEXT_FIELD(field) offsetof(struct jp_context, field)

/* The pushes in JP_BUILD, in reverse: a change here needs one there. */
_Static_assert(offsetof(struct jp_context, joinpoint) == 0, "context layout");
_Static_assert(offsetof(struct jp_context, ret) == 8, "context layout");
_Static_assert(offsetof(struct jp_context, entry_tsc) == 16, "context layout");
_Static_assert(offsetof(struct jp_context, exit_tsc) == 24, "context layout");
_Static_assert(offsetof(struct jp_context, cpu) == 32, "context layout");
_Static_assert(offsetof(struct jp_context, thread) == 40, "context layout");
_Static_assert(offsetof(struct jp_context, activity) == 48, "context layout");
_Static_assert(offsetof(struct jp_context, args) == 56, "context layout");
_Static_assert(sizeof(struct jp_context) == 64, "context layout");
/* cpu is pushed as 8 bytes from struct cpu's id: the other 4 are apic_id,
 * which land in the padding after the context's cpu. */
_Static_assert(offsetof(struct cpu, apic_id) == offsetof(struct cpu, id) + 4, "cpu layout");
_Static_assert(offsetof(struct jp_state, list) == 0, "state layout");
_Static_assert(offsetof(struct jp_list, fast) == 0, "a fast path finds its list's head at %rbx");
_Static_assert(JP_MAX_ARGS == 6, "the trampoline spills six registers");
_Static_assert(JP_SECTION_INSIDE == 1 && JP_SECTION_CALLING == 2 && JP_SECTION_ENDED == 4,
	       "the trampoline's section arithmetic");

/* Shapes by [arguments][returns a value][one before][one after]; both 0 is
 * the general shape.  Defined in the assembly below. */
extern const void *const jp_shape_table[16];

/* An advice alone on its join point may bring its own code. */
static const void *own_fast_path(const struct jp_list *list, bool arguments)
{
	const struct jp_advice *alone = list->count == 1 ? list->entries[0].advice : NULL;
	return alone ? alone->fast_path[arguments] : NULL;
}

const void *jp_shape_select(const struct jp_list *list, const struct joinpoint *jp)
{
	bool arguments = jp->argc > 0;
	const void *own = own_fast_path(list, arguments);
	if (own)
		return own;
	bool value = strcmp(jp->return_type, "void") != 0;
	bool simple = !(list->flags & JP_ADVICE_TIMESTAMPS) && list->before_count <= 1 &&
		      list->after_count <= 1;
	unsigned before = simple ? list->before_count : 0;
	unsigned after = simple ? list->after_count : 0;
	return jp_shape_table[arguments * 8 + value * 4 + before * 2 + after];
}

static inline __attribute__((always_inline)) void calling(bool on)
{
	if (on)
		__asm__ volatile("addl %1, %%gs:%c0" ::"i"(CPU_FIELD(jp_sections)),
				 "i"(JP_SECTION_CALLING)
				 : "memory", "cc");
	else
		__asm__ volatile("subl %1, %%gs:%c0" ::"i"(CPU_FIELD(jp_sections)),
				 "i"(JP_SECTION_CALLING)
				 : "memory", "cc");
}

void jp_run_list(struct jp_context *context, const struct jp_list *list)
{
	bool stamps = list->flags & JP_ADVICE_TIMESTAMPS;
	if (stamps)
		context->entry_tsc = rdtsc();
	for (unsigned i = 0; i < list->before_count; i++)
		list->before[i].fn(context, list->before[i].cookie);
	calling(true);
	context->ret = context->joinpoint->call(context->args);
	calling(false);
	if (stamps)
		context->exit_tsc = rdtsc();
	for (unsigned i = 0; i < list->after_count; i++)
		list->after[i].fn(context, list->after[i].cookie);
}

/*
 * The code.  Inline assembly in a function that is never called, for its
 * operands: the offsets come from the C declarations.  It is all emitted into
 * its own text section; the function itself is only a `ret`.
 */
// clang-format off
__attribute__((used)) static void trampoline_code(void)
{
	__asm__ volatile(
	".pushsection .text.jp_trampoline, \"ax\"\n"

	/* Leaves the section (the result is in %%rax) and returns. */
	".macro JP_EXIT\n"
	"	addl $3, %%gs:%c[sections]\n"
	"	decl %%gs:%c[preempt]\n"
	"	cmpl $0, %%gs:%c[resched]\n"
	"	jne jp_resched_return\n"
	"	ret\n"
	".endm\n"

	/* Pops the context, the argument slots and %%rbx, then leaves. */
	".macro JP_LEAVE arguments\n"
	"	.if \\arguments\n"
	"	add $(64 + 48), %%rsp\n"
	"	.else\n"
	"	add $64, %%rsp\n"
	"	.endif\n"
	"	pop %%rbx\n"
	"	JP_EXIT\n"
	".endm\n"

	/* Stores the first \\n argument registers into slots 0 to \\n - 1. */
	".macro JP_SPILL n\n"
	"	.if \\n > 0\n"
	"	mov %%rdi, 0(%%rsp)\n"
	"	.endif\n"
	"	.if \\n > 1\n"
	"	mov %%rsi, 8(%%rsp)\n"
	"	.endif\n"
	"	.if \\n > 2\n"
	"	mov %%rdx, 16(%%rsp)\n"
	"	.endif\n"
	"	.if \\n > 3\n"
	"	mov %%rcx, 24(%%rsp)\n"
	"	.endif\n"
	"	.if \\n > 4\n"
	"	mov %%r8, 32(%%rsp)\n"
	"	.endif\n"
	"	.if \\n > 5\n"
	"	mov %%r9, 40(%%rsp)\n"
	"	.endif\n"
	".endm\n"

	/* Builds the context under the argument slots (%%rdi = state).  push
	 * %%rsp pushes its value before the push: the address of the first slot
	 * (for N = 0, of the saved %%rbx, which no advice reads as argc is 0). */
	".macro JP_BUILD\n"
	"	push %%rsp\n"                        /* args */
	"	pushq $0\n"                          /* activity */
	"	pushq %%gs:%c[current]\n"            /* thread */
	"	pushq %%gs:%c[cpu_id]\n"             /* cpu */
	"	pushq $0\n"                          /* exit_tsc */
	"	pushq $0\n"                          /* entry_tsc */
	"	pushq $0\n"                          /* ret */
	"	pushq %c[state_joinpoint](%%rdi)\n"  /* joinpoint */
	".endm\n"

	/* jp_enterN, after the path it takes when already inside a section:
	 * jp_dispatch skips (in advice) or nests (inside a call); the outer
	 * section keeps preemption off, so dropping the count needs no
	 * need_resched test.  \\state is where the state pointer is once six
	 * slots are reserved (a register, or the stack for N = 6).  Every N
	 * ends in a jump to the list's shape, with the list in %%rbx and the
	 * state in %%rdi. */
	".macro JP_ENTER n, state\n"
	"jp_nested\\n:\n"
	"	decl %%gs:%c[preempt]\n"
	"	push %%rbp\n"
	"	mov %%rsp, %%rbp\n"
	"	sub $48, %%rsp\n"
	"	JP_SPILL \\n\n"
	"	mov \\state, %%rdi\n"
	"	mov %c[state_joinpoint](%%rdi), %%rdi\n"
	"	mov %%rsp, %%rsi\n"
	"	call jp_dispatch\n"
	"	leave\n"
	"	ret\n"
	"	.globl jp_enter\\n\n"
	"	.type jp_enter\\n, @function\n"
	"jp_enter\\n:\n"
	"	incl %%gs:%c[preempt]\n"
	"	lock btsl $0, %%gs:%c[sections]\n"
	"	jc jp_nested\\n\n"
	"	push %%rbx\n"
	"	.if \\n > 0\n"
	"	sub $48, %%rsp\n"
	"	JP_SPILL \\n\n"
	"	mov \\state, %%rdi\n"
	"	.endif\n"
	"	mov (%%rdi), %%rbx\n"
	"	jmp *%c[list_shape](%%rbx)\n"
	".endm\n"

	/* One fixed shape: \\before and \\after are 0 or 1. */
	".macro JP_SHAPE arguments, value, before, after\n"
	"jp_shape_\\arguments\\value\\before\\after:\n"
	"	JP_BUILD\n"
	"	.if \\before\n"
	"	mov %%rsp, %%rdi\n"
	"	mov %c[before_cookie](%%rbx), %%rsi\n"
	"	call *%c[before_fn](%%rbx)\n"
	"	.endif\n"
	"	addl $2, %%gs:%c[sections]\n"
	"	.if \\arguments\n"
	"	mov %c[context_args](%%rsp), %%rdi\n"
	"	.endif\n"
	"	call *%c[list_call](%%rbx)\n"
	"	subl $2, %%gs:%c[sections]\n"
	"	.if \\after\n"
	"	.if \\value\n"
	"	mov %%rax, %c[context_ret](%%rsp)\n"
	"	.endif\n"
	"	mov %%rsp, %%rdi\n"
	"	mov %c[after_cookie](%%rbx), %%rsi\n"
	"	call *%c[after_fn](%%rbx)\n"
	"	.if \\value\n"
	"	mov %c[context_ret](%%rsp), %%rax\n"
	"	.endif\n"
	"	.endif\n"
	"	JP_LEAVE \\arguments\n"
	".endm\n"

	/* Everything else: jp_run_list, which sets the context's ret. */
	".macro JP_GENERAL arguments\n"
	"jp_general_\\arguments:\n"
	"	JP_BUILD\n"
	"	mov %%rsp, %%rdi\n"
	"	mov %%rbx, %%rsi\n"
	"	call jp_run_list\n"
	"	mov %c[context_ret](%%rsp), %%rax\n"
	"	JP_LEAVE \\arguments\n"
	".endm\n"

	"	.balign 16\n"
	"	JP_ENTER 1, %%rsi\n"
	"	JP_ENTER 2, %%rdx\n"
	"	JP_ENTER 3, %%rcx\n"
	"	JP_ENTER 4, %%r8\n"
	"	JP_ENTER 5, %%r9\n"
	"	JP_ENTER 6, 64(%%rsp)\n"
	"	JP_ENTER 0, %%rdi\n"

	"	JP_SHAPE 0, 0, 0, 1\n"
	"	JP_SHAPE 0, 0, 1, 0\n"
	"	JP_SHAPE 0, 0, 1, 1\n"
	"	JP_SHAPE 0, 1, 0, 1\n"
	"	JP_SHAPE 0, 1, 1, 0\n"
	"	JP_SHAPE 0, 1, 1, 1\n"
	"	JP_SHAPE 1, 0, 0, 1\n"
	"	JP_SHAPE 1, 0, 1, 0\n"
	"	JP_SHAPE 1, 0, 1, 1\n"
	"	JP_SHAPE 1, 1, 0, 1\n"
	"	JP_SHAPE 1, 1, 1, 0\n"
	"	JP_SHAPE 1, 1, 1, 1\n"
	"	JP_GENERAL 0\n"
	"	JP_GENERAL 1\n"

	/* Where an advice's own fast path ends (joinpoint.h). */
	"	.globl jp_fast_path_leave0, jp_fast_path_leave1\n"
	"jp_fast_path_leave1:\n"
	"	add $48, %%rsp\n"
	"jp_fast_path_leave0:\n"
	"	pop %%rbx\n"
	"	JP_EXIT\n"

	/* need_resched was set: %%rsp is as at entry, so one push aligns. */
	"jp_resched_return:\n"
	"	push %%rax\n"
	"	call jp_resched_after_section\n"
	"	pop %%rax\n"
	"	ret\n"
	"	.popsection\n"

	"	.pushsection .rodata\n"
	"	.balign 8\n"
	"	.globl jp_shape_table\n"
	"jp_shape_table:\n"
	"	.quad jp_general_0, jp_shape_0001, jp_shape_0010, jp_shape_0011\n"
	"	.quad jp_general_0, jp_shape_0101, jp_shape_0110, jp_shape_0111\n"
	"	.quad jp_general_1, jp_shape_1001, jp_shape_1010, jp_shape_1011\n"
	"	.quad jp_general_1, jp_shape_1101, jp_shape_1110, jp_shape_1111\n"
	"	.popsection\n"
	".purgem JP_EXIT\n"
	".purgem JP_LEAVE\n"
	".purgem JP_SPILL\n"
	".purgem JP_ENTER\n"
	".purgem JP_BUILD\n"
	".purgem JP_SHAPE\n"
	".purgem JP_GENERAL\n"
	:
	: [preempt] "i"(CPU_FIELD(preempt_count)), [sections] "i"(CPU_FIELD(jp_sections)),
	  [resched] "i"(CPU_FIELD(need_resched)), [current] "i"(CPU_FIELD(current)),
	  [cpu_id] "i"(CPU_FIELD(id)), [state_joinpoint] "i"(offsetof(struct jp_state, joinpoint)),
	  [list_shape] "i"(LIST_FIELD(fast.shape)), [list_call] "i"(LIST_FIELD(fast.call)),
	  [before_fn] "i"(LIST_FIELD(before[0].fn)), [before_cookie] "i"(LIST_FIELD(before[0].cookie)),
	  [after_fn] "i"(LIST_FIELD(after[0].fn)), [after_cookie] "i"(LIST_FIELD(after[0].cookie)),
	  [context_args] "i"(CONTEXT_FIELD(args)), [context_ret] "i"(CONTEXT_FIELD(ret)));
}
// clang-format on
