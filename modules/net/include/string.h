/*
 * <string.h> for lwIP: the kernel's string functions (kernel/lib/string.h).
 * Only lwIP's sources and the port see this directory.
 *
 *     #include <string.h>
 *     memcpy(dst, src, length);
 *     if (!memcmp(a, b, 6)) { ... }
 */
#ifndef MODULES_NET_INCLUDE_STRING_H
#define MODULES_NET_INCLUDE_STRING_H

#include "lib/string.h"

#endif
