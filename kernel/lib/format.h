/*
 * printf-style formatting into a buffer, shared by printk and everything that
 * builds text.  Supports %d %i %u %x %X %o %p %s %c %% with the flags '-', '0',
 * '+', ' ', a width and precision (also '*'), and the length modifiers hh h l ll
 * z t j.  Unknown conversions are printed as they are, never skipped silently.
 *
 *     char line[64];
 *     int n = snprintf(line, sizeof line, "%-8s %5lu", name, count);
 */
#ifndef KERNEL_LIB_FORMAT_H
#define KERNEL_LIB_FORMAT_H

#include <stdarg.h>
#include <stddef.h>

/* Return the length the full output would have (C99 semantics); the buffer is
 * always terminated when size > 0. */
int vsnprintf(char *buffer, size_t size, const char *format, va_list args);
int snprintf(char *buffer, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

#endif
