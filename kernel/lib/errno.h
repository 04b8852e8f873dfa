/*
 * Error numbers, returned negated (-ENOMEM) by every kernel API that can fail.
 * The values are Linux's, so user space (newlib) and the kernel agree on them
 * and strerror() in programs names them correctly.
 */
#ifndef KERNEL_LIB_ERRNO_H
#define KERNEL_LIB_ERRNO_H

#define EPERM 1
#define ENOENT 2
#define ESRCH 3
#define EINTR 4
#define EIO 5
#define ENXIO 6
#define E2BIG 7
#define ENOEXEC 8
#define EBADF 9
#define ECHILD 10
#define EAGAIN 11
#define ENOMEM 12
#define EACCES 13
#define EFAULT 14
#define EBUSY 16
#define EEXIST 17
#define ENODEV 19
#define ENOTDIR 20
#define EISDIR 21
#define EINVAL 22
#define ENFILE 23
#define EMFILE 24
#define ENOTTY 25
#define EFBIG 27
#define ENOSPC 28
#define ESPIPE 29
#define EROFS 30
#define EPIPE 32
#define ERANGE 34
#define EDEADLK 35
#define ENAMETOOLONG 36
#define ENOSYS 38
#define ENOTEMPTY 39
#define ELOOP 40
#define ENODATA 61
#define ETIME 62
#define EOVERFLOW 75
#define EBADMSG 74
#define ENOTSUP 95
#define ETIMEDOUT 110
#define ECANCELED 125

#endif
