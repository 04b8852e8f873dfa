/*
 * panic(): say what happened and stop.  Interrupts go off first, the console
 * stops taking its lock (the lock holder may be the reason we are here), and a
 * second panic on the same CPU while reporting the first only prints its
 * message.  How the machine stops is chosen on the command line (panic=):
 * halt, or leave QEMU through isa-debug-exit so a test sees the panic at once.
 */
#include "panic/panic.h"

#include <stdarg.h>

#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "power/power.h"
#include "lib/format.h"
#include "panic/ksyms.h"

#define MAX_BACKTRACE 32

static volatile int panicking;

static int kernel_text_address(uint64_t address)
{
	extern char __image_start[], __image_end[];
	return address >= (uint64_t)__image_start && address < (uint64_t)__image_end;
}

void panic_print_backtrace(uint64_t rbp, int max_frames)
{
	console_print("Backtrace:\n");
	for (int i = 0; i < max_frames && rbp; i++) {
		if (rbp & 7 || rbp < 0xffff800000000000UL)
			break;
		uint64_t *frame = (uint64_t *)rbp;
		uint64_t return_address = frame[1];
		if (!kernel_text_address(return_address))
			break;
		uint64_t offset;
		const char *name = ksym_lookup(return_address - 1, &offset);
		if (name)
			console_print("  [<%016lx>] %s+%#lx\n", return_address, name, offset + 1);
		else
			console_print("  [<%016lx>] ?\n", return_address);
		rbp = frame[0];
	}
}

void panic(const char *format, ...)
{
	irq_disable();
	int depth = __atomic_fetch_add(&panicking, 1, __ATOMIC_SEQ_CST);
	console_enter_panic_mode();

	char message[256];
	va_list args;
	va_start(args, format);
	vsnprintf(message, sizeof message, format, args);
	va_end(args);

	console_print("\n*** KERNEL PANIC on cpu %u: %s\n", this_cpu_id(), message);
	if (depth == 0)
		panic_print_backtrace(read_frame_pointer(), MAX_BACKTRACE);
	console_print("*** end of panic report\n");
	power_stop(POWER_PANIC);
}
