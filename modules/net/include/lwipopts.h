/*
 * lwIP's configuration for the microScope kernel.  The stack runs with an
 * operating system (NO_SYS=0): a tcpip thread owns timers and the mailbox,
 * and the core lock (LWIP_TCPIP_CORE_LOCKING) lets socket calls and the NIC
 * workers run the core directly in their own threads instead of queueing a
 * message and switching threads for every packet and call.  Memory is lwIP's
 * own: a fixed heap and fixed pools (counted in lwip_stats), so what load
 * takes it gives back and the totals are easy to check.
 *
 *     #include "lwip/opt.h"            // this file, then lwIP's defaults
 *     #if LWIP_TCP ... #endif
 *     MEMP_NUM_TCP_PCB sockets may be connected at once (users other than root:
 *     fewer, modules/net/user_sockets.c)
 */
#ifndef MODULES_NET_INCLUDE_LWIPOPTS_H
#define MODULES_NET_INCLUDE_LWIPOPTS_H

/* ---- Operating system ---------------------------------------------------- */
#define NO_SYS                        0
#define SYS_LIGHTWEIGHT_PROT          1
#define LWIP_TCPIP_CORE_LOCKING       1
#define LWIP_TCPIP_CORE_LOCKING_INPUT 1
#define TCPIP_THREAD_NAME             "net.tcpip"
/* The core lock is sys_arch.c's: a mailbox's wake-up posted while it is held
 * waits for the unlock (the reader would only wait for the lock). */
void net_core_lock(void);
void net_core_unlock(void);
#define LOCK_TCPIP_CORE()           net_core_lock()
#define UNLOCK_TCPIP_CORE()         net_core_unlock()
#define TCPIP_THREAD_PRIO           6 /* SCHED_PRIORITY_HIGH */
#define TCPIP_THREAD_STACKSIZE      0 /* the kernel's stack size */
#define TCPIP_MBOX_SIZE             256
#define DEFAULT_THREAD_PRIO         4
#define DEFAULT_RAW_RECVMBOX_SIZE   32
#define DEFAULT_UDP_RECVMBOX_SIZE   64
#define DEFAULT_TCP_RECVMBOX_SIZE   128
#define DEFAULT_ACCEPTMBOX_SIZE     64
#define LWIP_NETCONN_SEM_PER_THREAD 0
#define LWIP_NETCONN_FULLDUPLEX     0

/* ---- Memory -------------------------------------------------------------- */
#define MEM_ALIGNMENT 8
/* lwIP's heap holds the segments sent and not yet acknowledged: 64 MSS a
 * connection (TCP_SND_BUF), 1.5 MiB for 16 busy connections.  It comes from
 * the frame allocator when the stack starts (netif.c), not from the kernel's
 * image, which the boot loader must find room for. */
#define MEM_SIZE              (4 * 1024 * 1024)
#define LWIP_RAM_HEAP_POINTER net_ram_heap
extern void *net_ram_heap;
#define MEMP_NUM_PBUF            256
#define MEMP_NUM_RAW_PCB         8
#define MEMP_NUM_UDP_PCB         16
#define MEMP_NUM_TCP_PCB         256
#define MEMP_NUM_TCP_PCB_LISTEN  16
#define MEMP_NUM_TCP_SEG         1024
#define MEMP_NUM_REASSDATA       8
#define MEMP_NUM_FRAG_PBUF       16
#define MEMP_NUM_ARP_QUEUE       32
#define MEMP_NUM_NETBUF          64
#define MEMP_NUM_NETCONN         256
#define MEMP_NUM_SELECT_CB       32
#define MEMP_NUM_TCPIP_MSG_API   64
#define MEMP_NUM_TCPIP_MSG_INPKT 256
#define MEMP_NUM_SYS_TIMEOUT     (LWIP_NUM_SYS_TIMEOUT_INTERNAL + 4)
#define PBUF_POOL_SIZE           512
#define PBUF_POOL_BUFSIZE        1536
#define MEMP_OVERFLOW_CHECK      0
#define MEM_USE_POOLS            0

/* ---- Protocols ----------------------------------------------------------- */
#define LWIP_IPV4                     1
#define LWIP_IPV6                     0
#define LWIP_ARP                      1
#define LWIP_ETHERNET                 1
#define ETHARP_SUPPORT_STATIC_ENTRIES 0
#define ARP_TABLE_SIZE                32
#define ARP_QUEUEING                  1
#define IP_FORWARD                    0
#define IP_REASSEMBLY                 1
#define IP_FRAG                       1
#define LWIP_ICMP                     1
#define LWIP_BROADCAST_PING           0
#define LWIP_RAW                      1
#define LWIP_UDP                      1
#define LWIP_TCP                      1
#define LWIP_DHCP                     1
#define DHCP_DOES_ARP_CHECK           0
#define LWIP_AUTOIP                   0
#define LWIP_IGMP                     0
#define LWIP_DNS                      0
#define LWIP_NETIF_HOSTNAME           1
#define LWIP_NETIF_STATUS_CALLBACK    1
#define LWIP_NETIF_LINK_CALLBACK      1
#define LWIP_NETIF_LOOPBACK           1
#define LWIP_HAVE_LOOPIF              1
#define LWIP_LOOPBACK_MAX_PBUFS       0

/* ---- TCP ----------------------------------------------------------------- */
#define TCP_MSS                    1460
#define TCP_WND                    (32 * TCP_MSS)
#define TCP_SND_BUF                (64 * TCP_MSS)
#define TCP_SND_QUEUELEN           (4 * TCP_SND_BUF / TCP_MSS)
#define TCP_QUEUE_OOSEQ            1
#define TCP_LISTEN_BACKLOG         1
#define TCP_DEFAULT_LISTEN_BACKLOG 64
#define LWIP_TCP_KEEPALIVE         1
#define LWIP_TCP_TIMESTAMPS        0
/* TIME_WAIT lasts 2 * TCP_MSL: 10 s rather than 2 min, so pcbs (and the
 * memory figures) come back soon after a load run. */
#define TCP_MSL 5000UL
/* A write that more will follow (MSG_MORE, or Nagle's wait) takes one MSS
 * more than it needs.  Not more: lwIP gives up the room left over whenever
 * it sends (TCP_NODELAY, as httpd has it, sends every write at once), so a
 * larger figure held up to 64 KiB of heap for each 16 KiB write. */
#define TCP_OVERSIZE   TCP_MSS
#define LWIP_WND_SCALE 1
#define TCP_RCV_SCALE  2

/* ---- Sockets ------------------------------------------------------------- */
#define LWIP_NETCONN                1
#define LWIP_SOCKET                 1
#define LWIP_COMPAT_SOCKETS         0
#define LWIP_POSIX_SOCKETS_IO_NAMES 0
#define LWIP_SOCKET_OFFSET          0
#define LWIP_SOCKET_SELECT          1
#define LWIP_SOCKET_POLL            1
#define LWIP_SO_RCVTIMEO            1
#define LWIP_SO_SNDTIMEO            1
#define LWIP_SO_RCVBUF              1
#define LWIP_SO_LINGER              0
#define SO_REUSE                    1
#define LWIP_FIONREAD_LINUXMODE     1
#define RECV_BUFSIZE_DEFAULT        (256 * 1024)
/* Debian's sockets.c leaves the sockaddr length fields to the port: lwIP's
 * own (BSD) layout has them. */
#define IP4ADDR_SOCKADDR_SET_LEN(sin) ((sin)->sin_len = sizeof(struct sockaddr_in))
#define IPADDR_SOCKADDR_GET_LEN(addr) ((addr)->sa.sa_len)

/* ---- Per-activity accounting (modules/net/activity.c) --------------------- */
/* One pcb argument, NET_PCB_ACTIVITY: the activity (acct_ref_t) its socket
 * belongs to.  The hooks test for an activity in line, so that without one
 * a segment or packet costs a load and a branch, not a call. */
#define LWIP_TCP_PCB_NUM_EXT_ARGS 1
#define LWIP_HOOK_FILENAME        "lwip_hooks.h"
#define LWIP_HOOK_TCP_OUT_ADD_TCPOPTS(p, hdr, pcb, opts) \
	((pcb) && NET_PCB_ACTIVITY(pcb) ? net_hook_tcp_out(p, hdr, pcb, opts) : (opts))
/* The same hook raises an established connection's segment size where the
 * NIC segments (netif.c); a listening pcb has no mss, so state comes first. */
#define LWIP_HOOK_TCP_INPACKET_PCB(pcb, hdr, optlen, opt1len, opt2, p)                 \
	(((pcb)->state == ESTABLISHED && net_segmenting_links && (pcb)->mss == TCP_MSS \
	      ? net_hook_tcp_segment_size(pcb)                                         \
	      : (void)0),                                                              \
	 NET_PCB_ACTIVITY(pcb) ? net_hook_tcp_in(pcb, p) : ERR_OK)
#define LWIP_HOOK_IP4_INPUT(p, netif) (net_sockets_with_activity ? net_hook_ip4_input(p, netif) : 0)
/* A packet to this host's own address on a link whose NIC makes the TCP
 * checksums takes the loopback interface (netif.c); src is NULL when lwIP
 * asks after finding no route. */
#define LWIP_HOOK_IP4_ROUTE_SRC(src, dest) \
	(net_checksumming_links && (src) ? net_hook_route_to_self(src, dest) : NULL)

/* ---- Checksums, statistics, debugging ------------------------------------ */
/* Checksums per interface: a NIC that makes TCP checksums gets none from
 * lwIP (netif.c).  Not on copy, which would make them before lwIP knows the
 * interface. */
#define LWIP_CHECKSUM_CTRL_PER_NETIF 1
#define LWIP_CHECKSUM_ON_COPY        0
#define LWIP_STATS                   1
#define LWIP_STATS_DISPLAY           0
#define MEM_STATS                    1
#define MEMP_STATS                   1
#define SYS_STATS                    1
#define LINK_STATS                   1
#define IP_STATS                     1
#define TCP_STATS                    1
#define UDP_STATS                    1
#define ICMP_STATS                   1
#define MIB2_STATS                   1 /* retransmitted segments, resets */
#define LWIP_DEBUG                   0
#define LWIP_PERF                    0

#endif
