/*
 * Sockets for user programs, with Linux x86_64's numbers and structure
 * layouts: the kernel speaks Linux's ABI, so these pass to it unconverted
 * (newlib, built for a bare target, has no socket header).  Errors come back
 * as newlib's errno values (userland/libc/convert.c maps Linux's).
 *
 *     int fd = socket(AF_INET, SOCK_STREAM, 0);
 *     struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(80)};
 *     if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 16) < 0) ...
 */
#ifndef _SYS_SOCKET_H
#define _SYS_SOCKET_H

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t socklen_t;
typedef uint16_t sa_family_t;

struct sockaddr {
	sa_family_t sa_family;
	char sa_data[14];
};

/* Large enough and aligned enough for every address family. */
struct sockaddr_storage {
	sa_family_t ss_family;
	char __ss_padding[128 - sizeof(sa_family_t) - sizeof(unsigned long)];
	unsigned long __ss_align;
};

struct linger {
	int l_onoff;
	int l_linger;
};

#define AF_UNSPEC 0
#define AF_UNIX   1
#define AF_LOCAL  AF_UNIX
#define AF_INET   2
#define AF_INET6  10
#define PF_UNSPEC AF_UNSPEC
#define PF_UNIX   AF_UNIX
#define PF_INET   AF_INET
#define PF_INET6  AF_INET6

#define SOCK_STREAM   1
#define SOCK_DGRAM    2
#define SOCK_RAW      3
#define SOCK_NONBLOCK 04000    /* Linux's O_NONBLOCK, ORed into the type */
#define SOCK_CLOEXEC  02000000 /* Linux's O_CLOEXEC */

#define SOL_SOCKET 1

#define SO_DEBUG      1
#define SO_REUSEADDR  2
#define SO_TYPE       3
#define SO_ERROR      4
#define SO_DONTROUTE  5
#define SO_BROADCAST  6
#define SO_SNDBUF     7
#define SO_RCVBUF     8
#define SO_KEEPALIVE  9
#define SO_OOBINLINE  10
#define SO_LINGER     13
#define SO_REUSEPORT  15
#define SO_RCVLOWAT   18
#define SO_SNDLOWAT   19
#define SO_RCVTIMEO   20 /* struct timeval */
#define SO_SNDTIMEO   21 /* struct timeval */
#define SO_ACCEPTCONN 30

#define SOMAXCONN 4096

#define MSG_OOB       0x1
#define MSG_PEEK      0x2
#define MSG_DONTROUTE 0x4
#define MSG_TRUNC     0x20
#define MSG_DONTWAIT  0x40
#define MSG_WAITALL   0x100
#define MSG_NOSIGNAL  0x4000

#define SHUT_RD   0
#define SHUT_WR   1
#define SHUT_RDWR 2

/* Each returns what Linux's does, or -1 with errno set. */
int socket(int domain, int type, int protocol);
int bind(int fd, const struct sockaddr *address, socklen_t length);
int listen(int fd, int backlog);
int accept(int fd, struct sockaddr *address, socklen_t *length);
int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags);
int connect(int fd, const struct sockaddr *address, socklen_t length);
ssize_t send(int fd, const void *buffer, size_t length, int flags);
ssize_t recv(int fd, void *buffer, size_t length, int flags);
ssize_t sendto(int fd, const void *buffer, size_t length, int flags, const struct sockaddr *address,
	       socklen_t address_length);
ssize_t recvfrom(int fd, void *buffer, size_t length, int flags, struct sockaddr *address,
		 socklen_t *address_length);
int shutdown(int fd, int how);
int setsockopt(int fd, int level, int name, const void *value, socklen_t length);
int getsockopt(int fd, int level, int name, void *value, socklen_t *length);
int getsockname(int fd, struct sockaddr *address, socklen_t *length);
int getpeername(int fd, struct sockaddr *address, socklen_t *length);

#ifdef __cplusplus
}
#endif

#endif
