/*
 * The system calls of process groups and sessions: setpgid, getpgid,
 * getpgrp, setsid and getsid.  Each checks its arguments and acts through
 * session.c.
 */
#include "lib/errno.h"
#include "proc/internal.h"
#include "syscall/syscall.h"

SYSCALL_DEFINE2(setpgid, int, pid, int, pgid)
{
	return proc_set_pgid(pid, pgid);
}

SYSCALL_DEFINE1(getpgid, int, pid)
{
	return proc_get_pgid(pid);
}

SYSCALL_DEFINE0(getpgrp)
{
	return proc_get_pgid(0);
}

SYSCALL_DEFINE0(setsid)
{
	return proc_set_sid();
}

SYSCALL_DEFINE1(getsid, int, pid)
{
	return proc_get_sid(pid);
}
