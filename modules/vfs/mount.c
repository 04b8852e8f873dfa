/*
 * The mount table and path walking.  A mount binds an absolute, normalized
 * path to the root node of a file system; a lookup takes the mount with the
 * longest path that is a prefix of the name on a component boundary, then
 * walks the remaining components with each directory's lookup.  Mounts are
 * only added (there is no unmount yet), under mount_lock; walkers copy the
 * entry they need under the lock and hold a reference to its root.
 */
#include "vfs/internal.h"

#include "lib/errno.h"
#include "lib/string.h"

struct mount {
	char path[VFS_PATH_MAX];
	size_t length;
	struct vfs_node *root;
};

static struct mount mounts[VFS_MAX_MOUNT];
static unsigned mount_count;
static struct spinlock mount_lock = SPINLOCK_INIT("vfs.mount");

/* True when mount path m (length bytes) covers path. */
static bool covers(const char *m, size_t length, const char *path)
{
	if (length == 1)
		return true; /* "/" */
	return !strncmp(m, path, length) && (path[length] == '/' || path[length] == '\0');
}

/* The root of the mount covering path (referenced) and the rest of path. */
static struct vfs_node *find_mount(const char *path, const char **rest)
{
	struct vfs_node *root = NULL;
	size_t best = 0;
	uint64_t flags = spin_lock_irqsave(&mount_lock);
	for (unsigned i = 0; i < mount_count; i++) {
		if (mounts[i].length > best && covers(mounts[i].path, mounts[i].length, path)) {
			best = mounts[i].length;
			root = mounts[i].root;
		}
	}
	if (root)
		vfs_node_get(root);
	spin_unlock_irqrestore(&mount_lock, flags);
	*rest = path + (best == 1 ? 0 : best);
	return root;
}

bool vfs_is_mount_point(const char *path)
{
	bool found = false;
	uint64_t flags = spin_lock_irqsave(&mount_lock);
	for (unsigned i = 0; i < mount_count && !found; i++)
		found = !strcmp(mounts[i].path, path);
	spin_unlock_irqrestore(&mount_lock, flags);
	return found;
}

/* Looks one component up in dir; consumes the reference to dir. */
static int step(struct vfs_node *dir, const char *name, size_t length, struct vfs_node **child)
{
	int err = -ENOTDIR;
	if (VFS_IS_DIR(dir->mode))
		err = dir->ops && dir->ops->lookup ? dir->ops->lookup(dir, name, length, child)
						   : -ENOENT;
	if (!err)
		(*child)->device = dir->device;
	vfs_node_put(dir);
	return err;
}

/* Walks path's components from node (referenced, consumed), stopping before
 * the component at stop (NULL: walk all). */
static int walk(struct vfs_node *node, const char *path, const char *stop, struct vfs_node **out)
{
	while (*path && path != stop) {
		while (*path == '/')
			path++;
		if (!*path || path == stop)
			break;
		const char *start = path;
		while (*path && *path != '/')
			path++;
		int err = step(node, start, (size_t)(path - start), &node);
		if (err)
			return err;
	}
	*out = node;
	return 0;
}

int vfs_resolve(const char *path, struct vfs_node **node)
{
	const char *rest;
	struct vfs_node *root = find_mount(path, &rest);
	if (!root)
		return -ENOENT;
	return walk(root, rest, NULL, node);
}

int vfs_resolve_parent(const char *path, struct vfs_node **dir, const char **name, size_t *length)
{
	const char *last = path + strlen(path);
	while (last > path && last[-1] != '/')
		last--;
	if (!*last || vfs_is_mount_point(path))
		return -EBUSY;
	const char *rest;
	struct vfs_node *root = find_mount(path, &rest);
	if (!root)
		return -ENOENT;
	int err = walk(root, rest, last, dir);
	if (err)
		return err;
	if (!VFS_IS_DIR((*dir)->mode)) {
		vfs_node_put(*dir);
		return -ENOTDIR;
	}
	*name = last;
	*length = strlen(last);
	return 0;
}

int vfs_path_absolute(const char *path, char *out)
{
	int n = vfs_path_normalize(NULL, path, out, VFS_PATH_MAX);
	return n < 0 ? n : 0;
}

/* Checks that a mount at path may be made: its directory exists (or can be
 * made) in the file system that covers it now. */
static int prepare_mount_point(const char *path)
{
	if (!strcmp(path, "/") || mount_count == 0)
		return strcmp(path, "/") ? -EINVAL : 0;
	int err = vfs_mkdir(path, 0755);
	if (err && err != -EEXIST)
		return err;
	struct vfs_node *node;
	err = vfs_resolve(path, &node);
	if (err)
		return err;
	err = VFS_IS_DIR(node->mode) ? 0 : -ENOTDIR;
	vfs_node_put(node);
	return err;
}

static uint64_t next_device = 1;

int vfs_mount(const char *path, struct vfs_node *root)
{
	char normal[VFS_PATH_MAX];
	if (!path || path[0] != '/' || !root || !VFS_IS_DIR(root->mode))
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (err)
		return err;
	if (vfs_is_mount_point(normal))
		return -EBUSY;
	err = prepare_mount_point(normal);
	if (err)
		return err;
	uint64_t flags = spin_lock_irqsave(&mount_lock);
	for (unsigned i = 0; i < mount_count; i++)
		if (!strcmp(mounts[i].path, normal))
			err = -EBUSY;
	if (!err && mount_count == VFS_MAX_MOUNT)
		err = -ENOSPC;
	if (err) {
		spin_unlock_irqrestore(&mount_lock, flags);
		return err;
	}
	struct mount *m = &mounts[mount_count++];
	strlcpy(m->path, normal, sizeof m->path);
	m->length = strlen(normal);
	m->root = vfs_node_get(root);
	root->device = next_device++;
	spin_unlock_irqrestore(&mount_lock, flags);
	return 0;
}
