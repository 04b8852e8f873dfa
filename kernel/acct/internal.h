/*
 * The accounting module's own declarations: one state per accounted thread
 * (its results page, its tokens' bookkeeping, the stack of join point calls
 * it is inside), the table of them, and the calls between acct.c (tokens,
 * pages), advice.c (the measuring) and weave.c.  Nothing outside kernel/acct/
 * includes this file.
 *
 * Lock: acct_lock (irqsave: the advice runs on sched.switch with interrupts
 * off) guards the table and every owner's fields and page.
 */
#ifndef KERNEL_ACCT_INTERNAL_H
#define KERNEL_ACCT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "acct/acct.h"
#include "cpu/spinlock.h"

#define ACCT_MAX_OWNERS 16 /* threads with accounting state at once */
#define ACCT_MAX_DEPTH  24 /* nested join point calls tracked; deeper ones are not */

/* One open join point call of an accounted thread. */
struct acct_frame {
	uint64_t entry_ns;
	uint8_t token; /* index of the token charged */
	uint8_t slot;  /* its subsystem slot */
};

struct acct_owner {
	uint64_t thread_id; /* 0: the entry is free */
	int pid;
	uint64_t phys; /* the results page */
	struct acct_page *page;
	int current;         /* token index being charged, or -1 */
	int next;            /* token index waiting for the next system call, or -1 */
	bool oneshot;        /* current came from ACCT_NEXT: stops with its call */
	uint64_t stretch_ns; /* wall time of current counted up to here */
	uint64_t on_cpu_ns;  /* CPU time of current counted up to here */
	uint64_t off_ns;     /* switched out at, 0 while on a CPU */
	bool off_runnable;   /* preempted, not blocked */
	unsigned depth;
	struct acct_frame frames[ACCT_MAX_DEPTH];
	/* The module name each subsystem slot was opened for (pointer compared
	 * first, then the text). */
	const char *modules[ACCT_MAX_TOKENS][ACCT_MAX_SUBSYSTEMS];
};

extern struct spinlock acct_lock;
extern struct acct_owner acct_owners[ACCT_MAX_OWNERS];

/* acct.c, under acct_lock */
struct acct_owner *acct_find_owner(uint64_t thread_id);
void acct_result_begin(struct acct_result *r);
void acct_result_end(struct acct_result *r);
/* Counts wall and CPU time of the current token up to now. */
void acct_update_current(struct acct_owner *o, uint64_t now);
void acct_make_current(struct acct_owner *o, int index, uint64_t now);
void acct_stop_current(struct acct_owner *o, uint64_t now);

/* advice.c */
extern const struct jp_advice acct_advice;

/* weave.c: attaches the advice while some owner has a current or pending
 * token, detaches it otherwise.  Sleeps; not under acct_lock. */
void acct_weave_update(void);
/* Attaches the advice now, for a token about to start; a later
 * acct_weave_update detaches it if nothing started after all. */
void acct_weave_attach(void);

#endif
