/*
 * The proc_images suite: execve reads a program whole into kernel memory, so
 * many processes of one user exec'ing a large file at once could take every
 * frame.  Here 32 processes of uid 1000 exec an 8 MiB file (256 MiB in all,
 * more than the machine's frames); a gate on vfs.close holds each one that
 * has read its image, so the images stay in flight together for as long as
 * the case wants, without any timing.  The users' share lets 8 of them hold
 * an image and queues the rest; root meanwhile still execs, forks and
 * allocates; one queued exec killed leaves the queue; once the gate opens,
 * every other exec gets its turn.
 */
#include "console/console.h"
#include "joinpoint/defer.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "time/time.h"
#include "uapi/proc.h"
#include "vfs/internal.h"
#include "vfs/vfs.h"

#define IMAGES_DIR        "/ktest-exec-images"
#define BIG_PROGRAM       IMAGES_DIR "/big"
#define SMALL_PROGRAM     IMAGES_DIR "/testprog"
#define BIG_PROGRAM_BYTES (8UL << 20)
#define USER_EXECS        32 /* 256 MiB of images: more than the machine's frames */
#define USERS_SHARE       (64UL << 20)
#define HELD_AT_ONCE      (USERS_SHARE / BIG_PROGRAM_BYTES)
#define WRITE_CHUNK       (64UL << 10)
#define SETTLE_POLL_NS    (10 * NSEC_PER_MSEC)
#define SETTLE_POLLS_MAX  6000 /* 60 s: guards against a hang, decides nothing */
#define ROOT_ALLOC_BYTES  (16UL << 20)
#define FRAMES_SLACK      (USER_EXECS * (512UL << 10)) /* each process's own stacks, tables */

/* Holds, on vfs.close of the big program, every exec that has read it (and
 * one that failed to, which a correct kernel has none of). */
struct image_gate {
	const struct vfs_node *program;
	struct completion open;
	struct spinlock lock;
	int parked_pids[USER_EXECS];
	unsigned parked;
};

static void park(struct jp_context *context, void *cookie)
{
	(void)context;
	struct image_gate *gate = cookie;
	struct process *self = proc_current();
	uint64_t irq = spin_lock_irqsave(&gate->lock);
	if (gate->parked < USER_EXECS)
		gate->parked_pids[gate->parked] = self ? proc_pid(self) : 0;
	gate->parked++;
	spin_unlock_irqrestore(&gate->lock, irq);
	completion_wait(&gate->open);
}

static void park_before_close(struct jp_context *context, void *cookie)
{
	struct image_gate *gate = cookie;
	const struct vfs_file *file = (const struct vfs_file *)context->args[0];
	/* not a killed exec leaving the queue: it closes the file too */
	if (file && file->node == gate->program && proc_current() && !proc_signal_pending())
		jp_defer(context, park, gate); /* park sleeps */
}

static unsigned parked(struct image_gate *gate)
{
	uint64_t irq = spin_lock_irqsave(&gate->lock);
	unsigned n = gate->parked;
	spin_unlock_irqrestore(&gate->lock, irq);
	return n;
}

static bool was_parked(struct image_gate *gate, int pid)
{
	for (unsigned i = 0; i < parked(gate) && i < USER_EXECS; i++)
		if (gate->parked_pids[i] == pid)
			return true;
	return false;
}

/* Writes length bytes of data (NULL: zeros) to a new file of mode. */
static int write_program(const char *path, const void *data, size_t length, uint32_t mode)
{
	static const uint8_t zeros[WRITE_CHUNK];
	struct vfs_file *file;
	int err = vfs_open(path, VFS_O_WRONLY | VFS_O_CREAT | VFS_O_TRUNC, mode, &file);
	if (err)
		return err;
	for (size_t done = 0; !err && done < length;) {
		size_t n = length - done < WRITE_CHUNK ? length - done : WRITE_CHUNK;
		int64_t written = vfs_write(file, data ? (const uint8_t *)data + done : zeros, n);
		err = written == (int64_t)n ? 0 : -EIO;
		done += n;
	}
	vfs_close(file);
	return err ? err : vfs_chmod(path, mode);
}

static int make_programs(const struct vfs_node **big)
{
	size_t size;
	const void *testprog = proc_get_test_image(&size);
	int err = vfs_mkdir(IMAGES_DIR, 0755);
	if (err && err != -EEXIST)
		return err;
	err = write_program(SMALL_PROGRAM, testprog, size, 0755);
	if (!err)
		err = write_program(BIG_PROGRAM, NULL, BIG_PROGRAM_BYTES, 0755);
	struct vfs_file *file;
	if (!err)
		err = vfs_open(BIG_PROGRAM, VFS_O_RDONLY, 0, &file);
	if (!err) {
		*big = file->node;
		vfs_close(file);
	}
	return err;
}

/* A process of uid 1000 exec'ing the big program (testprog mode X). */
static int start_user_exec(void)
{
	char *argv[] = {"testprog", "X", BIG_PROGRAM, NULL};
	size_t size;
	const void *image = proc_get_test_image(&size);
	return proc_spawn_image(image, size, "exec-user", argv);
}

/* Root runs the small program from the file system in mode; its status. */
static int root_runs(const char *mode)
{
	char *argv[] = {"testprog", (char *)mode, NULL};
	int pid = proc_spawn(SMALL_PROGRAM, argv, NULL), status = -1;
	if (pid < 0)
		return pid;
	return proc_wait(pid, &status, 0) == pid ? status : -1;
}

/* Waits until every user exec is parked at the gate or queued for the share. */
static bool settle(struct image_gate *gate)
{
	for (unsigned polls = 0; polls < SETTLE_POLLS_MAX; polls++) {
		if (parked(gate) + proc_program_waiters() >= USER_EXECS)
			return true;
		sched_sleep_ns(SETTLE_POLL_NS);
	}
	return false;
}

/* Root may allocate while the users' images are in flight. */
static bool root_allocates(void)
{
	uint64_t pages = ROOT_ALLOC_BYTES / PAGE_SIZE;
	if (proc_promise_pages(pages))
		return false;
	void *block = kmalloc(ROOT_ALLOC_BYTES);
	kfree(block);
	proc_release_pages(pages);
	return block != NULL;
}

static void check_root_while_held(struct ktest *t)
{
	EXPECT_EQ(t, root_runs("e"), PROC_STATUS_EXITED(42)); /* an exec */
	EXPECT_EQ(t, root_runs("f"), PROC_STATUS_EXITED(50)); /* a fork */
	EXPECT_TRUE(t, root_allocates());
}

/* Kills one exec that waits for the share; returns its pid, 0 if none. */
static int kill_a_queued_exec(struct ktest *t, struct image_gate *gate, const int pids[])
{
	for (unsigned i = 0; i < USER_EXECS; i++) {
		if (pids[i] <= 0 || was_parked(gate, pids[i]))
			continue;
		unsigned before = proc_program_waiters();
		int status = -1;
		EXPECT_EQ(t, proc_kill(pids[i], SIGKILL), 0);
		EXPECT_EQ(t, proc_wait(pids[i], &status, 0), pids[i]);
		EXPECT_EQ(t, status, PROC_STATUS_SIGNALED(SIGKILL));
		EXPECT_EQ(t, proc_program_waiters(), before - 1);
		return pids[i];
	}
	return 0;
}

/* What the case promises at most: the users' share, each process's own
 * pages, root's allocation, and room for root's exec and fork beside. */
#define CASE_NEEDS_BYTES (USERS_SHARE + FRAMES_SLACK + ROOT_ALLOC_BYTES + (32UL << 20))

/* A machine too small to promise the users' share at all (a 64 MiB boot)
 * refuses the images for memory before the share could hold them. */
static bool machine_can_promise_the_case(void)
{
	uint64_t pages = CASE_NEEDS_BYTES / PAGE_SIZE;
	if (proc_promise_pages(pages))
		return false;
	proc_release_pages(pages);
	return true;
}

static void users_images_in_flight_are_bounded(struct ktest *t)
{
	if (!machine_can_promise_the_case()) {
		ktest_skip(t, "the machine cannot promise the users' share and root's room");
		return;
	}
	struct image_gate gate = {.lock = SPINLOCK_INIT("ktest.image_gate")};
	completion_init(&gate.open, "ktest.image_gate");
	ASSERT_EQ(t, make_programs(&gate.program), 0);
	struct jp_advice advice = {.name = "vfs.image_gate",
				   .before = park_before_close,
				   .cookie = &gate,
				   .flags = JP_ADVICE_DEFERS};
	int handle = jp_attach("vfs.close", &advice);
	ASSERT_TRUE(t, handle > 0);
	uint64_t free_before = pmm_count_free();
	int pids[USER_EXECS];
	for (unsigned i = 0; i < USER_EXECS; i++) {
		pids[i] = start_user_exec();
		EXPECT_TRUE(t, pids[i] > 0);
	}
	EXPECT_TRUE(t, settle(&gate));
	uint64_t taken = (free_before - pmm_count_free()) * PAGE_SIZE;
	uint64_t parked_at_once = parked(&gate);
	EXPECT_EQ(t, parked_at_once, HELD_AT_ONCE);
	EXPECT_EQ(t, proc_program_waiters(), USER_EXECS - HELD_AT_ONCE);
	EXPECT_TRUE(t, taken <= USERS_SHARE + FRAMES_SLACK);
	check_root_while_held(t);
	int killed = kill_a_queued_exec(t, &gate, pids);
	EXPECT_TRUE(t, killed > 0);
	completion_signal(&gate.open);
	for (unsigned i = 0; i < USER_EXECS; i++) {
		int status = -1;
		if (pids[i] <= 0 || pids[i] == killed)
			continue;
		EXPECT_EQ(t, proc_wait(pids[i], &status, 0), pids[i]);
		EXPECT_EQ(t, status, PROC_STATUS_EXITED(ENOEXEC)); /* read whole, not a program */
	}
	jp_detach(handle);
	EXPECT_EQ(t, proc_program_waiters(), 0);
	EXPECT_EQ(t, parked(&gate), USER_EXECS - 1);
	vfs_unlink(BIG_PROGRAM, false);
	vfs_unlink(SMALL_PROGRAM, false);
	console_print("    # %lu of %u execs at the gate at once, %lu KiB of frames taken\n",
		      (unsigned long)parked_at_once, USER_EXECS, (unsigned long)(taken >> 10));
}

/* Named proc_* as the other suites that start processes, so that it runs
 * after kshell's: a process the kernel starts opens /dev/console, which
 * takes COM1's input from the kernel shell for good. */
KTEST_SUITE(proc_images, KTEST_CASE(users_images_in_flight_are_bounded));
