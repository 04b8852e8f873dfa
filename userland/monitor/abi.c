/*
 * The aspect ABI in the monitor (microscope/aspect.h): the same functions the
 * kernel offers `direct` advice, answered from the event record the join
 * point sent (context accessors), from this process's memory (counters and
 * histograms, per aspect, handed to the kernel at each FLUSH), and from the
 * kernel (the clock, device counters, and the telemetry channel records are
 * emitted to).  The monitor runs one advice at a time, so the aspect
 * whose advice runs is a plain global.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "monitor.h"
#include "uapi/lattrack.h"

struct monitor_aspect *monitor_running;

unsigned ms_argc(const struct ms_ctx *ctx)
{
	return ctx->event->argc;
}

uint64_t ms_arg(const struct ms_ctx *ctx, unsigned i)
{
	return i < ctx->event->argc && i < 6 ? ctx->event->args[i] : 0;
}

uint64_t ms_retval(const struct ms_ctx *ctx)
{
	return ctx->event->ret;
}

uint64_t ms_entry_ns(const struct ms_ctx *ctx)
{
	return ctx->event->entry_ns;
}

uint64_t ms_exit_ns(const struct ms_ctx *ctx)
{
	return ctx->event->exit_ns;
}

unsigned ms_cpu(const struct ms_ctx *ctx)
{
	return ctx->event->cpu;
}

int ms_pid(const struct ms_ctx *ctx)
{
	return ctx->event->pid;
}

int ms_tid(const struct ms_ctx *ctx)
{
	return ctx->event->tid;
}

int ms_program_name(const struct ms_ctx *ctx, char *buf, size_t length)
{
	if (!buf || length == 0)
		return -22;
	size_t n = strnlen(ctx->event->program, sizeof ctx->event->program);
	size_t copy = n < length - 1 ? n : length - 1;
	memcpy(buf, ctx->event->program, copy);
	buf[copy] = '\0';
	return (int)n;
}

/* Join points are numbered once for the life of the kernel (the registry is
 * a linker section), so a name, asked for the first time an advice wants it,
 * is kept for good.  Past JOINPOINT_CACHE, or without memory, the name is
 * asked for each time (in the scratch buffer). */
#define JOINPOINT_CACHE 1024

static char *joinpoint_names[JOINPOINT_CACHE];

/* Asks the kernel for the name of join point index into c.  Returns 0 or a
 * negative error (-ENOENT: no such join point). */
static long fetch_joinpoint_name(uint32_t index, struct scope_ctl *c)
{
	memset(c, 0, sizeof *c);
	c->op = SCOPE_JOINPOINT_NAME;
	c->value = index;
	return ms_syscall3(__NR_ms_scope_ctl, (long)c, 0, 0);
}

const char *ms_joinpoint_name(const struct ms_ctx *ctx)
{
	static struct scope_ctl scratch;
	uint32_t index = ctx->event->joinpoint;
	if (index < JOINPOINT_CACHE && joinpoint_names[index])
		return joinpoint_names[index];
	if (fetch_joinpoint_name(index, &scratch) != 0)
		return "";
	if (index < JOINPOINT_CACHE)
		joinpoint_names[index] = strdup(scratch.name);
	return index < JOINPOINT_CACHE && joinpoint_names[index] ? joinpoint_names[index]
								 : scratch.name;
}

uint64_t ms_activity(const struct ms_ctx *ctx)
{
	return ctx->event->activity;
}

uint64_t ms_now_ns(void)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

int ms_counter_add(const char *name, int64_t delta)
{
	return monitor_running ? linker_counter_add(&monitor_running->counters, name, delta) : -22;
}

int ms_hist_record(const char *name, uint64_t value)
{
	return monitor_running ? linker_hist_record(&monitor_running->counters, name, value) : -22;
}

/* Into the kernel's "aspects" telemetry channel, the one direct aspects emit
 * to, in the same format and counted the same way (ms_scope_emit). */
int ms_emit(uint32_t type, const void *payload, size_t length)
{
	if (!monitor_running || length > MS_EMIT_MAX || (length && !payload))
		return -22;
	return (int)ms_syscall6(__NR_ms_scope_emit, monitor_running->id, type, (long)payload,
				(long)length, 0, 0);
}

/* The kernel's own answer (ms_scope_device_counter): the same counters as in
 * every other binding. */
int ms_device_counter(const char *device, const char *counter, uint64_t *value)
{
	if (!device || !counter || !value)
		return -22;
	return (int)ms_syscall3(__NR_ms_scope_device_counter, (long)device, (long)counter,
				(long)value);
}

/* A call's reply goes back with the answer to the call; otherwise (shm,
 * one-way msg) the kernel keeps it for the join point's owner, under the
 * event's first argument, as it keeps a direct advice's. */
int ms_reply(struct ms_ctx *ctx, int64_t value)
{
	if (!(ctx->event->flags & SCOPE_EVENT_CALL))
		return (int)ms_syscall3(__NR_ms_scope_reply, ctx->event->joinpoint,
					(long)(ctx->event->argc ? ctx->event->args[0] : 0),
					(long)value);
	ctx->replied = true;
	ctx->reply = value;
	return 0;
}

void ms_log(const char *text)
{
	printf("monitor: %s: %.120s\n", monitor_running ? monitor_running->object.name : "?", text);
}

/* ---- Latency trackers: the kernel's, through ms_lattrack_create/event -------
 * A handle is a descriptor: ms_lattrack_create with LATTRACK_CREATE_OR_OPEN
 * opens the tracker the aspect's kernel image made in its MS_INIT (both run
 * as root), so every binding feeds the same tracker.  The descriptors an
 * aspect holds are closed when it is unlinked here. */
#define MONITOR_TRACKERS 16

static struct {
	struct monitor_aspect *aspect;
	int fd;
} trackers[MONITOR_TRACKERS];

int ms_lattrack_create(const char *name, uint64_t threshold_ns, uint64_t timeout_ns)
{
	struct lattrack_config config = {.threshold_ns = threshold_ns,
					 .timeout_ns = timeout_ns,
					 .flags = LATTRACK_CREATE_OR_OPEN};
	int slot = 0;
	while (slot < MONITOR_TRACKERS && trackers[slot].aspect)
		slot++;
	if (!monitor_running || !name || strlen(name) >= sizeof config.name)
		return -22;
	if (slot == MONITOR_TRACKERS)
		return -28;
	strcpy(config.name, name);
	long fd = ms_syscall3(__NR_ms_lattrack_create, (long)&config, 0, 0);
	if (fd < 0)
		return (int)fd;
	trackers[slot].aspect = monitor_running;
	trackers[slot].fd = (int)fd;
	return (int)fd;
}

/* Is fd one of the running aspect's trackers? */
static int owns(int fd)
{
	for (int i = 0; i < MONITOR_TRACKERS; i++)
		if (trackers[i].aspect && trackers[i].aspect == monitor_running &&
		    trackers[i].fd == fd)
			return 1;
	return 0;
}

int ms_lattrack_event_in(int tracker, const void *key, unsigned length, unsigned unique)
{
	if (!owns(tracker) || length == 0 || length > 8)
		return -22;
	unsigned op = unique ? LATTRACK_OP_IN_UNIQUE : LATTRACK_OP_IN;
	return (int)ms_syscall6(__NR_ms_lattrack_event, tracker, op, (long)key, length, 0, 0);
}

int ms_lattrack_event_out(int tracker, const void *key, unsigned length, unsigned id)
{
	if (!owns(tracker) || length == 0 || length > 8)
		return -22;
	return (int)ms_syscall6(__NR_ms_lattrack_event, tracker, LATTRACK_OP_OUT, (long)key, length,
				id, 0);
}

int ms_lattrack_destroy(int tracker)
{
	for (int i = 0; i < MONITOR_TRACKERS; i++) {
		if (trackers[i].aspect && trackers[i].aspect == monitor_running &&
		    trackers[i].fd == tracker) {
			close(tracker);
			trackers[i].aspect = NULL;
			return 0;
		}
	}
	return -22;
}

void monitor_lattrack_release(struct monitor_aspect *aspect)
{
	for (int i = 0; i < MONITOR_TRACKERS; i++) {
		if (trackers[i].aspect == aspect) {
			close(trackers[i].fd);
			trackers[i].aspect = NULL;
		}
	}
}

void monitor_run_lifecycle(struct monitor_aspect *aspect, void (*call)(void *), void *arg)
{
	monitor_running = aspect;
	call(arg);
	monitor_running = NULL;
}

static const struct linker_abi_symbol abi_table[] = {LINKER_ABI_FUNCTIONS(LINKER_ABI_SYMBOL)};

int monitor_abi_resolve(void *env, const char *name, uint64_t *address);
int monitor_abi_resolve(void *env, const char *name, uint64_t *address)
{
	(void)env;
	return linker_abi_lookup(abi_table, sizeof abi_table / sizeof abi_table[0], name, address);
}
