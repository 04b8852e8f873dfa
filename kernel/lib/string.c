/*
 * Byte-at-a-time string and memory functions, with "rep movsq/stosq" and then
 * "rep movsb/stosb" for the bulk copies: short, fast on every CPU, and under
 * QEMU's TCG, which runs a rep string instruction one element per iteration,
 * eight times fewer iterations than bytes (the network's copies of every frame
 * were the largest cost of a bulk transfer).  Host unit tests
 * build this file under sanitizers with the names prefixed, see tests/host.
 */
#include "lib/string.h"

#include <stdint.h>

void *memcpy(void *dst, const void *src, size_t length)
{
	void *ret = dst;
	size_t quads = length / 8, tail = length % 8;
	__asm__ volatile("rep movsq" : "+D"(dst), "+S"(src), "+c"(quads) : : "memory");
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(tail) : : "memory");
	return ret;
}

void *memmove(void *dst, const void *src, size_t length)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	if (d <= s || d >= s + length)
		return memcpy(dst, src, length);
	while (length--)
		d[length] = s[length];
	return dst;
}

void *memset(void *dst, int byte, size_t length)
{
	void *ret = dst;
	size_t quads = length / 8, tail = length % 8;
	uint64_t pattern = (uint8_t)byte * 0x0101010101010101ull;
	__asm__ volatile("rep stosq" : "+D"(dst), "+c"(quads) : "a"(pattern) : "memory");
	__asm__ volatile("rep stosb" : "+D"(dst), "+c"(tail) : "a"(pattern) : "memory");
	return ret;
}

int memcmp(const void *a, const void *b, size_t length)
{
	const unsigned char *x = a, *y = b;
	for (size_t i = 0; i < length; i++) {
		if (x[i] != y[i])
			return x[i] - y[i];
	}
	return 0;
}

size_t strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

size_t strnlen(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

int strcmp(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return (unsigned char)*a - (unsigned char)*b;
}

int strncmp(const char *a, const char *b, size_t length)
{
	for (size_t i = 0; i < length; i++) {
		if (a[i] != b[i] || !a[i])
			return (unsigned char)a[i] - (unsigned char)b[i];
	}
	return 0;
}

char *strchr(const char *s, int c)
{
	for (;; s++) {
		if (*s == (char)c)
			return (char *)s;
		if (!*s)
			return NULL;
	}
}

size_t strlcpy(char *dst, const char *src, size_t size)
{
	size_t length = strlen(src);
	if (size) {
		size_t n = length < size - 1 ? length : size - 1;
		memcpy(dst, src, n);
		dst[n] = '\0';
	}
	return length;
}
