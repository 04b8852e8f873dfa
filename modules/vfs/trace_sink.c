/*
 * The trace stream's "file" sink: a session written as a CTF trace directory
 * in the file system (DIR/metadata and one DIR/stream_<cpu> per CPU), ready
 * to copy out and read with babeltrace2; and the store for files a host
 * sends over the trace stream's control channel (into /tmp).  Both write as
 * the kernel, past every permission bit, so neither writes through a name
 * another user could have planted: a file is stored as a new root-only one
 * (/tmp is sticky: nobody else may then rename or remove it), and a trace
 * directory that exists already must be root's and writable by root alone.
 */
#include "vfs/vfs.h"

#include "console/console.h"
#include "cpu/percpu.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "trace/trace.h"

static char directory[128];

/* An existing directory the kernel may write a trace into: no symbolic link,
 * root's, and nobody else may add or replace names in it. */
static int check_existing_directory(const char *path)
{
	struct vfs_stat st;
	int error = vfs_lstat(path, &st);
	if (error)
		return error;
	if (!VFS_IS_DIR(st.mode))
		return -ENOTDIR;
	if (st.uid != 0 || (st.mode & 022)) {
		pr_warn("trace: %s is not root's alone: no trace written there\n", path);
		return -EPERM;
	}
	return 0;
}

static int open_directory(void *context, const char *argument)
{
	if (strlcpy(directory, argument, sizeof directory) >= sizeof directory)
		return -ENAMETOOLONG;
	int error = vfs_mkdir(directory, 0700); /* join points' arguments may be kernel addresses */
	return error == -EEXIST ? check_existing_directory(directory) : error;
}

static int write_file(const char *name, int flags, const void *data, uint32_t length)
{
	char path[160];
	snprintf(path, sizeof path, "%s/%s", directory, name);
	struct vfs_file *file;
	int error = vfs_open(path, VFS_O_WRONLY | VFS_O_CREAT | flags, 0600, &file);
	if (error)
		return error;
	int64_t written = vfs_write(file, data, length);
	vfs_close(file);
	return written == (int64_t)length ? 0 : written < 0 ? (int)written : -EIO;
}

/* A new session: the streams of an earlier one in this directory go. */
static void empty_streams(void)
{
	for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++) {
		char path[160];
		snprintf(path, sizeof path, "%s/stream_%u", directory, cpu);
		struct vfs_file *file;
		if (vfs_open(path, VFS_O_WRONLY | VFS_O_TRUNC, 0, &file) == 0)
			vfs_close(file);
	}
}

static int write_frame(void *context, uint16_t kind, uint16_t stream, const void *data,
		       uint32_t length)
{
	char name[24];
	switch (kind) {
	case TRACE_FRAME_METADATA:
		empty_streams();
		return write_file("metadata", VFS_O_TRUNC, data, length);
	case TRACE_FRAME_PACKET:
		snprintf(name, sizeof name, "stream_%u", stream);
		return write_file(name, VFS_O_APPEND, data, length);
	default: return 0; /* END and TEXT: the counts are the session's to report */
	}
}

static const struct trace_sink file_sink = {
    .name = "file", .open = open_directory, .frame = write_frame};

/* A file a host sent over the trace stream's control channel: /tmp/NAME, made
 * anew (whatever had the name goes first; O_EXCL follows no link), 0600. */
static int store_file(const char *name, const void *data, size_t length)
{
	char path[96];
	snprintf(path, sizeof path, "/tmp/%s", name);
	vfs_mkdir("/tmp", 01777); /* there already, unless booted without an initrd */
	vfs_unlink(path, false);
	struct vfs_file *file;
	int error = vfs_open(path, VFS_O_WRONLY | VFS_O_CREAT | VFS_O_EXCL, 0600, &file);
	if (error)
		return error;
	int64_t written = vfs_write(file, data, length);
	vfs_close(file);
	return written == (int64_t)length ? 0 : written < 0 ? (int)written : -EIO;
}

void vfs_register_trace_sink(void)
{
	trace_register_sink(&file_sink);
	trace_set_file_store(store_file);
}
