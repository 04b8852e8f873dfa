/*
 * Processes: a user address space, one user thread, a parent and children,
 * a name (the program's), an exit status and the slots other modules keep
 * per-process state in (the VFS's file table and working directory).  Created
 * by fork, given a program by execve, ended by exit or a signal, reaped by the
 * parent's wait.  A process's memory is a list of regions (program segments,
 * heap, stack, anonymous mappings); fork shares every private page
 * copy-on-write.
 *
 *     struct process *self = proc_current();          // NULL in a kernel thread
 *     int pid = proc_spawn("/sbin/init", argv, envp); // a new process, or an error
 *     int status; proc_wait(pid, &status, 0);
 */
#ifndef KERNEL_PROC_PROC_H
#define KERNEL_PROC_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpu/percpu.h"
#include "lib/cfi.h"
#include "uapi/cred.h"
#include "uapi/proc.h"

struct process;
struct thread;
struct address_space;

/* The slots other modules own.  proc only carries them: the VFS fills files
 * and fs at spawn, clones them at fork and releases them at exit (see the
 * integration points in proc/files.c). */
struct proc_module_slots {
	void *files; /* the file descriptor table (modules/vfs) */
	void *fs;    /* the working directory (modules/vfs) */
};

/* The process the calling thread runs for, or NULL in a kernel thread: one
 * load of the CPU's copy, which the scheduler sets at every switch (and
 * thread_set_process for the calling thread), since system calls and IPC
 * ask at every step. */
static inline struct process *proc_current(void)
{
	return this_cpu_read(process);
}
/* Where the fields that hot paths read in line lie in a process (process.c
 * lays them out so and checks it): the pid (every IPC message and event is
 * stamped with it), the pending signals (every wait and every return to
 * user mode look), the trace map's slot (every switch). */
#define PROC_OFFSET_PID             0
#define PROC_OFFSET_PENDING_SIGNALS 4
#define PROC_OFFSET_TRACE_SLOT      8
#define PROC_OFFSET_EXECS           12 /* the monitor's every reply_receive checks it */
#define PROC_OFFSET_NAME            24 /* every msg and shm event carries it */
/* Signals whose default action is to be ignored, or to stop; every other one
 * ends the process.  Only what acts is ever in the pending word (a blocked
 * signal, or one that would do nothing, is kept out: signal.c), so any
 * pending bit interrupts a wait: an end, a stop, a handler to run. */
#define PROC_IGNORED_SIGNALS      ((1u << SIGCHLD) | (1u << SIGCONT) | (1u << 23) | (1u << 28))
#define PROC_STOP_SIGNALS         ((1u << SIGSTOP) | (1u << SIGTSTP) | (1u << SIGTTIN) | (1u << SIGTTOU))
#define PROC_INTERRUPTING_SIGNALS 0xffffffffu /* all: only what acts is pending */

/* Accessors.  proc_parent_pid is 0 for init and orphans' reapers. */
static inline int proc_pid(const struct process *p)
{
	return *(const int *)((const char *)p + PROC_OFFSET_PID);
}
int proc_parent_pid(const struct process *p);
/* The program's name: PROC_NAME_MAX bytes, NUL-padded to the end (every
 * byte after the name is 0), so it may be copied a word at a time. */
static inline const char *proc_name(const struct process *p)
{
	return (const char *)p + PROC_OFFSET_NAME;
}
struct proc_module_slots *proc_slots(struct process *p);
/* The address space p's user memory lives in (NULL once p's memory is gone).
 * Only p's own thread may change it. */
struct address_space *proc_address_space(struct process *p);

/* Whether p, which had pid, still runs with its memory: found in the table
 * under pid, and not ended (an ended process's memory is gone).  A process
 * that ended and whose pid and structure were both reused reads as running:
 * callers use it to keep something from a process that may still reach it,
 * where such a false "runs" only refuses. */
bool proc_still_runs(int pid, const struct process *p);
/* How many programs p has exec'd (spawning one counts); read by p's own
 * thread, or under what keeps p from exec'ing. */
static inline uint32_t proc_exec_count(const struct process *p)
{
	return __atomic_load_n((const uint32_t *)((const char *)p + PROC_OFFSET_EXECS),
			       __ATOMIC_RELAXED);
}
/* proc_still_runs, and p has exec'd no program since it had exec'd execs
 * (exec drops the old memory with every kernel mapping in it). */
bool proc_still_runs_program(int pid, const struct process *p, uint32_t execs);

/* Kernel regions: ranges of the calling process's memory whose pages the
 * kernel owns and writes (accounting results, telemetry rings).  The process
 * can neither unmap them, map over them nor make them writable (-EINVAL);
 * fork does not copy them; exec and exit unmap them without freeing a page.
 * proc_add_kernel_region reserves [start, end) (page aligned; an identical
 * kernel region is kept) and returns 0, -EINVAL (overlaps another region, out
 * of range), -ENOMEM or -EPERM (a kernel thread).  proc_map_kernel_frame maps
 * the kernel's frame phys at address inside one and returns 0, -EEXIST
 * (mapped already: kept), -EINVAL, -ENOMEM or -EPERM. */
int proc_add_kernel_region(uint64_t start, uint64_t end);
int proc_map_kernel_frame(uint64_t address, uint64_t phys, bool writable);
/* Pages the kernel keeps for processes outside their memory (a RAM file
 * system's file data) count against the same promise as their memory
 * (proc/memory.c): proc_promise_pages returns 0, or -ENOMEM when they would
 * take frames promised already (or, for a caller other than euid 0, the
 * share kept for root); proc_release_pages gives them back once freed. */
int proc_promise_pages(uint64_t pages);
void proc_release_pages(uint64_t pages);

/* Memory for a program image of size bytes that exec reads a file into
 * (proc/program_images.c): promised as process pages are and, when the
 * caller's effective uid is not 0, counted against the share of images in
 * flight that all users but root hold together (64 MiB): an exec that does
 * not fit waits for the ones before it, in order of arrival.  Returns the
 * memory (free with proc_free_program), or NULL with *error -ENOMEM (no
 * promise, no memory, or larger than the share) or -EINTR (the process was
 * told to end or stop while it waited). */
void *proc_program_alloc(size_t size, int *error);
void proc_free_program(void *image, size_t size);
/* Execs of users waiting for room in the share now (tests). */
unsigned proc_program_waiters(void);

/* ---- Users and privileges (proc/cred.c) ------------------------------------ */

/* True when the caller holds privilege (PRIV_*, uapi/cred.h) now: its
 * effective uid is 0 and it has not dropped it.  Kernel threads hold all. */
bool proc_has_privilege(unsigned privilege);
/* The caller's effective uid (0 in a kernel thread). */
uint32_t proc_current_euid(void);
/* The caller's effective gid (0 in a kernel thread). */
uint32_t proc_current_egid(void);

/* Registers the hook a process's own thread calls after its user ids or
 * privileges changed (setuid and the like, ms_priv), outside proc_lock: the
 * monitor session lets go of a monitor that no longer holds PRIV_MONITOR.
 * One hook; registering again replaces it. */
void proc_set_cred_change_hook(void (*hook)(void));

/* ---- What each user holds (proc/user_charges.c) --------------------------- */

/* The resources a user other than root holds under a bound of its own, in
 * all its processes together.  Each is counted in one table by uid. */
enum proc_user_resource {
	PROC_USER_KMEM_BYTES, /* endpoints' and pipes' kernel memory: USER_KMEM_BYTES_MAX */
	PROC_USER_SOCKETS,    /* sockets and listeners' queue places (modules/net) */
	PROC_USER_PROCESSES,  /* processes of the real uid (process.c): USER_PROC_MAX */
	PROC_USER_RESOURCES,
};

/* Counts amount more of resource to uid if uid then holds at most limit.
 * Returns 0, -ENOSPC (past limit) or -ENOMEM (no memory for uid's entry).
 * Root's charges count against nothing and always succeed; there is no
 * bound on how many users hold something at once. */
int proc_user_charge(uint32_t uid, enum proc_user_resource resource, uint64_t amount,
		     uint64_t limit);
/* Gives back amount of what proc_user_charge counted to uid. */
void proc_user_release(uint32_t uid, enum proc_user_resource resource, uint64_t amount);
/* What uid holds of resource now (0 for root). */
uint64_t proc_user_held(uint32_t uid, enum proc_user_resource resource);
/* How many users hold something now. */
unsigned proc_users_holding(void);

/* Kernel memory made for uid's processes (an endpoint, a pipe) against
 * USER_KMEM_BYTES_MAX (uapi/proc.h), as proc_user_charge; returns 0 or
 * -ENOMEM. */
int proc_user_memory_charge(uint32_t uid, uint64_t bytes);
void proc_user_memory_release(uint32_t uid, uint64_t bytes);

/* Starts the program at path (through the VFS) as a new process whose parent
 * is the calling process (or none: a child of the kernel).  argv and envp are
 * kernel arrays ending with NULL.  Returns the pid, or -ENOENT, -ENOEXEC,
 * -ENOMEM, -E2BIG, -EAGAIN (process table full). */
int proc_spawn(const char *path, char *const argv[], char *const envp[]);
/* As proc_spawn, from an ELF image in kernel memory (tests, embedded programs). */
int proc_spawn_image(const void *image, size_t size, const char *name, char *const argv[]);

/* The test program built into the kernel (kernel/proc/testprog.S): a static
 * ELF whose argv[1] picks a behaviour, for the test suites.  Returns it and
 * sets *size. */
const void *proc_get_test_image(size_t *size);

/* Waits for a child of the caller (pid > 0: that one; -1: any) to end, stores
 * its status word (PROC_STATUS_*) in *status (may be NULL) and reaps it.
 * options: 0 or WNOHANG.  Returns its pid, 0 (WNOHANG and none ended yet),
 * -ECHILD (no such child) or -EINTR (the caller was killed while waiting).
 * Kernel threads wait for processes they spawned. */
int proc_wait(int pid, int *status, int options);

/* Sends signal to process pid (pid 0: every process in the caller's group;
 * -1: every process but init and the caller; below -1: every process in group
 * -pid).  Default actions: SIGCHLD, SIGCONT and 0 do nothing (SIGCONT
 * continues a stopped process), SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU stop it,
 * every other signal ends it; a signal the process ignores is dropped.
 * Returns 0, -ESRCH (no such process, or a zombie; no process in the group)
 * or -EINVAL (unknown signal). */
int proc_kill(int pid, int signal);
/* proc_kill as the caller may (kill(2)): another user's process only with
 * PRIV_SIGNAL (-EPERM), checked on the process the signal goes to, in the
 * same hold of the table's lock.  A group or everybody (pid <= 0): each
 * member the caller may signal. */
int proc_kill_checked(int pid, int signal);
/* As proc_kill for pid <= 0. */
int proc_kill_group(int pid, int signal);
/* Sends signal to every process in group pgid; safe in interrupt context
 * (the console's ^C).  Returns 0, -ESRCH (no process in it) or -EINVAL. */
int proc_signal_group(int pgid, int signal);

/* ---- Groups and sessions (proc/session.c) -------------------------------- */

int proc_pgid(const struct process *p);
int proc_sid(const struct process *p);
/* setpgid: moves process pid (0: the caller; itself or a child, in the
 * caller's session) to group pgid (0: pid's own).  Returns 0, -ESRCH (no such
 * process, or not the caller or its child), -EPERM (another session, a
 * session leader, or no group pgid in the session) or -EINVAL. */
int proc_set_pgid(int pid, int pgid);
/* getpgid, getsid: pid 0 is the caller.  Returns the id, -ESRCH or -EINVAL. */
int proc_get_pgid(int pid);
int proc_get_sid(int pid);
/* setsid: the caller leads a new session and group.  Returns the new id, or
 * -EPERM when the caller already leads a group. */
int proc_set_sid(void);
/* True when a live process of session sid (0: any) is in group pgid. */
bool proc_group_in_session(int pgid, int sid);
/* True while the process that leads session sid lives. */
bool proc_session_leader_alive(int sid);
/* Registers the hook called when a session's leader ends (the console hangs
 * up its foreground group when its session's leader ends); one hook, called
 * outside locks from the ending process's thread before its parent can reap
 * it.  Returns the hook it replaces. */
void (*proc_set_session_end_hook(void (*hook)(int sid)))(int sid);
/* SIGHUP, then SIGCONT, to every member of group pgid, sent by the kernel
 * (no permission check).  Returns how many members it reached. */
int proc_hangup_group(int pgid);
/* True when the calling process ignores or blocks signal: sent, it would
 * not act now (a background read of the console then gets -EIO). */
bool proc_refuses_signal(int signal);

/* After a system call was interrupted (-EINTR): when a stop signal was the
 * cause, the calling process stops here until SIGCONT and true comes back
 * (the call is to be made again); false when it was not asked to stop or
 * was killed while stopped. */
bool proc_stop_if_requested(void);

/* proc_signal_pending (below) of p, the calling thread's process (NULL: a
 * kernel thread), for a caller that read it once already: IPC stamps its
 * messages with the same process's pid. */
static inline bool proc_signals_interrupt(const struct process *p)
{
	return p &&
	       (__atomic_load_n((const uint32_t *)((const char *)p + PROC_OFFSET_PENDING_SIGNALS),
				__ATOMIC_ACQUIRE) &
		PROC_INTERRUPTING_SIGNALS) != 0;
}

/* True when the calling thread's process has been told to end (a signal
 * whose action is to terminate, or exit), to stop, or has a handler to run:
 * long waits elsewhere (pipes, consoles) should give up with -EINTR.  False
 * in kernel threads.
 * In line: IPC asks before every block. */
static inline bool proc_signal_pending(void)
{
	return proc_signals_interrupt(proc_current());
}
/* The syscall and interrupt exits call this just before returning to user
 * mode (interrupts on or off): a process told to end ends here.  Returns
 * only when it goes on running. */
struct trap_frame;
void proc_return_to_user(struct trap_frame *frame);
/* The system call's end of it: number (PROC_NO_CALL: none) is the call the
 * frame returns from, made again after a handler with SA_RESTART. */
#define PROC_NO_CALL UINT64_MAX
void proc_return_from_call(struct trap_frame *frame, uint64_t number);
/* True (once: it clears the mark) after rt_sigreturn rebuilt the frame: the
 * way out is then proc_resume_restored, which acts on what the restored
 * mask lets through and leaves with every register (SYSRET would lose RCX
 * and R11). */
bool proc_take_context_restored(void);
__attribute__((noreturn)) void proc_resume_restored(struct trap_frame *frame);

/* One line per process: pid, parent, state, name. */
void proc_print_all(void);

/* Fills up to count entries; returns how many processes exist (may be more). */
int proc_list(struct proc_info *info, int count);
/* As proc_list, each entry with its process's wait channel. */
int proc_list_waits(struct proc_info_wait *info, int count);
/* Processes that exist right now, zombies included. */
int proc_count(void);

/* ---- The trace map's mark on processes (kernel/trace/uscope.c) ----------- */

/* p's slot in the trace map, 0 when it is not traced; fork copies it, and an
 * exec (or a spawn) takes what the hook decides for the new program. */
static inline int proc_trace_slot(const struct process *p)
{
	return p ? __atomic_load_n((const uint8_t *)p + PROC_OFFSET_TRACE_SLOT, __ATOMIC_RELAXED)
		 : 0;
}
/* Notes on this CPU whether its running thread's process is in the trace
 * map (cpu->user_stacks, which a switch sets for the thread it runs): after
 * an exec of the running thread, and on every CPU (smp_call_all) after the
 * map changed.  The argument is unused (an smp_call function). */
void proc_refresh_user_stacks(void *unused);
/* The user a process belongs to, for the trace map's entries of one user:
 * its user id when its real, effective and saved user ids are the same,
 * PROC_OWNER_MIXED when not (a set-uid program belongs to no one user). */
#define PROC_OWNER_MIXED 0xffffffffu
uint32_t proc_current_owner(void);
/* The trace map's exec hook: the slot for a process of the program name
 * (path: as exec was given it) that belongs to owner, or 0. */
void proc_set_trace_exec_hook(int (*decide)(const char *name, const char *path, uint32_t owner));
/* Where p's program has its own code, apart from its libraries ([start,
 * end); both 0 when the program does not say: kernel/exec). */
void proc_own_code(const struct process *p, uint64_t *start, uint64_t *end);
/* Where p's program has its unwind tables (all 0 when it has none). */
void proc_unwind_tables(const struct process *p, struct cfi_tables *out);
/* Re-marks every live process: pick(name, slot now, owner as
 * proc_current_owner says) gives its new slot.  Returns how many changed.
 * pick runs with the process table locked. */
int proc_retrace(int (*pick)(const char *name, int slot, uint32_t owner));

/* ---- CPUs: affinity, monitors, statistics (proc/affinity.c) -------------- */

/* Lets process pid (0: the caller) run only on the CPUs in mask (bit i: CPU
 * i), as sched_setaffinity does; its children inherit the mask.  The caller
 * returns on an allowed CPU.  Returns 0, -ESRCH (no such process, or it has
 * ended) or -EINVAL (no online CPU in mask, or only CPUs reserved for
 * monitors and the process is not one). */
int proc_set_affinity(int pid, uint64_t mask);
/* proc_set_affinity as the caller may (sched_setaffinity): another user's
 * process only with PRIV_SIGNAL (-EPERM), checked on the process pinned in
 * the same hold of the table's lock. */
int proc_set_affinity_checked(int pid, uint64_t mask);
/* Stores pid's affinity, limited to the online CPUs, in *mask.  Returns 0 or
 * -ESRCH. */
int proc_get_affinity(int pid, uint64_t *mask);
/* Makes process pid (0: the caller) a monitor, which may run on the CPUs
 * reserved for monitors, or an ordinary process again (moved off them); its
 * children inherit it.  Returns 0 or -ESRCH. */
int proc_set_monitor(int pid, bool monitor);

/* Fills up to count entries, one per online CPU in index order.  Returns
 * how many CPUs are online (may be more than count). */
int proc_list_cpus(struct proc_cpu_info *info, int count);

/* Resolves a page fault at address (PF_ERROR_* bits in error) in the current
 * process: a write to a copy-on-write page gets its own copy.  Returns 0 when
 * the access may be retried, -EFAULT when it is a real fault.  For uaccess. */
int proc_resolve_fault(uint64_t address, unsigned error);

/* ---- Descriptor tables (registered by the VFS) ---------------------------- */

/* A process carries its descriptor table (which also holds its working
 * directory) as an opaque pointer; the VFS, a layer above, owns the tables and
 * registers what proc calls at spawn, fork, exec and exit (vfs_init).  Until
 * then processes have no table. */
struct proc_file_ops {
	void *(*create_initial)(void);          /* fd 0, 1, 2 on the console; NULL: no memory */
	int (*clone)(void *files, void **copy); /* fork: 0 or a negative errno */
	void (*close_on_exec)(void *files);
	void (*release)(void *files);
	/* Reads the program at path (relative to files' working directory, files may
	 * be NULL) whole into *image (kmalloc'd).  Returns 0 or a negative errno. */
	int (*read_program)(void *files, const char *path, void **image, size_t *size);
	/* Reads up to length bytes of descriptor fd at offset into buffer (a
	 * kernel buffer), for mmap of a file; length 0 only checks that fd is a
	 * regular file open for reading.  Returns the bytes read (0 at the end),
	 * or -EBADF, -EACCES (not open for reading), -ENODEV (not a regular
	 * file), or the file system's error. */
	int64_t (*read_at)(void *files, int fd, uint64_t offset, void *buffer, size_t length);
	/* Shared file mappings (mmap MAP_SHARED).  map_open checks descriptor fd
	 * for one (writable: PROT_WRITE) and returns a reference to its file in
	 * *object: 0, -EBADF, -EACCES (not open for reading, or writable and not
	 * open for writing), -ENODEV (not a regular file of a file system with
	 * shared mappings).  map_get and map_put take and drop references. */
	int (*map_open)(void *files, int fd, bool writable, void **object);
	void (*map_get)(void *object);
	void (*map_put)(void *object);
	/* The frame of the file's page at offset (page aligned), kept until
	 * map_unpage with the same writable and that frame: 0 and *phys,
	 * -EFAULT (past the end of the file), -EIO, -ENOSPC, -ENOMEM. */
	int (*map_page)(void *object, uint64_t offset, bool writable, uint64_t *phys);
	void (*map_unpage)(void *object, uint64_t offset, bool writable, uint64_t phys);
	/* Writes the file back (msync): 0 or -EIO. */
	int (*map_sync)(void *object);
};
void proc_set_file_ops(const struct proc_file_ops *ops);

/* Sends SIGPIPE to the calling process (none in a kernel thread). */
void proc_send_sigpipe(void);

/* Installs the handler for faults in user mode.  Once, at boot. */
void proc_init(void);
/* Starts init (the init= parameter, default /sbin/init) as a child of the
 * kernel, or says why it cannot.  Returns its pid or the error of proc_spawn. */
int proc_start_init(void);

#endif
