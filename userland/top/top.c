/*
 * top: per-CPU usage (busy, idle and interrupt time, context switches,
 * interrupts; "M" marks a CPU reserved for monitors) and the process list
 * with each process's CPU and share of a CPU, once or every few seconds.
 * The first report covers the time since boot, each later one the interval
 * since the one before.  Elapsed time is what the CPUs accounted (busy plus
 * idle, averaged), so the shares add up with the kernel's own figures.
 *
 * Processes are sorted by their share in the interval, largest first.  At
 * the console, `q` and Enter quits between reports (so does ^C).
 *
 *     top -n 1        one report, then exit
 *     top -d 5        a report every 5 seconds until q or ^C
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uapi/proc.h"
#include <microscope/sched.h>
#include <microscope/syscall.h>

#define MAX_CPUS_SHOWN 64

struct sample {
	int cpu_count;
	struct proc_cpu_info cpus[MAX_CPUS_SHOWN];
	int process_count;
	struct proc_info processes[PROC_MAX];
};

static int take_sample(struct sample *s)
{
	int cpus = ms_get_cpus(s->cpus, MAX_CPUS_SHOWN);
	long processes = ms_syscall3(__NR_ms_getprocs, (long)s->processes, PROC_MAX, 0);
	if (cpus < 0 || processes < 0) {
		fprintf(stderr, "top: %s\n", cpus < 0 ? strerror(errno) : "cannot list processes");
		return -1;
	}
	s->cpu_count = cpus < MAX_CPUS_SHOWN ? cpus : MAX_CPUS_SHOWN;
	s->process_count = processes < PROC_MAX ? (int)processes : PROC_MAX;
	return 0;
}

/* The CPU's statistics in s, or a zeroed one when s is NULL or lacks it. */
static struct proc_cpu_info cpu_in(const struct sample *s, unsigned index)
{
	struct proc_cpu_info none = {.index = index};
	for (int i = 0; s && i < s->cpu_count; i++)
		if (s->cpus[i].index == index)
			return s->cpus[i];
	return none;
}

static uint64_t process_ns_in(const struct sample *s, int pid)
{
	for (int i = 0; s && i < s->process_count; i++)
		if (s->processes[i].pid == pid)
			return s->processes[i].cpu_ns;
	return 0;
}

/* Tenths of a percent of part in whole. */
static unsigned long permille(uint64_t part, uint64_t whole)
{
	return whole ? (unsigned long)(part * 1000 / whole) : 0;
}

/* Prints the CPU table; returns the elapsed time per CPU over the interval. */
static uint64_t print_cpus(const struct sample *now, const struct sample *before)
{
	uint64_t elapsed_sum = 0;
	printf("CPU     BUSY%%  IDLE%%   IRQ%%  SWITCHES INTERRUPTS\n");
	for (int i = 0; i < now->cpu_count; i++) {
		const struct proc_cpu_info *c = &now->cpus[i];
		struct proc_cpu_info b = cpu_in(before, c->index);
		uint64_t busy = c->busy_ns - b.busy_ns, idle = c->idle_ns - b.idle_ns;
		uint64_t irq = c->irq_ns - b.irq_ns, total = busy + idle;
		unsigned long pb = permille(busy, total), pi = permille(idle, total);
		unsigned long pq = permille(irq, total);
		elapsed_sum += total;
		printf("cpu%-2u%s %3lu.%lu  %3lu.%lu  %3lu.%lu %9llu %10llu\n", c->index,
		       c->flags & PROC_CPU_MONITORS ? "M" : " ", pb / 10, pb % 10, pi / 10, pi % 10,
		       pq / 10, pq % 10,
		       (unsigned long long)(c->context_switches - b.context_switches),
		       (unsigned long long)(c->interrupts - b.interrupts));
	}
	return now->cpu_count ? elapsed_sum / (uint64_t)now->cpu_count : 0;
}

static const char *state_name(const struct proc_info *p)
{
	if (p->state != PROC_RUNNING)
		return p->state == PROC_ZOMBIE ? "zombie" : "new";
	switch (p->run_state) {
	case PROC_RUN_ON_CPU: return "running";
	case PROC_RUN_RUNNABLE: return "runnable";
	case PROC_RUN_SLEEPING: return "sleeping";
	case PROC_RUN_STOPPED: return "stopped";
	default: return "?";
	}
}

struct ranked {
	const struct proc_info *process;
	uint64_t used; /* ns on a CPU in the interval */
};

static int by_use(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->used != y->used)
		return x->used < y->used ? 1 : -1;
	return x->process->pid - y->process->pid;
}

static void print_processes(const struct sample *now, const struct sample *before, uint64_t elapsed)
{
	static struct ranked ranked[PROC_MAX];
	int count = now->process_count < PROC_MAX ? now->process_count : PROC_MAX;
	for (int i = 0; i < count; i++) {
		const struct proc_info *p = &now->processes[i];
		ranked[i] = (struct ranked){p, p->cpu_ns - process_ns_in(before, p->pid)};
	}
	qsort(ranked, (size_t)count, sizeof ranked[0], by_use);
	printf("  PID  PPID STATE     CPU  %%CPU      TIME NAME\n");
	for (int i = 0; i < count; i++) {
		const struct proc_info *p = ranked[i].process;
		unsigned long share = permille(ranked[i].used, elapsed), ms = p->cpu_ns / 1000000;
		char cpu[16] = "-";
		if (p->cpu >= 0)
			snprintf(cpu, sizeof cpu, "%d%s", p->cpu,
				 p->flags & PROC_INFO_MONITOR ? "M" : "");
		printf("%5d %5d %-8s %3s %3lu.%lu %5lu.%03lu %s\n", p->pid, p->parent_pid,
		       state_name(p), cpu, share / 10, share % 10, ms / 1000, ms % 1000, p->name);
	}
}

/* Waits seconds, or less when a line starting with q is typed.  Returns 1
 * to quit. */
static int wait_or_quit(long seconds)
{
	if (!isatty(0)) {
		sleep((unsigned)seconds);
		return 0;
	}
	struct pollfd input = {.fd = 0, .events = POLLIN};
	long deadline = seconds * 1000;
	while (deadline > 0) {
		int ready = poll(&input, 1, (int)(deadline > 1000 ? 1000 : deadline));
		deadline -= 1000;
		if (ready <= 0)
			continue;
		char line[64];
		ssize_t n = read(0, line, sizeof line);
		if (n <= 0 || line[0] == 'q')
			return 1;
	}
	return 0;
}

static void report(const struct sample *now, const struct sample *before)
{
	uint64_t elapsed = print_cpus(now, before);
	printf("%d CPUs, %lu.%03lu s %s\n", now->cpu_count, (unsigned long)(elapsed / 1000000000),
	       (unsigned long)(elapsed / 1000000 % 1000),
	       before ? "since the last report" : "since boot");
	print_processes(now, before, elapsed);
}

static int usage(void)
{
	fprintf(stderr, "usage: top [-n reports] [-d seconds]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static struct sample samples[2];
	long reports = -1, delay = 2;
	int option;
	while ((option = getopt(argc, argv, "n:d:")) != -1) {
		if (option == 'n')
			reports = strtol(optarg, NULL, 10);
		else if (option == 'd')
			delay = strtol(optarg, NULL, 10);
		else
			return usage();
	}
	if (reports == 0 || delay <= 0 || optind != argc)
		return usage();
	struct sample *now = &samples[0], *before = NULL;
	for (long n = 0; reports < 0 || n < reports; n++) {
		if (n > 0 && wait_or_quit(delay))
			break;
		if (take_sample(now) < 0)
			return 1;
		if (n > 0)
			printf("\n");
		report(now, before);
		fflush(stdout);
		before = now;
		now = now == &samples[0] ? &samples[1] : &samples[0];
	}
	return 0;
}
