/*
 * Users and privileges.  A process has real, effective and saved user and
 * group ids and a set of privileges (uapi/cred.h).  The children of the
 * kernel (init, the console's programs) are root with every privilege; fork
 * copies the set, exec keeps it.  A privilege counts only while the
 * effective uid is 0 (as Linux's effective capabilities follow euid), can be
 * dropped (ms_priv) and never comes back: the set is cleared for good once
 * none of the three user ids is 0, and nothing adds to it.
 *
 * The id rules are POSIX's: with euid 0 a process may set any id;
 * otherwise only to one of its own real, effective or saved ids.  The ids
 * change only on the process's own thread, under proc_lock, so a check by
 * another process (kill) sees them whole.  A new real uid takes the
 * process's count of processes with it (user_charges.c).
 */
#include "uapi/cred.h"
#include "lib/errno.h"
#include "proc/internal.h"

#define UNCHANGED 0xffffffffu /* -1: leave this id as it is */

static const struct proc_cred root_cred = {ROOT_UID, ROOT_UID, ROOT_UID, ROOT_GID,
					   ROOT_GID, ROOT_GID, PRIV_ALL};

struct proc_cred proc_cred_for_child(const struct process *parent)
{
	return parent ? parent->cred : root_cred;
}

static bool effective(const struct proc_cred *cred, unsigned privilege)
{
	return cred->euid == ROOT_UID && (cred->privileges & privilege) == privilege;
}

bool proc_has_privilege(unsigned privilege)
{
	struct process *self = proc_current();
	return !self || effective(&self->cred, privilege);
}

uint32_t proc_current_euid(void)
{
	struct process *self = proc_current();
	return self ? self->cred.euid : ROOT_UID;
}

uint32_t proc_current_egid(void)
{
	struct process *self = proc_current();
	return self ? self->cred.egid : ROOT_GID;
}

uint32_t proc_owner(const struct process *p)
{
	const struct proc_cred *c = &p->cred;
	return c->uid == c->euid && c->uid == c->suid ? c->uid : PROC_OWNER_MIXED;
}

uint32_t proc_current_owner(void)
{
	struct process *self = proc_current();
	return self ? proc_owner(self) : ROOT_UID;
}

static bool owns(const struct proc_cred *actor, const struct proc_cred *target)
{
	return actor->uid == target->uid || actor->uid == target->suid ||
	       actor->euid == target->uid || actor->euid == target->suid;
}

bool proc_may_act_on_locked(const struct process *target, unsigned privilege)
{
	struct process *self = proc_current();
	return !self || effective(&self->cred, privilege) || owns(&self->cred, &target->cred);
}

bool proc_may_signal_locked(const struct process *target)
{
	return proc_may_act_on_locked(target, PRIV_SIGNAL);
}

/* ---- Changing ids ------------------------------------------------------------ */

/* One of the three ids, or UNCHANGED. */
static bool one_of(uint32_t id, const uint32_t ids[3])
{
	return id == UNCHANGED || id == ids[0] || id == ids[1] || id == ids[2];
}

/* Sets ids[] (real, effective, saved) to wanted[] where not UNCHANGED, if
 * allowed: anything with euid 0, else only values among the current ids.
 * Returns 0 or -EPERM. */
static int set_ids(uint32_t ids[3], const uint32_t wanted[3], bool privileged)
{
	for (int i = 0; i < 3 && !privileged; i++)
		if (!one_of(wanted[i], ids))
			return -EPERM;
	for (int i = 0; i < 3; i++)
		if (wanted[i] != UNCHANGED)
			ids[i] = wanted[i];
	return 0;
}

/* Under proc_lock: no user id 0 left, no privilege ever again. */
static void drop_privileges_of_users(struct proc_cred *cred)
{
	if (cred->uid != ROOT_UID && cred->euid != ROOT_UID && cred->suid != ROOT_UID)
		cred->privileges = 0;
}

static void (*cred_change_hook)(void);

void proc_set_cred_change_hook(void (*hook)(void))
{
	__atomic_store_n(&cred_change_hook, hook, __ATOMIC_RELEASE);
}

static void cred_changed(void)
{
	void (*hook)(void) = __atomic_load_n(&cred_change_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook();
}

/* Changes self's ids under proc_lock; 0 or -EPERM. */
static int change_ids(struct process *self, bool group, const uint32_t wanted[3])
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct proc_cred *cred = &self->cred;
	uint32_t ids[3] = {group ? cred->gid : cred->uid, group ? cred->egid : cred->euid,
			   group ? cred->sgid : cred->suid};
	int result = set_ids(ids, wanted, cred->euid == ROOT_UID);
	if (result == 0 && group) {
		cred->gid = ids[0], cred->egid = ids[1], cred->sgid = ids[2];
	} else if (result == 0) {
		cred->uid = ids[0], cred->euid = ids[1], cred->suid = ids[2];
		drop_privileges_of_users(cred);
	}
	spin_unlock_irqrestore(&proc_lock, irq);
	return result;
}

/* The real uid a change of ids leaves self with. */
static uint32_t real_uid_after(const struct process *self, bool group, const uint32_t wanted[3])
{
	return group || wanted[0] == UNCHANGED ? self->cred.uid : wanted[0];
}

/* A process counts to its real uid's processes (process.c), so a new real
 * uid takes the count: counted to new_uid before the change (unbounded: a
 * process that may change its real uid was given that uid by root, and a
 * refused setuid is a hazard to programs that do not check it), given back
 * by the uid that no longer has it after.  Only the process's own thread
 * changes its ids, so cred.uid stays as read here. */
static int count_to_new_real_uid(uint32_t new_uid)
{
	return proc_user_charge(new_uid, PROC_USER_PROCESSES, 1, UINT64_MAX) ? -EAGAIN : 0;
}

int proc_set_ids(bool group, const uint32_t wanted[3])
{
	struct process *self = proc_current();
	if (!self)
		return -EPERM;
	uint32_t old_uid = self->cred.uid, new_uid = real_uid_after(self, group, wanted);
	if (new_uid != old_uid && count_to_new_real_uid(new_uid))
		return -EAGAIN;
	int result = change_ids(self, group, wanted);
	if (new_uid != old_uid)
		proc_user_release(result == 0 ? old_uid : new_uid, PROC_USER_PROCESSES, 1);
	if (result == 0 && !group)
		cred_changed();
	return result;
}

void proc_get_ids(bool group, uint32_t ids[3])
{
	struct process *self = proc_current();
	const struct proc_cred *cred = self ? &self->cred : &root_cred;
	ids[0] = group ? cred->gid : cred->uid;
	ids[1] = group ? cred->egid : cred->euid;
	ids[2] = group ? cred->sgid : cred->suid;
}

int proc_drop_privileges(unsigned drop)
{
	struct process *self = proc_current();
	if (drop & ~PRIV_ALL)
		return -EINVAL;
	if (!self)
		return (int)PRIV_ALL;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	self->cred.privileges &= ~drop;
	unsigned held = self->cred.euid == ROOT_UID ? self->cred.privileges : 0;
	spin_unlock_irqrestore(&proc_lock, irq);
	cred_changed();
	return (int)held;
}
