/*
 * Shared mappings of ext2 files: a process maps the page cache's own frames,
 * so its stores are the file's contents that read() sees, and write-back
 * carries them to the disk.  A mapped page holds a page-cache reference (it
 * is never evicted while mapped).  A page mapped writable gets its block when
 * it is mapped (a hole has none, and write-back needs one), and counts as
 * dirty at every sync while so mapped (pcache_map_writable); unmapping it
 * leaves it dirty and queues the file system's write-back, so the last
 * stores reach the disk without msync too.
 */
#include "ext2/internal.h"

#include "lib/errno.h"
#include "mm/mm.h"

/* The block behind a page about to be written through a mapping, allocated
 * (and the inode written) when it was a hole.  *fresh: it is new. */
static int ensure_page_block(struct ext2_node *node, uint64_t index, uint32_t *block, bool *fresh)
{
	int error = ext2_bmap(node, index, true, block, fresh);
	if (!error && *fresh)
		error = ext2_write_inode(node);
	return error;
}

int ext2_map_page(struct vfs_node *vnode, uint64_t index, bool writable, uint64_t *phys)
{
	struct ext2_node *node = vnode->private;
	bool fresh = false;
	uint32_t block = 0;
	mutex_lock(&ext2_lock);
	int error = index < (node->vnode.size + PAGE_SIZE - 1) / PAGE_SIZE ? 0 : -EFAULT;
	if (!error && writable)
		error = ensure_page_block(node, index, &block, &fresh);
	struct pcache_page *page = NULL;
	if (!error)
		error = ext2_page_for_write(node, index, block, fresh,
					    fresh ? PCACHE_ZERO : PCACHE_READ, &page);
	if (!error && writable)
		pcache_map_writable(page);
	mutex_unlock(&ext2_lock);
	if (error)
		return error;
	*phys = virt_to_phys(page->data);
	if (fresh)
		ext2_queue_writeback(node->fs);
	return 0;
}

void ext2_unmap_page(struct vfs_node *vnode, uint64_t index, bool writable, uint64_t phys)
{
	struct ext2_node *node = vnode->private;
	struct pcache_page *page;
	/* The page whose frame was mapped, not whichever holds index now: a
	 * truncate may have taken it out of the file's pages meanwhile. */
	if (pcache_find_frame(&node->mapping, index, phys_to_virt(phys), &page))
		return; /* not mapped: nothing was kept */
	if (writable)
		pcache_unmap_writable(page);
	pcache_put(page); /* pcache_find's */
	pcache_put(page); /* map_page's */
	if (writable)
		ext2_queue_writeback(node->fs);
}
