/*
 * ext2, read and write: a disk made by the host's mke2fs (4 KiB blocks) is
 * mounted into the VFS, and files, directories and symbolic links created or
 * changed there are written back through the page cache on ext2_sync (the
 * sync and fsync system calls) so that the host's e2fsck finds the image
 * clean and debugfs sees the content.
 *
 *     ext2_mount_boot();                 // vda at /disk when it holds ext2
 *     ... vfs_open("/disk/notes", VFS_O_CREAT | VFS_O_WRONLY, 0644, &f) ...
 *     ext2_sync_all();                   // everything written is on the disk
 */
#ifndef MODULES_EXT2_EXT2_H
#define MODULES_EXT2_EXT2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "block/block.h"

#define EXT2_BOOT_MOUNT "/disk"

struct vfs_node;

/* Mounts the ext2 file system on disk at path.  Returns 0, -EBUSY (the disk
 * is mounted already), -EINVAL (not ext2, or a block size or feature this
 * driver does not handle), -EIO, -ENOMEM, or vfs_mount's errors (after which
 * the disk is not mounted and may be mounted again). */
int ext2_mount(struct block_device *disk, const char *path);
/* True when disk holds a mounted ext2 file system. */
bool ext2_disk_mounted(const struct block_device *disk);
/* At boot: mounts the first disk at EXT2_BOOT_MOUNT when it holds ext2
 * (no disk, or another content, is not an error: nothing happens). */
void ext2_mount_boot(void);
/* Writes every dirty page, inode and allocation map of every mounted ext2
 * file system back and flushes the disks.  Returns 0 or the first error. */
int ext2_sync_all(void);
/* Writes back one file's pages and inode (fsync).  Returns 0, -EINVAL (not
 * an ext2 node) or -EIO. */
int ext2_sync_node(struct vfs_node *node);
/* Runs storage_bench (command line) and stops the machine, if it was
 * given.  Boot thread, after ext2_mount_boot. */
#ifdef KERNEL_TESTS
void ext2_bench_run_if_requested(void);
#else
static inline void ext2_bench_run_if_requested(void)
{
} /* benchmarks: test kernel only */
#endif

#endif
