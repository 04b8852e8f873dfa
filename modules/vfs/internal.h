/*
 * Private to modules/vfs: the mount table and path walking shared by the
 * API, the descriptor tables and the system calls.
 */
#ifndef MODULES_VFS_INTERNAL_H
#define MODULES_VFS_INTERNAL_H

#include "vfs/vfs.h"

enum vfs_resolve_mode {
	RESOLVE_FOLLOW,   /* a symbolic link at the end is followed */
	RESOLVE_NOFOLLOW, /* ... is the node found (lstat, readlink) */
	RESOLVE_PARENT,   /* stop at the directory holding the last component */
};

/* Resolves an absolute, normalized path to a referenced node, following
 * symbolic links.  Returns 0, -ENOENT, -ENOTDIR, -EACCES (a directory on
 * the way may not be searched), -ELOOP, -ENAMETOOLONG. */
int vfs_resolve(const char *path, struct vfs_node **node);
/* The same on path, a VFS_PATH_MAX buffer that is rewritten as symbolic
 * links are substituted, as mode says. */
int vfs_resolve_in_place(char *path, enum vfs_resolve_mode mode, struct vfs_node **node);
/* Resolves the directory holding path's last component (path, a
 * VFS_PATH_MAX buffer, is rewritten where links before it are followed): a
 * referenced *dir and the component in *name / *length (pointing into
 * path).  Returns 0, vfs_resolve's errors, -EBUSY (path is "/" or a mount
 * point itself). */
int vfs_resolve_parent(char *path, struct vfs_node **dir, const char **name, size_t *length);
/* True when path is a mount point. */
bool vfs_is_mount_point(const char *path);
/* True when a mount lies strictly below path (absolute, normalized): a
 * directory there may not be renamed or removed (-EBUSY). */
bool vfs_has_mount_below(const char *path);
/* Held from the name resolution of a rename or an rmdir through the file
 * system's operation, and across a mount's preparation and entry, so that
 * the checks made on path text ("a directory into itself", "a mount below
 * it") hold for the tree the operation changes: no other rename, rmdir or
 * mount runs meanwhile (as Linux's s_vfs_rename_mutex).  Taken before any
 * file system's lock. */
extern struct mutex vfs_tree_lock;
/* Normalizes path (relative to "/") into out (VFS_PATH_MAX).  Returns 0 or
 * vfs_path_normalize's errors. */
int vfs_path_absolute(const char *path, char *out);

/* True when the caller owns node or holds PRIV_FILES (chmod, the sticky
 * bit). */
bool vfs_owns(const struct vfs_node *node);
/* The owner of what the caller creates: its effective uid and gid. */
void vfs_current_owner(uint32_t *uid, uint32_t *gid);
/* Whether the caller may remove or replace victim's name in dir (victim
 * NULL: add a name): write and search permission on dir, and in a sticky
 * directory the ownership of victim or dir.  Returns 0, -EACCES, -EPERM. */
int vfs_may_remove(struct vfs_node *dir, struct vfs_node *victim);
/* Whether the caller may follow link, the last name of a path, found in
 * dir: in a sticky, world-writable directory only the link's owner may, or
 * anyone when the directory's owner owns the link.  Returns 0 or -EACCES. */
int vfs_may_follow_link(const struct vfs_node *dir, const struct vfs_node *link);
/* Whether the caller may give node owner uid and group gid (each may be
 * VFS_ID_UNCHANGED): PRIV_FILES, or the owner keeping the user and choosing
 * its own group.  Returns 0 or -EPERM. */
int vfs_may_chown(const struct vfs_node *node, uint32_t uid, uint32_t gid);

/* Makes the last name of path (absolute, normalized; a VFS_PATH_MAX buffer,
 * rewritten where links are followed) as mode says (type and permission
 * bits), owned by the caller; link_target for VFS_S_IFLNK.  Needs write and
 * search permission on the directory.  Returns 0 and *node (referenced), or
 * -EEXIST, -EACCES, -ENOENT, -ENOTDIR, -ENOTSUP, -ENOMEM, -ENOSPC. */
int vfs_create_node(char *path, uint32_t mode, const char *link_target, struct vfs_node **node);
/* Fills *stat from node. */
void vfs_fill_stat(const struct vfs_node *node, struct vfs_stat *stat);

/* Frees a file whose last reference vfs_close dropped. */
void vfs_file_destroy(struct vfs_file *file);
/* The calling process's descriptor table, or NULL (a kernel thread). */
void *vfs_current_files(void);
/* Gives proc the descriptor-table operations (process.c); once, from vfs_init. */
void vfs_register_process_files(void);
/* vfs.c: reads the program at path (absolute) whole for exec: a regular file
 * the caller may run.  Returns 0 with *buffer (free it with
 * proc_free_program) and *length, or vfs_read_whole_file's errors, -EACCES,
 * proc_program_alloc's (-ENOMEM, -EINTR). */
int vfs_read_program(const char *path, void **buffer, size_t *length);

#endif
