/*
 * The process module's own declarations: the process structure, a process's
 * memory (regions over an address space), shared-frame counts, and the calls
 * between process.c, memory.c, frameref.c, fork.c, exec.c, files.c and the
 * system call files.  Nothing outside kernel/proc/ includes this file.
 *
 * Lock order: proc_lock (the table, parent/child links, states), then a
 * process's waitqs.  A process's memory is changed only by its own thread
 * (or by the thread creating it, before it runs), so it needs no lock.
 */
#ifndef KERNEL_PROC_INTERNAL_H
#define KERNEL_PROC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/trapframe.h"
#include "cpu/spinlock.h"
#include "exec/exec.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "sched/sched.h"

/* ---- User memory layout -------------------------------------------------- */

#define USER_STACK_TOP     EXEC_STACK_TOP
#define USER_STACK_SIZE    (2UL << 20)  /* below it: an unmapped guard */
#define USER_STACK_EAGER   (16UL << 10) /* mapped at exec; the rest on first touch */
#define USER_MMAP_BASE     0x0000100000000000UL
#define USER_MMAP_END      0x0000700000000000UL
#define USER_HEAP_MAX      EXEC_IMAGE_LIMIT     /* brk never passes the mmap area */
#define USER_CLOCK_ADDRESS 0x0000700000100000UL /* the user clock page: past the mmap area */

/* REGION_CLOCK: the kernel's user clock page, read-only, in every process.
 * REGION_KERNEL: pages the kernel owns and writes while the process maps
 * them (accounting results, telemetry rings); mapped one by one by their
 * owner, never populated on a fault, not copied by fork, unmapped without
 * being freed at exec and exit. */
enum region_kind {
	REGION_PROGRAM,
	REGION_HEAP,
	REGION_STACK,
	REGION_MMAP,
	REGION_CLOCK,
	REGION_KERNEL,
	REGION_SHARED_FILE
};

/* A region's flag beside VM_WRITE and VM_EXEC: PROT_NONE.  Its pages keep
 * their frames in entries that are not present (VM_NONE), so that a user
 * access faults (SIGSEGV), so does the kernel's copy from or to them
 * (-EFAULT), and what they hold stays for a later mprotect. */
#define REGION_NO_ACCESS (1u << 16)

/* A range of user addresses with one set of permissions.  Pages in it are
 * mapped on creation (program, heap, mmap) or on first touch (stack). */
struct proc_region {
	struct proc_region *next; /* sorted by start, none overlapping */
	uint64_t start, end;      /* page aligned; end == start only for an empty heap */
	uint64_t mapped_low;      /* no page below it is mapped (the stack fills in downwards) */
	unsigned flags;           /* VM_WRITE, VM_EXEC, REGION_NO_ACCESS (VM_USER is implied) */
	enum region_kind kind;
	void *file;           /* REGION_SHARED_FILE: the file (proc_map_*), referenced */
	uint64_t file_offset; /* REGION_SHARED_FILE: the file offset at start */
};

struct proc_memory {
	struct address_space *space;
	struct proc_region *regions;
	struct proc_region *heap; /* also on regions */
	uint64_t brk;             /* heap end as the program sees it (not page aligned) */
	uint64_t pages;           /* user pages mapped */
	uint64_t committed;       /* pages promised: regions' and tables' (memory.c) */
	uint64_t kernel_pages;    /* of those, the kernel's: page tables, region records */
	uint64_t address_limit;   /* RLIMIT_AS: bytes of regions at most */
};

/* memory.c */
struct proc_memory *memory_create(void);
/* Unmaps everything, drops the frames and destroys the space.  The space must
 * not be active on any CPU. */
void memory_destroy(struct proc_memory *memory);
/* Adds a region [start, end) (page aligned).  Returns it, or NULL with
 * *error = -EINVAL (overlap, out of range) or -ENOMEM. */
struct proc_region *memory_add_region(struct proc_memory *memory, uint64_t start, uint64_t end,
				      unsigned flags, enum region_kind kind, int *error);
/* A program segment's region [start, end): within RLIMIT_AS and committed
 * like heap and mmap pages.  Returns 0, -EINVAL or -ENOMEM. */
int memory_add_program(struct proc_memory *memory, uint64_t start, uint64_t end, unsigned flags);
/* Maps fresh zeroed frames on every unmapped page of [start, end) (inside
 * regions).  Returns 0 or -ENOMEM (pages mapped so far stay). */
int memory_populate(struct proc_memory *memory, uint64_t start, uint64_t end);
/* Adds an anonymous mapping [start, end): nothing is mapped until touched,
 * but its pages are promised (committed) now, so that a request memory
 * cannot keep fails here.  Returns 0, -EINVAL (overlap, out of range) or
 * -ENOMEM (over RLIMIT_AS, or more than memory can back). */
int memory_map_anonymous(struct proc_memory *memory, uint64_t start, uint64_t end, unsigned flags);
/* A shared mapping of file (a reference that the region takes over, also on
 * failure) from file_offset at [start, end): its pages are the file's cached
 * pages, mapped on first touch.  Returns 0, -EINVAL (overlap, range),
 * -ENOMEM. */
int memory_map_shared_file(struct proc_memory *memory, uint64_t start, uint64_t end, unsigned flags,
			   void *file, uint64_t file_offset);
/* msync: writes back the shared file mappings in [start, end).  Returns 0,
 * -ENOMEM (part of the range is not mapped), or the write-back's error. */
int memory_sync(struct proc_memory *memory, uint64_t start, uint64_t end);
/* Unmaps [start, end) and removes it from the regions (splitting them).
 * Returns 0, -EINVAL (the range touches the clock page or a kernel region:
 * nothing is unmapped) or -ENOMEM (no memory to split a region). */
int memory_unmap(struct proc_memory *memory, uint64_t start, uint64_t end);
/* Maps the kernel's page at phys read-only at address, as a one-page region
 * of kind.  The page is shared with every process that maps it and never
 * freed: its owner count keeps the kernel's share.  Returns 0, -EINVAL
 * (address taken) or -ENOMEM; on failure the region may stay, unmapped, for
 * the caller's memory_destroy. */
int memory_map_kernel_page(struct proc_memory *memory, uint64_t address, uint64_t phys,
			   enum region_kind kind);
/* Gives the mmap regions over [start, end) (page aligned) the permissions
 * flags (VM_WRITE, VM_EXEC), splitting them at the ends.  Returns 0, -EPERM
 * (the range touches a kernel region or the clock page), -EINVAL (another
 * kind of region), -ENOMEM (a hole in the range, no memory to split, or
 * read-only pages shared by a fork that cannot be promised again to be
 * made writable). */
int memory_protect(struct proc_memory *memory, uint64_t start, uint64_t end, unsigned flags);
/* Adds [start, end) as a REGION_KERNEL region (nothing mapped yet); an
 * identical kernel region is kept.  Returns 0, -EINVAL or -ENOMEM. */
int memory_add_kernel_region(struct proc_memory *memory, uint64_t start, uint64_t end);
/* Maps the kernel's frame phys at address, inside a kernel region.  Returns
 * 0, -EEXIST (a page is mapped there already: kept), -EINVAL, -ENOMEM. */
int memory_map_kernel_frame(struct proc_memory *memory, uint64_t address, uint64_t phys,
			    bool writable);
/* Copies length bytes into user memory of a (maybe inactive) space through
 * the physmap; the pages must be mapped.  Returns 0 or -EFAULT. */
int memory_write(struct proc_memory *memory, uint64_t address, const void *src, size_t length);
/* A copy of parent sharing every page copy-on-write.  NULL when memory ran out. */
struct proc_memory *memory_clone(struct proc_memory *parent);
/* Resolves a fault (PF_ERROR_* bits) at address.  Returns 0, -EFAULT (no
 * page may be there: SIGSEGV) or -EIO (a mapped file could not give it:
 * SIGBUS). */
int memory_fault(struct proc_memory *memory, uint64_t address, unsigned error);
/* Bytes of the process's regions (its address space, RLIMIT_AS's measure). */
uint64_t memory_size(const struct proc_memory *memory);
/* Finds a free range of length bytes in the mmap area.  Returns its start or 0. */
uint64_t memory_find_free(struct proc_memory *memory, uint64_t length);
/* Moves the program break.  Returns the new break, or the old one on failure. */
uint64_t memory_set_brk(struct proc_memory *memory, uint64_t brk);
/* The pages promised now, to every process and file (proc_promise_pages). */
uint64_t memory_promised_pages(void);

/* frameref.c: frames shared by several mappings.  A frame not listed has one
 * owner; frame_ref_get adds one, frame_ref_put drops one and frees the frame
 * with its last owner. */
int frame_ref_get(uint64_t phys); /* 0 or -ENOMEM */
void frame_ref_put(uint64_t phys);
unsigned frame_ref_count(uint64_t phys);
/* Makes shared frame phys carry its page's promise: given back
 * (proc_release_pages) when the frame is freed.  Returns true when it did
 * not carry it yet (the caller gives up its own promise of the page), false
 * when it did or phys is not shared. */
bool frame_ref_carry_promise(uint64_t phys);
/* Does frame phys carry its page's promise? */
bool frame_ref_carries_promise(uint64_t phys);

/* ---- Processes ----------------------------------------------------------- */

enum proc_flags {
	PROC_ORPHAN = 1u << 0, /* parent gone: nobody waits, reaped at exit */
};

/* Who a process is and what it may do (cred.c).  Changed only by the
 * process's own thread, under proc_lock; read by others under proc_lock. */
struct proc_cred {
	uint32_t uid, euid, suid; /* real, effective, saved user ids */
	uint32_t gid, egid, sgid;
	unsigned privileges; /* PRIV_*: held; they count while euid is 0 */
};

/* One signal's action as rt_sigaction set it (Linux's fields); mask is in
 * the kernel's bit order (bit n: signal n). */
struct proc_sigaction {
	uint64_t handler, flags, restorer;
	uint32_t mask;
};

/* Who sent a pending signal and why, for the handler's siginfo. */
struct proc_siginfo {
	int32_t code; /* SI_USER, SI_KERNEL, CLD_*, SEGV_* */
	int32_t pid;  /* the sender (SI_USER) or the child (SIGCHLD) */
	uint32_t uid;
	int32_t status;   /* SIGCHLD: the child's exit code or signal */
	uint64_t address; /* a fault's address */
};

/* The alternate signal stack (sigaltstack, altstack.c): Linux keeps one per
 * thread, and a process here has one user thread.  size is 0 exactly when
 * there is none (sp 0 too); flags are what the program set (0 or SS_ONSTACK
 * for a stack, SS_DISABLE for none, with SS_AUTODISARM or not). */
struct proc_altstack {
	uint64_t sp; /* its lowest address */
	uint64_t size;
	uint32_t flags;
};

/* The first four fields are read in line through proc.h (PROC_OFFSET_*). */
struct process {
	int pid;
	volatile uint32_t pending_signals; /* bit per signal number */
	uint8_t trace_slot;     /* its entry in the trace map (kernel/trace/uscope.c), 0: none */
	uint32_t execs;         /* programs exec'd (the memory replaced), under proc_lock */
	struct process *parent; /* kernel_parent for children of the kernel */
	char name[PROC_NAME_MAX];
	char args[PROC_ARGS_MAX]; /* the command line of its last exec (ps -f) */
	volatile enum proc_state state;
	unsigned flags;
	struct proc_memory *memory;
	struct thread *thread;
	struct proc_module_slots slots;
	int exit_status;                   /* wait status word, once a zombie */
	volatile uint32_t ignored_signals; /* bit per signal set to SIG_IGN (kept across exec) */
	int pgid; /* process group and session (session.c), under proc_lock */
	int sid;
	volatile bool stopped; /* by a stop signal, until SIGCONT or a signal that ends it */
	bool stop_reported;    /* wait4(WUNTRACED) has told the parent */

	struct process *first_child; /* under proc_lock */
	struct process *next_sibling;
	volatile uint64_t child_events; /* bumped when a child ends */
	struct waitq child_exit;        /* wait4 sleeps here */
	struct waitq signal_queue;      /* nanosleep sleeps here; kill wakes it */

	struct trap_frame start_frame; /* the registers the thread enters user mode with */

	uint64_t own_code_start, own_code_end; /* its program's own code (exec_image's) */
	struct cfi_tables unwind;              /* its program's unwind tables (exec_image's) */
	uint64_t final_cpu_ns;                 /* its thread's time on a CPU, once a zombie */
	int final_cpu;                         /* the CPU it ended on */

	struct proc_cred cred; /* fork copies it, exec keeps it */

	/* Signal handling (signal.c).  Written under proc_lock; only the
	 * process's own thread changes the mask and the actions.
	 * pending_signals holds only what acts now (unblocked, not ignored);
	 * a blocked signal waits in held_signals until it is unblocked. */
	uint32_t blocked_signals; /* the mask, never SIGKILL or SIGSTOP */
	uint32_t held_signals;    /* pending while blocked */
	uint32_t handled_signals; /* bit per signal with a handler */
	uint32_t saved_mask;      /* rt_sigsuspend's caller's mask, while restore_mask */
	bool restore_mask;
	bool context_restored; /* rt_sigreturn rebuilt the frame: leave by IRETQ */
	struct proc_sigaction actions[PROC_SIGNALS];
	struct proc_siginfo infos[PROC_SIGNALS]; /* of each pending signal */
	/* Only the process's own thread reads or changes it: sigaltstack,
	 * delivery, rt_sigreturn, fork (copied from the parent, the caller)
	 * and exec (reset). */
	struct proc_altstack altstack;
};

extern struct spinlock proc_lock;

/* process.c */
/* A new EMBRYO process, child of parent (NULL: the kernel's).  Returns it, or
 * NULL with *error = -EAGAIN (table full) or -ENOMEM. */
struct process *proc_alloc(struct process *parent, const char *name, int *error);
/* The process with pid, zombies included, or NULL.  Under proc_lock. */
struct process *proc_find_locked(int pid);
/* Frees an EMBRYO process that never ran (its memory too). */
void proc_free_embryo(struct process *p);
/* Creates p's thread, which will enter user mode with p->start_frame, and
 * stores it in p; it does not run until proc_launch_thread, which must
 * follow, with nothing that can fail between.  Returns 0 or -ENOMEM (p is
 * then still an embryo for the caller to free). */
int proc_create_thread(struct process *p);
/* Lets p's thread run.  p may end and be freed as soon as it does, which
 * can be before this returns: the caller reads what it needs of p (its
 * pid) first. */
void proc_launch_thread(struct process *p);
/* proc_create_thread, then proc_launch_thread when it succeeded. */
int proc_start_thread(struct process *p);
#ifdef KERNEL_TESTS
/* Called with p by p's thread as it first runs, the earliest point from
 * which p could end, when set (the proc suite checks there that the start
 * is complete; NULL but while one case runs).  Nothing outside the test
 * kernel. */
extern void (*volatile proc_test_start_window)(struct process *p);
#endif
/* Runs fn(thread, arg) on process pid's thread (pid 0: the caller's, without
 * locks; any other under proc_lock, so fn must not sleep) and returns its
 * result, or -ESRCH when there is no such process or it has ended. */
int proc_call_on_thread(int pid, int (*fn)(struct thread *t, void *arg), void *arg);
/* proc_call_on_thread when the caller may act on pid (it owns pid or holds
 * privilege), else -EPERM: the lookup, the check and fn in one hold of
 * proc_lock, so fn acts on the process checked. */
int proc_call_on_thread_checked(int pid, unsigned privilege, int (*fn)(struct thread *t, void *arg),
				void *arg);
/* Ends the calling process with a wait status word.  Never returns. */
__attribute__((noreturn)) void proc_exit_current(int status);
/* Records exit(code): the process ends on its way back to user mode. */
void proc_request_exit(struct process *p, int code);
/* Installs the handler for faults in user mode. */
void proc_setup_faults(void);
/* True when a signal that ends p is pending. */
bool proc_is_killed(const struct process *p);
/* True when a signal that ends or stops p, or that its handler takes, is
 * pending: a long wait gives up (-EINTR) so that p reaches its way back to
 * user mode and acts on it. */
bool proc_is_interrupted(const struct process *p);
/* signal.c */
#define PROC_SIG_BLOCK   0 /* rt_sigprocmask's how, Linux's values */
#define PROC_SIG_UNBLOCK 1
#define PROC_SIG_SETMASK 2
/* Linux's sigset_t (signal n at bit n - 1) from and to the kernel's mask. */
uint64_t proc_pack_mask(uint32_t mask);
uint32_t proc_unpack_mask(uint64_t set);
/* Sets p's mask (SIGKILL and SIGSTOP dropped), moving what it blocks out of
 * pending_signals and what it unblocks back in.  Under proc_lock. */
void proc_set_blocked_locked(struct process *p, uint32_t mask);
/* The caller's pending blocked signals (rt_sigpending). */
uint32_t proc_held_signals(void);
/* rt_sigprocmask: *old gets the mask, then how applies *set (NULL: none).
 * Returns 0 or -EINVAL (how). */
int proc_change_mask(int how, const uint32_t *set, uint32_t *old);
/* rt_sigsuspend: waits with mask until a signal acts; returns -EINTR (the
 * caller's mask comes back when the handler returns). */
int proc_suspend_with_mask(uint32_t mask);
/* Makes signal pending in p (held while blocked), with info for its handler;
 * dropped when p would do nothing with it.  Under proc_lock. */
void proc_queue_signal_locked(struct process *p, int signal, const struct proc_siginfo *info);
/* A signal p cannot refuse (a fault): blocked or ignored, or to_default, its
 * action becomes the default.  Returns true when a handler will take it.
 * Under proc_lock. */
bool proc_force_signal_locked(struct process *p, int signal, const struct proc_siginfo *info,
			      bool to_default);
/* rt_sigaction: *old gets the action (always), then action (NULL: none) is
 * set.  Returns 0 or -EINVAL. */
int proc_set_signal_action(int signal, const struct proc_sigaction *action,
			   struct proc_sigaction *old);
/* fork: the child gets the parent's actions, mask and alternate stack;
 * exec: handlers go back to the default (ignored signals stay ignored) and
 * the alternate stack goes (proc_altstack_forget). */
void proc_signals_fork(struct process *child, const struct process *parent);
void proc_signals_exec_locked(struct process *p);
/* altstack.c: the alternate signal stack of the calling process */
#define PROC_SS_ONSTACK    1
#define PROC_SS_DISABLE    2
#define PROC_SS_AUTODISARM (1u << 31)
/* The state with no alternate stack (the first process's, and
 * SS_AUTODISARM's while a handler runs). */
void proc_altstack_reset(struct proc_altstack *stack);
/* exec's: no stack (it was in the old memory), the flags kept as Linux
 * keeps them. */
void proc_altstack_forget(struct proc_altstack *stack);
/* Is sp on stack (Linux's on_sig_stack)?  Never while SS_AUTODISARM is
 * set: a handler that entered it has it disarmed. */
bool proc_altstack_holds(const struct proc_altstack *stack, uint64_t sp);
/* Is sp within stack's bytes, whatever its flags (a frame must stay in)? */
bool proc_altstack_within(const struct proc_altstack *stack, uint64_t sp);
/* Linux's sas_ss_flags: SS_DISABLE with none, SS_ONSTACK while sp is on
 * it, else 0. */
uint32_t proc_altstack_state(const struct proc_altstack *stack, uint64_t sp);
/* sigaltstack's check, with no side effect: *wanted (as the program gave
 * it) made into the state to keep.  Returns 0, -EPERM (sp is on the current
 * stack), -EINVAL (flags other than 0, SS_ONSTACK or SS_DISABLE, with or
 * without SS_AUTODISARM) or -ENOMEM (smaller than MINSIGSTKSZ, 2048). */
int proc_altstack_check(const struct proc_altstack *current, struct proc_altstack *wanted,
			uint64_t sp);
/* sigaltstack's first half, for the caller whose user stack pointer is sp:
 * *old gets its stack as Linux reports it (flags: proc_altstack_state, and
 * SS_AUTODISARM as set), and wanted (NULL: no change) is checked as
 * proc_altstack_check does.  Changes nothing; returns 0, -EINVAL (a kernel
 * thread) or proc_altstack_check's errors. */
int proc_altstack_prepare(uint64_t sp, struct proc_altstack *wanted, struct proc_altstack *old);
/* The second half: wanted, which proc_altstack_prepare accepted, becomes the
 * caller's.  Cannot fail. */
void proc_altstack_set(const struct proc_altstack *wanted);
/* Runs the handlers of every pending handled signal: a frame each on the
 * user stack, frame pointed at the last one.  number is the system call
 * the frame returns from (PROC_NO_CALL: none), made again with SA_RESTART. */
void proc_deliver_signals(struct process *p, struct trap_frame *frame, uint64_t number);
/* rt_sigsuspend's mask, when no handler took it back. */
void proc_restore_mask(struct process *p);
/* The signal of an exception in user mode; true when a handler takes it. */
bool proc_signal_fault(struct process *p, int signal, const struct trap_frame *frame,
		       uint64_t address);
/* rt_sigreturn: frame from the handler's frame on the user stack. */
long proc_sigreturn(struct trap_frame *frame);
/* Sets the name from a path's last component. */
void proc_set_name(struct process *p, const char *path);

/* cred.c: the credentials of a child of parent (NULL: of the kernel: root
 * with every privilege). */
struct proc_cred proc_cred_for_child(const struct process *parent);
/* proc_current_owner of p. */
uint32_t proc_owner(const struct process *p);
/* Sets the caller's real, effective and saved user ids (group: group ids)
 * to wanted[] where an entry is not 0xffffffff, by POSIX's rules.  Returns 0
 * or -EPERM (nothing changed). */
int proc_set_ids(bool group, const uint32_t wanted[3]);
/* The caller's real, effective and saved user (group: group) ids. */
void proc_get_ids(bool group, uint32_t ids[3]);
/* Drops the privileges in drop for good.  Returns the privileges that count
 * now, or -EINVAL (unknown bits). */
int proc_drop_privileges(unsigned drop);
/* May the caller signal target (its own user's, or PRIV_SIGNAL)?  proc_lock
 * held. */
bool proc_may_signal_locked(const struct process *target);
/* Whether the caller may act on target (signal it, pin it): it owns target
 * (its real or effective uid is target's real or saved uid) or holds
 * privilege.  Under proc_lock, in the hold that acts on target. */
bool proc_may_act_on_locked(const struct process *target, unsigned privilege);
/* Sets signal pending on p (unless p ignores it) and wakes its waits; a stop
 * or continue signal acts at once.  proc_lock held. */
void proc_signal_locked(struct process *p, int signal);
/* proc_signal_locked from sender (NULL: the kernel), which the handler's
 * siginfo names. */
void proc_signal_from_locked(struct process *p, int signal, const struct process *sender);
/* session.c: makes embryo p lead a new session and group, with every
 * signal's default action. */
void proc_start_session(struct process *p);
/* POSIX's orphaned process groups: of groups[0..count) (the groups an
 * exiting process's end may have orphaned; it is a zombie already), each
 * group that no member ties to its session any more (no member has a live
 * parent in another group of the same session) and that has a stopped
 * member gets SIGHUP, then SIGCONT.  proc_lock held. */
void proc_hangup_orphaned_groups_locked(const int *groups, int count);
/* The leader of session sid has ended: tells the session-end hook (the
 * console's), outside proc_lock. */
void proc_session_ended(int sid);
/* Calls fn on every process in the table.  proc_lock held. */
void proc_for_each_locked(void (*fn)(struct process *p, void *arg), void *arg);

/* bench.c: runs proc_bench and stops the machine when the parameter is given. */
#ifdef KERNEL_TESTS
bool proc_bench_run_if_requested(void);
#else
static inline bool proc_bench_run_if_requested(void)
{
	return false; /* benchmarks: test kernel only */
}
#endif

/* exec.c */
/* Replaces p's memory with the program in image, arguments argv/envp (kernel
 * strings), and points frame at its entry.  Returns 0, or -ENOEXEC, -ENOMEM,
 * -E2BIG with p untouched. */
int proc_exec_image(struct process *p, const void *image, size_t size, char *const argv[],
		    char *const envp[], struct trap_frame *frame);

/* files.c: where proc meets the VFS */
int proc_files_spawn(struct process *child);
int proc_files_fork(struct process *child, struct process *parent);
void proc_files_exec(struct process *p);
void proc_files_exit(struct process *p);
/* The calling process's descriptor fd read at offset (struct proc_file_ops'
 * read_at).  Returns its answer, or -EBADF without a table. */
int64_t proc_read_file_at(int fd, uint64_t offset, void *buffer, size_t length);
/* Reads the whole file at path (into proc_program_alloc's memory).  Returns
 * 0 with *image (free with proc_free_program) and *size, or -ENOENT,
 * -EACCES, -ENOMEM, -EINTR, ... */
int proc_read_program(const char *path, void **image, size_t *size);
/* Shared file mappings through struct proc_file_ops (the object is the
 * VFS's): map_open for the calling process's fd, then pages, references and
 * write-back of the object.  Only map_open may be called before a mapping
 * exists; it returns -EBADF without a table. */
int proc_map_open(int fd, bool writable, void **object);
void proc_map_get(void *object);
void proc_map_put(void *object);
int proc_map_page(void *object, uint64_t offset, bool writable, uint64_t *phys);
void proc_map_unpage(void *object, uint64_t offset, bool writable, uint64_t phys);
int proc_map_sync(void *object);

/* syscall.S */
__attribute__((noreturn)) void arch_enter_user(const struct trap_frame *frame);

#endif
