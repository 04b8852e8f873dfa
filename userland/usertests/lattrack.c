/*
 * Latency trackers from user space (uapi/lattrack.h): a tracker made with
 * ms_lattrack_create, fed with ms_lattrack_event, its records read and
 * polled on the descriptor; a full queue counts what it lost; the calls
 * refuse bad pointers, names, sizes, flags, descriptors and operations; and
 * the privileges hold (a user may not read a kernel tracker or another
 * user's, nor own more than LATTRACK_USER_OWN, nor feed a kernel tracker);
 * the syscall tracker's reports carry the user stack of the slow call.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/lattrack.h"
#include "usertests.h"

#define L_EPERM  1
#define L_EEXIST 17
#define L_EMFILE 24
#define USER_ID  1000

static long create(const char *name, uint64_t threshold_ns, uint32_t flags)
{
	struct lattrack_config config = {.threshold_ns = threshold_ns, .flags = flags};
	strncpy(config.name, name, sizeof config.name - 1);
	return ms_syscall3(__NR_ms_lattrack_create, (long)&config, 0, 0);
}

static long event(long fd, unsigned op, const void *key, unsigned length, unsigned id)
{
	return ms_syscall6(__NR_ms_lattrack_event, fd, op, (long)key, length, id, 0);
}

static long pair(long fd, uint64_t key, unsigned id)
{
	long error = event(fd, LATTRACK_OP_IN, &key, sizeof key, 0);
	return error ? error : event(fd, LATTRACK_OP_OUT, &key, sizeof key, id);
}

static int readable(long fd, int timeout_ms)
{
	struct pollfd p = {.fd = (int)fd, .events = POLLIN};
	return poll(&p, 1, timeout_ms) == 1 ? p.revents : 0;
}

/* Does a slow event come out of the descriptor as one record, with the
 * key, the out id, this thread and the flag, and wake poll()? */
void lattrack_records_reach_the_descriptor(void)
{
	long fd = create("ut-records", 0, 0);
	if (fd < 0) {
		t_fail("ms_lattrack_create: %ld", fd);
		return;
	}
	if (readable(fd, 0))
		t_fail("a new tracker's descriptor is readable");
	if (pair(fd, 42, 7))
		t_fail("event in/out of key 42 failed");
	if (!(readable(fd, 5000) & POLLIN))
		t_fail("poll() did not report the record");
	struct lattrack_record records[2];
	long n = read((int)fd, records, sizeof records);
	uint64_t key = 0;
	memcpy(&key, records[0].key, sizeof key);
	if (n != (long)sizeof records[0] || key != 42 || records[0].key_length != 8 ||
	    records[0].out_id != 7 || records[0].flag != LATTRACK_RECORD_NORMAL ||
	    records[0].tid != (uint32_t)ms_syscall3(__NR_gettid, 0, 0, 0) ||
	    records[0].end_ns < records[0].start_ns ||
	    records[0].delay_ns != records[0].end_ns - records[0].start_ns)
		t_fail("read %ld bytes: key %llu length %u id %u flag %u tid %u", n,
		       (unsigned long long)key, records[0].key_length, records[0].out_id,
		       records[0].flag, records[0].tid);
	uint64_t missing = 99;
	if (event(fd, LATTRACK_OP_OUT, &missing, sizeof missing, 0) != -L_ENOENT)
		t_fail("event_out of a key not in was not ENOENT");
	fcntl((int)fd, F_SETFL, O_NONBLOCK);
	if (read((int)fd, records, sizeof records) != -1)
		t_fail("an empty non-blocking descriptor did not refuse the read");
	char small[16];
	if (ms_syscall3(__NR_read, fd, (long)small, sizeof small) != -L_EINVAL)
		t_fail("a read shorter than a record was not EINVAL");
	close((int)fd);
}

/* When the reader is slow, are the records past the queue's size lost and
 * counted (in the next record queued), never blocking the tracker? */
void lattrack_overflow_is_counted(void)
{
	long fd = create("ut-overflow", 0, 0);
	if (fd < 0) {
		t_fail("ms_lattrack_create: %ld", fd);
		return;
	}
	for (unsigned i = 0; i < LATTRACK_RECORDS_QUEUED + 10; i++)
		if (pair(fd, i, 0))
			t_fail("pair %u failed", i);
	static struct lattrack_record records[LATTRACK_RECORDS_QUEUED + 10];
	fcntl((int)fd, F_SETFL, O_NONBLOCK);
	long n, total = 0; /* a read returns what one I/O chunk holds */
	while ((n = read((int)fd, records, sizeof records)) > 0)
		total += n;
	if (total != (long)(LATTRACK_RECORDS_QUEUED * sizeof records[0]))
		t_fail("read %ld bytes, expected the %d queued records", total,
		       LATTRACK_RECORDS_QUEUED);
	pair(fd, 1000, 0);
	n = read((int)fd, records, sizeof records);
	if (n != (long)sizeof records[0] || records[0].lost != 10)
		t_fail("after the overflow: %ld bytes, lost %u (expected 10)", n, records[0].lost);
	close((int)fd);
}

/* What if the calls get ridiculous pointers, names, sizes, flags,
 * descriptors and operations? */
void lattrack_refuses_bad_input(void)
{
	struct lattrack_config c = {.name = "ut-bad"};
	if (ms_syscall3(__NR_ms_lattrack_create, 0, 0, 0) != -L_EFAULT ||
	    ms_syscall3(__NR_ms_lattrack_create, (long)0xffffffff80000000UL, 0, 0) != -L_EFAULT)
		t_fail("a NULL or kernel config pointer was not EFAULT");
	c.reserved = 1;
	if (ms_syscall3(__NR_ms_lattrack_create, (long)&c, 0, 0) != -L_EINVAL)
		t_fail("reserved != 0 was not EINVAL");
	c.reserved = 0, c.flags = 0x80;
	if (ms_syscall3(__NR_ms_lattrack_create, (long)&c, 0, 0) != -L_EINVAL)
		t_fail("an unknown flag was not EINVAL");
	c.flags = 0, c.key_size = LATTRACK_UAPI_KEY_MAX + 1;
	if (ms_syscall3(__NR_ms_lattrack_create, (long)&c, 0, 0) != -L_EINVAL)
		t_fail("a key size past the maximum was not EINVAL");
	c.key_size = 0, c.max_events = LATTRACK_UAPI_EVENTS_MAX + 1;
	if (ms_syscall3(__NR_ms_lattrack_create, (long)&c, 0, 0) != -L_EINVAL)
		t_fail("max_events past the maximum was not EINVAL");
	c.max_events = 0;
	memset(c.name, 'a', sizeof c.name); /* no NUL */
	if (ms_syscall3(__NR_ms_lattrack_create, (long)&c, 0, 0) != -L_EINVAL)
		t_fail("a name without its NUL was not EINVAL");
	if (create("", 0, 0) != -L_EINVAL || create("a/b", 0, 0) != -L_EINVAL ||
	    create("a b", 0, 0) != -L_EINVAL)
		t_fail("an empty name or one with '/' or ' ' was not EINVAL");
	long fd = create("ut-bad", 0, 0);
	if (fd < 0) {
		t_fail("ms_lattrack_create: %ld", fd);
		return;
	}
	if (create("ut-bad", 0, 0) != -L_EEXIST)
		t_fail("creating a name twice was not EEXIST");
	long again = create("ut-bad", 0, LATTRACK_CREATE_OR_OPEN);
	if (again < 0)
		t_fail("LATTRACK_CREATE_OR_OPEN of one's own tracker: %ld", again);
	uint64_t key = 1;
	uint8_t big[LATTRACK_UAPI_KEY_MAX + 1] = {0};
	if (event(fd, 3, &key, 8, 0) != -L_EINVAL)
		t_fail("an unknown op was not EINVAL");
	if (event(fd, LATTRACK_OP_IN, &key, 0, 0) != -L_EINVAL ||
	    event(fd, LATTRACK_OP_IN, big, sizeof big, 0) != -L_EINVAL ||
	    event(fd, LATTRACK_OP_IN, big, 16, 0) != -L_EINVAL) /* past the key size, 8 */
		t_fail("a key of length 0, past the maximum or past the key size was not EINVAL");
	if (event(fd, LATTRACK_OP_IN, NULL, 8, 0) != -L_EFAULT ||
	    event(fd, LATTRACK_OP_IN, (void *)0xffffffff80000000UL, 8, 0) != -L_EFAULT)
		t_fail("a NULL or kernel key pointer was not EFAULT");
	int pipe_fds[2];
	pipe(pipe_fds);
	if (event(-1, LATTRACK_OP_IN, &key, 8, 0) != -L_EBADF ||
	    event(999, LATTRACK_OP_IN, &key, 8, 0) != -L_EBADF ||
	    event(pipe_fds[0], LATTRACK_OP_IN, &key, 8, 0) != -L_EBADF)
		t_fail("a bad descriptor or a pipe's was not EBADF");
	if (ms_syscall3(__NR_ms_lattrack_open, 0, 0, 0) != -L_EFAULT ||
	    ms_syscall3(__NR_ms_lattrack_open, (long)"ut-no-such", 0, 0) != -L_ENOENT ||
	    ms_syscall3(__NR_ms_lattrack_open, (long)"", 0, 0) != -L_EINVAL)
		t_fail("open of NULL, a missing or an empty name was not EFAULT, ENOENT, EINVAL");
	if (again >= 0 && pair(again, 5, 0))
		t_fail("the second owner's descriptor cannot feed the tracker");
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	close((int)fd);
	close((int)again);
}

/* When the last owner closes, does a reader see the end (POLLHUP, read 0),
 * and is the name free again? */
void lattrack_last_owner_ends_the_tracker(void)
{
	long fd = create("ut-end", 0, 0);
	long reader = ms_syscall3(__NR_ms_lattrack_open, (long)"ut-end", 0, 0);
	if (fd < 0 || reader < 0) {
		t_fail("create %ld, open %ld", fd, reader);
		return;
	}
	pair(fd, 3, 0);
	close((int)fd);
	struct lattrack_record record;
	if (read((int)reader, &record, sizeof record) != (long)sizeof record)
		t_fail("the record queued before the end was not read");
	if (!(readable(reader, 1000) & POLLHUP))
		t_fail("no POLLHUP once the tracker is gone");
	if (read((int)reader, &record, sizeof record) != 0)
		t_fail("a read after the end was not 0");
	uint64_t key = 4;
	if (event(reader, LATTRACK_OP_IN, &key, 8, 0) != -L_EINVAL)
		t_fail("feeding a tracker that is gone was not EINVAL");
	close((int)reader);
	long fresh = create("ut-end", 0, 0);
	if (fresh < 0)
		t_fail("the name was not free again: %ld", fresh);
	close((int)fresh);
}

static long kshell(const char *line)
{
	return ms_syscall3(__NR_ms_kshell, (long)line, 0, 0);
}

static void as_user(void *unused)
{
	(void)unused;
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0) {
		t_fail("becoming uid %d failed", USER_ID);
		_exit(1);
	}
	if (ms_syscall3(__NR_ms_lattrack_open, (long)"ut-kernel", 0, 0) != -L_EPERM)
		t_fail("uid %d opened a kernel tracker", USER_ID);
	if (ms_syscall3(__NR_ms_lattrack_open, (long)"ut-root", 0, 0) != -L_EPERM)
		t_fail("uid %d opened root's tracker", USER_ID);
	if (create("ut-root", 0, LATTRACK_CREATE_OR_OPEN) != -L_EEXIST)
		t_fail("uid %d opened root's tracker as its own", USER_ID);
	char name[16];
	for (int i = 0; i < LATTRACK_USER_OWN; i++) {
		snprintf(name, sizeof name, "ut-own%d", i);
		long fd = create(name, 0, 0);
		if (fd < 0)
			t_fail("uid %d could not create its tracker %d: %ld", USER_ID, i, fd);
		else if (pair(fd, 1, 0) || ms_syscall3(__NR_ms_lattrack_open, (long)name, 0, 0) < 0)
			t_fail("uid %d could not feed or open its own tracker", USER_ID);
	}
	if (create("ut-one-more", 0, 0) != -L_EMFILE)
		t_fail("uid %d owned more than %d trackers", USER_ID, LATTRACK_USER_OWN);
	_exit(t_failed() ? 1 : 0);
}

/* Who may read and feed which tracker? */
void lattrack_privileges_hold(void)
{
	kshell("lattrack remove ut-kernel");
	if (kshell("lattrack create ut-kernel wakeup 1000000") < 0) {
		t_fail("lattrack create ut-kernel failed");
		return;
	}
	long root = create("ut-root", 0, 0);
	int status = t_run_child(as_user, NULL);
	if (status != 0)
		t_fail("the unprivileged child: status %#x", status);
	long kernel = ms_syscall3(__NR_ms_lattrack_open, (long)"ut-kernel", 0, 0);
	uint64_t key = 1;
	if (kernel < 0)
		t_fail("root could not open the kernel tracker: %ld", kernel);
	else if (event(kernel, LATTRACK_OP_IN, &key, 8, 0) != -L_EPERM)
		t_fail("a kernel tracker was fed from user space");
	close((int)kernel);
	close((int)root);
	kshell("lattrack remove ut-kernel");
}

/* The frame the slow call is made from: its report must name it.  The
 * barrier after the call keeps it from being a tail call, so that its return
 * address lies inside this function. */
__attribute__((noinline)) static void sleep_in_known_frame(void)
{
	struct timespec request = {0, 5 * 1000 * 1000};
	nanosleep(&request, NULL);
	__asm__ volatile("" ::: "memory");
}

#define KNOWN_FRAME_BYTES 64 /* sleep_in_known_frame is shorter than this */

static int frame_in_known_function(const struct lattrack_record *r)
{
	uint64_t start = (uint64_t)(uintptr_t)&sleep_in_known_frame;
	for (unsigned i = 0; i < r->stack_count && i < LATTRACK_RECORD_STACK; i++)
		if (r->stack[i] > start && r->stack[i] < start + KNOWN_FRAME_BYTES)
			return (int)i;
	return -1;
}

static long kshell_output(const char *line, char *output, size_t size)
{
	uint64_t length = 0;
	long error = ms_syscall6(__NR_ms_kshell, (long)line, (long)output, (long)size - 1,
				 (long)&length, 0, 0);
	output[length < size ? length : size - 1] = '\0';
	return error;
}

/* Does a file hold the 8 bytes of value (little-endian, as CTF writes it)?
 * Read in chunks that overlap by 7 bytes. */
static int file_holds(const char *path, uint64_t value)
{
	static unsigned char data[64 * 1024];
	int fd = open(path, O_RDONLY), held = 0;
	if (fd < 0)
		return 0;
	long kept = 0, length;
	while (!held && (length = read(fd, data + kept, sizeof data - (size_t)kept)) > 0) {
		length += kept;
		for (long i = 0; i + 8 <= length && !held; i++)
			held = !memcmp(data + i, &value, 8);
		kept = length < 7 ? length : 7;
		memmove(data, data + length - kept, (size_t)kept);
	}
	close(fd);
	return held;
}

static int snapshot_exists(int n)
{
	char path[64];
	snprintf(path, sizeof path, "/tmp/ut-snap-%d/metadata", n);
	struct stat st;
	return stat(path, &st) == 0;
}

/* Does a snapshot /tmp/ut-snap-N after the first *done ones hold the frame
 * in a stream file?  Snapshot N is whole once N + 1 exists (the next session
 * starts after it is written): those are counted in *done and not read
 * again. */
static int snapshot_holds(uint64_t frame, int *done)
{
	char path[64];
	if (*done == 0 && !snapshot_exists(1)) { /* numbers going on from earlier snapshots */
		int first = 2;
		while (first < 256 && !snapshot_exists(first))
			first++;
		if (first < 256)
			*done = first - 1;
	}
	for (int n = *done + 1; snapshot_exists(n); n++) {
		for (int cpu = 0; cpu < 8; cpu++) {
			snprintf(path, sizeof path, "/tmp/ut-snap-%d/stream_%d", n, cpu);
			if (file_holds(path, frame))
				return 1;
		}
		if (snapshot_exists(n + 1))
			*done = n;
	}
	return 0;
}

/* A slow nanosleep made from a known function: the syscall tracker's record
 * carries the user stack, one of whose frames lies in that function,
 * `lattrack show` prints that frame's address, and the flight recorder's
 * snapshot of the slow call holds it (a user_stack record). */
void lattrack_syscall_report_has_the_user_stack(void)
{
	if (kshell("lattrack create ut-stack syscall:nanosleep 3000") != 0) {
		t_fail("lattrack create ut-stack failed");
		return;
	}
	if (kshell("lattrack snapshot on /tmp/ut-snap") != 0)
		t_fail("lattrack snapshot on failed");
	long reader = ms_syscall3(__NR_ms_lattrack_open, (long)"ut-stack", 0, 0);
	if (reader < 0) {
		t_fail("open ut-stack: %ld", reader);
		kshell("lattrack remove ut-stack");
		return;
	}
	sleep_in_known_frame();
	struct lattrack_record record;
	int found = -1;
	while (found < 0 && readable(reader, 10000) & POLLIN &&
	       read((int)reader, &record, sizeof record) == (long)sizeof record)
		if (record.tid == (uint32_t)getpid() && record.stack_count)
			found = frame_in_known_function(&record);
	if (found < 0)
		t_fail("no record of this thread with a frame in sleep_in_known_frame");
	else if (record.stack_flags & LATTRACK_STACK_KERNEL)
		t_fail("a user stack was marked as kernel addresses");
	static char output[4096];
	char frame[40];
	if (found >= 0) {
		snprintf(frame, sizeof frame, "0x%016llx", (unsigned long long)record.stack[found]);
		if (kshell_output("lattrack show ut-stack", output, sizeof output) != 0 ||
		    !strstr(output, frame) || !strstr(output, "program=usertests"))
			t_fail("lattrack show did not print %s of usertests:\n%s", frame, output);
	}
	/* The snapshot is written by a thread soon after.  A record that falls
	 * between two sessions is lost, so the slow call is made again from the
	 * same place (the same return address) now and then; the rounds only
	 * guard against a hang. */
	int held = 0, done = 0;
	struct timespec tick = {0, 1000 * 1000};
	for (int round = 0; found >= 0 && !held && round < 20000;
	     round++) { /* ~20 s: a hang guard */
		nanosleep(&tick, NULL);
		held = snapshot_holds(record.stack[found], &done);
		if (!held && round % 40 == 39)
			sleep_in_known_frame();
	}
	if (found >= 0 && !held)
		t_fail("no snapshot holds the frame 0x%llx",
		       (unsigned long long)record.stack[found]);
	if (kshell("lattrack snapshot off") != 0)
		t_fail("lattrack snapshot off failed");
	close((int)reader);
	if (kshell("lattrack remove ut-stack") != 0)
		t_fail("lattrack remove ut-stack failed");
}
