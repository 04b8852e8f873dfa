/*
 * TCP socket options (level IPPROTO_TCP), Linux's numbers.
 *
 *     int on = 1;
 *     setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
 *     // small responses leave at once instead of waiting for Nagle
 */
#ifndef _NETINET_TCP_H
#define _NETINET_TCP_H

#define TCP_NODELAY   1
#define TCP_MAXSEG    2
#define TCP_KEEPIDLE  4
#define TCP_KEEPINTVL 5
#define TCP_KEEPCNT   6

#endif
