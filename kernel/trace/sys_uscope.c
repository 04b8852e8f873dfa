/*
 * ms_uscope: the trace map from a program (uapi/trace.h), for users without
 * the kernel console.  A caller with PRIV_MONITOR changes the map as the
 * console does (entries for every user's processes); any other changes
 * only its own user's entries, which trace only that user's processes.
 * The name and the request are copied in once and checked here; uscope.c
 * does the rest under its lock.
 */
#include "trace/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "proc/proc.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"
#include "uapi/cred.h"

/* The caller as a requester: PRIV_MONITOR for every user, else its user
 * (-EPERM: its user ids differ, or it is root without PRIV_MONITOR, which
 * gave up watching the processes of others: root's are the system's). */
static int caller(struct uscope_requester *who)
{
	if (proc_has_privilege(PRIV_MONITOR)) {
		*who = (struct uscope_requester){.every_user = true};
		return 0;
	}
	*who = (struct uscope_requester){.owner = proc_current_owner()};
	return who->owner == PROC_OWNER_MIXED || who->owner == 0 ? -EPERM : 0;
}

/* A user string of at most USCOPE_NAME_MAX - 1 bytes into name. */
static int copy_name(char name[USCOPE_NAME_MAX], const char __user *from)
{
	long length = strncpy_from_user(name, from, USCOPE_NAME_MAX);
	if (length == -ENAMETOOLONG || length == 0)
		return -EINVAL;
	return length < 0 ? (int)length : 0;
}

static long uscope_trace_call(const char __user *user_name, const void __user *arg, uint64_t size)
{
	struct uscope_requester who;
	char name[USCOPE_NAME_MAX];
	struct uscope_request request;
	if (size != sizeof request)
		return -EINVAL;
	int error = caller(&who);
	error = error ? error : copy_name(name, user_name);
	if (error)
		return error;
	if (copy_from_user(&request, arg, sizeof request))
		return -EFAULT;
	if (strnlen(request.events, sizeof request.events) == sizeof request.events)
		return -EINVAL; /* no NUL */
	return uscope_trace_as(name, request.mode, request.budget, request.events, who);
}

static long uscope_list_call(void __user *arg, uint64_t size)
{
	struct uscope_requester who;
	struct uscope_info info[USCOPE_MAP_MAX];
	int error = caller(&who);
	if (error)
		return error;
	int n = uscope_list_as(info, USCOPE_MAP_MAX, who);
	uint64_t copied = (uint64_t)n < size ? (uint64_t)n : size;
	if (copied && copy_to_user(arg, info, copied * sizeof info[0]))
		return -EFAULT;
	return n;
}

SYSCALL_DEFINE4(ms_uscope, uint32_t, op, const char __user *, name, void __user *, arg, uint64_t,
		size)
{
	if (op == USCOPE_TRACE)
		return uscope_trace_call(name, arg, size);
	if (op == USCOPE_LIST)
		return name ? -EINVAL : uscope_list_call(arg, size);
	if (op != USCOPE_UNTRACE || arg || size)
		return -EINVAL;
	struct uscope_requester who;
	char copied[USCOPE_NAME_MAX];
	int error = caller(&who);
	error = error ? error : copy_name(copied, name);
	return error ? error : uscope_untrace_as(copied, who);
}
