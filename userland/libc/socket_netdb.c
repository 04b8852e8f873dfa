/*
 * Name look-up without a resolver: a name is a dotted quad or "localhost"
 * (127.0.0.1); anything else is not found.  gethostbyname returns a static
 * entry (not reentrant, as the interface says); getaddrinfo returns one
 * malloc'd IPv4 result, the address stored in the same block.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

int h_errno;

/* Returns 1 and the address (network order) for a name this OS can look up. */
static int lookup(const char *name, struct in_addr *address)
{
	if (!name)
		return 0;
	if (strcmp(name, "localhost") == 0) {
		address->s_addr = htonl(INADDR_LOOPBACK);
		return 1;
	}
	return inet_aton(name, address);
}

struct hostent *gethostbyname(const char *name)
{
	static struct in_addr address;
	static char *addresses[2];
	static char *no_aliases[1];
	static char host_name[256];
	static struct hostent entry;
	if (!lookup(name, &address)) {
		h_errno = HOST_NOT_FOUND;
		return NULL;
	}
	strncpy(host_name, name, sizeof(host_name) - 1);
	addresses[0] = (char *)&address;
	entry = (struct hostent){host_name, no_aliases, AF_INET, sizeof(address), addresses};
	return &entry;
}

/* Parses a numeric port; returns it, or -1. */
static int parse_port(const char *service)
{
	if (!service)
		return 0;
	char *end;
	long port = strtol(service, &end, 10);
	if (!*service || *end || port < 0 || port > 65535)
		return -1;
	return (int)port;
}

struct addrinfo_block {
	struct addrinfo info;
	struct sockaddr_in address;
};

int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
		struct addrinfo **result)
{
	struct addrinfo none = {0};
	if (!hints)
		hints = &none;
	if (hints->ai_family != AF_UNSPEC && hints->ai_family != AF_INET)
		return EAI_FAMILY;
	int port = parse_port(service);
	if (port < 0)
		return EAI_SERVICE;
	struct in_addr address = {
	    htonl((hints->ai_flags & AI_PASSIVE) ? INADDR_ANY : INADDR_LOOPBACK)};
	if (node && !lookup(node, &address))
		return EAI_NONAME;
	struct addrinfo_block *block = calloc(1, sizeof(*block));
	if (!block)
		return EAI_MEMORY;
	block->address.sin_family = AF_INET;
	block->address.sin_port = htons((uint16_t)port);
	block->address.sin_addr = address;
	block->info.ai_family = AF_INET;
	block->info.ai_socktype = hints->ai_socktype ? hints->ai_socktype : SOCK_STREAM;
	block->info.ai_protocol = hints->ai_protocol;
	block->info.ai_addrlen = sizeof(block->address);
	block->info.ai_addr = (struct sockaddr *)&block->address;
	*result = &block->info;
	return 0;
}

void freeaddrinfo(struct addrinfo *list)
{
	free(list); /* the block starts with the addrinfo; one result only */
}

const char *gai_strerror(int error)
{
	switch (error) {
	case 0: return "Success";
	case EAI_NONAME: return "Name does not resolve (numeric addresses and localhost only)";
	case EAI_SERVICE: return "Service not numeric";
	case EAI_FAMILY: return "Address family not supported";
	case EAI_MEMORY: return "Out of memory";
	default: return "Unknown error";
	}
}
