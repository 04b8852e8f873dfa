/*
 * sendfile (newlib has no <sys/sendfile.h>): Linux's call, which the kernel
 * takes as it is: up to count bytes of in_fd, from *offset (then moved on)
 * or from in_fd's position (then moved on), written to out_fd, a socket or
 * a file, without passing through the caller's memory.
 *
 *     off_t at = 0;
 *     ssize_t n = sendfile(socket_fd, file_fd, &at, size);
 */
#ifndef _SYS_SENDFILE_H
#define _SYS_SENDFILE_H

#include <sys/types.h>

ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count);

#endif
