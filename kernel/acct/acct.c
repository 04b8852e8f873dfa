/*
 * Accounting state and tokens.  A thread that calls acct_init_thread gets an
 * owner entry and one zeroed page of results, mapped read-only at
 * ACCT_USER_ADDRESS into its process's address space (not a region of the
 * process: fork does not copy it, exec drops it and the next init maps it
 * again; the kernel writes it through the physical map).  Tokens are slots in
 * that page.  At most one token of a thread is current (charged); starting
 * another suspends it, switching picks which started one is current.  While
 * the rscfl aspect is woven and none of an owner's tokens is current, its
 * time and work go to the page's `unattributed` result instead, so that the
 * sum over tokens plus unattributed is what the thread spent while woven.
 *
 * Owners of ended processes are reclaimed lazily, at the next
 * acct_init_thread of any thread (their thread ids never come back; a reused
 * pid keeps a stale entry alive until the pid's new process ends).
 */
#include <stddef.h>

#include "acct/internal.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "time/time.h"

uint32_t acct_lock;
struct acct_owner acct_owners[ACCT_MAX_OWNERS];

struct acct_owner *acct_owner_of(const struct thread *t)
{
	struct acct_owner *o = t ? thread_acct_state(t) : NULL;
	return o && __atomic_load_n(&o->thread, __ATOMIC_RELAXED) == t ? o : NULL;
}

struct acct_owner *acct_find_owner(uint64_t thread_id)
{
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++)
		if (thread_id && acct_owners[i].thread_id == thread_id)
			return &acct_owners[i];
	return NULL;
}

void acct_update_charged(struct acct_owner *o, uint64_t now)
{
	if (o->charged < 0)
		return;
	struct acct_result *r = acct_result_of(o, o->charged);
	acct_result_begin(r);
	r->wall_ns += now - o->stretch_ns;
	if (!o->off_ns)
		r->cpu_ns += now - o->on_cpu_ns;
	acct_result_end(r);
	o->stretch_ns = now;
	o->on_cpu_ns = now;
}

/* Charges result index from now on.  Under o's lock: the caller is the
 * owner, on a CPU, or acct_set_woven acting for every owner. */
static void charge_result(struct acct_owner *o, int index, uint64_t now)
{
	acct_update_charged(o, now);
	if (o->charged == ACCT_UNATTRIBUTED)
		o->page->unattributed.state = ACCT_TOKEN_IDLE;
	o->charged = index;
	o->stretch_ns = now;
	o->on_cpu_ns = now;
	o->off_ns = 0;
	if (index >= 0)
		acct_result_of(o, index)->state = ACCT_TOKEN_CURRENT;
}

void acct_make_current(struct acct_owner *o, int index, uint64_t now)
{
	if (o->current >= 0)
		o->page->results[o->current].state = ACCT_TOKEN_SUSPENDED;
	charge_result(o, index, now);
	o->current = index;
	o->oneshot = false;
}

void acct_stop_current(struct acct_owner *o, uint64_t now)
{
	int stopped = o->current;
	charge_result(o, acct_woven ? ACCT_UNATTRIBUTED : -1, now);
	o->page->results[stopped].state = ACCT_TOKEN_IDLE;
	o->current = -1;
	o->oneshot = false;
}

bool acct_woven;
uint32_t acct_epoch;
uint64_t acct_linked_at_ns;

/* True when thread tid is some CPU's current thread (a racy look: a switch
 * under way waits for the owner's lock, held by the caller, to be counted). */
static bool is_running(uint64_t tid)
{
	for (unsigned i = 0; i < cpu_count; i++) {
		struct thread *t = __atomic_load_n(&cpus[i].current, __ATOMIC_RELAXED);
		if (t && thread_id(t) == tid)
			return true;
	}
	return false;
}

/* Under o's lock: o's part of acct_set_woven. */
static void set_woven_owner(struct acct_owner *o, bool woven, uint64_t now)
{
	if (!o->thread_id || o->current >= 0 || (o->charged >= 0) == woven)
		return;
	charge_result(o, woven ? ACCT_UNATTRIBUTED : -1, now);
	if (woven && !is_running(o->thread_id)) {
		/* Off a CPU since before: taken as blocked (a waiting server is
		 * the common case) until it is switched in. */
		o->off_ns = now;
		o->off_runnable = false;
	}
}

uint64_t acct_tsc_ns_mult;

void acct_set_woven(bool woven, uint64_t now)
{
	if (acct_woven == woven)
		return;
	if (woven)
		__atomic_store_n(&acct_tsc_ns_mult, clock_tsc_to_ns(1ULL << 32), __ATOMIC_RELAXED);
	/* Calls open across an unlink never see their after: every owner's
	 * stack is dropped (charge.c's live_depth). */
	__atomic_store_n(&acct_epoch, acct_epoch + 1, __ATOMIC_RELAXED);
	acct_woven = woven;
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++) {
		struct acct_owner *o = &acct_owners[i];
		uint64_t flags = acct_owner_lock(o);
		set_woven_owner(o, woven, now);
		acct_owner_unlock(o, flags);
	}
}

static void reset_token(struct acct_owner *o, int index)
{
	struct acct_result *r = &o->page->results[index];
	uint32_t state = r->state, used = r->subsystem_count;
	if (used > ACCT_MAX_SUBSYSTEMS)
		used = ACCT_MAX_SUBSYSTEMS;
	acct_result_begin(r);
	/* Slots past subsystem_count are zero (they were cleared, or never
	 * used): the used ones are all there is to clear, which matters to a
	 * server that resets a token per request. */
	memset((char *)r + sizeof r->sequence, 0,
	       offsetof(struct acct_result, subsystems) - sizeof r->sequence);
	memset(r->subsystems, 0, used * sizeof r->subsystems[0]);
	r->state = state;
	acct_result_end(r);
	memset(o->modules[index], 0, used * sizeof o->modules[index][0]);
	o->generation[index]++;
}

/* Frees the entries of threads whose process has ended.  Liveness is asked
 * of proc outside acct_lock (advice takes owner locks under proc's locks); an
 * entry is freed only if it still belongs to the thread found dead. */
static void reclaim_dead_owners(void)
{
	uint64_t tids[ACCT_MAX_OWNERS], stale[ACCT_MAX_OWNERS] = {0};
	int pids[ACCT_MAX_OWNERS];
	uint64_t flags = acct_lock_irqsave();
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++) {
		tids[i] = acct_owners[i].thread_id;
		pids[i] = acct_owners[i].pid;
	}
	acct_unlock_irqrestore(flags);
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++)
		if (tids[i] && proc_kill(pids[i], 0) != -ESRCH)
			tids[i] = 0;
	flags = acct_lock_irqsave();
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++) {
		struct acct_owner *o = &acct_owners[i];
		if (tids[i] && o->thread_id == tids[i]) {
			uint64_t owner_flags = acct_owner_lock(o);
			stale[i] = o->phys;
			o->thread_id = 0;
			o->thread = NULL;
			acct_owner_unlock(o, owner_flags);
		}
	}
	acct_unlock_irqrestore(flags);
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++)
		if (stale[i])
			pmm_free_contiguous(stale[i], ACCT_PAGES);
}

static struct acct_owner *free_owner(void)
{
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++)
		if (!acct_owners[i].thread_id)
			return &acct_owners[i];
	return NULL;
}

/* Under acct_lock: makes the free entry o the calling thread's.  Its lock
 * stays as it is: a stale ref (async.c) may be holding it. */
static void owner_setup(struct acct_owner *o, uint64_t tid, int pid, uint64_t phys)
{
	uint64_t flags = acct_owner_lock(o);
	memset((char *)o + sizeof o->lock, 0, sizeof *o - sizeof o->lock);
	o->thread_id = tid;
	o->pid = pid;
	o->phys = phys;
	o->page = phys_to_virt(phys);
	o->current = -1;
	o->charged = -1;
	o->next = -1;
	if (acct_woven)
		charge_result(o, ACCT_UNATTRIBUTED, clock_ns());
	o->page->magic = ACCT_PAGE_MAGIC;
	o->page->tokens = ACCT_MAX_TOKENS;
	o->page->pid = pid;
	o->thread = thread_current(); /* the callers set up their own */
	acct_owner_unlock(o, flags);
	thread_set_acct_state(thread_current(), o);
}

/* Finds or makes the caller's owner; returns its page's frame, or 0 with
 * *error set. */
static uint64_t owner_for_caller(uint64_t tid, int pid, int *error)
{
	uint64_t fresh = pmm_alloc_contiguous(ACCT_PAGES, PAGE_SIZE), phys = 0;
	if (fresh)
		memset(phys_to_virt(fresh), 0, ACCT_PAGES * PAGE_SIZE);
	uint64_t flags = acct_lock_irqsave();
	struct acct_owner *o = acct_find_owner(tid);
	if (o) {
		phys = o->phys;
	} else if (!fresh) {
		*error = -ENOMEM;
	} else if ((o = free_owner())) {
		owner_setup(o, tid, pid, fresh);
		phys = fresh;
		fresh = 0;
	} else {
		*error = -ENOSPC;
	}
	acct_unlock_irqrestore(flags);
	if (fresh)
		pmm_free_contiguous(fresh, ACCT_PAGES);
	return phys;
}

/* Maps the results area read-only for the user; on failure unmaps what was
 * mapped.  Returns 0 or vm_map's error. */
static int map_results(struct address_space *space, uint64_t phys)
{
	for (unsigned i = 0; i < ACCT_PAGES; i++) {
		int error =
		    vm_map(space, ACCT_USER_ADDRESS + i * PAGE_SIZE, phys + i * PAGE_SIZE, VM_USER);
		if (error < 0) {
			while (i--)
				vm_unmap(space, ACCT_USER_ADDRESS + i * PAGE_SIZE);
			return error;
		}
	}
	return 0;
}

int64_t acct_init_thread(void)
{
	struct process *p = proc_current();
	struct address_space *space = p ? proc_address_space(p) : NULL;
	if (!space)
		return -EPERM;
	int error = 0;
	reclaim_dead_owners();
	uint64_t phys = owner_for_caller(thread_id(thread_current()), proc_pid(p), &error);
	if (!phys)
		return error;
	uint64_t mapped = 0;
	if (vm_translate(space, ACCT_USER_ADDRESS, &mapped, NULL) == 0)
		return mapped == phys ? (int64_t)ACCT_USER_ADDRESS : -EEXIST;
	int result = map_results(space, phys);
	acct_weave_update(); /* owners reclaimed above may have been all it was for */
	return result < 0 ? result : (int64_t)ACCT_USER_ADDRESS;
}

/* Under acct_lock: the caller's owner, its lock taken (interrupts are off
 * already) for release_caller to drop, and, for token > 0, the token's index,
 * which must be allocated.  Returns the index (0 for token 0), or -ENOENT
 * (*owner NULL), -EINVAL. */
static int caller_token(struct acct_owner **owner, int token)
{
	*owner = acct_owner_of(thread_current());
	if (!*owner)
		return -ENOENT;
	acct_owner_lock(*owner);
	if (token == 0)
		return 0;
	if (token < 1 || token > ACCT_MAX_TOKENS)
		return -EINVAL;
	if ((*owner)->page->results[token - 1].state == ACCT_TOKEN_FREE)
		return -EINVAL;
	return token - 1;
}

/* Drops what caller_token took. */
static void release_caller(struct acct_owner *o)
{
	if (o)
		acct_owner_unlock(o, 0); /* interrupts stay off until acct_lock's unlock */
}

int acct_get_token(void)
{
	struct acct_owner *o;
	uint64_t flags = acct_lock_irqsave();
	int result = caller_token(&o, 0);
	if (result == 0) {
		result = -ENOSPC;
		for (int i = 0; i < ACCT_MAX_TOKENS; i++) {
			if (o->page->results[i].state == ACCT_TOKEN_FREE) {
				reset_token(o, i);
				o->page->results[i].state = ACCT_TOKEN_IDLE;
				result = i + 1;
				break;
			}
		}
	}
	release_caller(o);
	acct_unlock_irqrestore(flags);
	return result;
}

/* Under acct_lock: takes token index out of whatever it is doing. */
static void stop_token(struct acct_owner *o, int index, uint64_t now)
{
	if (o->current == index)
		acct_stop_current(o, now);
	if (o->next == index)
		o->next = -1;
	o->page->results[index].state = ACCT_TOKEN_IDLE;
}

int acct_free_token(int token)
{
	struct acct_owner *o;
	uint64_t flags = acct_lock_irqsave();
	int index = caller_token(&o, token);
	if (index >= 0 && token == 0)
		index = -EINVAL;
	if (index >= 0) {
		stop_token(o, index, clock_ns());
		reset_token(o, index);
		o->page->results[index].state = ACCT_TOKEN_FREE;
	}
	release_caller(o);
	acct_unlock_irqrestore(flags);
	acct_weave_update();
	return index < 0 ? index : 0;
}

/* Checks flags against the token's state; returns 0, -EINVAL or -EALREADY. */
static int check_control(uint32_t state, unsigned flags)
{
	unsigned actions = flags & (ACCT_START | ACCT_STOP | ACCT_NEXT);
	if (flags & ~(ACCT_START | ACCT_STOP | ACCT_NEXT | ACCT_TK_RESET))
		return -EINVAL;
	if (!flags || (actions & (actions - 1)))
		return -EINVAL;
	bool started = state == ACCT_TOKEN_CURRENT || state == ACCT_TOKEN_SUSPENDED;
	if ((flags & ACCT_STOP) && !started && state != ACCT_TOKEN_NEXT)
		return -EINVAL;
	if ((flags & (ACCT_START | ACCT_NEXT)) && state != ACCT_TOKEN_IDLE)
		return -EALREADY;
	return 0;
}

static void apply_control(struct acct_owner *o, int index, unsigned flags, uint64_t now)
{
	if (flags & ACCT_STOP)
		stop_token(o, index, now);
	if (flags & ACCT_TK_RESET)
		reset_token(o, index);
	if (flags & ACCT_START)
		acct_make_current(o, index, now);
	if (flags & ACCT_NEXT) {
		if (o->next >= 0)
			o->page->results[o->next].state = ACCT_TOKEN_IDLE;
		o->next = index;
		o->page->results[index].state = ACCT_TOKEN_NEXT;
	}
}

/* Checks, and with apply set does, flags on token; returns 0 or the error. */
static int control_token(int token, unsigned flags, bool apply)
{
	struct acct_owner *o;
	uint64_t lock_flags = acct_lock_irqsave();
	int index = caller_token(&o, token);
	if (index >= 0 && token == 0)
		index = -EINVAL;
	int result = index < 0 ? index : check_control(o->page->results[index].state, flags);
	if (result == 0 && apply)
		apply_control(o, index, flags, clock_ns());
	release_caller(o);
	acct_unlock_irqrestore(lock_flags);
	return result;
}

/* Under o's lock: whether o needs the aspect linked (weave.c's test, for
 * one owner): a token of it current, pending or suspended. */
bool acct_owner_wants_weave(const struct acct_owner *o)
{
	if (o->current >= 0 || o->next >= 0)
		return true;
	for (unsigned t = 0; t < ACCT_MAX_TOKENS; t++)
		if (o->page->results[t].state == ACCT_TOKEN_SUSPENDED)
			return true;
	return false;
}

/* The common case with no weaving: the aspect is linked and stays linked
 * (weave.c clears acct_woven under acct_lock before it unlinks, so a change
 * made here while it is set is seen by the unlinking side's test).  Returns
 * 1 when the call was done here (its result in *result), 0 when it needs the
 * weaving path. */
/* Under acct_lock: acct_woven, found live by weave.c less than
 * ACCT_LINK_RECHECK_NS before now. */
static bool acct_link_trusted(uint64_t now)
{
	return acct_woven && now - acct_linked_at_ns < ACCT_LINK_RECHECK_NS;
}

static int control_fast(int token, unsigned flags, int *result)
{
	struct acct_owner *o;
	uint64_t now = clock_ns();
	uint64_t lock_flags = acct_lock_irqsave();
	if (!acct_link_trusted(now)) {
		acct_unlock_irqrestore(lock_flags);
		return 0;
	}
	int index = caller_token(&o, token);
	if (index >= 0 && token == 0)
		index = -EINVAL;
	*result = index < 0 ? index : check_control(o->page->results[index].state, flags);
	if (*result == 0)
		apply_control(o, index, flags, now);
	bool keep = index < 0 || acct_owner_wants_weave(o);
	release_caller(o);
	acct_unlock_irqrestore(lock_flags);
	if (!keep)
		acct_weave_update(); /* maybe the last started token: unlink */
	return 1;
}

int acct_control(int token, unsigned flags)
{
	int result;
	if (control_fast(token, flags, &result))
		return result;
	result = control_token(token, flags, false);
	if (result == 0 && (flags & (ACCT_START | ACCT_NEXT)))
		acct_weave_attach(); /* before the clock starts: weaving is not the activity's */
	if (result == 0)
		result = control_token(token, flags, true);
	acct_weave_update();
	return result;
}

int acct_switch_token(int token)
{
	/* Linked already (the usual case): a switch keeps a token started, so
	 * it stays linked, and nothing is woven. */
	uint64_t now = clock_ns();
	uint64_t flags = acct_lock_irqsave();
	bool linked = acct_link_trusted(now);
	acct_unlock_irqrestore(flags);
	if (!linked)
		acct_weave_attach();
	struct acct_owner *o;
	flags = acct_lock_irqsave();
	if (!acct_woven)
		linked = false; /* unlinked meanwhile: update below */
	int index = caller_token(&o, token);
	if (index >= 0 && token == 0)
		index = -EINVAL;
	if (index >= 0) {
		uint32_t state = o->page->results[index].state;
		if (state == ACCT_TOKEN_SUSPENDED)
			acct_make_current(o, index, clock_ns());
		else if (state != ACCT_TOKEN_CURRENT)
			index = -EINVAL;
	}
	release_caller(o);
	acct_unlock_irqrestore(flags);
	if (!linked)
		acct_weave_update();
	return index < 0 ? index : 0;
}

struct acct_page *acct_attach_kernel_thread(void)
{
	uint64_t phys = pmm_alloc_contiguous(ACCT_PAGES, PAGE_SIZE);
	if (!phys)
		return NULL;
	memset(phys_to_virt(phys), 0, ACCT_PAGES * PAGE_SIZE);
	uint64_t flags = acct_lock_irqsave();
	struct acct_owner *o = free_owner();
	if (o)
		owner_setup(o, thread_id(thread_current()), 0, phys);
	acct_unlock_irqrestore(flags);
	if (!o) {
		pmm_free_contiguous(phys, ACCT_PAGES);
		return NULL;
	}
	return phys_to_virt(phys);
}

void acct_detach_kernel_thread(void)
{
	uint64_t phys = 0;
	uint64_t flags = acct_lock_irqsave();
	struct acct_owner *o = acct_owner_of(thread_current());
	if (o) {
		acct_owner_lock(o);
		phys = o->phys;
		o->thread_id = 0;
		o->thread = NULL;
		thread_set_acct_state(thread_current(), NULL);
		acct_owner_unlock(o, 0);
	}
	acct_unlock_irqrestore(flags);
	if (phys)
		pmm_free_contiguous(phys, ACCT_PAGES);
	acct_weave_update();
}
