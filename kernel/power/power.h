/*
 * How the machine stops: after a self-test run, on panic, or on request.  Under
 * QEMU the isa-debug-exit device turns the stop reason into QEMU's exit status
 * ((code << 1) | 1, so never 0); on hardware the CPU halts.
 */
#ifndef KERNEL_POWER_POWER_H
#define KERNEL_POWER_POWER_H

enum power_reason {
	POWER_TESTS_PASSED = 0x10, /* QEMU exits with 33 */
	POWER_TESTS_FAILED = 0x11, /* 35 */
	POWER_PANIC = 0x12,        /* 37 */
	POWER_REQUESTED = 0x13,    /* 39 */
};

__attribute__((noreturn)) void power_stop(enum power_reason reason);

#endif
