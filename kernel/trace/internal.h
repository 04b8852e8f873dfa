/* What the files of kernel/trace share: the recorder's advice. */
#ifndef KERNEL_TRACE_INTERNAL_H
#define KERNEL_TRACE_INTERNAL_H

#include "trace/trace.h"

struct jp_advice;
struct joinpoint;
struct jp_fast_list;
/* The recorder (record.c): entry and exit records on join points that may
 * sleep, one call record on those that cannot; attached with the filters. */
extern const struct jp_advice trace_record_sleeping;
extern const struct jp_advice trace_record_nosleep;
/* The call record of join point index (its place in the registry), in C: the
 * fast path's way out for every case but the common one, and record.c's. */
void trace_record_call_slow(unsigned index, uint64_t entry_tsc, uint64_t argument, uint64_t result);
/* The header word of jp's call record, kept in its list for the fast path
 * (jp_advice.fast_word). */
uint32_t trace_call_header(const struct joinpoint *jp);
/* The header word of jp's entry record (its exit's is one more), kept in its
 * list for the whole-call path (jp_advice.fast_word). */
uint32_t trace_entry_header(const struct joinpoint *jp);
/* The recorder's around on a join point that may sleep (record_fast.c: the
 * entry record, the call, the exit record), and its ways out to C. */
uint64_t trace_record_whole_call(const struct joinpoint *jp, uint64_t *args,
				 const struct jp_fast_list *list);
void trace_record_entry_slow(const struct joinpoint *jp, uint64_t argument);
uint64_t trace_record_exit_slow(unsigned type, uint64_t result);
/* What the drain thread does once: every CPU's records into packets for the
 * sink.  Returns the records moved.  For the benchmark, which holds the
 * drain thread off with interrupts. */
uint64_t trace_drain_now(void);
/* The stream's epoch for references (uscope.c): a stream begins (references
 * only where no record is overwritten: not in a flight recorder), ends, or
 * lost a packet (stacks sent before may never reach the reader). */
void uscope_stream_begins(bool references);
void uscope_stream_ends(void);
void uscope_stream_lost(void);

/* Who changes the trace map (uscope.c): the console, the host or a program
 * with PRIV_MONITOR (entries for every user's processes), or a program's
 * user (proc_current_owner: entries for that user's processes only). */
struct uscope_requester {
	bool every_user;
	uint32_t owner;
};
/* uscope_trace for who: adds its entry for name, or changes the one it has
 * (a user has at most USCOPE_USER_MAX).  Returns the slot, -EINVAL or
 * -ENOSPC. */
int uscope_trace_as(const char *name, unsigned mode, unsigned budget, const char *events,
		    struct uscope_requester who);
/* Takes who's entry for name out; one for every user may take out a user's
 * entry of that name when it has none.  Returns 0, -ENOENT or -EPERM (only
 * another user's entry has the name). */
int uscope_untrace_as(const char *name, struct uscope_requester who);
/* The entries who may see (every user's and its own; all for every user),
 * up to count into info; returns how many there are. */
int uscope_list_as(struct uscope_info *info, int count, struct uscope_requester who);

bool trace_may_sleep(const struct joinpoint *jp);
bool trace_cannot_sleep(const struct joinpoint *jp);

/* Runs the recorder's benchmark and stops the machine, if trace_bench was
 * given (bench.c, test kernel only). */
#ifdef KERNEL_TESTS
void trace_bench_run_if_requested(void);
#else
static inline void trace_bench_run_if_requested(void)
{
} /* benchmarks: test kernel only */
#endif

#endif
