/*
 * The process system calls: identity, fork, execve, exit, wait4, kill, the
 * program break, mmap (anonymous, a private copy of a file, or a file's
 * shared pages), munmap, msync, nanosleep and the process list.
 * Each one checks its arguments first (user pointers through uaccess) and
 * then acts through process.c, memory.c and exec.c; none ends the calling
 * thread itself: exit and fatal signals take effect on the way back to user
 * mode (proc_return_to_user), so every handler returns like a function.
 */
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/internal.h"
#include "syscall/syscall.h"
#include "telemetry/tracepoint.h"
#include "time/time.h"
#include "uaccess/uaccess.h"

#define PATH_MAX      4096
#define EXEC_ARGS_MAX 4096 /* argv plus envp entries */

#define PROT_READ     0x1
#define PROT_WRITE    0x2
#define PROT_EXEC     0x4
#define MAP_SHARED    0x01
#define MAP_PRIVATE   0x02
#define MAP_FIXED     0x10
#define MAP_ANONYMOUS 0x20

#define NSEC_PER_SEC 1000000000ULL

static struct process *self(void)
{
	struct process *p = proc_current();
	ASSERT(p);
	return p;
}

SYSCALL_DEFINE0(getpid)
{
	return proc_pid(self());
}

SYSCALL_DEFINE0(getppid)
{
	return proc_parent_pid(self());
}

SYSCALL_DEFINE0(gettid)
{
	return proc_pid(self());
}

/* ---- fork ------------------------------------------------------------------ */

SYSCALL_DEFINE0(fork)
{
	struct process *parent = self();
	int error;
	struct process *child = proc_alloc(parent, parent->name, &error);
	if (!child)
		return error;
	child->memory = memory_clone(parent->memory);
	error = child->memory ? proc_files_fork(child, parent) : -ENOMEM;
	if (error)
		goto out_free;
	child->start_frame = *syscall_user_frame();
	child->start_frame.rax = 0;
	int pid = child->pid;
	struct trace_process_fork event = {.parent_pid = parent->pid, .child_pid = pid};
	error = proc_create_thread(child);
	if (error)
		goto out_free;
	/* Before the child runs: its own events follow its fork in the trace. */
	tracepoint(TRACE_PROCESS_FORK, &event, sizeof event);
	proc_launch_thread(child);
	return pid;
out_free:
	proc_free_embryo(child);
	return error;
}

SYSCALL_DEFINE0(vfork)
{
	return sys_fork();
}

/* ---- execve ---------------------------------------------------------------- */

/* argv and envp copied in: pointers into one block of strings. */
struct exec_arguments {
	char *strings; /* PROC_ARG_MAX bytes */
	size_t used;
	char **argv; /* EXEC_ARGS_MAX + 2 slots: argv, NULL, envp, NULL */
	char **envp;
	size_t slots_used;
};

/* Copies a user array of user strings.  Returns 0, -EFAULT or -E2BIG. */
static int copy_string_array(struct exec_arguments *a, const uint64_t __user *list, char ***out)
{
	*out = a->argv + a->slots_used;
	for (size_t i = 0; list; i++) {
		uint64_t pointer;
		if (get_user_u64(&pointer, list + i) < 0)
			return -EFAULT;
		if (!pointer)
			break;
		if (a->slots_used >= EXEC_ARGS_MAX)
			return -E2BIG;
		long length = strncpy_from_user(a->strings + a->used, (const char *)pointer,
						PROC_ARG_MAX - a->used);
		if (length < 0)
			return length == -ENAMETOOLONG ? -E2BIG : (int)length;
		a->argv[a->slots_used++] = a->strings + a->used;
		a->used += (size_t)length + 1;
	}
	a->argv[a->slots_used++] = NULL;
	return 0;
}

static void free_arguments(struct exec_arguments *a)
{
	kfree(a->strings);
	kfree(a->argv);
}

static int copy_arguments(struct exec_arguments *a, const uint64_t __user *argv,
			  const uint64_t __user *envp)
{
	memset(a, 0, sizeof *a);
	a->strings = kmalloc(PROC_ARG_MAX);
	a->argv = kmalloc((EXEC_ARGS_MAX + 2) * sizeof(char *));
	if (!a->strings || !a->argv)
		return -ENOMEM;
	char **argv_copy = NULL, **envp_copy = NULL;
	int error = copy_string_array(a, argv, &argv_copy);
	if (!error)
		error = copy_string_array(a, envp, &envp_copy);
	a->envp = envp_copy;
	return error;
}

/* Reads path's program and replaces the caller's memory with it. */
static long exec_path(struct process *p, const char *path, struct exec_arguments *a)
{
	void *image;
	size_t size;
	long error = proc_read_program(path, &image, &size);
	if (error)
		return error;
	error = proc_exec_image(p, image, size, a->argv, a->envp, syscall_user_frame());
	proc_free_program(image, size);
	if (!error) {
		proc_set_name(p, path);
		proc_files_exec(p);
	}
	return error;
}

SYSCALL_DEFINE3(execve, const char *, path, const uint64_t *, argv, const uint64_t *, envp)
{
	struct exec_arguments arguments;
	char *kernel_path = kmalloc(PATH_MAX);
	long error = kernel_path ? strncpy_from_user(kernel_path, path, PATH_MAX) : -ENOMEM;
	if (error >= 0)
		error = copy_arguments(&arguments, argv, envp);
	else
		memset(&arguments, 0, sizeof arguments);
	if (error >= 0)
		error = exec_path(self(), kernel_path, &arguments);
	free_arguments(&arguments);
	kfree(kernel_path);
	return error;
}

/* ---- exit, wait4, kill ------------------------------------------------------ */

SYSCALL_DEFINE1(exit, int, code)
{
	proc_request_exit(self(), code);
	return 0;
}

SYSCALL_DEFINE1(exit_group, int, code)
{
	proc_request_exit(self(), code);
	return 0;
}

SYSCALL_DEFINE4(wait4, int, pid, int *, status, int, options, void *, usage)
{
	(void)usage;
	int zero = 0, result;
	if (options & ~(WNOHANG | WUNTRACED))
		return -EINVAL;
	if (status && copy_to_user(status, &zero, sizeof zero) < 0)
		return -EFAULT;
	int pid_found = proc_wait(pid, &result, options);
	if (pid_found > 0 && status && copy_to_user(status, &result, sizeof result) < 0)
		return -EFAULT;
	return pid_found;
}

/* Another user's process only with PRIV_SIGNAL (-EPERM); a group or
 * everybody: each member the caller may signal (session.c). */
SYSCALL_DEFINE2(kill, int, pid, int, signal)
{
	if (signal < 0 || signal >= 32)
		return -EINVAL;
	return proc_kill_checked(pid, signal);
}

/* ---- Memory ---------------------------------------------------------------- */

SYSCALL_DEFINE1(brk, uint64_t, address)
{
	return (long)memory_set_brk(self()->memory, address);
}

static bool page_aligned(uint64_t value)
{
	return (value & (PAGE_SIZE - 1)) == 0;
}

/* Copies the file behind fd from offset into the new private mapping at
 * start (length bytes, page-aligned), a page at a time through a bounce
 * page: what lies past the end of the file stays zero (first touch). */
static int fill_from_file(struct proc_memory *memory, uint64_t start, uint64_t length, int fd,
			  uint64_t offset)
{
	uint8_t *bounce = kmalloc(PAGE_SIZE);
	if (!bounce)
		return -ENOMEM;
	int error = 0;
	for (uint64_t done = 0; done < length && !error; done += PAGE_SIZE) {
		int64_t n = proc_read_file_at(fd, offset + done, bounce, PAGE_SIZE);
		if (n <= 0) {
			error = (int)n;
			break;
		}
		error = memory_populate(memory, start + done, start + done + PAGE_SIZE);
		if (!error)
			error = memory_write(memory, start + done, bounce, (size_t)n);
		if ((size_t)n < PAGE_SIZE)
			break;
	}
	kfree(bounce);
	return error;
}

/* Where a new mapping of length bytes goes: address with MAP_FIXED (page
 * aligned), else a free range.  Returns it, or 0. */
static uint64_t mapping_start(struct proc_memory *memory, uint64_t address, uint64_t length,
			      int flags)
{
	uint64_t start = flags & MAP_FIXED ? address : memory_find_free(memory, length);
	return start && page_aligned(start) ? start : 0;
}

static unsigned vm_flags_of(int protection)
{
	if (!(protection & (PROT_READ | PROT_WRITE | PROT_EXEC)))
		return REGION_NO_ACCESS; /* PROT_NONE */
	return (protection & PROT_WRITE ? VM_WRITE : 0) | (protection & PROT_EXEC ? VM_EXEC : 0);
}

/* MAP_SHARED of a file: its page-cache pages themselves (memory.c). */
static long map_shared_file(struct proc_memory *memory, uint64_t address, uint64_t length,
			    int protection, int flags, int fd, uint64_t offset)
{
	void *file;
	int error = proc_map_open(fd, (protection & PROT_WRITE) != 0, &file);
	if (error)
		return error;
	length = (length + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
	uint64_t start = mapping_start(memory, address, length, flags);
	if (!start) {
		proc_map_put(file);
		return flags & MAP_FIXED ? -EINVAL : -ENOMEM;
	}
	error = memory_map_shared_file(memory, start, start + length, vm_flags_of(protection), file,
				       offset);
	if (error)
		return error == -EINVAL && !(flags & MAP_FIXED) ? -ENOMEM : error;
	return (long)start;
}

SYSCALL_DEFINE6(mmap, uint64_t, address, uint64_t, length, int, protection, int, flags, int, fd,
		uint64_t, offset)
{
	struct proc_memory *memory = self()->memory;
	bool file = !(flags & MAP_ANONYMOUS);
	bool shared = (flags & MAP_SHARED) != 0;
	if (shared == ((flags & MAP_PRIVATE) != 0) || (shared && !file) || length == 0 ||
	    length > USER_MMAP_END - USER_MMAP_BASE || !page_aligned(offset))
		return -EINVAL;
	if (file && offset + length < offset)
		return -EOVERFLOW;
	if (shared)
		return map_shared_file(memory, address, length, protection, flags, fd, offset);
	int64_t checked = file ? proc_read_file_at(fd, 0, NULL, 0) : 0;
	if (checked < 0)
		return checked;
	length = (length + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
	uint64_t start = mapping_start(memory, address, length, flags);
	if (!start)
		return flags & MAP_FIXED ? -EINVAL : -ENOMEM;
	int error = memory_map_anonymous(memory, start, start + length, vm_flags_of(protection));
	if (error)
		return error == -EINVAL && !(flags & MAP_FIXED) ? -ENOMEM : error;
	error = file ? fill_from_file(memory, start, length, fd, offset) : 0;
	if (error) {
		memory_unmap(memory, start, start + length);
		return error;
	}
	return (long)start;
}

/* Resource limits: RLIMIT_AS (the bytes of a process's regions; mmap and
 * brk beyond it fail with -ENOMEM) is the one the kernel keeps; the others
 * read as unlimited.  One value serves as soft and hard limit: anyone may
 * lower it, only euid 0 raise it.  fork and exec keep it. */
#define RLIMIT_AS_RESOURCE 9
#define RLIMIT_COUNT       16
#define RLIM_INFINITY      UINT64_MAX

struct rlimit_user {
	uint64_t current;
	uint64_t maximum;
};

SYSCALL_DEFINE2(getrlimit, unsigned, resource, struct rlimit_user *, user)
{
	if (resource >= RLIMIT_COUNT)
		return -EINVAL;
	uint64_t limit =
	    resource == RLIMIT_AS_RESOURCE ? self()->memory->address_limit : RLIM_INFINITY;
	struct rlimit_user value = {limit, limit};
	return copy_to_user(user, &value, sizeof value) ? -EFAULT : 0;
}

SYSCALL_DEFINE2(setrlimit, unsigned, resource, const struct rlimit_user *, user)
{
	struct rlimit_user value;
	if (copy_from_user(&value, user, sizeof value))
		return -EFAULT;
	if (resource != RLIMIT_AS_RESOURCE || value.current > value.maximum)
		return -EINVAL;
	struct proc_memory *memory = self()->memory;
	if (value.current > memory->address_limit && proc_current_euid() != 0)
		return -EPERM;
	memory->address_limit = value.current;
	return 0;
}

/* Anonymous mappings only; the kernel's pages never (-EPERM). */
SYSCALL_DEFINE3(mprotect, uint64_t, address, uint64_t, length, int, protection)
{
	if (!page_aligned(address) || length == 0 || !uaccess_range_ok(address, length) ||
	    (protection & ~(PROT_READ | PROT_WRITE | PROT_EXEC)))
		return -EINVAL;
	length = (length + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
	return memory_protect(self()->memory, address, address + length, vm_flags_of(protection));
}

#define MS_ASYNC      1
#define MS_INVALIDATE 2
#define MS_SYNC       4

/* Writes the shared file mappings in the range back (MS_ASYNC does the same:
 * the caller does not wait any less, but nothing is lost); anonymous memory
 * has nothing to write. */
SYSCALL_DEFINE3(msync, uint64_t, address, uint64_t, length, int, flags)
{
	if (!page_aligned(address) || (flags & ~(MS_ASYNC | MS_INVALIDATE | MS_SYNC)) ||
	    ((flags & MS_ASYNC) && (flags & MS_SYNC)) || !uaccess_range_ok(address, length))
		return -EINVAL;
	if (length == 0)
		return 0;
	length = (length + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
	return memory_sync(self()->memory, address, address + length);
}

SYSCALL_DEFINE2(munmap, uint64_t, address, uint64_t, length)
{
	if (!page_aligned(address) || length == 0 || !uaccess_range_ok(address, length))
		return -EINVAL;
	length = (length + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
	return memory_unmap(self()->memory, address, address + length);
}

/* ---- Sleeping -------------------------------------------------------------- */

struct timespec_user {
	int64_t seconds;
	int64_t nanoseconds;
};

static bool killed(void *arg)
{
	return proc_is_interrupted(arg);
}

SYSCALL_DEFINE2(nanosleep, const struct timespec_user *, request, struct timespec_user *, remain)
{
	struct timespec_user t;
	if (copy_from_user(&t, request, sizeof t) < 0)
		return -EFAULT;
	if (t.seconds < 0 || t.nanoseconds < 0 || (uint64_t)t.nanoseconds >= NSEC_PER_SEC)
		return -EINVAL;
	uint64_t ns = (uint64_t)t.seconds > UINT64_MAX / NSEC_PER_SEC / 2
			  ? UINT64_MAX / 2
			  : (uint64_t)t.seconds * NSEC_PER_SEC + (uint64_t)t.nanoseconds;
	struct process *p = self();
	uint64_t start = clock_ns();
	thread_set_wait_site("nanosleep");
	int woken = waitq_wait_timeout(&p->signal_queue, killed, p, ns);
	thread_set_wait_site(NULL);
	if (woken == 0) {
		uint64_t left = ns - (clock_ns() - start < ns ? clock_ns() - start : ns);
		struct timespec_user rest = {(int64_t)(left / NSEC_PER_SEC),
					     (int64_t)(left % NSEC_PER_SEC)};
		if (remain && copy_to_user(remain, &rest, sizeof rest) < 0)
			return -EFAULT;
		return -EINTR;
	}
	return 0;
}

/* ---- The process list ------------------------------------------------------- */

/* entry_size: 0 or sizeof(struct proc_info) (the first layout), or
 * sizeof(struct proc_info_wait) (with the wait channel). */
SYSCALL_DEFINE3(ms_getprocs, void *, buffer, int, count, size_t, entry_size)
{
	bool with_wait = entry_size == sizeof(struct proc_info_wait);
	if (count < 0 || (entry_size != 0 && entry_size != sizeof(struct proc_info) && !with_wait))
		return -EINVAL;
	if (count > PROC_MAX)
		count = PROC_MAX;
	/* Zeroed: what the entries leave unwritten (the tail of a short wait
	 * channel's name) goes to the caller, who may be anyone. */
	struct proc_info_wait *info = kzalloc(PROC_MAX * sizeof *info);
	if (!info)
		return -ENOMEM;
	int total = proc_list_waits(info, count);
	int copied = total < count ? total : count;
	long error = 0;
	for (int i = 0; i < copied && !error; i++) {
		char *to =
		    (char *)buffer + (size_t)i * (with_wait ? sizeof *info : sizeof info->info);
		error = with_wait ? copy_to_user(to, &info[i], sizeof info[i])
				  : copy_to_user(to, &info[i].info, sizeof info[i].info);
	}
	kfree(info);
	return error ? error : total;
}
