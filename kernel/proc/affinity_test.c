/*
 * The proc_affinity suite: processes and CPUs from the kernel's side.  A
 * spinning test program (testprog.S, mode "l") is pinned, marked a monitor
 * and listed; the answers come from proc_list, as ps sees them.  The
 * system-call side (Linux's sched_setaffinity semantics, inheritance across
 * fork) is usertests' affinity_pins_a_process.
 */
#include "console/console.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "proc/internal.h"
#include "smp/smp.h"

#define MISSING_PID 99999

static int start_spinner(void)
{
	char *argv[] = {"testprog", "l", NULL};
	size_t size;
	const void *image = proc_get_test_image(&size);
	return proc_spawn_image(image, size, "spinner", argv);
}

static void stop(int pid)
{
	proc_kill(pid, SIGKILL);
	proc_wait(pid, NULL, 0);
}

/* Copies pid's entry of the process list; returns false when it is missing. */
static bool find_info(int pid, struct proc_info *out)
{
	static struct proc_info info[PROC_MAX]; /* the cases run one at a time */
	int n = proc_list(info, PROC_MAX);
	for (int i = 0; i < n && i < PROC_MAX; i++) {
		if (info[i].pid == pid) {
			*out = info[i];
			return true;
		}
	}
	return false;
}

static unsigned last_online_cpu(void)
{
	return 63 - (unsigned)__builtin_clzll(smp_online_mask());
}

/* Waits until pid has run on cpu (its list entry says so and shows CPU
 * time), polling: under TCG a virtual CPU may not run for a while when the
 * host is busy, so no fixed sleep is long enough.  The bound only keeps a
 * broken migration from hanging the suite.  Returns false when pid is
 * missing; *info is its last entry. */
static bool wait_until_running_on(int pid, unsigned cpu, struct proc_info *info)
{
	for (unsigned polls = 0; polls < 1000; polls++) {
		sched_sleep_ns(10 * 1000 * 1000);
		if (!find_info(pid, info))
			return false;
		if (info->cpu == (int32_t)cpu && info->cpu_ns > 0)
			return true;
	}
	return true;
}

/* Does a process pinned to one CPU run there, and say so in the list? */
static void pinned_process_runs_where_pinned(struct ktest *t)
{
	unsigned cpu = last_online_cpu();
	int pid = start_spinner();
	ASSERT_TRUE(t, pid > 0);
	EXPECT_EQ(t, proc_set_affinity(pid, SMP_CPU_BIT(cpu)), 0);
	uint64_t mask = 0;
	EXPECT_EQ(t, proc_get_affinity(pid, &mask), 0);
	EXPECT_EQ(t, mask, SMP_CPU_BIT(cpu));
	struct proc_info info;
	bool found = wait_until_running_on(pid, cpu, &info);
	if (EXPECT_TRUE(t, found)) {
		EXPECT_EQ(t, info.cpu, cpu);
		EXPECT_TRUE(t, info.cpu_ns > 0);
	}
	stop(pid);
}

/* Does the monitor mark come and go, and show in the list? */
static void monitor_mark_shows_in_the_list(struct ktest *t)
{
	int pid = start_spinner();
	ASSERT_TRUE(t, pid > 0);
	struct proc_info info;
	EXPECT_EQ(t, proc_set_monitor(pid, true), 0);
	bool found = find_info(pid, &info); /* at once: its thread may not have run yet */
	if (!found || !(info.flags & PROC_INFO_MONITOR))
		pr_info("    # %s: pid %d %s, state %d, run state %d, flags %#x\n", t->name, pid,
			found ? "listed" : "not listed", info.state, info.run_state, info.flags);
	EXPECT_TRUE(t, found && (info.flags & PROC_INFO_MONITOR));
	EXPECT_EQ(t, proc_set_monitor(pid, false), 0);
	EXPECT_TRUE(t, find_info(pid, &info) && !(info.flags & PROC_INFO_MONITOR));
	stop(pid);
}

/* Is an ordinary process kept off a CPU reserved for monitors, and a
 * monitor let onto it? */
static void only_monitors_pin_to_monitor_cpus(struct ktest *t)
{
	unsigned cpu = last_online_cpu();
	if (smp_online_count() < 2 || sched_monitor_cpus()) {
		ktest_skip(t, "needs two CPUs and none reserved yet");
		return;
	}
	int pid = start_spinner();
	ASSERT_TRUE(t, pid > 0);
	ASSERT_EQ(t, cpu_reserve_for_monitors(cpu), 0);
	EXPECT_EQ(t, proc_set_affinity(pid, SMP_CPU_BIT(cpu)), -EINVAL);
	EXPECT_EQ(t, proc_set_monitor(pid, true), 0);
	EXPECT_EQ(t, proc_set_affinity(pid, SMP_CPU_BIT(cpu)), 0);
	/* The spinner moves at its next switch, whenever the host lets its vCPU
	 * run: wait for it, the bound only a guard against a hang (10 s). */
	struct proc_info info;
	bool moved = false;
	for (unsigned ms = 0; !moved && ms < 10000; ms++) {
		moved = find_info(pid, &info) && info.cpu == (int32_t)cpu;
		if (!moved)
			sched_sleep_ns(1000 * 1000);
	}
	EXPECT_TRUE(t, moved);
	EXPECT_EQ(t, cpu_release_from_monitors(cpu), 0);
	stop(pid);
}

/* Are an empty mask, a missing process and a kernel thread's "pid 0" refused? */
static void bad_requests_are_refused(struct ktest *t)
{
	uint64_t mask;
	EXPECT_EQ(t, proc_set_affinity(MISSING_PID, smp_online_mask()), -ESRCH);
	EXPECT_EQ(t, proc_set_affinity(0, 0), -EINVAL);
	EXPECT_EQ(t, proc_set_affinity(0, smp_online_mask()), -ESRCH);
	EXPECT_EQ(t, proc_get_affinity(MISSING_PID, &mask), -ESRCH);
	EXPECT_EQ(t, proc_set_monitor(MISSING_PID, true), -ESRCH);
}

/* Does the CPU list have every online CPU, in order, with time on each? */
static void cpu_list_covers_every_cpu(struct ktest *t)
{
	struct proc_cpu_info info[MAX_CPUS];
	int n = proc_list_cpus(info, MAX_CPUS);
	ASSERT_EQ(t, n, smp_online_count());
	for (int i = 0; i < n; i++) {
		EXPECT_TRUE(t, smp_cpu_online(info[i].index));
		EXPECT_TRUE(t, i == 0 || info[i].index > info[i - 1].index);
		EXPECT_TRUE(t, info[i].busy_ns + info[i].idle_ns > 0);
	}
	EXPECT_EQ(t, proc_list_cpus(info, 0), n);
}

KTEST_SUITE(proc_affinity, KTEST_CASE(pinned_process_runs_where_pinned),
	    KTEST_CASE(monitor_mark_shows_in_the_list),
	    KTEST_CASE(only_monitors_pin_to_monitor_cpus), KTEST_CASE(bad_requests_are_refused),
	    KTEST_CASE(cpu_list_covers_every_cpu));
