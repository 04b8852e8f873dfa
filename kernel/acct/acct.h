/*
 * Per-activity accounting: a thread marks where an activity (a request, a
 * query) starts and stops, and reads back what the kernel spent on it, per
 * subsystem (a module: the part of a join point's name before the dot).  The
 * results live in pages (ACCT_PAGES) per process, mapped read-only into that
 * process only and written by the kernel, so reading them needs no system
 * call; a sequence count per result keeps a read consistent.  The measuring
 * is native advice (native.c, charge.c) that the rscfl aspect
 * (aspects/rscfl.c) weaves on every join point ("*", which includes
 * sched.switch) while it is linked `direct`, only while some activity is
 * started: accounting off costs the NOPs.
 *
 *     struct acct_page *page = (void *)ms_syscall0(__NR_ms_acct_init);
 *     long token = ms_syscall0(__NR_ms_acct_get_token);
 *     ms_syscall2(__NR_ms_acct, token, ACCT_START); ...; ms_syscall2(__NR_ms_acct, token, ACCT_STOP);
 *
 * The page's layout and the flags, which user space (userland/librscfl)
 * shares, are in uapi/acct.h.
 */
#ifndef KERNEL_ACCT_ACCT_H
#define KERNEL_ACCT_ACCT_H

#include <stdint.h>

#include "uapi/acct.h"

/* A reference to one activity that work done later on its behalf carries (a
 * socket, a packet): which owner, which token, and the token's generation, so
 * that work for a token freed meanwhile is dropped.  0 is no activity. */
typedef uint64_t acct_ref_t;

/* What asynchronous work is charged with (acct_charge_ref). */
enum acct_counter {
	ACCT_TCP_BYTES_SENT,
	ACCT_TCP_BYTES_RECEIVED,
	ACCT_TCP_SEGMENTS_SENT,
	ACCT_TCP_SEGMENTS_RECEIVED,
	ACCT_TCP_RETRANSMITS,
	ACCT_NIC_PACKETS_SENT,
	ACCT_NIC_PACKETS_RECEIVED,
	ACCT_PAGE_CACHE_HITS,
	ACCT_PAGE_CACHE_MISSES,
	ACCT_PAGE_CACHE_EVICTIONS,
	ACCT_PAGE_CACHE_READ_BYTES,
	ACCT_PAGE_CACHE_READ_AHEAD,
};

/* ---- Kernel API (the system calls are thin layers over it) --------------- */

/* At boot: decides what each join point means for the accounting and gives
 * the linker the native advice the rscfl aspect weaves (native.c); reports
 * a failure, which leaves accounting to try again at its first link. */
void acct_boot_init(void);

/* Gives the calling thread (of a user process) its accounting state and maps
 * its results page read-only at ACCT_USER_ADDRESS, once per address space.
 * Returns that address, or -EPERM (a kernel thread), -ENOSPC (every state is
 * in use by a live thread, or the caller's user, not root, holds
 * ACCT_USER_THREADS of them or only ACCT_ROOT_RESERVED are free), -ENOMEM. */
int64_t acct_init_thread(void);
/* Allocates a token.  Returns it (1..ACCT_MAX_TOKENS), or -ENOSPC (all in
 * use), -ENOENT (no acct_init_thread yet). */
int acct_get_token(void);
/* Frees token, stopping it if started.  Returns 0, -EINVAL (not allocated),
 * -ENOENT. */
int acct_free_token(int token);
/* Applies ACCT_* flags to token.  Returns 0, or -EINVAL (token not allocated,
 * bad flags, STOP of a token that is not started), -EALREADY (START of a
 * started token), -ENOENT. */
int acct_control(int token, unsigned flags);
/* Makes token, which must be started, the current activity; the current one
 * becomes suspended.  Returns 0, -EINVAL (not allocated or not started),
 * -ENOENT. */
int acct_switch_token(int token);

/* The calling thread's current activity, or 0 when it has none. */
acct_ref_t acct_current_ref(void);
/* Adds amount to counter of the activity ref names; nothing when ref is 0 or
 * stale (its token freed or reset since).  Thread context, interrupts on or
 * off, never an interrupt handler (the owner's advice may hold its lock with
 * interrupts on); so are the others here. */
void acct_charge_ref(acct_ref_t ref, enum acct_counter counter, uint64_t amount);
/* Brackets work that another thread does for ref's activity: begin returns a
 * start time to hand to end, which charges the time between to async_ns and
 * counts one async item (nothing for 0 or a stale ref). */
uint64_t acct_async_begin(acct_ref_t ref);
void acct_async_end(acct_ref_t ref, uint64_t begin_ns);

/* ---- The kernel side of the rscfl aspect's ABI (microscope/aspect.h,
 * ms_acct_*), in charge.c; called from its advice (through abi.c) with the
 * join point's context, any context, never sleeping.  Flags and events have
 * the values of the ABI's MS_ACCT_* (abi.c checks that at compile time). */
#define ACCT_OUTERMOST 0x1u /* acct_call_enter: a system call, calls still open are stale */
#define ACCT_SYSCALL   0x1u /* acct_call_exit: the call was a system call */
enum acct_event {
	ACCT_INTERRUPT = 1, /* one interrupt [ns in its handler] */
	ACCT_PAGE_FAULT,    /* one page fault */
	ACCT_ALLOC,         /* one kernel allocation [bytes] */
	ACCT_FREE,          /* one kernel free [bytes, 0 when not known] */
};
struct jp_context;
struct thread;
/* Opens a call of context's module for its thread's charged result, started
 * at tsc (a TSC reading: the guard's, taken as the before advice began); on
 * success sets context->activity for the after advice.  Returns 1, or 0
 * (thread not accounted, nothing charged, too deep). */
int acct_call_enter(struct jp_context *context, unsigned flags, uint64_t tsc);
/* Closes that call at tsc (the after advice's start) and charges it.
 * Returns its ns, or 0 (not charged). */
uint64_t acct_call_exit(const struct jp_context *context, unsigned flags, uint64_t tsc);
/* The subsystem of the innermost open call of context's thread, "" when none. */
const char *acct_innermost_subsystem(const struct jp_context *context);
/* Charges event (ACCT_INTERRUPT, _PAGE_FAULT, _ALLOC, _FREE) with amount.
 * Returns 0, -ENOENT (thread not accounted), -EINVAL (unknown event). */
int acct_charge_event(const struct jp_context *context, unsigned event, uint64_t amount);
/* prev leaves its CPU, next comes on. */
void acct_note_switch(struct thread *prev, struct thread *next);

#endif
