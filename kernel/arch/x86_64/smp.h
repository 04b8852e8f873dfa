/*
 * Starting the application processors the MADT lists: INIT, then STARTUP
 * twice, into a real-mode trampoline copied below 1 MiB, one CPU at a time.
 * Each new CPU loads its own GDT/TSS and the IDT, enables its LAPIC and
 * tick, reports its TSC offset from the boot CPU and enters the scheduler.
 *
 *     smp_init();               // IPI vectors, boot CPU online
 *     arch_smp_start_cpus();    // every other CPU; returns how many came up
 *     pr_info("%u CPUs\n", smp_online_count());
 */
#ifndef ARCH_X86_64_SMP_H
#define ARCH_X86_64_SMP_H

/* Starts every enabled CPU of the MADT (up to maxcpus= on the command line
 * and MAX_CPUS), waiting for each to come online; CPUs that do not answer
 * within a bounded time are reported and skipped.  Boot CPU, once, after
 * smp_init, with interrupts on.  Returns the number of CPUs started. */
unsigned arch_smp_start_cpus(void);

#endif
