/*
 * What the VFS gives processes: it owns their descriptor tables, and proc (a
 * layer below) calls these through struct proc_file_ops, registered once by
 * vfs_init: a fresh table on /dev/console for a child of the kernel, a clone
 * at fork, close-on-exec at exec, release at exit, and the program file read
 * whole for execve, relative to the working directory (it must be executable
 * and readable by the caller, checked on the file it reads: -EACCES), a
 * descriptor read at an offset for a private mmap of a file, and the file's
 * pages for a shared one.
 */
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "vfs/internal.h"

static int read_program(void *files, const char *path, void **image, size_t *size)
{
	char *cwd = kmalloc(VFS_PATH_MAX), *absolute = kmalloc(VFS_PATH_MAX);
	int error = -ENOMEM;
	if (cwd && absolute) {
		strlcpy(cwd, "/", VFS_PATH_MAX);
		if (files)
			vfs_files_get_cwd(files, cwd);
		error = vfs_path_normalize(cwd, path, absolute, VFS_PATH_MAX);
		if (error >= 0)
			error = vfs_read_program(absolute, image, size);
	}
	kfree(cwd);
	kfree(absolute);
	return error;
}

static int64_t read_at(void *files, int fd, uint64_t offset, void *buffer, size_t length)
{
	struct vfs_file *file;
	int err = vfs_fd_get(files, fd, &file);
	if (err)
		return err;
	int64_t n = (file->flags & VFS_O_ACCMODE) == VFS_O_WRONLY ? -EACCES
		    : !VFS_IS_REG(file->node->mode)               ? -ENODEV
		    : length ? vfs_pread(file, buffer, length, offset)
			     : 0;
	vfs_file_put(file);
	return n;
}

/* ---- Shared mappings: the object is a referenced struct vfs_file --------- */

static int map_open(void *files, int fd, bool writable, void **object)
{
	struct vfs_file *file;
	int error = vfs_fd_get(files, fd, &file);
	if (error)
		return error;
	unsigned access = file->flags & VFS_O_ACCMODE;
	if (access == VFS_O_WRONLY || (writable && access == VFS_O_RDONLY))
		error = -EACCES;
	else if (!VFS_IS_REG(file->node->mode) || !file->node->ops || !file->node->ops->map_page)
		error = -ENODEV;
	if (error) {
		vfs_file_put(file);
		return error;
	}
	*object = file;
	return 0;
}

static void map_get(void *object)
{
	vfs_file_get(object);
}

static void map_put(void *object)
{
	vfs_file_put(object);
}

static int map_page(void *object, uint64_t offset, bool writable, uint64_t *phys)
{
	struct vfs_node *node = ((struct vfs_file *)object)->node;
	return node->ops->map_page(node, offset / PAGE_SIZE, writable, phys);
}

static void map_unpage(void *object, uint64_t offset, bool writable, uint64_t phys)
{
	struct vfs_node *node = ((struct vfs_file *)object)->node;
	node->ops->unmap_page(node, offset / PAGE_SIZE, writable, phys);
}

static int map_sync(void *object)
{
	struct vfs_node *node = ((struct vfs_file *)object)->node;
	return node->ops->sync ? node->ops->sync(node) : 0;
}

static const struct proc_file_ops file_ops = {
    .create_initial = vfs_files_create_initial,
    .clone = vfs_files_clone,
    .close_on_exec = vfs_files_close_on_exec,
    .release = vfs_files_release,
    .read_program = read_program,
    .read_at = read_at,
    .map_open = map_open,
    .map_get = map_get,
    .map_put = map_put,
    .map_page = map_page,
    .map_unpage = map_unpage,
    .map_sync = map_sync,
};

void vfs_register_process_files(void)
{
	proc_set_file_ops(&file_ops);
}
