/*
 * The user and group id calls (Linux's numbers and rules: getuid ...
 * setresgid) and ms_priv, which drops privileges and says which are held.
 * An id of -1 (0xffffffff) means "leave it" where Linux says so, and is
 * refused where Linux refuses it (setuid, setgid).
 */
#include "lib/errno.h"
#include "proc/internal.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"

#define UNCHANGED 0xffffffffu

static long get_id(bool group, int which)
{
	uint32_t ids[3];
	proc_get_ids(group, ids);
	return ids[which];
}

SYSCALL_DEFINE0(getuid)
{
	return get_id(false, 0);
}

SYSCALL_DEFINE0(geteuid)
{
	return get_id(false, 1);
}

SYSCALL_DEFINE0(getgid)
{
	return get_id(true, 0);
}

SYSCALL_DEFINE0(getegid)
{
	return get_id(true, 1);
}

/* setuid/setgid: with euid 0 every id; otherwise the effective one, to the
 * real or saved id. */
static long set_one(bool group, uint32_t id)
{
	if (id == UNCHANGED)
		return -EINVAL;
	uint32_t ids[3];
	proc_get_ids(false, ids);
	bool privileged = ids[1] == 0;
	if (!privileged) {
		proc_get_ids(group, ids);
		if (id != ids[0] && id != ids[2])
			return -EPERM;
	}
	uint32_t wanted[3] = {privileged ? id : UNCHANGED, id, privileged ? id : UNCHANGED};
	return proc_set_ids(group, wanted);
}

SYSCALL_DEFINE1(setuid, uint32_t, uid)
{
	return set_one(false, uid);
}

SYSCALL_DEFINE1(setgid, uint32_t, gid)
{
	return set_one(true, gid);
}

/* setreuid/setregid: a new real id, or an effective one other than the
 * real, makes the saved id the new effective one. */
static long set_real_effective(bool group, uint32_t real, uint32_t effective)
{
	uint32_t ids[3];
	proc_get_ids(group, ids);
	uint32_t new_effective = effective == UNCHANGED ? ids[1] : effective;
	bool save = real != UNCHANGED || (effective != UNCHANGED && effective != ids[0]);
	uint32_t wanted[3] = {real, effective, save ? new_effective : UNCHANGED};
	return proc_set_ids(group, wanted);
}

SYSCALL_DEFINE2(setreuid, uint32_t, real, uint32_t, effective)
{
	return set_real_effective(false, real, effective);
}

SYSCALL_DEFINE2(setregid, uint32_t, real, uint32_t, effective)
{
	return set_real_effective(true, real, effective);
}

SYSCALL_DEFINE3(setresuid, uint32_t, real, uint32_t, effective, uint32_t, saved)
{
	uint32_t wanted[3] = {real, effective, saved};
	return proc_set_ids(false, wanted);
}

SYSCALL_DEFINE3(setresgid, uint32_t, real, uint32_t, effective, uint32_t, saved)
{
	uint32_t wanted[3] = {real, effective, saved};
	return proc_set_ids(true, wanted);
}

/* Copies the three ids out, each read once here. */
static long get_three(bool group, uint32_t *real, uint32_t *effective, uint32_t *saved)
{
	uint32_t ids[3];
	proc_get_ids(group, ids);
	if (copy_to_user(real, &ids[0], sizeof ids[0]) ||
	    copy_to_user(effective, &ids[1], sizeof ids[1]) ||
	    copy_to_user(saved, &ids[2], sizeof ids[2]))
		return -EFAULT;
	return 0;
}

SYSCALL_DEFINE3(getresuid, uint32_t *, real, uint32_t *, effective, uint32_t *, saved)
{
	return get_three(false, real, effective, saved);
}

SYSCALL_DEFINE3(getresgid, uint32_t *, real, uint32_t *, effective, uint32_t *, saved)
{
	return get_three(true, real, effective, saved);
}

/* Drops the privileges in drop (PRIV_*, uapi/cred.h; 0 drops none) for
 * good; returns those that count now, or -EINVAL for unknown bits. */
SYSCALL_DEFINE1(ms_priv, unsigned, drop)
{
	return proc_drop_privileges(drop);
}
