/*
 * The `cpus` command of the kernel shell: per-CPU statistics, and reserving
 * a CPU for monitor threads or giving it back.
 *
 *     cpus                  one line per online CPU
 *     cpus monitor 3        only monitor threads run on CPU 3 from now on
 *     cpus release 3        every thread may run there again
 */
#include "smp/smp.h"

#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "sched/sched.h"

/* Parses a CPU index; returns it, or -1. */
static int parse_cpu(const char *text)
{
	int n = 0;
	if (!text || !*text)
		return -1;
	for (const char *p = text; *p; p++) {
		if (*p < '0' || *p > '9' || n >= MAX_CPUS)
			return -1;
		n = n * 10 + (*p - '0');
	}
	return n < MAX_CPUS ? n : -1;
}

static int cmd_cpus(int argc, char **argv)
{
	if (argc == 1) {
		kshell_print("%u CPU(s) online, monitor CPUs %#lx\n", smp_online_count(),
			     sched_monitor_cpus());
		sched_print_cpu_stats();
		return 0;
	}
	int cpu = argc == 3 ? parse_cpu(argv[2]) : -1;
	if (cpu < 0)
		return KSHELL_USAGE;
	if (!strcmp(argv[1], "monitor"))
		return cpu_reserve_for_monitors((unsigned)cpu);
	if (!strcmp(argv[1], "release"))
		return cpu_release_from_monitors((unsigned)cpu);
	return KSHELL_USAGE;
}
KSHELL_COMMAND(cpus, cmd_cpus, "cpus [monitor|release <cpu>]",
	       "per-CPU statistics; reserve a CPU for monitors or release it");
