/*
 * The system call table and the C side of both entries.  The table is built
 * once from the .syscalls section (SYSCALL_DEFINEn entries) into an array
 * indexed by number, so dispatch is one bounds check and one load.  Both
 * entries (SYSCALL and "int $0x80", syscall.S) save a full struct trap_frame
 * at the top of the thread's kernel stack, the same place an interrupt from
 * user mode saves one, so syscall_user_frame() finds the user registers from
 * any handler: fork copies them, execve replaces them.  On the way out the
 * process code may end the process (exit, a fatal signal); SYSRET is used
 * only when the saved RIP is a user address, else IRETQ (syscall.S).
 */
#include "syscall/internal.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/gdt.h"
#include "arch/x86_64/trapframe.h"
#include "cpu/percpu.h"
#include "lattrack/lattrack.h"
#include "lib/errno.h"
#include "panic/panic.h"
#include "proc/proc.h"
#include "telemetry/tracepoint.h"
#include "trace/trace.h"
#include "trace/uscope_syscall.h"
#include "uaccess/uaccess.h"

#define EFER_SCE 1UL
/* Cleared on entry: TF, IF, DF, NT, AC. */
#define SYSCALL_RFLAGS_MASK ((1UL << 8) | (1UL << 9) | (1UL << 10) | (1UL << 14) | (1UL << 18))

static const struct syscall_entry *table[SYSCALL_TABLE_SIZE];
/* The entry from user mode's table: each number's call, or
 * call_without_handler.  One load and a call, where the entries cost a
 * second load and a test for a missing one. */
static long (*calls[SYSCALL_TABLE_SIZE])(const struct trap_frame *frame);
static bool table_built;

/* syscall.S */
void syscall_entry(void);

static long call_without_handler(const struct trap_frame *frame);

static void build_table(void)
{
	for (const struct syscall_entry *e = __syscalls_start; e < __syscalls_end; e++) {
		if (e->number >= SYSCALL_TABLE_SIZE)
			panic("syscall: %s has number %u, past the table", e->name, e->number);
		if (table[e->number])
			panic("syscall: %s and %s both claim number %u", table[e->number]->name,
			      e->name, e->number);
		table[e->number] = e;
	}
	for (unsigned number = 0; number < SYSCALL_TABLE_SIZE; number++)
		calls[number] = table[number] ? table[number]->call : call_without_handler;
	table_built = true;
}

void syscall_init_cpu(void)
{
	if (!table_built)
		build_table();
	wrmsr(MSR_STAR,
	      ((uint64_t)GDT_STAR_SYSRET_BASE << 48) | ((uint64_t)GDT_STAR_SYSCALL_BASE << 32));
	wrmsr(MSR_LSTAR, (uint64_t)syscall_entry);
	wrmsr(MSR_FMASK, SYSCALL_RFLAGS_MASK);
	wrmsr(MSR_EFER, rdmsr(MSR_EFER) | EFER_SCE);
}

const struct syscall_entry *syscall_find(uint64_t number)
{
	return number < SYSCALL_TABLE_SIZE ? table[number] : NULL;
}

static inline __attribute__((always_inline)) long
dispatch(const struct syscall_entry *entry, uint64_t number, const struct trap_frame *frame)
{
	if (!tracepoint_on()) {
		unsigned slot = tracepoint_stacks_on() ? this_cpu_user_stacks() : 0;
		/* nothing else of a stacks-only trace is a system call's: a traced
		 * process's call gets its entry record and its stack (uscope.c) */
		if (__builtin_expect(slot != 0, 0) &&
		    !uscope_syscall_sent((int64_t)number, frame->rdi, slot))
			uscope_record_syscall(syscall_user_frame(), entry ? entry->name : NULL,
					      (int64_t)number, frame->rdi, slot);
		return entry ? entry->call(frame) : -ENOSYS;
	}
	struct trace_syscall_entry in = {.number = (int64_t)number, .arg0 = frame->rdi};
	tracepoint_record_irqs_on(TRACE_SYSCALL_ENTRY, rdtsc(), &in, sizeof in); /* in line: hot */
	if (this_cpu_user_stacks()) /* the process is in the trace map: its stack follows */
		uscope_record_stack(syscall_user_frame(), entry ? entry->name : NULL);
	long result = entry ? entry->call(frame) : -ENOSYS;
	struct trace_syscall_exit out = {.number = (int64_t)number, .result = result};
	if (tracepoint_on())
		tracepoint_record_irqs_on(TRACE_SYSCALL_EXIT, rdtsc(), &out, sizeof out);
	return result;
}

static __attribute__((noinline)) long dispatch_out_of_line(const struct syscall_entry *entry,
							   uint64_t number,
							   const struct trap_frame *frame)
{
	return dispatch(entry, number, frame);
}

/* A syscall latency tracker runs (lattrack/spans.c): the call is timed here,
 * both ends in syscall_dispatch's frame (in line: a call out of it and a
 * frame of its own cost as much as the rest), and a quiet call (the usual
 * one) is counted in line; any other goes to lattrack_syscall_span.  A
 * traced call is dispatched out of line: the usual path stays short. */
static inline __attribute__((always_inline)) long
dispatch_timed(const struct syscall_entry *entry, uint64_t number, const struct trap_frame *frame)
{
	uint64_t start = rdtsc();
	long result;
	if (__builtin_expect(tracepoint_on() || tracepoint_stacks_on(), 0))
		result = dispatch_out_of_line(entry, number, frame);
	else
		result = entry ? entry->call(frame) : -ENOSYS;
	uint64_t delay = rdtsc() - start;
	if (!lattrack_syscall_count_quiet(number, delay))
		lattrack_syscall_span(number, entry ? entry->name : NULL, start, delay);
	return result;
}

/* syscall_dispatch, in line in the entry from user mode: a call and a frame
 * of its own cost a system call about twenty instructions. */
static inline __attribute__((always_inline)) long dispatch_any(uint64_t number,
							       const struct trap_frame *frame)
{
	const struct syscall_entry *entry = syscall_find(number);
	if (__builtin_expect(lattrack_syscalls_timed(), 0))
		return dispatch_timed(entry, number, frame);
	return dispatch(entry, number, frame);
}

/* The arguments go where the entry from user mode leaves them. */
long syscall_dispatch(uint64_t number, const uint64_t *args)
{
	const struct trap_frame frame = {.rdi = args[0],
					 .rsi = args[1],
					 .rdx = args[2],
					 .r10 = args[3],
					 .r8 = args[4],
					 .r9 = args[5]};
	return dispatch_any(number, &frame);
}

struct trap_frame *syscall_user_frame(void)
{
	/* one %gs-relative load: callers are preemptible, and a thread moved
	 * between reading the CPU and its field would take the stack top of
	 * whatever the old CPU runs now */
	return (struct trap_frame *)this_cpu_read(syscall_stack) - 1;
}

/* Does anything watch system calls: a trace, a stacks-only trace or a
 * latency tracker?  A call nobody watches (the usual one) goes straight to
 * its handler after a compare with each watcher's word. */
static inline bool syscalls_watched(void)
{
	return tracepoint_on() || tracepoint_stacks_on() || lattrack_syscalls_timed();
}

/* A watched call, or one with no handler.  Out of line: what it needs
 * would otherwise cost every call its registers and their saving. */
static __attribute__((noinline)) long dispatch_watched(uint64_t number,
						       const struct trap_frame *frame)
{
	return dispatch_any(number, frame);
}

/* A number without a handler goes the way a watched call does: -ENOSYS,
 * traced when a trace runs.  The number is still the frame's RAX. */
static long call_without_handler(const struct trap_frame *frame)
{
	return dispatch_watched(frame->rax, frame);
}

/* The end of a call whose result is -EINTR or that leaves a signal
 * pending: a call interrupted by a stop signal is made again once the
 * process is continued, so that ^Z and fg look like nothing to the program
 * (the number is still the frame's RAX: only the way out writes the result
 * there), then the signal is taken: the process ends, or its handler runs
 * (the call made again after it with SA_RESTART).  rt_sigreturn comes here
 * too (its -EINTR leads the way) and leaves with every register of the
 * frame it rebuilt.  Returns the frame's RAX.  Out of line: rare. */
static __attribute__((noinline)) long finish_rare(struct trap_frame *frame, long result)
{
	if (proc_take_context_restored() && result == -EINTR)
		proc_resume_restored(frame);
	uint64_t number = frame->rax;
	while (result == -EINTR && proc_stop_if_requested())
		result = dispatch_any(number, frame);
	frame->rax = (uint64_t)result;
	proc_return_from_call(frame, number);
	return (long)frame->rax;
}

static inline __attribute__((always_inline)) long call_from_frame(const struct trap_frame *frame)
{
	uint64_t number = frame->rax;
	return __builtin_expect(number < SYSCALL_TABLE_SIZE && !syscalls_watched(), 1)
		   ? calls[number](frame)
		   : dispatch_watched(number, frame);
}

/* syscall.S leaves by SYSRET below this, by IRETQ at or above it (with
 * the result stored at this offset). */
_Static_assert(USER_SPACE_END == 0x00007ffffffff000UL, "syscall.S's SYSRET_RIP_END");
_Static_assert(offsetof(struct trap_frame, rax) == 112, "syscall.S's TRAP_FRAME_RAX");

/* From syscall.S, interrupts on: returns the result, with which the
 * assembly leaves by SYSRET, or stores in the frame's RAX to leave by IRETQ
 * (it chooses from the frame).  The usual call keeps nothing across the
 * handler: the rare ends find the frame again where the entry built it. */
long syscall_from_user(struct trap_frame *frame);
long syscall_from_user(struct trap_frame *frame)
{
	long result = call_from_frame(frame);
	if (__builtin_expect(result == -EINTR, 0) || proc_signal_pending())
		return finish_rare(syscall_user_frame(), result);
	return result;
}

/* The "int $0x80" entry, interrupts on; always leaves by IRETQ. */
void syscall_from_int80(struct trap_frame *frame);
void syscall_from_int80(struct trap_frame *frame)
{
	finish_rare(frame, call_from_frame(frame));
}
