/*
 * The C string and memory functions the kernel uses.  GCC may emit calls to
 * memcpy/memset/memmove/memcmp on its own, so these keep their standard names.
 */
#ifndef KERNEL_LIB_STRING_H
#define KERNEL_LIB_STRING_H

#include <stddef.h>

void *memcpy(void *dst, const void *src, size_t length);
void *memmove(void *dst, const void *src, size_t length);
void *memset(void *dst, int byte, size_t length);
int memcmp(const void *a, const void *b, size_t length);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strcmp(const char *a, const char *b);
int strncmp(const char *a, const char *b, size_t length);
char *strchr(const char *s, int c);
/* Copies at most size-1 bytes and always terminates; returns strlen(src). */
size_t strlcpy(char *dst, const char *src, size_t size);

#endif
