/*
 * Names beyond open, mkdir and unlink: rename, hard and symbolic links,
 * reading a link, changing a node's mode and owner, and access().  Each
 * resolves its paths (vfs_resolve_parent for the names it changes, which
 * follows links before the last component), checks permission in the VFS
 * (write and search on every directory whose entries change, the sticky
 * bit, ownership for chmod and chown), then asks the file system.  Names
 * that would join two file systems are -EXDEV: a file system only ever sees
 * its own nodes.  Renames run one at a time under vfs_tree_lock, from the
 * resolution of both names through the file system's rename: "a directory
 * into itself" is decided on the resolved path text, which is only sound
 * while no other rename moves a directory on either path.  A directory with
 * a mount below it stays where it is (-EBUSY): mounts are found by path.
 */
#include "vfs/internal.h"

#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

/* A name's directory and last component, for the operations that change it. */
struct name {
	char path[VFS_PATH_MAX];
	struct vfs_node *dir;
	const char *last;
	size_t length;
};

static int name_resolve(const char *path, struct name *name)
{
	name->dir = NULL;
	if (!path)
		return -EINVAL;
	int err = vfs_path_absolute(path, name->path);
	if (!err)
		err = vfs_resolve_parent(name->path, &name->dir, &name->last, &name->length);
	if (err)
		name->dir = NULL; /* nothing held */
	return err;
}

/* The node a name names now (NULL when there is none). */
static struct vfs_node *name_node(const struct name *name)
{
	struct vfs_node *node;
	struct vfs_node *dir = name->dir;
	if (!dir->ops || !dir->ops->lookup ||
	    dir->ops->lookup(dir, name->last, name->length, &node))
		return NULL;
	node->device = dir->device;
	return node;
}

/* True when directory path b lies at or under a (both resolved). */
static bool is_under(const char *a, const char *b)
{
	size_t length = strlen(a);
	return !strncmp(a, b, length) && (b[length] == '/' || b[length] == '\0');
}

/* Whether the directories a rename moves or replaces may go from where
 * they are: not with a mount below them. */
static int check_no_mount_below(const struct vfs_node *moved, const struct name *from,
				const struct vfs_node *replaced, const struct name *to)
{
	if (VFS_IS_DIR(moved->mode) && vfs_has_mount_below(from->path))
		return -EBUSY;
	if (replaced && VFS_IS_DIR(replaced->mode) && vfs_has_mount_below(to->path))
		return -EBUSY;
	return 0;
}

/* The checks rename makes before asking the file system (vfs_tree_lock
 * held, so that no other rename changes the tree they look at). */
static int check_rename(struct name *from, struct name *to)
{
	if (from->dir->device != to->dir->device)
		return -EXDEV;
	struct vfs_node *moved = name_node(from), *replaced = name_node(to);
	int err = !moved ? -ENOENT : vfs_may_remove(from->dir, moved);
	if (!err)
		err = vfs_may_remove(to->dir, replaced);
	if (!err && VFS_IS_DIR(moved->mode) && moved != replaced && is_under(from->path, to->path))
		err = -EINVAL; /* a directory into itself */
	if (!err && moved != replaced)
		err = check_no_mount_below(moved, from, replaced, to);
	vfs_node_put(moved);
	vfs_node_put(replaced);
	return err;
}

JOINPOINT_DEFINE(vfs, rename, int, const char *, old_path, const char *, new_path)
{
	struct name *from = kzalloc(sizeof *from), *to = kzalloc(sizeof *to);
	int err = from && to ? 0 : -ENOMEM;
	mutex_lock(&vfs_tree_lock); /* from the names to the file system's change */
	if (!err)
		err = name_resolve(old_path, from);
	if (!err)
		err = name_resolve(new_path, to);
	if (!err)
		err = check_rename(from, to);
	struct vfs_node *dir = err ? NULL : from->dir;
	if (dir)
		err = dir->ops && dir->ops->rename ? dir->ops->rename(dir, from->last, from->length,
								      to->dir, to->last, to->length)
						   : -ENOTSUP;
	mutex_unlock(&vfs_tree_lock);
	if (from)
		vfs_node_put(from->dir);
	if (to)
		vfs_node_put(to->dir);
	kfree(from);
	kfree(to);
	return err;
}

JOINPOINT_DEFINE(vfs, link, int, const char *, existing, const char *, new_path)
{
	char old[VFS_PATH_MAX];
	struct vfs_node *node = NULL;
	struct name *to = kzalloc(sizeof *to);
	int err = !to ? -ENOMEM : !existing ? -EINVAL : vfs_path_absolute(existing, old);
	if (!err)
		err = vfs_resolve_in_place(old, RESOLVE_NOFOLLOW, &node);
	if (!err)
		err = VFS_IS_DIR(node->mode) ? -EPERM : name_resolve(new_path, to);
	if (!err && to->dir->device != node->device)
		err = -EXDEV;
	if (!err)
		err = vfs_may_remove(to->dir, NULL);
	if (!err)
		err = to->dir->ops && to->dir->ops->link
			  ? to->dir->ops->link(to->dir, to->last, to->length, node)
			  : -EPERM;
	if (to)
		vfs_node_put(to->dir);
	vfs_node_put(node);
	kfree(to);
	return err;
}

JOINPOINT_DEFINE(vfs, symlink, int, const char *, target, const char *, path)
{
	char normal[VFS_PATH_MAX];
	struct vfs_node *node;
	if (!target || !path)
		return -EINVAL;
	size_t length = strlen(target);
	if (length == 0)
		return -ENOENT;
	if (length >= VFS_PATH_MAX)
		return -ENAMETOOLONG;
	int err = vfs_path_absolute(path, normal);
	if (!err)
		err = vfs_create_node(normal, VFS_S_IFLNK | 0777, target, &node);
	if (!err)
		vfs_node_put(node);
	return err;
}

JOINPOINT_DEFINE(vfs, readlink, int64_t, const char *, path, char *, buffer, size_t, size)
{
	char normal[VFS_PATH_MAX];
	struct vfs_node *node;
	if (!path || !buffer)
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (!err)
		err = vfs_resolve_in_place(normal, RESOLVE_NOFOLLOW, &node);
	if (err)
		return err;
	int64_t n = !VFS_IS_LNK(node->mode)            ? -EINVAL
		    : node->ops && node->ops->readlink ? node->ops->readlink(node, buffer, size)
						       : -EINVAL;
	vfs_node_put(node);
	return n;
}

JOINPOINT_DEFINE(vfs, lstat, int, const char *, path, struct vfs_stat *, stat)
{
	char normal[VFS_PATH_MAX];
	struct vfs_node *node;
	if (!path || !stat)
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (!err)
		err = vfs_resolve_in_place(normal, RESOLVE_NOFOLLOW, &node);
	if (err)
		return err;
	vfs_fill_stat(node, stat);
	vfs_node_put(node);
	return 0;
}

JOINPOINT_DEFINE(vfs, access, int, const char *, path, int, want)
{
	char normal[VFS_PATH_MAX];
	struct vfs_node *node;
	if (!path || (want & ~(VFS_MAY_READ | VFS_MAY_WRITE | VFS_MAY_EXEC)))
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (!err)
		err = vfs_resolve(normal, &node);
	if (err)
		return err;
	err = want ? vfs_permission(node, want) : 0;
	vfs_node_put(node);
	return err;
}

/* Resolves path (following a last link or not) for chmod and chown. */
static int attr_node(const char *path, bool follow, struct vfs_node **node)
{
	char normal[VFS_PATH_MAX];
	if (!path)
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	return err ? err
		   : vfs_resolve_in_place(normal, follow ? RESOLVE_FOLLOW : RESOLVE_NOFOLLOW, node);
}

static int store_attributes(struct vfs_node *node)
{
	return node->ops && node->ops->setattr ? node->ops->setattr(node) : 0;
}

JOINPOINT_DEFINE(vfs, chmod_node, int, struct vfs_node *, node, uint32_t, mode)
{
	if (!node)
		return -EINVAL;
	if (!vfs_owns(node))
		return -EPERM;
	if (VFS_IS_LNK(node->mode))
		return -EOPNOTSUPP;
	node->mode = (node->mode & VFS_S_IFMT) | (mode & 07777);
	return store_attributes(node);
}

JOINPOINT_DEFINE(vfs, chown_node, int, struct vfs_node *, node, uint32_t, uid, uint32_t, gid)
{
	if (!node)
		return -EINVAL;
	int err = vfs_may_chown(node, uid, gid);
	if (err)
		return err;
	if (uid != VFS_ID_UNCHANGED)
		node->uid = uid;
	if (gid != VFS_ID_UNCHANGED)
		node->gid = gid;
	if (VFS_IS_REG(node->mode))
		node->mode &=
		    ~(uint32_t)(VFS_S_ISUID | VFS_S_ISGID); /* as Linux: no inherited setuid */
	return store_attributes(node);
}

int vfs_chmod(const char *path, uint32_t mode)
{
	struct vfs_node *node;
	int err = attr_node(path, true, &node);
	if (err)
		return err;
	err = vfs_chmod_node(node, mode);
	vfs_node_put(node);
	return err;
}

int vfs_chown(const char *path, uint32_t uid, uint32_t gid, bool follow)
{
	struct vfs_node *node;
	int err = attr_node(path, follow, &node);
	if (err)
		return err;
	err = vfs_chown_node(node, uid, gid);
	vfs_node_put(node);
	return err;
}
