/*
 * Conversions between the kernel's numbering (Linux's) and newlib's.  Errno
 * values 1..34 and signals 1..9, 11, 13..15 agree; the rest go through small
 * tables.  Everything here is pure: no system calls, no state.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"

struct number_pair {
	int linux_value;
	int newlib_value;
};

static const struct number_pair errnos[] = {
    {35, EDEADLK},     {36, ENAMETOOLONG},    {37, ENOLCK},        {38, ENOSYS},
    {39, ENOTEMPTY},   {40, ELOOP},           {42, ENOMSG},        {43, EIDRM},
    {61, ENODATA},     {62, ETIME},           {71, EPROTO},        {74, EBADMSG},
    {75, EOVERFLOW},   {84, EILSEQ},          {95, ENOTSUP},       {104, ECONNRESET},
    {105, ENOBUFS},    {110, ETIMEDOUT},      {111, ECONNREFUSED}, {125, ECANCELED},
    {88, ENOTSOCK},    {89, EDESTADDRREQ},    {90, EMSGSIZE},      {91, EPROTOTYPE},
    {92, ENOPROTOOPT}, {93, EPROTONOSUPPORT}, {96, EPFNOSUPPORT},  {97, EAFNOSUPPORT},
    {98, EADDRINUSE},  {99, EADDRNOTAVAIL},   {100, ENETDOWN},     {101, ENETUNREACH},
    {102, ENETRESET},  {103, ECONNABORTED},   {106, EISCONN},      {107, ENOTCONN},
    {112, EHOSTDOWN},  {113, EHOSTUNREACH},   {114, EALREADY},     {115, EINPROGRESS},
};

static const struct number_pair signals[] = {
    {7, SIGBUS},   {10, SIGUSR1}, {12, SIGUSR2}, {17, SIGCHLD}, {18, SIGCONT},
    {19, SIGSTOP}, {20, SIGTSTP}, {23, SIGURG},  {29, SIGIO},   {31, SIGSYS},
};

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

int errno_from_linux(int linux_errno)
{
	if (linux_errno >= 1 && linux_errno <= 34)
		return linux_errno;
	for (unsigned i = 0; i < COUNT(errnos); i++)
		if (errnos[i].linux_value == linux_errno)
			return errnos[i].newlib_value;
	return EINVAL;
}

long sys_result(long result)
{
	if (result < 0 && result > -4096) {
		errno = errno_from_linux((int)-result);
		return -1;
	}
	return result;
}

int signal_to_linux(int sig)
{
	for (unsigned i = 0; i < COUNT(signals); i++)
		if (signals[i].newlib_value == sig)
			return signals[i].linux_value;
	return sig;
}

int signal_from_linux(int sig)
{
	for (unsigned i = 0; i < COUNT(signals); i++)
		if (signals[i].linux_value == sig)
			return signals[i].newlib_value;
	return sig;
}

int wait_status_from_linux(int status)
{
	int sig = status & 0x7f;
	if (sig == 0) /* exited */
		return status;
	if (sig == 0x7f) /* stopped: the stop signal in the second byte */
		return (signal_from_linux((status >> 8) & 0xff) << 8) | 0x7f;
	return (status & ~0x7f) | signal_from_linux(sig);
}

void stat_from_linux(const struct linux_stat *in, struct stat *out)
{
	memset(out, 0, sizeof(*out));
	out->st_dev = (dev_t)in->dev;
	out->st_ino = (ino_t)in->ino;
	out->st_mode = (mode_t)in->mode; /* the S_IF* bits agree */
	out->st_nlink = (nlink_t)in->nlink;
	out->st_uid = (uid_t)in->uid;
	out->st_gid = (gid_t)in->gid;
	out->st_rdev = (dev_t)in->rdev;
	out->st_size = (off_t)in->size;
	out->st_blksize = (blksize_t)in->blksize;
	out->st_blocks = (blkcnt_t)in->blocks;
	out->st_atim.tv_sec = in->atime_sec;
	out->st_atim.tv_nsec = in->atime_nsec;
	out->st_mtim.tv_sec = in->mtime_sec;
	out->st_mtim.tv_nsec = in->mtime_nsec;
	out->st_ctim.tv_sec = in->ctime_sec;
	out->st_ctim.tv_nsec = in->ctime_nsec;
}
