/*
 * Work done later, by other threads, for an activity: lwIP's threads and the
 * NIC's receive path work for a socket that belongs to an activity.  The
 * socket (and lwIP's pcb under it) carries an acct_ref_t, taken from the
 * thread that used it (acct_current_ref); whoever does the work later charges
 * it through the ref (acct_charge_ref, acct_async_begin/end) without knowing
 * whose it is.
 *
 * A ref names its owner entry, a token index and the token's generation at
 * the time, plus the owner's thread id (its low bits) and a tag bit, so it is
 * never 0.  reset_token (acct.c) bumps the generation whenever a token is
 * allocated, reset or freed, and owner entries are reused only by other
 * threads, keeping their generations (owner_setup): a ref whose token was
 * freed or reset since, or whose owner entry went to another thread (even
 * one whose id has the same low bits), no longer matches and charges
 * nothing.
 *
 * Thread context, interrupts on or off, never an interrupt handler (checked):
 * the owner's advice may hold the owner's lock with interrupts on
 * (internal.h).  The ref's owner's lock is taken irqsave (never acct_lock:
 * other owners and the table are not involved), and the result is written
 * under its sequence count, as charge.c does.  While
 * accounting is off (the aspect not linked, acct_woven clear) no token is
 * current, and acct_current_ref is a load and a branch.
 */
#include "acct/internal.h"
#include "cpu/percpu.h"
#include "panic/panic.h"
#include "sched/sched.h"
#include "time/time.h"

#define REF_TAG          (1ULL << 63)
#define REF_THREAD_SHIFT 40
#define REF_THREAD_MASK  0x7fffffULL /* the owner's thread id, low 23 bits */
#define REF_OWNER_SHIFT  36
#define REF_TOKEN_SHIFT  32
#define REF_INDEX_MASK   0xfULL
#define REF_GENERATION   0xffffffffULL

_Static_assert(ACCT_MAX_OWNERS <= REF_INDEX_MASK + 1, "an owner index fits its 4 bits");
_Static_assert(ACCT_MAX_TOKENS <= REF_INDEX_MASK + 1, "a token index fits its 4 bits");

static acct_ref_t ref_encode(unsigned owner_index, int index, uint64_t tid, uint32_t generation)
{
	return REF_TAG | (tid & REF_THREAD_MASK) << REF_THREAD_SHIFT |
	       (uint64_t)owner_index << REF_OWNER_SHIFT | (uint64_t)index << REF_TOKEN_SHIFT |
	       generation;
}

/* The owner entry ref names (its lock protects what ref_result checks). */
static struct acct_owner *ref_owner(acct_ref_t ref)
{
	return &acct_owners[(ref >> REF_OWNER_SHIFT & REF_INDEX_MASK) % ACCT_MAX_OWNERS];
}

/* Under the owner's lock (owner = ref_owner(ref)): the result ref names, or
 * NULL when it is stale. */
static inline __attribute__((always_inline)) struct acct_result *
ref_result(struct acct_owner *owner, acct_ref_t ref)
{
	unsigned owner_index = (unsigned)(ref >> REF_OWNER_SHIFT & REF_INDEX_MASK);
	unsigned index = (unsigned)(ref >> REF_TOKEN_SHIFT & REF_INDEX_MASK);
	if (!(ref & REF_TAG) || owner_index >= ACCT_MAX_OWNERS || index >= ACCT_MAX_TOKENS)
		return NULL;
	if (!owner->thread_id ||
	    (owner->thread_id & REF_THREAD_MASK) != (ref >> REF_THREAD_SHIFT & REF_THREAD_MASK))
		return NULL;
	if (owner->generation[index] != (uint32_t)(ref & REF_GENERATION))
		return NULL;
	struct acct_result *result = &owner->page->results[index];
	return result->state == ACCT_TOKEN_FREE ? NULL : result;
}

/* The owner's current token and its generation are changed only by the
 * owner's own thread (its control calls, the system call ACCT_NEXT waited
 * for), so that thread reads them without the lock.  The entry's thread id
 * may go meanwhile (reclaim_dead_owners, for a process that ended): a ref
 * read then names no live owner, and ref_result refuses it under the lock. */
acct_ref_t acct_current_ref(void)
{
	/* No token is current while the aspect is not linked (weave.c links it
	 * before a token starts): accounting off costs this load and branch. */
	if (!__atomic_load_n(&acct_woven, __ATOMIC_RELAXED))
		return 0;
	struct acct_owner *owner = acct_running_owner();
	if (!owner)
		return 0;
	int current = __atomic_load_n(&owner->current, __ATOMIC_RELAXED);
	if (current < 0)
		return 0; /* no token current */
	ASSERT(this_cpu()->irq_depth == 0);
	uint64_t tid = __atomic_load_n(&owner->thread_id, __ATOMIC_RELAXED);
	return tid ? ref_encode(owner->number, current, tid, owner->generation[current]) : 0;
}

/* The ref's owner, its lock taken (interrupts off); never from an
 * interrupt handler. */
static inline __attribute__((always_inline)) struct acct_owner *lock_ref_owner(acct_ref_t ref,
									       uint64_t *flags)
{
	ASSERT(this_cpu()->irq_depth == 0);
	struct acct_owner *owner = ref_owner(ref);
	*flags = acct_owner_lock(owner);
	return owner;
}

static void add_counter(struct acct_result *result, enum acct_counter counter, uint64_t amount)
{
	switch (counter) {
	case ACCT_TCP_BYTES_SENT: result->tcp_bytes_sent += amount; break;
	case ACCT_TCP_BYTES_RECEIVED: result->tcp_bytes_received += amount; break;
	case ACCT_TCP_SEGMENTS_SENT: result->tcp_segments_sent += amount; break;
	case ACCT_TCP_SEGMENTS_RECEIVED: result->tcp_segments_received += amount; break;
	case ACCT_TCP_RETRANSMITS: result->tcp_retransmits += amount; break;
	case ACCT_NIC_PACKETS_SENT: result->nic_packets_sent += amount; break;
	case ACCT_NIC_PACKETS_RECEIVED: result->nic_packets_received += amount; break;
	case ACCT_PAGE_CACHE_HITS: result->page_cache_hits += amount; break;
	case ACCT_PAGE_CACHE_MISSES: result->page_cache_misses += amount; break;
	case ACCT_PAGE_CACHE_EVICTIONS: result->page_cache_evictions += amount; break;
	case ACCT_PAGE_CACHE_READ_BYTES: result->page_cache_read_bytes += amount; break;
	case ACCT_PAGE_CACHE_READ_AHEAD: result->page_cache_read_ahead += amount; break;
	}
}

void acct_charge_ref(acct_ref_t ref, enum acct_counter counter, uint64_t amount)
{
	if (!ref)
		return;
	uint64_t flags;
	struct acct_owner *owner = lock_ref_owner(ref, &flags);
	struct acct_result *result = ref_result(owner, ref);
	if (result) {
		acct_result_begin(result);
		add_counter(result, counter, amount);
		acct_result_end(result);
	}
	acct_owner_unlock(owner, flags);
}

uint64_t acct_async_begin(acct_ref_t ref)
{
	return ref ? clock_ns() : 0;
}

void acct_async_end(acct_ref_t ref, uint64_t begin_ns)
{
	if (!ref || !begin_ns)
		return;
	uint64_t now = clock_ns();
	uint64_t flags;
	struct acct_owner *owner = lock_ref_owner(ref, &flags);
	struct acct_result *result = ref_result(owner, ref);
	if (result) {
		acct_result_begin(result);
		result->async_ns += now > begin_ns ? now - begin_ns : 0;
		result->async_items++;
		acct_result_end(result);
	}
	acct_owner_unlock(owner, flags);
}
