/*
 * Endpoints as file descriptors.  A process holds an endpoint through an open
 * file on an anonymous node; the node holds one reference to the endpoint,
 * and every descriptor (dup, fork) shares the node.  When the last descriptor
 * goes (close, or the process's exit, which releases its table), the node's
 * release closes the endpoint and drops that reference: whoever still holds
 * the endpoint (the kernel side of a binding) sees -EPIPE on its next send.
 * Reading or writing the descriptor is not supported; the ms_ipc_* calls are
 * the interface.
 */
#include "ipc/internal.h"

#include "lib/errno.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "vfs/vfs.h"

struct ipc_node {
	struct vfs_node node;
	struct ipc_endpoint *endpoint;
};

static void ipc_node_release(struct vfs_node *node)
{
	struct ipc_node *n = node->private;
	ipc_endpoint_close(n->endpoint);
	ipc_endpoint_put(n->endpoint);
	kfree(n);
}

static const struct vfs_node_ops ipc_node_ops = {.release = ipc_node_release};
static const struct vfs_file_ops ipc_file_ops = {0};

struct ipc_endpoint *ipc_endpoint_of_file(struct vfs_file *file)
{
	if (!file || file->ops != &ipc_file_ops)
		return NULL;
	return ((struct ipc_node *)file->node->private)->endpoint;
}

static void *current_files(void)
{
	struct process *p = proc_current();
	return p ? proc_slots(p)->files : NULL;
}

struct ipc_endpoint *ipc_file_endpoint(int fd, struct vfs_file **file, int *error)
{
	void *files = current_files();
	*error = -EBADF;
	if (!files || vfs_fd_get(files, fd, file) < 0)
		return NULL;
	struct ipc_endpoint *e = ipc_endpoint_of_file(*file);
	if (!e) {
		vfs_file_put(*file);
		return NULL;
	}
	*error = 0;
	return e;
}

struct ipc_endpoint *ipc_endpoint_from_fd(int fd)
{
	struct vfs_file *file;
	int error;
	struct ipc_endpoint *e = ipc_file_endpoint(fd, &file, &error);
	if (!e)
		return NULL;
	ipc_endpoint_get(e);
	vfs_file_put(file);
	return e;
}

int ipc_endpoint_install_fd(struct ipc_endpoint *endpoint)
{
	void *files = current_files();
	if (!files)
		return -ESRCH;
	struct ipc_node *n = kzalloc(sizeof *n);
	if (!n)
		return -ENOMEM;
	vfs_node_init(&n->node, VFS_S_IFCHR | 0600, &ipc_node_ops, &ipc_file_ops, n);
	n->endpoint = ipc_endpoint_get(endpoint);
	struct vfs_file *file;
	int error = vfs_file_create(&n->node, VFS_O_RDWR, n, &file);
	vfs_node_put(&n->node); /* the file holds it now, or nobody: released */
	if (error)
		return error;
	int fd = vfs_fd_install(files, file, false);
	if (fd < 0)
		vfs_close(file);
	return fd;
}
