/*
 * Waiting on descriptors: poll (Linux's struct pollfd and event bits, passed
 * through) and select over newlib's fd_set.  newlib's fd_set holds
 * FD_SETSIZE (64) bits in longs, the layout Linux's select reads for
 * ceil(n / 64) longs, so a set passes through as long as n <= FD_SETSIZE;
 * beyond that select fails with EINVAL rather than let the kernel read past
 * the caller's sets.  Both restart nowhere: EINTR reaches the caller.
 */
#include <errno.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/time.h>

#include "internal.h"

#ifndef __NR_poll
#define __NR_poll 7
#endif
#ifndef __NR_select
#define __NR_select 23
#endif

_Static_assert(sizeof(struct pollfd) == 8, "struct pollfd is not Linux's");

int poll(struct pollfd *fds, nfds_t count, int timeout_ms)
{
	return (int)sys_result(ms_syscall3(__NR_poll, (long)fds, (long)count, timeout_ms));
}

int select(int n, fd_set *readable, fd_set *writable, fd_set *failed, struct timeval *timeout)
{
	if (n < 0 || n > FD_SETSIZE) {
		errno = EINVAL;
		return -1;
	}
	return (int)sys_result(ms_syscall6(__NR_select, n, (long)readable, (long)writable,
					   (long)failed, (long)timeout, 0));
}
