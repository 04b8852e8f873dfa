/*
 * Memory mappings (newlib has no <sys/mman.h>): Linux's flag values, which the
 * kernel takes as they are: anonymous memory, a private copy of a file, or a
 * file's shared pages (MAP_SHARED, on ext2), written back by msync.
 *
 *     void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
 *                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
 *     if (p == MAP_FAILED) perror("mmap");
 */
#ifndef _SYS_MMAN_H
#define _SYS_MMAN_H

#include <sys/types.h>

#define PROT_NONE  0x0
#define PROT_READ  0x1
#define PROT_WRITE 0x2
#define PROT_EXEC  0x4

#define MAP_SHARED    0x01
#define MAP_PRIVATE   0x02
#define MAP_FIXED     0x10
#define MAP_ANONYMOUS 0x20
#define MAP_ANON      MAP_ANONYMOUS
#define MAP_FAILED    ((void *)-1)

#define MS_ASYNC      1
#define MS_INVALIDATE 2
#define MS_SYNC       4

/* Returns the mapping's address, or MAP_FAILED with errno (ENOMEM, EINVAL). */
void *mmap(void *address, size_t length, int protection, int flags, int fd, off_t offset);
/* Returns 0, or -1 with errno (EINVAL). */
int munmap(void *address, size_t length);
/* Writes the shared file mappings in the range back.  Returns 0, or -1 with
 * errno (EINVAL, ENOMEM: part of the range is not mapped, EIO). */
int msync(void *address, size_t length, int flags);

#endif
