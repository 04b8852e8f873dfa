/*
 * Nodes and open files: reference counts, and where files meet processes
 * (signals that end a wait, the calling process's descriptor table).  A node lives while a directory entry, a mount, an open file or a
 * caller holds a reference; an open file while a descriptor or a caller
 * does.  Counts change with atomic operations, so nothing here locks.  The
 * last vfs_node_put calls the file system's release, the last vfs_file_put
 * (vfs_close is one, with the vfs.close join point) the file's release and
 * then puts the node.
 */
#include "vfs/internal.h"

#include "lib/errno.h"
#include "mm/mm.h"
#include "panic/panic.h"
#include "proc/proc.h"

static uint64_t next_inode = 1;

void vfs_node_init(struct vfs_node *node, uint32_t mode, const struct vfs_node_ops *ops,
		   const struct vfs_file_ops *file_ops, void *private)
{
	node->refs = 1;
	node->mode = mode;
	node->links = 1;
	node->uid = node->gid = 0;
	node->inode = vfs_next_inode();
	node->size = 0;
	node->rdev = 0;
	node->device = 0;
	node->ops = ops;
	node->file_ops = file_ops;
	node->private = private;
}

uint64_t vfs_next_inode(void)
{
	return __atomic_fetch_add(&next_inode, 1, __ATOMIC_RELAXED);
}

struct vfs_node *vfs_node_get(struct vfs_node *node)
{
	int old = __atomic_fetch_add(&node->refs, 1, __ATOMIC_RELAXED);
	ASSERT(old > 0);
	return node;
}

void vfs_node_put(struct vfs_node *node)
{
	if (!node)
		return;
	int old = __atomic_fetch_sub(&node->refs, 1, __ATOMIC_ACQ_REL);
	ASSERT(old > 0);
	if (old == 1 && node->ops && node->ops->release)
		node->ops->release(node);
}

int vfs_file_create(struct vfs_node *node, unsigned flags, void *private, struct vfs_file **out)
{
	struct vfs_file *file = kzalloc(sizeof *file);
	if (!file)
		return -ENOMEM;
	file->refs = 1;
	file->flags = flags & (VFS_O_ACCMODE | VFS_O_APPEND | VFS_O_NONBLOCK);
	file->node = vfs_node_get(node);
	file->ops = node->file_ops;
	file->private = private ? private : node->private;
	mutex_init(&file->position_lock, "vfs.file");
	int err = file->ops && file->ops->open ? file->ops->open(file) : 0;
	if (err) {
		vfs_node_put(file->node);
		kfree(file);
		return err;
	}
	*out = file;
	return 0;
}

struct vfs_file *vfs_file_get(struct vfs_file *file)
{
	int old = __atomic_fetch_add(&file->refs, 1, __ATOMIC_RELAXED);
	ASSERT(old > 0);
	return file;
}

void vfs_file_put(struct vfs_file *file)
{
	if (!file)
		return;
	int old = __atomic_fetch_sub(&file->refs, 1, __ATOMIC_ACQ_REL);
	ASSERT(old > 0);
	if (old == 1)
		vfs_file_destroy(file);
}

void vfs_file_destroy(struct vfs_file *file)
{
	if (file->ops && file->ops->release)
		file->ops->release(file);
	vfs_node_put(file->node);
	kfree(file);
}

bool vfs_signal_pending(void)
{
	return proc_signal_pending();
}

void vfs_send_sigpipe(void)
{
	proc_send_sigpipe();
}

void *vfs_current_files(void)
{
	struct process *p = proc_current();
	return p ? proc_slots(p)->files : NULL;
}
