/*
 * The page cache (pagecache.h).  One sleeping lock, pcache_lock, guards every
 * mapping's list, the LRU list and the page states; no I/O runs under it.  A
 * page being read or written back is `busy`: others wait on pcache_waiters
 * until it is not.  Eviction happens in pcache_get when the cache is over its
 * limit, taking unreferenced pages from the cold end of the LRU list; a
 * dirty one is written back first (the evicting thread pays for it).
 *
 * Accounting: each hit, miss, eviction and byte read is also charged to the
 * calling thread's activity (acct_charge_ref), after pcache_lock is dropped;
 * with accounting off that costs one load and a branch.
 */
#include "pagecache/pagecache.h"

#include "acct/acct.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

static struct mutex pcache_lock = MUTEX_INIT(pcache_lock, "pcache");
static struct waitq pcache_waiters = WAITQ_INIT(pcache_waiters, "pcache.busy");
static struct pcache_page *lru_head, *lru_tail; /* head: most recently used */
static struct pcache_stats totals;
static unsigned pcache_max_pages = 2048;

void pcache_mapping_init(struct pcache_mapping *mapping, const struct pcache_ops *ops, void *owner)
{
	*mapping = (struct pcache_mapping){.ops = ops, .owner = owner};
}

/* ---- Lists (pcache_lock held) --------------------------------------------- */

static void lru_unlink(struct pcache_page *page)
{
	if (page->lru_prev)
		page->lru_prev->lru_next = page->lru_next;
	else
		lru_head = page->lru_next;
	if (page->lru_next)
		page->lru_next->lru_prev = page->lru_prev;
	else
		lru_tail = page->lru_prev;
	page->lru_prev = page->lru_next = NULL;
}

static void lru_push_head(struct pcache_page *page)
{
	page->lru_prev = NULL;
	page->lru_next = lru_head;
	if (lru_head)
		lru_head->lru_prev = page;
	lru_head = page;
	if (!lru_tail)
		lru_tail = page;
}

static struct pcache_page **bucket_of(struct pcache_mapping *mapping, uint64_t index)
{
	return &mapping->buckets[index % PCACHE_BUCKETS];
}

static struct pcache_page *mapping_find(struct pcache_mapping *mapping, uint64_t index)
{
	for (struct pcache_page *page = *bucket_of(mapping, index); page;
	     page = page->next_in_mapping)
		if (page->index == index && !page->dead)
			return page;
	return NULL;
}

static void page_free(struct pcache_page *page)
{
	struct pcache_mapping *mapping = page->mapping;
	struct pcache_page **link = bucket_of(mapping, page->index);
	while (*link != page)
		link = &(*link)->next_in_mapping;
	*link = page->next_in_mapping;
	lru_unlink(page);
	if (page->dirty) {
		mapping->stats.dirty--;
		totals.dirty--;
	}
	mapping->stats.pages--;
	totals.pages--;
	mm_free_pages(page->data, 1);
	kfree(page);
}

static struct pcache_page *page_new(struct pcache_mapping *mapping, uint64_t index)
{
	struct pcache_page *page = kzalloc(sizeof(*page));
	if (!page)
		return NULL;
	page->data = mm_alloc_pages(1, PAGE_SIZE);
	if (!page->data) {
		kfree(page);
		return NULL;
	}
	page->mapping = mapping;
	page->index = index;
	page->refs = 1;
	page->busy = true;
	page->next_in_mapping = *bucket_of(mapping, index);
	*bucket_of(mapping, index) = page;
	lru_push_head(page);
	mapping->stats.pages++;
	totals.pages++;
	return page;
}

static bool page_not_busy(void *arg)
{
	return !__atomic_load_n(&((struct pcache_page *)arg)->busy, __ATOMIC_ACQUIRE);
}

/* Waits, with pcache_lock dropped meanwhile, until page is not busy; the
 * caller holds a reference so the page stays. */
static void wait_not_busy(struct pcache_page *page)
{
	while (page->busy) {
		mutex_unlock(&pcache_lock);
		waitq_wait(&pcache_waiters, page_not_busy, page);
		mutex_lock(&pcache_lock);
	}
}

static void set_not_busy(struct pcache_page *page)
{
	__atomic_store_n(&page->busy, false, __ATOMIC_RELEASE);
	waitq_wake_all(&pcache_waiters);
}

static void set_dirty(struct pcache_page *page, bool dirty)
{
	if (page->dirty == dirty)
		return;
	page->dirty = dirty;
	int64_t delta = dirty ? 1 : -1;
	page->mapping->stats.dirty += delta;
	totals.dirty += delta;
}

/* Writes page back (pcache_lock held, page referenced and not busy); the lock
 * is dropped during the write.  Returns 0 or the error. */
static int write_back(struct pcache_page *page)
{
	struct pcache_mapping *mapping = page->mapping;
	page->busy = true;
	set_dirty(page, false); /* a write during the I/O marks it again */
	mutex_unlock(&pcache_lock);
	int error = mapping->ops->write_page(mapping, page->index, page->data);
	mutex_lock(&pcache_lock);
	if (error) {
		set_dirty(page, true);
		mapping->stats.write_errors++;
		totals.write_errors++;
	} else {
		mapping->stats.writebacks++;
		totals.writebacks++;
	}
	set_not_busy(page);
	return error;
}

/* Evicts from the cold end until at most target pages stay (pcache_lock
 * held; dropped while a dirty page is written back). */
static unsigned evict_to(unsigned target)
{
	unsigned attempts = (unsigned)totals.pages, evicted = 0;
	struct pcache_page *page = lru_tail;
	while (totals.pages > target && page && attempts--) {
		struct pcache_page *warmer = page->lru_prev;
		if (page->refs || page->busy) {
			page = warmer;
			continue;
		}
		if (page->dirty) {
			page->refs++;
			int error = write_back(page);
			page->refs--;
			if (error || page->refs || page->dirty) {
				page = lru_tail; /* the list may have changed: start again */
				continue;
			}
			warmer = page->lru_prev;
		}
		page->mapping->stats.evictions++;
		totals.evictions++;
		evicted++;
		page_free(page);
		page = warmer;
	}
	return evicted;
}

/* ---- API ------------------------------------------------------------------ */

static int fill_new_page(struct pcache_page *page, enum pcache_fill fill)
{
	struct pcache_mapping *mapping = page->mapping;
	int error = 0;
	mutex_unlock(&pcache_lock);
	if (fill == PCACHE_ZERO)
		memset(page->data, 0, PAGE_SIZE);
	else
		error = mapping->ops->read_page(mapping, page->index, page->data);
	mutex_lock(&pcache_lock);
	page->valid = error == 0;
	set_not_busy(page);
	return error;
}

/* Charges what one pcache_get did to the calling thread's activity. */
static void charge_activity(bool hit, unsigned evicted, bool read)
{
	acct_ref_t ref = acct_current_ref();
	if (!ref)
		return;
	acct_charge_ref(ref, hit ? ACCT_PAGE_CACHE_HITS : ACCT_PAGE_CACHE_MISSES, 1);
	if (evicted)
		acct_charge_ref(ref, ACCT_PAGE_CACHE_EVICTIONS, evicted);
	if (read)
		acct_charge_ref(ref, ACCT_PAGE_CACHE_READ_BYTES, PAGE_SIZE);
}

int pcache_get(struct pcache_mapping *mapping, uint64_t index, enum pcache_fill fill,
	       struct pcache_page **result)
{
	mutex_lock(&pcache_lock);
	struct pcache_page *page;
	for (;;) {
		page = mapping_find(mapping, index);
		if (!page)
			break;
		page->refs++;
		wait_not_busy(page);
		if (page->valid)
			break;
		/* its read failed: drop it and try afresh */
		page->dead = true;
		if (--page->refs == 0)
			page_free(page);
	}
	if (page) {
		mapping->stats.hits++;
		totals.hits++;
		lru_unlink(page);
		lru_push_head(page);
		*result = page;
		mutex_unlock(&pcache_lock);
		charge_activity(true, 0, false);
		return 0;
	}
	unsigned evicted = 0;
	if (totals.pages >= pcache_max_pages)
		evicted = evict_to(pcache_max_pages - pcache_max_pages / 8);
	page = page_new(mapping, index);
	if (!page) {
		mutex_unlock(&pcache_lock);
		return -ENOMEM;
	}
	mapping->stats.misses++;
	totals.misses++;
	int error = fill_new_page(page, fill);
	if (error) {
		page->dead = true; /* new lookups read afresh */
		if (--page->refs == 0)
			page_free(page);
		mutex_unlock(&pcache_lock);
		charge_activity(false, evicted, false);
		return error;
	}
	*result = page;
	mutex_unlock(&pcache_lock);
	charge_activity(false, evicted, fill == PCACHE_READ);
	return 0;
}

void pcache_mark_dirty(struct pcache_page *page)
{
	mutex_lock(&pcache_lock);
	set_dirty(page, true);
	mutex_unlock(&pcache_lock);
}

void pcache_put(struct pcache_page *page)
{
	mutex_lock(&pcache_lock);
	page->refs--;
	if (page->refs == 0 && !page->valid)
		page_free(page);
	mutex_unlock(&pcache_lock);
}

/* The first page of mapping for which wanted(page) holds, or NULL. */
static struct pcache_page *mapping_first(struct pcache_mapping *mapping,
					 bool (*wanted)(const struct pcache_page *page))
{
	for (unsigned bucket = 0; bucket < PCACHE_BUCKETS; bucket++)
		for (struct pcache_page *page = mapping->buckets[bucket]; page;
		     page = page->next_in_mapping)
			if (wanted(page))
				return page;
	return NULL;
}

static bool dirty_and_idle(const struct pcache_page *page)
{
	return page->dirty && !page->busy;
}

static bool busy(const struct pcache_page *page)
{
	return page->busy;
}

/* The first dirty, idle page of mapping, or else a busy one (being written or
 * read: wait for it, then look again), referenced; NULL when neither. */
static struct pcache_page *next_dirty(struct pcache_mapping *mapping)
{
	struct pcache_page *page = mapping_first(mapping, dirty_and_idle);
	if (!page)
		page = mapping_first(mapping, busy);
	if (page)
		page->refs++;
	return page;
}

int pcache_sync(struct pcache_mapping *mapping)
{
	int first_error = 0;
	mutex_lock(&pcache_lock);
	struct pcache_page *page;
	while ((page = next_dirty(mapping))) {
		wait_not_busy(page);
		if (page->dirty) {
			int error = write_back(page);
			if (error && !first_error)
				first_error = error;
		}
		page->refs--;
		if (first_error)
			break; /* the failed page stays dirty: do not loop on it */
	}
	mutex_unlock(&pcache_lock);
	return first_error;
}

void pcache_forget(struct pcache_mapping *mapping, uint64_t first)
{
	mutex_lock(&pcache_lock);
	for (unsigned bucket = 0; bucket < PCACHE_BUCKETS; bucket++) {
		struct pcache_page *page = mapping->buckets[bucket];
		while (page) {
			struct pcache_page *next = page->next_in_mapping;
			if (page->index >= first && !page->refs && !page->busy)
				page_free(page);
			page = next;
		}
	}
	mutex_unlock(&pcache_lock);
}

void pcache_forget_page(struct pcache_mapping *mapping, uint64_t index)
{
	mutex_lock(&pcache_lock);
	struct pcache_page *page = mapping_find(mapping, index);
	if (page && !page->refs && !page->busy)
		page_free(page);
	mutex_unlock(&pcache_lock);
}

unsigned pcache_shrink(unsigned target)
{
	mutex_lock(&pcache_lock);
	evict_to(target);
	unsigned left = (unsigned)totals.pages;
	mutex_unlock(&pcache_lock);
	return left;
}

void pcache_get_stats(struct pcache_stats *stats)
{
	mutex_lock(&pcache_lock);
	*stats = totals;
	mutex_unlock(&pcache_lock);
}

void pcache_set_limit(unsigned pages)
{
	mutex_lock(&pcache_lock);
	pcache_max_pages = pages < 16 ? 16 : pages;
	mutex_unlock(&pcache_lock);
}

unsigned pcache_limit(void)
{
	return pcache_max_pages;
}
