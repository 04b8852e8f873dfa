/*
 * Descriptor tables: one per process, an array of references to open files
 * plus the close-on-exec bits and the working directory.  fork copies a
 * table and takes a reference to each file, so parent and child share
 * positions as POSIX says; exit closes everything.  A table's lock is a
 * spinlock held only to change slots: files are closed after it is dropped,
 * since closing may sleep (a pipe end waking its peer, a file system lock).
 */
#include "vfs/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

struct vfs_files {
	struct spinlock lock;
	struct vfs_file *fds[VFS_MAX_FDS];
	bool close_on_exec[VFS_MAX_FDS];
	uint32_t umask;
	char cwd[VFS_PATH_MAX];
};

void *vfs_files_create(void)
{
	struct vfs_files *files = kzalloc(sizeof *files);
	if (!files)
		return NULL;
	spin_init(&files->lock, "vfs.files");
	files->umask = 022;
	strlcpy(files->cwd, "/", sizeof files->cwd);
	return files;
}

void *vfs_files_create_initial(void)
{
	struct vfs_files *files = vfs_files_create();
	struct vfs_file *console;
	if (!files || vfs_open("/dev/console", VFS_O_RDWR, 0, &console) < 0)
		return files;
	files->fds[0] = console;
	files->fds[1] = vfs_file_get(console);
	files->fds[2] = vfs_file_get(console);
	return files;
}

int vfs_files_clone(void *parent_files, void **child_files)
{
	struct vfs_files *parent = parent_files;
	struct vfs_files *child = vfs_files_create();
	if (!parent || !child_files) {
		kfree(child);
		return -EINVAL;
	}
	if (!child)
		return -ENOMEM;
	uint64_t flags = spin_lock_irqsave(&parent->lock);
	for (int fd = 0; fd < VFS_MAX_FDS; fd++)
		if (parent->fds[fd])
			child->fds[fd] = vfs_file_get(parent->fds[fd]);
	memcpy(child->close_on_exec, parent->close_on_exec, sizeof child->close_on_exec);
	child->umask = parent->umask;
	memcpy(child->cwd, parent->cwd, sizeof child->cwd);
	spin_unlock_irqrestore(&parent->lock, flags);
	*child_files = child;
	return 0;
}

/* Empties every slot, or those marked close-on-exec; closes their files
 * unlocked. */
static void close_slots(struct vfs_files *files, bool only_close_on_exec)
{
	struct vfs_file *closing[VFS_MAX_FDS];
	unsigned count = 0;
	uint64_t flags = spin_lock_irqsave(&files->lock);
	for (int fd = 0; fd < VFS_MAX_FDS; fd++) {
		if (files->fds[fd] && (!only_close_on_exec || files->close_on_exec[fd])) {
			closing[count++] = files->fds[fd];
			files->fds[fd] = NULL;
			files->close_on_exec[fd] = false;
		}
	}
	spin_unlock_irqrestore(&files->lock, flags);
	for (unsigned i = 0; i < count; i++)
		vfs_close(closing[i]);
}

void vfs_files_close_on_exec(void *files)
{
	if (files)
		close_slots(files, true);
}

void vfs_files_release(void *files)
{
	if (!files)
		return;
	close_slots(files, false);
	kfree(files);
}

/* Lowest empty slot at or above from, or -EMFILE.  Lock held. */
static int free_slot(struct vfs_files *files, int from)
{
	spin_assert_held(&files->lock);
	for (int fd = from; fd < VFS_MAX_FDS; fd++)
		if (!files->fds[fd])
			return fd;
	return -EMFILE;
}

static void set_cloexec_locked(struct vfs_files *files, int fd, bool close_on_exec)
{
	files->close_on_exec[fd] = close_on_exec;
}

int vfs_fd_install(void *files, struct vfs_file *file, bool close_on_exec)
{
	struct vfs_files *table = files;
	if (!table || !file)
		return -EBADF;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	int fd = free_slot(table, 0);
	if (fd >= 0) {
		table->fds[fd] = file;
		set_cloexec_locked(table, fd, close_on_exec);
	}
	spin_unlock_irqrestore(&table->lock, flags);
	return fd;
}

static bool valid_fd(struct vfs_files *table, int fd)
{
	return table && fd >= 0 && fd < VFS_MAX_FDS;
}

int vfs_fd_get(void *files, int fd, struct vfs_file **file)
{
	struct vfs_files *table = files;
	if (!valid_fd(table, fd))
		return -EBADF;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	struct vfs_file *found = table->fds[fd];
	if (found)
		*file = vfs_file_get(found);
	spin_unlock_irqrestore(&table->lock, flags);
	return found ? 0 : -EBADF;
}

int vfs_fd_close(void *files, int fd)
{
	struct vfs_files *table = files;
	if (!valid_fd(table, fd))
		return -EBADF;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	struct vfs_file *file = table->fds[fd];
	table->fds[fd] = NULL;
	set_cloexec_locked(table, fd, false);
	spin_unlock_irqrestore(&table->lock, flags);
	if (!file)
		return -EBADF;
	vfs_close(file);
	return 0;
}

int vfs_fd_dup_from(void *files, int fd, int lowest, bool close_on_exec)
{
	struct vfs_files *table = files;
	if (!valid_fd(table, fd) || lowest < 0)
		return lowest < 0 ? -EINVAL : -EBADF;
	if (lowest >= VFS_MAX_FDS)
		return table->fds[fd] ? -EMFILE : -EBADF;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	int new_fd = table->fds[fd] ? free_slot(table, lowest) : -EBADF;
	if (new_fd >= 0) {
		table->fds[new_fd] = vfs_file_get(table->fds[fd]);
		set_cloexec_locked(table, new_fd, close_on_exec);
	}
	spin_unlock_irqrestore(&table->lock, flags);
	return new_fd;
}

int vfs_fd_dup(void *files, int fd)
{
	return vfs_fd_dup_from(files, fd, 0, false);
}

int vfs_fd_dup2(void *files, int old_fd, int new_fd)
{
	struct vfs_files *table = files;
	if (!valid_fd(table, old_fd) || !valid_fd(table, new_fd))
		return -EBADF;
	struct vfs_file *replaced = NULL;
	int result = new_fd;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	if (!table->fds[old_fd]) {
		result = -EBADF;
	} else if (old_fd != new_fd) {
		replaced = table->fds[new_fd];
		table->fds[new_fd] = vfs_file_get(table->fds[old_fd]);
		set_cloexec_locked(table, new_fd, false);
	}
	spin_unlock_irqrestore(&table->lock, flags);
	if (replaced)
		vfs_close(replaced);
	return result;
}

int vfs_fd_set_cloexec(void *files, int fd, bool close_on_exec)
{
	struct vfs_files *table = files;
	if (!valid_fd(table, fd))
		return -EBADF;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	bool open = table->fds[fd] != NULL;
	if (open)
		set_cloexec_locked(table, fd, close_on_exec);
	spin_unlock_irqrestore(&table->lock, flags);
	return open ? 0 : -EBADF;
}

int vfs_fd_get_cloexec(void *files, int fd)
{
	struct vfs_files *table = files;
	if (!valid_fd(table, fd))
		return -EBADF;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	int result = table->fds[fd] ? (int)table->close_on_exec[fd] : -EBADF;
	spin_unlock_irqrestore(&table->lock, flags);
	return result;
}

void vfs_files_get_cwd(void *files, char *out)
{
	struct vfs_files *table = files;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	memcpy(out, table->cwd, VFS_PATH_MAX);
	spin_unlock_irqrestore(&table->lock, flags);
}

int vfs_files_set_cwd(void *files, const char *path)
{
	struct vfs_files *table = files;
	struct vfs_stat stat;
	char normal[VFS_PATH_MAX];
	int err = vfs_path_absolute(path, normal);
	if (!err)
		err = vfs_stat(normal, &stat);
	if (err)
		return err;
	if (!VFS_IS_DIR(stat.mode))
		return -ENOTDIR;
	err = vfs_access(normal, VFS_MAY_EXEC);
	if (err)
		return err;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	strlcpy(table->cwd, normal, sizeof table->cwd);
	spin_unlock_irqrestore(&table->lock, flags);
	return 0;
}

uint32_t vfs_files_set_umask(void *files, uint32_t mask)
{
	struct vfs_files *table = files;
	return __atomic_exchange_n(&table->umask, mask & 0777, __ATOMIC_RELAXED);
}

uint32_t vfs_files_umask(void *files)
{
	struct vfs_files *table = files;
	return table ? __atomic_load_n(&table->umask, __ATOMIC_RELAXED) : 022;
}

unsigned vfs_files_count_open(void *files)
{
	struct vfs_files *table = files;
	unsigned count = 0;
	uint64_t flags = spin_lock_irqsave(&table->lock);
	for (int fd = 0; fd < VFS_MAX_FDS; fd++)
		count += table->fds[fd] != NULL;
	spin_unlock_irqrestore(&table->lock, flags);
	return count;
}
