/*
 * The aspect ABI as the kernel implements it, for the `direct` binding: the
 * functions declared in aspects/include/microscope/aspect.h, and the table
 * (linker_abi_resolve) that is the only thing an aspect's undefined symbols
 * can resolve against.  The struct ms_ctx an advice receives is this CPU's
 * struct linker_run (guard.c); functions without a context find the running
 * aspect there too.  Everything here runs inside advice: no sleeping, no
 * locks held while touching memory the aspect passed in, which is read with
 * trap_read_kernel_word so a bad pointer gives an error instead of a fault
 * in the kernel (guard.c catches faults only in aspect text).
 */
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/traps.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/internal.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "telemetry/telemetry.h"
#include "telemetry/tracepoint.h"
#include "time/time.h"

static const struct linker_run *run_of(const struct ms_ctx *ctx)
{
	return (const struct linker_run *)ctx;
}

/* The join point's context, or NULL when ctx is not the running advice's
 * own (checked, never dereferenced: an aspect may pass anything). */
static const struct jp_context *jp_of(const struct ms_ctx *ctx)
{
	const struct linker_advice_frame *frame = linker_advice_frame(ctx);
	return frame ? frame->context : NULL;
}

/* Copies the string at address into buf (size bytes), reading word by word
 * without risking a fault.  Returns its length, or -EFAULT. */
static long copy_string_safely(const char *address, char *buf, size_t size)
{
	uint64_t at = (uint64_t)address;
	for (size_t n = 0; n + 1 < size; n++) {
		uint64_t word;
		if (!address || trap_read_kernel_word((at + n) & ~7ULL, &word))
			return -EFAULT;
		char c = (char)(word >> (8 * ((at + n) & 7)));
		buf[n] = c;
		if (!c)
			return (long)n;
	}
	buf[size - 1] = '\0';
	return (long)(size - 1);
}

unsigned ms_argc(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? jp->joinpoint->argc : 0;
}

uint64_t ms_arg(const struct ms_ctx *ctx, unsigned i)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp && i < jp->joinpoint->argc ? jp->args[i] : 0;
}

uint64_t ms_retval(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp && run_of(ctx)->after ? jp->ret : 0;
}

/* A TSC value from the context as clock_ns() time: the same TSC always gives
 * the same time, so exit - entry is exact. */
static uint64_t tsc_to_clock_ns(uint64_t tsc)
{
	return tsc ? clock_ns_at_tsc(tsc) : 0;
}

uint64_t ms_entry_ns(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? tsc_to_clock_ns(jp->entry_tsc) : 0;
}

uint64_t ms_exit_ns(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp && run_of(ctx)->after ? tsc_to_clock_ns(jp->exit_tsc) : 0;
}

unsigned ms_cpu(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? jp->cpu : this_cpu_id();
}

static struct thread *thread_of(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? jp->thread : thread_current();
}

int ms_pid(const struct ms_ctx *ctx)
{
	struct thread *t = thread_of(ctx);
	struct process *p = t ? thread_process(t) : NULL;
	return p ? proc_pid(p) : 0;
}

int ms_tid(const struct ms_ctx *ctx)
{
	struct thread *t = thread_of(ctx);
	return t ? (int)thread_id(t) : 0;
}

int ms_program_name(const struct ms_ctx *ctx, char *buf, size_t length)
{
	if (!buf || !length)
		return -EINVAL;
	if (!linker_may_write_for_aspect(buf, length, "ms_program_name"))
		return -EFAULT;
	struct thread *t = thread_of(ctx);
	struct process *p = t ? thread_process(t) : NULL;
	const char *name = p ? proc_name(p) : "kernel";
	return (int)strlcpy(buf, name, length);
}

const char *ms_joinpoint_name(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? jp->joinpoint->name : "";
}

uint64_t ms_activity(const struct ms_ctx *ctx)
{
	const struct jp_context *jp = jp_of(ctx);
	return jp ? jp->activity : 0;
}

uint64_t ms_now_ns(void)
{
	return clock_ns();
}

static struct aspect *running_aspect(void)
{
	struct linker_run *run = linker_current_run();
	return run ? run->aspect : NULL;
}

int ms_counter_add(const char *name, int64_t delta)
{
	struct aspect *aspect = running_aspect();
	char key[MS_NAME_MAX];
	if (!aspect || copy_string_safely(name, key, sizeof key) < 0)
		return -EINVAL;
	return linker_counter_add(aspect->counters, key, delta);
}

int ms_hist_record(const char *name, uint64_t value)
{
	struct aspect *aspect = running_aspect();
	char key[MS_NAME_MAX];
	if (!aspect || copy_string_safely(name, key, sizeof key) < 0)
		return -EINVAL;
	return linker_hist_record(aspect->counters, key, value);
}

int ms_emit(uint32_t type, const void *payload, size_t length)
{
	struct aspect *aspect = running_aspect();
	if (!aspect || length > MS_EMIT_MAX || (length && !payload))
		return -EINVAL;
	return linker_emit_record(aspect, type, payload, length);
}

/* Device counters the kernel itself keeps; drivers answer for their devices
 * through the registered source (linker_set_device_source). */
static int kernel_device_counter(const char *device, const char *counter, uint64_t *value)
{
	if (strcmp(device, "timer") == 0 && strcmp(counter, "ticks") == 0)
		*value = timer_tick_count();
	else if (strcmp(device, "memory") == 0 && strcmp(counter, "free_frames") == 0)
		*value = pmm_count_free();
	else if (strcmp(device, "memory") == 0 && strcmp(counter, "total_frames") == 0)
		*value = pmm_count_total();
	else if (strcmp(device, "cpu") == 0 && strcmp(counter, "interrupts") == 0)
		*value = this_cpu()->stats.interrupts;
	else if (strcmp(device, "cpu") == 0 && strcmp(counter, "context_switches") == 0)
		*value = this_cpu()->stats.context_switches;
	else
		return -ENOENT;
	return 0;
}

int ms_device_counter(const char *device, const char *counter, uint64_t *value)
{
	char d[MS_NAME_MAX], c[MS_NAME_MAX];
	if (copy_string_safely(device, d, sizeof d) < 0 ||
	    copy_string_safely(counter, c, sizeof c) < 0 || !value)
		return -EINVAL;
	if (!linker_may_write_for_aspect(value, sizeof *value, "ms_device_counter"))
		return -EFAULT;
	uint64_t result = 0;
	int err = kernel_device_counter(d, c, &result);
	if (err == -ENOENT)
		err = linker_device_source_read(d, c, &result);
	if (!err)
		*value = result;
	return err;
}

/* direct: the owner takes the reply when the join point returns
 * (aspect_reply_take), keyed by the join point's first argument. */
int ms_reply(struct ms_ctx *ctx, int64_t value)
{
	const struct jp_context *jp = jp_of(ctx);
	if (!jp)
		return -EINVAL; /* init or exit: no join point to answer */
	uint64_t key = jp->joinpoint->argc ? jp->args[0] : 0;
	return aspect_reply_post(jp->joinpoint, key, value);
}

void ms_log(const char *text)
{
	struct aspect *aspect = running_aspect();
	char line[120];
	if (copy_string_safely(text, line, sizeof line) < 0)
		return;
	pr_info("aspect %s: %s\n", aspect ? aspect->name : "?", line);
}

void *linker_aspect_memcpy(void *dst, const void *src, size_t n)
{
	if (linker_may_write_for_aspect(dst, n, "memcpy"))
		linker_string_copy(dst, src, n);
	return dst;
}

void *linker_aspect_memmove(void *dst, const void *src, size_t n)
{
	if (!linker_may_write_for_aspect(dst, n, "memmove"))
		return dst;
	if ((uintptr_t)dst - (uintptr_t)src < n) /* above an overlapping source */
		linker_string_copy_back(dst, src, n);
	else
		linker_string_copy(dst, src, n);
	return dst;
}

void *linker_aspect_memset(void *dst, int c, size_t n)
{
	if (linker_may_write_for_aspect(dst, n, "memset"))
		linker_string_fill(dst, c, n);
	return dst;
}

int linker_aspect_memcmp(const void *a, const void *b, size_t n)
{
	return linker_string_compare(a, b, n);
}

/* The kernel's table: every ABI name, the string functions bound to the
 * guard's copies (linker_aspect_*: a fault in the kernel's own memcpy would be
 * a kernel panic, in these it is the advice's). */
#define KERNEL_ABI_STRING(fn) {#fn, (uint64_t)linker_aspect_##fn},

static const struct linker_abi_symbol abi_table[] = {
    LINKER_ABI_STRINGS(KERNEL_ABI_STRING) LINKER_ABI_CALLS(LINKER_ABI_SYMBOL)
	LINKER_ABI_DIRECT_ONLY(LINKER_ABI_SYMBOL)};

int linker_abi_resolve(void *env, const char *name, uint64_t *address)
{
	(void)env;
	return linker_abi_lookup(abi_table, sizeof abi_table / sizeof abi_table[0], name, address);
}

/* The stream channel "aspects" that ms_emit writes under `direct`: one ring
 * per CPU, created with the first aspect; the host or a user process reads
 * it like any other telemetry channel. */
static struct tel_channel *emit_channel;

void linker_emit_init(void)
{
	static struct tel_channel *created;
	if (__atomic_load_n(&created, __ATOMIC_ACQUIRE))
		return;
	struct tel_channel *channel = tel_channel_create("aspects", 64 * 1024, TEL_STREAM);
	struct tel_channel *expected = NULL;
	if (channel && !__atomic_compare_exchange_n(&created, &expected, channel, false,
						    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		tel_channel_destroy(channel);
		return;
	}
	__atomic_store_n(&emit_channel, channel, __ATOMIC_RELEASE);
}

/* Copies length bytes from address without risking a fault.  Returns 0 or
 * -EFAULT. */
static int copy_bytes_safely(const void *address, void *buffer, size_t length)
{
	uint64_t at = (uint64_t)address;
	uint8_t *out = buffer;
	for (size_t n = 0; n < length; n++) {
		uint64_t word;
		if (trap_read_kernel_word((at + n) & ~7ULL, &word))
			return -EFAULT;
		out[n] = (uint8_t)(word >> (8 * ((at + n) & 7)));
	}
	return 0;
}

/* The emitted record into the trace stream too, when a trace runs. */
static void trace_emit(uint32_t type, const uint8_t *payload, size_t length)
{
	struct {
		struct trace_mark mark;
		uint8_t data[MS_EMIT_MAX];
	} event = {.mark = {.type = type, .length = (uint32_t)length}};
	memcpy(event.data, payload, length);
	tracepoint_write(TRACE_ASPECT_EMIT, &event, (uint32_t)(sizeof event.mark + length));
}

int linker_emit_record(struct aspect *aspect, uint32_t type, const void *payload, size_t length)
{
	uint8_t copy[MS_EMIT_MAX];
	struct tel_channel *channel = __atomic_load_n(&emit_channel, __ATOMIC_ACQUIRE);
	if (type == TEL_TYPE_PAD || type > UINT16_MAX || copy_bytes_safely(payload, copy, length))
		return -EINVAL;
	if (tracepoint_on())
		trace_emit(type, copy, length);
	int err =
	    channel ? tel_channel_emit(channel, (uint16_t)type, copy, (uint32_t)length) : -ENOBUFS;
	if (err == -ENOBUFS)
		aspect_count_drop(aspect);
	else if (!err)
		__atomic_fetch_add(&aspect->emitted, 1, __ATOMIC_RELAXED);
	return err;
}
