/*
 * The page cache: 4 KiB pages of a file (or of a whole disk, for a file
 * system's metadata) kept in memory after they were read, shared by reads and
 * writes, written back when dirty on pcache_sync (fsync, sync, unmount) or
 * when evicted.  The owner of a mapping says how a page is read and written;
 * the cache keeps one global LRU list and evicts the least recently used
 * unreferenced pages once more than the limit are cached.
 *
 *     static const struct pcache_ops ops = {.read_page = .., .write_page = ..};
 *     pcache_mapping_init(&file->mapping, &ops, file);
 *     struct pcache_page *page;
 *     if (pcache_get(&file->mapping, index, PCACHE_READ, &page) == 0) {
 *             memcpy(buffer, page->data + offset, n); pcache_put(page); }
 *
 * Pages are physically contiguous (one frame): a block driver reads into them
 * directly.  A page is filled once, outside every lock; a thread that wants
 * a page being filled waits for it.
 */
#ifndef MODULES_PAGECACHE_PAGECACHE_H
#define MODULES_PAGECACHE_PAGECACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/sched.h"

struct pcache_mapping;

#define PCACHE_BUCKETS 64 /* per mapping: a hit looks at about pages / 64 others */

struct pcache_ops {
	/* Fills page (PAGE_SIZE bytes) with page index of the mapping.
	 * Returns 0 or a negative error (-EIO). */
	int (*read_page)(struct pcache_mapping *mapping, uint64_t index, void *page);
	/* Writes page index back.  Returns 0 or a negative error. */
	int (*write_page)(struct pcache_mapping *mapping, uint64_t index, const void *page);
};

struct pcache_stats {
	uint64_t hits, misses, evictions, writebacks, write_errors;
	uint64_t pages, dirty;
};

/* One file's (or disk's) cached pages. */
struct pcache_mapping {
	const struct pcache_ops *ops;
	void *owner;
	struct pcache_page *buckets[PCACHE_BUCKETS]; /* by index */
	struct pcache_stats stats; /* hits, misses, evictions, writebacks of this mapping */
};

struct pcache_page {
	struct pcache_mapping *mapping;
	uint64_t index;
	uint8_t *data; /* PAGE_SIZE bytes */
	/* private to the cache */
	int refs;
	bool dirty, busy, valid;
	bool dead; /* its read failed: found by nobody, freed by the last put */
	struct pcache_page *next_in_mapping;
	struct pcache_page *lru_prev, *lru_next;
};

enum pcache_fill {
	PCACHE_READ, /* read the page when it is not cached */
	PCACHE_ZERO, /* the caller overwrites it all (or it lies past the end): zero, no read */
};

void pcache_mapping_init(struct pcache_mapping *mapping, const struct pcache_ops *ops, void *owner);
/* Returns 0 and a referenced page index of mapping, or -ENOMEM, or
 * read_page's error (the page is then not kept). */
int pcache_get(struct pcache_mapping *mapping, uint64_t index, enum pcache_fill fill,
	       struct pcache_page **page);
/* Marks a referenced page as changed: it is written back before it leaves. */
void pcache_mark_dirty(struct pcache_page *page);
/* Drops a reference. */
void pcache_put(struct pcache_page *page);
/* Writes back every dirty page of mapping.  Returns 0 or the first error
 * (the pages that failed stay dirty). */
int pcache_sync(struct pcache_mapping *mapping);
/* Forgets pages from index first on, dirty or not (truncation, a freed
 * block); they must not be referenced. */
void pcache_forget(struct pcache_mapping *mapping, uint64_t first);
/* Forgets one page (a disk block that was freed). */
void pcache_forget_page(struct pcache_mapping *mapping, uint64_t index);
/* Evicts clean unreferenced pages until at most target pages stay cached,
 * writing dirty ones back first.  Returns how many pages left. */
unsigned pcache_shrink(unsigned target);
/* The cache-wide totals. */
void pcache_get_stats(struct pcache_stats *stats);
/* The most pages cached before eviction starts (default 2048: 8 MiB). */
void pcache_set_limit(unsigned pages);
unsigned pcache_limit(void);

#endif
