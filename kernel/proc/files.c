/*
 * Where processes meet the VFS.  The VFS owns each process's descriptor table
 * (which also holds its working directory) and proc only carries it in
 * proc_slots(p)->files: a child of the kernel gets a fresh table on
 * /dev/console, fork clones the parent's, exec closes the close-on-exec
 * descriptors, exit releases it.  The VFS sits a layer above and registers
 * those operations (struct proc_file_ops, from vfs_init); it calls down to
 * proc_current(), proc_signal_pending() and proc_send_sigpipe().  execve reads the program file whole through the
 * registered read_program, relative to the working directory, into memory
 * the VFS takes from proc_program_alloc (program_images.c).
 */
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/internal.h"

static const struct proc_file_ops *file_ops;

void proc_set_file_ops(const struct proc_file_ops *ops)
{
	__atomic_store_n(&file_ops, ops, __ATOMIC_RELEASE);
}

static const struct proc_file_ops *ops(void)
{
	return __atomic_load_n(&file_ops, __ATOMIC_ACQUIRE);
}

int proc_files_spawn(struct process *child)
{
	struct process *parent = proc_current();
	if (!ops())
		return 0;
	if (parent && parent->slots.files)
		return ops()->clone(parent->slots.files, &child->slots.files);
	child->slots.files = ops()->create_initial();
	return child->slots.files ? 0 : -ENOMEM;
}

int proc_files_fork(struct process *child, struct process *parent)
{
	if (!parent->slots.files)
		return 0;
	return ops()->clone(parent->slots.files, &child->slots.files);
}

void proc_files_exec(struct process *p)
{
	if (p->slots.files)
		ops()->close_on_exec(p->slots.files);
}

void proc_files_exit(struct process *p)
{
	void *files = p->slots.files;
	p->slots.files = NULL;
	if (files)
		ops()->release(files);
}

int proc_read_program(const char *path, void **image, size_t *size)
{
	struct process *p = proc_current();
	*image = NULL;
	*size = 0;
	if (!ops())
		return -ENOENT;
	return ops()->read_program(p ? p->slots.files : NULL, path, image, size);
}

int64_t proc_read_file_at(int fd, uint64_t offset, void *buffer, size_t length)
{
	struct process *p = proc_current();
	if (!ops() || !ops()->read_at || !p || !p->slots.files)
		return -EBADF;
	return ops()->read_at(p->slots.files, fd, offset, buffer, length);
}

int proc_map_open(int fd, bool writable, void **object)
{
	struct process *p = proc_current();
	if (!ops() || !ops()->map_open || !p || !p->slots.files)
		return -EBADF;
	return ops()->map_open(p->slots.files, fd, writable, object);
}

void proc_map_get(void *object)
{
	ops()->map_get(object);
}

void proc_map_put(void *object)
{
	ops()->map_put(object);
}

int proc_map_page(void *object, uint64_t offset, bool writable, uint64_t *phys)
{
	return ops()->map_page(object, offset, writable, phys);
}

void proc_map_unpage(void *object, uint64_t offset, bool writable, uint64_t phys)
{
	ops()->map_unpage(object, offset, writable, phys);
}

int proc_map_sync(void *object)
{
	return ops()->map_sync(object);
}

/* ---- What the VFS asks of processes ------------------------------------------ */

/* From the writer itself, as Linux's send_sig: its handler sees SI_USER
 * with its own pid and uid. */
void proc_send_sigpipe(void)
{
	struct process *p = proc_current();
	if (p)
		proc_kill_checked(p->pid, SIGPIPE);
}
