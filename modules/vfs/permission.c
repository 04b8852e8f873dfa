/*
 * Who may do what to a file: the permission bits of a node against the
 * calling process's effective user and group ids (owner bits when it owns
 * the node, group bits when the node's group is its group, the others'
 * bits otherwise), as POSIX says.  A process holding PRIV_FILES (root,
 * unless it dropped it; every kernel thread) passes every check except
 * executing a file that has no execute bit at all.  A directory with the
 * sticky bit (/tmp) lets only the owner of a name, or of the directory,
 * remove or replace it, and a symbolic link that is the last name of a
 * path, in such a directory that is world-writable, is followed only by its
 * owner, or when the directory's owner made it (Linux's protected_symlinks,
 * for everyone, root included): a link planted in /tmp cannot steer another
 * user's open or create.
 */
#include "vfs/internal.h"

#include "lib/errno.h"
#include "proc/proc.h"

static bool privileged(void)
{
	return proc_has_privilege(PRIV_FILES);
}

int vfs_permission(const struct vfs_node *node, int want)
{
	if (!node || (want & ~(VFS_MAY_READ | VFS_MAY_WRITE | VFS_MAY_EXEC)))
		return -EINVAL;
	if (privileged()) {
		bool runnable = VFS_IS_DIR(node->mode) || (node->mode & 0111);
		return (want & VFS_MAY_EXEC) && !runnable ? -EACCES : 0;
	}
	uint32_t bits = node->mode;
	if (node->uid == proc_current_euid())
		bits >>= 6;
	else if (node->gid == proc_current_egid())
		bits >>= 3;
	return ((int)bits & want) == want ? 0 : -EACCES;
}

bool vfs_owns(const struct vfs_node *node)
{
	return privileged() || node->uid == proc_current_euid();
}

void vfs_current_owner(uint32_t *uid, uint32_t *gid)
{
	*uid = proc_current_euid();
	*gid = proc_current_egid();
}

int vfs_may_remove(struct vfs_node *dir, struct vfs_node *victim)
{
	int err = vfs_permission(dir, VFS_MAY_WRITE | VFS_MAY_EXEC);
	if (err || !(dir->mode & VFS_S_ISVTX) || !victim)
		return err;
	return vfs_owns(victim) || vfs_owns(dir) ? 0 : -EPERM;
}

int vfs_may_follow_link(const struct vfs_node *dir, const struct vfs_node *link)
{
	const uint32_t shared_sticky = VFS_S_ISVTX | 0002;
	if ((dir->mode & shared_sticky) != shared_sticky)
		return 0;
	return link->uid == proc_current_euid() || link->uid == dir->uid ? 0 : -EACCES;
}

int vfs_may_chown(const struct vfs_node *node, uint32_t uid, uint32_t gid)
{
	if (privileged())
		return 0;
	if (node->uid != proc_current_euid())
		return -EPERM;
	bool same_user = uid == VFS_ID_UNCHANGED || uid == node->uid;
	bool own_group = gid == VFS_ID_UNCHANGED || gid == node->gid || gid == proc_current_egid();
	return same_user && own_group ? 0 : -EPERM;
}
