/*
 * opendir/readdir/closedir over getdents64.  A DIR holds the descriptor and
 * one buffer of kernel records; readdir copies the next record into the
 * DIR's struct dirent and refills the buffer when it runs out.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* The kernel's record (Linux's struct linux_dirent64). */
struct linux_dirent64 {
	uint64_t ino;
	int64_t off;
	uint16_t reclen;
	uint8_t type;
	char name[];
};

struct microscope_dir {
	int fd;
	size_t used;     /* bytes of records in buffer */
	size_t position; /* offset of the next record */
	struct dirent entry;
	char buffer[2048];
};

int getdents64(int fd, void *buffer, size_t size)
{
	return (int)sys_result(ms_syscall3(__NR_getdents64, fd, (long)buffer, (long)size));
}

DIR *opendir(const char *path)
{
	DIR *dir = calloc(1, sizeof(*dir));
	if (!dir)
		return NULL;
	dir->fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir->fd < 0) {
		free(dir);
		return NULL;
	}
	return dir;
}

/* Returns the next entry, or NULL at the end (errno unchanged) or on an
 * error (errno set). */
struct dirent *readdir(DIR *dir)
{
	if (dir->position >= dir->used) {
		int got = getdents64(dir->fd, dir->buffer, sizeof(dir->buffer));
		if (got <= 0)
			return NULL;
		dir->used = (size_t)got;
		dir->position = 0;
	}
	const struct linux_dirent64 *record = (const void *)(dir->buffer + dir->position);
	dir->position += record->reclen;
	dir->entry.d_ino = record->ino;
	dir->entry.d_off = record->off;
	dir->entry.d_reclen = sizeof(dir->entry);
	dir->entry.d_type = record->type;
	strncpy(dir->entry.d_name, record->name, MAXNAMLEN);
	dir->entry.d_name[MAXNAMLEN] = '\0';
	return &dir->entry;
}

void rewinddir(DIR *dir)
{
	lseek(dir->fd, 0, SEEK_SET);
	dir->used = dir->position = 0;
}

int dirfd(DIR *dir)
{
	return dir->fd;
}

int closedir(DIR *dir)
{
	int result = close(dir->fd);
	free(dir);
	return result;
}
