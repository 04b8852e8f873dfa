/*
 * scopetest: the bindings end to end, as init (init=/bin/scopetest
 * exit=qemu), printing KTAP.  Each case answers one question:
 *   - does the same object, linked direct, shm and msg, count the same
 *     workload the same?
 *   - relinked direct -> msg -> shm -> direct under load, is every event
 *     counted once, or reported dropped?
 *   - when the monitor process is killed, is the aspect unlinked and
 *     reported, and does the system keep serving?  And when another aspect
 *     starts a new monitor before the first saw its monitor end, are the
 *     first's events refused (it is unlinked), never run as the other's?
 *   - with synchronous msg on one CPU, does every event get its answer from
 *     the monitor on the same CPU (the join point blocks and hands it the
 *     CPU), counting like direct?
 *   - when the monitor misses a synchronous call's deadline (slowpoke takes
 *     20 ms to answer), is the aspect unlinked?
 *   - linked msg on sched.switch, whose advice runs under the run queue's
 *     lock, are its events dropped and counted while the kernel goes on, and
 *     counted once relinked direct?
 *   - do ms_emit and ms_device_counter work the same in the monitor as in the
 *     kernel (abicheck: the same counts, records in the same channel)?
 *   - does an aspect's latency tracker (statlat) get every event in and out,
 *     and its reader every record, in each binding, and go with the aspect?
 * The workload is stat() of one file: callcount counts "vfs.stat" once per
 * call, and nothing else this program does calls it.  Run on one CPU (the
 * group user runs it so; it passes on more).
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <microscope/syscall.h>

/* newlib's numbers; proc.h has Linux's */
#undef SIGBUS
#undef SIGCHLD
#undef SIGUSR1
#undef SIGUSR2
#undef SIGCONT
#undef SIGSTOP
#undef SIGTSTP
#undef SIGTTIN
#undef SIGTTOU
#include "uapi/lattrack.h"
#include "uapi/proc.h"
#include "uapi/scope.h"
#include "uapi/telemetry.h"

#define ROUNDS          200
#define LATTRACK_ROUNDS 100 /* fewer than a descriptor queues */

static int failures, case_number;
static char text[32 * 1024];

static long ctl(enum scope_op op, const char *name, int binding, const char *counter,
		int64_t *value)
{
	static struct scope_ctl c;
	memset(&c, 0, sizeof c);
	c.op = op;
	c.binding = (uint32_t)binding;
	strncpy(c.name, name, sizeof c.name - 1);
	if (counter)
		strncpy(c.counter, counter, sizeof c.counter - 1);
	c.buffer = text;
	c.length = sizeof text - 1;
	long result = ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0);
	if (result >= 0)
		text[result] = '\0';
	if (result < 0)
		printf("# %s %s: error %ld %s\n", name, counter ? counter : "", result, c.error);
	if (value)
		*value = c.value;
	return result;
}

static int64_t stat_count(void)
{
	int64_t value = -1;
	ctl(SCOPE_COUNTER, "callcount", 0, "vfs.stat", &value);
	return value;
}

static void workload(int rounds)
{
	struct stat st;
	for (int i = 0; i < rounds; i++) {
		stat("/etc/motd", &st);
		if (i % 16 == 15)
			usleep(2000); /* on one CPU, the monitor runs when this sleeps */
	}
}

static void report(const char *name, int ok, const char *detail)
{
	case_number++;
	if (!ok) {
		failures++;
		printf("# %s: %s\n", name, detail);
	}
	printf("%sok %d %s\n", ok ? "" : "not ", case_number, name);
}

/* Drops counted so far: the number after "drops=" in the stats line. */
static int64_t drops_of(const char *name)
{
	if (ctl(SCOPE_STATS, name, 0, NULL, NULL) < 0)
		return -1;
	const char *d = strstr(text, "drops=");
	return d ? atoll(d + 6) : -1;
}

static void same_counts_in_every_binding(void)
{
	static const char *names[] = {"", "direct", "shm", "msg"};
	char detail[160] = "";
	int ok = 1;
	for (int binding = 1; binding <= 3; binding++) {
		int64_t before = stat_count();
		long error = ctl(SCOPE_LINK, "callcount", binding, NULL, NULL);
		workload(ROUNDS);
		ctl(SCOPE_UNLINK, "callcount", 0, NULL, NULL);
		int64_t counted = stat_count() - before;
		if (error || counted != ROUNDS) {
			ok = 0;
			snprintf(detail, sizeof detail, "%s: link %ld, counted %lld of %d",
				 names[binding], error, (long long)counted, ROUNDS);
		}
	}
	report("same_counts_in_every_binding", ok, detail);
}

static void relink_under_load_counts_each_event_once(void)
{
	static const int order[] = {1, 3, 2, 1};
	int64_t before = stat_count(), drops_before = drops_of("callcount");
	long error = ctl(SCOPE_LINK, "callcount", order[0], NULL, NULL);
	int calls = 0;
	for (int step = 1; step < 4 && !error; step++) {
		workload(ROUNDS / 2);
		calls += ROUNDS / 2;
		error = ctl(SCOPE_RELINK, "callcount", order[step], NULL, NULL);
	}
	workload(ROUNDS / 2);
	calls += ROUNDS / 2;
	ctl(SCOPE_UNLINK, "callcount", 0, NULL, NULL);
	int64_t counted = stat_count() - before, dropped = drops_of("callcount") - drops_before;
	char detail[160];
	snprintf(detail, sizeof detail, "relink error %ld, counted %lld + dropped %lld of %d",
		 error, (long long)counted, (long long)dropped, calls);
	report("relink_under_load_counts_each_event_once",
	       !error && counted + dropped == calls && counted <= calls, detail);
}

static int monitor_pid(void)
{
	static struct proc_info info[64];
	long n = ms_syscall3(__NR_ms_getprocs, (long)info, 64, 0);
	for (long i = 0; i < n && i < 64; i++)
		if (!strcmp(info[i].name, "monitor") && info[i].state == 1)
			return info[i].pid;
	return -1;
}

static void killed_monitor_is_unlinked(void)
{
	long error = ctl(SCOPE_LINK, "callcount", 2, NULL, NULL);
	int pid = monitor_pid();
	char detail[200];
	snprintf(detail, sizeof detail, "link %ld, monitor pid %d", error, pid);
	if (error || pid < 0) {
		report("killed_monitor_is_unlinked", 0, detail);
		return;
	}
	ms_syscall3(__NR_kill, pid, 9 /* SIGKILL */, 0);
	for (int i = 0; i < 50; i++) {
		workload(10);
		usleep(20000);
		ctl(SCOPE_STATS, "callcount", 0, NULL, NULL);
		if (strstr(text, "state=loaded"))
			break;
	}
	int unlinked = strstr(text, "state=loaded") != NULL;
	int reported = strstr(text, "last_failure=") != NULL;
	snprintf(detail, sizeof detail, "after the kill: %.150s", text);
	report("killed_monitor_is_unlinked", unlinked && reported, detail);
	/* The system keeps serving: the same object links again, with a new monitor. */
	int64_t before = stat_count();
	error = ctl(SCOPE_LINK, "callcount", 2, NULL, NULL);
	workload(ROUNDS);
	ctl(SCOPE_UNLINK, "callcount", 0, NULL, NULL);
	snprintf(detail, sizeof detail, "relink %ld, counted %lld", error,
		 (long long)(stat_count() - before));
	report("new_monitor_after_kill", !error && stat_count() - before == ROUNDS, detail);
}

/* Waits until no monitor process runs (the bound only guards against a
 * hang); true when none does. */
static int monitor_ended(void)
{
	for (int i = 0; i < 500 && monitor_pid() >= 0; i++)
		usleep(10000);
	return monitor_pid() < 0;
}

/* abicheck (on vfs.stat alone) linked shm, its monitor killed with no event
 * in between, then switchcount linked shm starts a new monitor, which gives
 * ids afresh: the id abicheck still carries names switchcount there.
 * abicheck's next events must find their monitor gone (it is reported and
 * unlinked), not be run as switchcount's advice. */
static void events_of_a_dead_monitors_aspect_reach_no_other(void)
{
	long error = ctl(SCOPE_LOAD, "/aspects/abicheck.o", 0, NULL, NULL);
	long other = ctl(SCOPE_LOAD, "/aspects/switchcount.o", 0, NULL, NULL);
	if (error >= 0)
		error = ctl(SCOPE_LINK, "abicheck", 2, NULL, NULL);
	int pid = monitor_pid();
	if (!error && pid >= 0)
		ms_syscall3(__NR_kill, pid, 9 /* SIGKILL */, 0);
	int ended = monitor_ended();
	if (other >= 0)
		other = ctl(SCOPE_LINK, "switchcount", 2, NULL, NULL);
	for (int i = 0; i < 50; i++) { /* bounded: only against a hang */
		workload(10);
		usleep(20000);
		ctl(SCOPE_STATS, "abicheck", 0, NULL, NULL);
		if (strstr(text, "state=loaded"))
			break;
	}
	int unlinked = strstr(text, "state=loaded") && strstr(text, "last_failure=");
	char detail[240];
	snprintf(detail, sizeof detail,
		 "link %ld, monitor %d ended %d, other %ld; abicheck: %.150s", error, pid, ended,
		 other, text);
	ctl(SCOPE_UNLINK, "switchcount", 0, NULL, NULL);
	ctl(SCOPE_UNLOAD, "switchcount", 0, NULL, NULL);
	ctl(SCOPE_UNLINK, "abicheck", 0, NULL, NULL);
	ctl(SCOPE_UNLOAD, "abicheck", 0, NULL, NULL);
	report("events_of_a_dead_monitors_aspect_reach_no_other",
	       !error && pid >= 0 && ended && other == 0 && unlinked, detail);
}

/* Records produced so far by telemetry channel id on every CPU, or -1 when
 * there is no such channel. */
static int64_t produced(int id)
{
	static struct tel_ring_stats stats;
	int64_t total = -1;
	for (int cpu = 0; cpu < 64; cpu++) {
		if (ms_syscall3(__NR_ms_tel_stats, id, cpu, (long)&stats) != 0)
			break;
		total = (total < 0 ? 0 : total) + (int64_t)stats.produced;
	}
	return total;
}

#define CHANNELS 16

/* abicheck's counters and every channel's records, as one snapshot. */
struct abi_snapshot {
	int64_t emitted, device_read, produced[CHANNELS];
};

static void abi_snapshot(struct abi_snapshot *s)
{
	s->emitted = s->device_read = -1;
	ctl(SCOPE_COUNTER, "abicheck", 0, "emitted", &s->emitted);
	ctl(SCOPE_COUNTER, "abicheck", 0, "device_read", &s->device_read);
	for (int id = 0; id < CHANNELS; id++)
		s->produced[id] = produced(id);
}

/* The same object, each binding: every event emits one record into the
 * channel direct emits to, and reads the timer's ticks. */
static void emit_and_device_counter_in_every_binding(void)
{
	static const char *names[] = {"", "direct", "shm", "msg"};
	char detail[200] = "";
	int ok = ctl(SCOPE_LOAD, "/aspects/abicheck.o", 0, NULL, NULL) >= 0, channel = -1;
	for (int binding = 1; binding <= 3 && ok; binding++) {
		struct abi_snapshot before, after;
		abi_snapshot(&before);
		long error = ctl(SCOPE_LINK, "abicheck", binding, NULL, NULL);
		workload(ROUNDS);
		ctl(SCOPE_UNLINK, "abicheck", 0, NULL, NULL);
		abi_snapshot(&after);
		for (int id = 0; id < CHANNELS && channel < 0; id++)
			if (after.produced[id] - before.produced[id] == ROUNDS)
				channel = id; /* direct: only "aspects" produced */
		int64_t records =
		    channel >= 0 ? after.produced[channel] - before.produced[channel] : -1;
		if (error || after.emitted - before.emitted != ROUNDS ||
		    after.device_read - before.device_read != ROUNDS || records != ROUNDS) {
			ok = 0;
			snprintf(detail, sizeof detail,
				 "%s: link %ld, emitted %lld, device_read %lld, records %lld of %d",
				 names[binding], error, (long long)(after.emitted - before.emitted),
				 (long long)(after.device_read - before.device_read),
				 (long long)records, ROUNDS);
		}
	}
	report("emit_and_device_counter_in_every_binding", ok, detail);
}

/* Records of the "statlat" tracker that reach reader fd within a few
 * seconds, at most want. */
static int statlat_records(long fd, int want)
{
	static struct lattrack_record records[LATTRACK_RECORDS_QUEUED];
	int got = 0;
	for (int waited = 0; got < want && waited < 50; waited++) {
		struct pollfd p = {.fd = (int)fd, .events = POLLIN};
		if (poll(&p, 1, 100) != 1)
			continue;
		long n = read((int)fd, records, sizeof records);
		for (long i = 0; n > 0 && i < n / (long)sizeof records[0]; i++)
			got += records[i].flag == LATTRACK_RECORD_NORMAL;
	}
	return got;
}

/* The same object, each binding: statlat's init makes (or, in the
 * monitor, opens) one kernel tracker and every vfs.stat goes in and out of
 * it; a reader of the tracker gets one record per call. */
static void lattrack_in_every_binding(void)
{
	static const char *names[] = {"", "direct", "shm", "msg"};
	char detail[200] = "";
	int ok = ctl(SCOPE_LOAD, "/aspects/statlat.o", 0, NULL, NULL) >= 0;
	for (int binding = 1; binding <= 3 && ok; binding++) {
		int64_t in_before = 0, out_before = 0, in_after = 0, out_after = 0;
		ctl(SCOPE_COUNTER, "statlat", 0, "in", &in_before);
		ctl(SCOPE_COUNTER, "statlat", 0, "out", &out_before);
		long error = ctl(SCOPE_LINK, "statlat", binding, NULL, NULL);
		long fd = ms_syscall3(__NR_ms_lattrack_open, (long)"statlat", 0, 0);
		workload(LATTRACK_ROUNDS);
		int records = fd >= 0 ? statlat_records(fd, LATTRACK_ROUNDS) : -1;
		ctl(SCOPE_UNLINK, "statlat", 0, NULL, NULL);
		ctl(SCOPE_COUNTER, "statlat", 0, "in", &in_after);
		ctl(SCOPE_COUNTER, "statlat", 0, "out", &out_after);
		if (fd >= 0)
			close((int)fd);
		if (error || fd < 0 || records != LATTRACK_ROUNDS ||
		    in_after - in_before != LATTRACK_ROUNDS ||
		    out_after - out_before != LATTRACK_ROUNDS) {
			ok = 0;
			snprintf(detail, sizeof detail,
				 "%s: link %ld, open %ld, records %d, in %lld, out %lld of %d",
				 names[binding], error, fd, records,
				 (long long)(in_after - in_before),
				 (long long)(out_after - out_before), LATTRACK_ROUNDS);
		}
	}
	ctl(SCOPE_UNLOAD, "statlat", 0, NULL, NULL);
	if (ok && ms_syscall3(__NR_ms_lattrack_open, (long)"statlat", 0, 0) != -2) {
		ok = 0;
		snprintf(detail, sizeof detail, "the tracker outlived the aspect's unload");
	}
	report("lattrack_in_every_binding", ok, detail);
}

/* Synchronous msg events (sync != 0) with deadline_ns, or one-way ones. */
static void set_msg_mode(int sync, int64_t deadline_ns)
{
	static struct scope_ctl c;
	memset(&c, 0, sizeof c);
	c.op = SCOPE_SET_MSG_MODE;
	c.binding = (uint32_t)sync;
	c.value = deadline_ns;
	ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0);
}

/* Was the direct switch there?  On one CPU a synchronous event's monitor can
 * only answer if the join point blocks and lets it run. */
static void sync_msg_on_one_cpu_counts_like_direct(void)
{
	set_msg_mode(1, 1000 * 1000 * 1000);
	int64_t before = stat_count(), drops_before = drops_of("callcount");
	long error = ctl(SCOPE_LINK, "callcount", 3, NULL, NULL);
	workload(ROUNDS);
	ctl(SCOPE_STATS, "callcount", 0, NULL, NULL);
	int live = strstr(text, "state=live") != NULL;
	ctl(SCOPE_UNLINK, "callcount", 0, NULL, NULL);
	set_msg_mode(0, 0);
	int64_t counted = stat_count() - before, dropped = drops_of("callcount") - drops_before;
	char detail[200];
	snprintf(detail, sizeof detail, "link %ld, live %d, counted %lld of %d, dropped %lld",
		 error, live, (long long)counted, ROUNDS, (long long)dropped);
	report("sync_msg_on_one_cpu_counts_like_direct", !error && live && counted == ROUNDS,
	       detail);
}

/* A monitor that does not answer a synchronous call in time: slowpoke's
 * advice takes 20 ms, the deadline is 2 ms. */
static void missed_deadline_is_unlinked(void)
{
	long error = ctl(SCOPE_LOAD, "/aspects/slowpoke.o", 0, NULL, NULL);
	set_msg_mode(1, 2 * 1000 * 1000);
	if (error >= 0)
		error = ctl(SCOPE_LINK, "slowpoke", 3, NULL, NULL);
	for (int i = 0; i < 50 && !error; i++) {
		workload(1);
		usleep(20000);
		ctl(SCOPE_STATS, "slowpoke", 0, NULL, NULL);
		if (strstr(text, "state=loaded"))
			break;
	}
	char detail[200];
	snprintf(detail, sizeof detail, "link %ld: %.150s", error, text);
	report("missed_deadline_is_unlinked",
	       !error && strstr(text, "state=loaded") && strstr(text, "deadline"), detail);
	set_msg_mode(0, 0);
}

static int64_t switches_counted(void)
{
	int64_t value = -1;
	ctl(SCOPE_COUNTER, "switchcount", 0, "switches", &value);
	return value;
}

/* Each sleep blocks this thread: at least two switches. */
static void sleep_often(void)
{
	for (int i = 0; i < 10; i++)
		usleep(2000);
}

/* A message wakes the monitor, and sched.switch's advice runs where a
 * wake-up would take the run queue's lock again. */
static void msg_inside_the_scheduler_drops_and_counts(void)
{
	long error = ctl(SCOPE_LOAD, "/aspects/switchcount.o", 0, NULL, NULL);
	if (error >= 0)
		error = ctl(SCOPE_LINK, "switchcount", 3, NULL, NULL);
	int64_t drops_before = drops_of("switchcount");
	sleep_often();
	int64_t dropped = drops_of("switchcount") - drops_before;
	if (!error)
		error = ctl(SCOPE_RELINK, "switchcount", 1, NULL, NULL);
	int64_t before = switches_counted();
	sleep_often();
	int64_t counted = switches_counted() - before;
	ctl(SCOPE_UNLINK, "switchcount", 0, NULL, NULL);
	ctl(SCOPE_UNLOAD, "switchcount", 0, NULL, NULL);
	char detail[160];
	snprintf(detail, sizeof detail, "link %ld, dropped under msg %lld, counted direct %lld",
		 error, (long long)dropped, (long long)counted);
	report("msg_inside_the_scheduler_drops_and_counts",
	       !error && dropped >= 20 && counted >= 20, detail);
}

int main(void)
{
	printf("KTAP version 1\n1..10\n");
	if (ctl(SCOPE_LOAD, "/aspects/callcount.o", 0, NULL, NULL) < 0) {
		printf("# cannot load /aspects/callcount.o\n");
		return 1;
	}
	same_counts_in_every_binding();
	relink_under_load_counts_each_event_once();
	killed_monitor_is_unlinked();
	events_of_a_dead_monitors_aspect_reach_no_other();
	sync_msg_on_one_cpu_counts_like_direct();
	emit_and_device_counter_in_every_binding();
	lattrack_in_every_binding();
	missed_deadline_is_unlinked();
	msg_inside_the_scheduler_drops_and_counts();
	printf(failures ? "# %d FAILED\n" : "# ALL TESTS PASSED\n", failures);
	return failures ? 1 : 0;
}
