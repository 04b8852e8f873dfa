/*
 * The file system calls (Linux x86_64 numbers and layouts): descriptors,
 * reads and writes, names, directories, pipes and the terminal ioctls.  Each
 * copies its user arguments into the kernel first (paths through
 * strncpy_from_user, then joined to the working directory), then calls the
 * vfs_* API with kernel buffers; data moves through a bounce buffer of at
 * most IO_CHUNK bytes at a time (a write to a pipe: up to its whole ring, so
 * that the pipe sees the write's length), except a read of a file that copies into
 * user memory itself (vfs_reads_to_user: ext2 copies from the page cache),
 * which gets the user buffer whole.  A pipe or a device, which cannot put
 * back what a read took, is asked for no more than the user buffer can store.
 * A bad pointer is -EFAULT, a bad descriptor
 * -EBADF, a path of VFS_PATH_MAX bytes or more -ENAMETOOLONG.
 */
#include "devfs/devfs.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "pipe/pipe.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"
#include "vfs/internal.h"

#define IO_CHUNK 4096
#define AT_FDCWD (-100)

#define F_DUPFD         0
#define F_GETFD         1
#define F_SETFD         2
#define F_GETFL         3
#define F_SETFL         4
#define F_DUPFD_CLOEXEC 1030
#define FD_CLOEXEC      1

/* Linux's struct stat on x86_64. */
struct linux_stat {
	uint64_t dev, ino, nlink;
	uint32_t mode, uid, gid, pad0;
	uint64_t rdev;
	int64_t size, blksize, blocks;
	uint64_t atime, atime_ns, mtime, mtime_ns, ctime, ctime_ns;
	int64_t unused[3];
};
_Static_assert(sizeof(struct linux_stat) == 144, "Linux's struct stat is 144 bytes");

/* ---- Helpers --------------------------------------------------------------- */

static void *files(void)
{
	return vfs_current_files();
}

static int file_of(int fd, struct vfs_file **file)
{
	void *table = files();
	return table ? vfs_fd_get(table, fd, file) : -EBADF;
}

/* Copies a user path and makes it absolute against the working directory. */
static int user_path(const char *user, char *out)
{
	char raw[VFS_PATH_MAX], cwd[VFS_PATH_MAX] = "/";
	long n = strncpy_from_user(raw, user, sizeof raw);
	if (n < 0)
		return (int)n;
	if (files())
		vfs_files_get_cwd(files(), cwd);
	int length = vfs_path_normalize(cwd, raw, out, VFS_PATH_MAX);
	return length < 0 ? length : 0;
}

static int install(struct vfs_file *file, bool close_on_exec)
{
	void *table = files();
	int fd = table ? vfs_fd_install(table, file, close_on_exec) : -EMFILE;
	if (fd < 0)
		vfs_close(file);
	return fd;
}

static bool is_regular(const struct vfs_file *file)
{
	return VFS_IS_REG(file->node->mode);
}

/* ---- Reading and writing ----------------------------------------------------- */

/* The bytes of the next chunk a read may take: a pipe or a device cannot
 * put back what it gave, so it is asked for no more than the user buffer can
 * store from user (made writable first; a process has one thread, so it
 * stays so until the copy).  A regular file's position can go back instead. */
static size_t storable_chunk(struct vfs_file *file, char *user, size_t chunk)
{
	return is_regular(file) ? chunk : uaccess_writable_prefix(user, chunk);
}

/* Reads into user memory chunk by chunk; stops at a short read, and after
 * the first read of a pipe or device (which may have no more to give).  No
 * bounce: the file copies into user memory itself, all at once.  A chunk
 * that cannot be stored ends the read with the bytes stored before it
 * (-EFAULT when none): a pipe or device is not asked for it, a regular
 * file's position goes back over it. */
static long read_to_user(struct vfs_file *file, char *user, size_t count, char *bounce)
{
	if (!bounce)
		return (long)vfs_read_to(file, user, count, VFS_USER_BUFFER);
	size_t done = 0;
	while (done < count) {
		size_t chunk = storable_chunk(file, user + done,
					      count - done < IO_CHUNK ? count - done : IO_CHUNK);
		if (!chunk)
			return done ? (long)done : -EFAULT;
		int64_t n = vfs_read(file, bounce, chunk);
		if (n < 0)
			return done ? (long)done : (long)n;
		if (n && copy_to_user(user + done, bounce, (size_t)n)) {
			if (is_regular(file))
				vfs_lseek(file, -n, VFS_SEEK_CUR);
			return done ? (long)done : -EFAULT;
		}
		done += (size_t)n;
		if ((size_t)n < chunk || !is_regular(file))
			break;
	}
	return (long)done;
}

/* The most bytes one vfs_write is given.  A pipe gets up to its whole ring
 * at once, so that it sees how long the write is (up to PIPE_ATOMIC_MAX:
 * whole or not at all; longer: partial when nonblocking); other files get
 * IO_CHUNK. */
static size_t write_chunk(const struct vfs_file *file)
{
	bool pipe = (file->node->mode & VFS_S_IFMT) == VFS_S_IFIFO;
	return pipe ? PIPE_BUFFER_SIZE : IO_CHUNK;
}

static long write_from_user(struct vfs_file *file, const char *user, size_t count, char *bounce)
{
	size_t done = 0, most = write_chunk(file);
	while (done < count) {
		size_t chunk = count - done < most ? count - done : most;
		if (copy_from_user(bounce, user + done, chunk))
			return done ? (long)done : -EFAULT;
		int64_t n = vfs_write(file, bounce, chunk);
		if (n < 0)
			return done ? (long)done : (long)n;
		done += (size_t)n;
		if ((size_t)n < chunk)
			break;
	}
	return (long)done;
}

enum direction { TO_USER, FROM_USER };

/* Whether moving count bytes in direction needs a bounce buffer. */
static bool needs_bounce(const struct vfs_file *file, size_t count, enum direction direction)
{
	return count && (direction == FROM_USER || !vfs_reads_to_user(file));
}

static size_t bounce_size(const struct vfs_file *file, size_t count, enum direction direction)
{
	size_t most = direction == FROM_USER ? write_chunk(file) : IO_CHUNK;
	return count < most ? count : most;
}

static long transfer(int fd, char *user, size_t count, enum direction direction)
{
	struct vfs_file *file;
	int err = file_of(fd, &file);
	if (err)
		return err;
	char *bounce = NULL;
	long result;
	if (!uaccess_range_ok((uint64_t)user, count))
		result = -EFAULT;
	else if (count == 0)
		result = 0;
	else if (needs_bounce(file, count, direction) &&
		 !(bounce = kmalloc(bounce_size(file, count, direction))))
		result = -ENOMEM;
	else if (direction == TO_USER)
		result = read_to_user(file, user, count, bounce);
	else
		result = write_from_user(file, user, count, bounce);
	kfree(bounce);
	vfs_file_put(file);
	return result;
}

SYSCALL_DEFINE3(read, int, fd, char *, buffer, size_t, count)
{
	return transfer(fd, buffer, count, TO_USER);
}

SYSCALL_DEFINE3(write, int, fd, const char *, buffer, size_t, count)
{
	return transfer(fd, (char *)buffer, count, FROM_USER);
}

/* pread64 and pwrite64 through bounce, IO_CHUNK bytes at a time; the
 * position stays. */
static long bounce_at(struct vfs_file *file, char *user, size_t count, uint64_t offset,
		      enum direction direction, char *bounce)
{
	size_t done = 0;
	while (done < count) {
		size_t chunk = count - done < IO_CHUNK ? count - done : IO_CHUNK;
		uint64_t at = offset + done;
		int64_t n;
		if (direction == TO_USER) {
			n = vfs_pread(file, bounce, chunk, at);
			if (n > 0 && copy_to_user(user + done, bounce, (size_t)n))
				n = -EFAULT;
		} else {
			n = copy_from_user(bounce, user + done, chunk)
				? -EFAULT
				: vfs_pwrite(file, bounce, chunk, at);
		}
		if (n < 0)
			return done ? (long)done : (long)n;
		done += (size_t)n;
		if ((size_t)n < chunk)
			break;
	}
	return (long)done;
}

/* pread64 and pwrite64: at offset, through a bounce buffer, or straight
 * into user memory for a file that reads there itself. */
static long transfer_at(int fd, char *user, size_t count, int64_t offset, enum direction direction)
{
	struct vfs_file *file;
	if (offset < 0)
		return -EINVAL;
	int err = file_of(fd, &file);
	if (err)
		return err;
	char *bounce = NULL;
	long result;
	if (!uaccess_range_ok((uint64_t)user, count))
		result = -EFAULT;
	else if (!needs_bounce(file, count, direction))
		result =
		    count ? vfs_pread_to(file, user, count, (uint64_t)offset, VFS_USER_BUFFER) : 0;
	else if (!(bounce = kmalloc(count < IO_CHUNK ? count : IO_CHUNK)))
		result = -ENOMEM;
	else
		result = bounce_at(file, user, count, (uint64_t)offset, direction, bounce);
	kfree(bounce);
	vfs_file_put(file);
	return result;
}

SYSCALL_DEFINE4(pread64, int, fd, char *, buffer, size_t, count, int64_t, offset)
{
	return transfer_at(fd, buffer, count, offset, TO_USER);
}

SYSCALL_DEFINE4(pwrite64, int, fd, const char *, buffer, size_t, count, int64_t, offset)
{
	return transfer_at(fd, (char *)buffer, count, offset, FROM_USER);
}

SYSCALL_DEFINE2(ftruncate, int, fd, int64_t, length)
{
	struct vfs_file *file;
	if (length < 0)
		return -EINVAL;
	int err = file_of(fd, &file);
	if (err)
		return err;
	err = vfs_truncate_file(file, (uint64_t)length);
	vfs_file_put(file);
	return err;
}

SYSCALL_DEFINE3(lseek, int, fd, int64_t, offset, int, whence)
{
	struct vfs_file *file;
	int err = file_of(fd, &file);
	if (err)
		return err;
	int64_t result = vfs_lseek(file, offset, whence);
	vfs_file_put(file);
	return result;
}

/* ---- Opening and closing ----------------------------------------------------- */

/* mode without the bits the process's umask takes away. */
static uint32_t masked(uint32_t mode)
{
	return mode & 07777 & ~vfs_files_umask(files());
}

static long open_path(const char *user_path_name, int flags, uint32_t mode)
{
	char path[VFS_PATH_MAX];
	struct vfs_file *file;
	int err = user_path(user_path_name, path);
	if (!err)
		err = vfs_open(path, flags, masked(mode), &file);
	if (err)
		return err;
	return install(file, flags & VFS_O_CLOEXEC);
}

SYSCALL_DEFINE3(open, const char *, path, int, flags, uint32_t, mode)
{
	return open_path(path, flags, mode);
}

SYSCALL_DEFINE4(openat, int, dir_fd, const char *, path, int, flags, uint32_t, mode)
{
	char first;
	if (dir_fd != AT_FDCWD && copy_from_user(&first, path, 1) == 0 && first != '/')
		return -ENOTSUP; /* only the working directory or absolute paths */
	return open_path(path, flags, mode);
}

SYSCALL_DEFINE2(creat, const char *, path, uint32_t, mode)
{
	return open_path(path, VFS_O_CREAT | VFS_O_WRONLY | VFS_O_TRUNC, mode);
}

SYSCALL_DEFINE1(close, int, fd)
{
	void *table = files();
	return table ? vfs_fd_close(table, fd) : -EBADF;
}

SYSCALL_DEFINE1(dup, int, fd)
{
	void *table = files();
	return table ? vfs_fd_dup(table, fd) : -EBADF;
}

SYSCALL_DEFINE2(dup2, int, old_fd, int, new_fd)
{
	void *table = files();
	return table ? vfs_fd_dup2(table, old_fd, new_fd) : -EBADF;
}

static long set_status_flags(int fd, unsigned flags)
{
	struct vfs_file *file;
	int err = file_of(fd, &file);
	if (err)
		return err;
	unsigned changeable = VFS_O_APPEND | VFS_O_NONBLOCK;
	file->flags = (file->flags & ~changeable) | (flags & changeable);
	vfs_file_put(file);
	return 0;
}

static long get_status_flags(int fd)
{
	struct vfs_file *file;
	int err = file_of(fd, &file);
	if (err)
		return err;
	long flags = file->flags;
	vfs_file_put(file);
	return flags;
}

SYSCALL_DEFINE3(fcntl, int, fd, int, command, uint64_t, argument)
{
	void *table = files();
	if (!table)
		return -EBADF;
	switch (command) {
	case F_DUPFD: return vfs_fd_dup_from(table, fd, (int)argument, false);
	case F_DUPFD_CLOEXEC: return vfs_fd_dup_from(table, fd, (int)argument, true);
	case F_GETFD: return vfs_fd_get_cloexec(table, fd);
	case F_SETFD: return vfs_fd_set_cloexec(table, fd, argument & FD_CLOEXEC);
	case F_GETFL: return get_status_flags(fd);
	case F_SETFL: return set_status_flags(fd, (unsigned)argument);
	default: return -EINVAL;
	}
}

static long make_pipe(int *user_fds, unsigned flags)
{
	struct vfs_file *read_end, *write_end;
	if (flags & ~(VFS_O_NONBLOCK | VFS_O_CLOEXEC))
		return -EINVAL;
	if (!uaccess_range_ok((uint64_t)user_fds, 2 * sizeof(int)))
		return -EFAULT;
	int err = pipe_create(flags, &read_end, &write_end);
	if (err)
		return err;
	int fds[2] = {install(read_end, flags & VFS_O_CLOEXEC), -1};
	if (fds[0] >= 0)
		fds[1] = install(write_end, flags & VFS_O_CLOEXEC);
	else
		vfs_close(write_end);
	err = fds[0] < 0 ? fds[0] : fds[1] < 0 ? fds[1] : 0;
	if (!err && copy_to_user(user_fds, fds, sizeof fds))
		err = -EFAULT;
	if (err) {
		for (int i = 0; i < 2; i++)
			if (fds[i] >= 0)
				vfs_fd_close(files(), fds[i]);
	}
	return err;
}

SYSCALL_DEFINE1(pipe, int *, fds)
{
	return make_pipe(fds, 0);
}

SYSCALL_DEFINE2(pipe2, int *, fds, int, flags)
{
	return make_pipe(fds, (unsigned)flags);
}

/* ---- Status ------------------------------------------------------------------ */

static long stat_to_user(const struct vfs_stat *st, struct linux_stat *user)
{
	struct linux_stat out = {
	    .dev = st->device,
	    .ino = st->inode,
	    .nlink = st->links,
	    .mode = st->mode,
	    .uid = st->uid,
	    .gid = st->gid,
	    .rdev = st->rdev,
	    .size = (int64_t)st->size,
	    .blksize = 4096,
	    .blocks = (int64_t)((st->size + 511) / 512),
	};
	return copy_to_user(user, &out, sizeof out) ? -EFAULT : 0;
}

static long stat_path(const char *user_path_name, struct linux_stat *user, bool follow)
{
	char path[VFS_PATH_MAX];
	struct vfs_stat st;
	int err = user_path(user_path_name, path);
	if (!err)
		err = follow ? vfs_stat(path, &st) : vfs_lstat(path, &st);
	return err ? err : stat_to_user(&st, user);
}

SYSCALL_DEFINE2(stat, const char *, path, struct linux_stat *, user)
{
	return stat_path(path, user, true);
}

SYSCALL_DEFINE2(lstat, const char *, path, struct linux_stat *, user)
{
	return stat_path(path, user, false);
}

SYSCALL_DEFINE2(fstat, int, fd, struct linux_stat *, user)
{
	struct vfs_file *file;
	struct vfs_stat st;
	int err = file_of(fd, &file);
	if (err)
		return err;
	vfs_stat_file(file, &st);
	vfs_file_put(file);
	return stat_to_user(&st, user);
}

/* As Linux's access, but checked against the effective ids (processes here
 * never run set-id programs, so real and effective differ only by setuid()). */
SYSCALL_DEFINE2(access, const char *, path, int, mode)
{
	char normal[VFS_PATH_MAX];
	if (mode & ~(VFS_MAY_READ | VFS_MAY_WRITE | VFS_MAY_EXEC))
		return -EINVAL;
	int err = user_path(path, normal);
	return err ? err : vfs_access(normal, mode);
}

/* The size of each terminal ioctl's argument, and whether it goes out. */
static int ioctl_size(unsigned long command, bool *out)
{
	*out = true;
	switch (command) {
	case VFS_TCGETS: return DEVFS_TERMIOS_SIZE;
	case VFS_TIOCGWINSZ: return DEVFS_WINSIZE_SIZE;
	case VFS_TIOCGPGRP:
	case VFS_TIOCGSID: return sizeof(int);
	case VFS_TCSETS:
	case VFS_TCSETSW:
	case VFS_TCSETSF: *out = false; return DEVFS_TERMIOS_SIZE;
	case VFS_TIOCSPGRP: *out = false; return sizeof(int);
	default: return 0;
	}
}

SYSCALL_DEFINE3(ioctl, int, fd, unsigned long, command, void *, user)
{
	struct vfs_file *file;
	uint8_t argument[64] = {0};
	bool out;
	int size = ioctl_size(command, &out);
	int err = file_of(fd, &file);
	if (err)
		return err;
	bool no_argument = command == VFS_TIOCSCTTY || command == VFS_TIOCNOTTY;
	if (size && !out && copy_from_user(argument, user, (size_t)size))
		err = -EFAULT;
	if (!err)
		err = size || no_argument ? vfs_ioctl(file, command, argument) : -ENOTTY;
	if (!err && size && out && copy_to_user(user, argument, (size_t)size))
		err = -EFAULT;
	vfs_file_put(file);
	return err;
}

/* ---- Directories ----------------------------------------------------------- */

/* One directory entry in getdents64's (wide) or getdents' (old) layout;
 * returns its size, or 0 when it does not fit in room. */
static size_t pack_entry(const struct vfs_dirent *entry, uint64_t next, bool wide, char *out,
			 size_t room)
{
	size_t name = strlen(entry->name) + 1;
	size_t header = wide ? 19 : 18; /* ino, off, reclen (+ type) */
	size_t size = (header + name + (wide ? 0 : 1) + 7) & ~(size_t)7;
	if (size > room)
		return 0;
	memset(out, 0, size);
	memcpy(out, &entry->inode, 8);
	memcpy(out + 8, &next, 8);
	uint16_t reclen = (uint16_t)size;
	memcpy(out + 16, &reclen, 2);
	if (wide)
		out[18] = (char)entry->type;
	else
		out[size - 1] = (char)entry->type;
	memcpy(out + header, entry->name, name);
	return size;
}

/* Fills buffer with whole entries; steps back over one that did not fit. */
static long fill_entries(struct vfs_file *dir, char *buffer, size_t room, bool wide)
{
	struct vfs_dirent entry;
	size_t used = 0;
	int found;
	while ((found = vfs_readdir(dir, &entry)) > 0) {
		size_t size = pack_entry(&entry, dir->position, wide, buffer + used, room - used);
		if (!size) {
			vfs_lseek(dir, -1, VFS_SEEK_CUR);
			return used ? (long)used : -EINVAL;
		}
		used += size;
	}
	return found < 0 ? found : (long)used;
}

static long get_entries(int fd, char *user, size_t count, bool wide)
{
	struct vfs_file *dir;
	char *buffer = NULL;
	int err = file_of(fd, &dir);
	if (err)
		return err;
	size_t room = count < IO_CHUNK ? count : IO_CHUNK;
	long n;
	if (!uaccess_range_ok((uint64_t)user, count))
		n = -EFAULT;
	else if (!VFS_IS_DIR(dir->node->mode))
		n = -ENOTDIR;
	else if (!(buffer = kmalloc(room ? room : 1)))
		n = -ENOMEM;
	else
		n = fill_entries(dir, buffer, room, wide);
	if (n > 0 && copy_to_user(user, buffer, (size_t)n))
		n = -EFAULT;
	kfree(buffer);
	vfs_file_put(dir);
	return n;
}

SYSCALL_DEFINE3(getdents64, int, fd, char *, user, size_t, count)
{
	return get_entries(fd, user, count, true);
}

SYSCALL_DEFINE3(getdents, int, fd, char *, user, size_t, count)
{
	return get_entries(fd, user, count, false);
}

SYSCALL_DEFINE2(getcwd, char *, user, size_t, size)
{
	char cwd[VFS_PATH_MAX] = "/";
	if (files())
		vfs_files_get_cwd(files(), cwd);
	size_t length = strlen(cwd) + 1;
	if (size < length)
		return -ERANGE;
	return copy_to_user(user, cwd, length) ? -EFAULT : (long)length;
}

SYSCALL_DEFINE1(chdir, const char *, user)
{
	char path[VFS_PATH_MAX];
	void *table = files();
	int err = user_path(user, path);
	if (err)
		return err;
	return table ? vfs_files_set_cwd(table, path) : -ENOENT;
}

static long change_name(const char *user, int (*change)(const char *path, void *arg), void *arg)
{
	char path[VFS_PATH_MAX];
	int err = user_path(user, path);
	return err ? err : change(path, arg);
}

static int make_directory(const char *path, void *mode)
{
	return vfs_mkdir(path, masked(*(uint32_t *)mode));
}

static int remove_directory(const char *path, void *unused)
{
	return vfs_unlink(path, true);
}

static int remove_file(const char *path, void *unused)
{
	return vfs_unlink(path, false);
}

SYSCALL_DEFINE2(mkdir, const char *, path, uint32_t, mode)
{
	return change_name(path, make_directory, &mode);
}

SYSCALL_DEFINE1(rmdir, const char *, path)
{
	return change_name(path, remove_directory, NULL);
}

SYSCALL_DEFINE1(unlink, const char *, path)
{
	return change_name(path, remove_file, NULL);
}

/* ---- Renames, links, modes and owners ---------------------------------------- */

/* Two user paths (each read once), then change(first, second). */
static long two_paths(const char *user_first, const char *user_second,
		      int (*change)(const char *first, const char *second))
{
	char *first = kmalloc(VFS_PATH_MAX), *second = kmalloc(VFS_PATH_MAX);
	int err = first && second ? user_path(user_first, first) : -ENOMEM;
	if (!err)
		err = user_path(user_second, second);
	if (!err)
		err = change(first, second);
	kfree(first);
	kfree(second);
	return err;
}

SYSCALL_DEFINE2(rename, const char *, old_path, const char *, new_path)
{
	return two_paths(old_path, new_path, vfs_rename);
}

SYSCALL_DEFINE2(link, const char *, existing, const char *, new_path)
{
	return two_paths(existing, new_path, vfs_link);
}

/* The target is text kept as it is (not joined to the working directory). */
SYSCALL_DEFINE2(symlink, const char *, user_target, const char *, user_link)
{
	char target[VFS_PATH_MAX], path[VFS_PATH_MAX];
	long n = strncpy_from_user(target, user_target, sizeof target);
	if (n < 0)
		return n;
	int err = user_path(user_link, path);
	return err ? err : vfs_symlink(target, path);
}

SYSCALL_DEFINE3(readlink, const char *, user_link, char *, user_buffer, int, size)
{
	char path[VFS_PATH_MAX], target[VFS_PATH_MAX];
	if (size <= 0)
		return -EINVAL;
	if (!uaccess_range_ok((uint64_t)user_buffer, (size_t)size))
		return -EFAULT;
	int err = user_path(user_link, path);
	if (err)
		return err;
	int64_t n = vfs_readlink(path, target, sizeof target);
	if (n < 0)
		return n;
	size_t length = (size_t)n < (size_t)size ? (size_t)n : (size_t)size;
	return copy_to_user(user_buffer, target, length) ? -EFAULT : (long)length;
}

static int change_mode(const char *path, void *mode)
{
	return vfs_chmod(path, *(uint32_t *)mode);
}

SYSCALL_DEFINE2(chmod, const char *, path, uint32_t, mode)
{
	return change_name(path, change_mode, &mode);
}

SYSCALL_DEFINE2(fchmod, int, fd, uint32_t, mode)
{
	struct vfs_file *file;
	int err = file_of(fd, &file);
	if (err)
		return err;
	err = vfs_chmod_node(file->node, mode);
	vfs_file_put(file);
	return err;
}

static long change_owner(const char *user, uint32_t uid, uint32_t gid, bool follow)
{
	char path[VFS_PATH_MAX];
	int err = user_path(user, path);
	return err ? err : vfs_chown(path, uid, gid, follow);
}

SYSCALL_DEFINE3(chown, const char *, path, uint32_t, uid, uint32_t, gid)
{
	return change_owner(path, uid, gid, true);
}

SYSCALL_DEFINE3(lchown, const char *, path, uint32_t, uid, uint32_t, gid)
{
	return change_owner(path, uid, gid, false);
}

SYSCALL_DEFINE3(fchown, int, fd, uint32_t, uid, uint32_t, gid)
{
	struct vfs_file *file;
	int err = file_of(fd, &file);
	if (err)
		return err;
	err = vfs_chown_node(file->node, uid, gid);
	vfs_file_put(file);
	return err;
}

SYSCALL_DEFINE1(umask, uint32_t, mask)
{
	void *table = files();
	return table ? (long)vfs_files_set_umask(table, mask) : 022;
}
