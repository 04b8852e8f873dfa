/*
 * The ext2 suites, run against a disk the harness made with the host's
 * mke2fs and mounted at /disk.  `ext2w` writes a tree (files small and large
 * enough for single and double indirect blocks, nested directories, a
 * directory spanning several blocks, fast and slow symbolic links, permission
 * bits, a removed file and directory, a truncated file) and syncs; the host
 * then checks the image with e2fsck -fn and debugfs (tests/run.py), and
 * `ext2r`, in a second boot, reads everything back.  Both are skipped when
 * nothing is mounted at /disk.
 */
#include "console/console.h"
#include "ext2/internal.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "time/time.h"

#define TREE        EXT2_BOOT_MOUNT "/tree"
#define SMALL_TEXT  "hello from microScope\n"
#define BIG_BYTES   (300 * 1024 + 123)        /* direct and single indirect */
#define HUGE_BYTES  (4 * 1024 * 1024 + 77777) /* double indirect too */
#define MANY_FILES  300
#define LONG_TARGET "a/long/symbolic/link/target/that/does/not/fit/in/the/inode/itself/0123456789"
#define CUT_BYTES   5000

/* tests/run.py computes the same bytes for debugfs's dump. */
static uint8_t pattern_byte(uint64_t i)
{
	return (uint8_t)(i * 7 + i / 4096);
}

static bool ext2_mounted_here(struct ktest *t)
{
	struct vfs_file *file;
	if (vfs_open(EXT2_BOOT_MOUNT, VFS_O_RDONLY | VFS_O_DIRECTORY, 0, &file) == 0) {
		bool ext2 = file->node->ops == &ext2_dir_ops;
		vfs_close(file);
		if (ext2)
			return true;
	}
	ktest_skip(t, "no ext2 file system at " EXT2_BOOT_MOUNT);
	return false;
}

static int write_file(const char *path, const void *data, size_t length, uint32_t mode)
{
	struct vfs_file *file;
	int error = vfs_open(path, VFS_O_WRONLY | VFS_O_CREAT | VFS_O_TRUNC, mode, &file);
	if (error)
		return error;
	int64_t n = vfs_write(file, data, length);
	vfs_close(file);
	return n == (int64_t)length ? 0 : n < 0 ? (int)n : -EIO;
}

static int write_pattern(const char *path, size_t length)
{
	uint8_t *data = kmalloc(length);
	if (!data)
		return -ENOMEM;
	for (size_t i = 0; i < length; i++)
		data[i] = pattern_byte(i);
	int error = write_file(path, data, length, 0644);
	kfree(data);
	return error;
}

static void many_name(char *out, unsigned i)
{
	memcpy(out, TREE "/many/file-with-a-longer-name-",
	       sizeof(TREE "/many/file-with-a-longer-name-"));
	size_t at = strlen(out);
	out[at] = (char)('0' + i / 100);
	out[at + 1] = (char)('0' + i / 10 % 10);
	out[at + 2] = (char)('0' + i % 10);
	out[at + 3] = 0;
}

/* Hard links, renames (a file over another, a directory to another parent)
 * and an owner: e2fsck checks every count and "..", debugfs the names. */
static void write_links_and_renames(struct ktest *t)
{
	EXPECT_EQ(t, write_file(TREE "/orig.txt", "linked\n", 7, 0644), 0);
	EXPECT_EQ(t, vfs_link(TREE "/orig.txt", TREE "/sub/hardlink.txt"), 0);
	EXPECT_EQ(t, vfs_link(TREE "/orig.txt", TREE "/sub/hardlink.txt"), -EEXIST);
	EXPECT_EQ(t, vfs_link(TREE "/sub", TREE "/sublink"), -EPERM);
	EXPECT_EQ(t, vfs_link(TREE "/orig.txt", "/across"), -EXDEV);
	EXPECT_EQ(t, write_file(TREE "/from.txt", "moved\n", 6, 0644), 0);
	EXPECT_EQ(t, vfs_rename(TREE "/from.txt", TREE "/sub/deeper/renamed.txt"), 0);
	EXPECT_EQ(t, write_file(TREE "/replaced.txt", "old contents\n", 13, 0644), 0);
	EXPECT_EQ(t, write_file(TREE "/replacer.txt", "new\n", 4, 0644), 0);
	EXPECT_EQ(t, vfs_rename(TREE "/replacer.txt", TREE "/replaced.txt"), 0);
	EXPECT_EQ(t, vfs_mkdir(TREE "/movedir", 0755), 0);
	EXPECT_EQ(t, write_file(TREE "/movedir/inside.txt", "inside\n", 7, 0644), 0);
	EXPECT_EQ(t, vfs_rename(TREE "/movedir", TREE "/sub/movedir"), 0);
	EXPECT_EQ(t, vfs_mkdir(TREE "/emptydir", 0755), 0);
	EXPECT_EQ(t, vfs_mkdir(TREE "/overdir", 0755), 0);
	EXPECT_EQ(t, vfs_rename(TREE "/emptydir", TREE "/overdir"), 0); /* an empty one goes */
	EXPECT_EQ(t, vfs_rename(TREE "/sub", TREE "/sub/deeper/x"), -EINVAL);
	EXPECT_EQ(t, vfs_rename(TREE "/overdir", TREE "/many"), -ENOTEMPTY);
	EXPECT_EQ(t, vfs_rename(TREE "/many", TREE "/many"), 0); /* onto itself: nothing done */
	EXPECT_EQ(t, vfs_rename(TREE "/orig.txt", TREE "/sub"), -EISDIR);
	EXPECT_EQ(t, vfs_rename(TREE "/sub", TREE "/orig.txt"), -ENOTDIR);
	EXPECT_EQ(t, vfs_rename(TREE "/small.txt", "/across"), -EXDEV);
	EXPECT_EQ(t, vfs_rename(TREE "/orig.txt", TREE "/sub/hardlink.txt"), 0); /* same file */
	EXPECT_EQ(t, write_file(TREE "/owned.txt", "mine\n", 5, 0600), 0);
	EXPECT_EQ(t, vfs_chown(TREE "/owned.txt", 1000, 1001, true), 0);
	EXPECT_EQ(t, vfs_chmod(TREE "/owned.txt", 0604), 0);
}

static void write_tree(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	ASSERT_EQ(t, vfs_mkdir(TREE, 0755), 0);
	EXPECT_EQ(t, vfs_mkdir(TREE, 0755), -EEXIST);
	EXPECT_EQ(t, write_file(TREE "/small.txt", SMALL_TEXT, strlen(SMALL_TEXT), 0640), 0);
	EXPECT_EQ(t, write_pattern(TREE "/big.bin", BIG_BYTES), 0);
	EXPECT_EQ(t, write_pattern(TREE "/huge.bin", HUGE_BYTES), 0);
	EXPECT_EQ(t, vfs_mkdir(TREE "/sub", 0700), 0);
	EXPECT_EQ(t, vfs_mkdir(TREE "/sub/deeper", 0755), 0);
	EXPECT_EQ(t, write_file(TREE "/sub/deeper/file.txt", "deep\n", 5, 0600), 0);
	EXPECT_EQ(t, vfs_mkdir(TREE "/many", 0755), 0);
	char name[VFS_PATH_MAX];
	for (unsigned i = 0; i < MANY_FILES; i++) {
		many_name(name, i);
		EXPECT_EQ(t, write_file(name, name, strlen(name), 0644), 0);
	}
	EXPECT_EQ(t, vfs_symlink("small.txt", TREE "/link"), 0);
	EXPECT_EQ(t, vfs_symlink(LONG_TARGET, TREE "/longlink"), 0);
	EXPECT_EQ(t, vfs_symlink("again", TREE "/link"), -EEXIST);
	EXPECT_EQ(t, vfs_symlink("sub/deeper", TREE "/deeplink"), 0);
	write_links_and_renames(t);
	/* made and taken away again: nothing may be left of them */
	EXPECT_EQ(t, write_pattern(TREE "/gone.bin", 100000), 0);
	EXPECT_EQ(t, vfs_unlink(TREE "/gone.bin", false), 0);
	EXPECT_EQ(t, vfs_mkdir(TREE "/gonedir", 0755), 0);
	EXPECT_EQ(t, write_file(TREE "/gonedir/x", "x", 1, 0644), 0);
	EXPECT_EQ(t, vfs_unlink(TREE "/gonedir", true), -ENOTEMPTY);
	EXPECT_EQ(t, vfs_unlink(TREE "/gonedir/x", false), 0);
	EXPECT_EQ(t, vfs_unlink(TREE "/gonedir", true), 0);
	EXPECT_EQ(t, vfs_unlink(TREE "/sub", false), -EISDIR);
	/* cut from 300 KiB (indirect blocks) to under two blocks */
	EXPECT_EQ(t, write_pattern(TREE "/cut.bin", BIG_BYTES), 0);
	struct vfs_file *file;
	ASSERT_EQ(t, vfs_open(TREE "/cut.bin", VFS_O_WRONLY, 0, &file), 0);
	EXPECT_EQ(t, file->node->ops->truncate(file->node, CUT_BYTES), 0);
	vfs_close(file);
	EXPECT_EQ(t, ext2_sync_all(), 0);
}

static void expect_file(struct ktest *t, const char *path, const void *want, size_t length)
{
	struct vfs_file *file;
	if (!EXPECT_EQ(t, vfs_open(path, VFS_O_RDONLY, 0, &file), 0))
		return;
	uint8_t *data = kmalloc(length + 1);
	if (data) {
		EXPECT_EQ(t, vfs_read(file, data, length + 1), length);
		EXPECT_EQ(t, memcmp(data, want, length), 0);
		kfree(data);
	}
	vfs_close(file);
}

static void expect_pattern(struct ktest *t, const char *path, size_t length)
{
	uint8_t *want = kmalloc(length);
	if (!want)
		return;
	for (size_t i = 0; i < length; i++)
		want[i] = pattern_byte(i);
	expect_file(t, path, want, length);
	kfree(want);
}

static void expect_mode(struct ktest *t, const char *path, uint32_t mode)
{
	struct vfs_stat stat;
	if (EXPECT_EQ(t, vfs_stat(path, &stat), 0))
		EXPECT_EQ(t, stat.mode, mode);
}

static unsigned count_entries(const char *path)
{
	struct vfs_file *file;
	if (vfs_open(path, VFS_O_RDONLY | VFS_O_DIRECTORY, 0, &file))
		return 0;
	struct vfs_dirent entry;
	unsigned count = 0;
	while (vfs_readdir(file, &entry) > 0)
		count++;
	vfs_close(file);
	return count; /* with "." and ".." */
}

static void read_tree_back(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	expect_file(t, TREE "/small.txt", SMALL_TEXT, strlen(SMALL_TEXT));
	expect_mode(t, TREE "/small.txt", VFS_S_IFREG | 0640);
	expect_pattern(t, TREE "/big.bin", BIG_BYTES);
	expect_pattern(t, TREE "/huge.bin", HUGE_BYTES);
	expect_pattern(t, TREE "/cut.bin", CUT_BYTES);
	expect_mode(t, TREE "/sub", VFS_S_IFDIR | 0700);
	expect_file(t, TREE "/sub/deeper/file.txt", "deep\n", 5);
	expect_mode(t, TREE "/sub/deeper/file.txt", VFS_S_IFREG | 0600);
	char name[VFS_PATH_MAX];
	for (unsigned i = 0; i < MANY_FILES; i += 37) {
		many_name(name, i);
		expect_file(t, name, name, strlen(name));
	}
	EXPECT_EQ(t, count_entries(TREE "/many"), MANY_FILES + 2);
	char target[128];
	EXPECT_EQ(t, vfs_readlink(TREE "/link", target, sizeof(target)), strlen("small.txt"));
	EXPECT_EQ(t, memcmp(target, "small.txt", strlen("small.txt")), 0);
	EXPECT_EQ(t, vfs_readlink(TREE "/longlink", target, sizeof(target)), strlen(LONG_TARGET));
	EXPECT_EQ(t, memcmp(target, LONG_TARGET, strlen(LONG_TARGET)), 0);
	EXPECT_EQ(t, vfs_readlink(TREE "/small.txt", target, sizeof(target)), -EINVAL);
	/* paths through links */
	expect_file(t, TREE "/link", SMALL_TEXT, strlen(SMALL_TEXT));
	expect_file(t, TREE "/deeplink/file.txt", "deep\n", 5);
	struct vfs_stat stat;
	EXPECT_EQ(t, vfs_lstat(TREE "/link", &stat), 0);
	EXPECT_EQ(t, stat.mode, VFS_S_IFLNK | 0777);
	/* pread at an offset (mmap of a file reads the same way): the position stays */
	struct vfs_file *file;
	if (EXPECT_EQ(t, vfs_open(TREE "/huge.bin", VFS_O_RDONLY, 0, &file), 0)) {
		uint8_t bytes[16];
		EXPECT_EQ(t, vfs_pread(file, bytes, sizeof bytes, 3 * 1024 * 1024 + 5),
			  sizeof bytes);
		for (unsigned i = 0; i < sizeof bytes; i++)
			EXPECT_EQ(t, bytes[i], pattern_byte(3 * 1024 * 1024 + 5 + i));
		EXPECT_EQ(t, file->position, 0);
		EXPECT_EQ(t, vfs_pread(file, bytes, sizeof bytes, HUGE_BYTES), 0);
		vfs_close(file);
	}
	/* links and renames */
	expect_file(t, TREE "/orig.txt", "linked\n", 7);
	expect_file(t, TREE "/sub/hardlink.txt", "linked\n", 7);
	if (EXPECT_EQ(t, vfs_stat(TREE "/orig.txt", &stat), 0))
		EXPECT_EQ(t, stat.links, 2);
	expect_file(t, TREE "/sub/deeper/renamed.txt", "moved\n", 6);
	expect_file(t, TREE "/replaced.txt", "new\n", 4);
	expect_file(t, TREE "/sub/movedir/inside.txt", "inside\n", 7);
	expect_file(t, TREE "/sub/movedir/../hardlink.txt", "linked\n", 7);
	EXPECT_EQ(t, vfs_stat(TREE "/from.txt", &stat), -ENOENT);
	EXPECT_EQ(t, vfs_stat(TREE "/replacer.txt", &stat), -ENOENT);
	EXPECT_EQ(t, vfs_stat(TREE "/movedir", &stat), -ENOENT);
	EXPECT_EQ(t, vfs_stat(TREE "/emptydir", &stat), -ENOENT);
	if (EXPECT_EQ(t, vfs_stat(TREE "/owned.txt", &stat), 0)) {
		EXPECT_EQ(t, stat.uid, 1000);
		EXPECT_EQ(t, stat.gid, 1001);
		EXPECT_EQ(t, stat.mode, VFS_S_IFREG | 0604);
	}
	EXPECT_EQ(t, vfs_stat(TREE "/gone.bin", &stat), -ENOENT);
	EXPECT_EQ(t, vfs_stat(TREE "/gonedir", &stat), -ENOENT);
	/* the file mke2fs -d put there */
	EXPECT_EQ(t, vfs_stat(EXT2_BOOT_MOUNT "/README", &stat), 0);
}

static void bad_names_are_refused(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	char long_name[300];
	memset(long_name, 'n', sizeof(long_name));
	long_name[sizeof(long_name) - 1] = 0;
	char path[sizeof(long_name) + 8] = EXT2_BOOT_MOUNT "/";
	strlcpy(path + strlen(path), long_name, sizeof(path) - strlen(path));
	EXPECT_EQ(t, vfs_symlink("x", path), -ENAMETOOLONG);
	EXPECT_EQ(t, vfs_symlink("", EXT2_BOOT_MOUNT "/empty-target"), -ENOENT);
	EXPECT_EQ(t, vfs_symlink("y", "/dev/x"), -ENOTSUP); /* devfs makes no names */
	EXPECT_EQ(t, vfs_readlink(EXT2_BOOT_MOUNT "/no-such-link", long_name, 10), -ENOENT);
	/* a loop of links ends in -ELOOP, not a hang */
	EXPECT_EQ(t, vfs_symlink("loop-b", EXT2_BOOT_MOUNT "/loop-a"), 0);
	EXPECT_EQ(t, vfs_symlink("loop-a", EXT2_BOOT_MOUNT "/loop-b"), 0);
	struct vfs_stat stat;
	EXPECT_EQ(t, vfs_stat(EXT2_BOOT_MOUNT "/loop-a", &stat), -ELOOP);
	EXPECT_EQ(t, vfs_unlink(EXT2_BOOT_MOUNT "/loop-a", false), 0);
	EXPECT_EQ(t, vfs_unlink(EXT2_BOOT_MOUNT "/loop-b", false), 0);
	EXPECT_EQ(t, ext2_sync_node(NULL), -EINVAL);
}

/* A shared mapping's page survives a truncate that takes it out of the file:
 * its unmap releases that page, not the one that holds the index since (a
 * write after the truncate), which a second mapping still holds and which
 * must not be evicted. */
static void unmap_after_truncate_releases_the_mapped_page(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/mapped-truncated";
	struct vfs_file *file;
	ASSERT_EQ(t, write_pattern(path, PAGE_SIZE), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDWR, 0, &file), 0);
	struct vfs_node *node = file->node;
	struct pcache_mapping *mapping = &((struct ext2_node *)node->private)->mapping;
	uint8_t *page = kmalloc(PAGE_SIZE);
	uint64_t first = 0, second = 0;
	ASSERT_TRUE(t, page != NULL);
	memset(page, 0xa5, PAGE_SIZE);
	ASSERT_EQ(t, node->ops->map_page(node, 0, true, &first), 0);
	EXPECT_EQ(t, vfs_truncate_file(file, 0), 0);
	EXPECT_EQ(t, vfs_pwrite(file, page, PAGE_SIZE, 0), PAGE_SIZE);
	ASSERT_EQ(t, node->ops->map_page(node, 0, true, &second), 0);
	EXPECT_TRUE(t, second != first);
	node->ops->unmap_page(node, 0, true, first);
	pcache_shrink(0); /* evicts whatever nobody holds */
	struct pcache_page *held;
	if (EXPECT_EQ(t, pcache_find_frame(mapping, 0, phys_to_virt(second), &held), 0)) {
		EXPECT_EQ(t, held->data[PAGE_SIZE - 1], 0xa5);
		pcache_put(held);
	}
	node->ops->unmap_page(node, 0, true, second);
	kfree(page);
	vfs_close(file);
	EXPECT_EQ(t, vfs_unlink(path, false), 0);
}

/* The host's /xlink is a fast link to "A" with an extended-attribute block
 * (tests/run.py): its target is the inode's text, not a block (read as a
 * pointer, 'A' is a block of the inode table), and removing it frees the
 * attribute block and nothing else; e2fsck checks the image after the run. */
static void fast_link_with_xattr_block(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	char target[8];
	struct vfs_stat stat;
	if (vfs_lstat(EXT2_BOOT_MOUNT "/xlink", &stat)) {
		ktest_skip(t, "no /xlink on this disk");
		return;
	}
	EXPECT_EQ(t, vfs_readlink(EXT2_BOOT_MOUNT "/xlink", target, sizeof target), 1);
	EXPECT_EQ(t, target[0], 'A');
	EXPECT_EQ(t, vfs_unlink(EXT2_BOOT_MOUNT "/xlink", false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
}

/* The group's first descriptor (ext2_lock held). */
static struct ext2_group_desc first_group(struct ext2_fs *fs)
{
	struct ext2_group_desc desc = {0};
	struct pcache_page *page;
	if (ext2_meta_get(fs, fs->first_data_block + 1, PCACHE_READ, &page) == 0) {
		memcpy(&desc, page->data, sizeof desc);
		pcache_put(page);
	}
	return desc;
}

static bool bitmap_bit(struct ext2_fs *fs, uint32_t bitmap, uint32_t bit, bool clear)
{
	struct pcache_page *page;
	if (ext2_meta_get(fs, bitmap, PCACHE_READ, &page))
		return false;
	bool set = page->data[bit / 8] & (1u << (bit % 8));
	if (clear)
		page->data[bit / 8] &= (uint8_t) ~(1u << (bit % 8));
	pcache_put(page);
	return set;
}

/* Blocks of the file system's own structures are never freed (a corrupt
 * pointer naming one is -EIO) nor handed out (a bitmap that lost the bit
 * of one: the allocation is -EIO and the bit is set again). */
static void metadata_blocks_are_never_freed_or_allocated(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	struct vfs_file *file;
	ASSERT_EQ(t, vfs_open(EXT2_BOOT_MOUNT, VFS_O_RDONLY | VFS_O_DIRECTORY, 0, &file), 0);
	struct ext2_fs *fs = ((struct ext2_node *)file->node->private)->fs;
	mutex_lock(&ext2_lock);
	struct ext2_group_desc desc = first_group(fs);
	uint32_t table_end = desc.inode_table + fs->inode_table_blocks;
	EXPECT_EQ(t, ext2_free_block(fs, 0), -EIO);
	EXPECT_EQ(t, ext2_free_block(fs, fs->first_data_block + 1), -EIO);
	EXPECT_EQ(t, ext2_free_block(fs, desc.block_bitmap), -EIO);
	EXPECT_EQ(t, ext2_free_block(fs, desc.inode_bitmap), -EIO);
	EXPECT_EQ(t, ext2_free_block(fs, desc.inode_table), -EIO);
	EXPECT_EQ(t, ext2_free_block(fs, table_end - 1), -EIO);
	EXPECT_EQ(t, ext2_free_block(fs, fs->blocks_count), -EIO);
	EXPECT_TRUE(t, bitmap_bit(fs, desc.block_bitmap, desc.inode_table, false));
	EXPECT_EQ(t, first_group(fs).free_blocks_count, desc.free_blocks_count);
	bitmap_bit(fs, desc.block_bitmap, desc.inode_table, true);
	uint32_t block = 0;
	EXPECT_EQ(t, ext2_alloc_block(fs, &block), -EIO);
	EXPECT_EQ(t, block, 0);
	EXPECT_TRUE(t, bitmap_bit(fs, desc.block_bitmap, desc.inode_table, false));
	EXPECT_EQ(t, first_group(fs).free_blocks_count, desc.free_blocks_count);
	mutex_unlock(&ext2_lock);
	vfs_close(file);
}

/* The link name's and the file name's in-memory inodes under the mount's
 * root (ext2_lock held); references for the caller to put. */
static int find_two(struct ext2_node *root, const char *link, const char *file,
		    struct ext2_node **link_node, struct ext2_node **file_node)
{
	uint32_t link_ino, file_ino;
	int error = ext2_dir_find(root, link, strlen(link), &link_ino);
	if (!error)
		error = ext2_dir_find(root, file, strlen(file), &file_ino);
	if (!error)
		error = ext2_iget(root->fs, link_ino, link_node);
	if (!error && (error = ext2_iget(root->fs, file_ino, file_node)))
		vfs_node_put(&(*link_node)->vnode);
	return error;
}

/* A symbolic link with no block counted is a fast link whatever its size
 * says (Linux's rule): a corrupt size (here 100) never has its target's
 * text read as block pointers (here naming another file's block), neither
 * by readlink, which would show that file, nor by the removal, which would
 * free its block; the target read stops at the inode's 59 bytes. */
static void fast_link_of_a_corrupt_size_stays_fast(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *victim = EXT2_BOOT_MOUNT "/link-victim", *link = EXT2_BOOT_MOUNT "/sizelink";
	struct vfs_file *dir;
	ASSERT_EQ(t, write_file(victim, "victim\n", 7, 0644), 0);
	ASSERT_EQ(t, vfs_symlink("short", link), 0);
	ASSERT_EQ(t, vfs_open(EXT2_BOOT_MOUNT, VFS_O_RDONLY | VFS_O_DIRECTORY, 0, &dir), 0);
	struct ext2_node *root = dir->node->private, *link_node, *file_node;
	struct ext2_fs *fs = root->fs;
	uint32_t block = 0;
	mutex_lock(&ext2_lock);
	int error = find_two(root, "sizelink", "link-victim", &link_node, &file_node);
	if (!error) {
		block = file_node->disk.block[0];
		link_node->disk.block[0] = block; /* the target's first bytes, as a pointer */
		ext2_set_size(link_node, 100);
		error = ext2_write_inode(link_node);
		vfs_node_put(&link_node->vnode);
		vfs_node_put(&file_node->vnode);
	}
	mutex_unlock(&ext2_lock);
	EXPECT_EQ(t, error, 0);
	char target[128];
	EXPECT_EQ(t, vfs_readlink(link, target, sizeof target), EXT2_FAST_LINK_MAX);
	EXPECT_EQ(t, vfs_unlink(link, false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
	mutex_lock(&ext2_lock);
	EXPECT_TRUE(t, block && bitmap_bit(fs, first_group(fs).block_bitmap,
					   block - fs->first_data_block, false));
	mutex_unlock(&ext2_lock);
	expect_file(t, victim, "victim\n", 7);
	vfs_close(dir);
	EXPECT_EQ(t, vfs_unlink(victim, false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
}

/* A copy of the disk block's cached page (ext2_lock held). */
static bool copy_meta_block(struct ext2_fs *fs, uint32_t block, uint8_t *out)
{
	struct pcache_page *page;
	if (ext2_meta_get(fs, block, PCACHE_READ, &page))
		return false;
	memcpy(out, page->data, EXT2_BLOCK_SIZE);
	pcache_put(page);
	return true;
}

/* A block pointer of a corrupt inode that names a block of the file
 * system's own structures (here the last block of the first group's inode
 * table) is -EIO: the file's reads do not show it, its writes do not
 * overwrite it, neither as a data block nor as an indirect one, and
 * truncation does not read it as pointers to free. */
static void pointers_into_metadata_are_refused(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/badpointer";
	uint8_t *data = kzalloc(PAGE_SIZE), *before = kmalloc(PAGE_SIZE),
		*after = kmalloc(PAGE_SIZE);
	struct vfs_file *file;
	ASSERT_TRUE(t, data && before && after);
	ASSERT_EQ(t, write_file(path, data, PAGE_SIZE, 0644), 0);
	ASSERT_EQ(t, ext2_sync_all(), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDWR, 0, &file), 0);
	struct ext2_node *node = file->node->private;
	struct ext2_fs *fs = node->fs;
	mutex_lock(&ext2_lock);
	uint32_t table_block = first_group(fs).inode_table + fs->inode_table_blocks - 1;
	uint32_t saved = node->disk.block[0];
	node->disk.block[0] = table_block;
	node->disk.block[EXT2_IND_BLOCK] = table_block;
	pcache_forget(&node->mapping, 0);
	EXPECT_TRUE(t, copy_meta_block(fs, table_block, before));
	mutex_unlock(&ext2_lock);
	memset(data, 0xa5, PAGE_SIZE);
	EXPECT_EQ(t, vfs_pread_to(file, data, PAGE_SIZE, 0, VFS_KERNEL_BUFFER), -EIO);
	EXPECT_EQ(t, vfs_pwrite(file, data, PAGE_SIZE, 0), -EIO);
	EXPECT_EQ(t, vfs_pwrite(file, data, 1, EXT2_NDIR_BLOCKS * PAGE_SIZE), -EIO);
	mutex_lock(&ext2_lock);
	node->disk.block[0] = saved;
	pcache_forget(&node->mapping, 0);
	mutex_unlock(&ext2_lock);
	EXPECT_EQ(t, vfs_truncate_file(file, 0), 0);
	mutex_lock(&ext2_lock);
	EXPECT_TRUE(t, copy_meta_block(fs, table_block, after));
	EXPECT_TRUE(t, memcmp(before, after, PAGE_SIZE) == 0);
	EXPECT_EQ(t, node->disk.block[EXT2_IND_BLOCK], table_block);
	node->disk.block[EXT2_IND_BLOCK] = 0; /* what e2fsck would clear */
	EXPECT_EQ(t, node->disk.blocks, 0);
	EXPECT_EQ(t, ext2_write_inode(node), 0);
	mutex_unlock(&ext2_lock);
	vfs_close(file);
	EXPECT_EQ(t, vfs_unlink(path, false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
	kfree(data);
	kfree(before);
	kfree(after);
}

/* Whether inode ino is on fs's live list (ext2_lock held). */
static bool inode_in_memory(struct ext2_fs *fs, uint32_t ino)
{
	for (const struct ext2_node *node = fs->live; node; node = node->next_live)
		if (node->ino == ino)
			return true;
	return false;
}

/* An inode bitmap that lost the bit of an inode in use: the allocation is
 * -EIO (the bit is set again), never a second file on the first's inode. */
static void inodes_in_use_are_never_allocated(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *kept = EXT2_BOOT_MOUNT "/inode-kept", *other = EXT2_BOOT_MOUNT "/inode-other";
	ASSERT_EQ(t, write_file(kept, "kept\n", 5, 0644), 0);
	struct vfs_file *file;
	ASSERT_EQ(t, vfs_open(kept, VFS_O_RDONLY, 0, &file), 0);
	struct ext2_node *node = file->node->private;
	struct ext2_fs *fs = node->fs;
	uint32_t ino = node->ino;
	vfs_close(file);
	ASSERT_TRUE(t, (ino - 1) / fs->inodes_per_group == 0); /* the first group's bitmap */
	mutex_lock(&ext2_lock);
	uint32_t bitmap = first_group(fs).inode_bitmap;
	EXPECT_TRUE(t, bitmap_bit(fs, bitmap, ino - 1, true));
	mutex_unlock(&ext2_lock);
	EXPECT_EQ(t, write_file(other, "other\n", 6, 0644), -EIO);
	mutex_lock(&ext2_lock);
	EXPECT_TRUE(t, bitmap_bit(fs, bitmap, ino - 1, false));
	mutex_unlock(&ext2_lock);
	expect_file(t, kept, "kept\n", 5);
	EXPECT_EQ(t, ext2_sync_all(), 0); /* dropped: the disk's inode is looked at too */
	mutex_lock(&ext2_lock);
	bool in_memory = inode_in_memory(fs, ino);
	bitmap_bit(fs, bitmap, ino - 1, true);
	mutex_unlock(&ext2_lock);
	EXPECT_FALSE(t, in_memory); /* else the check below is the in-memory one again */
	EXPECT_EQ(t, write_file(other, "other\n", 6, 0644), -EIO);
	expect_file(t, kept, "kept\n", 5);
	EXPECT_EQ(t, write_file(other, "other\n", 6, 0644), 0); /* the next inode */
	expect_file(t, other, "other\n", 6);
	EXPECT_EQ(t, vfs_unlink(kept, false), 0);
	EXPECT_EQ(t, vfs_unlink(other, false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
}

static bool waits_for_ext2_lock(const struct thread *thread)
{
	const char *channel = thread_wait_channel(thread);
	return channel && strcmp(channel, ext2_lock.name) == 0;
}

#define RECORD_BYTES 100

static int append_record(void *arg)
{
	struct vfs_file *file = arg;
	char record[RECORD_BYTES];
	memset(record, file->flags & VFS_O_RDWR ? 'b' : 'a', sizeof record);
	return vfs_write(file, record, sizeof record) == sizeof record ? 0 : -EIO;
}

/* Two O_APPEND opens of one file, each written by its own thread while both
 * wait for ext2_lock: both records land, one after the other, and each
 * file's position is the end of its own record. */
static void appends_through_separate_opens_both_land(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/appended.txt";
	struct vfs_file *a, *b;
	ASSERT_EQ(t, write_file(path, "", 0, 0644), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_WRONLY | VFS_O_APPEND, 0, &a), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDWR | VFS_O_APPEND, 0, &b), 0);
	mutex_lock(&ext2_lock);
	struct thread *first = thread_create(append_record, a, "appender", SCHED_PRIORITY_NORMAL);
	struct thread *second = thread_create(append_record, b, "appender", SCHED_PRIORITY_NORMAL);
	/* both appenders at the lock (another thread, writeback say, may wait
	 * there too); the bound only guards against a hang */
	bool both_wait = false;
	for (int i = 0; i < 10000 && !both_wait; i++) {
		sched_sleep_ns(NSEC_PER_MSEC);
		both_wait =
		    first && second && waits_for_ext2_lock(first) && waits_for_ext2_lock(second);
	}
	EXPECT_TRUE(t, both_wait);
	mutex_unlock(&ext2_lock);
	int status = -1;
	if (EXPECT_TRUE(t, first && second)) {
		EXPECT_EQ(t, thread_join(first, &status), 0);
		EXPECT_EQ(t, status, 0);
		EXPECT_EQ(t, thread_join(second, &status), 0);
		EXPECT_EQ(t, status, 0);
	}
	EXPECT_EQ(t, a->node->size, 2 * RECORD_BYTES);
	EXPECT_TRUE(t, a->position + b->position == 3 * RECORD_BYTES);
	char bytes[2 * RECORD_BYTES];
	EXPECT_EQ(t, vfs_pread(b, bytes, sizeof bytes, 0), sizeof bytes);
	EXPECT_TRUE(t, bytes[0] != bytes[RECORD_BYTES]);
	vfs_close(a);
	vfs_close(b);
	EXPECT_EQ(t, vfs_unlink(path, false), 0);
}

/* Stores through a shared mapping into the last page, past the end of the
 * file. */
static void store_past_the_end(struct ktest *t, struct vfs_node *node)
{
	uint64_t phys, size = node->size;
	ASSERT_EQ(t, node->ops->map_page(node, size / PAGE_SIZE, true, &phys), 0);
	memset((uint8_t *)phys_to_virt(phys) + size % PAGE_SIZE, 'X', PAGE_SIZE - size % PAGE_SIZE);
	node->ops->unmap_page(node, size / PAGE_SIZE, true, phys);
}

static void expect_zeros(struct ktest *t, struct vfs_file *file, uint64_t from, uint64_t to)
{
	uint8_t bytes[64];
	for (uint64_t at = from; at < to; at += sizeof bytes) {
		size_t n = to - at < sizeof bytes ? (size_t)(to - at) : sizeof bytes;
		EXPECT_EQ(t, vfs_pread(file, bytes, n, at), n);
		for (size_t i = 0; i < n; i++)
			if (bytes[i]) {
				EXPECT_EQ(t, bytes[i], 0);
				return;
			}
	}
}

/* What a shared mapping stored past the end of a file never becomes part of
 * it: a truncation up and a write past the end both read zeros there. */
static void stores_past_the_end_stay_out_of_the_file(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/grown.txt";
	struct vfs_file *file;
	ASSERT_EQ(t, write_file(path, "0123456789", 10, 0644), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDWR, 0, &file), 0);
	store_past_the_end(t, file->node);
	EXPECT_EQ(t, vfs_truncate_file(file, 2000), 0);
	expect_zeros(t, file, 10, 2000);
	store_past_the_end(t, file->node);
	EXPECT_EQ(t, vfs_pwrite(file, "y", 1, 3000), 1);
	expect_zeros(t, file, 2000, 3000);
	EXPECT_EQ(t, file->node->size, 3001);
	vfs_close(file);
	EXPECT_EQ(t, ext2_sync_all(), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDONLY, 0, &file), 0);
	pcache_shrink(0); /* read from the disk again */
	expect_zeros(t, file, 10, 3000);
	vfs_close(file);
	EXPECT_EQ(t, vfs_unlink(path, false), 0);
}

/* Sets the on-disk size of inode ino, bypassing the in-memory inode
 * (ext2_lock held). */
static int set_disk_size(struct ext2_fs *fs, uint32_t ino, uint32_t size)
{
	struct ext2_node *scratch = kzalloc(sizeof *scratch);
	if (!scratch)
		return -ENOMEM;
	scratch->fs = fs;
	scratch->ino = ino;
	int error = ext2_read_inode(fs, ino, &scratch->disk);
	scratch->disk.size = size;
	if (!error)
		error = ext2_write_inode(scratch);
	kfree(scratch);
	return error;
}

/* A directory whose size is not a whole number of blocks is corrupt: it
 * is refused (-EIO), never read or added to at an offset inside a block. */
static void directory_of_a_partial_block_is_refused(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/oddsize";
	struct vfs_file *file;
	ASSERT_EQ(t, vfs_mkdir(path, 0755), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDONLY | VFS_O_DIRECTORY, 0, &file), 0);
	struct ext2_node *node = file->node->private;
	struct ext2_fs *fs = node->fs;
	uint32_t ino = node->ino;
	vfs_close(file);
	EXPECT_EQ(t, ext2_sync_all(), 0); /* nobody holds it: dropped */
	mutex_lock(&ext2_lock);
	EXPECT_EQ(t, set_disk_size(fs, ino, 1000), 0);
	mutex_unlock(&ext2_lock);
	EXPECT_EQ(t, vfs_open(path, VFS_O_RDONLY | VFS_O_DIRECTORY, 0, &file), -EIO);
	EXPECT_EQ(t, vfs_mkdir(EXT2_BOOT_MOUNT "/oddsize/inside", 0755), -EIO);
	EXPECT_EQ(t, ext2_sync_all(), 0);
	mutex_lock(&ext2_lock);
	EXPECT_EQ(t, set_disk_size(fs, ino, EXT2_BLOCK_SIZE), 0);
	mutex_unlock(&ext2_lock);
	EXPECT_EQ(t, vfs_unlink(path, true), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
}

/* The superblock's free block count (ext2_lock held). */
static uint32_t free_blocks(struct ext2_fs *fs)
{
	uint32_t count = 0;
	struct pcache_page *page;
	if (pcache_get(&fs->meta, 0, PCACHE_READ, &page) == 0) {
		count = ((struct ext2_super *)(page->data + 1024))->free_blocks_count;
		pcache_put(page);
	}
	return count;
}

/* The block behind page index of node, 0 for a hole (ext2_lock taken). */
static uint32_t block_of(struct ext2_node *node, uint64_t index)
{
	uint32_t block = 0;
	bool fresh;
	mutex_lock(&ext2_lock);
	ext2_bmap(node, index, false, &block, &fresh);
	mutex_unlock(&ext2_lock);
	return block;
}

#define HOLE_PAGE     (EXT2_NDIR_BLOCKS + 1) /* behind the single indirect block */
#define PAST_THE_HOLE (EXT2_NDIR_BLOCKS + 3)

/* When the page of a block just allocated cannot be had (no frame left),
 * the block leaves the file again and is free: a write past the end, a
 * write into a hole, a writable mapping of a hole.  Kept, it would show
 * what a deleted file left there to a later partial write or read. */
static void failed_page_fetch_gives_the_fresh_block_back(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/nomem.bin";
	struct vfs_file *file;
	ASSERT_EQ(t, write_file(path, "", 0, 0644), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDWR, 0, &file), 0);
	struct ext2_node *node = file->node->private;
	struct ext2_fs *fs = node->fs; /* node is freed with the file */
	mutex_lock(&ext2_lock);
	uint32_t free_before = free_blocks(fs);
	mutex_unlock(&ext2_lock);
	ext2_test_failing_page_fetches = 1;
	EXPECT_EQ(t, vfs_pwrite(file, "x", 1, 2 * PAGE_SIZE + 10), -ENOMEM);
	EXPECT_EQ(t, block_of(node, 2), 0);
	EXPECT_EQ(t, node->disk.blocks, 0);
	EXPECT_EQ(t, file->node->size, 0);
	EXPECT_EQ(t, vfs_pwrite(file, "y", 1, PAST_THE_HOLE * PAGE_SIZE), 1);
	uint32_t blocks = node->disk.blocks;
	ext2_test_failing_page_fetches = 1;
	EXPECT_EQ(t, vfs_pwrite(file, "z", 1, HOLE_PAGE * PAGE_SIZE + 10), -ENOMEM);
	EXPECT_EQ(t, block_of(node, HOLE_PAGE), 0);
	EXPECT_EQ(t, node->disk.blocks, blocks);
	uint64_t phys;
	ext2_test_failing_page_fetches = 1;
	EXPECT_EQ(t, file->node->ops->map_page(file->node, HOLE_PAGE, true, &phys), -ENOMEM);
	EXPECT_EQ(t, block_of(node, HOLE_PAGE), 0);
	EXPECT_EQ(t, node->disk.blocks, blocks);
	ext2_test_failing_page_fetches = 0;
	expect_zeros(t, file, 0, PAST_THE_HOLE * PAGE_SIZE);
	vfs_close(file);
	EXPECT_EQ(t, vfs_unlink(path, false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
	mutex_lock(&ext2_lock);
	EXPECT_EQ(t, free_blocks(fs), free_before);
	mutex_unlock(&ext2_lock);
}

/* Writes pointers to itself over block, on the disk, and frees it again
 * (ext2_lock held): the block the next allocation takes then holds what a
 * freed indirect block left, pointers a reader would follow. */
static bool leave_stale_pointers(struct ext2_fs *fs, uint32_t *block)
{
	uint32_t *slots = kmalloc(EXT2_BLOCK_SIZE);
	bool written = slots && ext2_alloc_block(fs, block) == 0;
	for (uint32_t i = 0; written && i < EXT2_PTRS; i++)
		slots[i] = *block;
	uint64_t sector = (uint64_t)*block * EXT2_SECTORS_PER_BLOCK;
	written =
	    written && block_rw(fs->disk, BLOCK_WRITE, sector, EXT2_SECTORS_PER_BLOCK, slots) == 0;
	written = written && ext2_free_block(fs, *block) == 0;
	kfree(slots);
	return written;
}

/* A new indirect block that cannot be zeroed (no frame) is never linked into
 * the file: the write fails, the block is free again, nothing names it, and
 * the hole it was for still reads as zeros (not the stale pointers the block
 * held).  The next write links it zeroed, on the disk too.  The host's
 * e2fsck -fn checks the image afterwards. */
static void failed_zeroing_links_no_indirect_block(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/unzeroed.bin";
	const uint64_t size = (EXT2_NDIR_BLOCKS + 2) * PAGE_SIZE;
	struct vfs_file *file;
	ASSERT_EQ(t, write_file(path, "", 0, 0644), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDWR, 0, &file), 0);
	ASSERT_EQ(t, vfs_truncate_file(file, size), 0); /* a hole past the direct blocks */
	struct ext2_node *node = file->node->private;
	struct ext2_fs *fs = node->fs;
	uint32_t stale;
	mutex_lock(&ext2_lock);
	bool left = leave_stale_pointers(fs, &stale);
	uint32_t free_before = free_blocks(fs);
	mutex_unlock(&ext2_lock);
	ASSERT_TRUE(t, left);
	ext2_test_failing_block_zeroings = 1;
	EXPECT_EQ(t, vfs_pwrite(file, "x", 1, EXT2_NDIR_BLOCKS * PAGE_SIZE), -ENOMEM);
	EXPECT_EQ(t, ext2_test_failing_block_zeroings, 0); /* the failure was met */
	ext2_test_failing_block_zeroings = 0;
	EXPECT_EQ(t, node->disk.block[EXT2_IND_BLOCK], 0);
	EXPECT_EQ(t, node->disk.blocks, 0);
	mutex_lock(&ext2_lock);
	EXPECT_EQ(t, free_blocks(fs), free_before);
	mutex_unlock(&ext2_lock);
	expect_zeros(t, file, 0, size);
	EXPECT_EQ(t, vfs_pwrite(file, "y", 1, EXT2_NDIR_BLOCKS * PAGE_SIZE), 1);
	EXPECT_EQ(t, node->disk.block[EXT2_IND_BLOCK], stale); /* taken again, zeroed */
	EXPECT_EQ(t, ext2_sync_all(), 0);
	pcache_shrink(0); /* read from the disk again */
	expect_zeros(t, file, (EXT2_NDIR_BLOCKS + 1) * PAGE_SIZE, size);
	vfs_close(file);
	EXPECT_EQ(t, vfs_unlink(path, false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
}

/* A page fill stopped at a gate (its page busy) while the test holds
 * ext2_lock, as a truncation or sync does before it waits for the page. */
struct fill_race {
	struct ext2_node *node;
	struct thread *filler;
	struct completion go;
	bool in_fill, filled;
	int status;
};
static struct fill_race *fill_race;

static void gate_in_fill(struct ext2_node *node, uint64_t index)
{
	struct fill_race *race = fill_race;
	if (!race || node != race->node || index != 0)
		return;
	__atomic_store_n(&race->in_fill, true, __ATOMIC_RELEASE);
	completion_wait(&race->go);
}

/* A page-cache user that gets page 0 without ext2_lock (storage_bench did). */
static int fill_without_the_lock(void *arg)
{
	struct fill_race *race = arg;
	struct pcache_page *page;
	race->status = pcache_get(&race->node->mapping, 0, PCACHE_READ, &page);
	if (race->status == 0)
		pcache_put(page);
	__atomic_store_n(&race->filled, true, __ATOMIC_RELEASE);
	return 0;
}

static bool fill_at_gate(void *arg)
{
	return __atomic_load_n(&((struct fill_race *)arg)->in_fill, __ATOMIC_ACQUIRE);
}

/* The fill ended, or it waits for ext2_lock with its page busy: whoever
 * holds the lock and waits for the page (pcache_forget, pcache_sync) would
 * never wake. */
static bool fill_ended_or_waits_for_the_lock(void *arg)
{
	struct fill_race *race = arg;
	return __atomic_load_n(&race->filled, __ATOMIC_ACQUIRE) ||
	       waits_for_ext2_lock(race->filler);
}

#define FILL_GUARD_NS (10000 * NSEC_PER_MSEC) /* a hang guard only */

/* Lock order: ext2_lock, then a busy page.  A fill of a file's page that
 * comes without ext2_lock (another page-cache user) never waits for it: it
 * answers -EAGAIN while the lock is held, so the holder's forget of that
 * page (a truncation) goes on, and the page is read afresh later. */
static void fill_in_flight_never_waits_for_ext2_lock(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/filled.txt";
	struct vfs_file *file;
	ASSERT_EQ(t, write_file(path, "filled\n", 7, 0644), 0);
	ASSERT_EQ(t, ext2_sync_all(), 0); /* on the disk: the page may be forgotten */
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDONLY, 0, &file), 0);
	struct ext2_node *node = file->node->private;
	static struct fill_race race;
	race = (struct fill_race){.node = node};
	completion_init(&race.go, "ext2.test.gate");
	fill_race = &race;
	ext2_test_page_fill_hook = gate_in_fill;
	/* Held from before the fill starts: no write-back takes the lock and
	 * waits for the gated page. */
	mutex_lock(&ext2_lock);
	pcache_forget(&node->mapping, 0); /* page 0 must be filled again */
	race.filler = thread_create(fill_without_the_lock, &race, "filler", SCHED_PRIORITY_NORMAL);
	if (!EXPECT_TRUE(t, race.filler != NULL)) {
		mutex_unlock(&ext2_lock);
		ext2_test_page_fill_hook = NULL;
		vfs_close(file);
		return;
	}
	EXPECT_TRUE(t, ktest_spin_until(fill_at_gate, &race, FILL_GUARD_NS));
	completion_signal(&race.go);
	EXPECT_TRUE(t, ktest_spin_until(fill_ended_or_waits_for_the_lock, &race, FILL_GUARD_NS));
	bool ended = __atomic_load_n(&race.filled, __ATOMIC_ACQUIRE);
	EXPECT_TRUE(t, ended); /* else: it waits for ext2_lock, its page busy */
	if (ended)
		pcache_forget(&node->mapping, 0); /* a truncation's: returns */
	mutex_unlock(&ext2_lock);
	thread_join(race.filler, NULL);
	ext2_test_page_fill_hook = NULL;
	fill_race = NULL;
	EXPECT_EQ(t, race.status, -EAGAIN);
	expect_file(t, path, "filled\n", 7); /* read afresh, under the lock */
	vfs_close(file);
	EXPECT_EQ(t, vfs_unlink(path, false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
}

/* The blocks mke2fs reserved (5 %) are root's: another user's write stops
 * with -ENOSPC where only they are left; root, and the reserved uid, go on.
 * The reserve is moved to two blocks below what is free, so two pages fit. */
static void reserved_blocks_are_for_root(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/reserve.bin";
	struct vfs_file *file;
	ASSERT_EQ(t, write_file(path, "", 0, 0644), 0);
	ASSERT_EQ(t, vfs_open(path, VFS_O_RDWR, 0, &file), 0);
	struct ext2_fs *fs = ((struct ext2_node *)file->node->private)->fs;
	uint32_t reserved = fs->reserved_blocks, reserved_uid = fs->reserved_uid;
	EXPECT_TRUE(t, reserved > 0); /* mke2fs's default, read at mount */
	static uint8_t pages[3 * PAGE_SIZE];
	mutex_lock(&ext2_lock);
	fs->reserved_blocks = free_blocks(fs) - 2;
	mutex_unlock(&ext2_lock);
	ext2_test_caller_ids = 1000;
	EXPECT_EQ(t, vfs_pwrite(file, pages, sizeof pages, 0), 2 * PAGE_SIZE);
	EXPECT_EQ(t, vfs_pwrite(file, pages, PAGE_SIZE, 2 * PAGE_SIZE), -ENOSPC);
	fs->reserved_uid = 1000;
	EXPECT_EQ(t, vfs_pwrite(file, pages, PAGE_SIZE, 2 * PAGE_SIZE), PAGE_SIZE);
	fs->reserved_uid = reserved_uid;
	ext2_test_caller_ids = EXT2_OWN_IDS; /* a kernel thread: root */
	EXPECT_EQ(t, vfs_pwrite(file, pages, PAGE_SIZE, 3 * PAGE_SIZE), PAGE_SIZE);
	fs->reserved_blocks = reserved;
	vfs_close(file);
	EXPECT_EQ(t, vfs_unlink(path, false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
}

KTEST_SUITE(ext2w, KTEST_CASE(write_tree), KTEST_CASE(bad_names_are_refused),
	    KTEST_CASE(unmap_after_truncate_releases_the_mapped_page),
	    KTEST_CASE(fast_link_with_xattr_block),
	    KTEST_CASE(metadata_blocks_are_never_freed_or_allocated),
	    KTEST_CASE(pointers_into_metadata_are_refused),
	    KTEST_CASE(fast_link_of_a_corrupt_size_stays_fast),
	    KTEST_CASE(inodes_in_use_are_never_allocated),
	    KTEST_CASE(appends_through_separate_opens_both_land),
	    KTEST_CASE(stores_past_the_end_stay_out_of_the_file),
	    KTEST_CASE(directory_of_a_partial_block_is_refused),
	    KTEST_CASE(failed_page_fetch_gives_the_fresh_block_back),
	    KTEST_CASE(failed_zeroing_links_no_indirect_block),
	    KTEST_CASE(fill_in_flight_never_waits_for_ext2_lock),
	    KTEST_CASE(reserved_blocks_are_for_root));
KTEST_SUITE(ext2r, KTEST_CASE(read_tree_back));

/* ---- Read-ahead, counted at the block boundary ---------------------------- */

struct request_count {
	uint64_t reads, sectors;
};

static void count_read(struct jp_context *context, void *cookie)
{
	struct request_count *count = cookie;
	const struct block_request *request = (const struct block_request *)context->args[0];
	if (request && request->op == BLOCK_READ) {
		__atomic_fetch_add(&count->reads, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&count->sectors, request->count, __ATOMIC_RELAXED);
	}
}

/* Reads huge.bin (written by ext2w) from a cold cache in 4 KiB pieces, in
 * order (stride 1) or with a stride that never continues where the last read
 * stopped, counting the read requests that cross block.submit meanwhile and
 * what the file's mapping counted. */
static void read_huge(struct ktest *t, unsigned stride, struct request_count *count,
		      struct pcache_stats *delta)
{
	pcache_shrink(0);
	struct vfs_file *file;
	if (!EXPECT_EQ(t, vfs_open(TREE "/huge.bin", VFS_O_RDONLY, 0, &file), 0))
		return;
	struct pcache_stats *stats = &((struct ext2_node *)file->node->private)->mapping.stats;
	struct pcache_stats before = *stats;
	uint8_t *chunk = kmalloc(PAGE_SIZE);
	struct jp_advice counter = {.name = "ext2ra.count", .before = count_read, .cookie = count};
	int handle = jp_attach("block.submit", &counter);
	EXPECT_TRUE(t, handle > 0);
	unsigned pages = HUGE_BYTES / PAGE_SIZE;
	unsigned first = stride == 1 ? 0 : 1; /* a first read at 0 counts as in order */
	for (unsigned i = first; chunk && i < first + pages; i++) {
		uint64_t page = (uint64_t)i * stride % pages;
		EXPECT_EQ(t, vfs_pread(file, chunk, PAGE_SIZE, page * PAGE_SIZE), PAGE_SIZE);
		if (chunk[100] != pattern_byte(page * PAGE_SIZE + 100)) {
			EXPECT_EQ(t, chunk[100], pattern_byte(page * PAGE_SIZE + 100));
			break;
		}
	}
	if (handle > 0)
		jp_detach(handle);
	*delta =
	    (struct pcache_stats){.hits = stats->hits - before.hits,
				  .misses = stats->misses - before.misses,
				  .read_ahead = stats->read_ahead - before.read_ahead,
				  .windows = stats->windows - before.windows,
				  .async_windows = stats->async_windows - before.async_windows};
	kfree(chunk);
	vfs_close(file);
}

/* A file read in order from a cold cache: fewer, larger requests than pages
 * (a window of pages per request), and the pages read ahead are hits when
 * the reader gets to them: after the first window every window is started
 * asynchronously, by a hit on the window before, so there is one miss. */
static void sequential_read_is_read_ahead(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	struct request_count count = {0};
	struct pcache_stats delta;
	read_huge(t, 1, &count, &delta);
	unsigned pages = HUGE_BYTES / PAGE_SIZE;
	pr_info("ext2ra: %u pages: %lu read requests, %lu sectors, %lu windows (%lu asynchronous), "
		"%lu pages read ahead, %lu misses\n",
		pages, count.reads, count.sectors, delta.windows, delta.async_windows,
		delta.read_ahead, delta.misses);
	EXPECT_TRUE(t, count.reads * 8 < pages);
	EXPECT_TRUE(t, count.sectors * BLOCK_SECTOR_SIZE >= (uint64_t)pages * PAGE_SIZE);
	EXPECT_EQ(t, delta.misses, delta.windows - delta.async_windows);
	EXPECT_EQ(t, delta.misses, 1);
	EXPECT_TRUE(t, delta.async_windows * PCACHE_AHEAD_MAX >= pages - PCACHE_AHEAD_MAX);
	EXPECT_EQ(t, delta.hits + delta.misses, pages);
	EXPECT_TRUE(t, delta.read_ahead + delta.misses >= pages);
}

/* Reads that jump (a stride of 7 pages) read no window: one request of one
 * page per page read, nothing read ahead. */
static void jumping_reads_are_not_read_ahead(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	struct request_count count = {0};
	struct pcache_stats delta;
	read_huge(t, 7, &count, &delta);
	unsigned pages = HUGE_BYTES / PAGE_SIZE;
	EXPECT_EQ(t, delta.read_ahead, 0);
	EXPECT_EQ(t, delta.windows, 0);
	EXPECT_EQ(t, delta.async_windows, 0);
	EXPECT_EQ(t, delta.misses, pages);
	EXPECT_TRUE(t, count.reads >= pages);
	EXPECT_TRUE(t, count.sectors <= (uint64_t)count.reads * EXT2_SECTORS_PER_BLOCK);
}

KTEST_SUITE(ext2ra, KTEST_CASE(sequential_read_is_read_ahead),
	    KTEST_CASE(jumping_reads_are_not_read_ahead));

long sys_fsync(int fd);
long sys_fdatasync(int fd);
long sys_sync(void);

/* A kernel thread has no descriptors: every fd is bad; sync always works. */
static void sync_calls_refuse_bad_descriptors(struct ktest *t)
{
	EXPECT_EQ(t, sys_fsync(-1), -EBADF);
	EXPECT_EQ(t, sys_fsync(0), -EBADF);
	EXPECT_EQ(t, sys_fsync(1 << 30), -EBADF);
	EXPECT_EQ(t, sys_fsync((int)0x80000000), -EBADF);
	EXPECT_EQ(t, sys_fdatasync(-100), -EBADF);
	EXPECT_EQ(t, sys_sync(), 0);
}

KTEST_SUITE(ext2calls, KTEST_CASE(sync_calls_refuse_bad_descriptors));

/* A write leaves dirty pages that the writeback worker takes to the disk
 * without any sync: after a flush of its queue nothing is dirty. */
static void writeback_without_sync(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	EXPECT_EQ(t, write_pattern(EXT2_BOOT_MOUNT "/written-back.bin", 3 * PAGE_SIZE + 5), 0);
	workqueue_flush(&ext2_writeback);
	struct pcache_stats stats;
	pcache_get_stats(&stats);
	EXPECT_EQ(t, stats.dirty, 0);
	EXPECT_TRUE(t, stats.writebacks >= 4);
	EXPECT_EQ(t, vfs_unlink(EXT2_BOOT_MOUNT "/written-back.bin", false), 0);
	EXPECT_EQ(t, ext2_sync_all(), 0);
}

KTEST_SUITE(ext2wb, KTEST_CASE(writeback_without_sync));

/* With tests/run.py's blkdebug rule on victim.txt's data block: reading the
 * file is -EIO (every time: a failed page is not cached), and the rest of the
 * file system keeps working. */
static void device_error_reaches_reader(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	struct vfs_file *file;
	ASSERT_EQ(t, vfs_open(EXT2_BOOT_MOUNT "/victim.txt", VFS_O_RDONLY, 0, &file), 0);
	char buffer[32];
	EXPECT_EQ(t, vfs_read(file, buffer, sizeof(buffer)), -EIO);
	EXPECT_EQ(t, vfs_read(file, buffer, sizeof(buffer)), -EIO);
	vfs_close(file);
	ASSERT_EQ(t, vfs_open(EXT2_BOOT_MOUNT "/README", VFS_O_RDONLY, 0, &file), 0);
	EXPECT_TRUE(t, vfs_read(file, buffer, sizeof(buffer)) > 0);
	vfs_close(file);
}

/* The dirty pages of a node's mapping (the node held by an open file). */
static uint64_t dirty_pages_of(const char *path)
{
	struct vfs_file *file;
	if (vfs_open(path, VFS_O_RDONLY, 0, &file))
		return 0;
	uint64_t dirty = ((struct ext2_node *)file->node->private)->mapping.stats.dirty;
	vfs_close(file);
	return dirty;
}

/* With tests/run.py's blkdebug rule failing every write of unwritable.txt's
 * data block: a sync after the file was changed and closed is -EIO, and the
 * changed page is kept dirty, not dropped: the file still reads as written,
 * every later sync (the system call, the write-back worker's) tries it again
 * and fails again. */
static void failed_writeback_keeps_the_data(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	const char *path = EXT2_BOOT_MOUNT "/unwritable.txt";
	struct vfs_file *file;
	ASSERT_EQ(t, vfs_open(path, VFS_O_WRONLY, 0, &file), 0);
	EXPECT_EQ(t, vfs_write(file, "NOT ON DISK", 11), 11);
	vfs_close(file);
	EXPECT_EQ(t, ext2_sync_all(), -EIO);
	expect_file(t, path, "NOT ON DISK\n", 12);
	EXPECT_EQ(t, dirty_pages_of(path), 1);
	EXPECT_EQ(t, ext2_sync_all(), -EIO);
	EXPECT_EQ(t, sys_sync(), -EIO);
	ASSERT_EQ(t, vfs_open(path, VFS_O_WRONLY, 0, &file), 0);
	EXPECT_EQ(t, vfs_pwrite(file, "n", 1, 0), 1);
	vfs_close(file);
	workqueue_flush(&ext2_writeback); /* fails, and keeps the error for the next sync */
	expect_file(t, path, "nOT ON DISK\n", 12);
	EXPECT_EQ(t, dirty_pages_of(path), 1);
	EXPECT_EQ(t, ext2_sync_all(), -EIO);
}

KTEST_SUITE(ext2err, KTEST_CASE(device_error_reaches_reader),
	    KTEST_CASE(failed_writeback_keeps_the_data));

long sys_mount(const char *source, const char *target, const char *type, unsigned long flags,
	       const void *data);
long sys_umount2(const char *target, int flags);

/* Unmounting writes back what nobody synced, refuses while a file is open,
 * and the disk mounts again with everything there; the run ends unmounted,
 * so the host's e2fsck and debugfs see what the unmount wrote. */
static void unmount_writes_back(struct ktest *t)
{
	if (!ext2_mounted_here(t))
		return;
	struct block_device *disk;
	struct vfs_file *file;
	ASSERT_EQ(
	    t,
	    vfs_open(EXT2_BOOT_MOUNT "/after-unmount.txt", VFS_O_WRONLY | VFS_O_CREAT, 0644, &file),
	    0);
	disk = ((struct ext2_node *)file->node->private)->fs->disk;
	EXPECT_EQ(t, vfs_write(file, "written back by umount\n", 23), 23);
	EXPECT_EQ(t, vfs_umount(EXT2_BOOT_MOUNT), -EBUSY); /* the file is open */
	vfs_close(file);
	EXPECT_EQ(t, vfs_umount(EXT2_BOOT_MOUNT), 0);
	EXPECT_EQ(t, vfs_umount(EXT2_BOOT_MOUNT), -EINVAL); /* not a mount point any more */
	struct vfs_stat stat;
	EXPECT_EQ(t, vfs_stat(EXT2_BOOT_MOUNT "/after-unmount.txt", &stat), -ENOENT);
	EXPECT_FALSE(t, ext2_disk_mounted(disk));
	ASSERT_EQ(t, ext2_mount(disk, EXT2_BOOT_MOUNT), 0);
	expect_file(t, EXT2_BOOT_MOUNT "/after-unmount.txt", "written back by umount\n", 23);
	expect_file(t, TREE "/small.txt", SMALL_TEXT, strlen(SMALL_TEXT));
	EXPECT_EQ(t, vfs_umount(EXT2_BOOT_MOUNT), 0);
	EXPECT_EQ(t, vfs_umount("/"), -EBUSY);
}

/* The calls from a kernel thread (every privilege, no user memory): bad
 * pointers are -EFAULT, flags -EINVAL. */
static void mount_calls_refuse_bad_input(struct ktest *t)
{
	const char *kernel = "ramfs";
	EXPECT_EQ(t, sys_mount(NULL, "/mnt", kernel, 0, NULL), -EFAULT);
	EXPECT_EQ(t, sys_mount(NULL, NULL, NULL, 0, NULL), -EFAULT);
	EXPECT_EQ(t, sys_mount(NULL, NULL, NULL, 1, NULL), -EINVAL);
	EXPECT_EQ(t, sys_umount2(kernel, 0), -EFAULT);
	EXPECT_EQ(t, sys_umount2(NULL, 0), -EFAULT);
	EXPECT_EQ(t, sys_umount2(NULL, 2), -EINVAL);
}

/* A mount that fails (no such mount point) leaves the disk free to mount;
 * a disk mounted once is -EBUSY for a second mount, wherever. */
static void failed_mount_leaves_the_disk_free(struct ktest *t)
{
	struct block_device *disk = block_get(0);
	const char *elsewhere = "/ktest-ext2-elsewhere";
	if (!disk || ext2_disk_mounted(disk)) {
		ktest_skip(t, "no unmounted ext2 disk");
		return;
	}
	EXPECT_TRUE(t, ext2_mount(disk, "/no/such/place") < 0);
	EXPECT_FALSE(t, ext2_disk_mounted(disk));
	ASSERT_EQ(t, ext2_mount(disk, EXT2_BOOT_MOUNT), 0);
	ASSERT_EQ(t, vfs_mkdir(elsewhere, 0755), 0);
	if (!EXPECT_EQ(t, ext2_mount(disk, elsewhere), -EBUSY))
		vfs_umount(elsewhere);
	EXPECT_EQ(t, vfs_unlink(elsewhere, true), 0);
	expect_file(t, TREE "/small.txt", SMALL_TEXT, strlen(SMALL_TEXT));
	EXPECT_EQ(t, vfs_umount(EXT2_BOOT_MOUNT), 0);
	EXPECT_FALSE(t, ext2_disk_mounted(disk));
}

/* Block 0 (superblock) or 1 (first descriptors) of the unmounted disk,
 * read or written raw. */
static int raw_block(struct block_device *disk, enum block_op op, uint32_t block, void *page)
{
	return block_rw(disk, op, (uint64_t)block * EXT2_SECTORS_PER_BLOCK, EXT2_SECTORS_PER_BLOCK,
			page);
}

/* Mounts disk with one corruption made by change, expecting -EINVAL, then
 * puts the block back as it was. */
static void expect_mount_refused(struct ktest *t, struct block_device *disk, uint32_t block,
				 void (*change)(uint8_t *page), const char *what)
{
	uint8_t *page = mm_alloc_pages(1, PAGE_SIZE), *saved = mm_alloc_pages(1, PAGE_SIZE);
	ASSERT_TRUE(t, page && saved);
	ASSERT_EQ(t, raw_block(disk, BLOCK_READ, block, saved), 0);
	memcpy(page, saved, PAGE_SIZE);
	change(page);
	if (!EXPECT_TRUE(t, memcmp(page, saved, PAGE_SIZE) != 0)) /* a corruption was made */
		pr_warn("ext2 test: %s is how the disk is already\n", what);
	ASSERT_EQ(t, raw_block(disk, BLOCK_WRITE, block, page), 0);
	int error = ext2_mount(disk, EXT2_BOOT_MOUNT);
	if (!EXPECT_EQ(t, error, -EINVAL)) {
		pr_warn("ext2 test: mounted with %s\n", what);
		if (error == 0)
			vfs_umount(EXT2_BOOT_MOUNT);
	}
	EXPECT_EQ(t, raw_block(disk, BLOCK_WRITE, block, saved), 0);
	mm_free_pages(page, 1);
	mm_free_pages(saved, 1);
}

static struct ext2_group_desc *first_desc(uint8_t *page)
{
	return (struct ext2_group_desc *)page;
}

static void block_bitmap_over_the_descriptors(uint8_t *page)
{
	first_desc(page)->block_bitmap = 1;
}

static void inode_bitmap_is_the_block_bitmap(uint8_t *page)
{
	first_desc(page)->inode_bitmap = first_desc(page)->block_bitmap;
}

/* One inode more than the superblock's groups hold, however many they are. */
static void inodes_past_the_groups(uint8_t *page)
{
	struct ext2_super *super = (struct ext2_super *)(page + EXT2_SUPER_OFFSET);
	uint32_t blocks = super->blocks_count - super->first_data_block;
	uint32_t groups = (blocks + super->blocks_per_group - 1) / super->blocks_per_group;
	super->inodes_count = super->inodes_per_group * groups + 1;
}

/* A superblock or group descriptor naming blocks outside their group or
 * over other structures (the descriptors, the other bitmap), or inodes no
 * group has, is refused at mount: allocation would set bits in, and inodes
 * be read from and written to, blocks of other structures. */
static void corrupt_descriptors_are_refused_at_mount(struct ktest *t)
{
	struct block_device *disk = block_get(0);
	if (!disk || ext2_disk_mounted(disk)) {
		ktest_skip(t, "no unmounted ext2 disk");
		return;
	}
	expect_mount_refused(t, disk, 1, block_bitmap_over_the_descriptors,
			     "the block bitmap over the descriptors");
	expect_mount_refused(t, disk, 1, inode_bitmap_is_the_block_bitmap,
			     "one block for both bitmaps");
	expect_mount_refused(t, disk, 0, inodes_past_the_groups,
			     "more inodes than the groups have");
	ASSERT_EQ(t, ext2_mount(disk, EXT2_BOOT_MOUNT), 0);
	expect_file(t, TREE "/small.txt", SMALL_TEXT, strlen(SMALL_TEXT));
	EXPECT_EQ(t, vfs_umount(EXT2_BOOT_MOUNT), 0);
}

KTEST_SUITE(ext2umount, KTEST_CASE(mount_calls_refuse_bad_input), KTEST_CASE(unmount_writes_back),
	    KTEST_CASE(failed_mount_leaves_the_disk_free),
	    KTEST_CASE(corrupt_descriptors_are_refused_at_mount));
