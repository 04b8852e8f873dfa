/*
 * The kernel memory execve reads programs into.  A program is read whole into
 * the kernel heap (up to the VFS's 64 MiB) and freed once its segments are
 * copied; charged to nobody, the images of many processes of one user exec'ing
 * large files at once took every frame: the pages other processes had been
 * promised and the kernel's own allocations.  So an image is
 *
 *   - promised as process pages are (proc_promise_pages): it never takes a
 *     frame promised to a process, and when the promise cannot be made the
 *     exec is -ENOMEM;
 *   - for a caller whose effective uid is not 0, counted against the users'
 *     share of images in flight (PROGRAM_IMAGES_USER_MAX bytes, all users
 *     together): an exec that does not fit waits, in order of arrival, until
 *     earlier ones are done with theirs, so a large program is not passed over
 *     for ever by small ones; a signal that ends or stops the process ends the
 *     wait with -EINTR.  The share holds the largest program the VFS reads,
 *     so any one of them is run once the others are done.
 *
 * Root's images are not held to the share: users exec'ing at once never keep
 * an administrator from running a program.  Each image carries a small
 * header saying what it holds, so the free gives back exactly that.
 */
#include "lib/errno.h"
#include "panic/panic.h"
#include "proc/internal.h"
#include "time/time.h"
#include "uapi/cred.h"

#define PROGRAM_IMAGES_USER_MAX (64UL << 20) /* bytes, every user but root together */
#define IMAGE_MAGIC             0x50524f47u  /* "PROG" */
#define SIGNAL_CHECK_NS         (100 * NSEC_PER_MSEC)
#define KMALLOC_OVERHEAD        64          /* the heap's own header before a large block */
#define IMAGE_BYTES_MAX         (1UL << 32) /* far past any file the VFS reads whole */

struct image_header {
	uint32_t magic;
	bool in_users_share;
	uint64_t bytes;       /* the program's size, as counted against the share */
	uint64_t promised;    /* pages */
	uint64_t reserved[5]; /* keeps the image 64-byte aligned */
};

_Static_assert(sizeof(struct image_header) == 64, "image header");

/* An exec of a user waiting for room in the share, on its thread's stack. */
struct image_waiter {
	struct sched_link link; /* first: the queue's links are its waiters */
	uint64_t bytes;
	volatile bool granted; /* the share was taken for it */
};

_Static_assert(offsetof(struct image_waiter, link) == 0, "a queue link is its waiter");

static struct spinlock share_lock = SPINLOCK_INIT("proc.program_images");
static uint64_t users_bytes; /* of the share, in flight */
static struct sched_link waiters = {&waiters, &waiters};
static unsigned waiting;
static struct waitq granted_queue = WAITQ_INIT(granted_queue, "proc.program_images");

static void unlink_waiter(struct image_waiter *w)
{
	w->link.prev->next = w->link.next;
	w->link.next->prev = w->link.prev;
	__atomic_fetch_sub(&waiting, 1, __ATOMIC_RELAXED);
}

/* Takes the share for the waiters at the head of the queue while they fit:
 * in order, so none is overtaken.  Lock held. */
static void grant_in_order_locked(void)
{
	while (waiters.next != &waiters) {
		struct image_waiter *w = (struct image_waiter *)waiters.next; /* link is first */
		if (w->bytes > PROGRAM_IMAGES_USER_MAX - users_bytes)
			return;
		users_bytes += w->bytes;
		unlink_waiter(w);
		__atomic_store_n(&w->granted, true, __ATOMIC_RELEASE);
	}
}

static bool granted_or_signalled(void *arg)
{
	const struct image_waiter *w = arg;
	return __atomic_load_n(&w->granted, __ATOMIC_ACQUIRE) || proc_signal_pending();
}

/* Queues w and sleeps until the share is taken for it.  Returns 0, or -EINTR
 * (it left the queue; the ones behind it may fit now). */
static int wait_for_share(struct image_waiter *w)
{
	while (!granted_or_signalled(w))
		waitq_wait_timeout(&granted_queue, granted_or_signalled, w, SIGNAL_CHECK_NS);
	uint64_t irq = spin_lock_irqsave(&share_lock);
	bool granted = w->granted;
	if (!granted) {
		unlink_waiter(w);
		grant_in_order_locked();
	}
	spin_unlock_irqrestore(&share_lock, irq);
	if (!granted)
		waitq_wake_all(&granted_queue);
	return granted ? 0 : -EINTR;
}

/* Counts bytes against the users' share, waiting for room behind the execs
 * already waiting.  Returns 0, -ENOMEM (larger than the share) or -EINTR. */
static int take_users_share(uint64_t bytes)
{
	if (bytes > PROGRAM_IMAGES_USER_MAX)
		return -ENOMEM;
	struct image_waiter w = {.bytes = bytes, .granted = false};
	uint64_t irq = spin_lock_irqsave(&share_lock);
	bool fits = waiters.next == &waiters && bytes <= PROGRAM_IMAGES_USER_MAX - users_bytes;
	if (fits) {
		users_bytes += bytes;
	} else {
		w.link.prev = waiters.prev;
		w.link.next = &waiters;
		waiters.prev->next = &w.link;
		waiters.prev = &w.link;
		__atomic_fetch_add(&waiting, 1, __ATOMIC_RELAXED);
	}
	spin_unlock_irqrestore(&share_lock, irq);
	return fits ? 0 : wait_for_share(&w);
}

static void give_back_users_share(uint64_t bytes)
{
	uint64_t irq = spin_lock_irqsave(&share_lock);
	users_bytes -= bytes;
	grant_in_order_locked();
	spin_unlock_irqrestore(&share_lock, irq);
	waitq_wake_all(&granted_queue);
}

/* The frames a block of bytes (after the image header) takes from the heap. */
static uint64_t pages_of(uint64_t bytes)
{
	return (bytes + sizeof(struct image_header) + KMALLOC_OVERHEAD + PAGE_SIZE - 1) / PAGE_SIZE;
}

static void give_back(const struct image_header *h)
{
	proc_release_pages(h->promised);
	if (h->in_users_share)
		give_back_users_share(h->bytes);
}

/* Takes the share (a user's image) and the promise for h.  Returns 0,
 * -ENOMEM or -EINTR, holding nothing on an error. */
static int take(struct image_header *h)
{
	int error = h->in_users_share ? take_users_share(h->bytes) : 0;
	if (error)
		return error;
	error = proc_promise_pages(h->promised);
	if (error && h->in_users_share)
		give_back_users_share(h->bytes);
	return error;
}

void *proc_program_alloc(size_t size, int *error)
{
	struct image_header h = {.magic = IMAGE_MAGIC,
				 .in_users_share = proc_current_euid() != ROOT_UID,
				 .bytes = size,
				 .promised = pages_of(size)};
	*error = size > IMAGE_BYTES_MAX ? -ENOMEM : take(&h);
	if (*error)
		return NULL;
	struct image_header *block = kmalloc(sizeof h + size);
	if (!block) {
		give_back(&h);
		*error = -ENOMEM;
		return NULL;
	}
	*block = h;
	return block + 1;
}

void proc_free_program(void *image, size_t size)
{
	(void)size;
	if (!image)
		return;
	struct image_header *h = (struct image_header *)image - 1;
	if (h->magic != IMAGE_MAGIC)
		panic("proc: %p is not a program image", image);
	h->magic = 0;
	give_back(h);
	kfree(h);
}

unsigned proc_program_waiters(void)
{
	return __atomic_load_n(&waiting, __ATOMIC_RELAXED);
}
