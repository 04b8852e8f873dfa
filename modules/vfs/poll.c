/*
 * Readiness: poll(2) and select(2) over any descriptors (files, pipes, the
 * console, sockets).  A file answers "what are you ready for" through its
 * poll op without waiting; whatever changes a file's readiness calls
 * vfs_poll_notify, which bumps one global sequence number and wakes every
 * thread sleeping in vfs_poll_wait.  A poller reads the sequence, scans its
 * descriptors, and sleeps only if the sequence is still the one it read, so
 * a change between the scan and the sleep is never lost.  One queue for all
 * is coarse (every poller rescans on any change) but has no registration to
 * undo, and costs a notifier one atomic add when nobody polls.
 */
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "syscall/syscall.h"
#include "time/time.h"
#include "uaccess/uaccess.h"
#include "vfs/internal.h"

#define POLL_MAX_FDS       1024
#define POLL_STACK_FDS     32 /* arrays this small stay on the stack (256 bytes, as Linux) */
#define SIGNAL_CHECK_NS    (100 * NSEC_PER_MSEC)
#define SELECT_SET_BITS    1024
#define SELECT_MAX_SECONDS (1000LL * 365 * 24 * 3600) /* a thousand years */
#define POLL_BUCKETS       64
#define ANY_OBJECT         (POLL_BUCKETS - 1) /* notifications that name no object */

static struct waitq poll_queue = WAITQ_INIT(poll_queue, "poll"); /* ps's wait channel */
static volatile uint64_t poll_sequence;
static volatile uint64_t bucket_sequence[POLL_BUCKETS];
static volatile unsigned pollers;

unsigned vfs_poll(struct vfs_file *file)
{
	if (!file)
		return VFS_POLL_NVAL;
	if (!file->ops || !file->ops->poll)
		return VFS_POLL_IN | VFS_POLL_OUT;
	return file->ops->poll(file);
}

unsigned vfs_poll_bucket(const void *object)
{
	uint64_t h = (uint64_t)(uintptr_t)object * 0x9e3779b97f4a7c15ULL;
	return (unsigned)((h >> 40) % (POLL_BUCKETS - 1));
}

static void notify_bucket(unsigned bucket)
{
	__atomic_add_fetch(&poll_sequence, 1, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&bucket_sequence[bucket], 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&pollers, __ATOMIC_SEQ_CST))
		waitq_wake_ready(&poll_queue);
}

void vfs_poll_notify_key(const void *object)
{
	notify_bucket(object ? vfs_poll_bucket(object) : ANY_OBJECT);
}

void vfs_poll_notify(void)
{
	notify_bucket(ANY_OBJECT);
}

uint64_t vfs_poll_sequence(void)
{
	return __atomic_load_n(&poll_sequence, __ATOMIC_SEQ_CST);
}

void vfs_poll_watch_init(struct vfs_poll_watch *watch)
{
	*watch = (struct vfs_poll_watch){.buckets = 1ULL << ANY_OBJECT, .thread = thread_current()};
}

void vfs_poll_watch_file(struct vfs_poll_watch *watch, struct vfs_file *file)
{
	const void *object =
	    file && file->ops && file->ops->poll_key ? file->ops->poll_key(file) : NULL;
	watch->buckets |= object ? 1ULL << vfs_poll_bucket(object) : ~0ULL;
}

static uint64_t bucket_sum(uint64_t buckets)
{
	uint64_t sum = 0;
	for (; buckets; buckets &= buckets - 1)
		sum +=
		    __atomic_load_n(&bucket_sequence[__builtin_ctzll(buckets)], __ATOMIC_SEQ_CST);
	return sum;
}

/* Asked by the poller and by notifiers (waitq_wake_ready): only the poller
 * itself looks at its signals. */
static bool watch_changed(void *arg)
{
	struct vfs_poll_watch *watch = arg;
	return bucket_sum(watch->buckets) != watch->seen ||
	       (thread_current() == watch->thread && vfs_signal_pending());
}

static int wait_for(waitq_cond_fn changed, void *arg, uint64_t timeout_ns)
{
	__atomic_add_fetch(&pollers, 1, __ATOMIC_SEQ_CST);
	int err = waitq_wait_timeout(&poll_queue, changed, arg, timeout_ns);
	__atomic_sub_fetch(&pollers, 1, __ATOMIC_SEQ_CST);
	return err;
}

int vfs_poll_wait_watch(struct vfs_poll_watch *watch, uint64_t sequence, uint64_t timeout_ns)
{
	watch->seen = bucket_sum(watch->buckets);
	if (vfs_poll_sequence() != sequence)
		return 0; /* something changed while the files were asked: ask again */
	return wait_for(watch_changed, watch, timeout_ns);
}

struct any_change {
	uint64_t sequence;
	struct thread *thread;
};

static bool poll_changed(void *arg)
{
	struct any_change *change = arg;
	return vfs_poll_sequence() != change->sequence ||
	       (thread_current() == change->thread && vfs_signal_pending());
}

int vfs_poll_wait(uint64_t sequence, uint64_t timeout_ns)
{
	struct any_change change = {sequence, thread_current()};
	return wait_for(poll_changed, &change, timeout_ns);
}

/* ---- poll(2) ------------------------------------------------------------------ */

struct linux_pollfd {
	int32_t fd;
	int16_t events;
	int16_t revents;
};

/* Sets every revents; returns how many are non-zero. */
static int scan_pollfds(struct linux_pollfd *fds, unsigned count, struct vfs_poll_watch *watch)
{
	void *table = vfs_current_files();
	int ready = 0;
	for (unsigned i = 0; i < count; i++) {
		struct vfs_file *file;
		fds[i].revents = 0;
		if (fds[i].fd < 0)
			continue;
		if (!table || vfs_fd_get(table, fds[i].fd, &file)) {
			fds[i].revents = VFS_POLL_NVAL;
		} else {
			unsigned wanted = (uint16_t)fds[i].events | VFS_POLL_ERR | VFS_POLL_HUP;
			fds[i].revents = (int16_t)(vfs_poll(file) & wanted);
			vfs_poll_watch_file(watch, file);
			vfs_file_put(file);
		}
		ready += fds[i].revents != 0;
	}
	return ready;
}

/* Calls scan(arg) until it finds something, the deadline (0: none) passes or
 * the process must end.  Returns scan's count, 0 at the deadline, or -EINTR. */
static long wait_ready(int (*scan)(void *arg, struct vfs_poll_watch *watch), void *arg,
		       uint64_t deadline, bool wait)
{
	for (;;) {
		uint64_t sequence = vfs_poll_sequence();
		struct vfs_poll_watch watch;
		vfs_poll_watch_init(&watch);
		int ready = scan(arg, &watch);
		if (ready || !wait)
			return ready;
		if (vfs_signal_pending())
			return -EINTR;
		uint64_t now = clock_ns(), slice = SIGNAL_CHECK_NS;
		if (deadline && now >= deadline)
			return 0;
		if (deadline && deadline - now < slice)
			slice = deadline - now;
		vfs_poll_wait_watch(&watch, sequence, slice);
	}
}

struct poll_request {
	struct linux_pollfd *fds;
	unsigned count;
};

static int scan_poll_request(void *arg, struct vfs_poll_watch *watch)
{
	struct poll_request *r = arg;
	return scan_pollfds(r->fds, r->count, watch);
}

/* The clock reading ms milliseconds from now; 0 (no deadline: for ever) for
 * a negative ms, and for one too far away to add to the clock. */
static uint64_t deadline_after_ms(int64_t ms)
{
	if (ms <= 0)
		return 0;
	uint64_t now = clock_ns();
	if ((uint64_t)ms > (UINT64_MAX - now) / NSEC_PER_MSEC)
		return 0;
	return now + (uint64_t)ms * NSEC_PER_MSEC;
}

SYSCALL_DEFINE3(poll, struct linux_pollfd *, user_fds, unsigned, count, int, timeout_ms)
{
	if (count > POLL_MAX_FDS)
		return -EINVAL;
	size_t size = count * sizeof(struct linux_pollfd);
	struct linux_pollfd on_stack[POLL_STACK_FDS];
	struct linux_pollfd *fds = count <= POLL_STACK_FDS ? on_stack : kmalloc(size);
	if (!fds)
		return -ENOMEM;
	long result = -EFAULT;
	if (!copy_from_user(fds, user_fds, size)) {
		struct poll_request request = {fds, count};
		result = wait_ready(scan_poll_request, &request, deadline_after_ms(timeout_ms),
				    timeout_ms != 0);
		if (result >= 0 && copy_to_user(user_fds, fds, size))
			result = -EFAULT;
	}
	if (fds != on_stack)
		kfree(fds);
	return result;
}

/* ---- select(2) ---------------------------------------------------------------- */

struct select_request {
	int nfds;
	uint64_t in[3][SELECT_SET_BITS / 64];  /* read, write, except: asked */
	uint64_t out[3][SELECT_SET_BITS / 64]; /* ready */
};

static int scan_select_request(void *arg, struct vfs_poll_watch *watch)
{
	static const unsigned masks[3] = {VFS_POLL_IN | VFS_POLL_HUP | VFS_POLL_ERR,
					  VFS_POLL_OUT | VFS_POLL_ERR, VFS_POLL_PRI};
	struct select_request *r = arg;
	void *table = vfs_current_files();
	int ready = 0;
	memset(r->out, 0, sizeof r->out);
	for (int fd = 0; fd < r->nfds; fd++) {
		uint64_t bit = 1ULL << (fd % 64);
		int word = fd / 64;
		if (!((r->in[0][word] | r->in[1][word] | r->in[2][word]) & bit))
			continue;
		struct vfs_file *file;
		if (!table || vfs_fd_get(table, fd, &file))
			return -EBADF;
		unsigned events = vfs_poll(file);
		vfs_poll_watch_file(watch, file);
		vfs_file_put(file);
		for (int set = 0; set < 3; set++) {
			if ((r->in[set][word] & bit) && (events & masks[set])) {
				r->out[set][word] |= bit;
				ready++;
			}
		}
	}
	return ready;
}

/* select's timeout {seconds, microseconds} in milliseconds (-1: for ever,
 * no timeout given), or -EINVAL for a negative one or microseconds outside
 * 0..999999.  Seconds beyond SELECT_MAX_SECONDS are as long as that, which
 * keeps the product in range (and is longer than any machine stays up). */
static int select_timeout_ms(const int64_t *user_timeout, int64_t *ms)
{
	int64_t timeout[2]; /* seconds, microseconds */
	*ms = -1;
	if (!user_timeout)
		return 0;
	if (copy_from_user(timeout, user_timeout, sizeof timeout))
		return -EFAULT;
	if (timeout[0] < 0 || timeout[1] < 0 || timeout[1] > 999999)
		return -EINVAL;
	int64_t seconds = timeout[0] < SELECT_MAX_SECONDS ? timeout[0] : SELECT_MAX_SECONDS;
	*ms = seconds * 1000 + timeout[1] / 1000;
	return 0;
}

static int copy_set_in(uint64_t *set, const void *user, size_t bytes)
{
	memset(set, 0, SELECT_SET_BITS / 8);
	return user && copy_from_user(set, user, bytes) ? -EFAULT : 0;
}

SYSCALL_DEFINE5(select, int, nfds, void *, user_read, void *, user_write, void *, user_except,
		int64_t *, user_timeout)
{
	void *user_sets[3] = {user_read, user_write, user_except};
	if (nfds < 0 || nfds > SELECT_SET_BITS)
		return -EINVAL;
	size_t bytes = ((size_t)nfds + 63) / 64 * 8;
	int64_t ms;
	int err = select_timeout_ms(user_timeout, &ms);
	if (err)
		return err;
	struct select_request *r = kzalloc(sizeof *r);
	if (!r)
		return -ENOMEM;
	long result = 0;
	r->nfds = nfds;
	for (int set = 0; set < 3 && !result; set++)
		result = copy_set_in(r->in[set], user_sets[set], bytes);
	if (!result)
		result = wait_ready(scan_select_request, r, deadline_after_ms(ms), ms != 0);
	for (int set = 0; set < 3 && result >= 0; set++)
		if (user_sets[set] && copy_to_user(user_sets[set], r->out[set], bytes))
			result = -EFAULT;
	kfree(r);
	return result;
}
