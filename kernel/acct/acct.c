/*
 * Accounting state and tokens.  A thread that calls acct_init_thread gets an
 * owner entry and one zeroed page of results, mapped read-only at
 * ACCT_USER_ADDRESS into its process's address space as a kernel region
 * (the process can neither unmap it nor map over it; fork does not copy it,
 * exec drops it and the next init maps it again; the kernel writes it
 * through the physical map and frees it only once the process has ended).  Tokens are results
 * in that page.  At most one token of a thread is current (charged); starting
 * another suspends it, switching picks which started one is current.  While
 * the rscfl aspect is woven and none of an owner's tokens is current, its
 * time and work go to the page's `unattributed` result instead, so that the
 * sum over tokens plus unattributed is what the thread spent while woven.
 *
 * Owners of ended processes are reclaimed lazily, whenever a thread wants an
 * entry (their thread ids never come back; a reused pid keeps a stale entry
 * alive until the pid's new process ends).  The table is small and every
 * thread may ask for an entry, so a user other than root holds at most
 * ACCT_USER_THREADS of them, and the last ACCT_ROOT_RESERVED are root's and
 * the kernel's: one user's processes can no longer leave everyone else
 * -ENOSPC.
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

struct acct_owner *acct_owner_of(const struct thread *thread)
{
	struct acct_owner *owner = thread ? thread_acct_state(thread) : NULL;
	return owner && __atomic_load_n(&owner->thread, __ATOMIC_RELAXED) == thread ? owner : NULL;
}

struct acct_owner *acct_find_owner(uint64_t thread_id)
{
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++)
		if (thread_id && acct_owners[i].thread_id == thread_id)
			return &acct_owners[i];
	return NULL;
}

void acct_steal_rebase(struct acct_owner *owner)
{
	if (!owner->steal_measured)
		return;
	preempt_disable();
	owner->steal_at = clock_steal_ns();
	owner->steal_cpu = (int)this_cpu_id();
	preempt_enable();
}

/* The steal time of this CPU since the owner's last count, at most on_ns;
 * 0 (counted later) when the caller is not the owner's thread on its CPU
 * (the weaving thread acting for every owner). */
static uint64_t steal_since(struct acct_owner *owner, uint64_t on_ns)
{
	if (!owner->steal_measured || owner->thread != thread_current())
		return 0;
	preempt_disable();
	uint64_t steal = clock_steal_ns();
	int cpu = (int)this_cpu_id();
	uint64_t delta = cpu == owner->steal_cpu ? steal - owner->steal_at : 0;
	owner->steal_at = steal;
	owner->steal_cpu = cpu;
	preempt_enable();
	return delta < on_ns ? delta : on_ns;
}

/* acct_update_charged, in line in this file's callers (the control calls). */
static inline __attribute__((always_inline)) void update_charged(struct acct_owner *owner,
								 uint64_t now)
{
	if (owner->charged < 0)
		return;
	struct acct_result *result = acct_result_of(owner, owner->charged);
	uint64_t on_ns = owner->out_since_ns ? 0 : acct_ns_since(now, owner->on_cpu_ns);
	uint64_t steal = on_ns ? steal_since(owner, on_ns) : 0;
	acct_result_begin(result);
	result->wall_ns += acct_ns_since(now, owner->stretch_ns);
	result->cpu_ns += on_ns - steal;
	if (steal) /* never without a hypervisor that reports it */
		*acct_steal_of(owner, owner->charged) += steal;
	acct_result_end(result);
	owner->stretch_ns = now;
	owner->on_cpu_ns = now;
}

void acct_update_charged(struct acct_owner *owner, uint64_t now)
{
	update_charged(owner, now);
}

/* Charges result index from now on.  Under the owner's lock: the caller is
 * the owner, on a CPU, or acct_set_woven acting for every owner. */
static void charge_result(struct acct_owner *owner, int index, uint64_t now)
{
	/* What the owner's calls have pending is the old result's.  Another
	 * thread (acct_set_woven) may not touch it: the owner's next fold gives
	 * it to the result charged then, or drops it when none is. */
	if (owner->thread == thread_current())
		acct_fold_pending(owner);
	/* Calls open now are not charged at their close (charge.c). */
	__atomic_store_n(&owner->charge_generation, owner->charge_generation + 1, __ATOMIC_RELAXED);
	update_charged(owner, now);
	if (owner->charged == ACCT_UNATTRIBUTED)
		owner->page->unattributed.state = ACCT_TOKEN_IDLE;
	owner->charged = index;
	owner->stretch_ns = now;
	owner->on_cpu_ns = now;
	owner->out_since_ns = 0;
	if (owner->thread == thread_current())
		acct_steal_rebase(owner);
	if (index >= 0)
		acct_result_of(owner, index)->state = ACCT_TOKEN_CURRENT;
}

/* The system call a token of ACCT_NEXT waited for starts or switches to
 * another token: that ends the waiting token, which keeps the call, counted,
 * and its time up to here (the rest of the call goes to no token: its frame
 * is of the older charge generation). */
static void end_oneshot(struct acct_owner *owner, int index)
{
	struct acct_result *result = acct_result_of(owner, index);
	acct_result_begin(result);
	result->syscalls++;
	acct_result_end(result);
	result->state = ACCT_TOKEN_IDLE;
}

void acct_make_current(struct acct_owner *owner, int index, uint64_t now)
{
	int left = owner->current;
	bool ends = owner->oneshot && left >= 0;
	if (left >= 0 && !ends)
		owner->page->results[left].state = ACCT_TOKEN_SUSPENDED;
	charge_result(owner, index, now);
	if (ends)
		end_oneshot(owner, left);
	owner->current = index;
	owner->oneshot = false;
}

void acct_stop_current(struct acct_owner *owner, uint64_t now)
{
	int stopped = owner->current;
	charge_result(owner, acct_woven ? ACCT_UNATTRIBUTED : -1, now);
	owner->page->results[stopped].state = ACCT_TOKEN_IDLE;
	owner->current = -1;
	owner->oneshot = false;
}

bool acct_woven;
uint32_t acct_epoch;
uint64_t acct_linked_at_ns;

/* True when thread tid is some CPU's current thread (a racy look: a switch
 * under way waits for the owner's lock, held by the caller, to be counted). */
static bool is_running(uint64_t tid)
{
	for (unsigned i = 0; i < cpu_count; i++) {
		struct thread *thread = __atomic_load_n(&cpus[i].current, __ATOMIC_RELAXED);
		if (thread && thread_id(thread) == tid)
			return true;
	}
	return false;
}

/* Under the owner's lock: its part of acct_set_woven. */
static void set_woven_owner(struct acct_owner *owner, bool woven, uint64_t now)
{
	if (!owner->thread_id || owner->current >= 0 || (owner->charged >= 0) == woven)
		return;
	charge_result(owner, woven ? ACCT_UNATTRIBUTED : -1, now);
	if (woven && !is_running(owner->thread_id)) {
		/* Off a CPU since before: taken as blocked (a waiting server is
		 * the common case) until it is switched in. */
		owner->out_since_ns = now;
		owner->out_runnable = false;
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
		struct acct_owner *owner = &acct_owners[i];
		uint64_t flags = acct_owner_lock(owner);
		set_woven_owner(owner, woven, now);
		acct_owner_unlock(owner, flags);
	}
}

static void reset_token(struct acct_owner *owner, int index)
{
	struct acct_result *result = &owner->page->results[index];
	if (index == owner->charged && owner->thread == thread_current()) {
		/* Pending is the charged result's: it goes with the reset, and so
		 * do the calls open now. */
		acct_drop_pending(owner);
		__atomic_store_n(&owner->charge_generation, owner->charge_generation + 1,
				 __ATOMIC_RELAXED);
	}
	uint32_t state = result->state;
	unsigned used = owner->slots_used[index]; /* not subsystem_count: a shared page */
	acct_result_begin(result);
	/* Slots past subsystem_count are zero (they were cleared, or never
	 * used): the used ones are all there is to clear, which matters to a
	 * server that resets a token per request. */
	memset((char *)result + sizeof result->sequence, 0,
	       offsetof(struct acct_result, subsystems) - sizeof result->sequence +
		   used * sizeof result->subsystems[0]); /* the fields, then the slots */
	*acct_steal_of(owner, index) = 0;
	result->state = state;
	acct_result_end(result);
	/* Every module that has a slot_of entry here was given a slot, even
	 * past the last one ("other"): those entries are found by the scan. */
	if (used < ACCT_MAX_SUBSYSTEMS)
		for (unsigned i = 0; i < used; i++)
			owner->slot_of[index][owner->slot_module[index][i]] = 0;
	else
		memset(owner->slot_of[index], 0, sizeof owner->slot_of[index]);
	owner->slots_used[index] = 0;
	owner->generation[index]++;
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
		struct acct_owner *owner = &acct_owners[i];
		if (tids[i] && owner->thread_id == tids[i]) {
			uint64_t owner_flags = acct_owner_lock(owner);
			stale[i] = owner->phys;
			owner->thread_id = 0;
			owner->thread = NULL;
			acct_owner_unlock(owner, owner_flags);
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

/* Under acct_lock: whether uid may take one more entry.  Root may take any
 * free one; another user only while it holds fewer than ACCT_USER_THREADS
 * and more than ACCT_ROOT_RESERVED are free. */
static bool share_left(uint32_t uid)
{
	if (uid == ROOT_UID)
		return true;
	unsigned held = 0, free = 0;
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++) {
		if (!acct_owners[i].thread_id)
			free++;
		else if (acct_owners[i].uid == uid)
			held++;
	}
	return held < ACCT_USER_THREADS && free > ACCT_ROOT_RESERVED;
}

/* Under acct_lock: makes the free entry owner the calling thread's.  Its
 * lock stays as it is: a stale ref (async.c) may be holding it.  So do its
 * tokens' generations: a ref keeps only the low bits of its thread's id, so
 * a ref of the entry's earlier thread may name the new one, and must then
 * name an older generation. */
static void owner_setup(struct acct_owner *owner, uint64_t tid, int pid, uint64_t phys)
{
	uint32_t generation[ACCT_MAX_TOKENS];
	uint64_t flags = acct_owner_lock(owner);
	memcpy(generation, owner->generation, sizeof generation);
	memset((char *)owner + sizeof owner->lock, 0, sizeof *owner - sizeof owner->lock);
	memcpy(owner->generation, generation, sizeof generation);
	owner->number = (uint32_t)(owner - acct_owners);
	owner->thread_id = tid;
	owner->pid = pid;
	owner->phys = phys;
	owner->page = phys_to_virt(phys);
	owner->current = -1;
	owner->charged = -1;
	owner->next = -1;
	owner->steal_measured = clock_steal_reported();
	if (acct_woven)
		charge_result(owner, ACCT_UNATTRIBUTED, clock_ns());
	owner->steal_cpu = -1;
	owner->page->flags =
	    owner->steal_measured ? ACCT_PAGE_STEAL_MEASURED : ACCT_PAGE_STEAL_NOT_REPORTED;
	owner->page->magic = ACCT_PAGE_MAGIC;
	owner->page->tokens = ACCT_MAX_TOKENS;
	owner->page->pid = pid;
	owner->thread = thread_current(); /* the callers set up their own */
	acct_owner_unlock(owner, flags);
	thread_set_acct_state(thread_current(), owner);
}

/* Finds or makes the caller's owner; returns its page's frame, or 0 with
 * *error set. */
static uint64_t owner_for_caller(uint64_t tid, int pid, uint32_t uid, int *error)
{
	uint64_t fresh = pmm_alloc_contiguous(ACCT_PAGES, PAGE_SIZE), phys = 0;
	if (fresh)
		memset(phys_to_virt(fresh), 0, ACCT_PAGES * PAGE_SIZE);
	uint64_t flags = acct_lock_irqsave();
	struct acct_owner *owner = acct_find_owner(tid);
	if (owner) {
		phys = owner->phys;
	} else if (!fresh) {
		*error = -ENOMEM;
	} else if (share_left(uid) && (owner = free_owner())) {
		owner_setup(owner, tid, pid, fresh);
		owner->uid = uid;
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

/* Maps the results area read-only for the user, as a kernel region of the
 * process: it can be neither unmapped nor mapped over while the kernel
 * writes it, and exit unmaps it without freeing it (reclaim_dead_owners
 * does).  Returns 0 or the error (what was mapped stays, in the region, for
 * exec or exit to drop). */
static int map_results(uint64_t phys)
{
	int error =
	    proc_add_kernel_region(ACCT_USER_ADDRESS, ACCT_USER_ADDRESS + ACCT_PAGES * PAGE_SIZE);
	for (unsigned i = 0; i < ACCT_PAGES && !error; i++) {
		error = proc_map_kernel_frame(ACCT_USER_ADDRESS + i * PAGE_SIZE,
					      phys + i * PAGE_SIZE, false);
		if (error == -EEXIST)
			error = 0; /* mapped by an earlier call: only this function maps there */
	}
	return error;
}

int64_t acct_init_thread(void)
{
	struct process *process = proc_current();
	struct address_space *space = process ? proc_address_space(process) : NULL;
	if (!space)
		return -EPERM;
	int error = 0;
	reclaim_dead_owners();
	uint64_t phys = owner_for_caller(thread_id(thread_current()), proc_pid(process),
					 proc_current_euid(), &error);
	if (!phys)
		return error;
	uint64_t mapped = 0;
	if (vm_translate(space, ACCT_USER_ADDRESS, &mapped, NULL) == 0)
		return mapped == phys ? (int64_t)ACCT_USER_ADDRESS : -EEXIST;
	int result = map_results(phys);
	acct_weave_update(); /* owners reclaimed above may have been all it was for */
	return result < 0 ? result : (int64_t)ACCT_USER_ADDRESS;
}

/* Under acct_lock: the caller's owner, its lock taken (interrupts are off
 * already) for release_caller to drop, and, for token > 0, the token's index,
 * which must be allocated.  Returns the index (0 for token 0), or -ENOENT
 * (*owner NULL), -EINVAL. */
static void stop_token(struct acct_owner *owner, int index, uint64_t now);

/* The accounting aspect went while owner accounted: its tokens stop (what
 * they counted stays in its results), and the caller hears of it once. */
static __attribute__((noinline, cold)) int report_severed(struct acct_owner *owner)
{
	owner->severed = false;
	uint64_t now = clock_ns();
	for (int i = 0; i < ACCT_MAX_TOKENS; i++) {
		uint32_t state = owner->page->results[i].state;
		if (state == ACCT_TOKEN_CURRENT || state == ACCT_TOKEN_SUSPENDED ||
		    state == ACCT_TOKEN_NEXT)
			stop_token(owner, i, now);
	}
	return -ENOLINK;
}

void acct_sever_owners(void)
{
	uint64_t flags = acct_lock_irqsave();
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++) {
		struct acct_owner *owner = &acct_owners[i];
		acct_owner_lock(owner);
		if (owner->thread_id && owner->page && acct_owner_wants_weave(owner))
			owner->severed = true;
		acct_owner_unlock(owner, 0);
	}
	acct_set_woven(false, clock_ns());
	acct_unlock_irqrestore(flags);
}

static inline __attribute__((always_inline)) int caller_token(struct acct_owner **owner, int token)
{
	*owner = acct_running_owner();
	if (!*owner)
		return -ENOENT;
	acct_owner_lock(*owner);
	if ((*owner)->severed)
		return report_severed(*owner);
	if (token == 0)
		return 0;
	if (token < 1 || token > ACCT_MAX_TOKENS)
		return -EINVAL;
	if ((*owner)->page->results[token - 1].state == ACCT_TOKEN_FREE)
		return -EINVAL;
	return token - 1;
}

/* Drops what caller_token took. */
static void release_caller(struct acct_owner *owner)
{
	if (owner)
		acct_owner_unlock(owner, 0); /* interrupts stay off until acct_lock's unlock */
}

int acct_get_token(void)
{
	struct acct_owner *owner;
	uint64_t flags = acct_lock_irqsave();
	int result = caller_token(&owner, 0);
	if (result == 0) {
		result = -ENOSPC;
		for (int i = 0; i < ACCT_MAX_TOKENS; i++) {
			if (owner->page->results[i].state == ACCT_TOKEN_FREE) {
				reset_token(owner, i);
				owner->page->results[i].state = ACCT_TOKEN_IDLE;
				result = i + 1;
				break;
			}
		}
	}
	release_caller(owner);
	acct_unlock_irqrestore(flags);
	return result;
}

/* Under acct_lock: takes token index out of whatever it is doing. */
static void stop_token(struct acct_owner *owner, int index, uint64_t now)
{
	if (owner->current == index)
		acct_stop_current(owner, now);
	if (owner->next == index)
		owner->next = -1;
	owner->page->results[index].state = ACCT_TOKEN_IDLE;
}

int acct_free_token(int token)
{
	struct acct_owner *owner;
	uint64_t flags = acct_lock_irqsave();
	int index = caller_token(&owner, token);
	if (index >= 0 && token == 0)
		index = -EINVAL;
	if (index >= 0) {
		stop_token(owner, index, clock_ns());
		reset_token(owner, index);
		owner->page->results[index].state = ACCT_TOKEN_FREE;
	}
	release_caller(owner);
	acct_unlock_irqrestore(flags);
	acct_weave_update();
	return index < 0 ? index : 0;
}

/* Checks flags against the token's state; returns 0, -EINVAL or -EALREADY. */
static inline int check_control(uint32_t state, unsigned flags)
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

static void apply_control(struct acct_owner *owner, int index, unsigned flags, uint64_t now)
{
	if (flags & ACCT_STOP)
		stop_token(owner, index, now);
	if (flags & ACCT_TK_RESET) {
		/* The current token's time so far goes with the reset: its
		 * stretch starts again now. */
		if (index == owner->charged)
			update_charged(owner, now);
		reset_token(owner, index);
	}
	if (flags & ACCT_START)
		acct_make_current(owner, index, now);
	if (flags & ACCT_NEXT) {
		if (owner->next >= 0)
			owner->page->results[owner->next].state = ACCT_TOKEN_IDLE;
		owner->next = index;
		owner->page->results[index].state = ACCT_TOKEN_NEXT;
	}
}

/* Checks, and with apply set does, flags on token; returns 0 or the error. */
static int control_token(int token, unsigned flags, bool apply)
{
	struct acct_owner *owner;
	uint64_t lock_flags = acct_lock_irqsave();
	int index = caller_token(&owner, token);
	if (index >= 0 && token == 0)
		index = -EINVAL;
	int result = index < 0 ? index : check_control(owner->page->results[index].state, flags);
	if (result == 0 && apply)
		apply_control(owner, index, flags, clock_ns());
	release_caller(owner);
	acct_unlock_irqrestore(lock_flags);
	return result;
}

/* Under the owner's lock: whether it needs the aspect linked (weave.c's
 * test, for one owner): a token of it current, pending or suspended. */
bool acct_owner_wants_weave(const struct acct_owner *owner)
{
	if (owner->current >= 0 || owner->next >= 0)
		return true;
	for (unsigned index = 0; index < ACCT_MAX_TOKENS; index++)
		if (owner->page->results[index].state == ACCT_TOKEN_SUSPENDED)
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
	struct acct_owner *owner;
	uint64_t now = clock_ns();
	uint64_t lock_flags = acct_lock_irqsave();
	if (!acct_link_trusted(now)) {
		acct_unlock_irqrestore(lock_flags);
		return 0;
	}
	int index = caller_token(&owner, token);
	if (index >= 0 && token == 0)
		index = -EINVAL;
	*result = index < 0 ? index : check_control(owner->page->results[index].state, flags);
	if (*result == 0)
		apply_control(owner, index, flags, now);
	bool keep = index < 0 || acct_owner_wants_weave(owner);
	release_caller(owner);
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
	struct acct_owner *owner;
	flags = acct_lock_irqsave();
	if (!acct_woven)
		linked = false; /* unlinked meanwhile: update below */
	int index = caller_token(&owner, token);
	if (index >= 0 && token == 0)
		index = -EINVAL;
	if (index >= 0) {
		uint32_t state = owner->page->results[index].state;
		if (state == ACCT_TOKEN_SUSPENDED)
			acct_make_current(owner, index, clock_ns());
		else if (state != ACCT_TOKEN_CURRENT)
			index = -EINVAL;
	}
	release_caller(owner);
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
	reclaim_dead_owners();
	uint64_t flags = acct_lock_irqsave();
	struct acct_owner *owner = free_owner();
	if (owner)
		owner_setup(owner, thread_id(thread_current()), 0, phys);
	acct_unlock_irqrestore(flags);
	if (!owner) {
		pmm_free_contiguous(phys, ACCT_PAGES);
		return NULL;
	}
	return phys_to_virt(phys);
}

void acct_detach_kernel_thread(void)
{
	uint64_t phys = 0;
	uint64_t flags = acct_lock_irqsave();
	struct acct_owner *owner = acct_owner_of(thread_current());
	if (owner) {
		acct_owner_lock(owner);
		phys = owner->phys;
		owner->thread_id = 0;
		owner->thread = NULL;
		thread_set_acct_state(thread_current(), NULL);
		acct_owner_unlock(owner, 0);
	}
	acct_unlock_irqrestore(flags);
	if (phys)
		pmm_free_contiguous(phys, ACCT_PAGES);
	acct_weave_update();
}
