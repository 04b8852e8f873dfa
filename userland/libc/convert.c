/*
 * Conversions between the kernel's numbering (Linux's) and newlib's.  Errno
 * values 1..34 and most signals agree; the rest go through small tables.
 * Everything here is pure: no system calls, no state.
 */
#define __LINUX_ERRNO_EXTENSIONS__ /* names every errno newlib has */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include <microscope/signal.h>

#include "internal.h"

struct number_pair {
	int linux_value;
	int newlib_value;
};

/* Every Linux errno above 34 that newlib has a name for.  Linux's 95 is both
 * EOPNOTSUPP and ENOTSUP; newlib tells them apart, and the kernel names it
 * ENOTSUP. */
static const struct number_pair errnos[] = {
    {35, EDEADLK},         {36, ENAMETOOLONG},  {37, ENOLCK},       {38, ENOSYS},
    {39, ENOTEMPTY},       {40, ELOOP},         {42, ENOMSG},       {43, EIDRM},
    {44, ECHRNG},          {45, EL2NSYNC},      {46, EL3HLT},       {47, EL3RST},
    {48, ELNRNG},          {49, EUNATCH},       {50, ENOCSI},       {51, EL2HLT},
    {52, EBADE},           {53, EBADR},         {54, EXFULL},       {55, ENOANO},
    {56, EBADRQC},         {57, EBADSLT},       {59, EBFONT},       {60, ENOSTR},
    {61, ENODATA},         {62, ETIME},         {63, ENOSR},        {64, ENONET},
    {65, ENOPKG},          {66, EREMOTE},       {67, ENOLINK},      {68, EADV},
    {69, ESRMNT},          {70, ECOMM},         {71, EPROTO},       {72, EMULTIHOP},
    {73, EDOTDOT},         {74, EBADMSG},       {75, EOVERFLOW},    {76, ENOTUNIQ},
    {77, EBADFD},          {78, EREMCHG},       {79, ELIBACC},      {80, ELIBBAD},
    {81, ELIBSCN},         {82, ELIBMAX},       {83, ELIBEXEC},     {84, EILSEQ},
    {86, ESTRPIPE},        {87, EUSERS},        {88, ENOTSOCK},     {89, EDESTADDRREQ},
    {90, EMSGSIZE},        {91, EPROTOTYPE},    {92, ENOPROTOOPT},  {93, EPROTONOSUPPORT},
    {94, ESOCKTNOSUPPORT}, {95, ENOTSUP},       {96, EPFNOSUPPORT}, {97, EAFNOSUPPORT},
    {98, EADDRINUSE},      {99, EADDRNOTAVAIL}, {100, ENETDOWN},    {101, ENETUNREACH},
    {102, ENETRESET},      {103, ECONNABORTED}, {104, ECONNRESET},  {105, ENOBUFS},
    {106, EISCONN},        {107, ENOTCONN},     {108, ESHUTDOWN},   {109, ETOOMANYREFS},
    {110, ETIMEDOUT},      {111, ECONNREFUSED}, {112, EHOSTDOWN},   {113, EHOSTUNREACH},
    {114, EALREADY},       {115, EINPROGRESS},  {116, ESTALE},      {122, EDQUOT},
    {123, ENOMEDIUM},      {125, ECANCELED},    {130, EOWNERDEAD},  {131, ENOTRECOVERABLE},
};

/* The signals whose numbers differ.  The others agree, except these, which
 * only one side has: newlib's SIGEMT (7) and SIGLOST (29); Linux's SIGSTKFLT
 * (16), SIGPWR (30) and real-time signals (32 .. 64). */
static const struct number_pair signals[] = {
    {7, SIGBUS},   {10, SIGUSR1}, {12, SIGUSR2}, {17, SIGCHLD}, {18, SIGCONT},
    {19, SIGSTOP}, {20, SIGTSTP}, {23, SIGURG},  {29, SIGIO},   {31, SIGSYS},
};
static const int newlib_only_signals[] = {SIGEMT, SIGLOST};
#define LINUX_LAST_SIGNAL 64

static bool linux_only_signal(int sig)
{
	return sig == 16 || sig == 30 || (sig >= 32 && sig <= LINUX_LAST_SIGNAL);
}

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

static bool listed(const int *values, unsigned count, int value)
{
	for (unsigned i = 0; i < count; i++)
		if (values[i] == value)
			return true;
	return false;
}

int signal_to_linux(int sig)
{
	if (listed(newlib_only_signals, COUNT(newlib_only_signals), sig))
		return -1;
	if (sig > NSIG && linux_only_signal(sig - NSIG))
		return sig - NSIG;
	if (sig < 0 || sig >= NSIG)
		return -1;
	for (unsigned i = 0; i < COUNT(signals); i++)
		if (signals[i].newlib_value == sig)
			return signals[i].linux_value;
	return sig;
}

int ms_signal_to_linux(int sig)
{
	return signal_to_linux(sig);
}

int signal_from_linux(int sig)
{
	if (linux_only_signal(sig))
		return NSIG + sig;
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
