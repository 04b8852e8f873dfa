/*
 * ext2 directories and symbolic links.  A directory's contents are read and
 * written through its page-cache mapping like a file's; entries are checked
 * (record length, name length, block end) before use, so a corrupt block
 * gives -EIO, never a read past the page.  Directories are linear (no hashed
 * index), entries are added in the first gap that fits or in a new block.
 * Symbolic links up to 59 bytes live in the inode ("fast"), longer ones in a
 * data block.
 */
#include "ext2/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

#define DIRENT_HEADER 8
#define EXT2_DT_LNK   10 /* Linux's d_type for a link */

static uint16_t dirent_need(size_t name_length)
{
	return (uint16_t)((DIRENT_HEADER + name_length + 3) & ~3u);
}

/* Walks the directory's entries: calls visit for each valid one with its page
 * (which visit may change and mark dirty).  A visit returning non-zero stops
 * the walk with that value.  Returns 0 at the end, -EIO on a corrupt block. */
typedef int (*dirent_visit_fn)(struct pcache_page *page, struct ext2_dirent *entry,
			       struct ext2_dirent *previous, void *arg);

static int dir_walk(struct ext2_node *dir, dirent_visit_fn visit, void *arg)
{
	uint64_t pages = dir->vnode.size / PAGE_SIZE;
	for (uint64_t index = 0; index < pages; index++) {
		struct pcache_page *page;
		int error = pcache_get(&dir->mapping, index, PCACHE_READ, &page);
		if (error)
			return error;
		struct ext2_dirent *previous = NULL;
		for (size_t offset = 0; offset < PAGE_SIZE;) {
			struct ext2_dirent *entry = (struct ext2_dirent *)(page->data + offset);
			if (offset + DIRENT_HEADER > PAGE_SIZE || entry->rec_len < DIRENT_HEADER ||
			    entry->rec_len % 4 || offset + entry->rec_len > PAGE_SIZE ||
			    DIRENT_HEADER + entry->name_len > entry->rec_len) {
				pcache_put(page);
				return -EIO;
			}
			int result = visit(page, entry, previous, arg);
			if (result) {
				pcache_put(page);
				return result;
			}
			previous = entry;
			offset += entry->rec_len;
		}
		pcache_put(page);
	}
	return 0;
}

static bool name_is(const struct ext2_dirent *entry, const char *name, size_t length)
{
	return entry->inode && entry->name_len == length && memcmp(entry->name, name, length) == 0;
}

static bool is_dot_or_dotdot(const struct ext2_dirent *entry)
{
	return name_is(entry, ".", 1) || name_is(entry, "..", 2);
}

struct find_arg {
	const char *name;
	size_t length;
	uint32_t ino;
};

static int find_visit(struct pcache_page *page, struct ext2_dirent *entry,
		      struct ext2_dirent *previous, void *arg)
{
	(void)page;
	(void)previous;
	struct find_arg *find = arg;
	if (!name_is(entry, find->name, find->length))
		return 0;
	find->ino = entry->inode;
	return 1;
}

int ext2_dir_find(struct ext2_node *dir, const char *name, size_t length, uint32_t *ino)
{
	struct find_arg find = {name, length, 0};
	int result = dir_walk(dir, find_visit, &find);
	if (result < 0)
		return result;
	if (result == 0)
		return -ENOENT;
	*ino = find.ino;
	return 0;
}

/* ---- Adding and removing entries -------------------------------------------- */

struct add_arg {
	const char *name;
	size_t length;
	uint32_t ino;
	uint8_t type;
};

static void dirent_fill(struct ext2_dirent *entry, const struct add_arg *add, uint16_t rec_len)
{
	entry->inode = add->ino;
	entry->rec_len = rec_len;
	entry->name_len = (uint8_t)add->length;
	entry->file_type = add->type;
	memcpy(entry->name, add->name, add->length);
}

static int add_visit(struct pcache_page *page, struct ext2_dirent *entry,
		     struct ext2_dirent *previous, void *arg)
{
	(void)previous;
	struct add_arg *add = arg;
	uint16_t need = dirent_need(add->length);
	if (entry->inode == 0 && entry->rec_len >= need) {
		dirent_fill(entry, add, entry->rec_len);
	} else {
		uint16_t used = dirent_need(entry->name_len);
		if (!entry->inode || entry->rec_len < used + need)
			return 0;
		struct ext2_dirent *next = (struct ext2_dirent *)((uint8_t *)entry + used);
		dirent_fill(next, add, (uint16_t)(entry->rec_len - used));
		entry->rec_len = used;
	}
	pcache_mark_dirty(page);
	return 1;
}

static int dir_add(struct ext2_node *dir, const char *name, size_t length, uint32_t ino,
		   uint8_t type)
{
	struct add_arg add = {name, length, ino, dir->fs->filetype ? type : 0};
	int result = dir_walk(dir, add_visit, &add);
	if (result < 0)
		return result;
	if (result == 0) { /* no room: a new block holding only this entry */
		uint8_t *block = kzalloc(EXT2_BLOCK_SIZE);
		if (!block)
			return -ENOMEM;
		dirent_fill((struct ext2_dirent *)block, &add, EXT2_BLOCK_SIZE);
		int64_t n = ext2_write_locked(dir, block, EXT2_BLOCK_SIZE, dir->vnode.size);
		kfree(block);
		if (n != EXT2_BLOCK_SIZE)
			return n < 0 ? (int)n : -ENOSPC;
	}
	dir->disk.mtime = dir->disk.ctime = ext2_now();
	return ext2_write_inode(dir);
}

static int remove_visit(struct pcache_page *page, struct ext2_dirent *entry,
			struct ext2_dirent *previous, void *arg)
{
	struct find_arg *find = arg;
	if (!name_is(entry, find->name, find->length))
		return 0;
	if (previous)
		previous->rec_len = (uint16_t)(previous->rec_len + entry->rec_len);
	else
		entry->inode = 0;
	pcache_mark_dirty(page);
	return 1;
}

static int dir_remove(struct ext2_node *dir, const char *name, size_t length)
{
	struct find_arg find = {name, length, 0};
	int result = dir_walk(dir, remove_visit, &find);
	if (result <= 0)
		return result ? result : -ENOENT;
	dir->disk.mtime = dir->disk.ctime = ext2_now();
	return ext2_write_inode(dir);
}

static uint8_t file_type_of(uint32_t mode);

int ext2_dir_add(struct ext2_node *dir, const char *name, size_t length, uint32_t ino,
		 uint32_t mode)
{
	return dir_add(dir, name, length, ino, file_type_of(mode));
}

int ext2_dir_remove(struct ext2_node *dir, const char *name, size_t length)
{
	return dir_remove(dir, name, length);
}

struct retarget_arg {
	const char *name;
	size_t length;
	uint32_t ino;
	uint8_t type;
};

static int retarget_visit(struct pcache_page *page, struct ext2_dirent *entry,
			  struct ext2_dirent *previous, void *arg)
{
	(void)previous;
	struct retarget_arg *r = arg;
	if (!name_is(entry, r->name, r->length))
		return 0;
	entry->inode = r->ino;
	entry->file_type = r->type;
	pcache_mark_dirty(page);
	return 1;
}

static int nonempty_visit(struct pcache_page *page, struct ext2_dirent *entry,
			  struct ext2_dirent *previous, void *arg)
{
	(void)page;
	(void)previous;
	(void)arg;
	return entry->inode && !is_dot_or_dotdot(entry);
}

int ext2_dir_retarget(struct ext2_node *dir, const char *name, size_t length, uint32_t ino,
		      uint32_t mode)
{
	struct retarget_arg r = {name, length, ino, dir->fs->filetype ? file_type_of(mode) : 0};
	int result = dir_walk(dir, retarget_visit, &r);
	if (result <= 0)
		return result ? result : -ENOENT;
	dir->disk.mtime = dir->disk.ctime = ext2_now();
	return ext2_write_inode(dir);
}

/* ---- Making nodes ------------------------------------------------------------- */

static uint8_t file_type_of(uint32_t mode)
{
	return VFS_IS_DIR(mode)                      ? EXT2_FT_DIR
	       : (mode & VFS_S_IFMT) == EXT2_S_IFLNK ? EXT2_FT_LNK
						     : EXT2_FT_REG;
}

/* The first block of a new directory: "." and "..". */
static int write_dots(struct ext2_node *child, uint32_t parent)
{
	uint8_t *block = kzalloc(EXT2_BLOCK_SIZE);
	if (!block)
		return -ENOMEM;
	uint8_t type = child->fs->filetype ? EXT2_FT_DIR : 0;
	struct add_arg dot = {".", 1, child->ino, type}, dotdot = {"..", 2, parent, type};
	dirent_fill((struct ext2_dirent *)block, &dot, 12);
	dirent_fill((struct ext2_dirent *)(block + 12), &dotdot, EXT2_BLOCK_SIZE - 12);
	int64_t n = ext2_write_locked(child, block, EXT2_BLOCK_SIZE, 0);
	kfree(block);
	return n == EXT2_BLOCK_SIZE ? 0 : n < 0 ? (int)n : -ENOSPC;
}

/* Fills the new node's contents: a directory's dots or a link's target. */
static int init_contents(struct ext2_node *dir, struct ext2_node *child, const char *target)
{
	if (VFS_IS_DIR(child->vnode.mode))
		return write_dots(child, dir->ino);
	if (!target)
		return 0;
	size_t length = strlen(target);
	if (length <= EXT2_FAST_LINK_MAX) {
		memcpy(child->disk.block, target, length);
		ext2_set_size(child, length);
		return 0;
	}
	int64_t n = ext2_write_locked(child, target, length, 0);
	return n == (int64_t)length ? 0 : n < 0 ? (int)n : -ENOSPC;
}

/* A new in-memory inode for ino (allocated on disk already). */
static struct ext2_node *new_node(struct ext2_node *dir, uint32_t ino,
				  const struct vfs_create *what)
{
	uint32_t mode = what->mode;
	struct ext2_node *child = kzalloc(sizeof(*child));
	if (!child)
		return NULL;
	child->fs = dir->fs;
	child->ino = ino;
	uint32_t now = ext2_now();
	child->disk.mode = (uint16_t)mode;
	child->disk.links_count = VFS_IS_DIR(mode) ? 2 : 1;
	child->disk.atime = child->disk.ctime = child->disk.mtime = now;
	ext2_set_owner(&child->disk, what->uid, what->gid);
	ext2_node_init_ops(child);
	ext2_node_attach(child);
	return child;
}

int ext2_make_node(struct ext2_node *dir, const char *name, size_t length,
		   const struct vfs_create *what, struct ext2_node **out)
{
	uint32_t mode = what->mode;
	if (length == 0 || length > VFS_NAME_MAX)
		return -ENAMETOOLONG;
	uint32_t existing;
	int error = ext2_dir_find(dir, name, length, &existing);
	if (error != -ENOENT)
		return error ? error : -EEXIST;
	if (dir->vnode.links == 0)
		return -ENOENT; /* a removed directory */
	bool directory = VFS_IS_DIR(mode);
	if (directory && dir->disk.links_count >= 32000)
		return -ENOSPC; /* the link count would overflow */
	uint32_t ino;
	error = ext2_alloc_inode(dir->fs, directory, &ino);
	if (error)
		return error;
	struct ext2_node *child = new_node(dir, ino, what);
	if (!child) {
		ext2_free_inode(dir->fs, ino, directory);
		return -ENOMEM;
	}
	error = init_contents(dir, child, VFS_IS_LNK(mode) ? what->link_target : NULL);
	if (!error)
		error = ext2_write_inode(child);
	if (!error)
		error = dir_add(dir, name, length, ino, file_type_of(mode));
	if (error) {
		child->unlinked = true; /* freed when dropped */
		vfs_node_put(&child->vnode);
		ext2_drop_unused(dir->fs);
		return error;
	}
	if (directory) {
		dir->disk.links_count++;
		dir->vnode.links++;
		ext2_write_inode(dir);
	}
	*out = child;
	return 0;
}

int64_t ext2_readlink_locked(struct ext2_node *node, char *buffer, size_t size)
{
	if ((node->vnode.mode & VFS_S_IFMT) != EXT2_S_IFLNK)
		return -EINVAL;
	uint64_t length = node->vnode.size;
	if (length > size)
		length = size;
	if (ext2_is_fast_link(node)) {
		if (length > EXT2_FAST_LINK_MAX)
			length = EXT2_FAST_LINK_MAX; /* a corrupt size: the inode holds no more */
		memcpy(buffer, node->disk.block, length);
		return (int64_t)length;
	}
	return ext2_read_locked(node, buffer, length, 0);
}

/* ---- The VFS's directory operations -------------------------------------------- */

static int ext2_lookup(struct vfs_node *vdir, const char *name, size_t length,
		       struct vfs_node **child)
{
	struct ext2_node *dir = vdir->private;
	mutex_lock(&ext2_lock);
	uint32_t ino;
	int error = ext2_dir_find(dir, name, length, &ino);
	struct ext2_node *node;
	if (!error)
		error = ext2_iget(dir->fs, ino, &node);
	if (!error)
		*child = &node->vnode;
	mutex_unlock(&ext2_lock);
	return error;
}

static int ext2_create(struct vfs_node *vdir, const char *name, size_t length,
		       const struct vfs_create *what, struct vfs_node **child)
{
	struct ext2_node *node;
	if (VFS_IS_LNK(what->mode) && strlen(what->link_target) >= EXT2_BLOCK_SIZE)
		return -ENAMETOOLONG;
	mutex_lock(&ext2_lock);
	int error = ext2_make_node(vdir->private, name, length, what, &node);
	if (!error)
		*child = &node->vnode;
	mutex_unlock(&ext2_lock);
	return error;
}

int ext2_drop_link(struct ext2_node *dir, struct ext2_node *child)
{
	if (VFS_IS_DIR(child->vnode.mode)) {
		child->disk.links_count = 0;
		dir->disk.links_count--;
		dir->vnode.links--;
		ext2_write_inode(dir);
	} else {
		child->disk.links_count--;
	}
	child->vnode.links = child->disk.links_count;
	child->disk.ctime = ext2_now();
	if (child->disk.links_count == 0)
		child->unlinked = true;
	return ext2_write_inode(child);
}

int ext2_dir_nonempty(struct ext2_node *dir)
{
	return dir_walk(dir, nonempty_visit, NULL);
}

/* Takes name's link away from child (found in dir). */
static int unlink_locked(struct ext2_node *dir, struct ext2_node *child, const char *name,
			 size_t length, bool dir_wanted)
{
	bool directory = VFS_IS_DIR(child->vnode.mode);
	if (dir_wanted && !directory)
		return -ENOTDIR;
	if (!dir_wanted && directory)
		return -EISDIR;
	if (directory) {
		int result = ext2_dir_nonempty(child);
		if (result)
			return result < 0 ? result : -ENOTEMPTY;
	}
	int error = dir_remove(dir, name, length);
	return error ? error : ext2_drop_link(dir, child);
}

static int ext2_unlink(struct vfs_node *vdir, const char *name, size_t length, bool dir_wanted)
{
	struct ext2_node *dir = vdir->private, *child;
	mutex_lock(&ext2_lock);
	uint32_t ino;
	int error = ext2_dir_find(dir, name, length, &ino);
	if (!error && ino == dir->ino)
		error = -EINVAL;
	if (!error)
		error = ext2_iget(dir->fs, ino, &child);
	if (!error) {
		error = unlink_locked(dir, child, name, length, dir_wanted);
		vfs_node_put(&child->vnode);
		ext2_drop_unused(dir->fs); /* frees it now unless it is open */
	}
	mutex_unlock(&ext2_lock);
	return error;
}

struct readdir_arg {
	uint64_t wanted, seen;
	struct vfs_dirent *entry;
};

static uint8_t dt_of(uint8_t file_type)
{
	return file_type == EXT2_FT_DIR   ? VFS_DT_DIR
	       : file_type == EXT2_FT_REG ? VFS_DT_REG
	       : file_type == EXT2_FT_LNK ? EXT2_DT_LNK
					  : VFS_DT_UNKNOWN;
}

static int readdir_visit(struct pcache_page *page, struct ext2_dirent *entry,
			 struct ext2_dirent *previous, void *arg)
{
	(void)page;
	(void)previous;
	struct readdir_arg *r = arg;
	if (!entry->inode || is_dot_or_dotdot(entry))
		return 0;
	if (r->seen++ < r->wanted)
		return 0;
	r->entry->inode = entry->inode;
	r->entry->type = dt_of(entry->file_type);
	memcpy(r->entry->name, entry->name, entry->name_len);
	r->entry->name[entry->name_len] = 0;
	return 1;
}

static int ext2_readdir(struct vfs_node *vdir, uint64_t index, struct vfs_dirent *entry)
{
	struct readdir_arg r = {index, 0, entry};
	mutex_lock(&ext2_lock);
	int result = dir_walk(vdir->private, readdir_visit, &r);
	mutex_unlock(&ext2_lock);
	return result < 0 ? 0 : result;
}

const struct vfs_node_ops ext2_dir_ops = {
    .lookup = ext2_lookup,
    .create = ext2_create,
    .link = ext2_link,
    .rename = ext2_rename,
    .unlink = ext2_unlink,
    .setattr = ext2_setattr,
    .unmount = ext2_unmount,
    .readdir = ext2_readdir,
    .release = ext2_release_node,
};
