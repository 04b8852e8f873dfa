/*
 * The process table and a process's life: allocation (as an embryo), its
 * thread's start in user mode, exit, waiting and reaping, signals.
 *
 * Invariants, under proc_lock:
 *  - every process is in table[] from proc_alloc until it is reaped (or, for
 *    an orphan, until it ends); live counts them and never exceeds PROC_MAX;
 *  - a process is on its parent's child list as long as it is in the table;
 *    children of the kernel (spawned by kernel threads) have kernel_parent, a
 *    process that never runs; orphans go to init (pid 1), which reaps them,
 *    or to kernel_parent when init is gone (PROC_ORPHAN: freed at exit);
 *  - state only moves forward: EMBRYO → RUNNING → ZOMBIE;
 *  - proc_start_thread writes p only before it launches p's thread: from
 *    that thread's first instruction, p may end and be freed.
 * A process ends in its own thread (proc_exit_current): it gives up its files
 * and memory, ends the session it leads, hands its children on, and only
 * then becomes a zombie and wakes its parent, so that whatever the parent
 * looks at once its wait returns is already done; after it drops
 * proc_lock it no longer touches its structure, which the parent's wait
 * frees.  Signals only set a bit and wake the process's waits; the process
 * acts on them on its way back to user mode (proc_return_to_user): it ends,
 * or, for a stop signal, stops there (its parent's wait4 with WUNTRACED sees
 * it) until SIGCONT or a signal that ends it, or runs its handlers
 * (signal.c).  A process may set a signal to be ignored (never SIGKILL or
 * SIGSTOP); the setting survives fork and exec.
 */
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/gdt.h"
#include "arch/x86_64/traps.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/internal.h"
#include "telemetry/tracepoint.h"
#include "uapi/cred.h"

#define PID_MAX         32768
#define EXIT_REQUEST    0                    /* bit 0 of pending_signals: exit() was called */
#define IGNORED_SIGNALS PROC_IGNORED_SIGNALS /* proc.h */
#define STOP_SIGNALS    PROC_STOP_SIGNALS
#define UNIGNORABLE     ((1u << SIGKILL) | (1u << SIGSTOP))
#define SI_USER         0 /* siginfo's si_code: kill */
#define SI_KERNEL       0x80
#define CLD_EXITED      1
#define CLD_KILLED      2

struct spinlock proc_lock = SPINLOCK_INIT("proc");
static struct process *table[PROC_MAX];
static int live;
static int next_pid = 1;
static struct process kernel_parent = {
    .pid = 0,
    .name = "kernel",
    .state = PROC_RUNNING,
    .child_exit = WAITQ_INIT(kernel_parent.child_exit, "proc.kernel-children"),
    .signal_queue = WAITQ_INIT(kernel_parent.signal_queue, "proc.kernel-signals"),
};

/* ---- Accessors ------------------------------------------------------------ */

_Static_assert(offsetof(struct process, pid) == PROC_OFFSET_PID &&
		   offsetof(struct process, pending_signals) == PROC_OFFSET_PENDING_SIGNALS &&
		   offsetof(struct process, trace_slot) == PROC_OFFSET_TRACE_SLOT &&
		   offsetof(struct process, execs) == PROC_OFFSET_EXECS &&
		   offsetof(struct process, name) == PROC_OFFSET_NAME,
	       "proc.h reads these fields in line");

int proc_parent_pid(const struct process *p)
{
	return p->parent ? p->parent->pid : 0;
}

struct address_space *proc_address_space(struct process *p)
{
	return p->memory ? p->memory->space : NULL;
}

int proc_add_kernel_region(uint64_t start, uint64_t end)
{
	struct process *p = proc_current();
	if (!p || !p->memory)
		return -EPERM;
	return memory_add_kernel_region(p->memory, start, end);
}

int proc_map_kernel_frame(uint64_t address, uint64_t phys, bool writable)
{
	struct process *p = proc_current();
	if (!p || !p->memory)
		return -EPERM;
	return memory_map_kernel_frame(p->memory, address, phys, writable);
}

struct proc_module_slots *proc_slots(struct process *p)
{
	return &p->slots;
}

static int (*trace_exec_hook)(const char *name, const char *path, uint32_t owner);

void proc_set_trace_exec_hook(int (*decide)(const char *name, const char *path, uint32_t owner))
{
	__atomic_store_n(&trace_exec_hook, decide, __ATOMIC_RELEASE);
}

void proc_refresh_user_stacks(void *unused)
{
	(void)unused;
	uint64_t irq = irq_save();
	cpu_set_user_stacks(this_cpu(), (unsigned)proc_trace_slot(proc_current()));
	irq_restore(irq);
}

void proc_own_code(const struct process *p, uint64_t *start, uint64_t *end)
{
	*start = p ? p->own_code_start : 0;
	*end = p ? p->own_code_end : 0;
}

void proc_unwind_tables(const struct process *p, struct cfi_tables *out)
{
	*out = p ? p->unwind : (struct cfi_tables){0};
}

void proc_set_name(struct process *p, const char *path)
{
	const char *base = path;
	for (const char *c = path; *c; c++)
		if (*c == '/' && c[1])
			base = c + 1;
	memset(p->name, 0, sizeof p->name); /* NUL-padded to its end: proc_name */
	strlcpy(p->name, base, sizeof p->name);
	if (p->thread)
		thread_set_name(p->thread, p->name);
	int (*decide)(const char *, const char *, uint32_t) =
	    __atomic_load_n(&trace_exec_hook, __ATOMIC_ACQUIRE);
	if (decide) { /* an exec re-decides by the new program's name or path */
		__atomic_store_n(&p->trace_slot, (uint8_t)decide(p->name, path, proc_owner(p)),
				 __ATOMIC_RELAXED);
		proc_refresh_user_stacks(NULL);
	}
	if (tracepoint_on() || (tracepoint_stacks_on() && p->trace_slot)) {
		struct trace_thread_name event = {
		    .pid = p->pid, .tid = p->thread ? (int32_t)thread_id(p->thread) : 0};
		strlcpy(event.name, p->name, sizeof event.name);
		tracepoint_write(TRACE_PROCESS_EXEC, &event, sizeof event);
	}
}

int proc_count(void)
{
	return __atomic_load_n(&live, __ATOMIC_RELAXED);
}

/* ---- The table ------------------------------------------------------------ */

struct process *proc_find_locked(int pid)
{
	for (int i = 0; i < PROC_MAX; i++)
		if (table[i] && table[i]->pid == pid)
			return table[i];
	return NULL;
}

bool proc_still_runs(int pid, const struct process *p)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *found = pid > 0 ? proc_find_locked(pid) : NULL;
	bool runs = found && found == p && found->state != PROC_ZOMBIE && found->memory;
	spin_unlock_irqrestore(&proc_lock, irq);
	return runs;
}

bool proc_still_runs_program(int pid, const struct process *p, uint32_t execs)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *found = pid > 0 ? proc_find_locked(pid) : NULL;
	bool runs = found && found == p && found->state != PROC_ZOMBIE && found->memory &&
		    found->execs == execs;
	spin_unlock_irqrestore(&proc_lock, irq);
	return runs;
}

void proc_for_each_locked(void (*fn)(struct process *p, void *arg), void *arg)
{
	spin_assert_held(&proc_lock);
	for (int i = 0; i < PROC_MAX; i++)
		if (table[i])
			fn(table[i], arg);
}

static int next_free_pid_locked(void)
{
	for (;;) {
		int pid = next_pid;
		next_pid = next_pid + 1 < PID_MAX ? next_pid + 1 : 2;
		if (!proc_find_locked(pid))
			return pid;
	}
}

static void insert_locked(struct process *p)
{
	for (int i = 0; i < PROC_MAX; i++) {
		if (!table[i]) {
			table[i] = p;
			live++;
			return;
		}
	}
	panic("proc: table full with %d live processes", live);
}

static void remove_locked(struct process *p)
{
	for (int i = 0; i < PROC_MAX; i++) {
		if (table[i] == p) {
			table[i] = NULL;
			live--;
			return;
		}
	}
}

static void unlink_child_locked(struct process *p)
{
	struct process **link = &p->parent->first_child;
	while (*link && *link != p)
		link = &(*link)->next_sibling;
	if (*link)
		*link = p->next_sibling;
	p->next_sibling = NULL;
}

static void link_child_locked(struct process *parent, struct process *p)
{
	p->parent = parent;
	p->next_sibling = parent->first_child;
	parent->first_child = p;
}

static bool made_by_root(const struct process *parent)
{
	return !parent || parent->cred.euid == ROOT_UID;
}

/* How many processes may exist when parent makes one more: a user's fork
 * stops PROC_ROOT_RESERVED short of the table's end, so that no user can
 * fill the table and leave root (the console shell, init's reaping, an
 * administrator's kill) unable to start anything.  The kernel's children and
 * a process of effective uid 0 may take every slot. */
static int slots_for(const struct process *parent)
{
	return made_by_root(parent) ? PROC_MAX : PROC_MAX - PROC_ROOT_RESERVED;
}

/* Counts new process p to its real uid (user_charges.c) until it is freed
 * (free_process); a setuid to another real uid moves the count (cred.c).
 * All users but root share the table's first PROC_MAX - PROC_ROOT_RESERVED
 * slots, and one user forking until refused would otherwise take them all
 * and leave every other user unable to fork: so a user's own fork stops at
 * USER_PROC_MAX processes of its real uid.  A process of euid 0 is counted
 * but not bounded.  Returns 0, -EAGAIN or -ENOMEM. */
static int charge_process(const struct process *parent, const struct process *p)
{
	uint64_t limit = made_by_root(parent) ? UINT64_MAX : USER_PROC_MAX;
	int error = proc_user_charge(p->cred.uid, PROC_USER_PROCESSES, 1, limit);
	return error == -ENOSPC ? -EAGAIN : error;
}

/* Frees p, out of the table, and gives back its count to its real uid. */
static void free_process(struct process *p)
{
	proc_user_release(p->cred.uid, PROC_USER_PROCESSES, 1);
	kfree(p);
}

struct process *proc_alloc(struct process *parent, const char *name, int *error)
{
	struct process *p = kzalloc(sizeof *p);
	if (!p) {
		*error = -ENOMEM;
		return NULL;
	}
	waitq_init(&p->child_exit, "wait4"); /* the names are ps's wait channels */
	waitq_init(&p->signal_queue, "signal");
	strlcpy(p->name, name, sizeof p->name);
	p->state = PROC_EMBRYO;
	p->trace_slot = parent ? parent->trace_slot : 0; /* fork inherits the trace map's choice */
	if (parent) {
		memcpy(p->args, parent->args, sizeof p->args);
		p->own_code_start = parent->own_code_start;
		p->own_code_end = parent->own_code_end;
		p->unwind = parent->unwind;
	}
	p->cred = proc_cred_for_child(parent);
	*error = charge_process(parent, p);
	if (*error) {
		kfree(p);
		return NULL;
	}

	uint64_t irq = spin_lock_irqsave(&proc_lock);
	if (live >= slots_for(parent)) {
		spin_unlock_irqrestore(&proc_lock, irq);
		free_process(p);
		*error = -EAGAIN;
		return NULL;
	}
	p->pid = next_free_pid_locked();
	/* A child of the kernel (init, a monitor) leads its own session; any
	 * other inherits its parent's group, session and ignored signals. */
	p->pgid = parent ? parent->pgid : p->pid;
	p->sid = parent ? parent->sid : p->pid;
	p->ignored_signals = parent ? parent->ignored_signals : 0;
	if (parent)
		proc_signals_fork(p, parent);
	else
		proc_altstack_reset(&p->altstack);
	insert_locked(p);
	link_child_locked(parent ? parent : &kernel_parent, p);
	spin_unlock_irqrestore(&proc_lock, irq);
	return p;
}

void proc_free_embryo(struct process *p)
{
	ASSERT(p->state == PROC_EMBRYO);
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	unlink_child_locked(p);
	remove_locked(p);
	spin_unlock_irqrestore(&proc_lock, irq);
	proc_files_exit(p);
	if (p->memory)
		memory_destroy(p->memory);
	free_process(p);
}

/* ---- Running --------------------------------------------------------------- */

/* The proc suite's look at p from its thread's first code
 * (proc_test_start_window). */
static inline void start_window_for_tests(struct process *p)
{
#ifdef KERNEL_TESTS
	void (*window)(struct process *) = proc_test_start_window;
	if (window)
		window(p);
#else
	(void)p;
#endif
}

/* The first code of a process's thread: becomes the process, enters user mode. */
static int process_thread_main(void *arg)
{
	struct process *p = arg;
	struct thread *self = thread_current();

	start_window_for_tests(p);
	thread_set_process(self, p, p->memory->space);
	/* It was switched to as a kernel thread: its process's place in the
	 * trace map (a fork's is its parent's) holds from its first system call. */
	proc_refresh_user_stacks(NULL);
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	p->state = PROC_RUNNING;
	spin_unlock_irqrestore(&proc_lock, irq);
	proc_return_to_user(&p->start_frame);
	arch_enter_user(&p->start_frame);
}

int proc_create_thread(struct process *p)
{
	struct thread *t =
	    thread_create_unstarted(process_thread_main, p, p->name, SCHED_PRIORITY_NORMAL);
	if (!t)
		return -ENOMEM;
	thread_detach(t);
	/* Known before it runs (affinity calls right after fork). */
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	p->thread = t;
	spin_unlock_irqrestore(&proc_lock, irq);
	return 0;
}

/* The last step: p may end and be freed from then on. */
void proc_launch_thread(struct process *p)
{
	thread_launch(p->thread);
}

int proc_start_thread(struct process *p)
{
	int error = proc_create_thread(p);
	if (!error)
		proc_launch_thread(p);
	return error;
}

/* fn on pid's thread; with checked, only when the caller may act on pid
 * with privilege, found and checked in the same hold of proc_lock.  The
 * caller itself is always its own. */
static int call_on_thread(int pid, bool checked, unsigned privilege,
			  int (*fn)(struct thread *t, void *arg), void *arg)
{
	struct process *self = proc_current();
	if (pid == 0 || (self && pid == self->pid))
		return self ? fn(thread_current(), arg) : -ESRCH;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *p = pid > 0 ? proc_find_locked(pid) : NULL;
	int result = !p ? -ESRCH : checked && !proc_may_act_on_locked(p, privilege) ? -EPERM : 0;
	if (!result && (p->state == PROC_ZOMBIE || !p->thread))
		result = -ESRCH;
	if (!result)
		result = fn(p->thread, arg);
	spin_unlock_irqrestore(&proc_lock, irq);
	return result;
}

int proc_call_on_thread(int pid, int (*fn)(struct thread *t, void *arg), void *arg)
{
	return call_on_thread(pid, false, 0, fn, arg);
}

int proc_call_on_thread_checked(int pid, unsigned privilege, int (*fn)(struct thread *t, void *arg),
				void *arg)
{
	return call_on_thread(pid, true, privilege, fn, arg);
}

/* ---- Signals --------------------------------------------------------------- */

/* The signals of pending that end p: neither stops, nor ignored by
 * default, nor taken by a handler. */
static uint32_t terminating(const struct process *p, uint32_t pending)
{
	return pending & ~IGNORED_SIGNALS & ~STOP_SIGNALS & ~p->handled_signals;
}

/* The pending stop signals that stop p (not taken by a handler). */
static uint32_t stopping(const struct process *p)
{
	return __atomic_load_n(&p->pending_signals, __ATOMIC_ACQUIRE) & STOP_SIGNALS &
	       ~p->handled_signals;
}

bool proc_is_killed(const struct process *p)
{
	return terminating(p, __atomic_load_n(&p->pending_signals, __ATOMIC_ACQUIRE)) != 0;
}

bool proc_is_interrupted(const struct process *p)
{
	uint32_t pending = __atomic_load_n(&p->pending_signals, __ATOMIC_ACQUIRE);
	return (pending & PROC_INTERRUPTING_SIGNALS) != 0;
}

/* The status a process told to end ends with: SIGKILL first, then the lowest
 * signal, then its own exit code. */
static int exit_status_of(const struct process *p)
{
	uint32_t pending = terminating(p, __atomic_load_n(&p->pending_signals, __ATOMIC_ACQUIRE));
	if (pending & (1u << SIGKILL))
		return PROC_STATUS_SIGNALED(SIGKILL);
	if (pending & ~(1u << EXIT_REQUEST))
		return PROC_STATUS_SIGNALED(__builtin_ctz(pending & ~(1u << EXIT_REQUEST)));
	return p->exit_status;
}

/* SIGCONT ends a stop (pending or in effect), and so does a signal that ends
 * the process: a process on its way out never looks stopped to its parent's
 * wait4 with WUNTRACED, to ps or to the orphaned-group check. */
static void continue_locked(struct process *p)
{
	__atomic_and_fetch(&p->pending_signals, ~STOP_SIGNALS, __ATOMIC_RELEASE);
	p->held_signals &= ~STOP_SIGNALS;
	p->stopped = false;
	p->stop_reported = false;
}

/* What a handler of a signal from sender (NULL: the kernel) is told. */
static struct proc_siginfo info_from(const struct process *sender)
{
	if (!sender)
		return (struct proc_siginfo){.code = SI_KERNEL};
	return (struct proc_siginfo){.code = SI_USER, .pid = sender->pid, .uid = sender->cred.uid};
}

static void signal_with_info_locked(struct process *p, int signal, const struct proc_siginfo *info)
{
	spin_assert_held(&proc_lock);
	uint32_t bit = 1u << signal;
	if (signal <= 0 || signal >= PROC_SIGNALS || p->state == PROC_ZOMBIE)
		return;
	if ((p->ignored_signals & bit) && !(bit & UNIGNORABLE))
		return;
	if (signal == SIGCONT || (terminating(p, bit) && !(p->blocked_signals & bit)))
		continue_locked(p);
	proc_queue_signal_locked(p, signal, info);
	waitq_wake_all(&p->signal_queue);
	waitq_wake_all(&p->child_exit);
}

void proc_signal_from_locked(struct process *p, int signal, const struct process *sender)
{
	struct proc_siginfo info = info_from(sender);
	signal_with_info_locked(p, signal, &info);
}

void proc_signal_locked(struct process *p, int signal)
{
	proc_signal_from_locked(p, signal, NULL);
}

/* Signals process pid, if checked says it may: the lookup, the check and
 * the delivery under one hold of proc_lock, so the process checked is the
 * one signalled (its pid cannot be freed and taken by another meanwhile). */
static int kill_one(int pid, int signal, bool checked)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *p = proc_find_locked(pid);
	int error = !p ? -ESRCH : checked && !proc_may_signal_locked(p) ? -EPERM : 0;
	if (!error && p->state == PROC_ZOMBIE)
		error = -ESRCH;
	if (!error)
		proc_signal_from_locked(p, signal, checked ? proc_current() : NULL);
	spin_unlock_irqrestore(&proc_lock, irq);
	return error;
}

int proc_kill(int pid, int signal)
{
	if (signal < 0 || signal >= PROC_SIGNALS)
		return -EINVAL;
	return pid <= 0 ? proc_kill_group(pid, signal) : kill_one(pid, signal, false);
}

int proc_kill_checked(int pid, int signal)
{
	if (signal < 0 || signal >= PROC_SIGNALS)
		return -EINVAL;
	return pid <= 0 ? proc_kill_group(pid, signal) : kill_one(pid, signal, true);
}

void proc_request_exit(struct process *p, int code)
{
	p->exit_status = PROC_STATUS_EXITED(code);
	__atomic_or_fetch(&p->pending_signals, 1u << EXIT_REQUEST, __ATOMIC_RELEASE);
}

/* ---- Stopping ---------------------------------------------------------------- */

static bool continued_or_killed(void *arg)
{
	struct process *p = arg;
	return !p->stopped || proc_is_killed(p);
}

/* Takes a pending stop signal: p stops, its parent hears of it.  Returns
 * false when no stop was pending. */
static bool begin_stop(struct process *p)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	uint32_t stops = stopping(p);
	if (stops && !proc_is_killed(p)) {
		__atomic_and_fetch(&p->pending_signals, ~stops, __ATOMIC_RELEASE);
		p->stopped = true;
		p->stop_reported = false;
		p->exit_status = PROC_STATUS_STOPPED(__builtin_ctz(stops));
		p->parent->child_events++;
		waitq_wake_all(&p->parent->child_exit);
	}
	spin_unlock_irqrestore(&proc_lock, irq);
	return stops != 0 && p->stopped;
}

bool proc_stop_if_requested(void)
{
	struct process *p = proc_current();
	if (!p || !begin_stop(p))
		return false;
	waitq_wait(&p->signal_queue, continued_or_killed, p);
	return !proc_is_killed(p);
}

/* A signal is pending on the way out: out of line, so that the usual way
 * out (nothing pending) is a leaf with no frame of its own.  The process
 * stops, ends, or goes on in its handlers (number: the system call frame
 * returns from, or PROC_NO_CALL). */
static __attribute__((noinline, cold)) void
return_interrupted(struct process *p, struct trap_frame *frame, uint64_t number)
{
	irq_enable();
	proc_stop_if_requested();
	if (proc_is_killed(p))
		proc_exit_current(exit_status_of(p));
	proc_deliver_signals(p, frame, number);
	if (proc_is_killed(p)) /* no frame could be written */
		proc_exit_current(exit_status_of(p));
}

void proc_return_to_user(struct trap_frame *frame)
{
	struct process *p = proc_current();
	if (p && proc_is_interrupted(p))
		return_interrupted(p, frame, PROC_NO_CALL);
}

void proc_return_from_call(struct trap_frame *frame, uint64_t number)
{
	struct process *p = proc_current();
	if (!p || !trap_frame_from_user(frame))
		return;
	if (proc_is_interrupted(p))
		return_interrupted(p, frame, number);
	proc_restore_mask(p);
}

/* ---- Ending ---------------------------------------------------------------- */

/* Who adopts the children of exiting p: init (pid 1, a child of the
 * kernel) while it lives, so that its wait loop reaps them; the kernel when
 * init itself ends or there is none. */
static struct process *adopter_locked(const struct process *p)
{
	struct process *init = proc_find_locked(1);
	if (init && init != p && init->state == PROC_RUNNING && init->parent == &kernel_parent)
		return init;
	return &kernel_parent;
}

/* Hands p's children to their adopter; returns the zombies among them
 * (linked through next_sibling) for the caller to free.  The groups of the
 * children that stay are appended to groups[] (PROC_MAX + 1 entries), whose
 * count *group_count is, for the orphaned-group rule. */
static struct process *give_away_children_locked(struct process *p, int *groups, int *group_count)
{
	struct process *zombies = NULL, *adopter = adopter_locked(p);
	while (p->first_child) {
		struct process *c = p->first_child;
		p->first_child = c->next_sibling;
		if (c->state == PROC_ZOMBIE) {
			remove_locked(c);
			c->next_sibling = zombies;
			zombies = c;
			continue;
		}
		if (adopter == &kernel_parent)
			c->flags |= PROC_ORPHAN;
		link_child_locked(adopter, c);
		if (*group_count <= PROC_MAX)
			groups[(*group_count)++] = c->pgid;
	}
	return zombies;
}

/* SIGCHLD to p's parent, which ended with status: nothing unless the parent
 * has a handler for it (its default is to do nothing). */
static void tell_parent_locked(const struct process *p, int status)
{
	bool exited = (status & 0x7f) == 0;
	struct proc_siginfo info = {.code = exited ? CLD_EXITED : CLD_KILLED,
				    .pid = p->pid,
				    .uid = p->cred.uid,
				    .status = exited ? (status >> 8) & 0xff : status & 0x7f};
	signal_with_info_locked(p->parent, SIGCHLD, &info);
}

/* Makes p a zombie (or frees an orphan), given the groups its children
 * are in; returns p when the caller frees it. */
static struct process *become_zombie_locked(struct process *p, int status, const int *groups,
					    int group_count)
{
	p->exit_status = status;
	p->state = PROC_ZOMBIE;
	p->thread = NULL; /* it ends now and is freed without telling p */
	proc_hangup_orphaned_groups_locked(groups, group_count);
	if (p->flags & PROC_ORPHAN) {
		unlink_child_locked(p);
		remove_locked(p);
		return p;
	}
	p->parent->child_events++;
	waitq_wake_all(&p->parent->child_exit);
	if (p->parent != &kernel_parent)
		tell_parent_locked(p, status);
	return NULL;
}

static void free_processes(struct process *list)
{
	while (list) {
		struct process *next = list->next_sibling;
		free_process(list);
		list = next;
	}
}

/* Gives up what p holds: its files (pipes' writers and sockets go with
 * them) and its memory. */
static void release_resources(struct process *p)
{
	proc_files_exit(p);
	thread_set_process(thread_current(), NULL, NULL);
	/* Out of the table's sight first: the process list reads p->memory
	 * under proc_lock from any CPU. */
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct proc_memory *memory = p->memory;
	p->memory = NULL;
	spin_unlock_irqrestore(&proc_lock, irq);
	memory_destroy(memory);
}

/* Hands p's children to their adopter and frees its unreaped zombies (their
 * count goes back to their user); fills groups[] with p's group and its
 * children's, for the orphaned-group rule, and returns their count.  Only
 * p forks children of p, but init adopts others' until it is a zombie:
 * proc_exit_current hands on any that came meanwhile. */
static int give_away_children(struct process *p, int *groups)
{
	int group_count = 0;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	groups[group_count++] = p->pgid;
	struct process *zombies = give_away_children_locked(p, groups, &group_count);
	spin_unlock_irqrestore(&proc_lock, irq);
	free_processes(zombies);
	return group_count;
}

/* Just before p becomes a zombie: p's own group again (its parent may have
 * moved it since give_away_children), and the children init adopted since
 * (only init takes in others' children), handed on to the kernel.  Returns
 * their zombies for the caller to free after proc_lock. */
static struct process *hand_on_late_children_locked(struct process *p, int *groups,
						    int *group_count)
{
	groups[0] = p->pgid;
	return p->first_child ? give_away_children_locked(p, groups, group_count) : NULL;
}

/* The end of a process, in the order its parent may look: everything the
 * parent can observe once its wait returns (files closed, the session's
 * console hung up and cooked, children adopted, their counts given back)
 * is done before p becomes a zombie, which is when the parent can reap it. */
__attribute__((noreturn)) void proc_exit_current(int status)
{
	struct process *p = proc_current();
	ASSERT(p && irq_enabled());

	struct trace_process_exit event = {.pid = p->pid, .status = status};
	tracepoint(TRACE_PROCESS_EXIT, &event, sizeof event);
	release_resources(p);
	if (p->sid == p->pid) /* only p changes its own session */
		proc_session_ended(p->sid);
	int groups[PROC_MAX + 1];
	int group_count = give_away_children(p, groups);

	struct thread_stats stats;
	thread_get_stats(thread_current(), &stats);
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	p->final_cpu_ns = stats.run_ns;
	p->final_cpu = (int)thread_cpu(thread_current());
	struct process *late = hand_on_late_children_locked(p, groups, &group_count);
	struct process *orphan = become_zombie_locked(p, status, groups, group_count);
	spin_unlock_irqrestore(&proc_lock, irq);
	/* p may be freed by its parent from here on. */
	free_processes(late);
	if (orphan)
		free_process(orphan);
	thread_exit(0);
}

/* ---- Waiting --------------------------------------------------------------- */

struct wait_condition {
	struct process *self;
	uint64_t seen;
};

static bool child_event_or_killed(void *arg)
{
	struct wait_condition *c = arg;
	return c->self->child_events != c->seen ||
	       (c->self != &kernel_parent && proc_is_interrupted(c->self));
}

/* Whether child c is one wait4(pid) waits for: pid > 0 that one, -1 any,
 * 0 any in the caller's group, < -1 any in group -pid. */
static bool wanted(const struct process *self, const struct process *c, int pid)
{
	if (c->flags & PROC_ORPHAN)
		return false;
	if (pid > 0)
		return c->pid == pid;
	if (pid == 0)
		return c->pgid == self->pgid;
	return pid == -1 || c->pgid == -pid;
}

/* Finds a waitable child: returns the zombie to reap (or, with WUNTRACED, a
 * child that stopped and was not reported yet), or NULL with *found telling
 * whether any matching child exists. */
static struct process *find_waitable_locked(struct process *self, int pid, int options, bool *found)
{
	*found = false;
	for (struct process *c = self->first_child; c; c = c->next_sibling) {
		if (!wanted(self, c, pid))
			continue;
		*found = true;
		if (c->state == PROC_ZOMBIE)
			return c;
		if ((options & WUNTRACED) && c->stopped && !c->stop_reported)
			return c;
	}
	return NULL;
}

/* Takes a found child: a zombie leaves the table, a stopped child is marked
 * reported.  Returns true for a zombie (to free). */
static bool take_child_locked(struct process *c, int *status)
{
	*status = c->exit_status;
	if (c->state != PROC_ZOMBIE) {
		c->stop_reported = true;
		return false;
	}
	unlink_child_locked(c);
	remove_locked(c);
	return true;
}

int proc_wait(int pid, int *status, int options)
{
	struct process *self = proc_current();
	if (!self)
		self = &kernel_parent;
	for (;;) {
		bool found, reaped = false;
		int child_status = 0, child_pid = 0;
		uint64_t irq = spin_lock_irqsave(&proc_lock);
		struct process *child = find_waitable_locked(self, pid, options, &found);
		if (child) {
			child_pid = child->pid;
			reaped = take_child_locked(child, &child_status);
		}
		struct wait_condition condition = {self, self->child_events};
		spin_unlock_irqrestore(&proc_lock, irq);

		if (child) {
			if (status)
				*status = child_status;
			if (reaped)
				free_process(child);
			return child_pid;
		}
		if (!found)
			return -ECHILD;
		if (options & WNOHANG)
			return 0;
		if (self != &kernel_parent && proc_is_interrupted(self))
			return -EINTR;
		waitq_wait(&self->child_exit, child_event_or_killed, &condition);
	}
}

/* ---- Faults ---------------------------------------------------------------- */

int proc_resolve_fault(uint64_t address, unsigned error)
{
	struct process *p = proc_current();
	if (!p || !p->memory)
		return -EFAULT;
	return memory_fault(p->memory, address, error);
}

static int signal_of_exception(uint64_t vector)
{
	switch (vector) {
	case TRAP_DIVIDE_ERROR: return SIGFPE;
	case TRAP_X87_FLOATING_POINT: return SIGFPE;
	case TRAP_SIMD_FLOATING_POINT: return SIGFPE;
	case TRAP_INVALID_OPCODE: return SIGILL;
	case TRAP_BREAKPOINT: return SIGTRAP;
	case TRAP_DEBUG: return SIGTRAP; /* a single step (TF) or int1 */
	default: return SIGSEGV;
	}
}

/* Every exception from user mode: a fault memory can resolve is retried;
 * anything else gets a one-line report and the signal, which ends the
 * process on its way out (proc_return_to_user): the handler itself returns,
 * as it runs inside the trap.entry join point. */
static bool handle_user_fault(struct trap_frame *frame, uint64_t fault_address)
{
	struct process *p = proc_current();
	if (!p)
		return false;
	int fault = frame->vector == TRAP_PAGE_FAULT
			? memory_fault(p->memory, fault_address, (unsigned)frame->error_code)
			: -EFAULT;
	if (fault == 0)
		return true;
	int signal = fault == -EIO ? SIGBUS : signal_of_exception(frame->vector);
	if (proc_signal_fault(p, signal, frame, fault_address))
		return true; /* its handler takes it on the way out */
	pr_warn("proc: %s[%d] killed by signal %d: %s (%s) at rip %#lx, address %#lx\n", p->name,
		p->pid, signal, trap_name_of((unsigned)frame->vector),
		trap_mnemonic_of((unsigned)frame->vector), frame->rip, fault_address);
	return true;
}

/* ---- Listing --------------------------------------------------------------- */

static int32_t run_state_of(const struct process *p)
{
	if (p->stopped)
		return PROC_RUN_STOPPED;
	switch (thread_state(p->thread)) {
	case THREAD_RUNNING: return PROC_RUN_ON_CPU;
	case THREAD_READY: return PROC_RUN_RUNNABLE;
	case THREAD_BLOCKED: return PROC_RUN_SLEEPING;
	default: return PROC_RUN_NONE;
	}
}

/* What p's thread waits on, into channel[PROC_WAIT_CHANNEL_MAX] ("" when it
 * does not sleep). */
static void fill_wait_channel(const struct process *p, char *channel)
{
	memset(channel, 0, PROC_WAIT_CHANNEL_MAX);
	if (p->state != PROC_RUNNING || !p->thread || p->stopped)
		return;
	const char *name = thread_wait_channel(p->thread);
	if (name)
		strlcpy(channel, name, PROC_WAIT_CHANNEL_MAX);
}

static void fill_info(const struct process *p, struct proc_info *info)
{
	*info = (struct proc_info){
	    .pid = p->pid,
	    .parent_pid = proc_parent_pid(p),
	    .state = p->state,
	    .exit_status = p->exit_status,
	    .pages = p->memory ? p->memory->pages : 0,
	    .cpu = p->state == PROC_ZOMBIE ? p->final_cpu : -1,
	    .cpu_ns = p->final_cpu_ns,
	};
	info->pgid = p->pgid;
	info->sid = p->sid;
	strlcpy(info->name, p->name, sizeof info->name);
	if (p->state == PROC_RUNNING && p->thread) {
		struct thread_stats stats;
		thread_get_stats(p->thread, &stats);
		info->run_state = run_state_of(p);
		info->cpu = (int32_t)thread_cpu(p->thread);
		info->cpu_ns = stats.run_ns;
	}
	/* The mark is the thread's from its creation: a process whose thread
	 * has not run yet (an embryo) shows it too. */
	if (p->state != PROC_ZOMBIE && p->thread &&
	    thread_get_kind(p->thread) == THREAD_KIND_MONITOR)
		info->flags |= PROC_INFO_MONITOR;
}

int proc_list_waits(struct proc_info_wait *info, int count)
{
	int n = 0;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	for (int i = 0; i < PROC_MAX; i++) {
		if (!table[i])
			continue;
		if (n < count) {
			fill_info(table[i], &info[n].info);
			fill_wait_channel(table[i], info[n].wait_channel);
			memcpy(info[n].args, table[i]->args, sizeof info[n].args);
		}
		n++;
	}
	spin_unlock_irqrestore(&proc_lock, irq);
	return n;
}

int proc_list(struct proc_info *info, int count)
{
	int n = 0;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	for (int i = 0; i < PROC_MAX; i++) {
		if (!table[i])
			continue;
		if (n < count)
			fill_info(table[i], &info[n]);
		n++;
	}
	spin_unlock_irqrestore(&proc_lock, irq);
	return n;
}

void proc_print_all(void)
{
	static const char *const states[] = {"embryo", "running", "zombie"};
	static struct proc_info info[PROC_MAX];
	static struct spinlock print_lock = SPINLOCK_INIT("proc.print");
	uint64_t irq = spin_lock_irqsave(&print_lock);
	int n = proc_list(info, PROC_MAX);
	pr_info("  pid  ppid state    pages name\n");
	for (int i = 0; i < n && i < PROC_MAX; i++)
		pr_info("%5d %5d %-8s %5lu %s\n", info[i].pid, info[i].parent_pid,
			states[info[i].state], info[i].pages, info[i].name);
	spin_unlock_irqrestore(&print_lock, irq);
}

/* ---- Start-up -------------------------------------------------------------- */

void proc_setup_faults(void)
{
	trap_set_user_fault_handler(handle_user_fault);
}

/* Sets the slot of every live process as pick(its name, its slot now) says. */
int proc_retrace(int (*pick)(const char *name, int slot, uint32_t owner))
{
	int changed = 0;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	for (int i = 0; i < PROC_MAX; i++) {
		struct process *p = table[i];
		if (!p || p->state == PROC_ZOMBIE)
			continue;
		int slot = pick(p->name, p->trace_slot, proc_owner(p));
		changed += slot != p->trace_slot;
		__atomic_store_n(&p->trace_slot, (uint8_t)slot, __ATOMIC_RELAXED);
	}
	spin_unlock_irqrestore(&proc_lock, irq);
	return changed;
}
