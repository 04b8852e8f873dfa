/*
 * The recorder's own fast path (jp_advice.fast_path, joinpoint/joinpoint.h):
 * on a _NOSLEEP join point where the recorder is the only advice, the
 * trampoline jumps here instead of building a context and calling a before
 * and an after.  This code notes the TSC, makes the call, and writes the
 * call record (first argument, low 32 bits of the result, duration: the same
 * 24 bytes as record.c's record_call) straight into this CPU's ring of the
 * stream, with interrupts held off from picking the ring to publishing the
 * record.  Everything that is not the common case (no trace, an untraced
 * thread, a record that needs a full time, the end of the ring, a full ring,
 * a thread whose process is in the trace map and gets its user stack)
 * goes to trace_record_call_slow in C, which writes through tracepoint_record.
 * The ring comes from cpu->fast_ring, which is NULL for an untraced thread
 * and for one whose user stacks are wanted: one test sends both off the fast
 * path, and only then is it asked which of the two it was.
 *
 * The same file holds the recorder's around for a join point that may sleep
 * (trace_record_whole_call, joinpoint.h's jp_advice.around), which the
 * dispatcher jumps to where the recorder is alone there: the entry record
 * written in line in the dispatcher's section, the section left, the call,
 * the exit record written in line, with C (record.c) for the same cases as
 * above.  Written in C it kept six registers and wrote each header field
 * apart: 106 instructions a call against 63 here.
 *
 * The trace stream's rings are never shared with a process (kernel/trace
 * drains them itself), so there is no mirror to update at the commit.
 */
#include "trace/internal.h"

#include <stddef.h>

#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "telemetry/telemetry.h"
#include "uapi/trace.h"

#define CPU_FIELD(field)  offsetof(struct cpu, field)
#define RING_FIELD(field) offsetof(struct tel_ring, field)

/* The header of a compact call record for join point 0, as one 32-bit word:
 * type (TRACE_JP_EVENT(0, TRACE_JP_CALL)), then the record's size in words.
 * Join point j adds 3 * j to the type, which stays below 2^16. */
#define CALL_RECORD_BYTES 24
#define CALL_HEADER_BASE  (TRACE_JP_EVENT(0, TRACE_JP_CALL) | (CALL_RECORD_BYTES / 8) << 16)
_Static_assert(TEL_RECORD_SIZE(sizeof(struct trace_jp_call), TEL_COMPACT) == CALL_RECORD_BYTES,
	       "a call record is a compact header and two words");
_Static_assert(offsetof(struct tel_record, type) == 0 && offsetof(struct tel_record, words) == 2 &&
		   offsetof(struct tel_record, kind) == 3 && offsetof(struct tel_record, time) == 4,
	       "the header is written as two 32-bit words");
_Static_assert(TEL_COMPACT == 0, "the kind byte of the header word is 0");
/* The entry record of join point 0 (an exit's type is one more): a compact
 * header and one word.  Join point j adds 3 * j. */
#define WORD_RECORD_BYTES 16
#define ENTRY_HEADER_BASE (TRACE_JP_EVENT(0, TRACE_JP_ENTRY) | (WORD_RECORD_BYTES / 8) << 16)
_Static_assert(TEL_RECORD_SIZE(sizeof(uint64_t), TEL_COMPACT) == WORD_RECORD_BYTES,
	       "an entry or exit record is a compact header and one word");
_Static_assert(TRACE_JP_EXIT == TRACE_JP_ENTRY + 1, "an exit's type follows its entry's");

/* The header word of join point jp's call record, which the fast path finds
 * in its list (jp_advice.fast_word): the type of the join point's call
 * event and the record's size, written with one store. */
uint32_t trace_call_header(const struct joinpoint *jp)
{
	return CALL_HEADER_BASE + 3 * jp_index(jp);
}

/* The header word of join point jp's entry record, which the whole-call
 * path finds in its list (jp_advice.fast_word); the exit's is one more. */
uint32_t trace_entry_header(const struct joinpoint *jp)
{
	return ENTRY_HEADER_BASE + 3 * jp_index(jp);
}

// clang-format off
__attribute__((used)) static void record_fast_code(void)
{
	__asm__ volatile(
	".pushsection .text.jp_trampoline, \"ax\"\n"

	/* \\bytes in the ring at %%rcx, for a record at time %%edx:%%eax (as
	 * rdtsc leaves it): %%rdi the record, %%rdx the head that publishes it,
	 * the ring's last_time the time (its high half unchanged).  Goes to
	 * \\slow, with nothing taken, where the record needs C: a time whose
	 * high half is not the ring's last record's (2^32 ticks or more since
	 * it, or the 2^32 boundary crossed: C writes it and sets the new high
	 * half), a time before it, or the end of the ring.  Comparing the
	 * halves in place costs 4 instructions where forming the 64-bit time
	 * and testing the difference cost 7. */
	".macro RING_RESERVE bytes, slow\n"
	"	cmp %%edx, %c[last_time] + 4(%%rcx)\n"
	"	jne \\slow\n"
	"	cmp %%eax, %c[last_time](%%rcx)\n"
	"	ja \\slow\n"
	"	mov %c[head](%%rcx), %%rdi\n"
	"	lea \\bytes(%%rdi), %%rdx\n"
	"	cmp %c[fast_limit](%%rcx), %%rdx\n"
	"	ja \\slow\n"
	"	mov %%eax, %c[last_time](%%rcx)\n"
	"	and %c[mask](%%rcx), %%rdi\n"
	"	add %c[data](%%rcx), %%rdi\n"
	".endm\n"

	/* The record written at %%rdi is published: the commit count odd while
	 * the head moves, even after (x86: stores stay in order). */
	".macro RING_PUBLISH\n"
	"	incq %c[commits](%%rcx)\n"
	"	mov %%rdx, %c[head](%%rcx)\n"
	"	incq %c[commits](%%rcx)\n"
	".endm\n"

	/* \\arguments: 1 when the trampoline reserved six argument slots. */
	".macro RECORD_FAST arguments\n"
	"	.globl trace_record_fast\\arguments\n"
	"	.type trace_record_fast\\arguments, @function\n"
	"trace_record_fast\\arguments:\n"
	"	rdtsc\n"
	"	push %%rdx\n"                          /* 8: spare (the result, slow path) */
	"	push %%rax\n"
	"	mov %%edx, 4(%%rsp)\n"                 /* 0: the entry time, whole */
	"	.if \\arguments\n"
	"	lea 16(%%rsp), %%rdi\n"                /* the argument slots */
	"	.endif\n"
	"	addl %[calling], %%gs:%c[sections]\n"
	"	call *%c[list_call](%%rbx)\n"
	"	subl %[calling], %%gs:%c[sections]\n"
	"	mov %%rax, %%rsi\n"                     /* the result, kept in %%rsi */
	"	pushfq\n"                               /* 8: entry time, 16: spare, 24: slots */
	"	cli\n"
	"	mov %%gs:%c[fast_ring], %%rcx\n"        /* NULL: see 5 */
	"	test %%rcx, %%rcx\n"
	"	jz 5f\n"
	"	rdtsc\n"
	"	RING_RESERVE %c[bytes], 8f\n"
	"	mov %c[list_word](%%rbx), %%r8d\n"     /* the header: trace_call_header */
	"	mov %%r8d, (%%rdi)\n"
	"	mov %%eax, 4(%%rdi)\n"
	"	.if \\arguments\n"
	"	mov 24(%%rsp), %%r8\n"
	"	mov %%r8, 8(%%rdi)\n"
	"	.else\n"
	"	movq $0, 8(%%rdi)\n"
	"	.endif\n"
	"	mov %%esi, 16(%%rdi)\n"
	"	mov %c[last_time](%%rcx), %%rax\n"     /* the time, whole */
	"	sub 8(%%rsp), %%rax\n"                  /* the duration */
	"	mov %%eax, 20(%%rdi)\n"
	"	shr $32, %%rax\n"
	"	jnz 7f\n"
	"6:\n"
	"	RING_PUBLISH\n"
	"9:\n"
	"	popfq\n"
	"	mov %%rsi, %%rax\n"
	"	add $16, %%rsp\n"
	"	jmp jp_fast_path_leave\\arguments\n"
	/* No fast ring: no trace or an untraced thread (no record), or a
	 * thread whose process is in the trace map (C: the record, its stack). */
	"5:\n"
	"	cmpq $0, %%gs:%c[ring]\n"
	"	je 9b\n"
	"	jmp 8f\n"
	/* 2^32 ticks or more: the duration saturates. */
	"7:\n"
	"	movl $0xffffffff, 20(%%rdi)\n"
	"	jmp 6b\n"
	/* The slow path: %%rsp is 8 off the ABI's alignment (the flags). */
	"8:\n"
	"	mov %%rsi, 16(%%rsp)\n"
	"	mov %c[list_index](%%rbx), %%edi\n"
	"	mov 8(%%rsp), %%rsi\n"
	"	.if \\arguments\n"
	"	mov 24(%%rsp), %%rdx\n"
	"	.else\n"
	"	xor %%edx, %%edx\n"
	"	.endif\n"
	"	mov 16(%%rsp), %%rcx\n"
	"	sub $8, %%rsp\n"
	"	call trace_record_call_slow\n"
	"	add $8, %%rsp\n"
	"	mov 16(%%rsp), %%rsi\n"
	"	jmp 9b\n"
	"	.size trace_record_fast\\arguments, . - trace_record_fast\\arguments\n"
	".endm\n"

	"	RECORD_FAST 0\n"
	"	RECORD_FAST 1\n"
	".purgem RECORD_FAST\n"

	/* One record of one word into this CPU's ring: \\header (type and
	 * size) and \\word in registers, %%rcx the ring; %%rax, %%rdx and
	 * %%rdi are used.  Goes to \\slow, with nothing written, where the
	 * record needs C (a full time, the end of the ring). */
	".macro WORD_RECORD header, word, slow\n"
	"	rdtsc\n"
	"	RING_RESERVE %c[word_bytes], \\slow\n"
	"	mov \\header, (%%rdi)\n"
	"	mov %%eax, 4(%%rdi)\n"
	"	mov \\word, 8(%%rdi)\n"
	"	RING_PUBLISH\n"
	".endm\n"

	/* trace_record_whole_call(jp, args, list): the recorder's around
	 * (joinpoint.h) on a join point that may sleep, entered in the
	 * dispatcher's section.  The entry record (args[0], which the
	 * dispatcher's array always has: 0 without arguments), the section
	 * left, the call, the exit record.  The entry's header is the list's
	 * word (trace_entry_header, when the list was built); %%rbx keeps it
	 * across the call, and one more is the exit's.  The flags are kept on
	 * the stack while interrupts are off: pushfq and popfq, nothing else. */
	"	.globl trace_record_whole_call\n"
	"	.type trace_record_whole_call, @function\n"
	"trace_record_whole_call:\n"
	"	push %%rbx\n"                          /* the ABI's alignment from here */
	"	mov %%rdi, %%r9\n"                      /* the join point */
	"	mov (%%rsi), %%r8\n"                    /* its first argument */
	"	mov %c[list_word](%%rdx), %%ebx\n"     /* the entry's header */
	"	pushfq\n"
	"	cli\n"
	"	mov %%gs:%c[fast_ring], %%rcx\n"       /* NULL: C (see 1) */
	"	test %%rcx, %%rcx\n"
	"	jz 1f\n"
	"	WORD_RECORD %%ebx, %%r8, 1f\n"
	"	popfq\n"
	/* Leave the section: the bit cleared and the section counted (+3, as
	 * section.h's jp_section_leave), preemption on, a reschedule asked for
	 * meanwhile made (3). */
	"2:\n"
	"	addl $3, %%gs:%c[sections]\n"
	"	decl %%gs:%c[preempt]\n"
	"	cmpl $0, %%gs:%c[resched]\n"
	"	jne 3f\n"
	"4:\n"
	"	mov %%rsi, %%rdi\n"
	"	call *%c[jp_call](%%r9)\n"
	"	mov %%rax, %%r8\n"                      /* the result */
	"	inc %%ebx\n"                            /* the exit's header */
	"	pushfq\n"
	"	cli\n"
	"	mov %%gs:%c[fast_ring], %%rcx\n"
	"	test %%rcx, %%rcx\n"
	"	jz 5f\n"
	"	WORD_RECORD %%ebx, %%r8, 5f\n"
	"	popfq\n"
	"	mov %%r8, %%rax\n"
	"	pop %%rbx\n"
	"	ret\n"
	/* The entry record in C: no trace, an untraced thread, a thread with
	 * user stacks (its stack follows the record), or a record that needs
	 * a full time or the end of the ring. */
	"1:\n"
	"	popfq\n"
	"	push %%rsi\n"
	"	push %%r9\n"
	"	mov %%r9, %%rdi\n"
	"	mov %%r8, %%rsi\n"
	"	call trace_record_entry_slow\n"
	"	pop %%r9\n"
	"	pop %%rsi\n"
	"	jmp 2b\n"
	"3:\n"
	"	push %%rsi\n"
	"	push %%r9\n"
	"	call jp_resched_after_section\n"
	"	pop %%r9\n"
	"	pop %%rsi\n"
	"	jmp 4b\n"
	/* The exit record in C, which returns the result. */
	"5:\n"
	"	popfq\n"
	"	movzwl %%bx, %%edi\n"
	"	mov %%r8, %%rsi\n"
	"	call trace_record_exit_slow\n"
	"	pop %%rbx\n"
	"	ret\n"
	"	.size trace_record_whole_call, . - trace_record_whole_call\n"
	".purgem WORD_RECORD\n"
	".purgem RING_PUBLISH\n"
	".purgem RING_RESERVE\n"
	"	.popsection\n"
	:
	: [sections] "i"(CPU_FIELD(jp_sections)), [calling] "i"(JP_SECTION_CALLING),
	  [ring] "i"(CPU_FIELD(trace_ring)), [untraced] "i"(CPU_FIELD(untraced)),
	  [fast_ring] "i"(CPU_FIELD(fast_ring)),
	  [list_call] "i"(offsetof(struct jp_fast_list, call)),
	  [list_index] "i"(offsetof(struct jp_fast_list, index)),
	  [list_word] "i"(offsetof(struct jp_fast_list, word)),
	  [head] "i"(RING_FIELD(head)), [last_time] "i"(RING_FIELD(last_time)),
	  [fast_limit] "i"(RING_FIELD(fast_limit)), [mask] "i"(RING_FIELD(mask)),
	  [data] "i"(RING_FIELD(data)), [commits] "i"(RING_FIELD(commits)),
	  [bytes] "i"(CALL_RECORD_BYTES),
	  [word_bytes] "i"(WORD_RECORD_BYTES),
	  [preempt] "i"(CPU_FIELD(preempt_count)), [resched] "i"(CPU_FIELD(need_resched)),
	  [jp_call] "i"(offsetof(struct joinpoint, call)));
}
// clang-format on
