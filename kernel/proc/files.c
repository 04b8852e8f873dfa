/*
 * Where processes meet the VFS: the per-process file table and working
 * directory (struct proc_module_slots), and reading a program file for
 * execve.  These are the integration points with modules/vfs; until the VFS
 * is in the tree a process has no files (slots stay NULL) and no program can
 * be read from a path (-ENOENT), so only images in kernel memory run.
 */
#include "lib/errno.h"
#include "proc/internal.h"

int proc_files_spawn(struct process *child)
{
	(void)child; /* integration point: the VFS gives the child /dev/console as 0, 1, 2 */
	return 0;
}

int proc_files_fork(struct process *child, struct process *parent)
{
	(void)child; /* integration point: the VFS clones parent's table and directory */
	(void)parent;
	return 0;
}

void proc_files_exit(struct process *p)
{
	(void)p; /* integration point: the VFS closes p's files and drops its directory */
}

int proc_read_program(const char *path, void **image, size_t *size)
{
	(void)path; /* integration point: the VFS reads the whole file */
	*image = NULL;
	*size = 0;
	return -ENOENT;
}

void proc_free_program(void *image, size_t size)
{
	(void)size;
	kfree(image);
}
