/*
 * The proc_nmi suite: an NMI that arrives while a user process runs is not
 * the process's fault.  A spinning test program (testprog.S, mode "l") is
 * pinned to another CPU and that CPU is sent NMIs through its LAPIC; each is
 * counted (trap_nmi_count) and the process must go on running, not die of a
 * signal.  The kernel-mode case is the traps suite's.
 */
#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/traps.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "ktest/ktest.h"
#include "proc/internal.h"
#include "smp/smp.h"
#include "time/time.h"

#define NMIS_SENT 10
#define POLLS     1000 /* 10 ms apart: only keeps a broken case from hanging */

static struct proc_info *find_info(int pid)
{
	static struct proc_info info[PROC_MAX]; /* the cases run one at a time */
	int n = proc_list(info, PROC_MAX);
	for (int i = 0; i < n && i < PROC_MAX; i++) {
		if (info[i].pid == pid)
			return &info[i];
	}
	return NULL;
}

/* Polls until pid is listed on cpu with more than cpu_ns of CPU time.
 * Returns false when it disappears (or never gets there). */
static bool runs_on_past(int pid, unsigned cpu, uint64_t cpu_ns)
{
	for (unsigned polls = 0; polls < POLLS; polls++) {
		struct proc_info *info = find_info(pid);
		if (!info)
			return false;
		if (info->cpu == (int32_t)cpu && info->cpu_ns > cpu_ns)
			return true;
		sched_sleep_ns(10 * 1000 * 1000);
	}
	return false;
}

static bool nmi_counted_past(void *before)
{
	return trap_nmi_count() != *(const uint64_t *)before;
}

static bool nmi_count_rises_past(uint64_t before)
{
	return ktest_spin_until(nmi_counted_past, &before, 10 * NSEC_PER_SEC);
}

static unsigned last_online_cpu(void)
{
	return 63 - (unsigned)__builtin_clzll(smp_online_mask());
}

static void nmi_on_a_user_process_leaves_it_running(struct ktest *t)
{
	if (smp_online_count() < 2) {
		ktest_skip(t, "needs two CPUs");
		return;
	}
	unsigned cpu = last_online_cpu();
	char *argv[] = {"testprog", "l", NULL};
	size_t size;
	const void *image = proc_get_test_image(&size);
	int pid = proc_spawn_image(image, size, "nmi-spinner", argv);
	ASSERT_TRUE(t, pid > 0);
	EXPECT_EQ(t, proc_set_affinity(pid, SMP_CPU_BIT(cpu)), 0);
	if (EXPECT_TRUE(t, runs_on_past(pid, cpu, 0))) {
		for (int i = 0; i < NMIS_SENT; i++) {
			uint64_t before = trap_nmi_count();
			lapic_send_nmi(cpus[cpu].apic_id);
			EXPECT_TRUE(t, nmi_count_rises_past(before));
		}
		struct proc_info *info = find_info(pid);
		uint64_t cpu_ns = info ? info->cpu_ns : 0;
		EXPECT_TRUE(t, runs_on_past(pid, cpu, cpu_ns));
		EXPECT_EQ(t, proc_wait(pid, NULL, WNOHANG), 0);
	}
	proc_kill(pid, SIGKILL);
	proc_wait(pid, NULL, 0);
}

KTEST_SUITE(proc_nmi, KTEST_CASE(nmi_on_a_user_process_leaves_it_running));
