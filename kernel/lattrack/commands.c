/*
 * The console's lattrack command: make trackers of the built-in kinds on
 * join points, change their thresholds, list their counts, take
 * flight-recorder snapshots of slow events, show a tracker's last reports
 * (with the user stack of a slow system call, for the host's mscope to name,
 * and the waker of an off-CPU thread), and remove trackers.  Times are in
 * microseconds.
 */
#include "lattrack/lattrack.h"

#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "panic/ksyms.h"
#include "uapi/lattrack.h"

#define NS_PER_US ((uint64_t)1000)

/* A decimal number of microseconds, in ns; false when text is not one. */
static bool parse_us(const char *text, uint64_t *ns)
{
	uint64_t value = 0;
	if (!text || !*text)
		return false;
	for (const char *c = text; *c; c++) {
		if (*c < '0' || *c > '9' || value > (UINT64_MAX / 10 - 9) / NS_PER_US)
			return false;
		value = value * 10 + (uint64_t)(*c - '0');
	}
	*ns = value * NS_PER_US;
	return true;
}

static int print_one(struct lattrack *tracker, void *arg)
{
	struct lattrack_counts c;
	lattrack_get_counts(tracker, &c);
	kshell_print("%-12s %-6s %8lu %8lu %8lu %6lu %6lu %6lu %6lu %6lu %6lu %6lu %8lu\n",
		     lattrack_name(tracker), lattrack_kind(tracker),
		     lattrack_threshold_ns(tracker) / NS_PER_US, c.in, c.out, c.over, c.timeout,
		     c.late, c.unique, c.gc, c.dropped, c.in_flight,
		     lattrack_max_ns(tracker) / NS_PER_US);
	return 0;
}

static void list(void)
{
	kshell_print("%-12s %-6s %8s %8s %8s %6s %6s %6s %6s %6s %6s %6s %8s\n", "name", "kind",
		     "thr_us", "in", "out", "over", "tmout", "late", "uniq", "gc", "drop", "now",
		     "max_us");
	lattrack_for_each(print_one, NULL);
	struct lattrack_snapshot_counts s;
	lattrack_snapshot_get_counts(&s);
	kshell_print("snapshots: %s, %lu requested, %lu taken, %lu refused, %lu failed\n",
		     lattrack_flight_running() ? "on" : "off", s.requested, s.taken, s.refused,
		     s.failed);
}

static int create(int argc, char **argv)
{
	uint64_t threshold, timeout = 0;
	if (argc < 5 || argc > 6 || !parse_us(argv[4], &threshold) ||
	    (argc == 6 && !parse_us(argv[5], &timeout)))
		return KSHELL_USAGE;
	return lattrack_attach_kind(argv[2], argv[3], threshold, timeout);
}

static int threshold(int argc, char **argv)
{
	uint64_t ns;
	if (argc != 4 || !parse_us(argv[3], &ns))
		return KSHELL_USAGE;
	struct lattrack *tracker = lattrack_get(argv[2]);
	if (!tracker)
		return -ENOENT; /* the shell reports errors */
	lattrack_set_threshold_ns(tracker, ns);
	lattrack_put(tracker);
	return 0;
}

static int snapshot(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[2], "off"))
		return lattrack_flight_stop();
	if (argc < 4 || strcmp(argv[2], "on"))
		return KSHELL_USAGE;
	const char *sink = "file", *directory = argv[3];
	if (!strcmp(argv[3], "console"))
		sink = "console", directory = "";
	return lattrack_flight_start(sink, directory, (const char *const *)&argv[4],
				     (unsigned)(argc - 4));
}

static const char *const flag_names[] = {"normal", "timeout", "unique", "gc", "late"};

static void print_waker(const struct lattrack_record *r)
{
	if (r->thread_name[0])
		kshell_print("    off its cpu: tid %u (%s)\n", r->thread_tid, r->thread_name);
	if (!(r->waker_flags & LATTRACK_WAKER_KNOWN))
		return;
	kshell_print("    woken by tid %u (%s) on cpu %u%s\n", r->waker_tid, r->waker_name,
		     r->waker_cpu,
		     r->waker_flags & LATTRACK_WAKER_INTERRUPT ? ", in an interrupt" : "");
}

/* Frames as "#N 0xADDRESS": a kernel address gets its function here; a user
 * one is named on the host (mscope lattrack, from the program's ELF). */
static void print_stack(const struct lattrack_record *r)
{
	for (unsigned i = 0; i < r->stack_count && i < LATTRACK_RECORD_STACK; i++) {
		uint64_t offset;
		const char *name = r->stack_flags & LATTRACK_STACK_KERNEL
				       ? ksym_lookup(r->stack[i] - 1, &offset)
				       : NULL;
		if (name)
			kshell_print("    #%u 0x%016lx %s+0x%lx\n", i, r->stack[i], name,
				     offset + 1);
		else
			kshell_print("    #%u 0x%016lx\n", i, r->stack[i]);
	}
	if (r->stack_flags & (LATTRACK_STACK_TRUNCATED | LATTRACK_STACK_UNREADABLE))
		kshell_print("    (%s)\n", r->stack_flags & LATTRACK_STACK_UNREADABLE
					       ? "unreadable"
					       : "truncated");
}

/* A tracker's last reports, oldest first: "report" lines the host's mscope
 * reads (program= names the ELF whose symbols name the user frames). */
static int show(const char *name)
{
	struct lattrack *tracker = lattrack_get(name);
	if (!tracker)
		return -ENOENT;
	struct lattrack_record records[LATTRACK_RECENT];
	char programs[LATTRACK_RECENT][16];
	unsigned count = lattrack_recent(tracker, records, programs, LATTRACK_RECENT);
	kshell_print("%s: %u recent report%s\n", name, count, count == 1 ? "" : "s");
	for (unsigned i = 0; i < count; i++) {
		const struct lattrack_record *r = &records[i];
		kshell_print("report %s %lu us id %u cpu %u tid %u program=%s\n",
			     r->flag < 5 ? flag_names[r->flag] : "?", r->delay_ns / NS_PER_US,
			     r->out_id, r->cpu, r->tid, programs[i][0] ? programs[i] : "-");
		print_waker(r);
		print_stack(r);
	}
	lattrack_put(tracker);
	return 0;
}

static int cmd_lattrack(int argc, char **argv)
{
	if (argc == 1 || (argc == 2 && !strcmp(argv[1], "list"))) {
		list();
		return 0;
	}
	if (!strcmp(argv[1], "create"))
		return create(argc, argv);
	if (!strcmp(argv[1], "threshold"))
		return threshold(argc, argv);
	if (!strcmp(argv[1], "remove") && argc == 3)
		return lattrack_detach(argv[2]);
	if (!strcmp(argv[1], "show") && argc == 3)
		return show(argv[2]);
	if (!strcmp(argv[1], "snapshot"))
		return snapshot(argc, argv);
	return KSHELL_USAGE;
}
KSHELL_COMMAND(lattrack, cmd_lattrack,
	       "lattrack [create NAME wakeup|ttfb|syscall[:CALL]|offcpu|irq|nic|nictx|block US "
	       "[TIMEOUT_US] | threshold NAME US | show NAME | remove NAME |"
	       " snapshot on DIR|console [PATTERN...] | snapshot off]",
	       "latency trackers on join points (slow wake-ups, requests, calls, interrupts, I/O), "
	       "with snapshots");
