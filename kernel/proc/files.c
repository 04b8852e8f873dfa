/*
 * Where processes meet the VFS.  The VFS owns each process's descriptor table
 * (which also holds its working directory) and proc only carries it in
 * proc_slots(p)->files: a child of the kernel gets a fresh table on
 * /dev/console, fork clones the parent's, exec closes the close-on-exec
 * descriptors, exit releases it.  The VFS finds the caller's table with
 * proc_current() and asks proc_signal_pending() in its long waits; through
 * the hooks installed here it sends SIGPIPE and turns ^C on the console into
 * SIGINT.  execve reads the program file whole through the VFS, relative to
 * the working directory.
 */
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/internal.h"
#include "vfs/vfs.h"

int proc_files_spawn(struct process *child)
{
	struct process *parent = proc_current();
	if (parent && parent->slots.files)
		return vfs_files_clone(parent->slots.files, &child->slots.files);
	child->slots.files = vfs_files_create_initial();
	return child->slots.files ? 0 : -ENOMEM;
}

int proc_files_fork(struct process *child, struct process *parent)
{
	if (!parent->slots.files)
		return 0;
	return vfs_files_clone(parent->slots.files, &child->slots.files);
}

void proc_files_exec(struct process *p)
{
	if (p->slots.files)
		vfs_files_close_on_exec(p->slots.files);
}

void proc_files_exit(struct process *p)
{
	void *files = p->slots.files;
	p->slots.files = NULL;
	vfs_files_release(files);
}

int proc_read_program(const char *path, void **image, size_t *size)
{
	struct process *p = proc_current();
	char *cwd = kmalloc(VFS_PATH_MAX), *absolute = kmalloc(VFS_PATH_MAX);
	int error = -ENOMEM;
	*image = NULL;
	*size = 0;
	if (cwd && absolute) {
		strlcpy(cwd, "/", VFS_PATH_MAX);
		if (p && p->slots.files)
			vfs_files_get_cwd(p->slots.files, cwd);
		error = vfs_path_normalize(cwd, path, absolute, VFS_PATH_MAX);
		if (error >= 0)
			error = vfs_read_whole_file(absolute, image, size);
	}
	kfree(cwd);
	kfree(absolute);
	return error;
}

void proc_free_program(void *image, size_t size)
{
	(void)size;
	kfree(image);
}

/* ---- What the VFS asks of processes ------------------------------------------ */

static void send_sigpipe(void)
{
	struct process *p = proc_current();
	if (p)
		proc_kill(p->pid, SIGPIPE);
}

/* ^C on the console: SIGINT to the programs at the end of the process tree
 * (no children), except init and shells, which stay. */
static void send_console_interrupt(void)
{
	static struct proc_info info[PROC_MAX];
	static struct spinlock lock = SPINLOCK_INIT("proc.interrupt");
	uint64_t irq = spin_lock_irqsave(&lock);
	int n = proc_list(info, PROC_MAX);
	for (int i = 0; i < n && i < PROC_MAX; i++) {
		bool has_children = false;
		for (int j = 0; j < n && j < PROC_MAX; j++)
			has_children |= info[j].parent_pid == info[i].pid;
		if (!has_children && info[i].pid != 1 && strcmp(info[i].name, "sh") != 0 &&
		    info[i].state == PROC_RUNNING)
			proc_kill(info[i].pid, SIGINT);
	}
	spin_unlock_irqrestore(&lock, irq);
}

static const struct vfs_process_hooks hooks = {
    .send_sigpipe = send_sigpipe,
    .send_console_interrupt = send_console_interrupt,
};

void proc_files_init(void)
{
	vfs_set_process_hooks(&hooks);
}
