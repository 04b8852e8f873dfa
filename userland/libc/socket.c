/*
 * Socket system calls for newlib programs: socket ... getpeername.  The
 * structures (<sys/socket.h>, <netinet/in.h>) and flag values are Linux's, so
 * every call passes its arguments through unchanged; only a -errno result is
 * converted (sys_result: Linux's number to newlib's).  send and recv are
 * sendto and recvfrom without an address, as on Linux x86_64, which has no
 * separate send/recv calls.  read, write, close and fcntl(O_NONBLOCK) work
 * on sockets through files.c.  sendfile is here too: its usual target is a
 * socket.
 */
#include <errno.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "internal.h"

/* Linux x86_64's numbers; uapi/syscall_numbers.h may already name them. */
#ifndef __NR_socket
#define __NR_socket 41
#endif
#ifndef __NR_connect
#define __NR_connect 42
#endif
#ifndef __NR_accept
#define __NR_accept 43
#endif
#ifndef __NR_sendto
#define __NR_sendto 44
#endif
#ifndef __NR_recvfrom
#define __NR_recvfrom 45
#endif
#ifndef __NR_shutdown
#define __NR_shutdown 48
#endif
#ifndef __NR_bind
#define __NR_bind 49
#endif
#ifndef __NR_listen
#define __NR_listen 50
#endif
#ifndef __NR_getsockname
#define __NR_getsockname 51
#endif
#ifndef __NR_getpeername
#define __NR_getpeername 52
#endif
#ifndef __NR_setsockopt
#define __NR_setsockopt 54
#endif
#ifndef __NR_getsockopt
#define __NR_getsockopt 55
#endif
#ifndef __NR_sendfile
#define __NR_sendfile 40
#endif
#ifndef __NR_accept4
#define __NR_accept4 288
#endif

/* SO_RCVTIMEO and SO_SNDTIMEO pass newlib's struct timeval as Linux's. */
_Static_assert(sizeof(struct timeval) == 16, "struct timeval is not Linux's");
_Static_assert(sizeof(socklen_t) == 4, "socklen_t is not Linux's");

int socket(int domain, int type, int protocol)
{
	return (int)sys_result(ms_syscall3(__NR_socket, domain, type, protocol));
}

ssize_t sendfile(int out_fd, int in_fd, off_t *offset, size_t count)
{
	_Static_assert(sizeof(off_t) == 8, "off_t is not Linux's");
	return sys_result(
	    ms_syscall6(__NR_sendfile, out_fd, in_fd, (long)offset, (long)count, 0, 0));
}

int bind(int fd, const struct sockaddr *address, socklen_t length)
{
	return (int)sys_result(ms_syscall3(__NR_bind, fd, (long)address, length));
}

int listen(int fd, int backlog)
{
	return (int)sys_result(ms_syscall3(__NR_listen, fd, backlog, 0));
}

int accept(int fd, struct sockaddr *address, socklen_t *length)
{
	return (int)sys_result(ms_syscall3(__NR_accept, fd, (long)address, (long)length));
}

int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags)
{
	return (int)sys_result(
	    ms_syscall6(__NR_accept4, fd, (long)address, (long)length, flags, 0, 0));
}

int connect(int fd, const struct sockaddr *address, socklen_t length)
{
	return (int)sys_result(ms_syscall3(__NR_connect, fd, (long)address, length));
}

ssize_t sendto(int fd, const void *buffer, size_t length, int flags, const struct sockaddr *address,
	       socklen_t address_length)
{
	return sys_result(ms_syscall6(__NR_sendto, fd, (long)buffer, (long)length, flags,
				      (long)address, address_length));
}

ssize_t recvfrom(int fd, void *buffer, size_t length, int flags, struct sockaddr *address,
		 socklen_t *address_length)
{
	return sys_result(ms_syscall6(__NR_recvfrom, fd, (long)buffer, (long)length, flags,
				      (long)address, (long)address_length));
}

ssize_t send(int fd, const void *buffer, size_t length, int flags)
{
	return sendto(fd, buffer, length, flags, NULL, 0);
}

ssize_t recv(int fd, void *buffer, size_t length, int flags)
{
	return recvfrom(fd, buffer, length, flags, NULL, NULL);
}

int shutdown(int fd, int how)
{
	return (int)sys_result(ms_syscall3(__NR_shutdown, fd, how, 0));
}

int setsockopt(int fd, int level, int name, const void *value, socklen_t length)
{
	return (int)sys_result(
	    ms_syscall6(__NR_setsockopt, fd, level, name, (long)value, length, 0));
}

int getsockopt(int fd, int level, int name, void *value, socklen_t *length)
{
	int result = (int)sys_result(
	    ms_syscall6(__NR_getsockopt, fd, level, name, (long)value, (long)length, 0));
	/* SO_ERROR carries a Linux errno: give the program newlib's. */
	if (result == 0 && level == SOL_SOCKET && name == SO_ERROR && value && *(int *)value > 0)
		*(int *)value = errno_from_linux(*(int *)value);
	return result;
}

int getsockname(int fd, struct sockaddr *address, socklen_t *length)
{
	return (int)sys_result(ms_syscall3(__NR_getsockname, fd, (long)address, (long)length));
}

int getpeername(int fd, struct sockaddr *address, socklen_t *length)
{
	return (int)sys_result(ms_syscall3(__NR_getpeername, fd, (long)address, (long)length));
}
