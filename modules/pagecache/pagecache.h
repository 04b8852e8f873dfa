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
 *
 * Read-ahead: pcache_get_ahead keeps, per open file, where the last access
 * ended and a window; a miss where the reader continues from there reads a
 * window of pages (4, doubling to 32) with one call of the owner's
 * read_pages, into consecutive frames, so the disk sees one larger request
 * instead of one per page.  A miss elsewhere reads only what the call asked.
 * An owner with start_read_pages also gets asynchronous read-ahead: the
 * first page of each window read ahead marks it, and a sequential reader's
 * hit on that page starts the next window (twice as large, up to 32 pages)
 * without waiting for it, so the disk reads the next window while the
 * reader copies this one.
 */
#ifndef MODULES_PAGECACHE_PAGECACHE_H
#define MODULES_PAGECACHE_PAGECACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "sched/sched.h"

struct pcache_mapping;
struct pcache_window;

#define PCACHE_BUCKETS 64 /* per mapping: a hit looks at about pages / 64 others */

struct pcache_ops {
	/* Fills page (PAGE_SIZE bytes) with page index of the mapping.
	 * Returns 0 or a negative error (-EIO); -EAGAIN means "not now" (the
	 * owner would wait for a lock whose holder may wait for this page,
	 * which is busy meanwhile): the caller of pcache_get gets it, and the
	 * page is not kept. */
	int (*read_page)(struct pcache_mapping *mapping, uint64_t index, void *page);
	/* Writes page index back.  Returns 0 or a negative error; -EAGAIN means
	 * "not now" (the owner cannot write it without waiting for a lock whose
	 * holder may wait for this page): it stays dirty, not counted as a
	 * write error. */
	int (*write_page)(struct pcache_mapping *mapping, uint64_t index, const void *page);
	/* Optional, for read-ahead: fills count pages from index first into
	 * buffer (count * PAGE_SIZE bytes, physically contiguous).  Returns 0 or
	 * a negative error; on error the cache reads the wanted page alone. */
	int (*read_pages)(struct pcache_mapping *mapping, uint64_t first, unsigned count,
			  void *buffer);
	/* Optional, for asynchronous read-ahead: starts reading count pages
	 * from first and returns without waiting.  It makes them with
	 * pcache_window_begin (which may give fewer, or none), starts the
	 * device on the frames it returns, and calls pcache_window_end once,
	 * from any context, when the read has ended.  Called with no lock of
	 * the cache held (from pcache_get_cached). */
	void (*start_read_pages)(struct pcache_mapping *mapping, uint64_t first, unsigned count);
};

#define PCACHE_AHEAD_FIRST 4  /* pages of the first read-ahead window */
#define PCACHE_AHEAD_MAX   32 /* the window doubles up to this (128 KiB) */

/* Read-ahead state of one open file (zero: nothing read yet). */
struct pcache_ahead {
	uint64_t next;       /* page after the last one accessed */
	unsigned window;     /* pages of the last read-ahead window; 0: none */
	uint64_t window_end; /* page after the last window read or started */
};

struct pcache_stats {
	uint64_t hits, misses, evictions, writebacks, write_errors;
	uint64_t pages, dirty;
	uint64_t read_ahead;    /* pages read in a window beyond the one asked for */
	uint64_t windows;       /* read-ahead windows read (read_pages calls that succeeded) */
	uint64_t async_windows; /* of those, started asynchronously (start_read_pages) */
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
	unsigned refs; /* atomic; PCACHE_GONE once forget took it out while referenced */
	bool dirty, busy, valid;
	bool dead;          /* its read failed: found by nobody, freed by the last put */
	bool trigger;       /* a sequential reader's hit here starts the next window */
	bool reading_ahead; /* busy in an asynchronous window (pcache_window_begin) */
	unsigned writers;   /* user pages mapping it writable (pcache_map_writable) */
	struct pcache_page *next_in_mapping;
	struct pcache_page *lru_prev, *lru_next;
};

#define PCACHE_GONE 0x80000000u

enum pcache_fill {
	PCACHE_READ, /* read the page when it is not cached */
	PCACHE_ZERO, /* the caller overwrites it all (or it lies past the end): zero, no read */
};

void pcache_mapping_init(struct pcache_mapping *mapping, const struct pcache_ops *ops, void *owner);
/* Returns 0 and a referenced page index of mapping, or -ENOMEM, or
 * read_page's error (the page is then not kept). */
int pcache_get(struct pcache_mapping *mapping, uint64_t index, enum pcache_fill fill,
	       struct pcache_page **page);
/* A hit only, for a reader that takes its own locks for a miss: the cached
 * page index of mapping, referenced, counted as a hit (and as the reader's
 * last access in ahead, which may be NULL), with one pass through the
 * cache's lock; a page being read is waited for.  When it marks the next
 * read-ahead window, that window (up to end, the file's pages) is started
 * before the call returns.  Returns 0, or -ENOENT when it is not cached
 * (nothing is counted: call pcache_get_ahead or pcache_get). */
int pcache_get_cached(struct pcache_mapping *mapping, uint64_t index, struct pcache_ahead *ahead,
		      uint64_t end, struct pcache_page **page);
/* For an owner's start_read_pages: makes up to *count busy pages from first
 * over consecutive frames, stopping before the first one cached already,
 * and charges them to the calling thread's activity as read ahead.  Returns
 * the window (*count pages at *buffer), or NULL when there is none to read
 * (the first page is cached, no memory). */
struct pcache_window *pcache_window_begin(struct pcache_mapping *mapping, uint64_t first,
					  unsigned *count, uint8_t **buffer);
/* Ends a window from pcache_window_begin: status 0, its pages are valid;
 * an error, they are dropped (the next reader of one reads it afresh).
 * Any context, an interrupt handler included; takes no lock. */
void pcache_window_end(struct pcache_window *window, int status);
/* pcache_get for a reader that walks a file: ahead is the open file's
 * state, want_end the page after the last one this call wants, end the
 * file's pages (nothing at or past it is read ahead).  Same results. */
int pcache_get_ahead(struct pcache_mapping *mapping, uint64_t index, struct pcache_ahead *ahead,
		     uint64_t want_end, uint64_t end, struct pcache_page **page);
/* Marks a referenced page as changed: it is written back before it leaves. */
void pcache_mark_dirty(struct pcache_page *page);
/* Drops a reference; takes no lock unless the page was forgotten while
 * referenced (pcache_forget) and this was its last reference. */
void pcache_put(struct pcache_page *page);
/* A referenced page is mapped writable into a process (a shared file
 * mapping): stores reach it without the cache seeing them, so it counts as
 * dirty at every pcache_sync while it stays so mapped. */
void pcache_map_writable(struct pcache_page *page);
/* Ends one pcache_map_writable; the page stays dirty (the last stores are
 * written back). */
void pcache_unmap_writable(struct pcache_page *page);
/* The cached page index of mapping, referenced, without reading it: 0, or
 * -ENOENT when it is not cached.  Not counted as a hit. */
int pcache_find(struct pcache_mapping *mapping, uint64_t index, struct pcache_page **page);
/* The page of mapping at index whose data is data, referenced, even one a
 * forget took out while it was held (a shared mapping's, after a truncate):
 * 0 and *page, or -ENOENT. */
int pcache_find_frame(struct pcache_mapping *mapping, uint64_t index, const void *data,
		      struct pcache_page **page);
/* Writes back every dirty page of mapping, and every page mapped writable
 * into a process.  Returns 0 or the first error (the pages that failed stay
 * dirty). */
int pcache_sync(struct pcache_mapping *mapping);
/* Forgets pages from index first on, dirty or not (truncation, a freed
 * block); pages being read or written back are waited for first (so the
 * owner's write_page must never wait for a lock the caller holds).  A
 * referenced page
 * is no longer found (the next lookup reads afresh), nor written back; its
 * last pcache_put frees it. */
void pcache_forget(struct pcache_mapping *mapping, uint64_t first);
/* Forgets one page (a disk block that was freed), as pcache_forget. */
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
