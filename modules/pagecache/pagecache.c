/*
 * The page cache (pagecache.h).  One sleeping lock, pcache_lock, guards every
 * mapping's list, the LRU list and the page states; no I/O runs under it.  A
 * page being read or written back is `busy`: others wait on pcache_waiters
 * until it is not.  Eviction happens in pcache_get when the cache is over its
 * limit, taking unreferenced pages from the cold end of the LRU list; a
 * dirty one is written back first (the evicting thread pays for it), and one
 * whose write fails moves to the warm end, still dirty.
 *
 * Read-ahead (pcache_get_ahead): a miss that continues where the open file's
 * last access stopped reads a window of pages after it, made busy over
 * consecutive frames and filled by one read_pages call with the lock
 * dropped; the window ends before the first page that is cached already, so
 * a window is always one run.  If the window's read fails nothing of it is
 * kept and the wanted page is read alone, so an error in a page nobody asked
 * for reaches nobody.
 *
 * Asynchronous read-ahead (owners with start_read_pages): a window read
 * for a sequential reader marks the page after the one asked for, and an
 * asynchronous window marks its first page (`trigger`).  A hit there by a
 * reader that goes on in order (pcache_get_cached) starts the next window,
 * twice as large up to PCACHE_AHEAD_MAX, after ahead->window_end, once the
 * lock is dropped: the owner makes its pages busy with
 * pcache_window_begin, starts the device and returns; its completion calls
 * pcache_window_end, maybe in an interrupt handler, which takes no lock: it
 * drops the window's references while the pages are still busy (nothing
 * frees or forgets a busy page), then sets valid (or dead) and clears busy
 * with a release store.  A dead page nobody refers to is freed by the next
 * eviction or forget.  Forget waits for every busy page (read ahead, or
 * written back by another user's eviction: both end without the owner's
 * lock), so no page it should take stays and an owner may free its mapping
 * after forgetting it.
 *
 * Pages mapped writable into processes (shared file mappings) are counted
 * in `writers`; their stores bypass the cache, so pcache_sync marks them
 * dirty before writing the mapping's dirty pages.  They are referenced while
 * mapped, so eviction never takes them.
 *
 * References: `refs` is changed with atomic operations.  It is raised only
 * with pcache_lock held, and lowered with it held, except by pcache_put,
 * which lowers it without the lock: a hit (pcache_get_cached then
 * pcache_put) takes pcache_lock once.  That is safe because whoever holds a
 * reference from pcache_get or pcache_find holds a valid page, and a valid
 * page is freed only with the lock held once nobody refers to it: by
 * eviction (which sees refs 0) or, for a page that forget took out of the
 * mapping while it was referenced, by the last pcache_put.  Such a page is
 * `dead` (lookups skip it) and carries PCACHE_GONE in refs, so that the put
 * whose decrement leaves exactly PCACHE_GONE knows it is the last one.
 *
 * Accounting: each hit, miss, eviction, byte read and page read ahead is also
 * charged to the calling thread's activity (acct_charge_ref), after
 * pcache_lock is dropped; with accounting off that costs one load and a
 * branch.
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

/* An asynchronous read-ahead window in flight: its busy pages, each
 * referenced once by it. */
struct pcache_window {
	unsigned count;
	struct pcache_page *pages[PCACHE_AHEAD_MAX];
};
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

/* The references to page (pcache_lock held or not), without PCACHE_GONE. */
static unsigned refs_of(const struct pcache_page *page)
{
	return __atomic_load_n(&page->refs, __ATOMIC_ACQUIRE) & ~PCACHE_GONE;
}

static void ref_get(struct pcache_page *page)
{
	__atomic_add_fetch(&page->refs, 1, __ATOMIC_RELAXED);
}

static void page_free(struct pcache_page *page);

/* Busy may be cleared by pcache_window_end without the lock. */
static bool page_busy(const struct pcache_page *page)
{
	return __atomic_load_n(&page->busy, __ATOMIC_ACQUIRE);
}

/* A page whose asynchronous read failed, that nobody waited for (pcache_lock
 * held): nothing else frees it. */
static bool dead_and_unused(const struct pcache_page *page)
{
	return !page_busy(page) && page->dead &&
	       __atomic_load_n(&page->refs, __ATOMIC_ACQUIRE) == 0;
}

/* Drops a reference (pcache_lock held); the last one frees a page that no
 * lookup finds any more (its read failed, or forget took it out). */
static void ref_drop_locked(struct pcache_page *page)
{
	unsigned left = __atomic_sub_fetch(&page->refs, 1, __ATOMIC_ACQ_REL) & ~PCACHE_GONE;
	if (left == 0 && page->dead)
		page_free(page);
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

/* A new busy page index of mapping over the frame data, referenced once. */
static struct pcache_page *page_new_at(struct pcache_mapping *mapping, uint64_t index,
				       uint8_t *data)
{
	struct pcache_page *page = kzalloc(sizeof(*page));
	if (!page)
		return NULL;
	page->data = data;
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

static struct pcache_page *page_new(struct pcache_mapping *mapping, uint64_t index)
{
	uint8_t *data = mm_alloc_pages(1, PAGE_SIZE);
	if (!data)
		return NULL;
	struct pcache_page *page = page_new_at(mapping, index, data);
	if (!page)
		mm_free_pages(data, 1);
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
	if (error == -EAGAIN) {
		set_dirty(page, true); /* the owner is busy: not now, not a failure */
	} else if (error) {
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
 * held; dropped while a dirty page is written back).  A page whose write
 * fails goes to the warm end, dirty, and no other dirty page is written in
 * this pass: a miss costs at most one failing write.  One whose owner said
 * -EAGAIN (busy) goes to the warm end too, and other dirty pages are still
 * tried. */
static unsigned evict_to(unsigned target)
{
	unsigned attempts = (unsigned)totals.pages, evicted = 0;
	bool write_failed = false;
	struct pcache_page *page = lru_tail;
	while (totals.pages > target && page && attempts--) {
		struct pcache_page *warmer = page->lru_prev;
		if (dead_and_unused(page)) {
			page_free(page); /* its read ahead failed and nobody came */
			page = warmer;
			continue;
		}
		if (page_busy(page) || page->dead || refs_of(page)) {
			page = warmer;
			continue;
		}
		if (page->dirty && write_failed) {
			page = warmer;
			continue;
		}
		if (page->dirty) {
			ref_get(page);
			int error = write_back(page);
			bool kept = error || refs_of(page) > 1 || page->dirty || page->dead;
			if (error) {
				write_failed |= error != -EAGAIN; /* owner busy: try others */
				lru_unlink(page);
				lru_push_head(page);
			}
			ref_drop_locked(page);
			if (kept) {
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

/* What one pcache_get did, charged to the calling thread's activity once
 * pcache_lock is dropped. */
struct pcache_charge {
	bool hit;
	unsigned evicted;
	unsigned pages_read; /* from the device (or the owner's store) */
	unsigned read_ahead; /* of pages_read, beyond the page asked for */
};

static void charge_activity(const struct pcache_charge *charge)
{
	acct_ref_t ref = acct_current_ref();
	if (!ref)
		return;
	acct_charge_ref(ref, charge->hit ? ACCT_PAGE_CACHE_HITS : ACCT_PAGE_CACHE_MISSES, 1);
	if (charge->evicted)
		acct_charge_ref(ref, ACCT_PAGE_CACHE_EVICTIONS, charge->evicted);
	if (charge->pages_read)
		acct_charge_ref(ref, ACCT_PAGE_CACHE_READ_BYTES,
				(uint64_t)charge->pages_read * PAGE_SIZE);
	if (charge->read_ahead)
		acct_charge_ref(ref, ACCT_PAGE_CACHE_READ_AHEAD, charge->read_ahead);
}

/* The valid cached page index of mapping, referenced, or NULL (pcache_lock
 * held; dropped while waiting for a page being filled). */
static struct pcache_page *find_valid(struct pcache_mapping *mapping, uint64_t index)
{
	struct pcache_page *page;
	for (;;) {
		page = mapping_find(mapping, index);
		if (!page)
			return NULL;
		ref_get(page);
		wait_not_busy(page);
		if (page->valid && !page->dead)
			return page;
		/* its read failed (or forget took it meanwhile): try afresh */
		page->dead = true;
		ref_drop_locked(page);
	}
}

static void count_hit(struct pcache_page *page)
{
	page->mapping->stats.hits++;
	totals.hits++;
	lru_unlink(page);
	lru_push_head(page);
}

/* Pages of a window from index, at most want, ending before the first page
 * that is cached already (pcache_lock held). */
static unsigned window_room(struct pcache_mapping *mapping, uint64_t index, unsigned want)
{
	for (unsigned i = 1; i < want; i++)
		if (mapping_find(mapping, index + i))
			return i;
	return want;
}

/* Makes count busy pages from index over consecutive frames (fewer when
 * memory runs short).  Returns how many, 0 when none. */
static unsigned window_pages(struct pcache_mapping *mapping, uint64_t index, unsigned count,
			     struct pcache_page **pages, uint8_t **frames)
{
	*frames = mm_alloc_pages(count, PAGE_SIZE);
	if (!*frames)
		return 0;
	unsigned made = 0;
	while (made < count &&
	       (pages[made] = page_new_at(mapping, index + made, *frames + made * PAGE_SIZE)))
		made++;
	if (made < count)
		mm_free_pages(*frames + made * PAGE_SIZE, count - made);
	return made;
}

/* Reads a read-ahead window of count pages from index with one read_pages
 * call (pcache_lock held, dropped during the read).  Returns 0 and the first
 * page referenced, or an error after which nothing of the window is kept. */
static int read_window(struct pcache_mapping *mapping, uint64_t index, unsigned count,
		       struct pcache_page **result, struct pcache_charge *charge)
{
	struct pcache_page *pages[PCACHE_AHEAD_MAX];
	uint8_t *frames;
	count = window_pages(mapping, index, count, pages, &frames);
	if (count == 0)
		return -ENOMEM;
	mutex_unlock(&pcache_lock);
	int error = mapping->ops->read_pages(mapping, index, count, frames);
	mutex_lock(&pcache_lock);
	for (unsigned i = 0; i < count; i++) {
		struct pcache_page *page = pages[i];
		page->valid = error == 0;
		page->dead = error != 0; /* new lookups read afresh */
		__atomic_store_n(&page->busy, false, __ATOMIC_RELEASE);
		if (i == 0 && !error)
			continue; /* the caller's reference */
		ref_drop_locked(page);
	}
	waitq_wake_all(&pcache_waiters);
	if (error)
		return error;
	mapping->stats.read_ahead += count - 1;
	totals.read_ahead += count - 1;
	mapping->stats.windows++;
	totals.windows++;
	charge->pages_read = count;
	charge->read_ahead = count - 1;
	*result = pages[0];
	return 0;
}

/* A miss: reads (or zeroes) page index, with the window pages after it when
 * window > 1 and the owner reads several at once (pcache_lock held). */
static int get_missing(struct pcache_mapping *mapping, uint64_t index, enum pcache_fill fill,
		       unsigned window, struct pcache_page **result, struct pcache_charge *charge)
{
	if (totals.pages + window > pcache_max_pages)
		charge->evicted = evict_to(pcache_max_pages - pcache_max_pages / 8);
	mapping->stats.misses++;
	totals.misses++;
	if (fill == PCACHE_READ && window > 1 && mapping->ops->read_pages) {
		window = window_room(mapping, index, window);
		if (window > 1 && read_window(mapping, index, window, result, charge) == 0)
			return 0;
	}
	struct pcache_page *page = page_new(mapping, index);
	if (!page)
		return -ENOMEM;
	int error = fill_new_page(page, fill);
	if (error) {
		page->dead = true; /* new lookups read afresh */
		ref_drop_locked(page);
		return error;
	}
	charge->pages_read = fill == PCACHE_READ;
	*result = page;
	return 0;
}

/* The window a miss at index reads: growing while the reader goes on where
 * it stopped, one page (or what the call wants) when it jumped. */
static unsigned next_window(struct pcache_ahead *ahead, bool sequential, uint64_t index,
			    uint64_t want_end, uint64_t end)
{
	unsigned window = 1;
	if (sequential) {
		ahead->window = ahead->window ? ahead->window * 2 : PCACHE_AHEAD_FIRST;
		if (ahead->window > PCACHE_AHEAD_MAX)
			ahead->window = PCACHE_AHEAD_MAX;
		window = ahead->window;
	} else {
		ahead->window = 0;
	}
	if (want_end > index + window)
		window = want_end - index > PCACHE_AHEAD_MAX ? PCACHE_AHEAD_MAX
							     : (unsigned)(want_end - index);
	if (end <= index)
		return 1;
	return end - index < window ? (unsigned)(end - index) : window;
}

/* A sequential reader's window of pages from index was read: its second
 * page starts the next one when reached (pcache_lock held). */
static void mark_next_window(struct pcache_mapping *mapping, uint64_t index, unsigned pages,
			     struct pcache_ahead *ahead)
{
	ahead->window_end = index + pages;
	struct pcache_page *second = mapping_find(mapping, index + 1);
	if (second && mapping->ops->start_read_pages)
		second->trigger = true;
}

static int get_page(struct pcache_mapping *mapping, uint64_t index, enum pcache_fill fill,
		    struct pcache_ahead *ahead, uint64_t want_end, uint64_t end,
		    struct pcache_page **result)
{
	struct pcache_charge charge = {0};
	int error = 0;
	mutex_lock(&pcache_lock);
	bool sequential = ahead && index == ahead->next; /* pcache_get_cached moves it, locked */
	struct pcache_page *page = find_valid(mapping, index);
	if (page) {
		count_hit(page);
		charge.hit = true;
		*result = page;
	} else {
		unsigned window = ahead ? next_window(ahead, sequential, index, want_end, end) : 1;
		error = get_missing(mapping, index, fill, window, result, &charge);
		if (!error && sequential && charge.pages_read > 1)
			mark_next_window(mapping, index, charge.pages_read, ahead);
	}
	if (ahead)
		ahead->next = index + 1;
	mutex_unlock(&pcache_lock);
	charge_activity(&charge);
	return error;
}

/* The window a hit on a marked page starts: after the last one, twice as
 * large up to PCACHE_AHEAD_MAX, within end; count 0 when none.  Only for a
 * reader that goes on in order inside the windows it read (a mark left
 * from another pass is ignored). */
struct next_window {
	uint64_t first;
	unsigned count;
};

static struct next_window async_window(struct pcache_ahead *ahead, uint64_t end)
{
	struct next_window next = {.first = ahead->window_end};
	unsigned size = ahead->window ? ahead->window * 2 : PCACHE_AHEAD_FIRST;
	if (size > PCACHE_AHEAD_MAX)
		size = PCACHE_AHEAD_MAX;
	if (next.first >= end)
		return next;
	next.count = end - next.first < size ? (unsigned)(end - next.first) : size;
	ahead->window = size;
	ahead->window_end = next.first + next.count;
	return next;
}

int pcache_get_cached(struct pcache_mapping *mapping, uint64_t index, struct pcache_ahead *ahead,
		      uint64_t end, struct pcache_page **result)
{
	struct next_window next = {0};
	mutex_lock(&pcache_lock);
	struct pcache_page *page = mapping_find(mapping, index);
	if (page && !page_busy(page) && page->valid)
		ref_get(page); /* the usual hit; find_valid waits for a page being read */
	else if (page)
		page = find_valid(mapping, index);
	if (!page) {
		mutex_unlock(&pcache_lock);
		return -ENOENT;
	}
	count_hit(page);
	if (ahead && page->trigger && index == ahead->next && index < ahead->window_end) {
		page->trigger = false;
		next = async_window(ahead, end);
	}
	if (ahead)
		ahead->next = index + 1;
	mutex_unlock(&pcache_lock);
	*result = page;
	const struct pcache_charge hit = {.hit = true};
	charge_activity(&hit);
	if (next.count)
		mapping->ops->start_read_pages(mapping, next.first, next.count);
	return 0;
}

static void charge_window(unsigned pages, unsigned evicted)
{
	acct_ref_t ref = acct_current_ref();
	if (!ref)
		return;
	if (evicted)
		acct_charge_ref(ref, ACCT_PAGE_CACHE_EVICTIONS, evicted);
	acct_charge_ref(ref, ACCT_PAGE_CACHE_READ_BYTES, (uint64_t)pages * PAGE_SIZE);
	acct_charge_ref(ref, ACCT_PAGE_CACHE_READ_AHEAD, pages);
}

/* Busy pages from first for an asynchronous window (pcache_lock held):
 * how many were made into window, 0 when none. */
static unsigned window_make(struct pcache_mapping *mapping, uint64_t first, unsigned count,
			    struct pcache_window *window, uint8_t **buffer, unsigned *evicted)
{
	if (totals.pages + count > pcache_max_pages)
		*evicted = evict_to(pcache_max_pages - pcache_max_pages / 8);
	if (mapping_find(mapping, first))
		return 0;
	count =
	    window_pages(mapping, first, window_room(mapping, first, count), window->pages, buffer);
	for (unsigned i = 0; i < count; i++)
		window->pages[i]->reading_ahead = true;
	if (count) {
		window->pages[0]->trigger = true;
		mapping->stats.read_ahead += count;
		totals.read_ahead += count;
		mapping->stats.windows++;
		totals.windows++;
		mapping->stats.async_windows++;
		totals.async_windows++;
	}
	return count;
}

struct pcache_window *pcache_window_begin(struct pcache_mapping *mapping, uint64_t first,
					  unsigned *count, uint8_t **buffer)
{
	struct pcache_window *window = kmalloc(sizeof *window);
	if (!window || *count == 0 || *count > PCACHE_AHEAD_MAX) {
		kfree(window);
		return NULL;
	}
	unsigned evicted = 0;
	mutex_lock(&pcache_lock);
	window->count = window_make(mapping, first, *count, window, buffer, &evicted);
	mutex_unlock(&pcache_lock);
	if (window->count)
		charge_window(window->count, evicted);
	if (!window->count) {
		kfree(window);
		return NULL;
	}
	*count = window->count;
	return window;
}

void pcache_window_end(struct pcache_window *window, int status)
{
	for (unsigned i = 0; i < window->count; i++) {
		struct pcache_page *page = window->pages[i];
		__atomic_sub_fetch(&page->refs, 1, __ATOMIC_RELAXED); /* busy: nobody frees it */
		page->valid = status == 0;
		page->dead = status != 0;
		page->reading_ahead = false;
		__atomic_store_n(&page->busy, false, __ATOMIC_RELEASE);
	}
	kfree(window);
	waitq_wake_all(&pcache_waiters);
}

int pcache_get(struct pcache_mapping *mapping, uint64_t index, enum pcache_fill fill,
	       struct pcache_page **result)
{
	return get_page(mapping, index, fill, NULL, 0, 0, result);
}

int pcache_get_ahead(struct pcache_mapping *mapping, uint64_t index, struct pcache_ahead *ahead,
		     uint64_t want_end, uint64_t end, struct pcache_page **result)
{
	return get_page(mapping, index, PCACHE_READ, ahead, want_end, end, result);
}

void pcache_mark_dirty(struct pcache_page *page)
{
	mutex_lock(&pcache_lock);
	set_dirty(page, true);
	mutex_unlock(&pcache_lock);
}

void pcache_map_writable(struct pcache_page *page)
{
	mutex_lock(&pcache_lock);
	page->writers++;
	set_dirty(page, true);
	mutex_unlock(&pcache_lock);
}

void pcache_unmap_writable(struct pcache_page *page)
{
	mutex_lock(&pcache_lock);
	if (page->writers)
		page->writers--;
	set_dirty(page, true);
	mutex_unlock(&pcache_lock);
}

int pcache_find(struct pcache_mapping *mapping, uint64_t index, struct pcache_page **result)
{
	mutex_lock(&pcache_lock);
	struct pcache_page *page = find_valid(mapping, index);
	mutex_unlock(&pcache_lock);
	*result = page;
	return page ? 0 : -ENOENT;
}

int pcache_find_frame(struct pcache_mapping *mapping, uint64_t index, const void *data,
		      struct pcache_page **result)
{
	mutex_lock(&pcache_lock);
	struct pcache_page *page = *bucket_of(mapping, index);
	while (page && (page->index != index || page->data != data))
		page = page->next_in_mapping;
	if (page)
		ref_get(page);
	mutex_unlock(&pcache_lock);
	*result = page;
	return page ? 0 : -ENOENT;
}

void pcache_put(struct pcache_page *page)
{
	/* Release: what the holder did with the page comes before an eviction
	 * that sees the reference gone.  Nothing of page is touched after the
	 * decrement unless it was the last reference to a page forget took. */
	if (__atomic_sub_fetch(&page->refs, 1, __ATOMIC_RELEASE) != PCACHE_GONE)
		return;
	mutex_lock(&pcache_lock);
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
	return page->dirty && !page->busy && !page->dead;
}

static bool busy(const struct pcache_page *page)
{
	return page->busy && !page->dead;
}

/* The first dirty, idle page of mapping, or else a busy one (being written or
 * read: wait for it, then look again), referenced; NULL when neither. */
static struct pcache_page *next_dirty(struct pcache_mapping *mapping)
{
	struct pcache_page *page = mapping_first(mapping, dirty_and_idle);
	if (!page)
		page = mapping_first(mapping, busy);
	if (page)
		ref_get(page);
	return page;
}

/* Pages mapped writable may have been stored to since they were last
 * written: they count as dirty (pcache_lock held). */
static void dirty_mapped_writable(struct pcache_mapping *mapping)
{
	for (unsigned bucket = 0; bucket < PCACHE_BUCKETS; bucket++)
		for (struct pcache_page *page = mapping->buckets[bucket]; page;
		     page = page->next_in_mapping)
			if (page->writers && !page->dead)
				set_dirty(page, true);
}

int pcache_sync(struct pcache_mapping *mapping)
{
	int first_error = 0;
	mutex_lock(&pcache_lock);
	dirty_mapped_writable(mapping);
	struct pcache_page *page;
	while ((page = next_dirty(mapping))) {
		wait_not_busy(page);
		if (page->dirty && !page->dead) {
			int error = write_back(page);
			if (error && !first_error)
				first_error = error;
		}
		ref_drop_locked(page);
		if (first_error)
			break; /* the failed page stays dirty: do not loop on it */
	}
	mutex_unlock(&pcache_lock);
	return first_error;
}

/* Takes page out of its mapping (pcache_lock held, page idle): freed now, or
 * by the last put when it is referenced (a reader copying from it, a shared
 * mapping); lookups no longer find it, so the next one reads afresh. */
static void forget_one(struct pcache_page *page)
{
	unsigned held = __atomic_fetch_or(&page->refs, PCACHE_GONE, __ATOMIC_ACQ_REL);
	page->dead = true;
	if (held == 0)
		page_free(page);
}

/* Waits until page is not busy (pcache_lock held, dropped meanwhile). */
static void wait_idle(struct pcache_page *page)
{
	ref_get(page);
	wait_not_busy(page); /* ends without any lock: safe under the owner's */
	ref_drop_locked(page);
}

/* Forget first waits for every busy page of the mapping: one being read
 * ahead, and one being written back by another cache user's eviction (the
 * owner's write_page must not wait for the owner's lock: it answers -EAGAIN
 * instead).  A page skipped while busy would stay after the truncation, and
 * a reader waiting for it would find it valid, past the end of the file,
 * with bytes that come back when the file grows; and the owner may free the
 * mapping once forget returns. */
void pcache_forget(struct pcache_mapping *mapping, uint64_t first)
{
	mutex_lock(&pcache_lock);
	struct pcache_page *page;
	while ((page = mapping_first(mapping, page_busy)))
		wait_idle(page);
	for (unsigned bucket = 0; bucket < PCACHE_BUCKETS; bucket++) {
		page = mapping->buckets[bucket];
		while (page) {
			struct pcache_page *next = page->next_in_mapping;
			if (page->index < first)
				; /* kept */
			else if (dead_and_unused(page))
				page_free(page);
			else if (!page->dead)
				forget_one(page);
			page = next;
		}
	}
	mutex_unlock(&pcache_lock);
}

void pcache_forget_page(struct pcache_mapping *mapping, uint64_t index)
{
	mutex_lock(&pcache_lock);
	struct pcache_page *page;
	while ((page = mapping_find(mapping, index)) && page_busy(page))
		wait_idle(page); /* as pcache_forget */
	if (page && !page->dead)
		forget_one(page);
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
