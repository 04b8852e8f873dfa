/*
 * sync, fsync and fdatasync (Linux x86_64 numbers): everything written to
 * ext2 reaches the disk.  fsync of a file on another file system (the RAM
 * file system, whose files live only in memory) has nothing to do and
 * succeeds; of a pipe, socket or device it is -EINVAL, as on Linux.
 */
#include "ext2/internal.h"

#include "lib/errno.h"
#include "proc/proc.h"
#include "syscall/syscall.h"

SYSCALL_DEFINE0(sync)
{
	ext2_sync_all();
	return 0; /* sync reports nothing, as on Linux */
}

static long fsync_fd(int fd)
{
	struct process *process = proc_current();
	void *files = process ? proc_slots(process)->files : NULL;
	struct vfs_file *file;
	if (!files || vfs_fd_get(files, fd, &file))
		return -EBADF;
	struct vfs_node *node = file->node;
	long result = ext2_sync_node(node);
	if (result == -EINVAL)
		result = VFS_IS_REG(node->mode) || VFS_IS_DIR(node->mode) ? 0 : -EINVAL;
	vfs_file_put(file);
	return result;
}

SYSCALL_DEFINE1(fsync, int, fd)
{
	return fsync_fd(fd);
}

SYSCALL_DEFINE1(fdatasync, int, fd)
{
	return fsync_fd(fd);
}
