/*
 * <stdlib.h> for lwIP: netif.c parses interface numbers with atoi; the port
 * supplies it (modules/net/sys_arch.c).  Nothing else of libc is here.
 *
 *     #include <stdlib.h>
 *     int index = atoi("3");
 *     // 3; stops at the first non-digit
 */
#ifndef MODULES_NET_INCLUDE_STDLIB_H
#define MODULES_NET_INCLUDE_STDLIB_H

int atoi(const char *text);

#endif
