/*
 * Trackers: created by name into a small registry, configured while
 * disabled, then enabled, which allocates everything the hot path will ever
 * use (the events, split evenly between the CPUs' freelists, and a table of
 * twice as many buckets, a power of two).  A tracker is reference counted:
 * the registry's lookup takes a reference, destroy drops the creator's, and
 * the last put frees the memory.
 */
#include "lattrack/internal.h"

#include "arch/x86_64/cpu.h"
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "smp/smp.h"

#define DEFAULT_THRESHOLD_NS (1000 * 1000)
#define DEFAULT_PERIOD_NS    (10 * 1000 * 1000)
#define MIN_PERIOD_NS        (1000 * 1000)

struct spinlock lattrack_registry_lock = SPINLOCK_INIT("lattrack");
static struct lattrack *registry[LATTRACK_TRACKERS_MAX];

static int find_slot(const char *name, int *free_slot)
{
	*free_slot = -1;
	for (int i = 0; i < LATTRACK_TRACKERS_MAX; i++) {
		if (!registry[i]) {
			if (*free_slot < 0)
				*free_slot = i;
		} else if (!strcmp(registry[i]->name, name)) {
			return i;
		}
	}
	return -1;
}

static void set_defaults(struct lattrack *tracker, const char *name)
{
	strlcpy(tracker->name, name, sizeof tracker->name);
	tracker->threshold_ns = DEFAULT_THRESHOLD_NS;
	tracker->threshold_tsc = lattrack_ns_to_tsc(DEFAULT_THRESHOLD_NS);
	tracker->timer_period_ns = DEFAULT_PERIOD_NS;
	tracker->key_size = 8;
	tracker->max_events = 1024;
	tracker->references = 1;
	tracker->kind = "api";
	spin_init(&tracker->subscribers_lock, "lattrack.subscribers");
}

int lattrack_create(const char *name, struct lattrack **out)
{
	if (!name || !name[0] || strlen(name) >= LATTRACK_NAME_MAX || !out)
		return -EINVAL;
	struct lattrack *tracker = kzalloc(sizeof *tracker);
	if (!tracker)
		return -ENOMEM;
	set_defaults(tracker, name);
	uint64_t flags = spin_lock_irqsave(&lattrack_registry_lock);
	int free_slot;
	int error = find_slot(name, &free_slot) >= 0 ? -EEXIST : free_slot < 0 ? -ENOSPC : 0;
	if (!error)
		registry[free_slot] = tracker;
	spin_unlock_irqrestore(&lattrack_registry_lock, flags);
	if (error) {
		kfree(tracker);
		return error;
	}
	*out = tracker;
	return 0;
}

static int check_settable(const struct lattrack *tracker)
{
	if (!tracker)
		return -EINVAL;
	return tracker->enabled ? -EBUSY : 0;
}

int lattrack_set_threshold_ns(struct lattrack *tracker, uint64_t ns)
{
	if (!tracker)
		return -EINVAL;
	__atomic_store_n(&tracker->threshold_ns, ns, __ATOMIC_RELAXED);
	__atomic_store_n(&tracker->threshold_tsc, lattrack_ns_to_tsc(ns), __ATOMIC_RELAXED);
	lattrack_span_threshold_changed();
	return 0;
}

int lattrack_set_timeout_ns(struct lattrack *tracker, uint64_t ns)
{
	int error = check_settable(tracker);
	if (!error)
		tracker->timeout_ns = ns;
	return error;
}

int lattrack_set_callback(struct lattrack *tracker, lattrack_callback fn, void *context)
{
	int error = check_settable(tracker);
	if (!error) {
		tracker->callback = fn;
		tracker->callback_context = context;
	}
	return error;
}

int lattrack_set_annotate(struct lattrack *tracker, lattrack_annotate_fn fn, void *context)
{
	int error = check_settable(tracker);
	if (!error) {
		tracker->annotate = fn;
		tracker->annotate_context = context;
	}
	return error;
}

int lattrack_set_key_size(struct lattrack *tracker, unsigned bytes)
{
	int error = check_settable(tracker);
	if (!error && (bytes < 1 || bytes > LATTRACK_KEY_MAX))
		error = -EINVAL;
	if (!error)
		tracker->key_size = bytes;
	return error;
}

int lattrack_set_priv_size(struct lattrack *tracker, unsigned bytes)
{
	int error = check_settable(tracker);
	if (!error && bytes > LATTRACK_PRIV_MAX)
		error = -EINVAL;
	if (!error)
		tracker->priv_size = bytes;
	return error;
}

int lattrack_set_max_events(struct lattrack *tracker, unsigned count)
{
	int error = check_settable(tracker);
	if (!error && (count < 1 || count > LATTRACK_EVENTS_MAX))
		error = -EINVAL;
	if (!error)
		tracker->max_events = count;
	return error;
}

int lattrack_set_gc_age_ns(struct lattrack *tracker, uint64_t ns)
{
	int error = check_settable(tracker);
	if (!error)
		tracker->gc_age_ns = ns;
	return error;
}

int lattrack_set_timer_period_ns(struct lattrack *tracker, uint64_t ns)
{
	int error = check_settable(tracker);
	if (!error && ns < MIN_PERIOD_NS)
		error = -EINVAL;
	if (!error)
		tracker->timer_period_ns = ns;
	return error;
}

uint64_t lattrack_ns_to_tsc(uint64_t ns)
{
	uint64_t hz = clock_tsc_hz();
	if (!hz)
		return ns;
	uint64_t seconds = ns / NSEC_PER_SEC, rest = ns % NSEC_PER_SEC;
	if (seconds > (UINT64_MAX - hz) / hz)
		return UINT64_MAX;
	return seconds * hz + rest * hz / NSEC_PER_SEC; /* rest * hz: below 2^64 for hz < 18 GHz */
}

static uint32_t bucket_count_for(unsigned events)
{
	uint32_t count = 16;
	while (count < 2 * events)
		count <<= 1;
	return count;
}

static int allocate(struct lattrack *tracker)
{
	tracker->event_size =
	    (unsigned)(sizeof(struct lattrack_event) + ((tracker->key_size + 7) & ~7u) +
		       ((tracker->priv_size + 7) & ~7u));
	uint32_t buckets = bucket_count_for(tracker->max_events);
	tracker->bucket_mask = buckets - 1;
	tracker->buckets = kzalloc(buckets * sizeof *tracker->buckets);
	tracker->events = kzalloc((size_t)tracker->max_events * tracker->event_size);
	/* each CPU's part on cache lines of its own (kmalloc aligns to 16) */
	tracker->cpus_block = kzalloc(cpu_count * sizeof *tracker->cpus + 64);
	tracker->cpus =
	    (struct lattrack_cpu *)(((uintptr_t)tracker->cpus_block + 63) & ~(uintptr_t)63);
	if (tracker->buckets && tracker->events && tracker->cpus_block)
		return 0;
	kfree(tracker->buckets);
	kfree(tracker->events);
	kfree(tracker->cpus_block);
	tracker->buckets = tracker->events = tracker->cpus_block = NULL;
	tracker->cpus = NULL;
	return -ENOMEM;
}

/* Each CPU gets a contiguous share of the events (the first ones one more),
 * so two CPUs never write events that share a cache line but at a boundary. */
static void fill_freelists(struct lattrack *tracker)
{
	unsigned share = tracker->max_events / cpu_count, extra = tracker->max_events % cpu_count;
	unsigned index = 0;
	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		unsigned count = share + (cpu < extra);
		for (unsigned i = 0; i < count; i++, index++) {
			struct lattrack_event *event = lattrack_event_at(tracker, index);
			event->home_cpu = (uint8_t)cpu;
			event->next = i + 1 < count ? lattrack_event_at(tracker, index + 1) : NULL;
		}
		tracker->cpus[cpu].free = count ? lattrack_event_at(tracker, index - count) : NULL;
	}
}

int lattrack_enable(struct lattrack *tracker)
{
	int error = check_settable(tracker);
	if (error)
		return error;
	error = allocate(tracker);
	if (error)
		return error;
	fill_freelists(tracker);
	tracker->timeout_tsc = lattrack_ns_to_tsc(tracker->timeout_ns);
	tracker->gc_age_tsc = lattrack_ns_to_tsc(tracker->gc_age_ns);
	tracker->word_path = tracker->key_size >= 8 && tracker->priv_size == 0;
	__atomic_store_n(&tracker->enabled, true, __ATOMIC_RELEASE);
	lattrack_timer_start(tracker);
	return 0;
}

static bool unregister(struct lattrack *tracker)
{
	uint64_t flags = spin_lock_irqsave(&lattrack_registry_lock);
	bool found = false;
	for (int i = 0; i < LATTRACK_TRACKERS_MAX; i++) {
		if (registry[i] == tracker) {
			registry[i] = NULL;
			found = true;
		}
	}
	spin_unlock_irqrestore(&lattrack_registry_lock, flags);
	return found;
}

int lattrack_destroy(struct lattrack *tracker)
{
	if (!tracker || !unregister(tracker))
		return -EINVAL;
	if (tracker->enabled) {
		__atomic_store_n(&tracker->word_path, false, __ATOMIC_RELEASE);
		__atomic_store_n(&tracker->enabled, false, __ATOMIC_RELEASE);
		lattrack_timer_stop(tracker);
	}
	lattrack_put(tracker);
	return 0;
}

struct lattrack *lattrack_get(const char *name)
{
	if (!name)
		return NULL;
	uint64_t flags = spin_lock_irqsave(&lattrack_registry_lock);
	int free_slot;
	int slot = find_slot(name, &free_slot);
	struct lattrack *tracker = slot >= 0 ? registry[slot] : NULL;
	if (tracker)
		tracker->references++;
	spin_unlock_irqrestore(&lattrack_registry_lock, flags);
	return tracker;
}

struct lattrack *lattrack_get_reference(struct lattrack *tracker)
{
	uint64_t flags = spin_lock_irqsave(&lattrack_registry_lock);
	tracker->references++;
	spin_unlock_irqrestore(&lattrack_registry_lock, flags);
	return tracker;
}

void lattrack_put(struct lattrack *tracker)
{
	if (!tracker)
		return;
	uint64_t flags = spin_lock_irqsave(&lattrack_registry_lock);
	bool last = --tracker->references == 0;
	spin_unlock_irqrestore(&lattrack_registry_lock, flags);
	if (!last)
		return;
	kfree(tracker->buckets);
	kfree(tracker->events);
	kfree(tracker->cpus_block);
	kfree(tracker);
}

int lattrack_for_each(int (*fn)(struct lattrack *tracker, void *arg), void *arg)
{
	for (int i = 0; i < LATTRACK_TRACKERS_MAX; i++) {
		uint64_t flags = spin_lock_irqsave(&lattrack_registry_lock);
		struct lattrack *tracker = registry[i];
		if (tracker)
			tracker->references++;
		spin_unlock_irqrestore(&lattrack_registry_lock, flags);
		if (!tracker)
			continue;
		int result = fn(tracker, arg);
		lattrack_put(tracker);
		if (result)
			return result;
	}
	return 0;
}

const char *lattrack_name(const struct lattrack *tracker)
{
	return tracker->name;
}

uint64_t lattrack_threshold_ns(const struct lattrack *tracker)
{
	return __atomic_load_n(&tracker->threshold_ns, __ATOMIC_RELAXED);
}

uint64_t lattrack_timeout_ns(const struct lattrack *tracker)
{
	return tracker->timeout_ns;
}

const char *lattrack_kind(const struct lattrack *tracker)
{
	return tracker->kind;
}

uint64_t lattrack_max_ns(const struct lattrack *tracker)
{
	uint64_t max = 0;
	for (unsigned i = 0; tracker->cpus && i < cpu_count; i++)
		if (tracker->cpus[i].max_tsc > max)
			max = tracker->cpus[i].max_tsc;
	return clock_tsc_to_ns(max);
}

void lattrack_get_counts(const struct lattrack *tracker, struct lattrack_counts *counts)
{
	memset(counts, 0, sizeof *counts);
	for (unsigned i = 0; tracker->cpus && i < cpu_count; i++) {
		const struct lattrack_counts *c = &tracker->cpus[i].counts;
		counts->in += c->in;
		counts->dropped += c->dropped;
		counts->out += c->out;
		counts->unmatched += c->unmatched;
		counts->over += c->over;
		counts->timeout += c->timeout;
		counts->late += c->late;
		counts->unique += c->unique;
		counts->gc += c->gc;
	}
	uint64_t quiet = lattrack_span_quiet_count(tracker);
	counts->in += quiet;
	counts->out += quiet;
	counts->in_flight = counts->in - counts->out - counts->unique - counts->gc;
}

bool lattrack_is_enabled(const struct lattrack *tracker)
{
	return __atomic_load_n(&tracker->enabled, __ATOMIC_ACQUIRE);
}
