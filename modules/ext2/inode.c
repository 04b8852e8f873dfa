/*
 * ext2 inodes in memory and the contents of files and directories: the block
 * map (12 direct pointers, one single and one double indirect block; triple
 * indirection is refused with -EFBIG), reads and writes through each inode's
 * page-cache mapping, truncation, and write-back.
 *
 * Lifetime: every in-memory inode is on its file system's live list, which
 * holds one VFS reference, so a file written and closed keeps its dirty pages
 * cached until sync.  Sync writes them back and drops the inodes nobody else
 * holds; an inode whose last name went is freed on disk when dropped.  An
 * inode whose pages could not be written is not dropped: its pages stay
 * dirty, the next sync tries them again and reports the error.
 */
#include "ext2/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "uaccess/uaccess.h"

uint64_t ext2_size(const struct ext2_inode *inode)
{
	return inode->size;
}

void ext2_set_size(struct ext2_node *node, uint64_t size)
{
	node->disk.size = (uint32_t)size;
	node->vnode.size = size;
}

bool ext2_is_fast_link(const struct ext2_node *node)
{
	uint32_t xattr_sectors = node->disk.file_acl ? EXT2_SECTORS_PER_BLOCK : 0;
	return (node->disk.mode & VFS_S_IFMT) == EXT2_S_IFLNK && node->disk.blocks == xattr_sectors;
}

static bool is_dir(const struct ext2_node *node)
{
	return VFS_IS_DIR(node->vnode.mode);
}

/* ---- The block map -------------------------------------------------------- */

#ifdef KERNEL_TESTS
unsigned ext2_test_failing_block_zeroings;
#endif

/* Zeroes a new indirect block in its cached page and on the disk (ext2_lock
 * held); the page is left clean, the disk holding the same zeros. */
static int zero_block(struct ext2_fs *fs, uint32_t block)
{
	struct pcache_page *page;
#ifdef KERNEL_TESTS
	if (ext2_test_failing_block_zeroings) {
		ext2_test_failing_block_zeroings--;
		return -ENOMEM;
	}
#endif
	int error = ext2_meta_get(fs, block, PCACHE_ZERO, &page);
	if (error)
		return error;
	memset(page->data, 0, EXT2_BLOCK_SIZE);
	error = block_rw(fs->disk, BLOCK_WRITE, (uint64_t)block * EXT2_SECTORS_PER_BLOCK,
			 EXT2_SECTORS_PER_BLOCK, page->data);
	pcache_put(page);
	return error;
}

/* A block for the map at a pointer that is 0: a data block (last), or an
 * indirect block zeroed on the disk before anything names it, so that a
 * failure in between (no frame, a write error) or a crash before the next
 * sync never leaves a pointer to a block of stale pointers; such a block
 * is freed again.  The caller links it and counts it in the inode. */
static int alloc_map_block(struct ext2_fs *fs, bool last, uint32_t *block)
{
	int error = ext2_alloc_block(fs, block);
	if (error || last)
		return error;
	error = zero_block(fs, *block);
	if (error) {
		ext2_free_block(fs, *block);
		*block = 0;
	}
	return error;
}

/* Makes sure *pointer names a block when create, allocating one (a data
 * block when last, else a zeroed indirect block) and linking it; *fresh
 * says it was new.  A pointer that is set is left as it is. */
static int ensure_block(struct ext2_node *node, uint32_t *pointer, bool create, bool last,
			bool *fresh)
{
	if (*pointer || !create)
		return 0;
	uint32_t block;
	int error = alloc_map_block(node->fs, last, &block);
	if (error)
		return error;
	*pointer = block;
	node->disk.blocks += EXT2_SECTORS_PER_BLOCK;
	*fresh = true;
	return 0;
}

/* Pointer slot index of the indirect block at indirect; allocates the
 * block it names when create and it is 0 (as ensure_block).  *fresh says
 * the block is new. */
static int indirect_slot(struct ext2_node *node, uint32_t indirect, uint32_t index, bool create,
			 bool last, uint32_t *out, bool *fresh)
{
	struct ext2_fs *fs = node->fs;
	struct pcache_page *page;
	if (!ext2_data_block(fs, indirect))
		return -EIO; /* a corrupt pointer: never read or written as pointers */
	int error = ext2_meta_get(fs, indirect, PCACHE_READ, &page);
	if (error)
		return error;
	uint32_t *slots = (uint32_t *)page->data;
	if (slots[index] && !ext2_data_block(fs, slots[index]))
		error = -EIO;
	else
		error = ensure_block(node, &slots[index], create, last, fresh);
	if (!error && *fresh)
		pcache_mark_dirty(page);
	*out = error ? 0 : slots[index];
	pcache_put(page);
	return error;
}

/* Follows (or creates) one level of indirection: *block is the indirect
 * block, index the slot; the result replaces *block.  *fresh says a data
 * block (last) was new. */
static int step(struct ext2_node *node, uint32_t *block, uint32_t index, bool create, bool last,
		bool *fresh)
{
	bool new_block = false;
	uint32_t next = 0;
	int error = indirect_slot(node, *block, index, create, last, &next, &new_block);
	if (new_block && last)
		*fresh = true;
	*block = next;
	return error;
}

int ext2_bmap(struct ext2_node *node, uint64_t file_block, bool create, uint32_t *block,
	      bool *fresh)
{
	uint32_t *direct = node->disk.block;
	bool made = false;
	*fresh = false;
	*block = 0;
	if (file_block < EXT2_NDIR_BLOCKS) {
		int error = ensure_block(node, &direct[file_block], create, true, fresh);
		if (!error && direct[file_block] && !ext2_data_block(node->fs, direct[file_block]))
			return -EIO; /* a corrupt pointer: its block is never read or written */
		*block = error ? 0 : direct[file_block];
		return error;
	}
	file_block -= EXT2_NDIR_BLOCKS;
	uint32_t root_index = file_block < EXT2_PTRS ? EXT2_IND_BLOCK : EXT2_DIND_BLOCK;
	if (root_index == EXT2_DIND_BLOCK) {
		file_block -= EXT2_PTRS;
		if (file_block >= (uint64_t)EXT2_PTRS * EXT2_PTRS)
			return -EFBIG;
	}
	int error = ensure_block(node, &direct[root_index], create, false, &made);
	uint32_t current = direct[root_index];
	if (error || current == 0)
		return error;
	if (root_index == EXT2_DIND_BLOCK) {
		error =
		    step(node, &current, (uint32_t)(file_block / EXT2_PTRS), create, false, fresh);
		if (error || current == 0)
			return error;
		file_block %= EXT2_PTRS;
	}
	error = step(node, &current, (uint32_t)file_block, create, true, fresh);
	*block = current;
	return error;
}

/* ---- Pages of a file -------------------------------------------------------- */

/* The block behind page index of node, or 0 for a hole, for a page being
 * filled (busy).  Fills normally come from ext2's own calls, under
 * ext2_lock.  One that comes without it (another page-cache user) only
 * tries the lock and answers -EAGAIN when it is taken: the order is
 * ext2_lock, then a busy page, and the holder may be waiting for this very
 * page (pcache_forget in a truncation, pcache_sync); the page is not kept,
 * and the next reader fills it again. */
static int file_block_of(struct ext2_node *node, uint64_t index, uint32_t *block)
{
	bool locked_here = !mutex_held_by_me(&ext2_lock), fresh;
	if (locked_here && !mutex_trylock(&ext2_lock))
		return -EAGAIN;
	int error = ext2_bmap(node, index, false, block, &fresh);
	if (locked_here)
		mutex_unlock(&ext2_lock);
	return error;
}

#ifdef KERNEL_TESTS
void (*ext2_test_page_fill_hook)(struct ext2_node *node, uint64_t index);
#endif

static int file_read_page(struct pcache_mapping *mapping, uint64_t index, void *page)
{
	struct ext2_node *node = mapping->owner;
	uint32_t block;
#ifdef KERNEL_TESTS
	if (ext2_test_page_fill_hook)
		ext2_test_page_fill_hook(node, index);
#endif
	int error = file_block_of(node, index, &block);
	if (error)
		return error;
	if (block == 0) {
		memset(page, 0, PAGE_SIZE); /* a hole */
		return 0;
	}
	if (block >= node->fs->blocks_count)
		return -EIO;
	return block_rw(node->fs->disk, BLOCK_READ, (uint64_t)block * EXT2_SECTORS_PER_BLOCK,
			EXT2_SECTORS_PER_BLOCK, page);
}

/* Writes page index of node to its block (ext2_lock held). */
static int write_page_locked(struct ext2_node *node, uint64_t index, const void *page)
{
	uint32_t block;
	bool fresh;
	int error = ext2_bmap(node, index, false, &block, &fresh);
	if (error)
		return error;
	if (block == 0 || block >= node->fs->blocks_count)
		return 0; /* truncated away */
	return block_rw(node->fs->disk, BLOCK_WRITE, (uint64_t)block * EXT2_SECTORS_PER_BLOCK,
			EXT2_SECTORS_PER_BLOCK, (void *)page);
}

/* The block is looked up and written under ext2_lock, so no truncation
 * frees it (and no allocation hands it to another file) in between.  An
 * eviction by another page-cache user does not wait for the lock: whoever
 * holds it may be waiting for this very page (busy while written), and a
 * truncation waits for it in pcache_forget; it answers -EAGAIN, and the
 * page stays dirty. */
static int file_write_page(struct pcache_mapping *mapping, uint64_t index, const void *page)
{
	bool locked_here = !mutex_held_by_me(&ext2_lock);
	if (locked_here && !mutex_trylock(&ext2_lock))
		return -EAGAIN;
	int error = write_page_locked(mapping->owner, index, page);
	if (locked_here)
		mutex_unlock(&ext2_lock);
	return error;
}

/* Read-ahead: the window's blocks are looked up first; each run of blocks
 * that follow each other on the disk (up to the device's largest request) is
 * one request, all submitted before any is waited for; holes are zeroed. */
struct window_read {
	struct completion done;
	int pending; /* requests not ended yet, plus one until all are submitted */
	int status;
};

static void window_request_done(struct block_request *request)
{
	struct window_read *window = request->private;
	if (request->status)
		__atomic_store_n(&window->status, request->status, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&window->pending, 1, __ATOMIC_ACQ_REL) == 0)
		completion_signal(&window->done);
}

/* The most pages from first (at most count) whose blocks follow block on the
 * disk; holes count as a run of their own. */
static unsigned run_length(const uint32_t *blocks, unsigned first, unsigned count,
			   unsigned max_pages)
{
	unsigned length = 1;
	while (first + length < count && length < max_pages &&
	       (blocks[first] == 0 ? blocks[first + length] == 0
				   : blocks[first + length] == blocks[first] + length))
		length++;
	return length;
}

/* Submits a read of pages blocks from block into buffer; pending counts
 * the requests that done has yet to see. */
static int submit_run(struct ext2_node *node, struct block_request *request, uint32_t block,
		      unsigned pages, uint8_t *buffer, void (*done)(struct block_request *),
		      void *private, int *pending)
{
	*request = (struct block_request){.device = node->fs->disk,
					  .op = BLOCK_READ,
					  .sector = (uint64_t)block * EXT2_SECTORS_PER_BLOCK,
					  .count = pages * EXT2_SECTORS_PER_BLOCK,
					  .buffer = buffer,
					  .done = done,
					  .private = private};
	__atomic_add_fetch(pending, 1, __ATOMIC_RELAXED);
	int error = block_submit(request);
	if (error)
		__atomic_sub_fetch(pending, 1, __ATOMIC_RELAXED);
	return error;
}

/* Looks up the blocks of count pages from first (as file_block_of: without
 * ext2_lock, -EAGAIN when another holds it); a block past the disk is -EIO. */
static int window_blocks(struct ext2_node *node, uint64_t first, unsigned count, uint32_t *blocks)
{
	int error = 0;
	for (unsigned i = 0; i < count && !error; i++) {
		error = file_block_of(node, first + i, &blocks[i]);
		if (!error && blocks[i] >= node->fs->blocks_count)
			error = -EIO;
	}
	return error;
}

/* Submits the runs of count pages whose blocks are blocks into buffer,
 * zeroing holes; stops at the first refused request.  Returns 0 or its
 * error. */
static int submit_runs(struct ext2_node *node, const uint32_t *blocks, unsigned count,
		       uint8_t *buffer, struct block_request *requests,
		       void (*done)(struct block_request *), void *private, int *pending)
{
	unsigned max_pages = node->fs->disk->max_sectors / EXT2_SECTORS_PER_BLOCK;
	unsigned submitted = 0;
	int error = 0;
	for (unsigned i = 0; i < count && !error; i += run_length(blocks, i, count, max_pages)) {
		unsigned pages = run_length(blocks, i, count, max_pages);
		uint8_t *at = buffer + (size_t)i * PAGE_SIZE;
		if (blocks[i] == 0)
			memset(at, 0, (size_t)pages * PAGE_SIZE);
		else
			error = submit_run(node, &requests[submitted++], blocks[i], pages, at, done,
					   private, pending);
	}
	return error;
}

static int file_read_pages(struct pcache_mapping *mapping, uint64_t first, unsigned count,
			   void *buffer)
{
	struct ext2_node *node = mapping->owner;
	uint32_t blocks[PCACHE_AHEAD_MAX];
	struct block_request *requests = kmalloc(count * sizeof *requests);
	if (count > PCACHE_AHEAD_MAX || !requests) {
		kfree(requests);
		return -ENOMEM;
	}
	int error = window_blocks(node, first, count, blocks);
	struct window_read window = {.pending = 1};
	completion_init(&window.done, "ext2.readahead");
	if (!error)
		error = submit_runs(node, blocks, count, buffer, requests, window_request_done,
				    &window, &window.pending);
	if (__atomic_sub_fetch(&window.pending, 1, __ATOMIC_ACQ_REL) != 0)
		completion_wait(&window.done);
	kfree(requests);
	return error ? error : window.status;
}

/* Asynchronous read-ahead: the window's blocks are looked up and its pages
 * made busy under ext2_lock, so that no truncation comes between (one that
 * comes later waits in pcache_forget for the pages); the runs are submitted
 * after, and the last request to end, in the interrupt handler, hands the
 * pages to the cache.  Nobody waits here: a failure just leaves the pages
 * to be read again when a reader wants them. */
struct async_read {
	struct pcache_window *window;
	int pending; /* requests not ended yet, plus one until all are submitted */
	int status;
	struct block_request requests[PCACHE_AHEAD_MAX];
};

static void async_read_end(struct async_read *read)
{
	pcache_window_end(read->window, __atomic_load_n(&read->status, __ATOMIC_RELAXED));
	kfree(read);
}

static void async_request_done(struct block_request *request)
{
	struct async_read *read = request->private;
	if (request->status)
		__atomic_store_n(&read->status, request->status, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&read->pending, 1, __ATOMIC_ACQ_REL) == 0)
		async_read_end(read);
}

static void file_start_read_pages(struct pcache_mapping *mapping, uint64_t first, unsigned count)
{
	struct ext2_node *node = mapping->owner;
	uint32_t blocks[PCACHE_AHEAD_MAX];
	uint8_t *buffer = NULL;
	struct async_read *read = kzalloc(sizeof *read);
	if (!read || count > PCACHE_AHEAD_MAX) {
		kfree(read);
		return;
	}
	mutex_lock(&ext2_lock);
	if (window_blocks(node, first, count, blocks) == 0)
		read->window = pcache_window_begin(mapping, first, &count, &buffer);
	mutex_unlock(&ext2_lock);
	if (!read->window) {
		kfree(read);
		return;
	}
	read->pending = 1;
	int error = submit_runs(node, blocks, count, buffer, read->requests, async_request_done,
				read, &read->pending);
	if (error)
		__atomic_store_n(&read->status, error, __ATOMIC_RELAXED);
	if (__atomic_sub_fetch(&read->pending, 1, __ATOMIC_ACQ_REL) == 0)
		async_read_end(read);
}

static const struct pcache_ops ext2_file_pages = {.read_page = file_read_page,
						  .write_page = file_write_page,
						  .read_pages = file_read_pages,
						  .start_read_pages = file_start_read_pages};

int64_t ext2_read_locked(struct ext2_node *node, void *buffer, size_t length, uint64_t offset)
{
	uint64_t size = node->vnode.size;
	if (offset >= size)
		return 0;
	if (length > size - offset)
		length = size - offset;
	size_t done = 0;
	while (done < length) {
		uint64_t position = offset + done;
		size_t in_page = position % PAGE_SIZE;
		size_t chunk = PAGE_SIZE - in_page;
		if (chunk > length - done)
			chunk = length - done;
		struct pcache_page *page;
		uint64_t index = position / PAGE_SIZE;
		int error = pcache_get(&node->mapping, index, PCACHE_READ, &page);
		if (error)
			return done ? (int64_t)done : error;
		memcpy((uint8_t *)buffer + done, page->data + in_page, chunk);
		pcache_put(page);
		done += chunk;
	}
	return (int64_t)done;
}

/* ---- A page about to be written ------------------------------------------ */

#ifdef KERNEL_TESTS
unsigned ext2_test_failing_page_fetches;
#endif

static int fetch_page(struct ext2_node *node, uint64_t index, enum pcache_fill fill,
		      struct pcache_page **page)
{
#ifdef KERNEL_TESTS
	if (ext2_test_failing_page_fetches) {
		ext2_test_failing_page_fetches--;
		return -ENOMEM;
	}
#endif
	return pcache_get(&node->mapping, index, fill, page);
}

/* The slot that names page index's block: in the inode, or in an indirect
 * block whose page is *holder (referenced; NULL for the inode's). */
static int block_slot(struct ext2_node *node, uint64_t index, struct pcache_page **holder,
		      uint32_t **slot)
{
	uint32_t *direct = node->disk.block;
	*holder = NULL;
	if (index < EXT2_NDIR_BLOCKS) {
		*slot = &direct[index];
		return 0;
	}
	index -= EXT2_NDIR_BLOCKS;
	uint32_t indirect = direct[EXT2_IND_BLOCK];
	if (index >= EXT2_PTRS) {
		index -= EXT2_PTRS;
		int error = ext2_meta_get(node->fs, direct[EXT2_DIND_BLOCK], PCACHE_READ, holder);
		if (error)
			return error;
		indirect = ((uint32_t *)(*holder)->data)[index / EXT2_PTRS];
		pcache_put(*holder);
		index %= EXT2_PTRS;
	}
	int error = ext2_meta_get(node->fs, indirect, PCACHE_READ, holder);
	if (!error)
		*slot = (uint32_t *)(*holder)->data + index;
	return error;
}

/* Takes block, just allocated for page index, out of the file again and
 * frees it.  Indirect blocks allocated on the way stay (zeroed: they name
 * nothing).  Returns 0, or the error that kept the block in the file. */
static int release_fresh_block(struct ext2_node *node, uint64_t index, uint32_t block)
{
	struct pcache_page *holder;
	uint32_t *slot;
	int error = block_slot(node, index, &holder, &slot);
	if (error)
		return error;
	if (*slot == block) {
		*slot = 0;
		node->disk.blocks -= EXT2_SECTORS_PER_BLOCK;
		ext2_free_block(node->fs, block);
		if (holder)
			pcache_mark_dirty(holder);
	}
	if (holder)
		pcache_put(holder);
	return ext2_write_inode(node);
}

int ext2_page_for_write(struct ext2_node *node, uint64_t index, uint32_t block, bool fresh,
			enum pcache_fill fill, struct pcache_page **page)
{
	int error = fetch_page(node, index, fill, page);
	if (error && fresh)
		release_fresh_block(node, index, block);
	return error;
}

/* The last page of a file may hold, past its end, what a shared mapping
 * stored there (the mapping covers the whole page): before the file grows
 * over those bytes they are zeroed, in the cached page, made dirty. */
static int zero_tail(struct ext2_node *node)
{
	uint64_t size = node->vnode.size;
	uint32_t block;
	bool fresh;
	if (size % PAGE_SIZE == 0)
		return 0;
	int error = ext2_bmap(node, size / PAGE_SIZE, false, &block, &fresh);
	if (error || block == 0)
		return error; /* a hole reads as zeros */
	struct pcache_page *page;
	error = pcache_get(&node->mapping, size / PAGE_SIZE, PCACHE_READ, &page);
	if (error)
		return error;
	memset(page->data + size % PAGE_SIZE, 0, PAGE_SIZE - size % PAGE_SIZE);
	pcache_mark_dirty(page);
	pcache_put(page);
	return 0;
}

int64_t ext2_write_locked(struct ext2_node *node, const void *buffer, size_t length,
			  uint64_t offset)
{
	if (offset >= EXT2_FILE_MAX)
		return -EFBIG;
	if (length > EXT2_FILE_MAX - offset)
		length = EXT2_FILE_MAX - offset;
	size_t done = 0;
	int error = length && offset + length > node->vnode.size ? zero_tail(node) : 0;
	if (error)
		return error;
	while (done < length) {
		uint64_t position = offset + done;
		size_t in_page = position % PAGE_SIZE;
		size_t chunk = PAGE_SIZE - in_page;
		if (chunk > length - done)
			chunk = length - done;
		uint32_t block;
		bool fresh;
		error = ext2_bmap(node, position / PAGE_SIZE, true, &block, &fresh);
		if (error)
			break;
		bool whole = in_page == 0 && chunk == PAGE_SIZE;
		struct pcache_page *page;
		error = ext2_page_for_write(node, position / PAGE_SIZE, block, fresh,
					    fresh || whole ? PCACHE_ZERO : PCACHE_READ, &page);
		if (error)
			break;
		memcpy(page->data + in_page, (const uint8_t *)buffer + done, chunk);
		pcache_mark_dirty(page);
		pcache_put(page);
		done += chunk;
		if (offset + done > node->vnode.size)
			ext2_set_size(node, offset + done);
	}
	node->disk.mtime = node->disk.ctime = ext2_now();
	ext2_write_inode(node);
	return done ? (int64_t)done : error;
}

/* ---- Truncation ------------------------------------------------------------- */

/* Frees the blocks an indirect block at level (1: pointers to data) names
 * from slot first on; frees the block itself when first is 0.  Returns
 * whether it was freed. */
static bool free_tree(struct ext2_node *node, uint32_t block, unsigned level, uint64_t first)
{
	struct ext2_fs *fs = node->fs;
	uint64_t per_slot = level == 1 ? 1 : EXT2_PTRS;
	struct pcache_page *page;
	if (!ext2_data_block(fs, block) || ext2_meta_get(fs, block, PCACHE_READ, &page))
		return false;
	uint32_t *slots = (uint32_t *)page->data;
	for (uint32_t i = 0; i < EXT2_PTRS; i++) {
		uint64_t slot_first = (uint64_t)i * per_slot;
		if (!slots[i] || slot_first + per_slot <= first)
			continue;
		uint64_t inner_first = first > slot_first ? first - slot_first : 0;
		bool freed = true;
		if (level == 1)
			ext2_free_block(fs, slots[i]);
		else
			freed = free_tree(node, slots[i], level - 1, inner_first);
		if (freed) {
			if (level == 1 || inner_first == 0)
				node->disk.blocks -= EXT2_SECTORS_PER_BLOCK;
			slots[i] = 0;
			pcache_mark_dirty(page);
		}
	}
	pcache_put(page);
	if (first == 0)
		ext2_free_block(fs, block);
	return first == 0;
}

static void free_blocks_from(struct ext2_node *node, uint64_t first)
{
	uint32_t *direct = node->disk.block;
	for (uint64_t i = first; i < EXT2_NDIR_BLOCKS; i++) {
		if (direct[i]) {
			ext2_free_block(node->fs, direct[i]);
			node->disk.blocks -= EXT2_SECTORS_PER_BLOCK;
			direct[i] = 0;
		}
	}
	uint64_t ind_first = first > EXT2_NDIR_BLOCKS ? first - EXT2_NDIR_BLOCKS : 0;
	if (direct[EXT2_IND_BLOCK] && free_tree(node, direct[EXT2_IND_BLOCK], 1, ind_first)) {
		node->disk.blocks -= EXT2_SECTORS_PER_BLOCK;
		direct[EXT2_IND_BLOCK] = 0;
	}
	uint64_t dind_start = EXT2_NDIR_BLOCKS + EXT2_PTRS;
	uint64_t dind_first = first > dind_start ? first - dind_start : 0;
	if (direct[EXT2_DIND_BLOCK] && free_tree(node, direct[EXT2_DIND_BLOCK], 2, dind_first)) {
		node->disk.blocks -= EXT2_SECTORS_PER_BLOCK;
		direct[EXT2_DIND_BLOCK] = 0;
	}
}

int ext2_truncate_locked(struct ext2_node *node, uint64_t size)
{
	if (size > EXT2_FILE_MAX)
		return -EFBIG;
	uint64_t old = node->vnode.size;
	if (size > old) {
		int error = zero_tail(node);
		if (error)
			return error;
	}
	if (size < old) {
		uint64_t keep = (size + PAGE_SIZE - 1) / PAGE_SIZE;
		pcache_forget(&node->mapping, keep);
		free_blocks_from(node, keep);
		if (size % PAGE_SIZE) { /* the rest of the last page reads as zeros later */
			struct pcache_page *page;
			if (pcache_get(&node->mapping, size / PAGE_SIZE, PCACHE_READ, &page) == 0) {
				memset(page->data + size % PAGE_SIZE, 0,
				       PAGE_SIZE - size % PAGE_SIZE);
				pcache_mark_dirty(page);
				pcache_put(page);
			}
		}
	}
	ext2_set_size(node, size);
	node->disk.mtime = node->disk.ctime = ext2_now();
	return ext2_write_inode(node);
}

/* ---- In-memory inodes ------------------------------------------------------- */

/* Linux's osd2: uid_high at bytes 4-5, gid_high at 6-7. */
void ext2_set_owner(struct ext2_inode *inode, uint32_t uid, uint32_t gid)
{
	inode->uid = (uint16_t)uid;
	inode->gid = (uint16_t)gid;
	uint16_t high[2] = {(uint16_t)(uid >> 16), (uint16_t)(gid >> 16)};
	memcpy(inode->osd2 + 4, high, sizeof high);
}

uint32_t ext2_uid(const struct ext2_inode *inode)
{
	uint16_t high;
	memcpy(&high, inode->osd2 + 4, sizeof high);
	return inode->uid | (uint32_t)high << 16;
}

uint32_t ext2_gid(const struct ext2_inode *inode)
{
	uint16_t high;
	memcpy(&high, inode->osd2 + 6, sizeof high);
	return inode->gid | (uint32_t)high << 16;
}

int ext2_setattr(struct vfs_node *vnode)
{
	struct ext2_node *node = vnode->private;
	mutex_lock(&ext2_lock);
	node->disk.mode = (uint16_t)vnode->mode;
	ext2_set_owner(&node->disk, vnode->uid, vnode->gid);
	node->disk.ctime = ext2_now();
	int error = ext2_write_inode(node);
	mutex_unlock(&ext2_lock);
	if (!error)
		ext2_queue_writeback(node->fs);
	return error;
}

static int64_t ext2_link_readlink(struct vfs_node *vnode, char *buffer, size_t size)
{
	mutex_lock(&ext2_lock);
	int64_t n = ext2_readlink_locked(vnode->private, buffer, size);
	mutex_unlock(&ext2_lock);
	return n;
}

static uint32_t mode_of(const struct ext2_inode *inode)
{
	return inode->mode; /* ext2's type bits are Linux's */
}

int ext2_iget(struct ext2_fs *fs, uint32_t ino, struct ext2_node **out)
{
	for (struct ext2_node *node = fs->live; node; node = node->next_live) {
		if (node->ino == ino) {
			vfs_node_get(&node->vnode);
			*out = node;
			return 0;
		}
	}
	struct ext2_node *node = kzalloc(sizeof(*node));
	if (!node)
		return -ENOMEM;
	int error = ext2_read_inode(fs, ino, &node->disk);
	if (!error && (node->disk.links_count == 0 || node->disk.mode == 0))
		error = -EIO; /* a directory entry naming a free inode */
	if (!error && VFS_IS_DIR(node->disk.mode) && node->disk.size % EXT2_BLOCK_SIZE)
		error = -EIO; /* entries would be added at an offset inside a block */
	if (error) {
		kfree(node);
		return error;
	}
	node->fs = fs;
	node->ino = ino;
	ext2_node_init_ops(node);
	ext2_node_attach(node);
	*out = node;
	return 0;
}

void ext2_node_attach(struct ext2_node *node)
{
	pcache_mapping_init(&node->mapping, &ext2_file_pages, node);
	node->next_live = node->fs->live;
	node->fs->live = node;
	vfs_node_get(&node->vnode); /* one for the live list, one for the caller */
}

void ext2_node_init_ops(struct ext2_node *node)
{
	uint32_t mode = mode_of(&node->disk);
	const struct vfs_node_ops *ops = VFS_IS_DIR(mode) ? &ext2_dir_ops
					 : (mode & VFS_S_IFMT) == EXT2_S_IFLNK
					     ? &ext2_link_ops
					     : &ext2_file_node_ops;
	vfs_node_init(&node->vnode, mode, ops, VFS_IS_REG(mode) ? &ext2_file_ops : NULL, node);
	node->vnode.inode = node->ino;
	node->vnode.links = node->disk.links_count;
	node->vnode.uid = ext2_uid(&node->disk);
	node->vnode.gid = ext2_gid(&node->disk);
	node->vnode.size = ext2_size(&node->disk);
}

int ext2_sync_node_locked(struct ext2_node *node)
{
	if (node->unlinked)
		return 0;
	int error = pcache_sync(&node->mapping);
	int inode_error = ext2_write_inode(node);
	return error ? error : inode_error;
}

/* The inode's extended-attribute block loses its user: freed when it was the
 * last (the header's reference count), left alone when it is not one. */
static void release_xattr_block(struct ext2_node *node)
{
	uint32_t block = node->disk.file_acl;
	struct pcache_page *page;
	if (!ext2_data_block(node->fs, block) || ext2_meta_get(node->fs, block, PCACHE_READ, &page))
		return;
	uint32_t *header = (uint32_t *)page->data; /* magic, reference count */
	bool ours = header[0] == EXT2_XATTR_MAGIC, last = ours && header[1] <= 1;
	if (ours && !last) {
		header[1]--;
		pcache_mark_dirty(page);
	}
	pcache_put(page);
	if (last)
		ext2_free_block(node->fs, block);
	if (ours) {
		node->disk.file_acl = 0;
		node->disk.blocks -= EXT2_SECTORS_PER_BLOCK;
	}
}

/* Frees the inode's blocks and the inode itself (its last name is gone).  A
 * fast link's block pointers are its target's text, not blocks. */
static void ext2_delete(struct ext2_node *node)
{
	pcache_forget(&node->mapping, 0);
	if (!ext2_is_fast_link(node))
		free_blocks_from(node, 0);
	release_xattr_block(node);
	node->disk.dtime = ext2_now();
	node->disk.links_count = 0;
	node->disk.size = 0;
	ext2_write_inode(node);
	ext2_free_inode(node->fs, node->ino, is_dir(node));
}

int ext2_drop_unused(struct ext2_fs *fs)
{
	int first_error = 0;
	struct ext2_node **link = &fs->live;
	while (*link) {
		struct ext2_node *node = *link;
		if (__atomic_load_n(&node->vnode.refs, __ATOMIC_ACQUIRE) != 1) {
			link = &node->next_live;
			continue;
		}
		int error = node->unlinked ? 0 : ext2_sync_node_locked(node);
		if (error) { /* its dirty pages stay, and the node with them, for the next sync */
			first_error = first_error ? first_error : error;
			link = &node->next_live;
			continue;
		}
		*link = node->next_live;
		if (node->unlinked)
			ext2_delete(node);
		pcache_forget(&node->mapping, 0);
		vfs_node_put(&node->vnode); /* release frees it */
	}
	return first_error;
}

/* The live list's reference was the last: only ext2_drop_unused gets here. */
void ext2_release_node(struct vfs_node *vnode)
{
	kfree(vnode->private);
}

/* ---- The VFS's file operations ------------------------------------------------ */

/* Page index of an open file's node for a reader that wants pages up to
 * want_end: a hit takes only the page cache's lock; a miss reads under
 * ext2_lock (the block map), with read-ahead.  Returns 0 and the page, 1
 * when the page lies past the end of the file now (a truncation came
 * between), or the error. */
static int reader_page(struct vfs_file *file, uint64_t index, uint64_t want_end,
		       struct pcache_page **page)
{
	struct ext2_node *node = file->node->private;
	uint64_t end =
	    (__atomic_load_n(&node->vnode.size, __ATOMIC_RELAXED) + PAGE_SIZE - 1) / PAGE_SIZE;
	if (pcache_get_cached(&node->mapping, index, &file->read_ahead, end, page) == 0)
		return 0;
	mutex_lock(&ext2_lock);
	end = (node->vnode.size + PAGE_SIZE - 1) / PAGE_SIZE;
	int error = index >= end ? 1
				 : pcache_get_ahead(&node->mapping, index, &file->read_ahead,
						    want_end, end, page);
	mutex_unlock(&ext2_lock);
	return error;
}

static int copy_out(void *to, const void *from, size_t length, enum vfs_buffer where)
{
	if (where == VFS_USER_BUFFER)
		return copy_to_user(to, from, length);
	memcpy(to, from, length);
	return 0;
}

/* A read of an open file, copying each page straight from the page cache
 * into buffer with no ext2 or page-cache lock held: a copy into user memory
 * may fault in a shared mapping of an ext2 file, which takes both.  The size
 * is read once: a write or truncation meanwhile is seen, or not, page by
 * page (pcache_forget takes truncated pages away even while referenced). */
static int64_t file_read(struct vfs_file *file, void *buffer, size_t length, uint64_t offset,
			 enum vfs_buffer where)
{
	uint64_t size = __atomic_load_n(&file->node->size, __ATOMIC_RELAXED);
	if (offset >= size)
		return 0;
	if (length > size - offset)
		length = size - offset;
	uint64_t want_end = (offset + length - 1) / PAGE_SIZE + 1;
	size_t done = 0;
	while (done < length) {
		uint64_t position = offset + done;
		size_t in_page = position % PAGE_SIZE;
		size_t chunk =
		    PAGE_SIZE - in_page < length - done ? PAGE_SIZE - in_page : length - done;
		struct pcache_page *page;
		int error = reader_page(file, position / PAGE_SIZE, want_end, &page);
		if (error == 0) {
			error =
			    copy_out((uint8_t *)buffer + done, page->data + in_page, chunk, where);
			pcache_put(page);
		}
		if (error)
			return done || error > 0 ? (int64_t)done : error;
		done += chunk;
	}
	return (int64_t)done;
}

static int64_t ext2_file_read(struct vfs_file *file, void *buffer, size_t length, uint64_t offset)
{
	return file_read(file, buffer, length, offset, VFS_KERNEL_BUFFER);
}

static int64_t ext2_file_read_user(struct vfs_file *file, void *buffer, size_t length,
				   uint64_t offset)
{
	return file_read(file, buffer, length, offset, VFS_USER_BUFFER);
}

static int64_t ext2_file_write(struct vfs_file *file, const void *buffer, size_t length,
			       uint64_t offset)
{
	struct ext2_node *node = file->node->private;
	mutex_lock(&ext2_lock);
	int64_t n = ext2_write_locked(node, buffer, length, offset);
	mutex_unlock(&ext2_lock);
	if (n > 0)
		ext2_queue_writeback(node->fs);
	return n;
}

/* O_APPEND: the end is taken under ext2_lock, which every write that
 * extends the file holds, so appenders with separate opens never meet. */
static int64_t ext2_file_append(struct vfs_file *file, const void *buffer, size_t length,
				uint64_t *end)
{
	struct ext2_node *node = file->node->private;
	mutex_lock(&ext2_lock);
	uint64_t at = node->vnode.size;
	int64_t n = ext2_write_locked(node, buffer, length, at);
	mutex_unlock(&ext2_lock);
	if (n > 0) {
		*end = at + (uint64_t)n;
		ext2_queue_writeback(node->fs);
	}
	return n;
}

const struct vfs_file_ops ext2_file_ops = {
    .read = ext2_file_read,
    .read_user = ext2_file_read_user,
    .write = ext2_file_write,
    .append = ext2_file_append,
};

static int ext2_truncate(struct vfs_node *vnode, uint64_t size)
{
	mutex_lock(&ext2_lock);
	int error = ext2_truncate_locked(vnode->private, size);
	mutex_unlock(&ext2_lock);
	return error;
}

const struct vfs_node_ops ext2_file_node_ops = {
    .truncate = ext2_truncate,
    .setattr = ext2_setattr,
    .release = ext2_release_node,
    .map_page = ext2_map_page,
    .unmap_page = ext2_unmap_page,
    .sync = ext2_sync_node,
};

const struct vfs_node_ops ext2_link_ops = {
    .readlink = ext2_link_readlink,
    .setattr = ext2_setattr,
    .release = ext2_release_node,
};

int ext2_sync_node(struct vfs_node *vnode)
{
	if (!vnode || (vnode->ops != &ext2_file_node_ops && vnode->ops != &ext2_dir_ops &&
		       vnode->ops != &ext2_link_ops))
		return -EINVAL;
	struct ext2_node *node = vnode->private;
	mutex_lock(&ext2_lock);
	int error = ext2_sync_node_locked(node);
	if (!error)
		error = pcache_sync(&node->fs->meta);
	if (!error)
		error = block_rw(node->fs->disk, BLOCK_FLUSH, 0, 0, NULL);
	int earlier = ext2_take_write_error(node->fs);
	mutex_unlock(&ext2_lock);
	return error ? error : earlier;
}
