/*
 * The monotonic clock.  The TSC is counted against PIT channel 2 for 10 ms,
 * repeated and the fastest-settling (smallest) estimate kept, so an emulator
 * or SMI stealing time during one window does not skew it.  After that,
 * clock_ns() is one RDTSC and a multiply: cycles * mult >> 32.
 *
 * The TSC is assumed invariant (constant rate, synchronised across CPUs), as on
 * every x86_64 CPU of the last decade; clock_init reports when CPUID says
 * otherwise.
 */
#include "time/time.h"

#include <stdbool.h>

#include "arch/x86_64/cpu.h"
#include "console/console.h"

#define PIT_HZ 1193182ULL
#define PIT_CHANNEL2 0x42
#define PIT_COMMAND 0x43
#define PIT_GATE 0x61
#define CALIBRATION_MS 10
#define CALIBRATION_ROUNDS 3

static uint64_t tsc_hz;
static uint64_t tsc_at_boot;
static uint64_t ns_mult; /* nanoseconds per cycle, 32.32 fixed point */

uint64_t clock_tsc_hz(void)
{
	return tsc_hz;
}

uint64_t clock_tsc_to_ns(uint64_t cycles)
{
	return (uint64_t)(((unsigned __int128)cycles * ns_mult) >> 32);
}

uint64_t clock_ns(void)
{
	if (!tsc_hz)
		return 0;
	return clock_tsc_to_ns(rdtsc() - tsc_at_boot);
}

/* Counts TSC cycles during one PIT one-shot of CALIBRATION_MS. */
static uint64_t tsc_cycles_in_pit_window(void)
{
	uint16_t count = (uint16_t)(PIT_HZ * CALIBRATION_MS / 1000);

	outb(PIT_GATE, (inb(PIT_GATE) & ~0x02) | 0x01); /* gate on, speaker off */
	outb(PIT_COMMAND, 0xb0);                          /* ch2, lo/hi, mode 0 */
	outb(PIT_CHANNEL2, count & 0xff);
	outb(PIT_CHANNEL2, count >> 8);
	outb(PIT_GATE, inb(PIT_GATE) & ~0x01); /* restart the count */
	outb(PIT_GATE, inb(PIT_GATE) | 0x01);

	uint64_t start = rdtsc();
	while (!(inb(PIT_GATE) & 0x20))
		;
	return rdtsc() - start;
}

static bool tsc_is_invariant(void)
{
	uint32_t regs[4];
	cpuid(0x80000000, 0, regs);
	if (regs[0] < 0x80000007)
		return false;
	cpuid(0x80000007, 0, regs);
	return regs[3] & (1u << 8);
}

void clock_init(void)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < CALIBRATION_ROUNDS; i++) {
		uint64_t cycles = tsc_cycles_in_pit_window();
		if (cycles < best)
			best = cycles;
	}
	tsc_at_boot = rdtsc();
	ns_mult = (NSEC_PER_SEC << 32) / (best * 1000 / CALIBRATION_MS);
	tsc_hz = best * 1000 / CALIBRATION_MS;
	pr_info("time: TSC %lu.%03lu MHz (PIT), %s\n", tsc_hz / 1000000, tsc_hz / 1000 % 1000,
		tsc_is_invariant() ? "invariant" : "not marked invariant");
}

void clock_delay_ns(uint64_t ns)
{
	uint64_t end = clock_ns() + ns;
	while (clock_ns() < end)
		cpu_relax();
}
