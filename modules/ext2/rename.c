/*
 * ext2 hard links and rename.  A link is one more directory entry and one
 * more count in the inode.  A rename points the new name's entry at the moved
 * inode (in place when the name exists, so the name is never missing), then
 * removes the old entry; a directory moved to another parent gets its ".."
 * rewritten, and the parents' link counts follow ("..": one link each).  The
 * counts and entries end as e2fsck expects them after every step that
 * succeeds; the VFS has already refused moving a directory into itself and
 * names on two file systems.
 */
#include "ext2/internal.h"

#include "lib/errno.h"

#define EXT2_LINK_MAX 32000

static bool is_ext2(const struct vfs_node *node)
{
	return node->ops == &ext2_dir_ops || node->ops == &ext2_file_node_ops ||
	       node->ops == &ext2_link_ops;
}

static int link_locked(struct ext2_node *dir, const char *name, size_t length,
		       struct ext2_node *node)
{
	uint32_t existing;
	int error = ext2_dir_find(dir, name, length, &existing);
	if (error != -ENOENT)
		return error ? error : -EEXIST;
	if (dir->vnode.links == 0 || node->disk.links_count == 0)
		return -ENOENT;
	if (node->disk.links_count >= EXT2_LINK_MAX)
		return -EMLINK;
	error = ext2_dir_add(dir, name, length, node->ino, node->vnode.mode);
	if (error)
		return error;
	node->disk.links_count++;
	node->vnode.links = node->disk.links_count;
	node->disk.ctime = ext2_now();
	return ext2_write_inode(node);
}

int ext2_link(struct vfs_node *vdir, const char *name, size_t length, struct vfs_node *vnode)
{
	struct ext2_node *dir = vdir->private, *node = vnode->private;
	if (length == 0 || length > VFS_NAME_MAX)
		return length ? -ENAMETOOLONG : -ENOENT;
	if (!is_ext2(vnode) || node->fs != dir->fs)
		return -EXDEV;
	if (VFS_IS_DIR(vnode->mode))
		return -EPERM;
	mutex_lock(&ext2_lock);
	int error = link_locked(dir, name, length, node);
	mutex_unlock(&ext2_lock);
	return error;
}

/* Whether moved may replace target (NULL: the new name is free). */
static int check_replace(struct ext2_node *moved, struct ext2_node *target)
{
	if (!target)
		return 0;
	bool moved_dir = VFS_IS_DIR(moved->vnode.mode), target_dir = VFS_IS_DIR(target->vnode.mode);
	if (moved_dir && !target_dir)
		return -ENOTDIR;
	if (!moved_dir && target_dir)
		return -EISDIR;
	int nonempty = target_dir ? ext2_dir_nonempty(target) : 0;
	return nonempty < 0 ? nonempty : nonempty ? -ENOTEMPTY : 0;
}

/* A directory moved from old_dir to new_dir: its ".." and both counts. */
static int reparent(struct ext2_node *moved, struct ext2_node *old_dir, struct ext2_node *new_dir)
{
	int error = ext2_dir_retarget(moved, "..", 2, new_dir->ino, VFS_S_IFDIR);
	if (error)
		return error;
	old_dir->disk.links_count--;
	old_dir->vnode.links--;
	new_dir->disk.links_count++;
	new_dir->vnode.links++;
	error = ext2_write_inode(old_dir);
	return error ? error : ext2_write_inode(new_dir);
}

struct rename_names {
	const char *old_name, *new_name;
	size_t old_length, new_length;
};

static int rename_nodes(struct ext2_node *old_dir, struct ext2_node *new_dir,
			struct ext2_node *moved, struct ext2_node *target,
			const struct rename_names *n)
{
	int error = check_replace(moved, target);
	if (error)
		return error;
	if (!target && new_dir->vnode.links == 0)
		return -ENOENT;
	bool directory = VFS_IS_DIR(moved->vnode.mode);
	if (directory && old_dir != new_dir && !target &&
	    new_dir->disk.links_count >= EXT2_LINK_MAX)
		return -EMLINK;
	error = target ? ext2_dir_retarget(new_dir, n->new_name, n->new_length, moved->ino,
					   moved->vnode.mode)
		       : ext2_dir_add(new_dir, n->new_name, n->new_length, moved->ino,
				      moved->vnode.mode);
	if (!error && target)
		error = ext2_drop_link(new_dir, target);
	if (!error)
		error = ext2_dir_remove(old_dir, n->old_name, n->old_length);
	if (!error && directory && old_dir != new_dir)
		error = reparent(moved, old_dir, new_dir);
	moved->disk.ctime = ext2_now();
	return error ? error : ext2_write_inode(moved);
}

static int rename_locked(struct ext2_node *old_dir, struct ext2_node *new_dir,
			 const struct rename_names *n)
{
	uint32_t moved_ino, target_ino;
	int error = ext2_dir_find(old_dir, n->old_name, n->old_length, &moved_ino);
	if (error)
		return error;
	error = ext2_dir_find(new_dir, n->new_name, n->new_length, &target_ino);
	if (error && error != -ENOENT)
		return error;
	bool replacing = !error;
	if (replacing && target_ino == moved_ino)
		return 0; /* two names of one file: nothing to do */
	struct ext2_node *moved, *target = NULL;
	error = ext2_iget(old_dir->fs, moved_ino, &moved);
	if (error)
		return error;
	if (replacing)
		error = ext2_iget(old_dir->fs, target_ino, &target);
	if (!error)
		error = rename_nodes(old_dir, new_dir, moved, target, n);
	vfs_node_put(&moved->vnode);
	if (target)
		vfs_node_put(&target->vnode);
	ext2_drop_unused(old_dir->fs); /* a replaced file goes now unless open */
	return error;
}

int ext2_rename(struct vfs_node *old_vdir, const char *old_name, size_t old_length,
		struct vfs_node *new_vdir, const char *new_name, size_t new_length)
{
	if (new_length == 0 || new_length > VFS_NAME_MAX)
		return new_length ? -ENAMETOOLONG : -ENOENT;
	if (new_vdir->ops != &ext2_dir_ops)
		return -EXDEV;
	struct ext2_node *old_dir = old_vdir->private, *new_dir = new_vdir->private;
	if (old_dir->fs != new_dir->fs)
		return -EXDEV;
	struct rename_names names = {old_name, new_name, old_length, new_length};
	mutex_lock(&ext2_lock);
	int error = rename_locked(old_dir, new_dir, &names);
	mutex_unlock(&ext2_lock);
	if (!error)
		ext2_queue_writeback(old_dir->fs);
	return error;
}
