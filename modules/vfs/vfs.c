/*
 * The VFS API: names to nodes (mount.c), nodes to open files (node.c), and
 * reads, writes and seeks on open files.  Every public function is a join
 * point.  Each checks its arguments first and then acts; a file system's
 * errors pass through unchanged.
 *
 * The position of a regular file or directory is guarded by the file's
 * position_lock, so processes sharing an open file (dup, fork) never lose a
 * read or write; pipes and devices have no position and are called without
 * it, so a blocked reader does not stall the other users of the file.  An
 * O_APPEND write of a file system with the append op takes the end of the
 * file under the file system's own lock, so separate opens of one file
 * never write over each other's records.
 */
#include "vfs/vfs.h"

#include "devfs/devfs.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "panic/panic.h"
#include "proc/proc.h"
#include "vfs/internal.h"

#define WHOLE_FILE_MAX (64UL << 20)

static bool can_read(const struct vfs_file *file)
{
	return (file->flags & VFS_O_ACCMODE) != VFS_O_WRONLY;
}

static bool can_write(const struct vfs_file *file)
{
	return (file->flags & VFS_O_ACCMODE) != VFS_O_RDONLY;
}

static bool has_position(const struct vfs_node *node)
{
	return VFS_IS_REG(node->mode) || VFS_IS_DIR(node->mode);
}

/* Makes the last name of path (a VFS_PATH_MAX buffer) in its directory as
 * mode says, owned by the caller; link_target for a symbolic link. */
int vfs_create_node(char *path, uint32_t mode, const char *link_target, struct vfs_node **node)
{
	struct vfs_node *dir;
	const char *name;
	size_t length;
	int err = vfs_resolve_parent(path, &dir, &name, &length);
	if (err)
		return err == -EBUSY ? -EEXIST : err;
	struct vfs_create what = {.mode = mode, .link_target = link_target};
	vfs_current_owner(&what.uid, &what.gid);
	err = vfs_may_remove(dir, NULL);
	if (!err)
		err = dir->ops && dir->ops->create
			  ? dir->ops->create(dir, name, length, &what, node)
			  : -ENOTSUP;
	if (!err)
		(*node)->device = dir->device;
	vfs_node_put(dir);
	return err;
}

/* Resolves the name open() was given: a symbolic link at the end followed,
 * or with VFS_O_NOFOLLOW refused (-ELOOP, as Linux).  resolved
 * (VFS_PATH_MAX bytes) ends as the path with the links met replaced by
 * their targets, as far as the walk got. */
static int resolve_for_open(const char *path, int flags, char *resolved, struct vfs_node **node)
{
	strlcpy(resolved, path, VFS_PATH_MAX);
	if (!(flags & VFS_O_NOFOLLOW))
		return vfs_resolve_in_place(resolved, RESOLVE_FOLLOW, node);
	int err = vfs_resolve_in_place(resolved, RESOLVE_NOFOLLOW, node);
	if (!err && VFS_IS_LNK((*node)->mode)) {
		vfs_node_put(*node);
		*node = NULL;
		err = -ELOOP;
	}
	return err;
}

/* Finds (or, with VFS_O_CREAT, makes) the node open() names.  Returns 0
 * (found), 1 (made now) or a negative error.  Without VFS_O_EXCL a
 * dangling link at the end is followed, as on Linux: the file is made
 * where the link points.  With VFS_O_EXCL the name itself is made, so a
 * link there, dangling or not, is -EEXIST. */
static int open_node(const char *path, int flags, uint32_t mode, struct vfs_node **node)
{
	char resolved[VFS_PATH_MAX];
	int err = resolve_for_open(path, flags, resolved, node);
	if (!err && (flags & VFS_O_CREAT) && (flags & VFS_O_EXCL)) {
		vfs_node_put(*node);
		return -EEXIST;
	}
	if (err == -ENOENT && (flags & VFS_O_CREAT)) {
		if (flags & VFS_O_EXCL)
			strlcpy(resolved, path, sizeof resolved);
		err = vfs_create_node(resolved, VFS_S_IFREG | (mode & 07777), NULL, node);
		if (err == -EEXIST && !(flags & VFS_O_EXCL))
			err = resolve_for_open(path, flags, resolved, node);
		else if (!err)
			return 1; /* made now: its mode does not limit this open */
	}
	return err;
}

/* The access an open with flags asks of the node. */
static int access_wanted(int flags)
{
	int access = flags & VFS_O_ACCMODE;
	int want = access == VFS_O_WRONLY ? 0 : VFS_MAY_READ;
	if (access != VFS_O_RDONLY)
		want |= VFS_MAY_WRITE;
	return want;
}

/* The checks open() makes of the node it found (made is true when this
 * open created it). */
static int check_open(struct vfs_node *node, int flags, bool made)
{
	int access = flags & VFS_O_ACCMODE;
	if (VFS_IS_DIR(node->mode) && (access != VFS_O_RDONLY || (flags & VFS_O_TRUNC)))
		return -EISDIR;
	if ((flags & VFS_O_DIRECTORY) && !VFS_IS_DIR(node->mode))
		return -ENOTDIR;
	int err = made ? 0 : vfs_permission(node, access_wanted(flags));
	if (err)
		return err;
	if ((flags & VFS_O_TRUNC) && VFS_IS_REG(node->mode) && access != VFS_O_RDONLY)
		return node->ops && node->ops->truncate ? node->ops->truncate(node, 0) : -ENOTSUP;
	return 0;
}

JOINPOINT_DEFINE(vfs, open, int, const char *, path, int, flags, uint32_t, mode, struct vfs_file **,
		 file)
{
	char normal[VFS_PATH_MAX];
	struct vfs_node *node;
	if (!path || !file || (flags & VFS_O_ACCMODE) == VFS_O_ACCMODE)
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (err)
		return err;
	err = open_node(normal, flags, mode, &node);
	if (err < 0)
		return err;
	err = check_open(node, flags, err == 1);
	if (!err)
		err = vfs_file_create(node, (unsigned)flags, NULL, file);
	vfs_node_put(node);
	return err;
}

typedef int64_t (*read_op)(struct vfs_file *file, void *buffer, size_t length, uint64_t offset);

bool vfs_reads_to_user(const struct vfs_file *file)
{
	return file->ops && file->ops->read_user;
}

/* The file's read op for a buffer lying where where says, or NULL. */
static read_op read_op_of(const struct vfs_file *file, enum vfs_buffer where)
{
	if (!file->ops)
		return NULL;
	return where == VFS_USER_BUFFER ? file->ops->read_user : file->ops->read;
}

JOINPOINT_DEFINE_AS(vfs, read, vfs_read_to, int64_t, struct vfs_file *, file, void *, buffer,
		    size_t, length, enum vfs_buffer, where)
{
	if (!file || !can_read(file))
		return -EBADF;
	if (VFS_IS_DIR(file->node->mode))
		return -EISDIR;
	read_op read = read_op_of(file, where);
	if (!read)
		return -EINVAL;
	if (!has_position(file->node))
		return read(file, buffer, length, 0);
	mutex_lock(&file->position_lock);
	int64_t n = read(file, buffer, length, file->position);
	if (n > 0)
		file->position += (uint64_t)n;
	mutex_unlock(&file->position_lock);
	return n;
}

JOINPOINT_DEFINE(vfs, write, int64_t, struct vfs_file *, file, const void *, buffer, size_t, length)
{
	if (!file || !can_write(file))
		return -EBADF;
	if (VFS_IS_DIR(file->node->mode))
		return -EISDIR;
	if (!file->ops || !file->ops->write)
		return -EINVAL;
	if (!has_position(file->node))
		return file->ops->write(file, buffer, length, 0);
	mutex_lock(&file->position_lock);
	int64_t n;
	if ((file->flags & VFS_O_APPEND) && file->ops->append) {
		uint64_t end = 0;
		n = file->ops->append(file, buffer, length, &end);
		if (n > 0)
			file->position = end;
	} else {
		if (file->flags & VFS_O_APPEND)
			file->position = file->node->size;
		n = file->ops->write(file, buffer, length, file->position);
		if (n > 0)
			file->position += (uint64_t)n;
	}
	mutex_unlock(&file->position_lock);
	return n;
}

/* The checks pread and pwrite make: the file is a regular one. */
static int check_positional(const struct vfs_file *file)
{
	if (VFS_IS_DIR(file->node->mode))
		return -EISDIR;
	return VFS_IS_REG(file->node->mode) ? 0 : -ESPIPE;
}

JOINPOINT_DEFINE_AS(vfs, pread, vfs_pread_to, int64_t, struct vfs_file *, file, void *, buffer,
		    size_t, length, uint64_t, offset, enum vfs_buffer, where)
{
	if (!file || !can_read(file))
		return -EBADF;
	int err = check_positional(file);
	if (err)
		return err;
	read_op read = read_op_of(file, where);
	if (!read)
		return -EINVAL;
	return read(file, buffer, length, offset);
}

JOINPOINT_DEFINE(vfs, pwrite, int64_t, struct vfs_file *, file, const void *, buffer, size_t,
		 length, uint64_t, offset)
{
	if (!file || !can_write(file))
		return -EBADF;
	int err = check_positional(file);
	if (err)
		return err;
	if (!file->ops || !file->ops->write)
		return -EINVAL;
	if (offset > INT64_MAX)
		return -EINVAL;
	return file->ops->write(file, buffer, length, offset);
}

JOINPOINT_DEFINE(vfs, truncate_file, int, struct vfs_file *, file, uint64_t, size)
{
	if (!file || !can_write(file))
		return -EBADF;
	if (!VFS_IS_REG(file->node->mode) || size > INT64_MAX)
		return -EINVAL;
	struct vfs_node *node = file->node;
	return node->ops && node->ops->truncate ? node->ops->truncate(node, size) : -EINVAL;
}

JOINPOINT_DEFINE(vfs, lseek, int64_t, struct vfs_file *, file, int64_t, offset, int, whence)
{
	if (!file)
		return -EBADF;
	if (!has_position(file->node))
		return -ESPIPE;
	if (whence != VFS_SEEK_SET && whence != VFS_SEEK_CUR && whence != VFS_SEEK_END)
		return -EINVAL;
	mutex_lock(&file->position_lock);
	int64_t base = whence == VFS_SEEK_SET   ? 0
		       : whence == VFS_SEEK_CUR ? (int64_t)file->position
						: (int64_t)file->node->size;
	int64_t target = base + offset;
	bool overflow = (offset > 0 && target < base) || (offset < 0 && target > base);
	int64_t result = overflow || target < 0 ? -EINVAL : target;
	if (result >= 0)
		file->position = (uint64_t)result;
	mutex_unlock(&file->position_lock);
	return result;
}

/* Entry index (position - 2) of dir, or "." and ".." at positions 0 and 1. */
static int read_entry(struct vfs_node *dir, uint64_t position, struct vfs_dirent *entry)
{
	if (position < 2) {
		entry->inode = dir->inode;
		entry->type = VFS_DT_DIR;
		strlcpy(entry->name, position ? ".." : ".", sizeof entry->name);
		return 1;
	}
	if (!dir->ops || !dir->ops->readdir)
		return 0;
	return dir->ops->readdir(dir, position - 2, entry);
}

JOINPOINT_DEFINE(vfs, readdir, int, struct vfs_file *, file, struct vfs_dirent *, entry)
{
	if (!file || !entry)
		return -EBADF;
	if (!VFS_IS_DIR(file->node->mode))
		return -ENOTDIR;
	mutex_lock(&file->position_lock);
	int found = read_entry(file->node, file->position, entry);
	if (found > 0)
		file->position++;
	mutex_unlock(&file->position_lock);
	return found;
}

JOINPOINT_DEFINE(vfs, ioctl, int, struct vfs_file *, file, unsigned long, command, void *, argument)
{
	if (!file)
		return -EBADF;
	if (!file->ops || !file->ops->ioctl)
		return -ENOTTY;
	return file->ops->ioctl(file, command, argument);
}

JOINPOINT_DEFINE(vfs, close, int, struct vfs_file *, file)
{
	if (!file)
		return -EBADF;
	vfs_file_put(file);
	return 0;
}

void vfs_fill_stat(const struct vfs_node *node, struct vfs_stat *stat)
{
	stat->device = node->device;
	stat->inode = node->inode;
	stat->mode = node->mode;
	stat->links = node->links;
	stat->uid = node->uid;
	stat->gid = node->gid;
	stat->size = node->size;
	stat->rdev = node->rdev;
}

JOINPOINT_DEFINE(vfs, stat_file, int, struct vfs_file *, file, struct vfs_stat *, stat)
{
	if (!file || !stat)
		return -EBADF;
	vfs_fill_stat(file->node, stat);
	return 0;
}

JOINPOINT_DEFINE(vfs, stat, int, const char *, path, struct vfs_stat *, stat)
{
	char normal[VFS_PATH_MAX];
	struct vfs_node *node;
	if (!path || !stat)
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (!err)
		err = vfs_resolve(normal, &node);
	if (err)
		return err;
	vfs_fill_stat(node, stat);
	vfs_node_put(node);
	return 0;
}

JOINPOINT_DEFINE(vfs, mkdir, int, const char *, path, uint32_t, mode)
{
	char normal[VFS_PATH_MAX];
	struct vfs_node *node;
	if (!path)
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (!err)
		err = vfs_create_node(normal, VFS_S_IFDIR | (mode & 07777), NULL, &node);
	if (!err)
		vfs_node_put(node);
	return err;
}

/* Checks that the caller may remove name from dir (the sticky bit asks
 * whose the name is). */
static int check_remove(struct vfs_node *dir, const char *name, size_t length)
{
	struct vfs_node *victim = NULL;
	if ((dir->mode & VFS_S_ISVTX) && dir->ops && dir->ops->lookup &&
	    dir->ops->lookup(dir, name, length, &victim) < 0)
		victim = NULL;
	int err = vfs_may_remove(dir, victim);
	vfs_node_put(victim);
	return err;
}

/* Removes the name normal (an absolute, normalized VFS_PATH_MAX buffer). */
static int remove_name(char *normal, bool dir_wanted)
{
	struct vfs_node *dir;
	const char *name;
	size_t length;
	int err = vfs_resolve_parent(normal, &dir, &name, &length);
	if (err)
		return err;
	err = dir_wanted && vfs_has_mount_below(normal) ? -EBUSY : check_remove(dir, name, length);
	if (!err)
		err = dir->ops && dir->ops->unlink ? dir->ops->unlink(dir, name, length, dir_wanted)
						   : -ENOTSUP;
	vfs_node_put(dir);
	return err;
}

/* An rmdir holds vfs_tree_lock: no rename or mount changes the tree between
 * its check for a mount below the directory and the removal. */
JOINPOINT_DEFINE(vfs, unlink, int, const char *, path, bool, dir_wanted)
{
	char normal[VFS_PATH_MAX];
	if (!path)
		return -EINVAL;
	int err = vfs_path_absolute(path, normal);
	if (err)
		return err;
	if (dir_wanted)
		mutex_lock(&vfs_tree_lock);
	err = remove_name(normal, dir_wanted);
	if (dir_wanted)
		mutex_unlock(&vfs_tree_lock);
	return err;
}

/* Reads exactly length bytes of file into buffer, and checks that the file
 * ends there. */
static int read_exactly(struct vfs_file *file, char *buffer, size_t length)
{
	size_t done = 0;
	while (done < length) {
		int64_t n = vfs_read(file, buffer + done, length - done);
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	char extra;
	return vfs_read(file, &extra, 1) == 0 ? 0 : -EIO;
}

/* Where a whole file is read into: the kernel heap with a '\0' after the
 * bytes for a reader of text, the memory exec reads programs into for a
 * program (proc_program_alloc: bounded, and it may wait). */
struct whole_file_buffer {
	void *(*alloc)(size_t size, int *error);
	void (*free)(void *data, size_t size);
	bool terminated; /* a '\0' follows the file's bytes */
};

static void *heap_alloc(size_t size, int *error)
{
	void *data = kmalloc(size);
	*error = data ? 0 : -ENOMEM;
	return data;
}

static void heap_free(void *data, size_t size)
{
	(void)size;
	kfree(data);
}

static const struct whole_file_buffer text_buffer = {heap_alloc, heap_free, true};
static const struct whole_file_buffer program_buffer = {proc_program_alloc, proc_free_program,
							false};

/* Reads the whole of file, a regular file open for reading, into a new
 * buffer from how. */
static int read_open_file(struct vfs_file *file, const struct whole_file_buffer *how, void **buffer,
			  size_t *length)
{
	size_t size = file->node->size, allocated = size + (how->terminated ? 1 : 0);
	char *data = NULL;
	int err;
	if (!VFS_IS_REG(file->node->mode))
		err = VFS_IS_DIR(file->node->mode) ? -EISDIR : -EINVAL;
	else if (size > WHOLE_FILE_MAX)
		err = -EFBIG;
	else if ((data = how->alloc(allocated, &err)) != NULL)
		err = read_exactly(file, data, size);
	if (err) {
		if (data)
			how->free(data, allocated);
		return err;
	}
	if (how->terminated)
		data[size] = '\0';
	*buffer = data;
	*length = size;
	return 0;
}

JOINPOINT_DEFINE(vfs, read_whole_file, int, const char *, path, void **, buffer, size_t *, length)
{
	struct vfs_file *file;
	if (!buffer || !length)
		return -EINVAL;
	int err = vfs_open(path, VFS_O_RDONLY, 0, &file);
	if (err)
		return err;
	err = read_open_file(file, &text_buffer, buffer, length);
	vfs_close(file);
	return err;
}

/* One open: the execute permission is checked on the node that open found
 * and the bytes are read through it, so a rename between the two cannot
 * give exec another file than the one checked.  The bytes go into
 * proc_program_alloc's memory (free with proc_free_program), which may wait
 * for other users' execs. */
int vfs_read_program(const char *path, void **buffer, size_t *length)
{
	struct vfs_file *file;
	int err = vfs_open(path, VFS_O_RDONLY, 0, &file);
	if (err)
		return err;
	err = vfs_permission(file->node, VFS_MAY_EXEC);
	if (!err)
		err = read_open_file(file, &program_buffer, buffer, length);
	vfs_close(file);
	return err;
}

void vfs_init(void)
{
	vfs_register_trace_sink();
	struct vfs_node *root = vfs_ramfs_create();
	struct vfs_node *dev = devfs_create();
	if (!root || !dev)
		panic("vfs: no memory for the root file systems");
	if (vfs_mount("/", root) < 0 || vfs_mount("/dev", dev) < 0)
		panic("vfs: cannot mount the root file systems");
	vfs_node_put(root);
	vfs_node_put(dev);
	vfs_register_process_files();
}
