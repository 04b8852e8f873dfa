/*
 * power_stop(): leave QEMU through isa-debug-exit (port 0xf4) when the command
 * line asks for it (exit=qemu, set by the test runner), else halt forever.
 * Writing to an absent port is harmless on real machines, but we still only do
 * it when asked.
 */
#include "power/power.h"

#include <stdbool.h>

#include "arch/x86_64/cpu.h"
#include "boot/cmdline.h"
#include "lib/string.h"

#define DEBUG_EXIT_PORT 0xf4

static bool exit_through_qemu;

static int set_exit(const char *value)
{
	if (!value || strcmp(value, "qemu") == 0) {
		exit_through_qemu = true;
		return 0;
	}
	if (strcmp(value, "halt") == 0) {
		exit_through_qemu = false;
		return 0;
	}
	return -1;
}
KERNEL_PARAM(exit, set_exit, "qemu|halt: how to stop after tests or a panic");

void power_stop(enum power_reason reason)
{
	irq_disable();
	if (exit_through_qemu)
		outl(DEBUG_EXIT_PORT, reason);
	for (;;)
		cpu_halt();
}
