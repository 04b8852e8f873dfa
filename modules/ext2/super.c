/*
 * The ext2 file system as a whole: mounting (checks of the superblock and of
 * the features this driver handles), the disk's metadata through the page
 * cache, block and inode allocation in the group bitmaps with the free counts
 * of the group descriptors and superblock kept exact (the host's e2fsck
 * compares them), and sync.
 */
#include "ext2/internal.h"

#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "time/time.h"

struct mutex ext2_lock = MUTEX_INIT(ext2_lock, "ext2");
struct workqueue ext2_writeback;
static struct ext2_fs *ext2_mounted;
static uint32_t ext2_time_base; /* the last write time of the first disk mounted */

/* The machine has no wall clock yet: times count from the disk's last write
 * time (mke2fs's, the host's clock), so they look plausible to e2fsck (which
 * reads a small deletion time as an orphan-list link). */
uint32_t ext2_now(void)
{
	return ext2_time_base + (uint32_t)(clock_ns() / NSEC_PER_SEC);
}

static int ext2_sync_fs(struct ext2_fs *fs);

/* The writeback work: what a write left dirty goes to the disk soon after,
 * in the worker, charged to the writer's activity.  Nobody waits for it, so
 * a failure is kept for the next sync, fsync or umount to report (the pages
 * that failed stay dirty). */
static void ext2_writeback_fs(struct work *work)
{
	mutex_lock(&ext2_lock);
	struct ext2_fs *fs = work->arg;
	int error = fs->unmounted ? 0 : ext2_sync_fs(fs);
	if (error)
		fs->write_error = error;
	mutex_unlock(&ext2_lock);
}

int ext2_take_write_error(struct ext2_fs *fs)
{
	int error = fs->write_error;
	fs->write_error = 0;
	return error;
}

/* A write's pages wait this long for more writes before they are written
 * back, so a file written in many pieces is written back once. */
#define EXT2_WRITEBACK_DELAY_NS (200 * NSEC_PER_MSEC)

void ext2_queue_writeback(struct ext2_fs *fs)
{
	work_queue_after(&ext2_writeback, &fs->writeback, EXT2_WRITEBACK_DELAY_NS);
}

/* ---- The disk's blocks ------------------------------------------------------ */

static int meta_read_page(struct pcache_mapping *mapping, uint64_t index, void *page)
{
	struct ext2_fs *fs = mapping->owner;
	return block_rw(fs->disk, BLOCK_READ, index * EXT2_SECTORS_PER_BLOCK,
			EXT2_SECTORS_PER_BLOCK, page);
}

/* Under ext2_lock, as a file's pages (inode.c, file_write_page): a freed
 * indirect block, reallocated as data, is never overwritten by its old
 * pointers; another user's eviction gets -EAGAIN rather than wait. */
static int meta_write_page(struct pcache_mapping *mapping, uint64_t index, const void *page)
{
	struct ext2_fs *fs = mapping->owner;
	bool locked_here = !mutex_held_by_me(&ext2_lock);
	if (locked_here && !mutex_trylock(&ext2_lock))
		return -EAGAIN;
	int error = block_rw(fs->disk, BLOCK_WRITE, index * EXT2_SECTORS_PER_BLOCK,
			     EXT2_SECTORS_PER_BLOCK, (void *)page);
	if (locked_here)
		mutex_unlock(&ext2_lock);
	return error;
}

static const struct pcache_ops ext2_meta_ops = {.read_page = meta_read_page,
						.write_page = meta_write_page};

int ext2_meta_get(struct ext2_fs *fs, uint32_t block, enum pcache_fill fill,
		  struct pcache_page **page)
{
	if (block == 0 || block >= fs->blocks_count)
		return -EIO; /* a corrupt pointer: never read or write outside */
	return pcache_get(&fs->meta, block, fill, page);
}

static struct ext2_super *super_of(struct pcache_page *block0)
{
	return (struct ext2_super *)(block0->data + EXT2_SUPER_OFFSET);
}

/* The descriptor of group in its page (referenced: pcache_put it). */
static int group_get(struct ext2_fs *fs, uint32_t group, struct pcache_page **page,
		     struct ext2_group_desc **desc)
{
	uint32_t per_block = EXT2_BLOCK_SIZE / sizeof(struct ext2_group_desc);
	int error =
	    ext2_meta_get(fs, fs->first_data_block + 1 + group / per_block, PCACHE_READ, page);
	if (error)
		return error;
	*desc = (struct ext2_group_desc *)(*page)->data + group % per_block;
	return 0;
}

/* Adds delta to the superblock's free blocks (blocks) or free inodes.  The
 * superblock sits in block 0 at byte 1024 (4 KiB blocks). */
static void super_adjust(struct ext2_fs *fs, bool blocks, int delta)
{
	struct pcache_page *page;
	if (pcache_get(&fs->meta, 0, PCACHE_READ, &page))
		return;
	struct ext2_super *super = super_of(page);
	if (blocks)
		super->free_blocks_count += (uint32_t)delta;
	else
		super->free_inodes_count += (uint32_t)delta;
	pcache_mark_dirty(page);
	pcache_put(page);
}

/* ---- Bitmaps -------------------------------------------------------------- */

/* Finds a clear bit below limit in the bitmap block, sets it.  -ENOSPC when none. */
static int bitmap_take(struct ext2_fs *fs, uint32_t bitmap, uint32_t limit, uint32_t *bit)
{
	struct pcache_page *page;
	int error = ext2_meta_get(fs, bitmap, PCACHE_READ, &page);
	if (error)
		return error;
	for (uint32_t i = 0; i < limit; i++) {
		if (!(page->data[i / 8] & (1u << (i % 8)))) {
			page->data[i / 8] |= (uint8_t)(1u << (i % 8));
			pcache_mark_dirty(page);
			pcache_put(page);
			*bit = i;
			return 0;
		}
	}
	pcache_put(page);
	return -ENOSPC;
}

/* Clears bit; returns true when it was set. */
static bool bitmap_clear(struct ext2_fs *fs, uint32_t bitmap, uint32_t bit)
{
	struct pcache_page *page;
	if (ext2_meta_get(fs, bitmap, PCACHE_READ, &page))
		return false;
	bool was_set = page->data[bit / 8] & (1u << (bit % 8));
	page->data[bit / 8] &= (uint8_t) ~(1u << (bit % 8));
	pcache_mark_dirty(page);
	pcache_put(page);
	return was_set;
}

static uint32_t group_blocks(struct ext2_fs *fs, uint32_t group)
{
	uint32_t first = fs->first_data_block + group * fs->blocks_per_group;
	uint32_t left = fs->blocks_count - first;
	return left < fs->blocks_per_group ? left : fs->blocks_per_group;
}

/* One rule says which blocks are data (ext2_data_block): a block pointer is
 * followed, a block allocated and a block freed only there.  Without flex_bg
 * (refused at mount) a group's own structures sit at its start, before
 * data_start (check_group): the superblock and descriptors with their
 * reserved room where the group has a copy, the two bitmaps, the inode
 * table. */
bool ext2_data_block(const struct ext2_fs *fs, uint32_t block)
{
	if (block <= fs->first_data_block || block >= fs->blocks_count || !fs->data_start)
		return false;
	uint32_t group = (block - fs->first_data_block) / fs->blocks_per_group;
	return group < fs->group_count && block >= fs->data_start[group];
}

#ifdef KERNEL_TESTS
uint32_t ext2_test_caller_ids = EXT2_OWN_IDS;
#endif

bool ext2_may_use_reserve(const struct ext2_fs *fs)
{
	uint32_t uid = proc_current_euid(), gid = proc_current_egid();
#ifdef KERNEL_TESTS
	if (ext2_test_caller_ids != EXT2_OWN_IDS)
		uid = gid = ext2_test_caller_ids;
#endif
	return uid == 0 || uid == fs->reserved_uid || gid == fs->reserved_gid;
}

/* -ENOSPC when no block above the reserve is free and the caller may not
 * take a reserved one. */
static int check_reserve(struct ext2_fs *fs)
{
	if (fs->reserved_blocks == 0)
		return 0;
	struct pcache_page *page;
	int error = pcache_get(&fs->meta, 0, PCACHE_READ, &page);
	if (error)
		return error;
	uint32_t free = super_of(page)->free_blocks_count;
	pcache_put(page);
	return free > fs->reserved_blocks || ext2_may_use_reserve(fs) ? 0 : -ENOSPC;
}

int ext2_alloc_block(struct ext2_fs *fs, uint32_t *block)
{
	int reserve = check_reserve(fs);
	if (reserve)
		return reserve;
	for (uint32_t group = 0; group < fs->group_count; group++) {
		struct pcache_page *page;
		struct ext2_group_desc *desc;
		int error = group_get(fs, group, &page, &desc);
		if (error)
			return error;
		uint32_t bit;
		if (desc->free_blocks_count == 0 ||
		    bitmap_take(fs, desc->block_bitmap, group_blocks(fs, group), &bit)) {
			pcache_put(page);
			continue;
		}
		uint32_t taken = fs->first_data_block + group * fs->blocks_per_group + bit;
		if (!ext2_data_block(fs, taken)) {
			pcache_put(page); /* a bitmap that lost a metadata bit: it is set again */
			return -EIO;
		}
		desc->free_blocks_count--;
		pcache_mark_dirty(page);
		pcache_put(page);
		super_adjust(fs, true, -1);
		*block = taken;
		return 0;
	}
	return -ENOSPC;
}

int ext2_free_block(struct ext2_fs *fs, uint32_t block)
{
	if (!ext2_data_block(fs, block))
		return -EIO; /* outside the file system, or its own structures */
	uint32_t group = (block - fs->first_data_block) / fs->blocks_per_group;
	uint32_t bit = (block - fs->first_data_block) % fs->blocks_per_group;
	struct pcache_page *page;
	struct ext2_group_desc *desc;
	int error = group_get(fs, group, &page, &desc);
	if (error)
		return error;
	pcache_forget_page(&fs->meta,
			   block); /* an indirect block's stale copy must not come back */
	if (bitmap_clear(fs, desc->block_bitmap, bit)) {
		desc->free_blocks_count++;
		pcache_mark_dirty(page);
		super_adjust(fs, true, 1);
	}
	pcache_put(page);
	return 0;
}

/* Whether inode ino is someone's: in memory, or linked on the disk (1), or
 * free (0), or a negative error when it cannot be read.  An inode bitmap
 * that lost its bit would hand it out again: a second file on the first's
 * inode, whose contents and name would then be the new file's. */
static int inode_in_use(struct ext2_fs *fs, uint32_t ino)
{
	for (const struct ext2_node *node = fs->live; node; node = node->next_live)
		if (node->ino == ino)
			return 1;
	struct ext2_inode inode;
	int error = ext2_read_inode(fs, ino, &inode);
	return error ? error : inode.links_count != 0;
}

int ext2_alloc_inode(struct ext2_fs *fs, bool dir, uint32_t *ino)
{
	for (uint32_t group = 0; group < fs->group_count; group++) {
		struct pcache_page *page;
		struct ext2_group_desc *desc;
		int error = group_get(fs, group, &page, &desc);
		if (error)
			return error;
		uint32_t bit, limit = fs->inodes_per_group;
		if (desc->free_inodes_count == 0 ||
		    bitmap_take(fs, desc->inode_bitmap, limit, &bit)) {
			pcache_put(page);
			continue;
		}
		uint32_t number = group * fs->inodes_per_group + bit + 1;
		/* Reserved inodes and inodes in use are never handed out: the bit
		 * the bitmap lost is set again.  One that cannot be read (no
		 * frame) is given back, free as it was. */
		int in_use = number < fs->first_ino || number > fs->inodes_count
				 ? 1
				 : inode_in_use(fs, number);
		if (in_use < 0)
			bitmap_clear(fs, desc->inode_bitmap, bit);
		if (in_use) {
			pcache_put(page);
			return in_use < 0 ? in_use : -EIO;
		}
		desc->free_inodes_count--;
		if (dir)
			desc->used_dirs_count++;
		pcache_mark_dirty(page);
		pcache_put(page);
		super_adjust(fs, false, -1);
		*ino = number;
		return 0;
	}
	return -ENOSPC;
}

void ext2_free_inode(struct ext2_fs *fs, uint32_t ino, bool dir)
{
	if (ino < fs->first_ino || ino > fs->inodes_count)
		return;
	uint32_t group = (ino - 1) / fs->inodes_per_group;
	struct pcache_page *page;
	struct ext2_group_desc *desc;
	if (group_get(fs, group, &page, &desc))
		return;
	if (bitmap_clear(fs, desc->inode_bitmap, (ino - 1) % fs->inodes_per_group)) {
		desc->free_inodes_count++;
		if (dir && desc->used_dirs_count)
			desc->used_dirs_count--;
		pcache_mark_dirty(page);
		super_adjust(fs, false, 1);
	}
	pcache_put(page);
}

/* ---- Inodes --------------------------------------------------------------- */

/* The page holding inode ino and its offset there. */
static int inode_locate(struct ext2_fs *fs, uint32_t ino, struct pcache_page **page, size_t *offset)
{
	if (ino == 0 || ino > fs->inodes_count)
		return -EIO;
	uint32_t group = (ino - 1) / fs->inodes_per_group;
	uint32_t index = (ino - 1) % fs->inodes_per_group;
	struct pcache_page *gpage;
	struct ext2_group_desc *desc;
	int error = group_get(fs, group, &gpage, &desc);
	if (error)
		return error;
	uint64_t byte = (uint64_t)index * fs->inode_size;
	uint32_t block = desc->inode_table + (uint32_t)(byte / EXT2_BLOCK_SIZE);
	pcache_put(gpage);
	*offset = byte % EXT2_BLOCK_SIZE;
	return ext2_meta_get(fs, block, PCACHE_READ, page);
}

int ext2_read_inode(struct ext2_fs *fs, uint32_t ino, struct ext2_inode *inode)
{
	struct pcache_page *page;
	size_t offset;
	int error = inode_locate(fs, ino, &page, &offset);
	if (error)
		return error;
	memcpy(inode, page->data + offset, sizeof(*inode));
	pcache_put(page);
	return 0;
}

int ext2_write_inode(struct ext2_node *node)
{
	struct pcache_page *page;
	size_t offset;
	int error = inode_locate(node->fs, node->ino, &page, &offset);
	if (error)
		return error;
	memcpy(page->data + offset, &node->disk, sizeof(node->disk));
	pcache_mark_dirty(page);
	pcache_put(page);
	return 0;
}

int ext2_adjust_dirs(struct ext2_fs *fs, uint32_t ino, int delta)
{
	struct pcache_page *page;
	struct ext2_group_desc *desc;
	int error = group_get(fs, (ino - 1) / fs->inodes_per_group, &page, &desc);
	if (error)
		return error;
	desc->used_dirs_count += (uint16_t)delta;
	pcache_mark_dirty(page);
	pcache_put(page);
	return 0;
}

/* ---- Mounting ------------------------------------------------------------- */

static int ext2_check_super(const struct ext2_super *super)
{
	if (super->magic != EXT2_MAGIC)
		return -EINVAL;
	if (super->log_block_size != 2 || super->blocks_per_group == 0 ||
	    super->inodes_per_group == 0 || super->blocks_per_group > EXT2_BLOCK_SIZE * 8 ||
	    super->inodes_per_group > EXT2_BLOCK_SIZE * 8)
		return -EINVAL; /* only 4 KiB blocks */
	if (super->rev_level >= 1 && ((super->feature_incompat & ~EXT2_FEATURE_INCOMPAT_FILETYPE) ||
				      (super->feature_ro_compat & ~(EXT2_FEATURE_RO_COMPAT_SPARSE |
								    EXT2_FEATURE_RO_COMPAT_LARGE))))
		return -EINVAL; /* a feature this driver would get wrong */
	if (super->rev_level >= 1 &&
	    (super->inode_size < sizeof(struct ext2_inode) || super->inode_size > EXT2_BLOCK_SIZE ||
	     (super->inode_size & (super->inode_size - 1))))
		return -EINVAL;
	return 0;
}

static void ext2_fs_fill(struct ext2_fs *fs, const struct ext2_super *super)
{
	fs->blocks_count = super->blocks_count;
	fs->inodes_count = super->inodes_count;
	fs->blocks_per_group = super->blocks_per_group;
	fs->inodes_per_group = super->inodes_per_group;
	fs->first_data_block = super->first_data_block;
	fs->group_count =
	    (super->blocks_count - super->first_data_block + super->blocks_per_group - 1) /
	    super->blocks_per_group;
	fs->inode_size = super->rev_level >= 1 ? super->inode_size : sizeof(struct ext2_inode);
	fs->first_ino = super->rev_level >= 1 ? super->first_ino : 11;
	fs->reserved_blocks = super->r_blocks_count;
	fs->reserved_uid = super->def_resuid;
	fs->reserved_gid = super->def_resgid;
	fs->inode_table_blocks =
	    (uint32_t)(((uint64_t)fs->inodes_per_group * fs->inode_size + EXT2_BLOCK_SIZE - 1) /
		       EXT2_BLOCK_SIZE);
	fs->filetype =
	    super->rev_level >= 1 && (super->feature_incompat & EXT2_FEATURE_INCOMPAT_FILETYPE);
}

/* The blocks of the group descriptor table (after the superblock). */
static uint32_t descriptor_blocks(const struct ext2_fs *fs)
{
	uint32_t per_block = EXT2_BLOCK_SIZE / sizeof(struct ext2_group_desc);
	return (fs->group_count + per_block - 1) / per_block;
}

/* Whether [start, start + count) lies in the group's blocks from lowest on. */
static bool in_group(const struct ext2_fs *fs, uint32_t group, uint32_t lowest, uint64_t start,
		     uint32_t count)
{
	uint64_t first = fs->first_data_block + (uint64_t)group * fs->blocks_per_group;
	uint64_t end = first + fs->blocks_per_group;
	end = end < fs->blocks_count ? end : fs->blocks_count;
	return start >= first && start >= lowest && start + count <= end;
}

/* Checks the group's descriptor (its bitmaps and inode table inside the
 * group, past the descriptor table in the first group) and notes where its
 * data starts.  A descriptor naming blocks elsewhere would have allocation
 * set bits in, and inodes written to, another group's or a file's blocks. */
static int check_group(struct ext2_fs *fs, uint32_t group)
{
	struct pcache_page *page;
	struct ext2_group_desc *desc;
	int error = group_get(fs, group, &page, &desc);
	if (error)
		return error;
	uint32_t lowest = group ? 0 : fs->first_data_block + 1 + descriptor_blocks(fs);
	uint32_t bitmap = desc->block_bitmap, inodes = desc->inode_bitmap;
	uint32_t table = desc->inode_table, table_end = table + fs->inode_table_blocks;
	bool valid =
	    in_group(fs, group, lowest, bitmap, 1) && in_group(fs, group, lowest, inodes, 1) &&
	    in_group(fs, group, lowest, table, fs->inode_table_blocks) && bitmap != inodes &&
	    (bitmap < table || bitmap >= table_end) && (inodes < table || inodes >= table_end);
	pcache_put(page);
	uint32_t end = bitmap + 1 > inodes + 1 ? bitmap + 1 : inodes + 1;
	fs->data_start[group] = end > table_end ? end : table_end;
	return valid ? 0 : -EINVAL;
}

/* The superblock's geometry against itself (every inode in a group, the
 * descriptor table on the disk), then every group's descriptor. */
static int ext2_check_groups(struct ext2_fs *fs)
{
	if (fs->first_data_block >= fs->blocks_count || fs->group_count == 0 ||
	    fs->inodes_count > (uint64_t)fs->group_count * fs->inodes_per_group ||
	    (uint64_t)fs->first_data_block + 1 + descriptor_blocks(fs) > fs->blocks_count ||
	    fs->first_ino <= EXT2_ROOT_INO || fs->first_ino > fs->inodes_count)
		return -EINVAL;
	uint32_t *data_start = kzalloc((size_t)fs->group_count * sizeof *data_start);
	if (!data_start)
		return -ENOMEM;
	fs->data_start = data_start; /* kept with fs: a late page write-back may look */
	int error = 0;
	for (uint32_t group = 0; group < fs->group_count && !error; group++)
		error = check_group(fs, group);
	return error;
}

static int ext2_read_super(struct ext2_fs *fs)
{
	struct pcache_page *page;
	int error = pcache_get(&fs->meta, 0, PCACHE_READ, &page);
	if (error)
		return error;
	struct ext2_super *super = super_of(page);
	error = ext2_check_super(super);
	if (!error)
		ext2_fs_fill(fs, super);
	if (!error && !ext2_time_base)
		ext2_time_base = super->wtime > super->mtime ? super->wtime : super->mtime;
	pcache_put(page);
	if (!error && (uint64_t)fs->blocks_count * EXT2_SECTORS_PER_BLOCK > fs->disk->sectors)
		error = -EINVAL; /* the file system claims more than the disk has */
	return error ? error : ext2_check_groups(fs);
}

static bool disk_mounted_locked(const struct block_device *disk)
{
	for (struct ext2_fs *fs = ext2_mounted; fs; fs = fs->next)
		if (fs->disk == disk)
			return true;
	return false;
}

static void release_fs(struct ext2_fs *fs, struct ext2_node *root);

/* Reads the superblock and the root and puts fs on the mounted list
 * (ext2_lock held): from then on another mount of the disk is -EBUSY. */
static int ext2_mount_locked(struct ext2_fs *fs, struct ext2_node **root)
{
	if (disk_mounted_locked(fs->disk))
		return -EBUSY;
	int error = ext2_writeback.worker ? 0 : workqueue_start(&ext2_writeback, "ext2.writeback");
	if (!error)
		error = ext2_read_super(fs);
	if (!error)
		error = ext2_iget(fs, EXT2_ROOT_INO, root);
	if (!error && !VFS_IS_DIR((*root)->vnode.mode)) {
		vfs_node_put(&(*root)->vnode);
		return -EINVAL; /* the live list keeps it, as fs (pages may still name it) */
	}
	if (!error) {
		vfs_node_get(&(*root)->vnode); /* the mount's own reference */
		fs->next = ext2_mounted;
		ext2_mounted = fs;
	}
	return error;
}

int ext2_mount(struct block_device *disk, const char *path)
{
	if (!disk || !path)
		return -EINVAL;
	struct ext2_fs *fs = kzalloc(sizeof(*fs));
	if (!fs)
		return -ENOMEM;
	fs->disk = disk;
	work_init(&fs->writeback, ext2_writeback_fs, fs);
	fs->blocks_count = 1; /* until the superblock is read: block 0 only */
	pcache_mapping_init(&fs->meta, &ext2_meta_ops, fs);
	mutex_lock(&ext2_lock);
	struct ext2_node *root = NULL;
	int error = ext2_mount_locked(fs, &root);
	mutex_unlock(&ext2_lock);
	if (!error) {
		error = vfs_mount(path, &root->vnode);
		if (error) { /* nothing was written: the disk is free again */
			mutex_lock(&ext2_lock);
			release_fs(fs, root);
			mutex_unlock(&ext2_lock);
		}
	}
	if (!error)
		pr_info("ext2: %s at %s, %u blocks, %u inodes, %u groups\n", disk->name, path,
			fs->blocks_count, fs->inodes_count, fs->group_count);
	else
		pr_warn("ext2: cannot mount %s at %s: %d\n", disk->name, path, error);
	return error; /* on failure fs stays: pages may still name it */
}

void ext2_mount_boot(void)
{
	struct block_device *disk = block_get(0);
	uint8_t *page = disk ? mm_alloc_pages(1, PAGE_SIZE) : NULL;
	if (!page)
		return;
	const struct ext2_super *super = (const void *)(page + EXT2_SUPER_OFFSET);
	if (block_rw(disk, BLOCK_READ, 0, EXT2_SECTORS_PER_BLOCK, page) == 0 &&
	    super->magic == EXT2_MAGIC)
		ext2_mount(disk, EXT2_BOOT_MOUNT);
	mm_free_pages(page, 1);
}

static int ext2_sync_fs(struct ext2_fs *fs)
{
	int first_error = 0;
	for (struct ext2_node *node = fs->live; node; node = node->next_live) {
		int error = ext2_sync_node_locked(node);
		if (error && !first_error)
			first_error = error;
	}
	int error = ext2_drop_unused(fs);
	first_error = first_error ? first_error : error;
	error = pcache_sync(&fs->meta);
	if (!error)
		error = block_rw(fs->disk, BLOCK_FLUSH, 0, 0, NULL);
	return first_error ? first_error : error;
}

int ext2_sync_all(void)
{
	int first_error = 0;
	mutex_lock(&ext2_lock);
	for (struct ext2_fs *fs = ext2_mounted; fs; fs = fs->next) {
		int error = ext2_sync_fs(fs);
		int earlier = ext2_take_write_error(fs);
		error = error ? error : earlier;
		if (error && !first_error)
			first_error = error;
	}
	mutex_unlock(&ext2_lock);
	return first_error;
}

bool ext2_disk_mounted(const struct block_device *disk)
{
	mutex_lock(&ext2_lock);
	bool found = disk_mounted_locked(disk);
	mutex_unlock(&ext2_lock);
	return found;
}

/* After a sync: only the root is left, held by the live list, ext2_mount's
 * two references and the VFS's mount entry. */
static bool only_root_left(struct ext2_fs *fs, struct ext2_node *root)
{
	return fs->live == root && !root->next_live &&
	       __atomic_load_n(&root->vnode.refs, __ATOMIC_ACQUIRE) == 4;
}

/* Lets go of a synced, unused file system.  The struct stays (marked) so
 * that a write-back item queued late finds it and does nothing. */
static void release_fs(struct ext2_fs *fs, struct ext2_node *root)
{
	struct ext2_fs **link = &ext2_mounted;
	while (*link != fs)
		link = &(*link)->next;
	*link = fs->next;
	fs->unmounted = true;
	fs->live = NULL;
	pcache_forget(&root->mapping, 0);
	for (int i = 0; i < 3; i++)
		vfs_node_put(&root->vnode); /* the VFS's entry keeps the last one, if any */
	pcache_forget(&fs->meta, 0);
}

int ext2_unmount(struct vfs_node *vroot)
{
	struct ext2_node *root = vroot->private;
	struct ext2_fs *fs = root->fs;
	if (root->ino != EXT2_ROOT_INO)
		return -EINVAL;
	workqueue_flush(&ext2_writeback); /* a write-back due later runs now */
	mutex_lock(&ext2_lock);
	int error = ext2_sync_fs(fs);
	if (!error && !only_root_left(fs, root))
		error = -EBUSY;
	if (!error)
		release_fs(fs, root);
	mutex_unlock(&ext2_lock);
	if (!error)
		pr_info("ext2: %s unmounted\n", fs->disk->name);
	return error;
}
