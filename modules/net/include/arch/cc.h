/*
 * lwIP's compiler and platform port for the microScope kernel: freestanding,
 * no libc.  Types come from <stdint.h>/<stddef.h> (gcc's own, which work with
 * -nostdinc); limits, inttypes, unistd and ctype are not included (gcc's
 * limits.h would #include_next a libc header that is not there), so the few
 * values lwIP needs from them are given here.  Diagnostics go to printk,
 * failed assertions panic, errno is per thread (modules/net/errno.c).
 *
 *     #include "lwip/opt.h"          // pulls in lwipopts.h, then this file
 *     LWIP_ASSERT("pcb != NULL", pcb != NULL);
 *     LWIP_PLATFORM_DIAG(("netif %s up\n", name));
 */
#ifndef MODULES_NET_INCLUDE_ARCH_CC_H
#define MODULES_NET_INCLUDE_ARCH_CC_H

#include <stddef.h>
#include <stdint.h>

#define LWIP_NO_INTTYPES_H 1
#define LWIP_NO_LIMITS_H   1
#define LWIP_NO_UNISTD_H   1
#define LWIP_NO_CTYPE_H    1

#define X8_F  "02x"
#define U16_F "u"
#define S16_F "d"
#define X16_F "x"
#define U32_F "u"
#define S32_F "d"
#define X32_F "x"
#define SZT_F "lu"

#ifndef INT_MAX
#define INT_MAX 0x7fffffff
#endif
#define SSIZE_MAX 0x7fffffffffffffffL
typedef long ssize_t;

#define BYTE_ORDER LITTLE_ENDIAN

/* Linux's errno values, the kernel's own header. */
#define LWIP_ERRNO_INCLUDE "lib/errno.h"

void net_port_diag(const char *format, ...) __attribute__((format(printf, 1, 2)));
__attribute__((noreturn, format(printf, 1, 2))) void panic(const char *format, ...);
uint32_t net_port_random(void);
void net_port_set_errno(int err);

#define LWIP_PLATFORM_DIAG(message)    \
	do {                           \
		net_port_diag message; \
	} while (0)
#define LWIP_PLATFORM_ASSERT(message) \
	panic("lwip: assertion \"%s\" failed at %s:%d", message, __FILE__, __LINE__)

/* Eight bytes a turn instead of lwIP's two (kernel/lib/checksum.c). */
uint16_t net_checksum(const void *data, int length);
#define LWIP_CHKSUM net_checksum

#define LWIP_RAND()    net_port_random()
#define set_errno(err) net_port_set_errno(err)

#endif
