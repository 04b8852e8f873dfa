/* Private to modules/ext2: the on-disk layout (little-endian, as x86 is),
 * the mounted file system and its in-memory inodes. */
#ifndef MODULES_EXT2_INTERNAL_H
#define MODULES_EXT2_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "block/block.h"
#include "ext2/ext2.h"
#include "pagecache/pagecache.h"
#include "vfs/vfs.h"
#include "workqueue/workqueue.h"

#define EXT2_MAGIC             0xef53
#define EXT2_SUPER_OFFSET      1024
#define EXT2_BLOCK_SIZE        4096 /* the only size handled: one block, one page */
#define EXT2_ROOT_INO          2
#define EXT2_NDIR_BLOCKS       12
#define EXT2_IND_BLOCK         12
#define EXT2_DIND_BLOCK        13
#define EXT2_TIND_BLOCK        14
#define EXT2_PTRS              (EXT2_BLOCK_SIZE / 4)
#define EXT2_SECTORS_PER_BLOCK (EXT2_BLOCK_SIZE / BLOCK_SECTOR_SIZE)
#define EXT2_FILE_MAX          0x7fffffffu /* no large_file writes */
#define EXT2_FAST_LINK_MAX     59          /* targets up to this fit in i_block */
#define EXT2_XATTR_MAGIC       0xea020000u /* an extended-attribute block's header */

#define EXT2_FEATURE_INCOMPAT_FILETYPE 0x0002
#define EXT2_FEATURE_RO_COMPAT_SPARSE  0x0001
#define EXT2_FEATURE_RO_COMPAT_LARGE   0x0002

#define EXT2_S_IFLNK 0120000
#define EXT2_FT_REG  1
#define EXT2_FT_DIR  2
#define EXT2_FT_LNK  7

struct ext2_super {
	uint32_t inodes_count, blocks_count, r_blocks_count, free_blocks_count;
	uint32_t free_inodes_count, first_data_block, log_block_size, log_frag_size;
	uint32_t blocks_per_group, frags_per_group, inodes_per_group, mtime, wtime;
	uint16_t mnt_count, max_mnt_count, magic, state, errors, minor_rev_level;
	uint32_t lastcheck, checkinterval, creator_os, rev_level;
	uint16_t def_resuid, def_resgid;
	uint32_t first_ino;
	uint16_t inode_size, block_group_nr;
	uint32_t feature_compat, feature_incompat, feature_ro_compat;
};
_Static_assert(sizeof(struct ext2_super) == 104, "superblock layout");

struct ext2_group_desc {
	uint32_t block_bitmap, inode_bitmap, inode_table;
	uint16_t free_blocks_count, free_inodes_count, used_dirs_count, pad;
	uint32_t reserved[3];
};
_Static_assert(sizeof(struct ext2_group_desc) == 32, "group descriptor layout");

struct ext2_inode {
	uint16_t mode, uid;
	uint32_t size, atime, ctime, mtime, dtime;
	uint16_t gid, links_count;
	uint32_t blocks, flags, osd1;
	uint32_t block[15];
	uint32_t generation, file_acl, size_high, faddr;
	uint8_t osd2[12];
};
_Static_assert(sizeof(struct ext2_inode) == 128, "inode layout");

struct ext2_dirent {
	uint32_t inode;
	uint16_t rec_len;
	uint8_t name_len, file_type;
	char name[];
} __attribute__((packed));

struct ext2_fs {
	struct block_device *disk;
	struct pcache_mapping
	    meta; /* the disk's blocks: superblock, maps, inodes, indirect blocks */
	uint32_t blocks_count, inodes_count, blocks_per_group, inodes_per_group;
	uint32_t first_data_block, group_count, inode_size, first_ino;
	uint32_t inode_table_blocks; /* per group */
	/* Blocks only root, reserved_uid or reserved_gid may take (s_r_blocks_count,
	 * s_def_resuid, s_def_resgid): Linux's 5 % for root by default. */
	uint32_t reserved_blocks, reserved_uid, reserved_gid;
	/* Per group, its first block past its own structures (checked at mount:
	 * without flex_bg they sit at the group's start). */
	uint32_t *data_start;
	bool filetype;
	struct ext2_node *live; /* every in-memory inode, each holding one reference */
	struct work writeback;  /* queued on ext2_writeback after a write */
	bool unmounted;         /* kept for a late write-back item, which skips it */
	int write_error;        /* the write-back worker's last failure, for the next sync */
	struct ext2_fs *next;
};

/* An inode in memory: the VFS node, the disk inode and its pages. */
struct ext2_node {
	struct vfs_node vnode;
	struct ext2_fs *fs;
	uint32_t ino;
	struct ext2_inode disk;
	struct pcache_mapping mapping; /* file or directory contents */
	bool unlinked;                 /* no name left: freed when the last user goes */
	struct ext2_node *next_live;
};

/* ext2_lock guards every ext2 structure and is held across every operation
 * (page-cache fills and write-backs of ext2 pages run under it too). */
extern struct mutex ext2_lock;
/* The write-back worker: syncs a file system soon after a write dirtied it. */
extern struct workqueue ext2_writeback;
void ext2_queue_writeback(struct ext2_fs *fs);
/* The error the write-back worker met since the last call, cleared (0 when
 * none): sync, fsync and umount report it. */
int ext2_take_write_error(struct ext2_fs *fs);

/* super.c: blocks, maps and inodes (ext2_lock held). */
int ext2_meta_get(struct ext2_fs *fs, uint32_t block, enum pcache_fill fill,
		  struct pcache_page **page);
int ext2_read_inode(struct ext2_fs *fs, uint32_t ino, struct ext2_inode *inode);
int ext2_write_inode(struct ext2_node *node);
/* A free block, or -ENOSPC: also when only the reserved blocks are left and
 * the caller may not take them (ext2_may_use_reserve). */
int ext2_alloc_block(struct ext2_fs *fs, uint32_t *block);
/* Whether the caller may take fs's reserved blocks: effective uid 0, the
 * superblock's reserved uid or its reserved gid. */
bool ext2_may_use_reserve(const struct ext2_fs *fs);
/* Whether a block pointer read from an inode or an indirect block may name
 * block: one of the groups' data blocks, never the file system's own
 * structures (a corrupt pointer there is -EIO, never followed). */
bool ext2_data_block(const struct ext2_fs *fs, uint32_t block);
/* Frees a data or indirect block: 0, or -EIO for a block outside the file
 * system or holding its metadata (a corrupt pointer), which stays as it is. */
int ext2_free_block(struct ext2_fs *fs, uint32_t block);
int ext2_alloc_inode(struct ext2_fs *fs, bool dir, uint32_t *ino);
void ext2_free_inode(struct ext2_fs *fs, uint32_t ino, bool dir);
int ext2_adjust_dirs(struct ext2_fs *fs, uint32_t ino, int delta);
uint32_t ext2_now(void);

/* inode.c: in-memory inodes and file contents (ext2_lock held). */
int ext2_iget(struct ext2_fs *fs, uint32_t ino, struct ext2_node **node);
void ext2_node_init_ops(struct ext2_node *node);
/* Gives a new node its mapping and puts it on the live list (two references:
 * the list's and the caller's). */
void ext2_node_attach(struct ext2_node *node);
int ext2_bmap(struct ext2_node *node, uint64_t file_block, bool create, uint32_t *block,
	      bool *fresh);
/* Page index of node, about to be written, referenced: fill as pcache_get.
 * block is its block; fresh: just allocated, and then, when the page cannot
 * be had (-ENOMEM), the block is taken out of the file and freed again, so
 * that no block the file never wrote (a deleted file's bytes) stays in it. */
int ext2_page_for_write(struct ext2_node *node, uint64_t index, uint32_t block, bool fresh,
			enum pcache_fill fill, struct pcache_page **page);
#ifdef KERNEL_TESTS
/* Tests only: the next this many ext2_page_for_write fetches fail with
 * -ENOMEM, as when no frame is left. */
extern unsigned ext2_test_failing_page_fetches;
/* Tests only: the next this many zeroings of a new indirect block fail with
 * -ENOMEM, as when no frame is left for its page. */
extern unsigned ext2_test_failing_block_zeroings;
/* Tests only: when set, called by a page fill of a file (its page busy)
 * before the fill looks its block up. */
extern void (*ext2_test_page_fill_hook)(struct ext2_node *node, uint64_t index);
/* Tests only: when not EXT2_OWN_IDS, the uid and gid ext2_may_use_reserve
 * sees for the caller (a kernel thread is root). */
#define EXT2_OWN_IDS 0xffffffffu
extern uint32_t ext2_test_caller_ids;
#endif
/* A read of node's contents into kernel memory with ext2_lock held (no
 * read-ahead): symbolic links' targets.  Open files read through file_read. */
int64_t ext2_read_locked(struct ext2_node *node, void *buffer, size_t length, uint64_t offset);
int64_t ext2_write_locked(struct ext2_node *node, const void *buffer, size_t length,
			  uint64_t offset);
int ext2_truncate_locked(struct ext2_node *node, uint64_t size);
int ext2_sync_node_locked(struct ext2_node *node);
/* Drops the inodes nobody holds, writing each back first (an unlinked one is
 * freed on disk); one whose write-back fails stays, dirty.  Returns 0 or the
 * first error. */
int ext2_drop_unused(struct ext2_fs *fs);
uint64_t ext2_size(const struct ext2_inode *inode);
void ext2_set_size(struct ext2_node *node, uint64_t size);
/* A symbolic link whose target lies in i_block (Linux's rule: no block but
 * an extended-attribute block, whatever the size says; the target is at
 * most 59 bytes). */
bool ext2_is_fast_link(const struct ext2_node *node);
extern const struct vfs_file_ops ext2_file_ops;
/* The VFS's unmount op on the root: syncs, and lets go when nothing else is
 * in use (-EBUSY otherwise). */
int ext2_unmount(struct vfs_node *vroot);
/* The VFS's setattr: the node's mode bits and owner into the inode. */
int ext2_setattr(struct vfs_node *vnode);
/* mmap.c: the VFS's map_page and unmap_page (shared file mappings). */
int ext2_map_page(struct vfs_node *vnode, uint64_t index, bool writable, uint64_t *phys);
void ext2_unmap_page(struct vfs_node *vnode, uint64_t index, bool writable, uint64_t phys);
/* Frees an in-memory inode whose last reference (the live list's) went. */
void ext2_release_node(struct vfs_node *vnode);

/* dir.c: directories and links (ext2_lock held). */
extern const struct vfs_node_ops ext2_dir_ops;
extern const struct vfs_node_ops ext2_file_node_ops;
extern const struct vfs_node_ops ext2_link_ops;
int ext2_dir_find(struct ext2_node *dir, const char *name, size_t length, uint32_t *ino);
int ext2_make_node(struct ext2_node *dir, const char *name, size_t length,
		   const struct vfs_create *what, struct ext2_node **child);
/* rename.c: hard links and renames (the VFS's link and rename ops). */
int ext2_link(struct vfs_node *dir, const char *name, size_t length, struct vfs_node *node);
int ext2_rename(struct vfs_node *old_dir, const char *old_name, size_t old_length,
		struct vfs_node *new_dir, const char *new_name, size_t new_length);
/* dir.c, for rename.c: entries (ext2_lock held). */
int ext2_dir_add(struct ext2_node *dir, const char *name, size_t length, uint32_t ino,
		 uint32_t mode);
int ext2_dir_remove(struct ext2_node *dir, const char *name, size_t length);
/* Points the entry name of dir at ino (of mode) instead. */
int ext2_dir_retarget(struct ext2_node *dir, const char *name, size_t length, uint32_t ino,
		      uint32_t mode);
/* 1 when directory dir holds any entry besides "." and "..", 0, or -EIO. */
int ext2_dir_nonempty(struct ext2_node *dir);
/* Takes one link (a name in dir) away from child, as unlink does once its
 * entry is gone: a directory loses both its links and dir its "..". */
int ext2_drop_link(struct ext2_node *dir, struct ext2_node *child);
/* inode.c: the owner's 32-bit ids split over the inode's two halves. */
void ext2_set_owner(struct ext2_inode *inode, uint32_t uid, uint32_t gid);
uint32_t ext2_uid(const struct ext2_inode *inode);
uint32_t ext2_gid(const struct ext2_inode *inode);
int64_t ext2_readlink_locked(struct ext2_node *node, char *buffer, size_t size);

#endif
