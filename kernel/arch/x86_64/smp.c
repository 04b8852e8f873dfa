/*
 * Application processor bring-up.  The boot CPU copies the trampoline
 * (trampoline.S) to a usable page below 1 MiB (the frame allocator never
 * hands out the first MiB, so the page is ours; it is reached through the
 * physmap) and starts the CPUs one at a time, so one parameter block serves
 * them all:
 *
 *   1. sched_prepare_cpu gives the CPU an idle thread, whose stack the CPU
 *      starts on, and a run queue;
 *   2. INIT, 10 ms, STARTUP, and a second STARTUP if the CPU is not alive
 *      after 1 ms (the MP specification's sequence);
 *   3. the CPU announces itself (ap_alive), measures its TSC against the
 *      boot CPU's in a three-round handshake, enables its LAPIC, system
 *      call entry and tick, marks itself online and enters the scheduler's
 *      idle loop.  Anything else a CPU needs set up goes in smp_ap_main.
 *
 * A CPU that is not alive within AP_START_TIMEOUT_NS gets INIT again (parked)
 * and is reported and skipped; its dense index goes to the next CPU.
 */
#include "arch/x86_64/smp.h"

#include "acpi/acpi.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/gdt.h"
#include "arch/x86_64/layout.h"
#include "boot/bootinfo.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "panic/panic.h"
#include "sched/sched.h"
#include "smp/smp.h"
#include "syscall/syscall.h"
#include "time/time.h"

#define AP_START_TIMEOUT_NS  (2 * NSEC_PER_SEC) /* TCG with many vCPUs on few cores is slow */
#define AP_ONLINE_TIMEOUT_NS (5 * NSEC_PER_SEC)
#define TRAMPOLINE_LOWEST    0x1000UL
#define TRAMPOLINE_PREFERRED 0x8000UL
#define LOW_MEMORY_END       0x100000UL
#define EFER_LME             (1U << 8)
#define EFER_NXE             (1U << 11)
#define TSC_ROUNDS           3

struct trampoline_params {
	uint32_t boot_cr3;
	uint32_t efer_bits;
	uint64_t entry;
	uint64_t stack_top;
	uint64_t kernel_cr3;
	uint64_t cpu_index;
};

extern const char smp_trampoline_start[], smp_trampoline_end[], smp_trampoline_params[];
extern char boot_pml4[];
void smp_ap_start64(void);
void smp_ap_main(uint64_t index);

/* The handshake with the CPU being started (one at a time). */
static volatile uint64_t ap_alive;
static struct {
	volatile unsigned stage; /* odd: the new CPU asks; even: the boot CPU answered */
	volatile uint64_t boot_tsc;
	int64_t offset;       /* boot TSC - new CPU's TSC, cycles */
	uint64_t uncertainty; /* half the best round trip */
} tsc_probe;

static unsigned max_cpus = MAX_CPUS;

static int set_maxcpus(const char *value)
{
	unsigned n = 0;
	for (const char *p = value; p && *p; p++) {
		if (*p < '0' || *p > '9' || n > MAX_CPUS)
			return -1;
		n = n * 10 + (unsigned)(*p - '0');
	}
	if (!value || n < 1 || n > MAX_CPUS)
		return -1;
	max_cpus = n;
	return 0;
}
KERNEL_PARAM(maxcpus, set_maxcpus, "1-64: CPUs to run (default: every CPU the MADT lists)");

/* ---- The trampoline page ---------------------------------------------------- */

/* A page below 1 MiB inside a usable region, 0x8000 when possible; 0 if none. */
static uint64_t find_trampoline_page(void)
{
	const struct boot_info *boot = bootinfo();
	uint64_t found = 0;
	for (unsigned i = 0; i < boot->region_count; i++) {
		const struct boot_region *r = &boot->regions[i];
		if (r->type != BOOT_REGION_USABLE)
			continue;
		uint64_t first = (r->base + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
		if (first < TRAMPOLINE_LOWEST)
			first = TRAMPOLINE_LOWEST;
		uint64_t end = r->base + r->length;
		if (end > LOW_MEMORY_END)
			end = LOW_MEMORY_END;
		if (first <= TRAMPOLINE_PREFERRED && TRAMPOLINE_PREFERRED + PAGE_SIZE <= end)
			return TRAMPOLINE_PREFERRED;
		if (!found && first + PAGE_SIZE <= end)
			found = first;
	}
	return found;
}

static struct trampoline_params *install_trampoline(uint64_t page)
{
	size_t length = (size_t)(smp_trampoline_end - smp_trampoline_start);
	ASSERT(length <= PAGE_SIZE);
	memcpy(phys_to_virt(page), smp_trampoline_start, length);
	struct trampoline_params *params =
	    (void *)((char *)phys_to_virt(page) + (smp_trampoline_params - smp_trampoline_start));
	uint64_t boot_cr3 = (uint64_t)boot_pml4 - KERNEL_VMA;
	uint64_t kernel_cr3 = read_cr3();
	ASSERT(boot_cr3 < (1ULL << 32));
	params->boot_cr3 = (uint32_t)boot_cr3;
	params->efer_bits = (uint32_t)(rdmsr(MSR_EFER) & (EFER_LME | EFER_NXE)) | EFER_LME;
	params->entry = (uint64_t)smp_ap_start64;
	params->kernel_cr3 = kernel_cr3;
	return params;
}

/* ---- TSC offset ------------------------------------------------------------- */

/* New CPU's side: TSC_ROUNDS round trips; keeps the tightest. */
static void tsc_probe_measure(void)
{
	tsc_probe.uncertainty = UINT64_MAX;
	for (unsigned round = 0; round < TSC_ROUNDS; round++) {
		uint64_t before = rdtsc();
		__atomic_store_n(&tsc_probe.stage, 2 * round + 1, __ATOMIC_SEQ_CST);
		while (__atomic_load_n(&tsc_probe.stage, __ATOMIC_ACQUIRE) != 2 * round + 2)
			cpu_relax();
		uint64_t after = rdtsc();
		uint64_t half = (after - before) / 2;
		if (half < tsc_probe.uncertainty) {
			tsc_probe.uncertainty = half;
			tsc_probe.offset = (int64_t)(tsc_probe.boot_tsc - (before + half));
		}
	}
	__atomic_store_n(&tsc_probe.stage, 2 * TSC_ROUNDS + 1, __ATOMIC_SEQ_CST);
}

/* Boot CPU's side: answers each round with its TSC. */
static bool tsc_probe_answer(void)
{
	uint64_t deadline = clock_ns() + AP_ONLINE_TIMEOUT_NS;
	for (unsigned round = 0; round < TSC_ROUNDS; round++) {
		while (__atomic_load_n(&tsc_probe.stage, __ATOMIC_ACQUIRE) != 2 * round + 1) {
			if (clock_ns() > deadline)
				return false;
			cpu_relax();
		}
		tsc_probe.boot_tsc = rdtsc();
		__atomic_store_n(&tsc_probe.stage, 2 * round + 2, __ATOMIC_SEQ_CST);
	}
	while (__atomic_load_n(&tsc_probe.stage, __ATOMIC_ACQUIRE) != 2 * TSC_ROUNDS + 1) {
		if (clock_ns() > deadline)
			return false;
		cpu_relax();
	}
	return true;
}

static void report_tsc_offset(unsigned index, uint32_t apic_id)
{
	int64_t offset = tsc_probe.offset;
	uint64_t magnitude = offset < 0 ? (uint64_t)-offset : (uint64_t)offset;
	pr_info("smp: cpu %u (APIC id %u) online, TSC offset %s%lu cycles (+/- %lu)\n", index,
		apic_id, offset < 0 ? "-" : "+", magnitude, tsc_probe.uncertainty);
	if (magnitude > tsc_probe.uncertainty + 1000)
		pr_warn("smp: cpu %u's TSC is out of step: clock_ns() may go backwards "
			"between CPUs\n",
			index);
}

/* ---- The new CPU ------------------------------------------------------------ */

/* First C code of a new CPU, on its idle thread's stack, interrupts off. */
void smp_ap_main(uint64_t index)
{
	percpu_install((unsigned)index, 0);
	arch_cpu_tables_init((unsigned)index);
	__atomic_store_n(&ap_alive, index + 1, __ATOMIC_SEQ_CST);
	tsc_probe_measure();
	apic_init_cpu();
	syscall_init_cpu();
	timer_init_cpu();
	smp_set_online();
	sched_start_cpu();
}

/* ---- The boot CPU's side ---------------------------------------------------- */

static bool wait_alive(unsigned index, uint64_t timeout_ns)
{
	uint64_t deadline = clock_ns() + timeout_ns;
	while (__atomic_load_n(&ap_alive, __ATOMIC_ACQUIRE) != index + 1) {
		if (clock_ns() > deadline)
			return false;
		cpu_relax();
	}
	return true;
}

static bool wait_online(unsigned index)
{
	uint64_t deadline = clock_ns() + AP_ONLINE_TIMEOUT_NS;
	while (!smp_cpu_online(index)) {
		if (clock_ns() > deadline)
			return false;
		sched_yield();
	}
	return true;
}

/* INIT-SIPI-SIPI.  Returns true when the CPU ran the trampoline. */
static bool send_startup(unsigned index, uint32_t apic_id, uint64_t page)
{
	lapic_send_init(apic_id);
	clock_delay_ns(10 * NSEC_PER_MSEC);
	lapic_send_startup(apic_id, (uint8_t)(page >> 12));
	if (wait_alive(index, NSEC_PER_MSEC))
		return true;
	lapic_send_startup(apic_id, (uint8_t)(page >> 12));
	return wait_alive(index, AP_START_TIMEOUT_NS);
}

/* Starts one CPU as index.  Returns true when it came online. */
static bool start_cpu(struct trampoline_params *params, uint64_t page, unsigned index,
		      uint32_t apic_id)
{
	uint64_t stack_top = sched_prepare_cpu(index);
	if (!stack_top) {
		pr_warn("smp: no memory for cpu %u (APIC id %u); skipped\n", index, apic_id);
		return false;
	}
	params->stack_top = stack_top;
	params->cpu_index = index;
	__atomic_store_n(&ap_alive, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&tsc_probe.stage, 0, __ATOMIC_SEQ_CST);
	if (!send_startup(index, apic_id, page)) {
		lapic_send_init(apic_id); /* park it: it must not wake up later on our page */
		pr_warn("smp: cpu with APIC id %u did not start; skipped\n", apic_id);
		return false;
	}
	if (!tsc_probe_answer() || !wait_online(index))
		panic("smp: cpu %u (APIC id %u) started but did not come online", index, apic_id);
	report_tsc_offset(index, apic_id);
	return true;
}

/* Can this MADT entry be started? */
static bool startable(const struct acpi_cpu *cpu, uint32_t boot_apic_id)
{
	if (!(cpu->flags & ACPI_CPU_ENABLED) || cpu->apic_id == boot_apic_id)
		return false;
	if (cpu->apic_id > 254) {
		pr_warn("smp: APIC id %u needs x2APIC mode; skipped\n", cpu->apic_id);
		return false;
	}
	return true;
}

unsigned arch_smp_start_cpus(void)
{
	const struct acpi_madt *madt = acpi_get_madt();
	unsigned started = 0, index = 1;

	ASSERT(irq_enabled() && this_cpu_id() == 0);
	if (!madt || madt->cpu_count <= 1 || max_cpus == 1)
		return 0;
	uint64_t page = find_trampoline_page();
	if (!page) {
		pr_warn("smp: no usable page below 1 MiB for the trampoline; one CPU only\n");
		return 0;
	}
	struct trampoline_params *params = install_trampoline(page);
	for (unsigned i = 0; i < madt->cpu_count && index < max_cpus; i++) {
		if (!startable(&madt->cpus[i], this_cpu()->apic_id))
			continue;
		if (start_cpu(params, page, index, madt->cpus[i].apic_id)) {
			index++;
			started++;
		}
	}
	pr_info("smp: %u CPU(s) online, trampoline at %#lx\n", smp_online_count(), page);
	return started;
}
