/*
 * bindbench: what one event costs in each binding, on the same join point
 * ("linker.bench_event", _NOSLEEP, bench_target.c) in one run, next to a
 * plain function call.  Cases: the plain call; the join point with no advice;
 * aspect "empty" (aspects/empty.c, one empty before advice) linked direct;
 * the floor of shm (the same struct scope_event written into a plain per-CPU
 * array); empty linked shm (the producer side only: the monitor drains on its
 * own CPU); linked msg one-way; msg synchronous (a round trip to the monitor)
 * when the monitor runs on another CPU, from the _NOSLEEP join point (the
 * advice spins for the reply) and from "linker.bench_call", a join point
 * that may sleep (the thread blocks after the advice and the monitor's CPU is
 * woken); then, with this thread on the monitor's CPU, msg one-way and the
 * round trip from bench_call, where the call hands the CPU straight to the
 * monitor and its ms_ipc_reply_receive hands it back.  Two phases of that
 * round trip are timed alone: the same call from this thread to a kernel
 * thread answering with ipc_reply_receive on the same CPU (IPC and two
 * switches, no user space, no event), and the kernel's side of a getpid-like
 * crossing is proc_bench's.
 *
 * The command runs in the calling thread (the kshell system call from
 * userland/bindbench, run as init with monitor_cpus=1 on two CPUs): linking
 * may sleep and starts /bin/monitor, which needs a process context and the
 * initrd.  The thread pins itself to a CPU the monitor does not use.  Events
 * are timed in batches of BATCH with RDTSC, interrupts off (on for the
 * round trip, whose spin waits for the monitor's CPU), and between
 * batches the thread sleeps so the monitor drains the ring or queue (a full
 * one would drop, and a drop is cheaper than an event: drops are printed).
 * A synchronous msg event from a join point that may not sleep cannot be
 * answered by a monitor on the same CPU (it fails at once with -EDEADLK and
 * counts a drop); that case is not run.
 * Under QEMU -icount shift=0 the figures are guest instructions; the lines
 * "bind_bench: case <name> events <n> ticks <t> drops <d>" are read by
 * tests/bench.py.
 */
#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "ipc/ipc.h"
#include "kshell/kshell.h"
#include "lib/errno.h"
#include "linker/weave/bench_internal.h"
#include "linker/weave/weave.h"
#include "sched/sched.h"
#include "time/time.h"

#define BENCH_EVENTS  2048
#define BATCH         32 /* below the monitor queue (IPC_QUEUE_MAX) and ring sizes */
#define DRAIN_NS      (2 * NSEC_PER_MSEC)
#define SYNC_DEADLINE (200 * NSEC_PER_MSEC)
#define FLOOR_SLOTS   64

static struct scope_event floor_array[MAX_CPUS][FLOOR_SLOTS];

enum bench_kind { RUN_LOOP, RUN_PLAIN, RUN_EVENT, RUN_EVENT_IRQS_ON, RUN_FLOOR, RUN_CALL, RUN_IPC };

/* The kernel server of RUN_IPC: answers until its endpoint closes. */
static struct ipc_endpoint *ipc_server_endpoint;

static int ipc_server(void *arg)
{
	struct ipc_endpoint *e = arg;
	struct ipc_message m, r = {.label = 1};
	int error = ipc_receive(e, &m, IPC_FOREVER);
	while (error == 0)
		error = ipc_reply_receive(e, m.token, &r, &m, IPC_FOREVER);
	ipc_endpoint_put(e);
	return 0;
}

static void ipc_round_trip(void)
{
	struct ipc_message m, r;
	m.label = 1;
	m.length = 0;
	ipc_call(ipc_server_endpoint, &m, &r, SYNC_DEADLINE);
}

/* Ticks for BATCH events of kind, interrupts off. */
static uint64_t time_batch(enum bench_kind kind)
{
	bool irqs_on = kind == RUN_EVENT_IRQS_ON || kind == RUN_CALL || kind == RUN_IPC;
	uint64_t flags = irqs_on ? 0 : irq_save();
	struct scope_event *slots = floor_array[this_cpu_id()];
	uint64_t start = rdtsc();
	for (unsigned i = 0; i < BATCH; i++) {
		switch (kind) {
		case RUN_LOOP: __asm__ volatile(""); break;
		case RUN_PLAIN: linker_bench_plain(); break;
		case RUN_EVENT:
		case RUN_EVENT_IRQS_ON: linker_bench_event(); break;
		case RUN_FLOOR: linker_bench_floor(&slots[i % FLOOR_SLOTS]); break;
		case RUN_CALL: linker_bench_call(); break;
		case RUN_IPC: ipc_round_trip(); break;
		}
	}
	uint64_t ticks = rdtsc() - start;
	if (!irqs_on)
		irq_restore(flags);
	return ticks;
}

static uint64_t drops_of(struct aspect *aspect)
{
	struct aspect_stats stats;
	return aspect && !aspect_get_stats(aspect, &stats) ? stats.drops : 0;
}

/* Times BENCH_EVENTS events (after one batch of warm-up) and prints a line. */
static void run_case(const char *name, enum bench_kind kind, struct aspect *aspect, bool drain)
{
	time_batch(kind);
	if (drain)
		sched_sleep_ns(DRAIN_NS);
	uint64_t drops = drops_of(aspect), ticks = 0;
	for (unsigned done = 0; done < BENCH_EVENTS; done += BATCH) {
		ticks += time_batch(kind);
		if (drain)
			sched_sleep_ns(DRAIN_NS);
	}
	struct aspect_stats stats = {.state = ASPECT_LIVE};
	if (aspect)
		aspect_get_stats(aspect, &stats);
	if (stats.state != ASPECT_LIVE) {
		kshell_print("bind_bench: no %s: the aspect was unlinked (%s)\n", name,
			     stats.last_failure);
		aspect_link(aspect, ASPECT_BINDING_MSG);
		return;
	}
	kshell_print("bind_bench: case %s events %u ticks %lu drops %lu cpu %u\n", name,
		     BENCH_EVENTS, ticks, drops_of(aspect) - drops, this_cpu_id());
}

/* Returns the aspect "empty", loading /aspects/empty.o when needed, or NULL. */
static struct aspect *empty_aspect(void)
{
	char error[LINKER_ERROR_MAX] = "";
	struct aspect *aspect = aspect_find("empty");
	if (!aspect && linker_load_file("/aspects/empty.o", &aspect, error, sizeof error) < 0) {
		kshell_print("bind_bench: cannot load /aspects/empty.o: %s\n", error);
		return NULL;
	}
	return aspect;
}

/* The CPU the monitor is kept on (the lowest of monitor_cpus=), or -1. */
static int monitor_cpu(void)
{
	uint64_t cpus = sched_monitor_cpus();
	return cpus ? __builtin_ctzll(cpus) : -1;
}

/* The IPC phase alone: a call to a kernel thread on this CPU. */
static void run_ipc_case(void)
{
	struct ipc_endpoint *e = ipc_endpoint_create("bench", 4);
	if (!e)
		return;
	ipc_server_endpoint = e;
	struct thread *server =
	    thread_create(ipc_server, ipc_endpoint_get(e), "ipc-bench", SCHED_PRIORITY_NORMAL);
	if (server) {
		thread_set_affinity(server, 1ull << this_cpu_id());
		run_case("ipc-call-same", RUN_IPC, NULL, false);
		ipc_endpoint_close(e);
		thread_join(server, NULL);
	} else {
		ipc_endpoint_put(e); /* the server's reference */
	}
	ipc_endpoint_put(e);
}

static int run_bindings(struct aspect *a)
{
	int err = aspect_link(a, ASPECT_BINDING_DIRECT);
	if (err)
		return err;
	run_case("direct-empty", RUN_EVENT, a, false);
	if ((err = aspect_relink(a, ASPECT_BINDING_SHM)))
		return err;
	run_case("shm-producer", RUN_EVENT, a, true);
	if ((err = aspect_relink(a, ASPECT_BINDING_MSG)))
		return err;
	run_case("msg-oneway-other", RUN_EVENT, a, true);
	if (monitor_cpu() >= 0 && monitor_cpu() != (int)this_cpu_id()) {
		scope_set_msg_mode(1, SYNC_DEADLINE);
		run_case("msg-roundtrip-other", RUN_EVENT_IRQS_ON, a, false);
		run_case("msg-call-other", RUN_CALL, a, false);
		scope_set_msg_mode(0, 0);
	}
	int cpu = monitor_cpu();
	if (cpu >= 0 && !thread_set_affinity(thread_current(), 1ull << cpu)) {
		run_case("msg-oneway-same", RUN_EVENT, a, true);
		scope_set_msg_mode(1, SYNC_DEADLINE);
		run_case("msg-call-same", RUN_CALL, a, false);
		scope_set_msg_mode(0, 0);
		run_ipc_case();
	} else {
		kshell_print("bind_bench: no msg-oneway-same: this thread may not run on the "
			     "monitor's CPU\n");
	}
	return aspect_unlink(a);
}

static int cmd_bindbench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct aspect *a = empty_aspect();
	if (!a)
		return -ENOENT;
	uint64_t saved = thread_affinity(thread_current());
	int cpu = monitor_cpu();
	for (unsigned c = 0; c < 64 && cpu >= 0; c++)
		if (c != (unsigned)cpu && !thread_set_affinity(thread_current(), 1ull << c))
			break;
	kshell_print("bind_bench: running on CPU %u, monitor CPU %d\n", this_cpu_id(), cpu);
	run_case("loop", RUN_LOOP, NULL, false);
	run_case("plain", RUN_PLAIN, NULL, false);
	run_case("disabled", RUN_EVENT, NULL, false);
	run_case("floor", RUN_FLOOR, NULL, false);
	int err = run_bindings(a);
	if (err)
		kshell_print("bind_bench: binding failed (%d)\n", err);
	scope_set_msg_mode(0, 0);
	thread_set_affinity(thread_current(), saved);
	aspect_put(a);
	kshell_print("bind_bench: done\n");
	return err;
}
KSHELL_COMMAND(bindbench, cmd_bindbench, "bindbench",
	       "time one event in every binding of aspect empty (make bench)");
