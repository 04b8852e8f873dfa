/*
 * Steal time: how long a vCPU was ready to run while the hypervisor ran
 * something else.  Inside an activity that time passes on the wall clock and
 * looks like CPU time to the guest, so the accounting subtracts it and
 * reports it apart (kernel/acct).  Only a hypervisor that says so is
 * believed: KVM's CPUID leaves (0x40000000 signature "KVMKVMKVM", leaf
 * 0x40000001 bit KVM_FEATURE_STEAL_TIME), after which each CPU hands the
 * hypervisor the physical address of a 64-byte record (MSR_KVM_STEAL_TIME)
 * that it keeps up to date.  Anything else (bare metal, QEMU's TCG, another
 * hypervisor) reports no steal time, and clock_steal_reported says so rather
 * than a zero that would read as "measured: none".
 *
 * Each CPU enables its record the first time it asks (clock_steal_ns), so
 * no start-up code of the other CPUs is involved; the count starts there.
 * The record is read under its version, odd while the hypervisor writes it.
 */
#include <stdbool.h>
#include <stdint.h>

#include "arch/x86_64/cpu.h"
#include "cpu/percpu.h"
#include "mm/mm.h"
#include "time/time.h"

#define CPUID_HYPERVISOR_PRESENT (1u << 31) /* leaf 1, ECX */
#define KVM_CPUID_SIGNATURE      0x40000000u
#define KVM_CPUID_FEATURES       0x40000001u
#define KVM_FEATURE_STEAL_TIME   5
#define MSR_KVM_STEAL_TIME       0x4b564d03u
#define KVM_MSR_ENABLED          1u

/* The hypervisor's layout (Linux's struct kvm_steal_time). */
struct kvm_steal_time {
	uint64_t steal;
	uint32_t version;
	uint32_t flags;
	uint8_t preempted;
	uint8_t pad[47];
} __attribute__((aligned(64)));

static struct kvm_steal_time records[MAX_CPUS];
static bool enabled[MAX_CPUS];

enum { UNKNOWN, ABSENT, PRESENT };
static int reported = UNKNOWN;

static bool kvm_steal_time_feature(void)
{
	uint32_t regs[4];
	cpuid(1, 0, regs);
	if (!(regs[2] & CPUID_HYPERVISOR_PRESENT))
		return false;
	cpuid(KVM_CPUID_SIGNATURE, 0, regs);
	static const char kvm[12] = {'K', 'V', 'M', 'K', 'V', 'M', 'K', 'V', 'M', 0, 0, 0};
	const char *signature = (const char *)&regs[1]; /* EBX, ECX, EDX */
	for (unsigned i = 0; i < 12; i++)
		if (signature[i] != kvm[i])
			return false;
	if (regs[0] < KVM_CPUID_FEATURES)
		return false;
	cpuid(KVM_CPUID_FEATURES, 0, regs);
	return regs[0] & (1u << KVM_FEATURE_STEAL_TIME);
}

bool clock_steal_reported(void)
{
	int state = __atomic_load_n(&reported, __ATOMIC_RELAXED);
	if (state == UNKNOWN) {
		state = kvm_steal_time_feature() ? PRESENT : ABSENT;
		__atomic_store_n(&reported, state, __ATOMIC_RELAXED);
	}
	return state == PRESENT;
}

uint64_t clock_steal_ns(void)
{
	if (!clock_steal_reported())
		return 0;
	unsigned cpu = this_cpu_id();
	struct kvm_steal_time *record = &records[cpu];
	if (!enabled[cpu]) {
		wrmsr(MSR_KVM_STEAL_TIME, virt_to_phys(record) | KVM_MSR_ENABLED);
		enabled[cpu] = true;
	}
	uint32_t version;
	uint64_t steal;
	do {
		version = __atomic_load_n(&record->version, __ATOMIC_ACQUIRE);
		steal = __atomic_load_n(&record->steal, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while ((version & 1) || version != __atomic_load_n(&record->version, __ATOMIC_RELAXED));
	return steal;
}
