/*
 * Directory entries for <dirent.h> (newlib leaves this header to the system).
 * readdir() fills struct dirent from the kernel's getdents64 records.
 *
 *     DIR *dir = opendir("/bin");
 *     for (struct dirent *entry; (entry = readdir(dir));) puts(entry->d_name);
 *     closedir(dir);
 */
#ifndef _SYS_DIRENT_H
#define _SYS_DIRENT_H

#include <sys/types.h>

#define DT_UNKNOWN 0
#define DT_FIFO    1
#define DT_CHR     2
#define DT_DIR     4
#define DT_BLK     6
#define DT_REG     8
#define DT_LNK     10

#define MAXNAMLEN 255

struct dirent {
	unsigned long d_ino;
	long d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[MAXNAMLEN + 1];
};

typedef struct microscope_dir DIR;

/* Reads Linux getdents64 records (struct linux_dirent64) from a directory fd
 * into buffer.  Returns the bytes read, 0 at the end, or -1 with errno. */
int getdents64(int fd, void *buffer, size_t size);

#endif
