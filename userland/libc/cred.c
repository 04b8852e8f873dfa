/*
 * User and group ids: getuid ... setregid for newlib's <unistd.h>, each one
 * system call (Linux's numbers; seteuid and setegid are setresuid and
 * setresgid with the other ids left as they are, as glibc does).
 */
#include <errno.h>
#include <sys/types.h>
#include <unistd.h>

#include "internal.h"

#define LEAVE (-1L) /* an id argument the kernel leaves unchanged */

/* newlib's ids are 16 bits: its -1 is 0xffff, the kernel's 0xffffffff. */
static long id_argument(unsigned short id)
{
	return id == 0xffff ? LEAVE : (long)id;
}

uid_t getuid(void)
{
	return (uid_t)ms_syscall3(__NR_getuid, 0, 0, 0);
}

uid_t geteuid(void)
{
	return (uid_t)ms_syscall3(__NR_geteuid, 0, 0, 0);
}

gid_t getgid(void)
{
	return (gid_t)ms_syscall3(__NR_getgid, 0, 0, 0);
}

gid_t getegid(void)
{
	return (gid_t)ms_syscall3(__NR_getegid, 0, 0, 0);
}

int setuid(uid_t uid)
{
	return (int)sys_result(ms_syscall3(__NR_setuid, id_argument(uid), 0, 0));
}

int setgid(gid_t gid)
{
	return (int)sys_result(ms_syscall3(__NR_setgid, id_argument(gid), 0, 0));
}

int seteuid(uid_t uid)
{
	return (int)sys_result(ms_syscall3(__NR_setresuid, LEAVE, id_argument(uid), LEAVE));
}

int setegid(gid_t gid)
{
	return (int)sys_result(ms_syscall3(__NR_setresgid, LEAVE, id_argument(gid), LEAVE));
}

int setreuid(uid_t real, uid_t effective)
{
	return (int)sys_result(
	    ms_syscall3(__NR_setreuid, id_argument(real), id_argument(effective), 0));
}

int setregid(gid_t real, gid_t effective)
{
	return (int)sys_result(
	    ms_syscall3(__NR_setregid, id_argument(real), id_argument(effective), 0));
}
