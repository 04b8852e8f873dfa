/*
 * Pipes: a one-way byte channel between a read end and a write end, each an
 * open file (struct vfs_file) that descriptors share like any other.  Reads
 * block until data or end of file (every write end closed); writes block
 * until room, and fail with -EPIPE (and SIGPIPE to the writer) once every
 * read end is closed.  Writes of at most PIPE_ATOMIC_MAX bytes are never
 * interleaved with other writers' and go in whole or not at all; a larger
 * nonblocking write goes in as far as there is room.  Poll's POLLOUT on the
 * write end means room for PIPE_ATOMIC_MAX bytes.  "pipe.read" and "pipe.write" are join
 * points.
 *
 *     struct vfs_file *read_end, *write_end;
 *     pipe_create(&read_end, &write_end);               // or -ENOMEM, -ENFILE
 *     vfs_write(write_end, "hi", 2); vfs_read(read_end, buffer, 2);
 */
#ifndef MODULES_PIPE_PIPE_H
#define MODULES_PIPE_PIPE_H

#include <stddef.h>
#include <stdint.h>

#include "vfs/vfs.h"

#define PIPE_BUFFER_SIZE 16384 /* the ring, larger than PIPE_ATOMIC_MAX */
#define PIPE_ATOMIC_MAX  4096  /* POSIX's PIPE_BUF */

/* Makes a pipe.  flags may hold VFS_O_NONBLOCK (both ends).  Returns 0 with
 * *read_end and *write_end (one reference each, closed with vfs_close), or
 * -ENOMEM, or -ENFILE when the calling user's share of kernel memory
 * (proc_user_memory_charge) has no room for it. */
int pipe_create(unsigned flags, struct vfs_file **read_end, struct vfs_file **write_end);

/* The file operations behind the ends, join points.  pipe_read returns the
 * bytes read (up to length; 0 at end of file), or -EAGAIN (nonblocking and
 * empty), -EINTR (a signal while waiting).  pipe_write returns length, or the
 * bytes written before the failure (a nonblocking write of more than
 * PIPE_ATOMIC_MAX that found room for part of it), or -EPIPE, -EAGAIN,
 * -EINTR.  write(2) passes up to PIPE_BUFFER_SIZE bytes at once, so that
 * length is the whole write's. */
int64_t pipe_read(struct vfs_file *file, void *buffer, size_t length);
int64_t pipe_write(struct vfs_file *file, const void *buffer, size_t length);

#endif
