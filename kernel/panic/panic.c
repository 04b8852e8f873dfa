/*
 * panic(): say what happened and stop.  Interrupts go off first, the console
 * stops taking its lock (the lock holder may be the reason we are here), and a
 * second panic on the same CPU while reporting the first only prints its
 * message.  How the machine stops is chosen on the command line (panic=):
 * halt, or leave QEMU through isa-debug-exit so a test sees the panic at once.
 *
 * The backtrace reads each frame record through trap_read_kernel_word, so a
 * corrupt frame pointer ends the walk instead of faulting inside the report.
 */
#include "panic/panic.h"

#include <stdarg.h>

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/traps.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "lib/format.h"
#include "panic/ksyms.h"
#include "power/power.h"
#include "sched/sched.h"

#define MAX_BACKTRACE 32
#define KERNEL_HALF   0xffff800000000000UL

static volatile int panicking;

static int kernel_text_address(uint64_t address)
{
	extern char __image_start[], __image_end[];
	return address >= (uint64_t)__image_start && address < (uint64_t)__image_end;
}

/* Prints one backtrace line; lookup_address is where to look the symbol up
 * (a return address minus one lies in the calling instruction). */
static void print_frame_line(uint64_t address, uint64_t lookup_address)
{
	uint64_t offset;
	const char *name = ksym_lookup(lookup_address, &offset);
	if (name)
		console_print("  [<%016lx>] %s+%#lx\n", address, name,
			      offset + (address - lookup_address));
	else
		console_print("  [<%016lx>] ?\n", address);
}

static void walk_frames(uint64_t rbp, int max_frames)
{
	for (int i = 0; i < max_frames && rbp; i++) {
		uint64_t next, return_address;
		if (rbp & 7 || rbp < KERNEL_HALF)
			break;
		if (trap_read_kernel_word(rbp, &next) ||
		    trap_read_kernel_word(rbp + 8, &return_address))
			break;
		if (!kernel_text_address(return_address))
			break;
		print_frame_line(return_address, return_address - 1);
		rbp = next;
	}
}

void panic_print_backtrace(uint64_t rbp, int max_frames)
{
	console_print("Backtrace:\n");
	walk_frames(rbp, max_frames);
}

/* Where the return address of the function containing rip sits when that
 * function has not set up its frame record: at a leaf function without one,
 * or at its first two instructions ("push %rbp; mov %rsp, %rbp"), RBP still
 * belongs to the caller and a walk from it would skip the caller.  Returns
 * the stack address holding the return address, or 0 when RBP is the
 * function's own (the walk is then complete). */
static uint64_t frameless_return_slot(uint64_t rip, uint64_t rsp)
{
	uint64_t offset, code;
	if (!ksym_lookup(rip, &offset) || trap_read_kernel_word(rip - offset, &code))
		return 0;
	bool pushes_rbp = (code & 0xff) == 0x55;
	bool moves_rsp = ((code >> 8) & 0xffffff) == 0xe58948;
	if (!pushes_rbp || !moves_rsp)
		return rsp; /* no frame record at all: a leaf function */
	if (offset == 0)
		return rsp;
	if (offset == 1)
		return rsp + 8;
	return 0;
}

void panic_print_backtrace_from(uint64_t rip, uint64_t rsp, uint64_t rbp, int max_frames)
{
	console_print("Backtrace:\n");
	print_frame_line(rip, rip);
	uint64_t slot = frameless_return_slot(rip, rsp), return_address;
	if (slot && !trap_read_kernel_word(slot, &return_address) &&
	    kernel_text_address(return_address)) {
		print_frame_line(return_address, return_address - 1);
		max_frames--;
	}
	walk_frames(rbp, max_frames - 1);
}

static void print_current_thread(void)
{
	struct thread *thread = this_cpu()->current;
	if (thread)
		console_print("  thread: '%s' (id %lu)\n", thread_name(thread), thread_id(thread));
	else
		console_print("  thread: none (boot or idle context)\n");
}

static bool vpanic_begin(const char *format, va_list args)
{
	irq_disable();
	int depth = __atomic_fetch_add(&panicking, 1, __ATOMIC_SEQ_CST);
	console_enter_panic_mode();

	char message[256];
	vsnprintf(message, sizeof message, format, args);
	console_print("\n*** KERNEL PANIC on cpu %u: %s\n", this_cpu_id(), message);
	if (depth == 0)
		print_current_thread();
	return depth == 0;
}

bool panic_begin(const char *format, ...)
{
	va_list args;
	va_start(args, format);
	bool first = vpanic_begin(format, args);
	va_end(args);
	return first;
}

void panic_end(void)
{
	console_print("*** end of panic report\n");
	power_stop(POWER_PANIC);
}

void panic(const char *format, ...)
{
	va_list args;
	va_start(args, format);
	bool first = vpanic_begin(format, args);
	va_end(args);
	if (first)
		panic_print_backtrace(read_frame_pointer(), MAX_BACKTRACE);
	panic_end();
}
