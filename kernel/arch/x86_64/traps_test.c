/*
 * The traps suite: the entry path seen from a handler (a software "int $n"
 * must arrive with the frame the CPU and isr.S built, and changes to the
 * frame must reach the interrupted code), the dispatch bookkeeping around a
 * handler (counts, EOI, exit hook, irq_depth), and the exception-table
 * fix-ups for #PF and #GP.  Hooks the test replaces are restored, and while
 * they are replaced interrupts stay off on this CPU; calls from other CPUs are
 * passed on to the previous hook.
 */
#include <stdint.h>

#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/gdt.h"
#include "arch/x86_64/traps.h"
#include "cpu/percpu.h"
#include "irq/irq.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "time/time.h"

#define MAGIC_RBX     0x1111222233334444ULL
#define MAGIC_R12     0x5555666677778888ULL
#define NON_CANONICAL 0x8000000000000000ULL
#define NULL_FIELD    0x18

/* "int" takes an immediate, so the test vector is one of these. */
static const unsigned candidate_vectors[] = {0xe0, 0xe1, 0xe2, 0xe3};

struct observation {
	struct trap_frame frame;
	uint64_t rflags_inside;
	int irq_depth_inside;
	unsigned handler_calls;
	unsigned eoi_calls, eoi_vector;
	unsigned exit_calls, exit_vector;
	int exit_irq_depth;
};

static struct observation seen;
static unsigned test_vector;
static irq_eoi_fn previous_eoi;
static irq_exit_hook_fn previous_exit_hook;

/* Raises test_vector with RBX and R12 set to known values; returns the RAX
 * the handler left in the frame and the address right after the "int". */
static uint64_t raise_test_vector(uint64_t *return_address)
{
	uint64_t rax = 0, after = 0;
#define RAISE(n)                                                      \
	__asm__ volatile("movabs %[rbx], %%rbx\n\t"                   \
			 "movabs %[r12], %%r12\n\t"                   \
			 "int $" #n "\n"                              \
			 "1:\n\t"                                     \
			 "leaq 1b(%%rip), %[after]"                   \
			 : "+a"(rax), [after] "=r"(after)             \
			 : [rbx] "i"(MAGIC_RBX), [r12] "i"(MAGIC_R12) \
			 : "rbx", "r12", "memory")
	switch (test_vector) {
	case 0xe0: RAISE(0xe0); break;
	case 0xe1: RAISE(0xe1); break;
	case 0xe2: RAISE(0xe2); break;
	case 0xe3: RAISE(0xe3); break;
	}
#undef RAISE
	*return_address = after;
	return rax;
}

static void record_handler(struct trap_frame *frame, void *ctx)
{
	seen.frame = *frame;
	seen.rflags_inside = read_rflags();
	seen.irq_depth_inside = this_cpu()->irq_depth;
	seen.handler_calls++;
	frame->rax = (uint64_t)ctx;
}

static void record_eoi(unsigned vector)
{
	if (vector != test_vector) {
		if (previous_eoi)
			previous_eoi(vector);
		return;
	}
	seen.eoi_calls++;
	seen.eoi_vector = vector;
}

static void record_exit(struct trap_frame *frame)
{
	if (frame->vector != test_vector) {
		if (previous_exit_hook)
			previous_exit_hook(frame);
		return;
	}
	seen.exit_calls++;
	seen.exit_vector = (unsigned)frame->vector;
	seen.exit_irq_depth = this_cpu()->irq_depth;
}

/* Claims a candidate vector for record_handler; returns 0 or skips the case. */
static int claim_test_vector(struct ktest *t, void *ctx)
{
	for (unsigned i = 0; i < sizeof candidate_vectors / sizeof candidate_vectors[0]; i++) {
		if (irq_register(candidate_vectors[i], record_handler, ctx, "traps test") == 0) {
			test_vector = candidate_vectors[i];
			return 0;
		}
	}
	ktest_skip(t, "every candidate test vector is taken");
	return -EBUSY;
}

static uint64_t begin_hooked(void)
{
	uint64_t flags = irq_save();
	memset(&seen, 0, sizeof seen);
	previous_eoi = irq_set_eoi(record_eoi);
	previous_exit_hook = irq_set_exit_hook(record_exit);
	return flags;
}

static void end_hooked(uint64_t flags)
{
	irq_set_eoi(previous_eoi);
	irq_set_exit_hook(previous_exit_hook);
	irq_restore(flags);
}

static void software_vector_reaches_handler_with_its_frame(struct ktest *t)
{
	if (claim_test_vector(t, (void *)0xfeed) < 0)
		return;
	uint64_t flags = begin_hooked();
	uint64_t rsp_before = read_frame_pointer(), after;
	uint64_t rax = raise_test_vector(&after);
	end_hooked(flags);
	EXPECT_EQ(t, irq_unregister(test_vector, record_handler), 0);

	ASSERT_EQ(t, seen.handler_calls, 1);
	EXPECT_EQ(t, seen.frame.vector, test_vector);
	EXPECT_EQ(t, seen.frame.error_code, 0);
	EXPECT_EQ(t, seen.frame.rip, after);
	EXPECT_EQ(t, seen.frame.cs, GDT_KERNEL_CODE);
	EXPECT_EQ(t, seen.frame.rbx, MAGIC_RBX);
	EXPECT_EQ(t, seen.frame.r12, MAGIC_R12);
	EXPECT_TRUE(t, seen.frame.rsp < rsp_before && rsp_before - seen.frame.rsp < 4096);
	EXPECT_FALSE(t, seen.rflags_inside & RFLAGS_IF);
	EXPECT_EQ(t, seen.irq_depth_inside, 1);
	EXPECT_EQ(t, rax, 0xfeed); /* the handler's change to the frame came back */
}

static void dispatch_counts_acknowledges_and_calls_exit_hook(struct ktest *t)
{
	if (claim_test_vector(t, NULL) < 0)
		return;
	uint64_t count = irq_get_count(test_vector);
	uint64_t interrupts = this_cpu()->stats.interrupts;
	uint64_t flags = begin_hooked(), after;
	raise_test_vector(&after);
	end_hooked(flags);
	EXPECT_EQ(t, irq_unregister(test_vector, record_handler), 0);

	EXPECT_EQ(t, irq_get_count(test_vector), count + 1);
	EXPECT_TRUE(t, this_cpu()->stats.interrupts >= interrupts + 1);
	EXPECT_EQ(t, seen.eoi_calls, 1);
	EXPECT_EQ(t, seen.eoi_vector, test_vector);
	EXPECT_EQ(t, seen.exit_calls, 1);
	EXPECT_EQ(t, seen.exit_vector, test_vector);
	EXPECT_EQ(t, seen.exit_irq_depth, 0); /* the hook runs once the interrupt is over */
	EXPECT_EQ(t, this_cpu()->irq_depth, 0);
}

static void unhandled_vector_is_counted_not_fatal(struct ktest *t)
{
	if (claim_test_vector(t, NULL) < 0)
		return;
	EXPECT_EQ(t, irq_unregister(test_vector, record_handler), 0);
	uint64_t count = irq_get_count(test_vector);
	uint64_t flags = begin_hooked(), after;
	raise_test_vector(&after);
	end_hooked(flags);

	EXPECT_EQ(t, seen.handler_calls, 0);
	EXPECT_EQ(t, irq_get_count(test_vector), count + 1);
	EXPECT_EQ(t, seen.eoi_calls, 1);
}

static void spurious_vector_is_counted_without_eoi(struct ktest *t)
{
	uint64_t count = irq_get_count(IRQ_SPURIOUS_VECTOR);
	test_vector = IRQ_SPURIOUS_VECTOR;
	uint64_t flags = begin_hooked();
	__asm__ volatile("int $0xff" : : : "memory");
	end_hooked(flags);

	EXPECT_EQ(t, irq_get_count(IRQ_SPURIOUS_VECTOR), count + 1);
	EXPECT_EQ(t, seen.eoi_calls, 0);
	EXPECT_EQ(t, seen.exit_calls, 0);
}

static void exception_table_recovers_from_page_fault(struct ktest *t)
{
	if (vm_translate(vm_kernel_space(), NULL_FIELD, NULL, NULL) != -ENOENT) {
		ktest_skip(t, "the page at address 0 is mapped");
		return;
	}
	uint64_t value = 1;
	EXPECT_EQ(t, trap_read_kernel_word(NULL_FIELD, &value), -EFAULT);
	EXPECT_EQ(t, value, 0);
}

static void exception_table_recovers_from_general_protection(struct ktest *t)
{
	uint64_t value = 1;
	EXPECT_EQ(t, trap_read_kernel_word(NON_CANONICAL, &value), -EFAULT);
}

static unsigned kernel_faults_reported;
static unsigned fault_test_cpu;
static trap_kernel_fault_fn previous_kernel_fault_handler;

/* Stands in for the aspect guard on the test's CPU: counts the fault and
 * resumes after it. */
static bool resume_at_fixup(struct trap_frame *frame, uint64_t cr2)
{
	if (this_cpu_id() != fault_test_cpu)
		return previous_kernel_fault_handler && previous_kernel_fault_handler(frame, cr2);
	kernel_faults_reported++;
	frame->rip = trap_find_fixup(frame->rip);
	return frame->rip != 0;
}

/* A read listed as a user-memory copy's: -EFAULT when the exception table
 * took its fault. */
static int read_as_user_copy(uint64_t address)
{
	int error = -EFAULT;
	uint64_t word = 0;
	__asm__ volatile("1: movq (%[address]), %[word]\n\t"
			 "xorl %[error], %[error]\n"
			 "2:\n\t" EX_TABLE_USER_ENTRY(1b, 2b)
			 : [word] "+r"(word), [error] "+r"(error)
			 : [address] "r"(address)
			 : "memory");
	return error;
}

/* A user-copy instruction's fix-up takes a #PF on a user address only; one on
 * a kernel address reaches the kernel fault handler (else a panic report). */
static void user_copy_fixup_covers_only_user_addresses(struct ktest *t)
{
	uint64_t kernel_hole = VM_MMIO_BASE + VM_MMIO_SIZE - PAGE_SIZE;
	if (vm_translate(vm_kernel_space(), NULL_FIELD, NULL, NULL) != -ENOENT ||
	    vm_translate(vm_kernel_space(), kernel_hole, NULL, NULL) != -ENOENT) {
		ktest_skip(t, "a probed page is mapped");
		return;
	}
	uint64_t flags = irq_save();
	fault_test_cpu = this_cpu_id();
	previous_kernel_fault_handler = trap_set_kernel_fault_handler(resume_at_fixup);
	kernel_faults_reported = 0;
	int user_result = read_as_user_copy(NULL_FIELD);
	unsigned after_user = kernel_faults_reported;
	int kernel_result = read_as_user_copy(kernel_hole);
	unsigned after_kernel = kernel_faults_reported;
	trap_set_kernel_fault_handler(previous_kernel_fault_handler);
	irq_restore(flags);
	EXPECT_EQ(t, user_result, -EFAULT);
	EXPECT_EQ(t, after_user, 0);
	EXPECT_EQ(t, kernel_result, -EFAULT);
	EXPECT_EQ(t, after_kernel, 1);
}

static void read_kernel_word_reads_mapped_memory(struct ktest *t)
{
	static const uint64_t word = 0x0123456789abcdefULL;
	uint64_t value = 0;
	EXPECT_EQ(t, trap_read_kernel_word((uint64_t)&word, &value), 0);
	EXPECT_EQ(t, value, word);
	EXPECT_EQ(t, trap_find_fixup((uint64_t)read_kernel_word_reads_mapped_memory), 0);
}

static void exceptions_have_names(struct ktest *t)
{
	EXPECT_EQ(t, strcmp(trap_mnemonic_of(TRAP_PAGE_FAULT), "#PF"), 0);
	EXPECT_EQ(t, strcmp(trap_name_of(TRAP_PAGE_FAULT), "page fault"), 0);
	EXPECT_EQ(t, strcmp(trap_mnemonic_of(TRAP_DOUBLE_FAULT), "#DF"), 0);
	EXPECT_EQ(t, strcmp(trap_name_of(TRAP_DIVIDE_ERROR), "divide error"), 0);
	for (unsigned vector = 0; vector < TRAP_EXCEPTION_COUNT; vector++)
		EXPECT_TRUE(t, trap_name_of(vector) && trap_mnemonic_of(vector));
	EXPECT_EQ(t, strcmp(trap_mnemonic_of(64), "IRQ"), 0);
}

static void cpu_tables_are_loaded(struct ktest *t)
{
	struct {
		uint16_t limit;
		uint64_t base;
	} __attribute__((packed)) gdtr;
	uint16_t task_register, code_segment;

	__asm__ volatile("sgdt %0" : "=m"(gdtr));
	__asm__ volatile("str %0" : "=r"(task_register));
	__asm__ volatile("mov %%cs, %0" : "=r"(code_segment));
	EXPECT_EQ(t, gdtr.limit, 7 * 8 - 1);
	EXPECT_EQ(t, task_register, GDT_TSS);
	EXPECT_EQ(t, code_segment, GDT_KERNEL_CODE);
	EXPECT_TRUE(t, this_cpu()->arch != NULL);
	EXPECT_EQ(t, tss_ist_stack_of(read_frame_pointer()), 0);
}

static bool never_handles(struct trap_frame *frame, uint64_t fault_address)
{
	return false;
}

static void user_fault_handler_swaps(struct ktest *t)
{
	trap_user_fault_fn previous = trap_set_user_fault_handler(never_handles);
	EXPECT_TRUE(t, trap_set_user_fault_handler(previous) == never_handles);
}

/* Waits for the NMI count to pass before; the bound only keeps a lost NMI
 * from hanging the suite. */
static bool nmi_counted_past(void *before)
{
	return trap_nmi_count() != *(const uint64_t *)before;
}

static bool nmi_count_rises_past(uint64_t before)
{
	return ktest_spin_until(nmi_counted_past, &before, 10 * NSEC_PER_SEC);
}

/* An NMI in kernel mode (this CPU's own, through the LAPIC) is counted and
 * the interrupted code goes on with its registers, with interrupts on and
 * with them off. */
static void nmi_in_kernel_is_counted_and_resumed(struct ktest *t)
{
	uint64_t before = trap_nmi_count();
	lapic_send_nmi(this_cpu()->apic_id);
	EXPECT_TRUE(t, nmi_count_rises_past(before));

	uint64_t flags = irq_save();
	before = trap_nmi_count();
	lapic_send_nmi(this_cpu()->apic_id);
	EXPECT_TRUE(t, nmi_count_rises_past(before));
	irq_restore(flags);
}

KTEST_SUITE(traps, KTEST_CASE(software_vector_reaches_handler_with_its_frame),
	    KTEST_CASE(dispatch_counts_acknowledges_and_calls_exit_hook),
	    KTEST_CASE(unhandled_vector_is_counted_not_fatal),
	    KTEST_CASE(spurious_vector_is_counted_without_eoi),
	    KTEST_CASE(exception_table_recovers_from_page_fault),
	    KTEST_CASE(exception_table_recovers_from_general_protection),
	    KTEST_CASE(user_copy_fixup_covers_only_user_addresses),
	    KTEST_CASE(read_kernel_word_reads_mapped_memory), KTEST_CASE(exceptions_have_names),
	    KTEST_CASE(cpu_tables_are_loaded), KTEST_CASE(user_fault_handler_swaps),
	    KTEST_CASE(nmi_in_kernel_is_counted_and_resumed));
