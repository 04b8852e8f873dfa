/*
 * Process groups and sessions, in POSIX's shape.  Every process belongs to a
 * group (pgid) and a session (sid): a shell puts each job in its own group so
 * that the console's ^C and ^Z reach only the job in the foreground (the
 * console keeps which group that is, modules/devfs/console.c), and a daemon
 * leaves the console's session with setsid so that nothing typed there
 * reaches it.  A program the kernel starts (init, a monitor process) leads a
 * new session and group; a forked process starts in its parent's.
 *
 * Rules (as POSIX, except that a child may be moved after it exec'd too): a
 * process may move itself or a child into a group of its own session, or
 * make a new group named by the moved process's pid; a session leader's group
 * never changes; setsid fails for a group leader.  Ids change under
 * proc_lock.
 *
 * Hanging up: when a session's leader ends, the session-end hook (the
 * console's) hangs up the terminal's foreground group; when a process's end
 * orphans a group (no member has a live parent in another group of the
 * same session) that has a stopped member, the group gets SIGHUP and SIGCONT.
 */
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/internal.h"

void proc_start_session(struct process *p)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	p->pgid = p->sid = p->pid;
	p->ignored_signals = 0;
	p->handled_signals = 0;
	p->blocked_signals = 0;
	memset(p->actions, 0, sizeof p->actions);
	spin_unlock_irqrestore(&proc_lock, irq);
}

int proc_pgid(const struct process *p)
{
	return p->pgid;
}

int proc_sid(const struct process *p)
{
	return p->sid;
}

struct group_search {
	int pgid, sid;
	bool found;
};

static void match_group(struct process *p, void *arg)
{
	struct group_search *search = arg;
	if (p->pgid == search->pgid && /* a zombie is a member until it is reaped */
	    (search->sid == 0 || p->sid == search->sid))
		search->found = true;
}

/* True when a process of session sid (0: any) is in group pgid. */
static bool group_exists_locked(int pgid, int sid)
{
	struct group_search search = {pgid, sid, false};
	proc_for_each_locked(match_group, &search);
	return search.found;
}

bool proc_group_in_session(int pgid, int sid)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	bool found = pgid > 0 && group_exists_locked(pgid, sid);
	spin_unlock_irqrestore(&proc_lock, irq);
	return found;
}

bool proc_session_leader_alive(int sid)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *leader = sid > 0 ? proc_find_locked(sid) : NULL;
	bool alive = leader && leader->state != PROC_ZOMBIE && leader->sid == sid;
	spin_unlock_irqrestore(&proc_lock, irq);
	return alive;
}

int proc_set_pgid(int pid, int pgid)
{
	struct process *self = proc_current();
	if (!self || pgid < 0)
		return pid < 0 || pgid < 0 ? -EINVAL : -ESRCH;
	if (pid < 0)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *p = pid == 0 ? self : proc_find_locked(pid);
	int error = 0;
	if (!p || p->state == PROC_ZOMBIE || (p != self && p->parent != self))
		error = -ESRCH;
	else if (p->sid != self->sid || p->pid == p->sid)
		error = -EPERM; /* another session, or a session leader */
	if (!error && pgid == 0)
		pgid = p->pid;
	if (!error && pgid != p->pid && !group_exists_locked(pgid, self->sid))
		error = -EPERM;
	if (!error)
		p->pgid = pgid;
	spin_unlock_irqrestore(&proc_lock, irq);
	return error;
}

/* pid 0: the caller.  Stores the group or session in *value. */
static int get_ids(int pid, int *pgid, int *sid)
{
	struct process *self = proc_current();
	if (pid < 0)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *p = pid == 0 ? self : proc_find_locked(pid);
	int error = !p || p->state == PROC_ZOMBIE ? -ESRCH : 0;
	if (!error) {
		*pgid = p->pgid;
		*sid = p->sid;
	}
	spin_unlock_irqrestore(&proc_lock, irq);
	return error;
}

int proc_get_pgid(int pid)
{
	int pgid, sid;
	int error = get_ids(pid, &pgid, &sid);
	return error ? error : pgid;
}

int proc_get_sid(int pid)
{
	int pgid, sid;
	int error = get_ids(pid, &pgid, &sid);
	return error ? error : sid;
}

int proc_set_sid(void)
{
	struct process *self = proc_current();
	if (!self)
		return -EPERM;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	int result = self->pid;
	if (self->pgid == self->pid || group_exists_locked(self->pid, 0))
		result = -EPERM; /* a group leader, or its pid names a group */
	else
		self->pgid = self->sid = self->pid;
	spin_unlock_irqrestore(&proc_lock, irq);
	return result;
}

struct group_signal {
	int pgid; /* 0: every process but init and the sender */
	int signal;
	int exclude; /* the sender, for pgid 0 */
	int count;
	int refused;                  /* members the sender may not signal */
	const struct process *sender; /* NULL: the kernel */
};

static void signal_member(struct process *p, void *arg)
{
	struct group_signal *g = arg;
	if (p->state ==
	    PROC_ZOMBIE) /* an embryo (just forked) counts: it acts on it when it runs */
		return;
	if (g->pgid ? p->pgid != g->pgid : (p->pid == 1 || p->pid == g->exclude))
		return;
	/* A signal the kernel sends (sender NULL: ^C at the console) is
	 * nobody's to refuse: the process that happens to be current when
	 * the key's interrupt comes (httpd as www, say) must not decide. */
	if (g->sender && !proc_may_signal_locked(p)) {
		g->refused++; /* another user's, without PRIV_SIGNAL */
		return;
	}
	proc_signal_from_locked(p, g->signal, g->sender);
	g->count++;
}

static int signal_group(int pgid, int signal, int exclude, const struct process *sender)
{
	if (signal < 0 || signal >= PROC_SIGNALS)
		return -EINVAL;
	struct group_signal g = {
	    .pgid = pgid, .signal = signal, .exclude = exclude, .sender = sender};
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	proc_for_each_locked(signal_member, &g);
	spin_unlock_irqrestore(&proc_lock, irq);
	return g.count ? 0 : g.refused ? -EPERM : -ESRCH;
}

int proc_signal_group(int pgid, int signal)
{
	return pgid > 0 ? signal_group(pgid, signal, 0, NULL) : -ESRCH;
}

int proc_kill_group(int pid, int signal)
{
	struct process *self = proc_current();
	if (pid > 0)
		return -EINVAL;
	if (pid == 0)
		return self ? signal_group(self->pgid, signal, 0, self) : -ESRCH;
	return signal_group(pid == -1 ? 0 : -pid, signal, self ? self->pid : 0, self);
}

bool proc_refuses_signal(int signal)
{
	struct process *self = proc_current();
	if (!self || signal <= 0 || signal >= PROC_SIGNALS)
		return false;
	uint32_t refused = __atomic_load_n(&self->ignored_signals, __ATOMIC_RELAXED) |
			   __atomic_load_n(&self->blocked_signals, __ATOMIC_RELAXED);
	return refused & (1u << signal);
}

/* ---- Hanging up ------------------------------------------------------------ */

static void (*session_end_hook)(int sid);

void (*proc_set_session_end_hook(void (*hook)(int sid)))(int sid)
{
	return __atomic_exchange_n(&session_end_hook, hook, __ATOMIC_ACQ_REL);
}

void proc_session_ended(int sid)
{
	void (*hook)(int) = __atomic_load_n(&session_end_hook, __ATOMIC_ACQUIRE);
	if (hook)
		hook(sid);
}

struct hangup {
	int pgid;
	int count;
};

static void hang_up_member(struct process *p, void *arg)
{
	struct hangup *h = arg;
	if (p->pgid != h->pgid || p->state == PROC_ZOMBIE)
		return;
	proc_signal_locked(p, SIGHUP);
	proc_signal_locked(p, SIGCONT);
	h->count++;
}

static int hang_up_group_locked(int pgid)
{
	struct hangup h = {pgid, 0};
	proc_for_each_locked(hang_up_member, &h);
	return h.count;
}

int proc_hangup_group(int pgid)
{
	if (pgid <= 0)
		return 0;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	int count = hang_up_group_locked(pgid);
	spin_unlock_irqrestore(&proc_lock, irq);
	return count;
}

struct orphan_check {
	int pgid;
	bool tied;    /* a member's parent is in another group of the session */
	bool stopped; /* a member is stopped */
};

static void check_member(struct process *p, void *arg)
{
	struct orphan_check *c = arg;
	if (p->pgid != c->pgid || p->state == PROC_ZOMBIE)
		return;
	const struct process *parent = p->parent;
	if (parent && parent->state == PROC_RUNNING && parent->sid == p->sid &&
	    parent->pgid != p->pgid)
		c->tied = true;
	if (p->stopped)
		c->stopped = true;
}

static bool seen_before(const int *groups, int index)
{
	for (int i = 0; i < index; i++)
		if (groups[i] == groups[index])
			return true;
	return false;
}

void proc_hangup_orphaned_groups_locked(const int *groups, int count)
{
	for (int i = 0; i < count; i++) {
		if (groups[i] <= 0 || seen_before(groups, i))
			continue;
		struct orphan_check check = {groups[i], false, false};
		proc_for_each_locked(check_member, &check);
		if (!check.tied && check.stopped)
			hang_up_group_locked(groups[i]);
	}
}
