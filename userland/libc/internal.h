/*
 * Private to the syscall glue: result conversion, and the places
 * where newlib's numbering differs from the kernel's (Linux's).  newlib was
 * not configured for Linux, so its errno values, open() flags, clock ids,
 * signal numbers and struct stat are its own; every call converts at this
 * boundary and nowhere else.
 */
#ifndef USERLAND_LIBC_INTERNAL_H
#define USERLAND_LIBC_INTERNAL_H

#include <stdint.h>
#include <sys/stat.h>

#include <microscope/syscall.h>

/* Gives a function a second name (read and _read), with the same attributes. */
#define ALSO_NAMED(name, other) \
	extern __typeof(name) other __attribute__((alias(#name), copy(name)))

/* The kernel's struct stat (Linux x86_64 layout, 144 bytes). */
struct linux_stat {
	uint64_t dev;
	uint64_t ino;
	uint64_t nlink;
	uint32_t mode;
	uint32_t uid;
	uint32_t gid;
	uint32_t pad0;
	uint64_t rdev;
	int64_t size;
	int64_t blksize;
	int64_t blocks;
	int64_t atime_sec, atime_nsec;
	int64_t mtime_sec, mtime_nsec;
	int64_t ctime_sec, ctime_nsec;
	int64_t reserved[3];
};

/* Returns result when it is not an error; otherwise sets errno (newlib's
 * number for the kernel's -result) and returns -1. */
long sys_result(long result);

/* newlib's errno value for a Linux one (unknown ones become EINVAL). */
int errno_from_linux(int linux_errno);
/* Linux's number for a newlib signal, or -1 for one Linux does not have
 * (SIGEMT, SIGLOST, or outside 0..NSIG - 1 and not from signal_from_linux). */
int signal_to_linux(int sig);
/* newlib's number for a Linux signal; one newlib has no name for (SIGSTKFLT,
 * SIGPWR, the real-time signals 32 .. 64) comes back as NSIG + its Linux
 * number, above every newlib signal (at most 96: a wait status's 7 bits), and
 * signal_to_linux turns it back. */
int signal_from_linux(int sig);
/* A Linux wait status with its signal number turned into newlib's. */
int wait_status_from_linux(int status);
/* Fills a newlib struct stat from the kernel's. */
void stat_from_linux(const struct linux_stat *in, struct stat *out);

/* The auxiliary vector's value for type, or 0 (start.c). */
unsigned long getauxval(unsigned long type);

#endif
