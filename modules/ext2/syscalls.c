/*
 * sync, fsync and fdatasync (Linux x86_64 numbers): everything written to
 * ext2 reaches the disk.  fsync of a file on another file system (the RAM
 * file system, whose files live only in memory) has nothing to do and
 * succeeds; of a pipe, socket or device it is -EINVAL, as on Linux.
 *
 * mount and umount2 (165, 166) need PRIV_DEVICE: a disk by its block
 * device's name ("vdb" or "/dev/vdb") with type "ext2", or a fresh RAM file
 * system (type "ramfs" or "tmpfs", any source); no flags, data ignored.
 */
#include "ext2/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "proc/proc.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"

/* Unlike Linux's sync, a write-back that failed is reported (-EIO): the
 * pages stay dirty and the next sync tries them again. */
SYSCALL_DEFINE0(sync)
{
	return ext2_sync_all();
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

#define MOUNT_NAME_MAX 32

/* A user path made absolute against the caller's working directory. */
static int absolute_user_path(const char *user, char *out)
{
	char raw[VFS_PATH_MAX], cwd[VFS_PATH_MAX] = "/";
	long n = strncpy_from_user(raw, user, sizeof raw);
	if (n < 0)
		return (int)n;
	struct process *process = proc_current();
	void *files = process ? proc_slots(process)->files : NULL;
	if (files)
		vfs_files_get_cwd(files, cwd);
	int length = vfs_path_normalize(cwd, raw, out, VFS_PATH_MAX);
	return length < 0 ? length : 0;
}

static int mount_ext2(const char *source, const char *path)
{
	if (!strncmp(source, "/dev/", 5))
		source += 5;
	struct block_device *disk = block_find(source);
	if (!disk)
		return -ENODEV;
	return ext2_mount(disk, path); /* -EBUSY when it is mounted already */
}

static int mount_ramfs(const char *path)
{
	struct vfs_node *root = vfs_ramfs_create();
	if (!root)
		return -ENOMEM;
	int error = vfs_mount(path, root);
	vfs_node_put(root);
	return error;
}

SYSCALL_DEFINE5(mount, const char *, user_source, const char *, user_target, const char *,
		user_type, unsigned long, flags, const void *, data)
{
	(void)data;
	char source[MOUNT_NAME_MAX], type[MOUNT_NAME_MAX], path[VFS_PATH_MAX];
	if (!proc_has_privilege(PRIV_DEVICE))
		return -EPERM;
	if (flags)
		return -EINVAL;
	long n = strncpy_from_user(type, user_type, sizeof type);
	if (n < 0)
		return n == -ENAMETOOLONG ? -ENODEV : n;
	int error = absolute_user_path(user_target, path);
	if (error)
		return error;
	if (!strcmp(type, "ramfs") || !strcmp(type, "tmpfs"))
		return mount_ramfs(path);
	if (strcmp(type, "ext2"))
		return -ENODEV;
	n = strncpy_from_user(source, user_source, sizeof source);
	if (n < 0)
		return n == -ENAMETOOLONG ? -ENODEV : n;
	return mount_ext2(source, path);
}

SYSCALL_DEFINE2(umount2, const char *, user_target, int, flags)
{
	char path[VFS_PATH_MAX];
	if (!proc_has_privilege(PRIV_DEVICE))
		return -EPERM;
	if (flags)
		return -EINVAL;
	int error = absolute_user_path(user_target, path);
	return error ? error : vfs_umount(path);
}
