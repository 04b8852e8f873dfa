/*
 * Private to modules/vfs: the mount table and path walking shared by the
 * API, the descriptor tables and the system calls.
 */
#ifndef MODULES_VFS_INTERNAL_H
#define MODULES_VFS_INTERNAL_H

#include "vfs/vfs.h"

/* Resolves an absolute, normalized path to a referenced node.  Returns 0,
 * -ENOENT, -ENOTDIR. */
int vfs_resolve(const char *path, struct vfs_node **node);
/* Resolves the directory holding path's last component: a referenced *dir
 * and the component in *name / *length (pointing into path).  Returns 0,
 * -ENOENT, -ENOTDIR, -EBUSY (path is "/" or a mount point itself). */
int vfs_resolve_parent(const char *path, struct vfs_node **dir, const char **name, size_t *length);
/* True when path is a mount point. */
bool vfs_is_mount_point(const char *path);
/* Normalizes path (relative to "/") into out (VFS_PATH_MAX).  Returns 0 or
 * vfs_path_normalize's errors. */
int vfs_path_absolute(const char *path, char *out);

/* Frees a file whose last reference vfs_close dropped. */
void vfs_file_destroy(struct vfs_file *file);
/* The calling process's descriptor table, or NULL (a kernel thread). */
void *vfs_current_files(void);
/* Gives proc the descriptor-table operations (process.c); once, from vfs_init. */
void vfs_register_process_files(void);

#endif
