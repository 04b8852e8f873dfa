/*
 * The mount table and path walking.  A mount binds an absolute, normalized
 * path free of symbolic links to the root node of a file system.  A walk
 * starts at the root of "/" and looks each component up in the directory
 * before it, checking search permission on each directory it passes; where
 * the text walked so far names a mount, the walk goes on from that mount's
 * root instead of the directory it covers (as Linux crosses a mount point),
 * so the directories above a mount are searched like any others: a file
 * system mounted inside a directory closed to a user is closed to that user
 * too.  A symbolic link met on the way is substituted into the path text and
 * the walk starts again from the top (at most VFS_SYMLINK_MAX times, then
 * -ELOOP); since the text before the link holds no link any more, resolving
 * a relative target's ".." by name is the same as walking up.  A mount's
 * path is the text its directory resolves to, links followed, so that walks
 * meet it.  Mounts are added and taken away under mount_lock; walkers copy
 * the entry they need under the lock and hold a reference to its root.  An
 * unmount takes the entry out first, so no new walk enters, then asks the
 * file system, which refuses while anyone still holds one of its nodes (a
 * walk that entered before, an open file); the entry then goes back.  Since
 * mounts are found by path text, a directory with a mount below it stays
 * where it is (rename and rmdir ask vfs_has_mount_below), and a mount is
 * made under vfs_tree_lock, which rename and rmdir hold from their names to
 * the file system's change.
 */
#include "vfs/internal.h"

#include "joinpoint/joinpoint.h"
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
struct mutex vfs_tree_lock = MUTEX_INIT(vfs_tree_lock, "vfs.tree");

/* True when mount path m (length bytes) covers path. */
static bool covers(const char *m, size_t length, const char *path)
{
	if (length == 1)
		return true; /* "/" */
	return !strncmp(m, path, length) && (path[length] == '/' || path[length] == '\0');
}

/* Which lengths the mounts' paths have (bit n: some mount's path is n
 * bytes long), so that a walk takes the table's lock only after a
 * component where a mount may be.  Read without the lock, it may miss a
 * mount being made, as a walk that began a moment earlier would. */
static uint64_t mount_lengths[VFS_PATH_MAX / 64];

/* Recomputes mount_lengths from the table; mount_lock held. */
static void note_mount_lengths_locked(void)
{
	uint64_t lengths[VFS_PATH_MAX / 64] = {0};
	for (unsigned i = 0; i < mount_count; i++)
		lengths[mounts[i].length / 64] |= 1ull << (mounts[i].length % 64);
	for (unsigned w = 0; w < VFS_PATH_MAX / 64; w++)
		__atomic_store_n(&mount_lengths[w], lengths[w], __ATOMIC_RELAXED);
}

static bool a_mount_path_is_as_long_as(size_t length)
{
	return length < VFS_PATH_MAX &&
	       (__atomic_load_n(&mount_lengths[length / 64], __ATOMIC_RELAXED) >> (length % 64) &
		1);
}

/* The root (referenced) of the mount whose path is path's first length
 * bytes, or NULL when none is. */
static struct vfs_node *mount_root_at(const char *path, size_t length)
{
	struct vfs_node *root = NULL;
	uint64_t flags = spin_lock_irqsave(&mount_lock);
	for (unsigned i = 0; i < mount_count && !root; i++)
		if (mounts[i].length == length && !strncmp(mounts[i].path, path, length))
			root = mounts[i].root;
	if (root)
		vfs_node_get(root);
	spin_unlock_irqrestore(&mount_lock, flags);
	return root;
}

bool vfs_has_mount_below(const char *path)
{
	bool found = false;
	size_t length = strlen(path);
	uint64_t flags = spin_lock_irqsave(&mount_lock);
	for (unsigned i = 0; i < mount_count && !found; i++)
		found = mounts[i].length > length && covers(path, length, mounts[i].path);
	spin_unlock_irqrestore(&mount_lock, flags);
	return found;
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

/* Looks one component up in dir (whose search permission the caller has
 * checked); the child inherits dir's device. */
static int lookup_child(struct vfs_node *dir, const char *name, size_t length,
			struct vfs_node **child)
{
	int err =
	    dir->ops && dir->ops->lookup ? dir->ops->lookup(dir, name, length, child) : -ENOENT;
	if (!err)
		(*child)->device = dir->device;
	return err;
}

/* Rewrites path (VFS_PATH_MAX bytes) with the symbolic link that spans
 * path[start, end) replaced by its target: an absolute target replaces the
 * prefix, a relative one is read from the link's directory. */
static int substitute_link(char *path, size_t start, size_t end, struct vfs_node *link)
{
	char base[VFS_PATH_MAX], joined[2 * VFS_PATH_MAX];
	if (!link->ops || !link->ops->readlink)
		return -EIO;
	int64_t n = link->ops->readlink(link, joined, VFS_PATH_MAX);
	if (n <= 0)
		return n ? (int)n : -ENOENT;
	if (n >= VFS_PATH_MAX)
		return -ENAMETOOLONG;
	size_t rest = strlen(path + end);
	if ((size_t)n + rest + 1 > sizeof joined)
		return -ENAMETOOLONG;
	memcpy(joined + n, path + end, rest + 1);
	memcpy(base, path, start);
	base[start] = '\0';
	if (start == 0)
		strlcpy(base, "/", sizeof base);
	int length = vfs_path_normalize(base, joined, path, VFS_PATH_MAX);
	return length < 0 ? length : 0;
}

/* The next component of path at or after *at: its start and end; false at
 * the end of the path. */
static bool next_component(const char *path, size_t *at, size_t *start, size_t *end)
{
	size_t i = *at;
	while (path[i] == '/')
		i++;
	if (!path[i])
		return false;
	*start = i;
	while (path[i] && path[i] != '/')
		i++;
	*end = *at = i;
	return true;
}

static bool is_last(const char *path, size_t end)
{
	while (path[end] == '/')
		end++;
	return path[end] == '\0';
}

enum walk_result { WALK_DONE, WALK_AGAIN };

/* Where path's first end bytes name a mount, that mount's root replaces
 * *node, the directory it covers. */
static void cross_mount(const char *path, size_t end, struct vfs_node **node)
{
	if (!a_mount_path_is_as_long_as(end))
		return;
	struct vfs_node *root = mount_root_at(path, end);
	if (root) {
		vfs_node_put(*node);
		*node = root;
	}
}

/* One walk from "/".  Stops before the last component when mode is
 * RESOLVE_PARENT.  A symbolic link met on the way (and at the end with
 * RESOLVE_FOLLOW) rewrites path and asks for another walk. */
static int walk_once(char *path, enum vfs_resolve_mode mode, struct vfs_node **out,
		     enum walk_result *result)
{
	struct vfs_node *node = mount_root_at("/", 1);
	if (!node)
		return -ENOENT;
	size_t at = 0, start, end;
	*result = WALK_DONE;
	while (next_component(path, &at, &start, &end)) {
		bool last = is_last(path, end);
		if (last && mode == RESOLVE_PARENT)
			break;
		int err = !VFS_IS_DIR(node->mode) ? -ENOTDIR : vfs_permission(node, VFS_MAY_EXEC);
		struct vfs_node *child = NULL;
		if (!err)
			err = lookup_child(node, path + start, end - start, &child);
		bool follow = !err && VFS_IS_LNK(child->mode) && (!last || mode == RESOLVE_FOLLOW);
		if (follow && last) /* as Linux: the last name's link, not those on the way */
			err = vfs_may_follow_link(node, child);
		vfs_node_put(node);
		if (err) {
			if (child)
				vfs_node_put(child);
			return err;
		}
		if (follow) {
			err = substitute_link(path, start, end, child);
			vfs_node_put(child);
			*result = WALK_AGAIN;
			return err;
		}
		node = child;
		cross_mount(path, end, &node);
	}
	*out = node;
	return 0;
}

int vfs_resolve_in_place(char *path, enum vfs_resolve_mode mode, struct vfs_node **node)
{
	for (unsigned links = 0;; links++) {
		if (links > VFS_SYMLINK_MAX)
			return -ELOOP;
		enum walk_result result;
		int err = walk_once(path, mode, node, &result);
		if (err || result == WALK_DONE)
			return err;
	}
}

int vfs_resolve(const char *path, struct vfs_node **node)
{
	char copy[VFS_PATH_MAX];
	if (strlcpy(copy, path, sizeof copy) >= sizeof copy)
		return -ENAMETOOLONG;
	return vfs_resolve_in_place(copy, RESOLVE_FOLLOW, node);
}

int vfs_resolve_parent(char *path, struct vfs_node **dir, const char **name, size_t *length)
{
	int err = vfs_resolve_in_place(path, RESOLVE_PARENT, dir);
	if (err)
		return err;
	const char *last = path + strlen(path);
	while (last > path && last[-1] != '/')
		last--;
	if (!*last || vfs_is_mount_point(path))
		err = -EBUSY;
	else if (!VFS_IS_DIR((*dir)->mode))
		err = -ENOTDIR;
	if (err) {
		vfs_node_put(*dir);
		*dir = NULL;
		return err;
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

/* Checks that a mount at path (a VFS_PATH_MAX buffer) may be made: its
 * directory exists (or can be made) in the file system that covers it now.
 * path becomes the text the directory resolves to, links followed, which
 * is what walks meet. */
static int prepare_mount_point(char *path)
{
	if (!strcmp(path, "/") || mount_count == 0)
		return strcmp(path, "/") ? -EINVAL : 0;
	int err = vfs_mkdir(path, 0755);
	if (err && err != -EEXIST)
		return err;
	struct vfs_node *node;
	err = vfs_resolve_in_place(path, RESOLVE_FOLLOW, &node);
	if (err)
		return err;
	err = VFS_IS_DIR(node->mode) ? 0 : -ENOTDIR;
	vfs_node_put(node);
	return err;
}

static uint64_t next_device = 1;

/* Enters a mount of root at normal (absolute, normalized, prepared). */
static int add_mount(const char *normal, struct vfs_node *root)
{
	int err = 0;
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
	note_mount_lengths_locked();
	spin_unlock_irqrestore(&mount_lock, flags);
	return 0;
}

int vfs_mount(const char *path, struct vfs_node *root)
{
	char normal[VFS_PATH_MAX];
	if (!path || path[0] != '/' || !root || !VFS_IS_DIR(root->mode))
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (err)
		return err;
	mutex_lock(&vfs_tree_lock); /* no rename or rmdir of a directory on the path meanwhile */
	err = vfs_is_mount_point(normal) ? -EBUSY : prepare_mount_point(normal);
	if (!err)
		err = add_mount(normal, root);
	mutex_unlock(&vfs_tree_lock);
	return err;
}

/* Takes the mount at path out of the table: its slot's contents in *out. */
static int take_mount(const char *path, struct mount *out)
{
	int err = -EINVAL;
	uint64_t flags = spin_lock_irqsave(&mount_lock);
	for (unsigned i = 0; i < mount_count && err == -EINVAL; i++) {
		if (strcmp(mounts[i].path, path))
			continue;
		err = 0;
		for (unsigned j = 0; j < mount_count && !err; j++)
			if (j != i && mounts[j].length > mounts[i].length &&
			    covers(mounts[i].path, mounts[i].length, mounts[j].path))
				err = -EBUSY; /* a mount below it */
		if (!err) {
			*out = mounts[i];
			mounts[i] = mounts[--mount_count];
			note_mount_lengths_locked();
		}
	}
	spin_unlock_irqrestore(&mount_lock, flags);
	return err;
}

/* Puts a refused unmount's entry back.  Should another mount have taken its
 * path or the last slot meanwhile, the file system stays unreachable by path
 * (its users keep their nodes) and the entry's reference goes. */
static void put_back_mount(const struct mount *m)
{
	bool taken = false;
	uint64_t flags = spin_lock_irqsave(&mount_lock);
	for (unsigned i = 0; i < mount_count; i++)
		taken |= !strcmp(mounts[i].path, m->path);
	if (!taken && mount_count < VFS_MAX_MOUNT) {
		mounts[mount_count++] = *m;
		note_mount_lengths_locked();
	} else {
		taken = true;
	}
	spin_unlock_irqrestore(&mount_lock, flags);
	if (taken)
		vfs_node_put(m->root);
}

/* Rewrites path (normalized, VFS_PATH_MAX bytes) as the text it resolves
 * to, links followed, as a mount's path is kept; unchanged when it does not
 * resolve. */
static void resolve_links_in(char *path)
{
	char resolved[VFS_PATH_MAX];
	struct vfs_node *node;
	strlcpy(resolved, path, sizeof resolved);
	if (vfs_resolve_in_place(resolved, RESOLVE_FOLLOW, &node))
		return;
	vfs_node_put(node);
	strlcpy(path, resolved, VFS_PATH_MAX);
}

JOINPOINT_DEFINE(vfs, umount, int, const char *, path)
{
	char normal[VFS_PATH_MAX];
	struct mount m;
	if (!path)
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (err)
		return err;
	if (!strcmp(normal, "/"))
		return -EBUSY;
	resolve_links_in(normal);
	err = take_mount(normal, &m);
	if (err)
		return err;
	struct vfs_node *root = m.root;
	err = root->ops && root->ops->unmount ? root->ops->unmount(root) : 0;
	if (err) {
		put_back_mount(&m);
		return err;
	}
	vfs_node_put(root);
	return 0;
}
