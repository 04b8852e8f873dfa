/*
 * Named counters and log2 histograms, the store behind ms_counter_add and
 * ms_hist_record.  Tables are fixed arrays searched by name; a slot is claimed
 * with a compare-and-swap on its state (free -> claiming -> used), the name is
 * written while claiming, and values change with atomic adds, so advice on
 * every CPU updates one store without a lock.  A reader that sees a slot in
 * use sees its name (release/acquire on state).  Two CPUs creating the same
 * name at once may each claim a slot; lookups then find the first and the
 * second keeps what was added to it, which merge and the readers sum.
 *
 * Portable (see object.h): the monitor keeps its own store and the kernel
 * merges it back.
 */
#include "lib/errno.h"
#include "linker/object/internal.h"

static bool same_name(const char *slot_name, const char *name)
{
	return __builtin_strncmp(slot_name, name, MS_NAME_MAX - 1) == 0;
}

/* Finds or claims the slot for name among count slots of stride bytes whose
 * name is at offset 0 and state at state_offset.  Returns its index or -1. */
static int find_or_claim(void *base, unsigned count, size_t stride, size_t state_offset,
			 const char *name, bool claim)
{
	for (unsigned i = 0; i < count; i++) {
		char *slot = (char *)base + i * stride;
		uint32_t *state = (uint32_t *)(slot + state_offset);
		uint32_t seen = __atomic_load_n(state, __ATOMIC_ACQUIRE);
		if (seen == LINKER_SLOT_USED && same_name(slot, name))
			return (int)i;
		if (seen != LINKER_SLOT_FREE || !claim)
			continue;
		uint32_t expected = LINKER_SLOT_FREE;
		if (!__atomic_compare_exchange_n(state, &expected, LINKER_SLOT_CLAIMING, false,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		linker_copy_string(slot, name, MS_NAME_MAX);
		__atomic_store_n(state, LINKER_SLOT_USED, __ATOMIC_RELEASE);
		return (int)i;
	}
	return -1;
}

static int counter_slot(struct linker_counters *store, const char *name, bool claim)
{
	return find_or_claim(store->counters, MS_MAX_COUNTERS, sizeof(struct linker_counter),
			     __builtin_offsetof(struct linker_counter, state), name, claim);
}

static int histogram_slot(struct linker_counters *store, const char *name, bool claim)
{
	return find_or_claim(store->histograms, MS_MAX_HISTOGRAMS, sizeof(struct linker_histogram),
			     __builtin_offsetof(struct linker_histogram, state), name, claim);
}

int linker_counter_add(struct linker_counters *store, const char *name, int64_t delta)
{
	if (!name || !name[0])
		return -EINVAL;
	int i = counter_slot(store, name, false);
	if (i < 0)
		i = counter_slot(store, name, true);
	if (i < 0)
		return -ENOSPC;
	__atomic_fetch_add(&store->counters[i].value, delta, __ATOMIC_RELAXED);
	return 0;
}

unsigned linker_hist_bucket(uint64_t value)
{
	return value ? 64u - (unsigned)__builtin_clzll(value) : 0;
}

static void hist_add(struct linker_histogram *h, unsigned bucket, uint64_t n, uint64_t sum)
{
	__atomic_fetch_add(&h->buckets[bucket], n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->count, n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->sum, sum, __ATOMIC_RELAXED);
}

int linker_hist_record(struct linker_counters *store, const char *name, uint64_t value)
{
	if (!name || !name[0])
		return -EINVAL;
	int i = histogram_slot(store, name, false);
	if (i < 0)
		i = histogram_slot(store, name, true);
	if (i < 0)
		return -ENOSPC;
	hist_add(&store->histograms[i], linker_hist_bucket(value), 1, value);
	return 0;
}

int64_t linker_counter_get(const struct linker_counters *store, const char *name)
{
	int64_t sum = 0;
	for (unsigned i = 0; i < MS_MAX_COUNTERS; i++) {
		const struct linker_counter *c = &store->counters[i];
		if (__atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == LINKER_SLOT_USED &&
		    same_name(c->name, name))
			sum += __atomic_load_n(&c->value, __ATOMIC_RELAXED);
	}
	return sum;
}

const struct linker_histogram *linker_hist_find(const struct linker_counters *store,
						const char *name)
{
	int i = histogram_slot((struct linker_counters *)store, name, false);
	return i < 0 ? NULL : &store->histograms[i];
}

static int merge_histogram(struct linker_counters *into, const struct linker_histogram *from)
{
	int i = histogram_slot(into, from->name, true);
	if (i < 0)
		return -ENOSPC;
	struct linker_histogram *h = &into->histograms[i];
	for (unsigned b = 0; b < MS_HIST_BUCKETS; b++)
		__atomic_fetch_add(&h->buckets[b], from->buckets[b], __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->count, from->count, __ATOMIC_RELAXED);
	__atomic_fetch_add(&h->sum, from->sum, __ATOMIC_RELAXED);
	return 0;
}

int linker_counters_merge(struct linker_counters *into, const struct linker_counters *from)
{
	int err = 0;
	for (unsigned i = 0; i < MS_MAX_COUNTERS; i++) {
		const struct linker_counter *c = &from->counters[i];
		if (c->state == LINKER_SLOT_USED && linker_counter_add(into, c->name, c->value) < 0)
			err = -ENOSPC;
	}
	for (unsigned i = 0; i < MS_MAX_HISTOGRAMS; i++) {
		const struct linker_histogram *h = &from->histograms[i];
		if (h->state == LINKER_SLOT_USED && merge_histogram(into, h) < 0)
			err = -ENOSPC;
	}
	return err;
}
