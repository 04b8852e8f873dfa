/*
 * The proc suite: real processes running the built-in test program
 * (testprog.S), each case asking one question of fork, exit and wait,
 * signals, faults, memory calls and the ELF checks.  The answer comes back
 * as the process's wait status; the kernel running on after a case is part
 * of every answer.
 */
#include "exec/exec.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/internal.h"
#include "time/time.h"

extern const uint8_t proc_test_image[], proc_test_image_end[];

const void *proc_get_test_image(size_t *size)
{
	*size = (size_t)(proc_test_image_end - proc_test_image);
	return proc_test_image;
}

/* Runs the test program with argv {"testprog", mode}; returns its pid. */
static int start(const char *mode)
{
	char *argv[] = {"testprog", (char *)mode, NULL};
	size_t size;
	const void *image = proc_get_test_image(&size);
	return proc_spawn_image(image, size, "testprog", argv);
}

/* Runs mode to its end; returns the wait status, or a negative error. */
static int run(const char *mode)
{
	int pid = start(mode);
	if (pid < 0)
		return pid;
	int status = -1;
	int reaped = proc_wait(pid, &status, 0);
	return reaped == pid ? status : (reaped < 0 ? reaped : -1);
}

/* What happens to a process's exit code on its way to the parent? */
static void exit_status_reaches_the_waiter(struct ktest *t)
{
	EXPECT_EQ(t, run("e"), PROC_STATUS_EXITED(42));
}

/* Does a process see its own pid? */
static void getpid_is_the_pid(struct ktest *t)
{
	int pid = start("p"), status = -1;
	ASSERT_TRUE(t, pid > 0);
	EXPECT_EQ(t, proc_wait(pid, &status, 0), pid);
	EXPECT_EQ(t, status, PROC_STATUS_EXITED(pid & 0xff));
}

/* Does "int $0x80" reach the same system calls as SYSCALL? */
static void int80_is_a_system_call_too(struct ktest *t)
{
	EXPECT_EQ(t, run("i"), PROC_STATUS_EXITED(7));
}

/* After fork, do parent and child have their own data and stack (COW)? */
static void fork_copies_on_write(struct ktest *t)
{
	EXPECT_EQ(t, run("f"), PROC_STATUS_EXITED(50));
}

/* Does a bad access kill only the process that made it? */
static void user_faults_kill_only_that_process(struct ktest *t)
{
	EXPECT_EQ(t, run("s"), PROC_STATUS_SIGNALED(SIGSEGV));
	EXPECT_EQ(t, run("k"), PROC_STATUS_SIGNALED(SIGSEGV));
	EXPECT_EQ(t, run("w"), PROC_STATUS_SIGNALED(SIGSEGV));
	EXPECT_EQ(t, run("e"), PROC_STATUS_EXITED(42)); /* and the next one runs */
}

/* What does recursion without end run into?  The stack guard. */
static void deep_recursion_hits_the_stack_guard(struct ktest *t)
{
	EXPECT_EQ(t, run("r"), PROC_STATUS_SIGNALED(SIGSEGV));
}

/* Do brk, mmap and munmap give and take memory as they should? */
static void brk_mmap_munmap(struct ktest *t)
{
	EXPECT_EQ(t, run("b"), PROC_STATUS_EXITED(0));
}

/* Are argc, argv and the auxiliary vector where _start looks? */
static void arguments_and_auxv_are_on_the_stack(struct ktest *t)
{
	char *argv[] = {"testprog", "a", "third", NULL};
	size_t size;
	const void *image = proc_get_test_image(&size);
	int pid = proc_spawn_image(image, size, "testprog", argv), status = -1;
	ASSERT_TRUE(t, pid > 0);
	EXPECT_EQ(t, proc_wait(pid, &status, 0), pid);
	EXPECT_EQ(t, status, PROC_STATUS_EXITED(33));
}

/* Can a process that never enters the kernel be killed? */
static void kill_ends_a_spinning_process(struct ktest *t)
{
	int pid = start("l"), status = -1;
	ASSERT_TRUE(t, pid > 0);
	sched_sleep_ns(30 * 1000 * 1000);
	EXPECT_EQ(t, proc_kill(pid, SIGKILL), 0);
	EXPECT_EQ(t, proc_wait(pid, &status, 0), pid);
	EXPECT_EQ(t, status, PROC_STATUS_SIGNALED(SIGKILL));
}

/* What if a child is killed in the middle of a system call? */
static void kill_ends_a_sleeping_process(struct ktest *t)
{
	int pid = start("z"), status = -1;
	ASSERT_TRUE(t, pid > 0);
	sched_sleep_ns(30 * 1000 * 1000);
	EXPECT_EQ(t, proc_kill(pid, SIGTERM), 0);
	EXPECT_EQ(t, proc_wait(pid, &status, 0), pid);
	EXPECT_EQ(t, status, PROC_STATUS_SIGNALED(SIGTERM));
}

/* Whether process pid is stopped (false once it is gone). */
static bool looks_stopped(int pid)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *p = proc_find_locked(pid);
	bool stopped = p && p->stopped;
	spin_unlock_irqrestore(&proc_lock, irq);
	return stopped;
}

/* A stopped process that gets a fatal signal other than SIGKILL ends: from
 * the moment the signal is sent it no longer looks stopped, so its parent's
 * wait4 with WUNTRACED reports its end, not a stop it never came back from. */
static void a_stopped_process_that_is_killed_no_longer_looks_stopped(struct ktest *t)
{
	int pid = start("z"), status = -1;
	ASSERT_TRUE(t, pid > 0);
	EXPECT_EQ(t, proc_kill(pid, SIGSTOP), 0);
	uint64_t deadline = clock_ns() + 10 * NSEC_PER_SEC; /* against a hang only */
	while (!looks_stopped(pid) && clock_ns() < deadline)
		sched_sleep_ns(NSEC_PER_MSEC);
	EXPECT_TRUE(t, looks_stopped(pid));
	EXPECT_EQ(t, proc_kill(pid, SIGTERM), 0);
	EXPECT_FALSE(t, looks_stopped(pid));
	EXPECT_EQ(t, proc_wait(pid, &status, WUNTRACED), pid);
	EXPECT_EQ(t, status, PROC_STATUS_SIGNALED(SIGTERM));
	if (status != PROC_STATUS_SIGNALED(SIGTERM)) /* the stop was reported: reap it */
		proc_wait(pid, &status, 0);
}

/* Whether process pid is a zombie; *thread_named: whether it names a thread. */
static bool is_zombie(int pid, bool *thread_named)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *p = proc_find_locked(pid);
	bool zombie = p && p->state == PROC_ZOMBIE;
	*thread_named = p && p->thread;
	spin_unlock_irqrestore(&proc_lock, irq);
	return zombie;
}

/* A zombie's thread has ended and is freed without a word to the process:
 * does the zombie still point at it for a reader that forgets its state? */
static void a_zombie_names_no_thread(struct ktest *t)
{
	int pid = start("e"), status = -1;
	ASSERT_TRUE(t, pid > 0);
	bool thread_named = true;
	uint64_t deadline = clock_ns() + 10 * NSEC_PER_SEC; /* against a hang only */
	while (!is_zombie(pid, &thread_named) && clock_ns() < deadline)
		sched_sleep_ns(NSEC_PER_MSEC);
	EXPECT_TRUE(t, is_zombie(pid, &thread_named));
	EXPECT_FALSE(t, thread_named);
	EXPECT_EQ(t, proc_wait(pid, &status, 0), pid);
	EXPECT_EQ(t, status, PROC_STATUS_EXITED(42));
}

/* Signals to nobody, and signals that do nothing. */
static void kill_checks_its_arguments(struct ktest *t)
{
	EXPECT_EQ(t, proc_kill(30000, SIGKILL), -ESRCH);
	EXPECT_EQ(t, proc_kill(-1, SIGKILL), -ESRCH);
	int pid = start("l"), status = -1;
	ASSERT_TRUE(t, pid > 0);
	EXPECT_EQ(t, proc_kill(pid, 64), -EINVAL);
	EXPECT_EQ(t, proc_kill(pid, 0), 0);
	EXPECT_EQ(t, proc_kill(pid, SIGCHLD), 0); /* ignored */
	EXPECT_EQ(t, proc_wait(pid, &status, WNOHANG), 0);
	EXPECT_EQ(t, proc_kill(pid, SIGINT), 0);
	EXPECT_EQ(t, proc_wait(pid, &status, 0), pid);
	EXPECT_EQ(t, status, PROC_STATUS_SIGNALED(SIGINT));
}

/* Waiting with no children is an error, not a hang. */
static void wait_without_children_is_echild(struct ktest *t)
{
	EXPECT_EQ(t, proc_wait(-1, NULL, 0), -ECHILD);
	EXPECT_EQ(t, proc_wait(12345, NULL, WNOHANG), -ECHILD);
}

/* What if a process forks until the table is full? */
static void fork_until_the_table_is_full(struct ktest *t)
{
	EXPECT_EQ(t, run("x"), PROC_STATUS_EXITED(60));
	EXPECT_EQ(t, proc_count(), 0);
	EXPECT_EQ(t, run("e"), PROC_STATUS_EXITED(42));
}

/* Takes free frames until only keep_frames are left, so that a test can run
 * out of memory quickly on a machine with a lot of it.  The frames are
 * chained through their first word; returns the chain. */
static uint64_t hold_frames(uint64_t keep_frames)
{
	uint64_t chain = 0;
	while (pmm_count_free() > keep_frames) {
		uint64_t frame = pmm_alloc_frame();
		if (!frame)
			break;
		*(uint64_t *)phys_to_virt(frame) = chain;
		chain = frame;
	}
	return chain;
}

static void release_frames(uint64_t chain)
{
	while (chain) {
		uint64_t next = *(uint64_t *)phys_to_virt(chain);
		pmm_free_frame(chain);
		chain = next;
	}
}

/* What if a process allocates until memory runs out?  -ENOMEM, and every
 * frame comes back when it ends. */
static void allocate_until_memory_runs_out(struct ktest *t)
{
	uint64_t held = hold_frames(8192); /* 32 MiB left to run out of */
	uint64_t free_before = pmm_count_free();
	EXPECT_EQ(t, run("m"), PROC_STATUS_EXITED(70));
	uint64_t free_after = pmm_count_free();
	EXPECT_TRUE(t, free_after + 64 >= free_before);
	release_frames(held);
	EXPECT_EQ(t, run("e"), PROC_STATUS_EXITED(42));
}

/* Does an exec of a missing program fail and leave the caller running? */
static void exec_of_a_missing_program_fails(struct ktest *t)
{
	EXPECT_EQ(t, run("E"), PROC_STATUS_EXITED(80));
}

/* Does every bad pointer given to a system call come back as -EFAULT? */
static void bad_pointers_give_efault(struct ktest *t)
{
	EXPECT_EQ(t, run("u"), PROC_STATUS_EXITED(0));
}

/* ---- ELF checks ------------------------------------------------------------ */

/* Offsets in the test image's headers (testprog.S). */
#define EH_IDENT_CLASS 4
#define EH_TYPE        16
#define EH_MACHINE     18
#define EH_ENTRY       24
#define EH_PHOFF       32
#define EH_PHENTSIZE   54
#define EH_PHNUM       56
#define PH0            64
#define PH1            (64 + 56)
#define PH_TYPE        0
#define PH_OFFSET      8
#define PH_VADDR       16
#define PH_FILESZ      32
#define PH_MEMSZ       40

struct corruption {
	const char *what;
	size_t offset;
	unsigned width; /* bytes: 1, 2, 4 or 8 */
	uint64_t value;
};

static const struct corruption corruptions[] = {
    {"bad magic", 1, 1, 'X'},
    {"32-bit class", EH_IDENT_CLASS, 1, 1},
    {"shared object", EH_TYPE, 2, 3},
    {"not x86_64", EH_MACHINE, 2, 3},
    {"program header size", EH_PHENTSIZE, 2, 32},
    {"no program headers", EH_PHNUM, 2, 0},
    {"too many program headers", EH_PHNUM, 2, 0xffff},
    {"program headers past the end", EH_PHOFF, 8, 1UL << 40},
    {"program headers offset wraps", EH_PHOFF, 8, ~0UL - 8},
    {"entry outside the image", EH_ENTRY, 8, 0x900000},
    {"entry in a data segment", EH_ENTRY, 8, 0x600000},
    {"entry zero", EH_ENTRY, 8, 0},
    {"a dynamic program", PH1 + PH_TYPE, 4, 3},
    {"segment past the end of the file", PH0 + PH_FILESZ, 8, 1UL << 30},
    {"file bytes beyond memory size", PH1 + PH_MEMSZ, 8, 8},
    {"huge segment", PH1 + PH_MEMSZ, 8, 1UL << 40},
    {"segment offset wraps", PH1 + PH_OFFSET, 8, ~0UL - 4095},
    {"segment in the kernel half", PH1 + PH_VADDR, 8, 0xffff800000600000UL},
    {"segment at address zero", PH0 + PH_VADDR, 8, 0},
    {"segment wraps around", PH1 + PH_VADDR, 8, ~0UL - 4095},
    {"overlapping segments", PH1 + PH_VADDR, 8, 0x400000},
    {"vaddr and offset not congruent", PH1 + PH_VADDR, 8, 0x600800},
};

static void put_field(uint8_t *image, const struct corruption *c)
{
	memcpy(image + c->offset, &c->value, c->width);
}

/* Hostile images: each corruption of the good image is refused. */
static void hostile_elf_images_are_refused(struct ktest *t)
{
	size_t size;
	const uint8_t *good = proc_get_test_image(&size);
	uint8_t *copy = kmalloc(size);
	struct exec_image info;
	ASSERT_TRUE(t, copy != NULL);
	EXPECT_EQ(t, exec_parse_elf(good, size, &info), 0);
	for (size_t i = 0; i < sizeof corruptions / sizeof corruptions[0]; i++) {
		memcpy(copy, good, size);
		put_field(copy, &corruptions[i]);
		if (exec_parse_elf(copy, size, &info) != -ENOEXEC)
			ktest_check(t, false, __FILE__, __LINE__, corruptions[i].what);
	}
	kfree(copy);
}

/* Truncated images, at every interesting length, and a spawn of one. */
static void truncated_elf_images_are_refused(struct ktest *t)
{
	size_t size;
	const uint8_t *good = proc_get_test_image(&size);
	struct exec_image info;
	const size_t lengths[] = {0, 4, 63, 64, 100, PH1 + 55, 4096, size - 4096, size - 1};
	for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++)
		EXPECT_EQ(t, exec_parse_elf(good, lengths[i], &info), -ENOEXEC);
	char *argv[] = {"testprog", "e", NULL};
	EXPECT_EQ(t, proc_spawn_image(good, 100, "truncated", argv), -ENOEXEC);
	EXPECT_EQ(t, proc_count(), 0);
	EXPECT_EQ(t, run("e"), PROC_STATUS_EXITED(42));
}

static int copy_thread_name(struct thread *thread, void *name)
{
	strlcpy(name, thread_name(thread), THREAD_NAME_MAX);
	return 0;
}

/* exec names the process after the program, and its thread too (the thread
 * list and the trace stream's thread names show it). */
static void exec_names_the_thread(struct ktest *t)
{
	int pid = start("z"), status = -1;
	ASSERT_TRUE(t, pid > 0);
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	struct process *p = proc_find_locked(pid);
	if (p)
		proc_set_name(p, "/bin/renamed");
	spin_unlock_irqrestore(&proc_lock, irq);
	char name[THREAD_NAME_MAX] = "";
	EXPECT_EQ(t, proc_call_on_thread(pid, copy_thread_name, name), 0);
	EXPECT_EQ(t, strcmp(name, "renamed"), 0);
	EXPECT_EQ(t, proc_kill(pid, SIGTERM), 0);
	EXPECT_EQ(t, proc_wait(pid, &status, 0), pid);
}

/* A name is NUL-padded to the end of its field, even after a longer one
 * (exec renames a process): every scope event copies the first 16 bytes in
 * two words, so what followed the NUL would go to the monitor. */
static void a_shorter_name_clears_the_longer_one(struct ktest *t)
{
	int error = 0;
	struct process *p = proc_alloc(NULL, "a-name-of-thirty-one-characters", &error);
	ASSERT_TRUE(t, p != NULL);
	proc_set_name(p, "/bin/sh");
	const char *name = proc_name(p);
	EXPECT_EQ(t, strcmp(name, "sh"), 0);
	unsigned stale = 0;
	for (unsigned i = 2; i < PROC_NAME_MAX; i++)
		stale += name[i] != 0;
	EXPECT_EQ(t, stale, 0);
	proc_free_embryo(p);
}

/* ---- A child that could end before its start is complete ------------------ */

void (*volatile proc_test_start_window)(struct process *p);
static volatile bool start_returned, child_ran_before_start_returned, child_found_its_thread;

/* The child's first code, from which it may end and be reaped at once:
 * everything its start writes (p->thread, which others act on) must be
 * written by then. */
static void look_at_the_start(struct process *p)
{
	proc_test_start_window = NULL; /* this start only */
	child_ran_before_start_returned = !start_returned;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	child_found_its_thread = p->thread == thread_current();
	spin_unlock_irqrestore(&proc_lock, irq);
}

/* Starts the child from below its priority, pinned to this CPU: the child
 * inherits the pin, so it runs as soon as its thread is launched, before
 * anything the start would do after the launch. */
static int start_from_below_the_child(void *arg)
{
	thread_pin_here();
	int pid = start("e");
	start_returned = true;
	*(volatile int *)arg = pid;
	return 0;
}

/* A child that exits at once: from its first code it could end and be
 * reaped (by any kernel thread, for the kernel's children), so is its start
 * complete by then?  Were its thread stored after the launch, it would find
 * none there, the starter being held below it. */
static void a_child_cannot_be_reaped_before_its_start_is_complete(struct ktest *t)
{
	volatile int pid = -1;
	start_returned = child_ran_before_start_returned = child_found_its_thread = false;
	proc_test_start_window = look_at_the_start;
	struct thread *starter =
	    thread_create(start_from_below_the_child, (void *)&pid, "starter", SCHED_PRIORITY_LOW);
	if (starter)
		thread_join(starter, NULL);
	proc_test_start_window = NULL;
	ASSERT_TRUE(t, starter != NULL && pid > 0);
	EXPECT_TRUE(t, child_ran_before_start_returned);
	EXPECT_TRUE(t, child_found_its_thread);
	int status = -1;
	EXPECT_EQ(t, proc_wait(pid, &status, 0), pid);
	EXPECT_EQ(t, status, PROC_STATUS_EXITED(42));
}

/* ---- What a parent sees once its child ended -------------------------------- */

static void (*console_session_end_hook)(int sid);
static volatile int ended_leader_visible; /* -1: the hook did not run for it */
static volatile int watched_leader;

/* Records whether the ending leader could already be reaped (a zombie, or
 * gone) when its session's end is handled, then does the usual work. */
static void record_session_end(int sid)
{
	if (sid == watched_leader) {
		uint64_t irq = spin_lock_irqsave(&proc_lock);
		struct process *leader = proc_find_locked(sid);
		ended_leader_visible = !leader || leader->state == PROC_ZOMBIE;
		spin_unlock_irqrestore(&proc_lock, irq);
	}
	if (console_session_end_hook)
		console_session_end_hook(sid);
}

/* A session's end (the console cooked again, its foreground group hung
 * up) is something a parent may look at as soon as its wait returns: is it
 * handled before the leader can be reaped?  (Every spawned program leads
 * a session.) */
static void a_session_ends_before_its_leader_can_be_reaped(struct ktest *t)
{
	ended_leader_visible = -1;
	watched_leader = 0;
	console_session_end_hook = proc_set_session_end_hook(record_session_end);
	int pid = start("z"); /* sleeps until killed */
	watched_leader = pid;
	int status = -1;
	if (pid > 0 && proc_kill(pid, SIGKILL) == 0)
		EXPECT_EQ(t, proc_wait(pid, &status, 0), pid);
	proc_set_session_end_hook(console_session_end_hook);
	ASSERT_TRUE(t, pid > 0);
	EXPECT_EQ(t, ended_leader_visible, 0);
}

KTEST_SUITE(proc, KTEST_CASE(exit_status_reaches_the_waiter), KTEST_CASE(getpid_is_the_pid),
	    KTEST_CASE(int80_is_a_system_call_too), KTEST_CASE(fork_copies_on_write),
	    KTEST_CASE(user_faults_kill_only_that_process),
	    KTEST_CASE(deep_recursion_hits_the_stack_guard), KTEST_CASE(brk_mmap_munmap),
	    KTEST_CASE(arguments_and_auxv_are_on_the_stack),
	    KTEST_CASE(kill_ends_a_spinning_process), KTEST_CASE(kill_ends_a_sleeping_process),
	    KTEST_CASE(a_stopped_process_that_is_killed_no_longer_looks_stopped),
	    KTEST_CASE(a_zombie_names_no_thread), KTEST_CASE(kill_checks_its_arguments),
	    KTEST_CASE(wait_without_children_is_echild), KTEST_CASE(fork_until_the_table_is_full),
	    KTEST_CASE(allocate_until_memory_runs_out), KTEST_CASE(exec_of_a_missing_program_fails),
	    KTEST_CASE(bad_pointers_give_efault), KTEST_CASE(hostile_elf_images_are_refused),
	    KTEST_CASE(truncated_elf_images_are_refused), KTEST_CASE(exec_names_the_thread),
	    KTEST_CASE(a_shorter_name_clears_the_longer_one),
	    KTEST_CASE(a_child_cannot_be_reaped_before_its_start_is_complete),
	    KTEST_CASE(a_session_ends_before_its_leader_can_be_reaped));
