/*
 * What happens on a CPU exception.  trap_dispatch is the one C entry from
 * isr.S: vectors from 32 on go to kernel/irq; an exception is, in order,
 * (1) from user mode: offered to the registered user fault handler;
 * (2) a #PF or #GP in the kernel at an instruction listed in .ex_table:
 *     resumed at its fix-up (for a user-memory copy's entry, only a #PF on a
 *     user address); a #BP in the kernel: offered to the kernel
 *     breakpoint handler (the join-point weaver's, while it patches text);
 * (3) otherwise: a panic report.  The report names the exception, decodes a
 *     #PF error code, symbolizes RIP, prints every register and CR0/2/3/4,
 *     calls a fault in a kernel stack's guard area (mm) "kernel stack
 *     overflow", and walks the backtrace from the faulting instruction on.
 * CR2 is read first thing, before anything else can fault and overwrite it.
 * Exceptions other than #BP, NMI, #DF and #MC pass through the trap.entry
 * join point on their way to (1)-(3).
 *
 * An NMI is not a fault of the code it interrupts: it is counted, reported
 * (rate-limited) and resumed, whatever the mode.  A #DF or #MC says the
 * machine, not the code, is broken: it goes straight to (3), never to a user
 * process's signal, a fix-up or the aspect guard.
 */
#include "arch/x86_64/traps.h"

#include <stddef.h>

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/gdt.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "irq/irq.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "mm/mm.h"
#include "panic/ksyms.h"
#include "panic/panic.h"
#include "sched/sched.h"
#include "telemetry/tracepoint.h"
#include "time/time.h"
#include "uaccess/uaccess.h"

#define MAX_BACKTRACE          32
#define NMI_REPORT_INTERVAL_NS NSEC_PER_SEC

struct exception_name {
	const char *mnemonic;
	const char *name;
};

static const struct exception_name exception_names[TRAP_EXCEPTION_COUNT] = {
    [0] = {"#DE", "divide error"},
    [1] = {"#DB", "debug"},
    [2] = {"NMI", "non-maskable interrupt"},
    [3] = {"#BP", "breakpoint"},
    [4] = {"#OF", "overflow"},
    [5] = {"#BR", "bound range exceeded"},
    [6] = {"#UD", "invalid opcode"},
    [7] = {"#NM", "device not available"},
    [8] = {"#DF", "double fault"},
    [9] = {"#CSO", "coprocessor segment overrun"},
    [10] = {"#TS", "invalid TSS"},
    [11] = {"#NP", "segment not present"},
    [12] = {"#SS", "stack-segment fault"},
    [13] = {"#GP", "general protection fault"},
    [14] = {"#PF", "page fault"},
    [15] = {"#15", "reserved exception 15"},
    [16] = {"#MF", "x87 floating-point error"},
    [17] = {"#AC", "alignment check"},
    [18] = {"#MC", "machine check"},
    [19] = {"#XM", "SIMD floating-point exception"},
    [20] = {"#VE", "virtualization exception"},
    [21] = {"#CP", "control protection exception"},
    [22] = {"#22", "reserved exception 22"},
    [23] = {"#23", "reserved exception 23"},
    [24] = {"#24", "reserved exception 24"},
    [25] = {"#25", "reserved exception 25"},
    [26] = {"#26", "reserved exception 26"},
    [27] = {"#27", "reserved exception 27"},
    [28] = {"#HV", "hypervisor injection exception"},
    [29] = {"#VC", "VMM communication exception"},
    [30] = {"#SX", "security exception"},
    [31] = {"#31", "reserved exception 31"},
};

extern const struct ex_table_entry __ex_table_start[], __ex_table_end[];

static trap_user_fault_fn user_fault_handler;
static uint64_t nmi_count;
static uint64_t nmi_last_report_ns; /* clock_ns() of the last report, 0: none */
static bool nmi_report_pending;     /* NMIs came since the last report */
static trap_kernel_breakpoint_fn kernel_breakpoint_handler;
static trap_kernel_fault_fn kernel_fault_handler;

const char *trap_name_of(unsigned vector)
{
	return vector < TRAP_EXCEPTION_COUNT ? exception_names[vector].name : "interrupt";
}

const char *trap_mnemonic_of(unsigned vector)
{
	return vector < TRAP_EXCEPTION_COUNT ? exception_names[vector].mnemonic : "IRQ";
}

trap_user_fault_fn trap_set_user_fault_handler(trap_user_fault_fn handler)
{
	return __atomic_exchange_n(&user_fault_handler, handler, __ATOMIC_SEQ_CST);
}

trap_kernel_breakpoint_fn trap_set_kernel_breakpoint_handler(trap_kernel_breakpoint_fn handler)
{
	return __atomic_exchange_n(&kernel_breakpoint_handler, handler, __ATOMIC_SEQ_CST);
}

trap_kernel_fault_fn trap_set_kernel_fault_handler(trap_kernel_fault_fn handler)
{
	return __atomic_exchange_n(&kernel_fault_handler, handler, __ATOMIC_ACQ_REL);
}

static bool handle_kernel_fault(struct trap_frame *frame, uint64_t cr2)
{
	trap_kernel_fault_fn handler = __atomic_load_n(&kernel_fault_handler, __ATOMIC_ACQUIRE);
	return handler && handler(frame, cr2);
}

static bool handle_kernel_breakpoint(struct trap_frame *frame)
{
	trap_kernel_breakpoint_fn handler =
	    __atomic_load_n(&kernel_breakpoint_handler, __ATOMIC_ACQUIRE);
	return frame->vector == TRAP_BREAKPOINT && handler && handler(frame);
}

static const struct ex_table_entry *find_ex_table_entry(uint64_t rip)
{
	for (const struct ex_table_entry *entry = __ex_table_start; entry < __ex_table_end;
	     entry++) {
		if (entry->fault_rip == rip)
			return entry;
	}
	return NULL;
}

uint64_t trap_find_fixup(uint64_t rip)
{
	const struct ex_table_entry *entry = find_ex_table_entry(rip);
	return entry ? entry->fixup_rip : 0;
}

int trap_read_kernel_word(uint64_t address, uint64_t *value)
{
	int error = -EFAULT;
	uint64_t word = 0;
	__asm__ volatile("1: movq (%[address]), %[word]\n\t"
			 "xorl %[error], %[error]\n"
			 "2:\n\t" EX_TABLE_ENTRY(1b, 2b)
			 : [word] "+r"(word), [error] "+r"(error)
			 : [address] "r"(address)
			 : "memory");
	*value = word;
	return error;
}

/* A fault is a stack overflow when CR2 lies in a guard: either the #PF itself,
 * or the #DF that follows when the CPU cannot push the #PF frame. */
static bool is_stack_overflow(const struct trap_frame *frame, uint64_t cr2)
{
	if (frame->vector != TRAP_PAGE_FAULT && frame->vector != TRAP_DOUBLE_FAULT)
		return false;
	return kstack_is_guard(cr2) || kstack_is_guard(frame->rsp);
}

static void print_symbolized(const char *label, uint64_t selector, uint64_t address)
{
	uint64_t offset;
	const char *name = ksym_lookup(address, &offset);
	if (name)
		console_print("  %s: %04lx:%016lx %s+%#lx\n", label, selector, address, name,
			      offset);
	else
		console_print("  %s: %04lx:%016lx ?\n", label, selector, address);
}

static void print_page_fault(uint64_t error, uint64_t cr2)
{
	const char *access = error & PF_ERROR_FETCH   ? "instruction fetch"
			     : error & PF_ERROR_WRITE ? "write"
						      : "read";
	console_print("  page fault at %#lx: %s of a %s page in %s mode%s%s%s\n", cr2, access,
		      error & PF_ERROR_PRESENT ? "present (protection violation)" : "not-present",
		      error & PF_ERROR_USER ? "user" : "kernel",
		      error & PF_ERROR_RESERVED ? ", reserved bit set in a page-table entry" : "",
		      error & PF_ERROR_PROTECTION_KEY ? ", protection key" : "",
		      error & PF_ERROR_SHADOW_STACK ? ", shadow stack" : "");
}

static void print_registers(const struct trap_frame *f, uint64_t cr2)
{
	print_symbolized("RIP", f->cs, f->rip);
	console_print("  RSP: %04lx:%016lx  RFLAGS: %016lx\n", f->ss, f->rsp, f->rflags);
	console_print("  RAX: %016lx  RBX: %016lx  RCX: %016lx\n", f->rax, f->rbx, f->rcx);
	console_print("  RDX: %016lx  RSI: %016lx  RDI: %016lx\n", f->rdx, f->rsi, f->rdi);
	console_print("  RBP: %016lx  R8:  %016lx  R9:  %016lx\n", f->rbp, f->r8, f->r9);
	console_print("  R10: %016lx  R11: %016lx  R12: %016lx\n", f->r10, f->r11, f->r12);
	console_print("  R13: %016lx  R14: %016lx  R15: %016lx\n", f->r13, f->r14, f->r15);
	console_print("  CR0: %016lx  CR2: %016lx  CR3: %016lx  CR4: %016lx\n", read_cr0(), cr2,
		      read_cr3(), read_cr4());
}

static void print_where(void)
{
	struct cpu *cpu = this_cpu();
	int ist = tss_ist_stack_of(read_frame_pointer());
	console_print("  cpu %u (apic id %u), irq depth %d, preempt count %d%s\n", cpu->id,
		      cpu->apic_id, cpu->irq_depth, cpu->preempt_count,
		      ist ? ", reporting on an IST stack" : "");
}

__attribute__((noreturn)) static void report_exception(const struct trap_frame *frame, uint64_t cr2)
{
	unsigned vector = (unsigned)frame->vector;
	const char *mode = trap_frame_from_user(frame) ? "user" : "kernel";
	bool first;

	if (is_stack_overflow(frame, cr2))
		first = panic_begin("kernel stack overflow: %s (%s, vector %u) in %s mode",
				    trap_name_of(vector), trap_mnemonic_of(vector), vector, mode);
	else
		first = panic_begin("%s (%s, vector %u) in %s mode", trap_name_of(vector),
				    trap_mnemonic_of(vector), vector, mode);
	if (!first)
		panic_end();

	console_print("  error code: %#lx\n", frame->error_code);
	if (vector == TRAP_PAGE_FAULT)
		print_page_fault(frame->error_code, cr2);
	print_registers(frame, cr2);
	print_where();
	if (!trap_frame_from_user(frame))
		panic_print_backtrace_from(frame->rip, frame->rsp, frame->rbp, MAX_BACKTRACE);
	panic_end();
}

/* A user-memory copy checked its range first, so a #PF it takes on a kernel
 * address is a kernel bug (a bad kernel buffer, or a pointer that skipped
 * the check), not a bad user pointer. */
static bool fixup_covers(const struct ex_table_entry *entry, const struct trap_frame *frame,
			 uint64_t cr2)
{
	if (entry->kind == EX_TABLE_USER && frame->vector == TRAP_PAGE_FAULT)
		return cr2 < USER_SPACE_END;
	return true;
}

static bool apply_fixup(struct trap_frame *frame, uint64_t cr2)
{
	if (frame->vector != TRAP_PAGE_FAULT && frame->vector != TRAP_GENERAL_PROTECTION)
		return false;
	const struct ex_table_entry *entry = find_ex_table_entry(frame->rip);
	if (!entry || !fixup_covers(entry, frame, cr2))
		return false;
	frame->rip = entry->fixup_rip;
	return true;
}

static void trace_page_fault(const struct trap_frame *frame, uint64_t cr2)
{
	if (!tracepoint_on())
		return;
	struct thread *current = thread_current();
	struct trace_page_fault event = {.address = cr2,
					 .ip = frame->rip,
					 .error_code = (uint32_t)frame->error_code,
					 .tid = current ? (int32_t)thread_id(current) : 0};
	tracepoint_write(TRACE_PAGE_FAULT, &event, sizeof event);
}

/* #DF and #MC: the machine is in trouble, whoever was running. */
static bool is_machine_failure(uint64_t vector)
{
	return vector == TRAP_DOUBLE_FAULT || vector == TRAP_MACHINE_CHECK;
}

static void handle_exception(struct trap_frame *frame, uint64_t cr2)
{
	if (is_machine_failure(frame->vector))
		report_exception(frame, cr2);
	if (trap_frame_from_user(frame)) {
		trap_user_fault_fn handler = __atomic_load_n(&user_fault_handler, __ATOMIC_ACQUIRE);
		uint64_t fault_address = frame->vector == TRAP_PAGE_FAULT ? cr2 : 0;
		if (frame->vector == TRAP_PAGE_FAULT)
			trace_page_fault(frame, cr2);
		if (handler && handler(frame, fault_address))
			return;
	} else if (apply_fixup(frame, cr2) || handle_kernel_breakpoint(frame) ||
		   handle_kernel_fault(frame, cr2)) {
		return;
	}
	report_exception(frame, cr2);
}

/* The trap.entry join point: one exception, with CR2 as read on entry (the
 * fault address of a #PF).  Not an API: trap_dispatch is its only caller. */
JOINPOINT_DEFINE_VOID_AS(trap, entry, trap_handle_exception, unsigned, vector, struct trap_frame *,
			 frame, uint64_t, cr2)
{
	handle_exception(frame, cr2);
}

/* Exceptions that bypass trap.entry: #BP, because text patching may put an
 * int3 on a join point's site (trap.entry's own included), and #DF and #MC,
 * which can arrive in the middle of a dispatch or on a broken stack (an NMI
 * is counted before this is asked). */
static bool bypasses_joinpoint(uint64_t vector)
{
	return vector == TRAP_BREAKPOINT || vector == TRAP_DOUBLE_FAULT ||
	       vector == TRAP_MACHINE_CHECK;
}

uint64_t trap_nmi_count(void)
{
	return __atomic_load_n(&nmi_count, __ATOMIC_RELAXED);
}

/* The console takes its lock with interrupts off, so code that ran with
 * interrupts on holds no console lock on this CPU: only a trap that found
 * them on (or found user mode) may print without risking a deadlock. */
static bool may_print_from(const struct trap_frame *frame)
{
	return trap_frame_from_user(frame) || (frame->rflags & RFLAGS_IF);
}

/* At most one report per NMI_REPORT_INTERVAL_NS, across CPUs. */
static bool nmi_report_due(void)
{
	uint64_t now = clock_ns() | 1; /* never 0, which means "no report yet" */
	uint64_t last = __atomic_load_n(&nmi_last_report_ns, __ATOMIC_RELAXED);
	if (last && now - last < NMI_REPORT_INTERVAL_NS)
		return false;
	return __atomic_compare_exchange_n(&nmi_last_report_ns, &last, now, false, __ATOMIC_RELAXED,
					   __ATOMIC_RELAXED);
}

static void report_pending_nmis(void)
{
	if (!__atomic_load_n(&nmi_report_pending, __ATOMIC_RELAXED) || !nmi_report_due())
		return;
	if (__atomic_exchange_n(&nmi_report_pending, false, __ATOMIC_RELAXED))
		pr_warn("NMI received (unknown reason), %lu so far\n",
			(unsigned long)trap_nmi_count());
}

/* Nothing in the kernel raises NMIs on purpose (no watchdog, no NMI IPIs), so
 * one is a platform event the kernel cannot attribute: count it and go on.
 * It never prints: printing goes through a join point (whose patching may
 * plant an int3, whose return would unblock NMIs on this NMI's stack); the
 * next interrupt that finds interrupts on reports it. */
static void handle_nmi(void)
{
	__atomic_add_fetch(&nmi_count, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&nmi_report_pending, true, __ATOMIC_RELAXED);
}

/* Called from isr.S for every vector, interrupts off. */
void trap_dispatch(struct trap_frame *frame);
void trap_dispatch(struct trap_frame *frame)
{
	if (frame->vector >= TRAP_EXCEPTION_COUNT) {
		irq_dispatch(frame);
		if (__builtin_expect(__atomic_load_n(&nmi_report_pending, __ATOMIC_RELAXED), 0) &&
		    may_print_from(frame))
			report_pending_nmis();
		return;
	}
	uint64_t cr2 = read_cr2();
	if (frame->vector == TRAP_NMI)
		handle_nmi();
	else if (bypasses_joinpoint(frame->vector))
		handle_exception(frame, cr2);
	else
		trap_handle_exception((unsigned)frame->vector, frame, cr2);
}
