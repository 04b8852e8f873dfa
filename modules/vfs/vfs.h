/*
 * The virtual file system: one name space of files, directories and devices
 * built from mounted file systems (the RAM file system with the initrd's
 * contents at "/", devfs at "/dev"), open files shared by reference, and
 * per-process file-descriptor tables.  Every vfs_* API function is a join
 * point ("vfs.open", "vfs.read", ...).
 *
 *     struct vfs_file *file;
 *     if (vfs_open("/etc/rc", VFS_O_RDONLY, 0, &file) == 0) {
 *             int64_t n = vfs_read(file, buffer, sizeof buffer); vfs_close(file); }
 *
 * For the process code (kernel/proc): struct process holds `void *files`, an
 * opaque descriptor table owned by the VFS, which also carries the working
 * directory (so `void *fs` stays unused).  Call vfs_files_create_initial() for
 * the first process (fd 0, 1, 2 on /dev/console), vfs_files_clone() at fork,
 * vfs_files_close_on_exec() at exec, vfs_files_release() at exit and
 * vfs_read_whole_file() to read a program.  The file system calls (open ...
 * getcwd, ioctl) live in modules/vfs/syscalls.c and find the table through
 * proc_slots(proc_current())->files.
 *
 * Paths given to the vfs_* functions are absolute (a relative one is taken
 * from "/"); the system calls join them to the process's working directory.
 * "." and ".." are resolved by name, before any lookup; symbolic links are
 * followed as the walk meets them.  Every call checks the calling process's
 * permission (permission.c): the name space is the same for the kernel and
 * for processes, kernel threads simply hold every privilege.
 */
#ifndef MODULES_VFS_VFS_H
#define MODULES_VFS_VFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "pagecache/pagecache.h"
#include "sched/sched.h"

#define VFS_PATH_MAX  256 /* bytes, with the terminating NUL */
#define VFS_NAME_MAX  255 /* one path component */
#define VFS_MAX_FDS   256 /* descriptors per table (a server's connections and their files) */
#define VFS_MAX_MOUNT 8

/* open() flags: Linux's values, as user space passes them. */
#define VFS_O_RDONLY    0
#define VFS_O_WRONLY    01
#define VFS_O_RDWR      02
#define VFS_O_ACCMODE   03
#define VFS_O_CREAT     0100
#define VFS_O_EXCL      0200
#define VFS_O_TRUNC     01000
#define VFS_O_APPEND    02000
#define VFS_O_NONBLOCK  04000
#define VFS_O_DIRECTORY 0200000
#define VFS_O_NOFOLLOW  0400000 /* a symbolic link as the last name: -ELOOP */
#define VFS_O_CLOEXEC   02000000

/* File types in a mode: Linux's values. */
#define VFS_S_IFMT       0170000
#define VFS_S_IFDIR      0040000
#define VFS_S_IFREG      0100000
#define VFS_S_IFCHR      0020000
#define VFS_S_IFIFO      0010000
#define VFS_S_IFLNK      0120000
#define VFS_S_ISUID      04000
#define VFS_S_ISGID      02000
#define VFS_S_ISVTX      01000 /* sticky: in a directory, only owners remove names */
#define VFS_IS_DIR(mode) (((mode)&VFS_S_IFMT) == VFS_S_IFDIR)
#define VFS_IS_REG(mode) (((mode)&VFS_S_IFMT) == VFS_S_IFREG)
#define VFS_IS_LNK(mode) (((mode)&VFS_S_IFMT) == VFS_S_IFLNK)

/* Access wanted (access()'s R_OK, W_OK, X_OK; the permission bits' order). */
#define VFS_MAY_READ  4
#define VFS_MAY_WRITE 2
#define VFS_MAY_EXEC  1

/* Symbolic links followed in one path walk before -ELOOP (Linux's 40). */
#define VFS_SYMLINK_MAX 40

/* chown's "leave this id as it is". */
#define VFS_ID_UNCHANGED 0xffffffffu

/* lseek whence */
#define VFS_SEEK_SET 0
#define VFS_SEEK_CUR 1
#define VFS_SEEK_END 2

/* Directory entry types (getdents64's d_type). */
#define VFS_DT_UNKNOWN 0
#define VFS_DT_FIFO    1
#define VFS_DT_CHR     2
#define VFS_DT_DIR     4
#define VFS_DT_REG     8
#define VFS_DT_LNK     10

/* Terminal ioctls the console answers (Linux's numbers). */
#define VFS_TCGETS     0x5401
#define VFS_TCSETS     0x5402
#define VFS_TCSETSW    0x5403
#define VFS_TCSETSF    0x5404
#define VFS_TIOCGPGRP  0x540f
#define VFS_TIOCSPGRP  0x5410
#define VFS_TIOCGWINSZ 0x5413
#define VFS_TIOCSCTTY  0x540e /* no argument: the caller's session takes the terminal */
#define VFS_TIOCNOTTY  0x5422 /* no argument: the caller's session lets it go */
#define VFS_TIOCGSID   0x5429

/* poll() events: Linux's values. */
#define VFS_POLL_IN   0x001
#define VFS_POLL_PRI  0x002
#define VFS_POLL_OUT  0x004
#define VFS_POLL_ERR  0x008
#define VFS_POLL_HUP  0x010
#define VFS_POLL_NVAL 0x020

struct vfs_node;
struct vfs_file;

struct vfs_stat {
	uint64_t device; /* which mount */
	uint64_t inode;
	uint32_t mode; /* type and permission bits */
	uint32_t links;
	uint32_t uid, gid; /* owner */
	uint64_t size;
	uint64_t rdev; /* for devices */
};

struct vfs_dirent {
	uint64_t inode;
	uint8_t type; /* VFS_DT_* */
	char name[VFS_NAME_MAX + 1];
};

/* ---- For file systems and devices ---------------------------------------- */

/* What a create op makes: type and permission bits, owner, and for a
 * symbolic link (VFS_S_IFLNK) its target (a NUL-terminated string). */
struct vfs_create {
	uint32_t mode;
	uint32_t uid, gid;
	const char *link_target;
};

/* What a file system does for its nodes.  A NULL entry means "not supported"
 * (-ENOTSUP, or -ENOTDIR for the directory operations on a non-directory).
 * Nodes come back referenced: the caller puts them with vfs_node_put. */
struct vfs_node_ops {
	/* Finds name (length bytes, no '/') in dir: 0 and *child, or -ENOENT. */
	int (*lookup)(struct vfs_node *dir, const char *name, size_t length,
		      struct vfs_node **child);
	/* Makes name in dir as what says (VFS_S_IFREG, VFS_S_IFDIR or
	 * VFS_S_IFLNK): 0 and *child, or -EEXIST, -ENOMEM, -ENOSPC. */
	int (*create)(struct vfs_node *dir, const char *name, size_t length,
		      const struct vfs_create *what, struct vfs_node **child);
	/* Gives node (of this file system, not a directory) one more name in
	 * dir: 0, -EEXIST, -EMLINK, -ENOENT (dir removed), -ENOMEM, -ENOSPC. */
	int (*link)(struct vfs_node *dir, const char *name, size_t length, struct vfs_node *node);
	/* Moves old_name of old_dir to new_name of new_dir (both of this file
	 * system), replacing what new_name named as POSIX says.  The VFS has
	 * checked that a directory is not moved into itself.  Returns 0,
	 * -ENOENT, -EISDIR, -ENOTDIR, -ENOTEMPTY, -ENOMEM, -ENOSPC, -EMLINK. */
	int (*rename)(struct vfs_node *old_dir, const char *old_name, size_t old_length,
		      struct vfs_node *new_dir, const char *new_name, size_t new_length);
	/* Copies a symbolic link's target into buffer (no NUL): its length. */
	int64_t (*readlink)(struct vfs_node *node, char *buffer, size_t size);
	/* Stores node's mode bits (07777), uid and gid as set in node now
	 * (chmod, chown).  NULL: kept in memory only. */
	int (*setattr)(struct vfs_node *node);
	/* On a file system's root: it is being unmounted (the VFS holds the
	 * mount's reference and drops it after).  Writes everything back and
	 * lets go of the file system: 0, or -EBUSY (a file is in use: the mount
	 * stays), -EIO.  NULL: nothing to write (the node is simply put). */
	int (*unmount)(struct vfs_node *root);
	/* Removes name from dir: 0, -ENOENT, -EISDIR (directory and !dir_wanted),
	 * -ENOTDIR (not a directory and dir_wanted), -ENOTEMPTY. */
	int (*unlink)(struct vfs_node *dir, const char *name, size_t length, bool dir_wanted);
	/* Fills *entry with the index'th entry of dir: 1, or 0 past the end. */
	int (*readdir)(struct vfs_node *dir, uint64_t index, struct vfs_dirent *entry);
	/* Sets a regular file's size: 0, -ENOMEM, -EFBIG. */
	int (*truncate)(struct vfs_node *node, uint64_t size);
	/* A shared mapping of a regular file: the frame of page index, kept
	 * (referenced, never evicted) until unmap_page; writable: the process
	 * may store to it (a hole gets its block now).  Returns 0 and *phys,
	 * -EFAULT (the page lies past the end of the file), -ENOSPC, -EIO,
	 * -ENOMEM.  NULL: the file system has no shared mappings. */
	int (*map_page)(struct vfs_node *node, uint64_t index, bool writable, uint64_t *phys);
	/* Ends one map_page of index with the same writable, whose frame was
	 * phys (the page it mapped, even if a truncate took it out of the
	 * file's pages since and another now holds index). */
	void (*unmap_page)(struct vfs_node *node, uint64_t index, bool writable, uint64_t phys);
	/* Writes the file's changed pages (mapped writable ones too) and its
	 * inode back, and flushes the disk: 0 or -EIO.  NULL: nothing to write. */
	int (*sync)(struct vfs_node *node);
	/* The last reference went away: free the node. */
	void (*release)(struct vfs_node *node);
};

/* What an open file does.  read and write get the file position for regular
 * files and 0 otherwise, and return bytes moved or a negative error. */
struct vfs_file_ops {
	int (*open)(struct vfs_file *file); /* may fail the open; NULL: nothing to do */
	int64_t (*read)(struct vfs_file *file, void *buffer, size_t length, uint64_t offset);
	/* Optional: read with buffer in the calling process's memory, copied
	 * straight from the file system's own pages (the system calls then
	 * need no bounce buffer).  Also returns -EFAULT when nothing could be
	 * stored (a short count when some was).  It must hold no lock of its
	 * own while it copies: the copy may fault in a page of a mapped file. */
	int64_t (*read_user)(struct vfs_file *file, void *buffer, size_t length, uint64_t offset);
	int64_t (*write)(struct vfs_file *file, const void *buffer, size_t length, uint64_t offset);
	/* Optional (regular files): write at the end of the file, taking the
	 * end under the same lock that extends the file, so that writers with
	 * separate opens never overwrite each other; *end is then the offset
	 * after the last byte written.  Without it an O_APPEND write goes to
	 * the size read before the write. */
	int64_t (*append)(struct vfs_file *file, const void *buffer, size_t length, uint64_t *end);
	/* argument is a kernel buffer of the command's size; -ENOTTY when unknown. */
	int (*ioctl)(struct vfs_file *file, unsigned long command, void *argument);
	void (*release)(struct vfs_file *file); /* the last reference was closed */
	/* What the file is ready for now (VFS_POLL_* bits), without waiting.  A
	 * file with this op calls vfs_poll_notify_key (or vfs_poll_notify)
	 * whenever the answer may have changed.  NULL: always ready to read and
	 * write (regular files). */
	unsigned (*poll)(struct vfs_file *file);
	/* The object whose vfs_poll_notify_key calls concern this file (its
	 * pipe, its connection), so that a poller sleeps through the others'.
	 * NULL op or NULL answer: every notification concerns it. */
	const void *(*poll_key)(struct vfs_file *file);
};

/* A file, directory or device.  A file system embeds it in its own node and
 * fills it with vfs_node_init; the VFS counts the references. */
struct vfs_node {
	int refs;
	uint32_t mode;
	uint32_t links;
	uint32_t uid, gid; /* owner; 0 (root) unless the file system sets them */
	uint64_t inode;
	uint64_t size; /* bytes, regular files (the file system keeps it current) */
	uint64_t rdev;
	uint64_t device; /* set by vfs_mount for a root; inherited by lookups */
	const struct vfs_node_ops *ops;
	const struct vfs_file_ops *file_ops;
	void *private;
};

/* An open file: a node with a position and the flags it was opened with.
 * Shared by every descriptor that refers to it (dup, fork). */
struct vfs_file {
	int refs;
	unsigned flags;        /* VFS_O_ACCMODE, VFS_O_APPEND, VFS_O_NONBLOCK */
	struct vfs_node *node; /* referenced */
	const struct vfs_file_ops *ops;
	void *private; /* the file system's or device's */
	struct mutex position_lock;
	uint64_t position;
	struct pcache_ahead read_ahead; /* a cached file's sequential-read state */
};

/* Sets refs to 1 and the other fields as given. */
void vfs_node_init(struct vfs_node *node, uint32_t mode, const struct vfs_node_ops *ops,
		   const struct vfs_file_ops *file_ops, void *private);
/* Takes a reference; returns node. */
struct vfs_node *vfs_node_get(struct vfs_node *node);
/* Drops a reference; the last one calls ops->release.  NULL is ignored. */
void vfs_node_put(struct vfs_node *node);
/* Whether the calling process may access node as want says (VFS_MAY_*
 * bits): 0, -EACCES, -EINVAL (bad want).  See permission.c for the rules. */
int vfs_permission(const struct vfs_node *node, int want);
/* A fresh inode number, unique across file systems. */
uint64_t vfs_next_inode(void);

/* Opens a file on node (no name: pipes, sockets): takes a reference to node.
 * The file's private pointer is private, or node->private when that is NULL.
 * Returns 0 and *file, or -ENOMEM, or what ops->open returned. */
int vfs_file_create(struct vfs_node *node, unsigned flags, void *private, struct vfs_file **file);
/* Takes a reference to an open file; returns file. */
struct vfs_file *vfs_file_get(struct vfs_file *file);
/* Drops a reference taken for the length of one operation (vfs_fd_get,
 * vfs_file_get); the last one closes the file as vfs_close does.  Not a join
 * point: a system call putting back the file it worked on is not a close by
 * the user (vfs_close, the vfs.close join point, is).  NULL is ignored. */
void vfs_file_put(struct vfs_file *file);

/* Blocking waits on files (pipes, the console) give up with -EINTR when the
 * calling process has been told to end (proc_signal_pending). */
/* True when the calling thread should stop waiting (its process is ending). */
bool vfs_signal_pending(void);
/* SIGPIPE to the calling process (a write to a pipe or socket with no reader). */
void vfs_send_sigpipe(void);

/* ---- Mounting ------------------------------------------------------------ */

/* vfs_init sets up the name space (an empty RAM file system at "/", devfs
 * at "/dev").  Once, after sched_init; panics when memory runs out. */
void vfs_init(void);
/* The trace stream's "file" sink (trace_sink.c), registered by vfs_init. */
void vfs_register_trace_sink(void);
/* Makes root (referenced by the mount) the root of path, which must be "/" or
 * an absolute path of a directory of the parent mount (created if missing).
 * Returns 0, -EBUSY (path is mounted already), -ENOSPC (VFS_MAX_MOUNT),
 * -EINVAL, -ENAMETOOLONG, -ENOTDIR. */
int vfs_mount(const char *path, struct vfs_node *root);
/* Takes the mount at path away, after its file system's unmount op agreed.
 * Returns 0, -EINVAL (not a mount point), -EBUSY ("/", a mount below it, a
 * walk or a file still in it), or the unmount op's error. */
int vfs_umount(const char *path);
/* Returns an empty RAM file system's root (referenced), or NULL (no memory).
 * Files grow as they are written. */
struct vfs_node *vfs_ramfs_create(void);

/* ---- Files --------------------------------------------------------------- */

/* Opens path with flags (VFS_O_*) and, when VFS_O_CREAT makes it, mode.
 * Returns 0 and *file, or -ENOENT, -ENOTDIR (a component, or VFS_O_DIRECTORY
 * on a non-directory), -EISDIR (writing a directory), -EEXIST (VFS_O_CREAT |
 * VFS_O_EXCL), -ENAMETOOLONG, -EINVAL (bad flags), -ENOMEM. */
int vfs_open(const char *path, int flags, uint32_t mode, struct vfs_file **file);
/* Where a read's buffer lies: kernel memory, or the calling process's
 * (only for files that vfs_reads_to_user says can). */
enum vfs_buffer { VFS_KERNEL_BUFFER, VFS_USER_BUFFER };
/* Reads up to length bytes at the position (advancing it) into buffer, which
 * lies where where says (the join point "vfs.read").  Returns the bytes read
 * (0 at end of file), or -EBADF (not open for reading), -EISDIR, -EAGAIN
 * (nonblocking, nothing there), -EINTR, or the device's error; for a user
 * buffer also -EFAULT, and -EINVAL when the file cannot read into one. */
int64_t vfs_read_to(struct vfs_file *file, void *buffer, size_t length, enum vfs_buffer where);
static inline int64_t vfs_read(struct vfs_file *file, void *buffer, size_t length)
{
	return vfs_read_to(file, buffer, length, VFS_KERNEL_BUFFER);
}
/* Whether file reads straight into user memory (its read_user op). */
bool vfs_reads_to_user(const struct vfs_file *file);
/* Writes length bytes at the position (at the end with VFS_O_APPEND).
 * Returns the bytes written, or -EBADF, -EISDIR, -EPIPE, -EAGAIN, -EINTR,
 * -ENOMEM, -EFBIG. */
int64_t vfs_write(struct vfs_file *file, const void *buffer, size_t length);
/* vfs_read and vfs_write at offset, leaving the position alone (pread,
 * pwrite; VFS_O_APPEND does not apply).  Regular files only: -ESPIPE for a
 * pipe or device, -EISDIR for a directory; otherwise vfs_read's and
 * vfs_write's errors. */
int64_t vfs_pread_to(struct vfs_file *file, void *buffer, size_t length, uint64_t offset,
		     enum vfs_buffer where);
static inline int64_t vfs_pread(struct vfs_file *file, void *buffer, size_t length, uint64_t offset)
{
	return vfs_pread_to(file, buffer, length, offset, VFS_KERNEL_BUFFER);
}
int64_t vfs_pwrite(struct vfs_file *file, const void *buffer, size_t length, uint64_t offset);
/* Sets an open regular file's size (ftruncate).  Returns 0, -EBADF (not
 * open for writing), -EINVAL (not a regular file), -EFBIG, -ENOMEM. */
int vfs_truncate_file(struct vfs_file *file, uint64_t size);
/* Moves the position (VFS_SEEK_*).  Returns the new position, or -ESPIPE
 * (pipe or device), -EINVAL (bad whence or a negative result). */
int64_t vfs_lseek(struct vfs_file *file, int64_t offset, int whence);
/* Fills *entry with the next directory entry ("." and ".." first).
 * Returns 1, 0 at the end, or -ENOTDIR. */
int vfs_readdir(struct vfs_file *file, struct vfs_dirent *entry);
/* Runs a device command; argument is a kernel buffer.  Returns the device's
 * answer, or -ENOTTY (not a terminal, or an unknown command). */
int vfs_ioctl(struct vfs_file *file, unsigned long command, void *argument);
/* Drops a reference to file; the last one closes it.  Returns 0. */
int vfs_close(struct vfs_file *file);
/* Fills *stat for an open file.  Returns 0. */
int vfs_stat_file(struct vfs_file *file, struct vfs_stat *stat);

/* ---- Readiness (poll and select; modules/vfs/poll.c) ---------------------- */

/* What file is ready for now: its poll op's VFS_POLL_* bits, or IN | OUT for
 * a file without one.  Returns VFS_POLL_NVAL for NULL. */
unsigned vfs_poll(struct vfs_file *file);
/* Says that the readiness of the files whose poll_key is object may have
 * changed: wakes the pollers watching them (and those watching everything).
 * Any context, interrupts included; cheap when nobody waits. */
void vfs_poll_notify_key(const void *object);
/* Which of the notification buckets object falls in (two objects in one
 * bucket wake each other's pollers). */
unsigned vfs_poll_bucket(const void *object);
/* Says that some file's readiness may have changed, without saying which:
 * wakes every poller. */
void vfs_poll_notify(void);
/* The count of notifications so far, read before checking files. */
uint64_t vfs_poll_sequence(void);
/* Sleeps until any notification comes after sequence was read, timeout_ns
 * passes, or the calling process must end.  Returns 0 or -ETIMEDOUT. */
int vfs_poll_wait(uint64_t sequence, uint64_t timeout_ns);

/* What one poller watches: the hash buckets of its files' poll keys (the
 * poller's own, on its stack). */
struct vfs_poll_watch {
	uint64_t buckets;
	uint64_t seen; /* the buckets' notification counts when it went to sleep */
	struct thread *thread;
};
/* Starts an empty watch (it still sees notifications that name no object). */
void vfs_poll_watch_init(struct vfs_poll_watch *watch);
/* Adds file's poll key to watch; call it for each file asked. */
void vfs_poll_watch_file(struct vfs_poll_watch *watch, struct vfs_file *file);
/* Sleeps until a notification that concerns watch's files comes after
 * sequence was read (returns at once if any notification came since),
 * timeout_ns passes, or the calling process must end.  Returns 0 or
 * -ETIMEDOUT. */
int vfs_poll_wait_watch(struct vfs_poll_watch *watch, uint64_t sequence, uint64_t timeout_ns);

/* ---- Names --------------------------------------------------------------- */

/* Fills *stat for path.  Returns 0, -ENOENT, -ENOTDIR, -ENAMETOOLONG. */
int vfs_stat(const char *path, struct vfs_stat *stat);
/* Makes a directory.  Returns 0, -EEXIST, -ENOENT (no parent), -ENOTDIR,
 * -ENAMETOOLONG, -ENOTSUP (the file system cannot), -ENOMEM. */
int vfs_mkdir(const char *path, uint32_t mode);
/* Removes a name (dir_wanted: an empty directory, as rmdir).  Returns 0,
 * -ENOENT, -EISDIR, -ENOTDIR, -ENOTEMPTY, -EBUSY (a mount point, or a
 * directory with a mount below it), -ENOTSUP. */
int vfs_unlink(const char *path, bool dir_wanted);
/* Fills *stat for path itself when it is a symbolic link (lstat).  Returns
 * vfs_stat's errors. */
int vfs_lstat(const char *path, struct vfs_stat *stat);
/* Moves old_path to new_path, replacing a file there (or an empty directory
 * by a directory), as POSIX rename.  The same file under both names: nothing
 * happens.  Returns 0, -ENOENT, -EXDEV (another mount), -EINVAL (a directory
 * into itself), -EISDIR, -ENOTDIR, -ENOTEMPTY, -EBUSY (a mount point, or a
 * directory with a mount below it),
 * -EACCES, -EPERM (sticky directory), -ENOTSUP, -ENOSPC, -ENOMEM. */
int vfs_rename(const char *old_path, const char *new_path);
/* Gives existing (a symbolic link itself, not what it names) another name.
 * Returns 0, -ENOENT, -EEXIST, -EPERM (a directory, or a file system without
 * hard links), -EXDEV, -EMLINK, -EACCES, -ENOSPC, -ENOMEM. */
int vfs_link(const char *existing, const char *new_path);
/* Makes path a symbolic link to target (any text, 1 to VFS_PATH_MAX - 1
 * bytes; not checked).  Returns vfs_mkdir's errors, -ENOENT (empty target). */
int vfs_symlink(const char *target, const char *path);
/* Copies the target of the symbolic link path into buffer (size bytes at
 * most, no NUL).  Returns its length, or -EINVAL (not a link), -ENOENT ... */
int64_t vfs_readlink(const char *path, char *buffer, size_t size);
/* Whether the caller may access path as want says (VFS_MAY_* bits; 0: that
 * it exists).  Returns 0, -EACCES, -EINVAL, or vfs_stat's errors. */
int vfs_access(const char *path, int want);
/* Sets node's permission bits (07777).  The owner or PRIV_FILES only.
 * Returns 0, -EPERM, -EOPNOTSUPP (a symbolic link), -EIO. */
int vfs_chmod_node(struct vfs_node *node, uint32_t mode);
/* Sets node's owner and group (VFS_ID_UNCHANGED leaves one); a regular
 * file loses its set-id bits.  PRIV_FILES, or the owner choosing its own
 * group.  Returns 0, -EPERM, -EIO. */
int vfs_chown_node(struct vfs_node *node, uint32_t uid, uint32_t gid);
/* vfs_chmod_node and vfs_chown_node on a path (follow: a last symbolic link
 * is followed).  Returns their errors and vfs_stat's. */
int vfs_chmod(const char *path, uint32_t mode);
int vfs_chown(const char *path, uint32_t uid, uint32_t gid, bool follow);
/* Reads a whole regular file into a new kmalloc buffer (*buffer, *length;
 * the caller kfrees it), for exec.  Returns 0, or vfs_open's errors, -EISDIR,
 * -EFBIG (over 64 MiB), -ENOMEM, -EIO (the file changed size while read). */
int vfs_read_whole_file(const char *path, void **buffer, size_t *length);

/* Joins path to base (an absolute directory; NULL for "/") and resolves ".",
 * ".." and repeated slashes by name.  Writes the absolute result into out
 * (size bytes).  Returns its length, or -ENOENT (empty path), -ENAMETOOLONG
 * (result or a component too long), -EINVAL (base not absolute). */
int vfs_path_normalize(const char *base, const char *path, char *out, size_t size);

/* ---- Descriptor tables --------------------------------------------------- */

/* Returns a table with fd 0, 1 and 2 on /dev/console (or empty ones when it
 * cannot be opened) and "/" as working directory, or NULL (no memory). */
void *vfs_files_create_initial(void);
/* Returns an empty table with "/" as working directory, or NULL. */
void *vfs_files_create(void);
/* For fork: a copy of parent_files sharing its open files.  Returns 0 and
 * *child_files, or -ENOMEM. */
int vfs_files_clone(void *parent_files, void **child_files);
/* For exec: closes the descriptors marked close-on-exec. */
void vfs_files_close_on_exec(void *files);
/* For exit: closes every descriptor and frees the table.  NULL is ignored. */
void vfs_files_release(void *files);

/* Puts file (the table takes the caller's reference) in the lowest free
 * slot.  Returns the descriptor, or -EMFILE. */
int vfs_fd_install(void *files, struct vfs_file *file, bool close_on_exec);
/* Returns 0 and a new reference in *file (put back with vfs_file_put), or
 * -EBADF. */
int vfs_fd_get(void *files, int fd, struct vfs_file **file);
/* Returns 0 or -EBADF. */
int vfs_fd_close(void *files, int fd);
/* Copies fd to the lowest free slot.  Returns it, or -EBADF, -EMFILE. */
int vfs_fd_dup(void *files, int fd);
/* Copies fd to the lowest free slot at or above lowest, marked close-on-exec
 * as asked (fcntl F_DUPFD).  Returns it, or -EBADF, -EMFILE, -EINVAL. */
int vfs_fd_dup_from(void *files, int fd, int lowest, bool close_on_exec);
/* Makes new_fd refer to old_fd's file (closing what new_fd had; nothing when
 * they are equal).  Returns new_fd, or -EBADF. */
int vfs_fd_dup2(void *files, int old_fd, int new_fd);
/* Marks or clears close-on-exec.  Returns 0 or -EBADF. */
int vfs_fd_set_cloexec(void *files, int fd, bool close_on_exec);
/* Returns 1 when fd is marked close-on-exec, 0 when not, or -EBADF. */
int vfs_fd_get_cloexec(void *files, int fd);
/* The table's working directory: copies it into out (VFS_PATH_MAX bytes). */
void vfs_files_get_cwd(void *files, char *out);
/* Changes the working directory to path (absolute; a directory).
 * Returns 0, -ENOENT, -ENOTDIR, -ENAMETOOLONG. */
int vfs_files_set_cwd(void *files, const char *path);
/* Sets the table's file-creation mask (umask; 022 at first, inherited by
 * fork) to mask & 0777 and returns the old one. */
uint32_t vfs_files_set_umask(void *files, uint32_t mask);
/* The table's file-creation mask (022 for NULL). */
uint32_t vfs_files_umask(void *files);
/* Descriptors in use (for tests and leak checks). */
unsigned vfs_files_count_open(void *files);

#endif
