/*
 * Converting IPv4 addresses between text ("10.0.2.15") and binary (network
 * byte order).  Pure functions in userland/libc/socket_inet.c; no system call.
 *
 *     struct in_addr a;
 *     if (inet_pton(AF_INET, "10.0.2.2", &a) == 1)
 *             printf("%s\n", inet_ntoa(a));
 */
#ifndef _ARPA_INET_H
#define _ARPA_INET_H

#include <netinet/in.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Returns the address in network byte order, or INADDR_NONE for bad text
 * (which cannot be told from 255.255.255.255: prefer inet_pton). */
in_addr_t inet_addr(const char *text);
/* Returns 1 and fills *address for valid dotted-quad text, 0 for bad text. */
int inet_aton(const char *text, struct in_addr *address);
/* Returns a static buffer holding the dotted quad (overwritten by the next call). */
char *inet_ntoa(struct in_addr address);
/* AF_INET only.  Returns 1 on success, 0 for bad text, -1 (errno EAFNOSUPPORT)
 * for another family. */
int inet_pton(int family, const char *text, void *address);
/* AF_INET only.  Returns buffer, or NULL with errno EAFNOSUPPORT (another
 * family) or ENOSPC (size below INET_ADDRSTRLEN and the text does not fit). */
const char *inet_ntop(int family, const void *address, char *buffer, socklen_t size);

#ifdef __cplusplus
}
#endif

#endif
