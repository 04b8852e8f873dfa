/* What the files of kernel/trace share: the recorder's advice. */
#ifndef KERNEL_TRACE_INTERNAL_H
#define KERNEL_TRACE_INTERNAL_H

#include "mm/mm.h"
#include "trace/trace.h"
#include "uaccess/uaccess.h"

struct jp_advice;
struct joinpoint;
/* The recorder (record.c): entry and exit records on join points that may
 * sleep, one call record on those that cannot; attached with the filters. */
extern const struct jp_advice trace_record_sleeping;
extern const struct jp_advice trace_record_nosleep;
/* The call record of join point index (its place in the registry), in C: the
 * fast path's way out for every case but the common one, and record.c's. */
void trace_record_call_slow(unsigned index, uint64_t entry_tsc, uint64_t argument,
			    uint64_t result);
/* What the drain thread does once: every CPU's records into packets for the
 * sink.  Returns the records moved.  For the benchmark, which holds the
 * drain thread off with interrupts. */
uint64_t trace_drain_now(void);
/* The stacks each CPU has sent, by the registers and user words their walk
 * read (stack_memo.c): a stack found the same goes as a reference. */
#define STACK_MEMO_ENTRIES 64
#define STACK_MEMO_WORDS   12 /* user words a remembered walk read, at most */
#define STACK_MEMO_PAGES   2  /* user pages they lie in, at most */
struct stack_memo_key {
	uint64_t rip, rsp, rbp; /* where the walk starts */
	uint64_t identity;      /* the unwind tables' (lib/cfi.h) */
	uint64_t own_start, own_end;
	uint32_t config; /* what the mode keeps */
};
struct stack_memo_entry {
	struct stack_memo_key key;
	uint32_t epoch; /* the stream's when written (0: empty) */
	uint32_t id;    /* the user_stack_def's */
	uint8_t pages, words;
	struct vm_peek_path path[STACK_MEMO_PAGES];
	const uint8_t *at[STACK_MEMO_WORDS]; /* where each word was read (physmap) */
	uint64_t value[STACK_MEMO_WORDS];
};
/* A walk in progress: the words it read and the paths of its peek's pages. */
struct stack_memo_reading {
	unsigned words, pages_used; /* pages_used: a bit per peek slot */
	bool unusable;              /* too many words, or one read across pages */
	const uint8_t *at[STACK_MEMO_WORDS];
	uint64_t value[STACK_MEMO_WORDS];
	struct vm_peek_path paths[USER_PEEK_PAGES];
};
struct stack_memo {
	struct stack_memo_entry entries[STACK_MEMO_ENTRIES];
	uint8_t turn[STACK_MEMO_ENTRIES]; /* per set: the way to replace next */
	uint32_t next_id;
	struct stack_memo_reading reading;
};
/* The entry for key written in epoch, if every page and word its walk read
 * still holds as then (interrupts off), else NULL. */
const struct stack_memo_entry *stack_memo_find(struct stack_memo *memo,
					       const struct stack_memo_key *key, uint32_t epoch);
/* Before a walk whose reads stack_memo_note notes: peek finds its pages'
 * paths for the memo. */
void stack_memo_begin(struct stack_memo *memo, struct user_peek *peek);
/* The walk read length bytes (a multiple of 8) at physmap address at, in
 * peek's page slot. */
void stack_memo_note(struct stack_memo *memo, const uint8_t *at, unsigned slot, size_t length);
/* Keeps the walk just noted as key's stack, sent as id in epoch (unless it
 * read too much, or more pages than peek holds). */
void stack_memo_keep(struct stack_memo *memo, const struct stack_memo_key *key, uint32_t id,
		     uint32_t epoch, const struct user_peek *peek);
/* The stream's epoch for references (uscope.c): a stream begins (references
 * only where no record is overwritten: not in a flight recorder), ends, or
 * lost a packet (stacks sent before may never reach the reader). */
void uscope_stream_begins(bool references);
void uscope_stream_ends(void);
void uscope_stream_lost(void);

bool trace_may_sleep(const struct joinpoint *jp);
bool trace_cannot_sleep(const struct joinpoint *jp);

/* Runs the recorder's benchmark and stops the machine, if trace_bench was
 * given (bench.c, test kernel only). */
#ifdef KERNEL_TESTS
void trace_bench_run_if_requested(void);
#else
static inline void trace_bench_run_if_requested(void) {} /* benchmarks: test kernel only */
#endif

#endif
