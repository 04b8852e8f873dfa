/*
 * tracer: emits one telemetry record for every file opened or looked up: when,
 * where (CPU, process, thread), which program, and which join point.  Counts
 * records that went out ("records") and those the ring dropped ("dropped").
 */
#include <microscope/aspect.h>

MS_ASPECT("tracer", "emits a telemetry record per vfs open and stat");

#define TRACER_RECORD 0x7472 /* "tr" */

struct trace_record {
	uint64_t time_ns;
	uint32_t cpu;
	int32_t pid;
	int32_t tid;
	uint32_t reserved;
	char program[16];
	char joinpoint[32];
};

static void copy_name(char *dst, const char *src, size_t size)
{
	size_t i = 0;
	for (; i + 1 < size && src[i]; i++)
		dst[i] = src[i];
	for (; i < size; i++)
		dst[i] = '\0';
}

static void trace(struct ms_ctx *ctx)
{
	struct trace_record record;
	record.time_ns = ms_now_ns();
	record.cpu = ms_cpu(ctx);
	record.pid = ms_pid(ctx);
	record.tid = ms_tid(ctx);
	record.reserved = 0;
	ms_program_name(ctx, record.program, sizeof record.program);
	copy_name(record.joinpoint, ms_joinpoint_name(ctx), sizeof record.joinpoint);
	if (ms_emit(TRACER_RECORD, &record, sizeof record) == 0)
		ms_counter_add("records", 1);
	else
		ms_counter_add("dropped", 1);
}

MS_BEFORE("vfs.open", trace, 10);
MS_BEFORE("vfs.stat", trace, 10);
