/*
 * Private to the object linker's portable files (validate, layout, symbols,
 * relocate, metadata, message): helpers they share.  Kernel-free, like them.
 */
#ifndef LINKER_OBJECT_INTERNAL_H
#define LINKER_OBJECT_INTERNAL_H

#include "linker/object/object.h"

/* Writes the message into object->error and returns err (negative). */
int linker_fail(struct linker_object *object, int err, const char *format, ...)
    __attribute__((format(printf, 3, 4)));
/* Bytes a relocation type writes: 8, 4, or 0 (none, or not supported). */
unsigned linker_relocation_width(unsigned type);
/* True when symbol i (resolved) lies in a loaded section, or is undefined
 * or absolute. */
bool linker_symbol_is_usable(const struct linker_object *object, unsigned i);
/* Length of s, at most max. */
size_t linker_string_length(const char *s, size_t max);
/* Copies src into dst (size bytes, NUL-terminated, truncated). */
void linker_copy_string(char *dst, const char *src, size_t size);

#endif
