/*
 * The page-cache suite, against a mapping backed by memory (no disk): a page
 * read twice is a miss then a hit, for that mapping only; a failed read is
 * reported and not kept; under a small limit clean pages are evicted and dirty
 * ones written back first, and every byte written comes back; a dirty page
 * whose write fails costs a miss at most one write; sync writes
 * back exactly the dirty pages; forget drops pages without writing them,
 * and a forgotten page still in use goes at its last put; a hit-only lookup
 * counts nothing when the page is not there.  With asynchronous read-ahead
 * (async_store_ops): a sequential reader's hits start the next windows, a
 * window in flight is waited for by its reader and by forget, a failed one
 * is read again.  A forget while another user's eviction writes a page
 * back waits for the write, and the page does not stay.
 */
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "pagecache/pagecache.h"
#include "sched/sched.h"
#include "time/time.h"

#define STORE_PAGES 96

struct store {
	uint8_t *bytes; /* STORE_PAGES pages */
	unsigned reads, writes;
	unsigned window_reads; /* read_pages calls */
	uint64_t failing;      /* reads of this page fail; UINT64_MAX: none */
	bool writes_fail;      /* every write fails */
	unsigned write_attempts;
	/* asynchronous windows (async_store_ops) */
	unsigned async_starts;
	bool defer;                   /* keep the window for a later store_end_window */
	struct pcache_window *window; /* the one kept */
	int window_status;
};

static int store_read(struct pcache_mapping *mapping, uint64_t index, void *page)
{
	struct store *store = mapping->owner;
	if (index == store->failing || index >= STORE_PAGES)
		return -EIO;
	store->reads++;
	memcpy(page, store->bytes + index * PAGE_SIZE, PAGE_SIZE);
	return 0;
}

static int store_write(struct pcache_mapping *mapping, uint64_t index, const void *page)
{
	struct store *store = mapping->owner;
	store->write_attempts++;
	if (index >= STORE_PAGES || store->writes_fail)
		return -EIO;
	store->writes++;
	memcpy(store->bytes + index * PAGE_SIZE, page, PAGE_SIZE);
	return 0;
}

/* A window read fails as a whole when it covers the failing page. */
static int store_read_pages(struct pcache_mapping *mapping, uint64_t first, unsigned count,
			    void *buffer)
{
	struct store *store = mapping->owner;
	if (store->failing >= first && store->failing < first + count)
		return -EIO;
	if (first + count > STORE_PAGES)
		return -EIO;
	store->window_reads++;
	memcpy(buffer, store->bytes + first * PAGE_SIZE, (size_t)count * PAGE_SIZE);
	return 0;
}

static const struct pcache_ops store_ops = {
    .read_page = store_read, .write_page = store_write, .read_pages = store_read_pages};

/* Fills the window at once; ends it now, or keeps it when store->defer. */
static void store_start_read_pages(struct pcache_mapping *mapping, uint64_t first, unsigned count)
{
	struct store *store = mapping->owner;
	uint8_t *buffer;
	struct pcache_window *window = pcache_window_begin(mapping, first, &count, &buffer);
	if (!window)
		return;
	store->async_starts++;
	int status = first + count > STORE_PAGES ? -EIO : 0;
	if (store->failing >= first && store->failing < first + count)
		status = -EIO;
	if (status == 0)
		memcpy(buffer, store->bytes + first * PAGE_SIZE, (size_t)count * PAGE_SIZE);
	if (!store->defer) {
		pcache_window_end(window, status);
		return;
	}
	store->window = window;
	store->window_status = status;
}

static const struct pcache_ops async_store_ops = {.read_page = store_read,
						  .write_page = store_write,
						  .read_pages = store_read_pages,
						  .start_read_pages = store_start_read_pages};

static bool store_init(struct store *store, struct pcache_mapping *mapping)
{
	*store = (struct store){.failing = UINT64_MAX};
	store->bytes = mm_alloc_pages(STORE_PAGES, PAGE_SIZE);
	if (!store->bytes)
		return false;
	for (size_t i = 0; i < STORE_PAGES * PAGE_SIZE; i++)
		store->bytes[i] = (uint8_t)(i / PAGE_SIZE + 1);
	pcache_mapping_init(mapping, &store_ops, store);
	return true;
}

static bool async_store_init(struct store *store, struct pcache_mapping *mapping)
{
	if (!store_init(store, mapping))
		return false;
	pcache_mapping_init(mapping, &async_store_ops, store);
	return true;
}

static void store_done(struct store *store, struct pcache_mapping *mapping)
{
	pcache_sync(mapping);
	pcache_forget(mapping, 0);
	mm_free_pages(store->bytes, STORE_PAGES);
}

static void second_read_is_a_hit(struct ktest *t)
{
	struct store store, other_store;
	struct pcache_mapping mapping, other;
	ASSERT_TRUE(t, store_init(&store, &mapping) && store_init(&other_store, &other));
	struct pcache_page *page;
	ASSERT_EQ(t, pcache_get(&mapping, 3, PCACHE_READ, &page), 0);
	EXPECT_EQ(t, page->data[0], 4);
	pcache_put(page);
	ASSERT_EQ(t, pcache_get(&mapping, 3, PCACHE_READ, &page), 0);
	pcache_put(page);
	EXPECT_EQ(t, mapping.stats.misses, 1);
	EXPECT_EQ(t, mapping.stats.hits, 1);
	EXPECT_EQ(t, store.reads, 1);
	EXPECT_EQ(t, other.stats.misses + other.stats.hits, 0); /* charged to that mapping only */
	store_done(&store, &mapping);
	store_done(&other_store, &other);
}

static void failed_read_is_reported_not_kept(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&store, &mapping));
	store.failing = 5;
	struct pcache_page *page;
	EXPECT_EQ(t, pcache_get(&mapping, 5, PCACHE_READ, &page), -EIO);
	EXPECT_EQ(t, mapping.stats.pages, 0);
	store.failing = UINT64_MAX;
	ASSERT_EQ(t, pcache_get(&mapping, 5, PCACHE_READ, &page), 0); /* read afresh */
	EXPECT_EQ(t, page->data[0], 6);
	pcache_put(page);
	store_done(&store, &mapping);
}

/* Under a limit 16 pages above what is cached, this mapping keeps at most
 * 16.  The pages other users left (a mounted file system's, after the ext2
 * suites) are evicted first: eviction takes the coldest, and they are
 * colder than any of this mapping's, so while they last this mapping's
 * pages stay, well over 16 of them.  Only pages nobody can evict
 * (referenced) are left before the limit is set: those stay cached
 * throughout. */
static void pressure_evicts_and_writes_back(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&store, &mapping));
	unsigned old_limit = pcache_limit();
	struct pcache_stats before;
	pcache_shrink(0);
	pcache_get_stats(&before);
	pcache_set_limit((unsigned)before.pages + 16);
	for (unsigned i = 0; i < STORE_PAGES; i++) {
		struct pcache_page *page;
		ASSERT_EQ(t, pcache_get(&mapping, i, PCACHE_READ, &page), 0);
		if (i % 2 == 0) {
			memset(page->data, 0xa0 + i % 16, PAGE_SIZE);
			pcache_mark_dirty(page);
		}
		pcache_put(page);
	}
	EXPECT_TRUE(t, mapping.stats.pages <= 16);
	EXPECT_TRUE(t, mapping.stats.evictions >= STORE_PAGES - 16);
	EXPECT_TRUE(t, mapping.stats.writebacks > 0); /* dirty pages left only after a write */
	for (unsigned i = 0; i < STORE_PAGES; i++) {
		struct pcache_page *page;
		ASSERT_EQ(t, pcache_get(&mapping, i, PCACHE_READ, &page), 0);
		uint8_t want = i % 2 == 0 ? (uint8_t)(0xa0 + i % 16) : (uint8_t)(i + 1);
		EXPECT_EQ(t, page->data[PAGE_SIZE - 1], want);
		pcache_put(page);
	}
	pcache_set_limit(old_limit);
	store_done(&store, &mapping);
}

/* Dirty pages whose writes fail fill the cache: a miss tries at most one of
 * them, which then moves away from the cold end (still dirty); once the
 * writes work again, sync writes them all. */
static void failing_writeback_costs_a_miss_one_write(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&store, &mapping));
	unsigned old_limit = pcache_limit();
	pcache_shrink(0);
	pcache_set_limit(16);
	store.writes_fail = true;
	struct pcache_page *page;
	for (unsigned i = 0; i < 16; i++) {
		ASSERT_EQ(t, pcache_get(&mapping, i, PCACHE_ZERO, &page), 0);
		page->data[0] = (uint8_t)(0xc0 + i);
		pcache_mark_dirty(page);
		pcache_put(page);
	}
	for (unsigned i = 16; i < 20; i++) {
		unsigned attempts = store.write_attempts;
		ASSERT_EQ(t, pcache_get(&mapping, i, PCACHE_READ, &page), 0);
		pcache_put(page);
		EXPECT_TRUE(t, store.write_attempts - attempts <= 1);
	}
	EXPECT_EQ(t, mapping.stats.dirty, 16);
	store.writes_fail = false;
	EXPECT_EQ(t, pcache_sync(&mapping), 0);
	EXPECT_EQ(t, mapping.stats.dirty, 0);
	for (unsigned i = 0; i < 16; i++)
		EXPECT_EQ(t, store.bytes[i * PAGE_SIZE], 0xc0 + i);
	pcache_set_limit(old_limit);
	store_done(&store, &mapping);
}

static void sync_writes_dirty_pages_only(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&store, &mapping));
	struct pcache_page *page;
	for (unsigned i = 0; i < 4; i++) {
		ASSERT_EQ(t, pcache_get(&mapping, i, i < 2 ? PCACHE_ZERO : PCACHE_READ, &page), 0);
		if (i < 2) {
			EXPECT_EQ(t, page->data[7], 0); /* zeroed, never read */
			page->data[7] = 0x77;
			pcache_mark_dirty(page);
		}
		pcache_put(page);
	}
	EXPECT_EQ(t, store.reads, 2);
	EXPECT_EQ(t, mapping.stats.dirty, 2);
	EXPECT_EQ(t, pcache_sync(&mapping), 0);
	EXPECT_EQ(t, store.writes, 2);
	EXPECT_EQ(t, mapping.stats.dirty, 0);
	EXPECT_EQ(t, store.bytes[7], 0x77);
	EXPECT_EQ(t, store.bytes[PAGE_SIZE + 7], 0x77);
	EXPECT_EQ(t, pcache_sync(&mapping), 0);
	EXPECT_EQ(t, store.writes, 2); /* nothing dirty: nothing written */
	ASSERT_EQ(t, pcache_get(&mapping, 2, PCACHE_READ, &page), 0);
	page->data[0] = 0x55;
	pcache_mark_dirty(page);
	pcache_put(page);
	pcache_forget(&mapping, 2);
	EXPECT_EQ(t, mapping.stats.pages, 2);
	EXPECT_EQ(t, store.bytes[2 * PAGE_SIZE], 3); /* forgotten, not written */
	store_done(&store, &mapping);
}

/* Reading pages 0..15 in order: windows of 4, 8 and the last 4 (the end),
 * one read_pages call each; every other page is a hit. */
static void sequential_reads_are_read_ahead(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&store, &mapping));
	struct pcache_ahead ahead = {0};
	for (uint64_t index = 0; index < 16; index++) {
		struct pcache_page *page;
		ASSERT_EQ(t, pcache_get_ahead(&mapping, index, &ahead, index + 1, 16, &page), 0);
		EXPECT_EQ(t, page->data[PAGE_SIZE - 1], (uint8_t)(index + 1));
		pcache_put(page);
	}
	EXPECT_EQ(t, store.window_reads, 3);
	EXPECT_EQ(t, store.reads, 0);
	EXPECT_EQ(t, mapping.stats.misses, 3);
	EXPECT_EQ(t, mapping.stats.hits, 13);
	EXPECT_EQ(t, mapping.stats.read_ahead, 13);
	EXPECT_EQ(t, mapping.stats.pages, 16);
	store_done(&store, &mapping);
}

/* Pages visited with a stride of 5 (never where the last read stopped): no
 * window, one page read per miss. */
static void jumps_are_not_read_ahead(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&store, &mapping));
	struct pcache_ahead ahead = {0};
	for (uint64_t i = 1; i <= 12; i++) {
		uint64_t index = i * 5 % STORE_PAGES;
		struct pcache_page *page;
		ASSERT_EQ(
		    t, pcache_get_ahead(&mapping, index, &ahead, index + 1, STORE_PAGES, &page), 0);
		pcache_put(page);
	}
	EXPECT_EQ(t, store.window_reads, 0);
	EXPECT_EQ(t, store.reads, 12);
	EXPECT_EQ(t, mapping.stats.read_ahead, 0);
	EXPECT_EQ(t, mapping.stats.pages, 12);
	store_done(&store, &mapping);
}

/* A window that covers a failing page fails whole: the page asked for is
 * read alone and returned, and only the failing page's reader sees -EIO. */
static void failed_window_reads_the_page_alone(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&store, &mapping));
	store.failing = 2;
	struct pcache_ahead ahead = {0};
	for (uint64_t index = 0; index < 6; index++) {
		struct pcache_page *page;
		int error = pcache_get_ahead(&mapping, index, &ahead, index + 1, 6, &page);
		if (index == 2) {
			EXPECT_EQ(t, error, -EIO);
			continue;
		}
		if (EXPECT_EQ(t, error, 0)) {
			EXPECT_EQ(t, page->data[0], (uint8_t)(index + 1));
			pcache_put(page);
		}
	}
	EXPECT_EQ(t, mapping.stats.pages, 5);
	store_done(&store, &mapping);
}

/* pcache_get_cached finds only what is cached: no miss counted, nothing
 * read; a cached page is a hit, and it moves the reader's position on. */
static void get_cached_is_a_hit_or_nothing(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&store, &mapping));
	struct pcache_ahead ahead = {0};
	struct pcache_page *page;
	EXPECT_EQ(t, pcache_get_cached(&mapping, 7, &ahead, STORE_PAGES, &page), -ENOENT);
	EXPECT_EQ(t, mapping.stats.misses + mapping.stats.hits, 0);
	EXPECT_EQ(t, store.reads, 0);
	ASSERT_EQ(t, pcache_get(&mapping, 7, PCACHE_READ, &page), 0);
	pcache_put(page);
	ASSERT_EQ(t, pcache_get_cached(&mapping, 7, &ahead, STORE_PAGES, &page), 0);
	EXPECT_EQ(t, page->data[0], 8);
	pcache_put(page);
	EXPECT_EQ(t, mapping.stats.hits, 1);
	EXPECT_EQ(t, mapping.stats.misses, 1);
	EXPECT_EQ(t, ahead.next, 8);
	store_done(&store, &mapping);
}

/* A page forgotten (truncated away) while a reader still holds it: the next
 * lookup reads the page afresh instead of finding the old one, the holder's
 * bytes stay until its put, and that put frees it. */
static void forgotten_page_in_use_goes_at_its_last_put(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&store, &mapping));
	struct pcache_page *held, *page;
	ASSERT_EQ(t, pcache_get(&mapping, 4, PCACHE_READ, &held), 0);
	held->data[0] = 0x99; /* not written back: forget drops it */
	pcache_mark_dirty(held);
	pcache_forget(&mapping, 0);
	EXPECT_EQ(t, mapping.stats.pages, 1);
	EXPECT_EQ(t, pcache_get_cached(&mapping, 4, NULL, STORE_PAGES, &page), -ENOENT);
	ASSERT_EQ(t, pcache_get(&mapping, 4, PCACHE_READ, &page), 0);
	EXPECT_TRUE(t, page != held);
	EXPECT_EQ(t, page->data[0], 5); /* read afresh */
	EXPECT_EQ(t, held->data[0], 0x99);
	pcache_put(page);
	EXPECT_EQ(t, mapping.stats.pages, 2);
	EXPECT_EQ(t, pcache_sync(&mapping), 0);
	EXPECT_EQ(t, store.writes, 0);
	pcache_put(held);
	EXPECT_EQ(t, mapping.stats.pages, 1);
	EXPECT_EQ(t, mapping.stats.dirty, 0);
	store_done(&store, &mapping);
}

/* What a file system's reader does: a hit, or else a read with read-ahead. */
static int reader_get(struct pcache_mapping *mapping, uint64_t index, struct pcache_ahead *ahead,
		      uint64_t end, struct pcache_page **page)
{
	if (pcache_get_cached(mapping, index, ahead, end, page) == 0)
		return 0;
	return pcache_get_ahead(mapping, index, ahead, index + 1, end, page);
}

/* Pages 0..31 in order with asynchronous read-ahead: one miss (a window of
 * 4, read while the reader waits), then every page a hit: page 1 starts
 * [4, 12), page 4 starts [12, 28), page 12 starts [28, 32), page 28 nothing
 * (the end). */
static void sequential_hits_start_the_next_window(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, async_store_init(&store, &mapping));
	struct pcache_ahead ahead = {0};
	for (uint64_t index = 0; index < 32; index++) {
		struct pcache_page *page;
		ASSERT_EQ(t, reader_get(&mapping, index, &ahead, 32, &page), 0);
		EXPECT_EQ(t, page->data[PAGE_SIZE - 1], (uint8_t)(index + 1));
		pcache_put(page);
	}
	EXPECT_EQ(t, mapping.stats.misses, 1);
	EXPECT_EQ(t, mapping.stats.hits, 31);
	EXPECT_EQ(t, store.window_reads, 1);
	EXPECT_EQ(t, store.async_starts, 3);
	EXPECT_EQ(t, mapping.stats.async_windows, 3);
	EXPECT_EQ(t, mapping.stats.read_ahead, 31);
	EXPECT_EQ(t, mapping.stats.pages, 32);
	EXPECT_EQ(t, store.reads, 0);
	store_done(&store, &mapping);
}

static int end_kept_window(void *arg)
{
	struct store *store = arg;
	sched_sleep_ns(20 * 1000 * 1000);
	pcache_window_end(store->window, store->window_status);
	return 0;
}

/* Starts [4, 12) and keeps it in flight: reads pages 0..3 (page 1 starts
 * the window), then has a thread end the window 20 ms later. */
static struct thread *window_in_flight(struct ktest *t, struct store *store,
				       struct pcache_mapping *mapping, struct pcache_ahead *ahead)
{
	store->defer = true;
	for (uint64_t index = 0; index < 4; index++) {
		struct pcache_page *page;
		if (!EXPECT_EQ(t, reader_get(mapping, index, ahead, 32, &page), 0))
			return NULL;
		pcache_put(page);
	}
	if (!EXPECT_EQ(t, store->async_starts, 1))
		return NULL;
	return thread_create(end_kept_window, store, "pcache.test", SCHED_PRIORITY_NORMAL);
}

/* A reader that gets to a page of a window still being read waits for it
 * (a hit), and gets its bytes. */
static void reader_waits_for_a_window_in_flight(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, async_store_init(&store, &mapping));
	struct pcache_ahead ahead = {0};
	struct thread *ender = window_in_flight(t, &store, &mapping, &ahead);
	ASSERT_TRUE(t, ender != NULL);
	struct pcache_page *page;
	ASSERT_EQ(t, pcache_get_cached(&mapping, 6, &ahead, 32, &page), 0);
	EXPECT_EQ(t, page->data[0], 7);
	pcache_put(page);
	thread_join(ender, NULL);
	EXPECT_EQ(t, mapping.stats.misses, 1);
	store_done(&store, &mapping);
}

/* An asynchronous window that fails keeps nothing: its pages are read
 * again, alone, by the reader that wants one; nothing is left behind. */
static void failed_async_window_is_read_again(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, async_store_init(&store, &mapping));
	store.failing = 9;
	struct pcache_ahead ahead = {0};
	struct pcache_page *page;
	for (uint64_t index = 0; index < 2; index++) {
		ASSERT_EQ(t, reader_get(&mapping, index, &ahead, 32, &page), 0);
		pcache_put(page);
	}
	EXPECT_EQ(t, store.async_starts, 1); /* [4, 12) failed */
	store.failing = UINT64_MAX;
	EXPECT_EQ(t, pcache_get_cached(&mapping, 4, &ahead, 32, &page), -ENOENT);
	ASSERT_EQ(t, pcache_get(&mapping, 4, PCACHE_READ, &page), 0);
	EXPECT_EQ(t, page->data[0], 5);
	pcache_put(page);
	pcache_forget(&mapping, 0);
	EXPECT_EQ(t, mapping.stats.pages, 0); /* the failed pages went too */
	store_done(&store, &mapping);
}

/* Forgetting a mapping waits for its window in flight, so its owner may
 * free it afterwards. */
static void forget_waits_for_a_window_in_flight(struct ktest *t)
{
	struct store store;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, async_store_init(&store, &mapping));
	struct pcache_ahead ahead = {0};
	struct thread *ender = window_in_flight(t, &store, &mapping, &ahead);
	ASSERT_TRUE(t, ender != NULL);
	pcache_forget(&mapping, 0);
	EXPECT_EQ(t, mapping.stats.pages, 0);
	thread_join(ender, NULL);
	store_done(&store, &mapping);
}

/* A store whose writes wait at a gate: the eviction writing a page back
 * stays in the middle of it until the test opens the gate. */
struct gated_store {
	struct store store; /* first: the mapping's owner is either */
	bool writing;
	struct completion open;
};

static int gated_write(struct pcache_mapping *mapping, uint64_t index, const void *page)
{
	struct gated_store *gated = mapping->owner;
	__atomic_store_n(&gated->writing, true, __ATOMIC_RELEASE);
	completion_wait(&gated->open);
	return store_write(mapping, index, page);
}

static const struct pcache_ops gated_store_ops = {.read_page = store_read,
						  .write_page = gated_write};

struct forget_race {
	struct pcache_mapping *mapping;
	struct pcache_page *page; /* the dirty page being written back */
	struct gated_store *gated;
	bool forgotten;
};

static int evict_everything(void *arg)
{
	(void)arg;
	pcache_shrink(0);
	return 0;
}

static int read_page_4(void *arg)
{
	struct forget_race *race = arg;
	struct pcache_page *page;
	int error = pcache_get(race->mapping, 4, PCACHE_READ, &page);
	if (!error)
		pcache_put(page);
	return error;
}

static int forget_all(void *arg)
{
	struct forget_race *race = arg;
	pcache_forget(race->mapping, 0);
	__atomic_store_n(&race->forgotten, true, __ATOMIC_RELEASE);
	return 0;
}

static bool gate_reached(void *arg)
{
	return __atomic_load_n(&((struct gated_store *)arg)->writing, __ATOMIC_ACQUIRE);
}

static unsigned page_refs(const struct pcache_page *page)
{
	return __atomic_load_n(&page->refs, __ATOMIC_ACQUIRE) & ~PCACHE_GONE;
}

static bool reader_waits(void *arg)
{
	return page_refs(((struct forget_race *)arg)->page) >= 2; /* eviction's, reader's */
}

/* The forget returned, or waits for the page (its reference is the third). */
static bool forget_returned_or_waits(void *arg)
{
	struct forget_race *race = arg;
	return __atomic_load_n(&race->forgotten, __ATOMIC_ACQUIRE) || page_refs(race->page) >= 3;
}

#define RACE_GUARD_NS (10000 * NSEC_PER_MSEC) /* a hang guard only */

static void join_ok(struct ktest *t, struct thread *thread)
{
	int status = -1;
	if (EXPECT_TRUE(t, thread != NULL)) {
		EXPECT_EQ(t, thread_join(thread, &status), 0);
		EXPECT_EQ(t, status, 0);
	}
}

/* A truncation (forget) while another user's eviction writes the page back,
 * with a reader waiting for that page: forget waits for the write, and the
 * page does not stay cached, so no byte of it comes back past the new end
 * of the file.  (The reader may run before the forget, and gets the page,
 * or after, and reads it afresh: either is right.) */
static void forget_waits_for_a_page_being_written_back(struct ktest *t)
{
	static struct gated_store gated;
	struct pcache_mapping mapping;
	ASSERT_TRUE(t, store_init(&gated.store, &mapping));
	pcache_mapping_init(&mapping, &gated_store_ops, &gated);
	gated.writing = false;
	completion_init(&gated.open, "pcache.test.gate");
	struct forget_race race = {.mapping = &mapping, .gated = &gated};
	ASSERT_EQ(t, pcache_get(&mapping, 4, PCACHE_READ, &race.page), 0);
	race.page->data[0] = 0x77;
	pcache_mark_dirty(race.page);
	pcache_put(race.page);
	unsigned reads_before = gated.store.reads;
	struct thread *evictor =
	    thread_create(evict_everything, NULL, "evictor", SCHED_PRIORITY_NORMAL);
	EXPECT_TRUE(t, ktest_spin_until(gate_reached, &gated, RACE_GUARD_NS));
	struct thread *reader = thread_create(read_page_4, &race, "reader", SCHED_PRIORITY_NORMAL);
	EXPECT_TRUE(t, ktest_spin_until(reader_waits, &race, RACE_GUARD_NS));
	struct thread *forgetter =
	    thread_create(forget_all, &race, "forgetter", SCHED_PRIORITY_NORMAL);
	EXPECT_TRUE(t, ktest_spin_until(forget_returned_or_waits, &race, RACE_GUARD_NS));
	completion_signal(&gated.open);
	join_ok(t, evictor);
	join_ok(t, reader);
	join_ok(t, forgetter);
	/* Page 4 is not cached, or the reader, woken after the forget, read it
	 * afresh from the store: never the page that was being written. */
	struct pcache_page *page;
	if (pcache_get_cached(&mapping, 4, NULL, STORE_PAGES, &page) == 0) {
		EXPECT_EQ(t, gated.store.reads, reads_before + 1);
		pcache_put(page);
	}
	EXPECT_EQ(t, gated.store.bytes[4 * PAGE_SIZE], 0x77); /* written before it went */
	store_done(&gated.store, &mapping);
}

KTEST_SUITE(pcache, KTEST_CASE(second_read_is_a_hit), KTEST_CASE(failed_read_is_reported_not_kept),
	    KTEST_CASE(pressure_evicts_and_writes_back),
	    KTEST_CASE(failing_writeback_costs_a_miss_one_write),
	    KTEST_CASE(sync_writes_dirty_pages_only), KTEST_CASE(sequential_reads_are_read_ahead),
	    KTEST_CASE(jumps_are_not_read_ahead), KTEST_CASE(failed_window_reads_the_page_alone),
	    KTEST_CASE(get_cached_is_a_hit_or_nothing),
	    KTEST_CASE(forgotten_page_in_use_goes_at_its_last_put),
	    KTEST_CASE(sequential_hits_start_the_next_window),
	    KTEST_CASE(reader_waits_for_a_window_in_flight),
	    KTEST_CASE(failed_async_window_is_read_again),
	    KTEST_CASE(forget_waits_for_a_window_in_flight),
	    KTEST_CASE(forget_waits_for_a_page_being_written_back));
