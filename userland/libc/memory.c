/*
 * Memory: sbrk over the kernel's brk (newlib's malloc grows the heap with it)
 * and mmap/munmap/msync (anonymous, a private copy of a file, or a file's
 * shared pages).  brk returns the
 * new break, or the old one when it cannot move: sbrk compares the two to
 * tell.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

static uintptr_t current_break;

void *sbrk(ptrdiff_t increment)
{
	if (!current_break)
		current_break = (uintptr_t)ms_syscall3(__NR_brk, 0, 0, 0);
	uintptr_t old = current_break;
	if (increment == 0)
		return (void *)old;
	uintptr_t wanted = old + (uintptr_t)increment;
	if ((increment > 0 && wanted < old) || (increment < 0 && wanted > old)) {
		errno = ENOMEM;
		return (void *)-1;
	}
	uintptr_t got = (uintptr_t)ms_syscall3(__NR_brk, (long)wanted, 0, 0);
	if (got != wanted) {
		errno = ENOMEM;
		return (void *)-1;
	}
	current_break = got;
	return (void *)old;
}
ALSO_NAMED(sbrk, _sbrk);

void *mmap(void *address, size_t length, int protection, int flags, int fd, off_t offset)
{
	long result =
	    ms_syscall6(__NR_mmap, (long)address, (long)length, protection, flags, fd, offset);
	if (result < 0 && result > -4096) {
		errno = errno_from_linux((int)-result);
		return MAP_FAILED;
	}
	return (void *)result;
}

int munmap(void *address, size_t length)
{
	return (int)sys_result(ms_syscall3(__NR_munmap, (long)address, (long)length, 0));
}

int msync(void *address, size_t length, int flags)
{
	return (int)sys_result(ms_syscall3(__NR_msync, (long)address, (long)length, flags));
}
