/*
 * Name look-up, as far as an OS without a resolver goes: numeric IPv4
 * addresses and "localhost" (no DNS, no /etc/hosts).  Enough for programs
 * written against the usual interface (gethostbyname, getaddrinfo).
 *
 *     struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *list;
 *     if (getaddrinfo("10.0.2.2", "80", &hints, &list) == 0) {
 *             connect(fd, list->ai_addr, list->ai_addrlen); freeaddrinfo(list); }
 */
#ifndef _NETDB_H
#define _NETDB_H

#include <netinet/in.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hostent {
	char *h_name;
	char **h_aliases;
	int h_addrtype;
	int h_length;
	char **h_addr_list;
};
#define h_addr h_addr_list[0]

struct addrinfo {
	int ai_flags;
	int ai_family;
	int ai_socktype;
	int ai_protocol;
	socklen_t ai_addrlen;
	struct sockaddr *ai_addr;
	char *ai_canonname;
	struct addrinfo *ai_next;
};

#define AI_PASSIVE     0x01
#define AI_CANONNAME   0x02
#define AI_NUMERICHOST 0x04
#define AI_NUMERICSERV 0x400

/* getaddrinfo's errors (glibc's values). */
#define EAI_BADFLAGS -1
#define EAI_NONAME   -2
#define EAI_FAIL     -4
#define EAI_FAMILY   -6
#define EAI_SOCKTYPE -7
#define EAI_SERVICE  -8
#define EAI_MEMORY   -10
#define EAI_SYSTEM   -11

/* h_errno values. */
#define HOST_NOT_FOUND 1
extern int h_errno;

/* Returns a static entry for a dotted quad or "localhost", or NULL with
 * h_errno HOST_NOT_FOUND. */
struct hostent *gethostbyname(const char *name);
/* Returns 0 and a malloc'd list of one IPv4 address (free it with
 * freeaddrinfo), or EAI_NONAME (not numeric, not localhost), EAI_SERVICE
 * (port not numeric), EAI_FAMILY (not AF_INET/AF_UNSPEC), EAI_MEMORY. */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		struct addrinfo **result);
void freeaddrinfo(struct addrinfo *list);
/* The message for a getaddrinfo error. */
const char *gai_strerror(int error);

#ifdef __cplusplus
}
#endif

#endif
