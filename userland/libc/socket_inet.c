/*
 * IPv4 addresses between text and binary: inet_aton, inet_addr, inet_pton
 * (strict dotted quad: four decimal parts 0..255, nothing else),
 * inet_ntoa and inet_ntop.  Pure: no system calls.  inet_aton accepts only
 * the four-part form too (not "10.1" or hexadecimal parts): simpler, and
 * enough for the programs here.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Parses "a.b.c.d"; returns 1 and the address in network order, or 0. */
static int parse_dotted_quad(const char *text, uint32_t *out)
{
	uint32_t value = 0;
	for (int part = 0; part < 4; part++) {
		if (part > 0 && *text++ != '.')
			return 0;
		if (*text < '0' || *text > '9')
			return 0;
		unsigned number = 0, digits = 0;
		while (*text >= '0' && *text <= '9' && digits < 4) {
			number = number * 10 + (unsigned)(*text++ - '0');
			digits++;
		}
		if (number > 255 || digits > 3)
			return 0;
		value = value << 8 | number;
	}
	if (*text)
		return 0;
	*out = htonl(value);
	return 1;
}

int inet_aton(const char *text, struct in_addr *address)
{
	uint32_t value;
	if (!text || !parse_dotted_quad(text, &value))
		return 0;
	if (address)
		address->s_addr = value;
	return 1;
}

in_addr_t inet_addr(const char *text)
{
	struct in_addr address;
	return inet_aton(text, &address) ? address.s_addr : INADDR_NONE;
}

int inet_pton(int family, const char *text, void *address)
{
	if (family != AF_INET) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	uint32_t value;
	if (!parse_dotted_quad(text, &value))
		return 0;
	memcpy(address, &value, sizeof(value));
	return 1;
}

const char *inet_ntop(int family, const void *address, char *buffer, socklen_t size)
{
	if (family != AF_INET) {
		errno = EAFNOSUPPORT;
		return NULL;
	}
	const unsigned char *b = address;
	char text[INET_ADDRSTRLEN];
	int length = snprintf(text, sizeof(text), "%u.%u.%u.%u", b[0], b[1], b[2], b[3]);
	if (length < 0 || (socklen_t)length >= size) {
		errno = ENOSPC;
		return NULL;
	}
	memcpy(buffer, text, (size_t)length + 1);
	return buffer;
}

char *inet_ntoa(struct in_addr address)
{
	static char text[INET_ADDRSTRLEN];
	inet_ntop(AF_INET, &address, text, sizeof(text));
	return text;
}
