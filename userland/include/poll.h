/*
 * Waiting on several descriptors: poll with Linux's struct pollfd and event
 * bits (the kernel takes them as they are).
 *
 *     struct pollfd p[2] = {{.fd = listener, .events = POLLIN}, {.fd = c, .events = POLLOUT}};
 *     int ready = poll(p, 2, 1000);   // milliseconds; -1 waits for ever
 *     if (ready > 0 && (p[0].revents & POLLIN)) accept(...);
 */
#ifndef _POLL_H
#define _POLL_H

#ifdef __cplusplus
extern "C" {
#endif

struct pollfd {
	int fd;        /* a negative fd is skipped (revents 0) */
	short events;  /* requested */
	short revents; /* returned */
};

typedef unsigned long nfds_t;

#define POLLIN     0x001
#define POLLPRI    0x002
#define POLLOUT    0x004
#define POLLERR    0x008 /* always reported, never requested */
#define POLLHUP    0x010 /* always reported */
#define POLLNVAL   0x020 /* fd not open; always reported */
#define POLLRDNORM 0x040
#define POLLRDBAND 0x080
#define POLLWRNORM 0x100
#define POLLWRBAND 0x200
#define POLLRDHUP  0x2000

/* Returns how many entries have non-zero revents (0 at the timeout), or -1
 * with errno EFAULT, EINTR, EINVAL (too many entries) or ENOMEM. */
int poll(struct pollfd *fds, nfds_t count, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
