/*
 * File system calls for newlib and programs: open ... getcwd.  Each converts
 * newlib's flags and structures to the kernel's (Linux's), makes one system
 * call and turns a -errno result into errno and -1.  newlib itself calls the
 * plain names (read, write, ...); the underscored names (_read, ...) are the
 * same functions, for code written against newlib's usual porting layer.  read
 * and write return int: newlib's <unistd.h> says so for this target.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* open() flag bits: newlib's value, Linux's value (O_SYNC is two bits there:
 * O_DSYNC and its own; FASYNC is O_ASYNC). */
static const struct {
	int newlib_flag;
	int linux_flag;
} open_flags[] = {
    {O_CREAT, 0100},        {O_EXCL, 0200},        {O_NOCTTY, 0400},      {O_TRUNC, 01000},
    {O_APPEND, 02000},      {O_NONBLOCK, 04000},   {O_SYNC, 04010000},    {O_DIRECT, 040000},
    {O_DIRECTORY, 0200000}, {O_NOFOLLOW, 0400000}, {O_CLOEXEC, 02000000}, {FASYNC, 020000},
};

/* newlib's O_EXEC and O_SEARCH (one bit), and its System V FNBIO: Linux has
 * none of them. */
#define NEWLIB_ONLY_OPEN_FLAGS (O_SEARCH | FNBIO)

static long flags_to_linux(int flags)
{
	long out = flags & O_ACCMODE; /* 0, 1, 2 on both sides */
	for (unsigned i = 0; i < sizeof(open_flags) / sizeof(open_flags[0]); i++)
		if (flags & open_flags[i].newlib_flag)
			out |= open_flags[i].linux_flag;
	return out;
}

static int flags_from_linux(long flags)
{
	int out = (int)(flags & 3);
	for (unsigned i = 0; i < sizeof(open_flags) / sizeof(open_flags[0]); i++)
		if ((flags & open_flags[i].linux_flag) == open_flags[i].linux_flag)
			out |= open_flags[i].newlib_flag;
	return out;
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = (flags & O_CREAT) ? va_arg(ap, mode_t) : 0;
	va_end(ap);
	if (flags & NEWLIB_ONLY_OPEN_FLAGS) {
		errno = EINVAL;
		return -1;
	}
	return (int)sys_result(ms_syscall3(__NR_open, (long)path, flags_to_linux(flags), mode));
}
ALSO_NAMED(open, _open);

int close(int fd)
{
	return (int)sys_result(ms_syscall3(__NR_close, fd, 0, 0));
}
ALSO_NAMED(close, _close);

_READ_WRITE_RETURN_TYPE read(int fd, void *buffer, size_t count)
{
	return sys_result(ms_syscall3(__NR_read, fd, (long)buffer, (long)count));
}
ALSO_NAMED(read, _read);

_READ_WRITE_RETURN_TYPE write(int fd, const void *buffer, size_t count)
{
	return sys_result(ms_syscall3(__NR_write, fd, (long)buffer, (long)count));
}
ALSO_NAMED(write, _write);

ssize_t pread(int fd, void *buffer, size_t count, off_t offset)
{
	return sys_result(ms_syscall6(__NR_pread64, fd, (long)buffer, (long)count, offset, 0, 0));
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset)
{
	return sys_result(ms_syscall6(__NR_pwrite64, fd, (long)buffer, (long)count, offset, 0, 0));
}

int ftruncate(int fd, off_t length)
{
	return (int)sys_result(ms_syscall3(__NR_ftruncate, fd, length, 0));
}

int fsync(int fd)
{
	return (int)sys_result(ms_syscall3(__NR_fsync, fd, 0, 0));
}

void sync(void)
{
	ms_syscall3(__NR_sync, 0, 0, 0);
}

off_t lseek(int fd, off_t offset, int whence)
{
	return sys_result(ms_syscall3(__NR_lseek, fd, offset, whence));
}
ALSO_NAMED(lseek, _lseek);

int fstat(int fd, struct stat *st)
{
	struct linux_stat kst;
	if (sys_result(ms_syscall3(__NR_fstat, fd, (long)&kst, 0)) < 0)
		return -1;
	stat_from_linux(&kst, st);
	return 0;
}
ALSO_NAMED(fstat, _fstat);

int stat(const char *path, struct stat *st)
{
	struct linux_stat kst;
	if (sys_result(ms_syscall3(__NR_stat, (long)path, (long)&kst, 0)) < 0)
		return -1;
	stat_from_linux(&kst, st);
	return 0;
}
ALSO_NAMED(stat, _stat);

int lstat(const char *path, struct stat *st);
int lstat(const char *path, struct stat *st)
{
	struct linux_stat kst;
	if (sys_result(ms_syscall3(__NR_lstat, (long)path, (long)&kst, 0)) < 0)
		return -1;
	stat_from_linux(&kst, st);
	return 0;
}

/* The kernel's access, or stat's answer to "does it exist" when it has none. */
int access(const char *path, int mode)
{
	long result = ms_syscall3(__NR_access, (long)path, mode, 0);
	if (result == -38) {
		struct stat st;
		return stat(path, &st);
	}
	return (int)sys_result(result);
}

/* A terminal answers TCGETS; anything else is not one (errno ENOTTY). */
int isatty(int fd)
{
	char termios[64];
	long result = ms_syscall3(__NR_ioctl, fd, 0x5401, (long)termios);
	if (result == 0)
		return 1;
	errno = result == -9 ? EBADF : ENOTTY;
	return 0;
}
ALSO_NAMED(isatty, _isatty);

int unlink(const char *path)
{
	return (int)sys_result(ms_syscall3(__NR_unlink, (long)path, 0, 0));
}
ALSO_NAMED(unlink, _unlink);

int link(const char *existing, const char *new_path)
{
	return (int)sys_result(ms_syscall3(__NR_link, (long)existing, (long)new_path, 0));
}
ALSO_NAMED(link, _link);

/* newlib's rename() calls this through _rename_r. */
int _rename(const char *old_path, const char *new_path);
int _rename(const char *old_path, const char *new_path)
{
	return (int)sys_result(ms_syscall3(__NR_rename, (long)old_path, (long)new_path, 0));
}

int symlink(const char *target, const char *path)
{
	return (int)sys_result(ms_syscall3(__NR_symlink, (long)target, (long)path, 0));
}

ssize_t readlink(const char *restrict path, char *restrict buffer, size_t size)
{
	return sys_result(ms_syscall3(__NR_readlink, (long)path, (long)buffer, (long)size));
}

int chmod(const char *path, mode_t mode)
{
	return (int)sys_result(ms_syscall3(__NR_chmod, (long)path, mode & 07777, 0));
}

int fchmod(int fd, mode_t mode)
{
	return (int)sys_result(ms_syscall3(__NR_fchmod, fd, mode & 07777, 0));
}

/* newlib's ids are 16 bits: (uid_t)-1 is 0xffff, the kernel's "unchanged"
 * is 0xffffffff. */
static long id_to_linux(unsigned id, unsigned unchanged)
{
	return id == unchanged ? 0xffffffffL : (long)id;
}

int chown(const char *path, uid_t owner, gid_t group)
{
	return (int)sys_result(ms_syscall3(__NR_chown, (long)path, id_to_linux(owner, (uid_t)-1),
					   id_to_linux(group, (gid_t)-1)));
}

int lchown(const char *path, uid_t owner, gid_t group)
{
	return (int)sys_result(ms_syscall3(__NR_lchown, (long)path, id_to_linux(owner, (uid_t)-1),
					   id_to_linux(group, (gid_t)-1)));
}

int fchown(int fd, uid_t owner, gid_t group)
{
	return (int)sys_result(ms_syscall3(__NR_fchown, fd, id_to_linux(owner, (uid_t)-1),
					   id_to_linux(group, (gid_t)-1)));
}

mode_t umask(mode_t mask)
{
	return (mode_t)ms_syscall3(__NR_umask, mask & 0777, 0, 0);
}

int mkdir(const char *path, mode_t mode)
{
	return (int)sys_result(ms_syscall3(__NR_mkdir, (long)path, mode, 0));
}
ALSO_NAMED(mkdir, _mkdir);

int rmdir(const char *path)
{
	return (int)sys_result(ms_syscall3(__NR_rmdir, (long)path, 0, 0));
}

int pipe(int fds[2])
{
	return (int)sys_result(ms_syscall3(__NR_pipe, (long)fds, 0, 0));
}

int dup(int fd)
{
	return (int)sys_result(ms_syscall3(__NR_dup, fd, 0, 0));
}

int dup2(int fd, int new_fd)
{
	return (int)sys_result(ms_syscall3(__NR_dup2, fd, new_fd, 0));
}

int chdir(const char *path)
{
	return (int)sys_result(ms_syscall3(__NR_chdir, (long)path, 0, 0));
}

/* As POSIX, and as glibc when buffer is NULL: a malloc'd copy of size bytes
 * (or as long as needed when size is 0). */
char *getcwd(char *buffer, size_t size)
{
	char path[256];
	if (sys_result(ms_syscall3(__NR_getcwd, (long)path, sizeof(path), 0)) < 0)
		return NULL;
	size_t length = strlen(path) + 1;
	if (!buffer) {
		buffer = malloc(size > length ? size : length);
		if (!buffer)
			return NULL;
		size = size > length ? size : length;
	}
	if (length > size) {
		errno = ERANGE;
		return NULL;
	}
	memcpy(buffer, path, length);
	return buffer;
}

/* fcntl commands: newlib's number, Linux's.  Every command the two share;
 * newlib's remote-lock commands (F_RGETLK ...) have no Linux number. */
static const struct {
	int newlib_command;
	int linux_command;
} fcntl_commands[] = {
    {F_DUPFD, 0},
    {F_GETFD, 1},
    {F_SETFD, 2},
    {F_GETFL, 3},
    {F_SETFL, 4},
    {F_GETLK, 5},
    {F_SETLK, 6},
    {F_SETLKW, 7},
    {F_SETOWN, 8},
    {F_GETOWN, 9},
    {F_DUPFD_CLOEXEC, 1030},
};

/* -1 for a command Linux does not have. */
static int fcntl_command_to_linux(int command)
{
	for (size_t i = 0; i < sizeof fcntl_commands / sizeof fcntl_commands[0]; i++)
		if (fcntl_commands[i].newlib_command == command)
			return fcntl_commands[i].linux_command;
	return -1;
}

/* Linux's struct flock: its l_pid is an int, newlib's a short. */
struct linux_flock {
	short type;
	short whence;
	int64_t start;
	int64_t len;
	int pid;
};
_Static_assert(sizeof(struct linux_flock) == 32, "Linux x86_64's struct flock");

/* Lock types, indexed by Linux's number (F_RDLCK, F_WRLCK, F_UNLCK). */
static const short newlib_lock_types[] = {F_RDLCK, F_WRLCK, F_UNLCK};

static bool lock_to_linux(const struct flock *in, struct linux_flock *out)
{
	for (short i = 0; i < 3; i++) {
		if (newlib_lock_types[i] == in->l_type) {
			*out = (struct linux_flock){i, in->l_whence, in->l_start, in->l_len,
						    in->l_pid};
			return true;
		}
	}
	return false;
}

/* False when Linux's answer does not fit newlib's struct (a pid above a
 * short's range). */
static bool lock_from_linux(const struct linux_flock *in, struct flock *out)
{
	if (in->type < 0 || in->type > 2 || in->pid != (short)in->pid)
		return false;
	out->l_type = newlib_lock_types[in->type];
	out->l_whence = in->whence;
	out->l_start = in->start;
	out->l_len = in->len;
	out->l_pid = (short)in->pid;
	return true;
}

/* F_GETLK, F_SETLK and F_SETLKW with the struct flock converted both ways. */
static int lock_command(int fd, int command, int linux_command, struct flock *lock)
{
	struct linux_flock linux_lock;
	if (!lock || !lock_to_linux(lock, &linux_lock)) {
		errno = lock ? EINVAL : EFAULT;
		return -1;
	}
	if (sys_result(ms_syscall3(__NR_fcntl, fd, linux_command, (long)&linux_lock)) < 0)
		return -1;
	if (command == F_GETLK && !lock_from_linux(&linux_lock, lock)) {
		errno = EOVERFLOW;
		return -1;
	}
	return 0;
}

/* The command converted, with F_GETFL and F_SETFL's open() flags and the
 * lock commands' struct flock; the other arguments pass through.  F_GETOWN
 * gives a process group as a negative number, which reads as an error (as in
 * Linux's own ABI). */
int fcntl(int fd, int command, ...)
{
	va_list ap;
	va_start(ap, command);
	long argument = va_arg(ap, long);
	va_end(ap);
	int linux_command = fcntl_command_to_linux(command);
	if (linux_command < 0 || (command == F_SETFL && (argument & NEWLIB_ONLY_OPEN_FLAGS))) {
		errno = EINVAL;
		return -1;
	}
	if (command == F_GETLK || command == F_SETLK || command == F_SETLKW)
		return lock_command(fd, command, linux_command, (struct flock *)argument);
	if (command == F_SETFL)
		argument = flags_to_linux((int)argument);
	long result = sys_result(ms_syscall3(__NR_fcntl, fd, linux_command, argument));
	if (command == F_GETFL && result >= 0)
		result = flags_from_linux(result);
	return (int)result;
}
ALSO_NAMED(fcntl, _fcntl);
