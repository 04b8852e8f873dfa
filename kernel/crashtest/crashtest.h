/*
 * Deliberate crashes, to prove the panic report names what went wrong.  The
 * command line picks one (crashtest=page_fault|divide_error|invalid_opcode|
 * stack_overflow|assert); after boot, crashtest_run calls a noinline function
 * named for the crash (crashtest_fault_page, crashtest_divide_by_zero, ...),
 * which faults, so the report's RIP and first backtrace line must name it.
 *
 *     crashtest_run();               // from kernel_entry, after boot
 *     // qemu ... -append "crashtest=page_fault exit=qemu"  → exit status 37
 *     // serial log: "RIP: 0008:ffffffff8010.... crashtest_fault_page+0x.."
 */
#ifndef KERNEL_CRASHTEST_CRASHTEST_H
#define KERNEL_CRASHTEST_CRASHTEST_H

/* Runs the crash the command line asked for (and does not return), or
 * returns at once when there is none. */
#ifdef KERNEL_TESTS
void crashtest_run(void);
#else
static inline void crashtest_run(void)
{
} /* only the test kernel crashes on purpose */
#endif

#endif
