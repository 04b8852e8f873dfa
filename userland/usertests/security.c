/*
 * The holes a hostile process found in the kernel's shared pages, each
 * tested the way it was attacked (docs/SECURITY.md): the accounting results
 * pages and the telemetry rings are the kernel's regions of the process, so
 * they can be neither mapped over, nor unmapped, nor written.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/acct.h"
#include "uapi/cred.h"
#include "uapi/ipc.h"
#include "uapi/scope.h"
#include "uapi/telemetry.h"
#include "uapi/time.h"
#include "usertests.h"

#define PAGE 4096UL

static long raw_mmap_fixed(uint64_t address, uint64_t length)
{
	return ms_syscall6(__NR_mmap, (long)address, (long)length, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
}

static long raw_munmap(uint64_t address, uint64_t length)
{
	return ms_syscall3(__NR_munmap, (long)address, (long)length, 0);
}

#define L_EPERM 1
#define L_ESRCH 3

static long raw_mprotect(uint64_t address, uint64_t length, int protection)
{
	return ms_syscall3(__NR_mprotect, (long)address, (long)length, protection);
}

/* Neither mapped over (alone, or inside a larger request), nor unmapped,
 * nor made writable. */
static void expect_kernel_region(const char *what, uint64_t address, uint64_t length)
{
	long result = raw_mmap_fixed(address, length);
	if (result != -L_EINVAL)
		t_fail("mmap(MAP_FIXED) over %s: %ld, expected -EINVAL", what, result);
	result = raw_mmap_fixed(address - PAGE, length + 2 * PAGE);
	if (result != -L_EINVAL)
		t_fail("mmap(MAP_FIXED) around %s: %ld, expected -EINVAL", what, result);
	result = raw_munmap(address, length);
	if (result != -L_EINVAL)
		t_fail("munmap of %s: %ld, expected -EINVAL", what, result);
	result = raw_mprotect(address, length, PROT_READ | PROT_WRITE);
	if (result != -L_EPERM)
		t_fail("mprotect(PROT_WRITE) of %s: %ld, expected -EPERM", what, result);
}

static void write_own_results_page(void *unused)
{
	(void)unused;
	long page = ms_syscall3(__NR_ms_acct_init, 0, 0, 0);
	if (page > 0)
		((volatile struct acct_page *)page)->results[0].subsystem_count = 5000;
	_exit(page > 0 ? 0 : 2);
}

/* Hole A: mmap(MAP_FIXED) over the results page made it writable; exit and
 * the next ms_acct_init then freed its frames twice. */
void hole_a_results_page_is_a_kernel_region(void)
{
	long page = ms_syscall3(__NR_ms_acct_init, 0, 0, 0);
	if (page < 0) {
		t_fail("ms_acct_init: %ld", page);
		return;
	}
	expect_kernel_region("the results pages", (uint64_t)page, ACCT_PAGES * PAGE);
	int fds[2];
	if (pipe(fds) == 0) { /* nor written by the kernel on the process's behalf */
		write(fds[1], "12345678", 8);
		long result = ms_syscall3(__NR_read, fds[0], page, 8);
		if (result != -L_EFAULT)
			t_fail("read() into the results page: %ld, expected -EFAULT", result);
		close(fds[0]);
		close(fds[1]);
	}
	if (((volatile struct acct_page *)page)->magic != ACCT_PAGE_MAGIC)
		t_fail("the results page lost its magic");
	t_expect_signal("a write to the results page", write_own_results_page, NULL, SIGSEGV);
	if (ms_syscall3(__NR_ms_acct_init, 0, 0, 0) != page)
		t_fail("ms_acct_init again did not give the same page");
}

/* Hole E: a monitor that mapped over its ring with MAP_FIXED freed the
 * ring's pages while the kernel went on writing them. */
void hole_e_telemetry_ring_is_a_kernel_region(void)
{
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0) {
		t_fail("ms_ipc_create/ms_scope_attach: %ld", channel);
		return;
	}
	struct tel_map map;
	long result = ms_syscall3(__NR_ms_tel_map, channel, (long)&map, 0);
	if (result != 0 || map.cpus == 0) {
		t_fail("ms_tel_map: %ld", result);
		return;
	}
	expect_kernel_region("a ring's data", map.base + map.data_offset, map.size);
	expect_kernel_region("a ring's position", map.base + map.position_offset, PAGE);
	expect_kernel_region("a whole ring", map.base, map.stride);
	if (ms_syscall3(__NR_ms_tel_map, channel, (long)&map, 0) != 0)
		t_fail("ms_tel_map again failed");
	volatile const uint64_t *data = (const uint64_t *)(map.base + map.data_offset);
	(void)data[0]; /* still mapped: a fault would kill the test */
}

/* ---- Users and privileges: the attack suite ---------------------------------
 * The same attacks twice: from a process that became the unprivileged user
 * (uid 1000), where each must be refused with EPERM, and from root, where
 * each must go through.  The monitor channel a non-consumer tries to read
 * is one the test process attached as root and let go again. */

#define USER_ID 1000

static long kshell(const char *line)
{
	return ms_syscall3(__NR_ms_kshell, (long)line, 0, 0);
}

static long scope_ctl(uint32_t op, const char *name)
{
	struct scope_ctl c = {.op = op};
	strncpy(c.name, name, sizeof c.name - 1);
	return ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0);
}

static long load_and_unload_an_aspect(void)
{
	long result = scope_ctl(SCOPE_LOAD, "/aspects/callcount.o");
	if (result == 0 && scope_ctl(SCOPE_UNLOAD, "callcount") != 0)
		t_fail("SCOPE_UNLOAD callcount after loading it failed");
	return result;
}

static long become_the_monitor(void)
{
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long result = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (endpoint >= 0)
		close((int)endpoint);
	return result;
}

static long raw_socket(void)
{
	long fd = ms_syscall3(__NR_socket, 2 /* AF_INET */, 3 /* SOCK_RAW */, 1 /* ICMP */);
	if (fd >= 0)
		close((int)fd);
	return fd;
}

static long reserve_monitor_cpus(void)
{
	long result = ms_syscall3(__NR_ms_setmonitor, 0, 1, 0);
	if (result == 0)
		ms_syscall3(__NR_ms_setmonitor, 0, 0, 0);
	return result;
}

static long read_channel(long channel)
{
	static uint8_t buffer[4096];
	return ms_syscall6(__NR_ms_tel_read, channel, 0, (long)buffer, sizeof buffer, 0, 0);
}

/* Pins another user's process to CPU 0 (harmless when root may). */
static long pin_another(pid_t other)
{
	static uint64_t cpu0 = 1;
	return ms_syscall3(__NR_sched_setaffinity, other, sizeof cpu0, (long)&cpu0);
}

/* Each attack as the caller is; expected: refused (EPERM) or done (>= 0). */
static void run_attacks(bool expect_refused, long channel, pid_t other)
{
	struct {
		const char *what;
		long result;
	} attacks[] = {
	    {"kill(1, 0): signal init", ms_syscall3(__NR_kill, 1, 0, 0)},
	    {"kill(other, 0): signal another user's process", ms_syscall3(__NR_kill, other, 0, 0)},
	    {"ms_kshell: the kernel console call", kshell("")},
	    {"SCOPE_LOAD: weave an aspect into the kernel", load_and_unload_an_aspect()},
	    {"ms_scope_attach: receive every process's events", become_the_monitor()},
	    {"ms_tel_read: read another's telemetry channel", read_channel(channel)},
	    {"ms_setmonitor: reserve the monitor CPUs", reserve_monitor_cpus()},
	    {"sched_setaffinity(other): pin another user's process", pin_another(other)},
	    {"socket(SOCK_RAW): device control", raw_socket()},
	};
	for (size_t i = 0; i < sizeof attacks / sizeof attacks[0]; i++) {
		long result = attacks[i].result;
		if (expect_refused && result != -L_EPERM)
			t_fail("%s as uid %d: %ld, expected -EPERM", attacks[i].what, USER_ID,
			       result);
		if (!expect_refused && result < 0)
			t_fail("%s as root: %ld, expected success", attacks[i].what, result);
	}
	/* Refused to every user, never done even by root in a test. */
	if (expect_refused && kshell("poweroff") != -L_EPERM)
		t_fail("ms_kshell(poweroff) as uid %d was not refused", USER_ID);
	if (expect_refused && scope_ctl(SCOPE_UNLINK, "rscfl") != -L_EPERM)
		t_fail("SCOPE_UNLINK rscfl as uid %d was not refused", USER_ID);
}

/* Attaches as the monitor and ends with the channel's id as its status. */
static void attach_and_end(void *unused)
{
	(void)unused;
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	_exit(channel >= 0 && channel < 255 ? (int)channel : 255);
}

/* The monitor's channel: attached by a root child that then ended (its
 * endpoint closed, its mappings of the rings gone), so that the attack may
 * attach again. */
static long attach_for_test(void)
{
	int status = t_run_child(attach_and_end, NULL);
	if (status < 0 || !WIFEXITED(status) || WEXITSTATUS(status) == 255) {
		t_fail("attaching a monitor as root: status %#x", status);
		return -1;
	}
	return WEXITSTATUS(status);
}

struct attack_setup {
	long channel;
	pid_t other;
};

static void attack_as_user(void *argument)
{
	const struct attack_setup *setup = argument;
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0 || getuid() != USER_ID ||
	    geteuid() != USER_ID) {
		t_fail("becoming uid %d failed", USER_ID);
		_exit(1);
	}
	run_attacks(true, setup->channel, setup->other);
	_exit(t_failed() ? 1 : 0);
}

static void attack_as_root(void *argument)
{
	const struct attack_setup *setup = argument;
	run_attacks(false, setup->channel, setup->other);
	_exit(t_failed() ? 1 : 0);
}

static void sleep_until_killed(void *unused)
{
	(void)unused;
	for (;;)
		t_sleep_ms(1000);
}

static void run_attack_child(void (*body)(void *), bool as_user)
{
	struct attack_setup setup = {attach_for_test(), fork()};
	if (setup.other == 0)
		sleep_until_killed(NULL);
	int status = t_run_child(body, &setup);
	if (status != 0)
		t_fail("the attacks as %s: status %#x (see above)", as_user ? "a user" : "root",
		       status);
	if (setup.other > 0) {
		kill(setup.other, SIGKILL);
		waitpid(setup.other, NULL, 0);
	}
}

void attacks_are_refused_to_an_unprivileged_user(void)
{
	run_attack_child(attack_as_user, true);
}

void attacks_succeed_as_root(void)
{
	run_attack_child(attack_as_root, false);
}

/* ---- Pinning a process: whose it is ------------------------------------------ */

static long pin(pid_t pid, uint64_t mask)
{
	return ms_syscall3(__NR_sched_setaffinity, pid, sizeof mask, (long)&mask);
}

static uint64_t affinity_of(pid_t pid)
{
	uint64_t mask = 0;
	return ms_syscall3(__NR_sched_getaffinity, pid, sizeof mask, (long)&mask) < 0 ? 0 : mask;
}

/* A reaped child's pid: no process has it (pids are not reused at once). */
static pid_t a_missing_pid(void)
{
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	if (child > 0)
		waitpid(child, NULL, 0);
	return child;
}

/* As uid 1000: pins itself and its own child, not init (root's). */
static void pin_as_user(void *unused)
{
	(void)unused;
	int gate[2];
	if (pipe(gate) < 0 || setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		_exit(2);
	uint64_t init_mask = affinity_of(1);
	pid_t child = fork();
	if (child == 0) {
		char byte;
		close(gate[1]);
		read(gate[0], &byte, 1); /* end of file when the parent closes the gate */
		_exit(0);
	}
	close(gate[0]);
	long own = child > 0 ? pin(child, 1) : -1;
	if (own != 0 || affinity_of(child) != 1)
		t_fail("pinning its own child to CPU 0: %ld, mask %#lx", own,
		       (unsigned long)affinity_of(child));
	if (pin(0, 1) != 0 || pin(0, ~0ul) != 0)
		t_fail("a user could not pin itself");
	long result = pin(1, 1);
	if (result != -L_EPERM || affinity_of(1) != init_mask)
		t_fail("pinning init as uid %d: %ld, mask %#lx (was %#lx), expected -EPERM",
		       USER_ID, result, (unsigned long)affinity_of(1), (unsigned long)init_mask);
	pid_t missing = a_missing_pid();
	if (missing > 0 && (result = pin(missing, 1)) != -L_ESRCH)
		t_fail("pinning a pid no process has: %ld, expected -ESRCH", result);
	if ((result = pin(0, 0)) != -L_EINVAL)
		t_fail("pinning to no CPU: %ld, expected -EINVAL", result);
	close(gate[1]);
	if (child > 0)
		waitpid(child, NULL, 0);
	_exit(t_failed() ? 1 : 0);
}

/* sched_setaffinity's rules for a user: its own processes (itself, its
 * child) yes; another user's (init, root's) -EPERM and left as it was; a
 * pid nobody has -ESRCH; no CPU -EINVAL.  The check and the pinning are one
 * hold of the process table's lock (proc_set_affinity_checked). */
void a_user_pins_only_its_own_processes(void)
{
	int status = t_run_child(pin_as_user, NULL);
	if (status != 0)
		t_fail("pinning as uid %d: status %#x (see above)", USER_ID, status);
}

/* ---- Endpoints: a user holds a bounded share of the kernel's memory ----------- */

struct fill_report {
	long made;   /* things the user made */
	long result; /* what its last attempt returned */
};

/* One endpoint of the largest capacity: its descriptor or the error. */
static long make_endpoint(void)
{
	return ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
}

/* As uid 1000: makes things with make (an endpoint, a pipe) until one is
 * refused, reports how many through report_fd, then (gate_fd >= 0) holds
 * them until the gate closes. */
static void fill_as_user(int report_fd, int gate_fd, long (*make)(void))
{
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		_exit(1);
	struct fill_report report = {0, 0};
	while (report.made < 1000) {
		report.result = make();
		if (report.result < 0)
			break;
		report.made++;
	}
	write(report_fd, &report, sizeof report);
	char c;
	if (gate_fd >= 0)
		read(gate_fd, &c, 1); /* end of file when the test closes the gate */
	_exit(0);
}

/* Forks a process of uid 1000 that makes things with make (fill_as_user)
 * and returns its report; *pid is the process. */
static struct fill_report filled_in_child(const int gate[2], bool hold, long (*make)(void),
					  pid_t *pid)
{
	struct fill_report report = {-1, 0};
	int fds[2];
	if (pipe(fds) < 0)
		return report;
	fflush(stdout);
	*pid = fork();
	if (*pid == 0) {
		close(fds[0]);
		close(gate[1]);
		fill_as_user(fds[1], hold ? gate[0] : -1, make);
	}
	close(fds[1]);
	if (*pid < 0 || read(fds[0], &report, sizeof report) != sizeof report)
		report.made = -1;
	close(fds[0]);
	return report;
}

/* Fills uid 1000's share with make (what: its name) in a process that holds
 * it (*holder), and checks that it got a few dozen, then refusal, and that
 * another process of the user (*second) then makes none.  Returns how many
 * the first made. */
static long fill_share(const int gate[2], long (*make)(void), const char *what, long refusal,
		       pid_t *holder, pid_t *second)
{
	struct fill_report first = filled_in_child(gate, true, make, holder);
	if (first.made < 1 || first.result != refusal || first.made >= 100)
		t_fail("uid %d made %ld %s, then %ld: expected a few dozen, then %ld", USER_ID,
		       first.made, what, first.result, refusal);
	struct fill_report more = filled_in_child(gate, false, make, second);
	if (more.made != 0 || more.result != refusal)
		t_fail("another process of uid %d made %ld %s more, then %ld: expected none (%ld)",
		       USER_ID, more.made, what, more.result, refusal);
	return first.made;
}

/* Before: ms_ipc_create took some 23 KiB of kernel memory per endpoint for
 * anyone, 256 per process, so one user's processes could take every frame
 * (and with them the pages others were promised).  Now a user other than
 * root holds USER_KMEM_BYTES_MAX of endpoints in all its processes, gets it
 * back as they are freed, and root is not held to it. */
void a_users_endpoints_are_bounded(void)
{
	int gate[2];
	if (pipe(gate) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	pid_t holder, second, third;
	long made = fill_share(gate, make_endpoint, "endpoints", -L_ENOMEM, &holder, &second);
	long root = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	if (root < 0)
		t_fail("root cannot make an endpoint while uid %d holds its share: %ld", USER_ID,
		       root);
	else
		close((int)root);
	close(gate[1]);
	waitpid(holder, NULL, 0);
	waitpid(second, NULL, 0);
	struct fill_report again = filled_in_child(gate, false, make_endpoint, &third);
	if (again.made != made)
		t_fail("once the holder ended, uid %d made %ld endpoints, expected %ld again",
		       USER_ID, again.made, made);
	waitpid(third, NULL, 0);
	close(gate[0]);
	t_note("uid %d made %ld endpoints of capacity %d before -ENOMEM", USER_ID, made,
	       IPC_QUEUE_MAX);
}

/* ---- Pipes: their rings count against the same share ------------------------- */

/* One pipe: 0 or the negated errno.  Its descriptors stay open. */
static long make_pipe(void)
{
	int fds[2];
	return pipe(fds) < 0 ? -errno : 0;
}

/* Before: a pipe's 16 KiB ring was kernel memory anyone took, 128 pipes per
 * process, so a user's processes held some 110 MiB of kernel heap.  Now a
 * user other than root holds USER_KMEM_BYTES_MAX of pipes and endpoints
 * together (-ENFILE past it), gets it back as they are freed, and root is
 * not held to it. */
void a_users_pipes_are_bounded(void)
{
	int gate[2];
	if (pipe(gate) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	pid_t holder, second, third, fourth;
	long made = fill_share(gate, make_pipe, "pipes", -L_ENFILE, &holder, &second);
	struct fill_report endpoints = filled_in_child(gate, false, make_endpoint, &third);
	if (endpoints.made != 0 || endpoints.result != -L_ENOMEM)
		t_fail("uid %d made %ld endpoints while its pipes held its share, then %ld: "
		       "expected none (-ENOMEM)",
		       USER_ID, endpoints.made, endpoints.result);
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("root cannot make a pipe while uid %d holds its share: %s", USER_ID,
		       strerror(errno));
	} else {
		close(fds[0]);
		close(fds[1]);
	}
	close(gate[1]);
	waitpid(holder, NULL, 0);
	waitpid(second, NULL, 0);
	waitpid(third, NULL, 0);
	struct fill_report again = filled_in_child(gate, false, make_pipe, &fourth);
	if (again.made != made)
		t_fail("once the holder ended, uid %d made %ld pipes, expected %ld again", USER_ID,
		       again.made, made);
	waitpid(fourth, NULL, 0);
	close(gate[0]);
	t_note("uid %d made %ld pipes before -ENFILE", USER_ID, made);
}

/* ---- Accounting: a user holds a bounded share of the results pages ----------- */

/* Forks a process of uid that calls ms_acct_init, reports its result and
 * holds its results page until the gate closes; returns the result (or
 * -1000 when the child could not report) and the child in *pid. */
static long results_page_in_child(const int gate[2], uint32_t uid, pid_t *pid)
{
	long result = -1000;
	int fds[2];
	if (pipe(fds) < 0)
		return result;
	fflush(stdout);
	*pid = fork();
	if (*pid == 0) {
		close(fds[0]);
		close(gate[1]);
		if (setgid(uid) < 0 || setuid(uid) < 0)
			_exit(1);
		result = ms_syscall3(__NR_ms_acct_init, 0, 0, 0);
		write(fds[1], &result, sizeof result);
		char c;
		read(gate[0], &c, 1); /* end of file when the test closes the gate */
		_exit(0);
	}
	close(fds[1]);
	if (*pid < 0 || read(fds[0], &result, sizeof result) != sizeof result)
		result = -1000;
	close(fds[0]);
	return result;
}

/* Starts processes of uid holding results pages until one is refused, at
 * most max; their pids go to pids[], the count to *started.  Returns how
 * many got a page and the refusal in *refusal. */
static int fill_results_pages(const int gate[2], uint32_t uid, pid_t *pids, int max, int *started,
			      long *refusal)
{
	int made = 0;
	*refusal = 0;
	for (*started = 0; *started < max;) {
		long result = results_page_in_child(gate, uid, &pids[*started]);
		if (pids[*started] > 0)
			(*started)++;
		if (result < 0) {
			*refusal = result;
			break;
		}
		made++;
	}
	return made;
}

/* Before: the accounting table's ACCT_MAX_THREADS entries went to whoever
 * asked first, so one user's processes took them all and left root and
 * every other user -ENOSPC until they ended.  Now a user other than root
 * holds at most ACCT_USER_THREADS, the last ACCT_ROOT_RESERVED are root's,
 * and the entries of processes that ended go back when one is wanted. */
void a_users_results_pages_are_bounded(void)
{
	enum { MAX = ACCT_MAX_THREADS + 2 };
	int gate[2];
	pid_t pids[MAX + 2];
	int started = 0, others = 0;
	long refusal, other_refusal;
	if (pipe(gate) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	int made = fill_results_pages(gate, USER_ID, pids, MAX, &started, &refusal);
	if (made < 1 || made > ACCT_USER_THREADS || refusal != -L_ENOSPC)
		t_fail("uid %d's processes got %d results pages, then %ld: expected at most %d, "
		       "then -ENOSPC",
		       USER_ID, made, refusal, ACCT_USER_THREADS);
	int other =
	    fill_results_pages(gate, USER_ID + 1, pids + started, 1, &others, &other_refusal);
	if (other != 1)
		t_fail("uid %d got no results page while uid %d held its share: %ld", USER_ID + 1,
		       USER_ID, other_refusal);
	pid_t root_child;
	long root = results_page_in_child(gate, ROOT_UID, &root_child);
	if (root < 0)
		t_fail("root got no results page while uid %d held its share: %ld", USER_ID, root);
	close(gate[1]);
	for (int i = 0; i < started + others; i++)
		waitpid(pids[i], NULL, 0);
	if (root_child > 0)
		waitpid(root_child, NULL, 0);
	close(gate[0]);
	if (pipe(gate) < 0)
		return;
	int again = fill_results_pages(gate, USER_ID, pids, MAX, &started, &refusal);
	if (again != made)
		t_fail("once its processes ended, uid %d got %d results pages, expected %d again",
		       USER_ID, again, made);
	close(gate[1]);
	for (int i = 0; i < started; i++)
		waitpid(pids[i], NULL, 0);
	close(gate[0]);
	t_note("uid %d's processes got %d results pages before -ENOSPC", USER_ID, made);
}

/* ---- What anyone reads of the aspects: no kernel address ---------------------- */

/* SCOPE_STATS of aspect name into text (size bytes, NUL-terminated). */
static long aspect_stats_text(const char *name, char *text, size_t size)
{
	struct scope_ctl c = {.op = SCOPE_STATS, .buffer = text, .length = size - 1};
	strncpy(c.name, name, sizeof c.name - 1);
	memset(text, 0, size);
	return ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0);
}

static void stats_as_user(void *unused)
{
	(void)unused;
	char text[1024];
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		_exit(1);
	long n = aspect_stats_text("scribbler", text, sizeof text);
	if (n <= 0 || !strstr(text, "last_failure=") || strstr(text, "0xffff") ||
	    strstr(text, "0xFFFF"))
		t_fail("scribbler's statistics as uid %d (%ld): %s", USER_ID, n, text);
	_exit(t_failed() ? 1 : 0);
}

/* Before: the reason an aspect was unlinked for, which any process reads in
 * the statistics (scopectl stats), named the kernel address the advice had
 * the kernel write at: scribbler's first misuse gives its ms_ctx, in
 * kernel memory.  Now a reader without PRIV_MONITOR sees "<kernel>" there;
 * root still sees the address. */
void aspect_failures_show_no_kernel_address_to_a_user(void)
{
	struct scope_ctl link = {.op = SCOPE_LINK, .binding = 1};
	strncpy(link.name, "scribbler", sizeof link.name - 1);
	struct stat st;
	if (scope_ctl(SCOPE_LOAD, "/aspects/scribbler.o") != 0 ||
	    ms_syscall3(__NR_ms_scope_ctl, (long)&link, 0, 0) != 0) {
		t_fail("loading and linking scribbler as root failed: %s", link.error);
		scope_ctl(SCOPE_UNLOAD, "scribbler");
		return;
	}
	stat("/", &st); /* its first misuse: the kernel asked to write over its ms_ctx */
	char text[1024];
	long n = aspect_stats_text("scribbler", text, sizeof text);
	if (n <= 0 || !strstr(text, "last_failure=") || !strstr(text, "0xffff"))
		t_fail("scribbler's statistics as root (%ld): %s", n, text);
	int status = t_run_child(stats_as_user, NULL);
	if (status != 0)
		t_fail("the statistics as uid %d: status %#x (see above)", USER_ID, status);
	if (scope_ctl(SCOPE_UNLOAD, "scribbler") != 0)
		t_fail("SCOPE_UNLOAD scribbler failed");
}

/* ---- Committed memory is there when touched ------------------------------------ */

/* Commits memory in 1 MiB mappings until the kernel refuses, touches every
 * page of it, and reports how many MiB through fd: a page the kernel
 * promised but cannot back ends the process with SIGSEGV instead. */
static void commit_then_touch(void *fd)
{
	static char *blocks[4096];
	int count = 0;
	while (count < 4096) {
		long area = ms_syscall6(__NR_mmap, 0, 1L << 20, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (area < 0)
			break;
		blocks[count++] = (char *)area;
	}
	for (int i = 0; i < count; i++)
		for (long at = 0; at < (1L << 20); at += (long)PAGE)
			blocks[i][at] = 1;
	write((int)(long)fd, &count, sizeof count);
}

/* Before: the kernel promised pages up to every frame of the machine, its
 * own included, so a process that took its memory first and touched it
 * after was killed (SIGSEGV) on a page it had been promised.  Now the
 * promise stops at the frames the kernel could spare. */
void committed_memory_is_there_when_touched(void)
{
	int fds[2], megabytes = -1;
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	int status = t_run_child(commit_then_touch, (void *)(long)fds[1]);
	close(fds[1]);
	if (read(fds[0], &megabytes, sizeof megabytes) != sizeof megabytes)
		megabytes = -1;
	close(fds[0]);
	t_note("committed and touched %d MiB", megabytes);
	if (status != 0 || megabytes <= 0)
		t_fail("the process that committed memory, then touched it: status %#x, %d MiB",
		       status, megabytes);
}

/* ---- Page tables are promised with the pages they map --------------------------- */

#define SPARSE_BASE   0x200000000000L /* far above the 1 MiB mappings: 32 TiB */
#define SPARSE_STRIDE (1L << 30)      /* a page directory and a page table per page */
#define SPARSE_MAX    8192
#define SPARSE_ROOM   16 /* MiB of 1 MiB mappings given back for the sparse pages */

struct sparse_report {
	int megabytes; /* committed in 1 MiB mappings, less SPARSE_ROOM */
	int pages;     /* then mapped SPARSE_STRIDE apart until refused */
};

/* Maps one page at SPARSE_BASE + index strides.  Returns it or NULL. */
static char *map_sparse_page(int index)
{
	long want = SPARSE_BASE + index * SPARSE_STRIDE;
	long got = ms_syscall6(__NR_mmap, want, PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	return got == want ? (char *)got : NULL;
}

/* Commits memory in 1 MiB mappings until refused, gives SPARSE_ROOM MiB
 * back, maps single pages SPARSE_STRIDE apart until refused, touches every
 * page of both, and reports through fd: a page or table the kernel
 * promised but cannot back ends the process with SIGSEGV instead. */
static void commit_sparse_then_touch(void *fd)
{
	static char *blocks[4096], *sparse[SPARSE_MAX];
	struct sparse_report report = {0, 0};
	while (report.megabytes < 4096) {
		long area = ms_syscall6(__NR_mmap, 0, 1L << 20, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (area < 0)
			break;
		blocks[report.megabytes++] = (char *)area;
	}
	for (int i = 0; i < SPARSE_ROOM && report.megabytes > 0; i++)
		raw_munmap((uint64_t)blocks[--report.megabytes], 1L << 20);
	while (report.pages < SPARSE_MAX && (sparse[report.pages] = map_sparse_page(report.pages)))
		report.pages++;
	for (int i = 0; i < report.pages; i++)
		sparse[i][0] = 1;
	for (int i = 0; i < report.megabytes; i++)
		for (long at = 0; at < (1L << 20); at += (long)PAGE)
			blocks[i][at] = 1;
	write((int)(long)fd, &report, sizeof report);
}

/* Before: a page's tables were not promised, so a process that committed
 * all it could, then mapped pages 1 GiB apart (each needing a page
 * directory and a page table besides its frame) and touched them, took
 * frames it had not been promised and died (SIGSEGV) touching its own
 * memory.  Now the tables are promised with the mapping that needs them:
 * fewer sparse pages are given, and every page given is there. */
void sparse_pages_come_with_their_tables(void)
{
	int fds[2];
	struct sparse_report report = {-1, -1};
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	int status = t_run_child(commit_sparse_then_touch, (void *)(long)fds[1]);
	close(fds[1]);
	if (read(fds[0], &report, sizeof report) != sizeof report)
		report.megabytes = report.pages = -1;
	close(fds[0]);
	t_note("committed %d MiB, then %d pages 1 GiB apart, and touched them all",
	       report.megabytes, report.pages);
	if (status != 0 || report.pages <= 0)
		t_fail("the process that committed memory and mapped sparse pages, then touched "
		       "them: status %#x, %d MiB, %d pages",
		       status, report.megabytes, report.pages);
}

#define FILLED_FILE "/tmp/usertests-fill"

/* As uid 1000, once start has a byte: writes 1 MiB blocks to a file in
 * /tmp until a write fails, and reports the MiB written through report. */
static void fill_tmp_as_user(int start, int report)
{
	static char block[1 << 20];
	char c;
	if (read(start, &c, 1) != 1 || setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		_exit(1);
	int file = open(FILLED_FILE, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int megabytes = 0;
	memset(block, 0x5a, sizeof block);
	while (file >= 0 && megabytes < 4096 &&
	       write(file, block, sizeof block) == (ssize_t)sizeof block)
		megabytes++;
	write(report, &megabytes, sizeof megabytes);
	_exit(0);
}

/* As root: commits memory in 1 MiB mappings until refused, reports how
 * many, waits for the gate to close, then touches every page. */
static void commit_wait_touch(int report, int gate)
{
	static char *blocks[4096];
	int count = 0;
	while (count < 4096) {
		long area = ms_syscall6(__NR_mmap, 0, 1L << 20, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (area < 0)
			break;
		blocks[count++] = (char *)area;
	}
	write(report, &count, sizeof count);
	char c;
	read(gate, &c, 1);
	for (int i = 0; i < count; i++)
		for (long at = 0; at < (1L << 20); at += (long)PAGE)
			blocks[i][at] = 1;
	_exit(0);
}

/* Before: a file's pages in the RAM file system came from any free frame,
 * so a user filling /tmp took the frames another process had been promised,
 * which then died (SIGSEGV) touching its own memory.  Now a file's page is
 * promised as memory is, and the user's write fails (ENOSPC).  Both
 * processes are forked before the memory is taken: fork needs some. */
void a_user_filling_tmp_takes_no_promised_memory(void)
{
	int start[2], gate[2], reports[2];
	if (pipe(start) < 0 || pipe(gate) < 0 || pipe(reports) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid_t user = fork();
	if (user == 0)
		fill_tmp_as_user(start[0], reports[1]);
	pid_t holder = fork();
	if (holder == 0) {
		close(gate[1]);
		commit_wait_touch(reports[1], gate[0]);
	}
	int committed = -1, written = -1, status = -1;
	if (user < 0 || holder < 0 ||
	    read(reports[0], &committed, sizeof committed) != sizeof committed)
		t_fail("the committing process did not report");
	write(start[1], "x", 1);
	if (read(reports[0], &written, sizeof written) != sizeof written)
		t_fail("the user filling /tmp did not report");
	close(gate[1]);
	if (holder > 0)
		waitpid(holder, &status, 0);
	if (user > 0)
		waitpid(user, NULL, 0);
	unlink(FILLED_FILE);
	t_note("%d MiB committed, then uid %d wrote %d MiB to /tmp", committed, USER_ID, written);
	if (status != 0)
		t_fail("the process that had committed %d MiB, touching it after uid %d wrote %d "
		       "MiB to /tmp: status %#x",
		       committed, USER_ID, written, status);
	close(start[0]);
	close(start[1]);
	close(gate[0]);
	close(reports[0]);
	close(reports[1]);
}

/* ---- A stack's pages are promised as they are touched ------------------------- */

#define STACK_EATERS 40 /* processes of uid 1000 that touch their whole stack */
#define STACK_DEPTH  ((2L << 20) - (64L << 10)) /* below the frame, above the 2 MiB's bottom */

/* The pipes of a_users_stacks_take_no_promised_memory: an eater
 * (/bin/stackeat) starts when start ends (its standard input), writes done
 * (its standard output) and holds its pages until hold ends (descriptor 3);
 * the holder of promised memory sends its report and waits for the gate. */
struct stack_pipes {
	int start[2], done[2], hold[2], gate[2], report[2];
};

#define EATER_HOLD_FD 3 /* where /bin/stackeat reads hold */

/* Closes every end of p's pipes but descriptor kept (-1: none). */
static void close_stack_pipes(const struct stack_pipes *p, int kept)
{
	const int *ends = p->start;
	for (unsigned i = 0; i < sizeof *p / sizeof *ends; i++)
		if (ends[i] != kept)
			close(ends[i]);
}

/* Becomes uid 1000 and runs /bin/stackeat, which touches every page of its
 * stack down to STACK_DEPTH once start ends.  A page that cannot be
 * promised ends it with SIGSEGV.  It keeps no other end of the pipes: the
 * case reads done and report until they end. */
static void eat_stack_as_user(const struct stack_pipes *p)
{
	char depth[16];
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0 || dup2(p->start[0], 0) < 0 ||
	    dup2(p->done[1], 1) < 0 || dup2(p->hold[0], EATER_HOLD_FD) < 0)
		_exit(1);
	close_stack_pipes(p, EATER_HOLD_FD); /* an end may have been descriptor 3 */
	snprintf(depth, sizeof depth, "%ld", STACK_DEPTH >> 10);
	char *argv[] = {"/bin/stackeat", depth, NULL};
	execv(argv[0], argv);
	_exit(1);
}

/* Counts the bytes c on done until count were read or done ends. */
static int bytes_on(int done, char c, int count)
{
	char got;
	int seen = 0;
	while (seen < count && read(done, &got, 1) == 1)
		seen += got == c;
	return seen;
}

/* Forks STACK_EATERS eaters into eaters (-1: the fork failed), then closes
 * the case's writing end of done: an eater that ends early (no exec, no
 * fork) ends the count of bytes on done instead of leaving it waiting. */
static void fork_stack_eaters(struct stack_pipes *p, pid_t *eaters)
{
	for (int i = 0; i < STACK_EATERS; i++)
		if ((eaters[i] = fork()) == 0)
			eat_stack_as_user(p);
	close(p->done[1]);
	p->done[1] = -1;
}

/* Forks a child that runs body with its end of report and of gate, closing
 * the ends it does not use; the case then closes its own end of report (-1:
 * the fork failed). */
static pid_t fork_on_pipes(struct stack_pipes *p, void (*body)(int report, int gate))
{
	pid_t child = fork();
	if (child == 0) {
		close(p->gate[1]);
		close(p->start[1]);
		close(p->hold[1]);
		body(p->report[1], p->gate[0]);
	}
	close(p->report[1]);
	p->report[1] = -1;
	return child;
}

/* Forks the process that commits all the memory it can, reports how many
 * MiB, and touches it all once the gate closes.  Returns its pid or -1.
 * The case then closes its own end of report: a holder that ends before
 * reporting ends the read. */
static pid_t fork_holder(struct stack_pipes *p)
{
	return fork_on_pipes(p, commit_wait_touch);
}

/* Before: the 2 MiB stack was never promised, so processes of a user
 * recursing to the bottom of their stacks took the frames another process
 * had been promised, which then died (SIGSEGV) touching its own memory.
 * Now a stack's pages are promised as they are touched: with every page
 * promised to the holder, the user's stacks stop growing (SIGSEGV) and the
 * holder touches all it was given.  Every process is forked before the
 * memory is taken: fork needs some. */
void a_users_stacks_take_no_promised_memory(void)
{
	struct stack_pipes p;
	pid_t eaters[STACK_EATERS];
	if (pipe(p.start) < 0 || pipe(p.done) < 0 || pipe(p.hold) < 0 || pipe(p.gate) < 0 ||
	    pipe(p.report) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	fork_stack_eaters(&p, eaters);
	int ready = bytes_on(p.done[0], 'r', STACK_EATERS); /* or done ends: some died */
	pid_t holder = ready == STACK_EATERS ? fork_holder(&p) : -1;
	int committed = -1, status = -1;
	if (holder < 0 || read(p.report[0], &committed, sizeof committed) != sizeof committed)
		t_fail("the committing process did not report");
	close(p.start[1]); /* every eater starts */
	p.start[1] = -1;
	int whole = bytes_on(p.done[0], 'x', ready); /* or done ends: all died */
	close(p.gate[1]);
	p.gate[1] = -1;
	if (holder > 0)
		waitpid(holder, &status, 0);
	close(p.hold[1]); /* the eaters hold their pages until here */
	p.hold[1] = -1;
	for (int i = 0; i < STACK_EATERS; i++)
		if (eaters[i] > 0)
			waitpid(eaters[i], NULL, 0);
	t_note("%d MiB committed, then %d of %d processes of uid %d touched their whole stack",
	       committed, whole, ready, USER_ID);
	if (ready != STACK_EATERS)
		t_fail("%d of %d processes of uid %d started", ready, STACK_EATERS, USER_ID);
	else if (status != 0)
		t_fail("the process that had committed %d MiB, touching it after %d processes of "
		       "uid %d touched their stacks: status %#x",
		       committed, whole, USER_ID, status);
	close_stack_pipes(&p, -1);
}

/* ---- Root keeps a share of the promise ------------------------------------------ */

#define ROOT_STACK_KIB 1024 /* root's eater touches this much stack after the user's hog */

/* As uid 1000: promises all it is given, in 1 MiB mappings and then in
 * single pages, reports the MiB through report and holds it until gate
 * ends. */
static void promise_everything_as_user(int report, int gate)
{
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		_exit(1);
	int megabytes = 0;
	while (megabytes < 4096 && ms_syscall6(__NR_mmap, 0, 1L << 20, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) >= 0)
		megabytes++;
	for (int pages = 0; pages < 256; pages++)
		if (ms_syscall6(__NR_mmap, 0, PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) < 0)
			break;
	write(report, &megabytes, sizeof megabytes);
	char c;
	while (read(gate, &c, 1) > 0)
		;
	_exit(0);
}

/* As root: /bin/stackeat touching ROOT_STACK_KIB of its stack once start
 * ends (as eat_stack_as_user, without becoming the user). */
static void eat_stack_as_root(const struct stack_pipes *p)
{
	char depth[16];
	if (dup2(p->start[0], 0) < 0 || dup2(p->done[1], 1) < 0 ||
	    dup2(p->hold[0], EATER_HOLD_FD) < 0)
		_exit(1);
	close_stack_pipes(p, EATER_HOLD_FD);
	snprintf(depth, sizeof depth, "%d", ROOT_STACK_KIB);
	char *argv[] = {"/bin/stackeat", depth, NULL};
	execv(argv[0], argv);
	_exit(1);
}

static void exit_at_once(void *unused)
{
	(void)unused;
}

/* Forks the user's hog (-1: the fork failed); the case keeps no end of
 * report or gate the hog needs. */
static pid_t fork_user_hog(struct stack_pipes *p)
{
	return fork_on_pipes(p, promise_everything_as_user);
}

/* Before: promises were the same for everyone, so once uid 1000 had
 * promised every page away, root's process touching a new stack page died
 * (SIGSEGV), and root could not fork (a shell, a kill).  Now the last
 * sixteenth of what may be promised is root's: root's stack grows 1 MiB and
 * root forks while the user holds all it could get. */
void root_keeps_memory_a_user_cannot_promise_away(void)
{
	struct stack_pipes p;
	if (pipe(p.start) < 0 || pipe(p.done) < 0 || pipe(p.hold) < 0 || pipe(p.gate) < 0 ||
	    pipe(p.report) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	pid_t eater = fork();
	if (eater == 0)
		eat_stack_as_root(&p);
	close(p.done[1]);
	p.done[1] = -1;
	int ready = bytes_on(p.done[0], 'r', 1), megabytes = -1;
	pid_t hog = ready == 1 ? fork_user_hog(&p) : -1;
	if (hog < 0 || read(p.report[0], &megabytes, sizeof megabytes) != sizeof megabytes)
		t_fail("uid %d's process promising all it could did not report", USER_ID);
	close(p.start[1]); /* root's eater starts */
	p.start[1] = -1;
	int whole = bytes_on(p.done[0], 'x', 1);
	int forked = t_run_child(exit_at_once, NULL), eaten = -1;
	close(p.gate[1]);
	p.gate[1] = -1;
	if (hog > 0)
		waitpid(hog, NULL, 0);
	close(p.hold[1]);
	p.hold[1] = -1;
	if (eater > 0)
		waitpid(eater, &eaten, 0);
	t_note("uid %d promised %d MiB; then root touched %d KiB of stack (%s) and forked (%#x)",
	       USER_ID, megabytes, ROOT_STACK_KIB, whole == 1 ? "whole" : "died", forked);
	if (ready != 1 || whole != 1 || eaten != 0)
		t_fail("root's process touching %d KiB of stack after uid %d promised all it "
		       "could: status %#x",
		       ROOT_STACK_KIB, USER_ID, eaten);
	if (forked != 0)
		t_fail("root's fork after uid %d promised all it could: status %#x", USER_ID,
		       forked);
	close_stack_pipes(&p, -1);
}

/* ---- A fork shares read-only pages without promising them again --------------- */

#define READ_ONLY_MIB 64 /* the read-only mapping */
#define FORK_ROOM_MIB 16 /* left to promise for the fork: more than it needs, less than that */
#define L_ENOMEM      12

/* Promises 1 MiB mappings until refused, gives FORK_ROOM_MIB back, reports
 * how many it kept through report and holds them until gate ends.  Another
 * process than the one forking holds them: a fork would be promised them
 * again. */
static void promise_all_but_room(int report, int gate)
{
	static long blocks[4096];
	int count = 0;
	while (count < 4096) {
		long area = ms_syscall6(__NR_mmap, 0, 1L << 20, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (area < 0)
			break;
		blocks[count++] = area;
	}
	for (int i = 0; i < FORK_ROOM_MIB && count > 0; i++)
		raw_munmap((uint64_t)blocks[--count], 1L << 20);
	write(report, &count, sizeof count);
	char c;
	while (read(gate, &c, 1) > 0)
		;
	_exit(0);
}

/* In the fork: the shared mapping made writable needs its pages promised
 * again, which the room left cannot hold. */
static void make_shared_mapping_writable(void *area)
{
	long made =
	    raw_mprotect((uint64_t)area, (uint64_t)READ_ONLY_MIB << 20, PROT_READ | PROT_WRITE);
	if (made != -L_ENOMEM)
		t_fail("mprotect(PROT_WRITE) of the shared %d MiB with %d MiB left: %ld, not "
		       "-ENOMEM",
		       READ_ONLY_MIB, FORK_ROOM_MIB, made);
	_exit(t_failed() ? 1 : 0);
}

/* Writes every page of READ_ONLY_MIB, makes it read-only, promises all but
 * FORK_ROOM_MIB away and forks. */
static void fork_with_a_large_read_only_mapping(void *unused)
{
	(void)unused;
	long area = ms_syscall6(__NR_mmap, 0, (long)READ_ONLY_MIB << 20, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area < 0) {
		t_fail("mmap of %d MiB: %ld", READ_ONLY_MIB, area);
		_exit(1);
	}
	for (long at = 0; at < ((long)READ_ONLY_MIB << 20); at += (long)PAGE)
		((char *)area)[at] = 1;
	if (raw_mprotect((uint64_t)area, (uint64_t)READ_ONLY_MIB << 20, PROT_READ) != 0)
		t_fail("mprotect(PROT_READ) of %d MiB failed", READ_ONLY_MIB);
	int report[2], gate[2], kept = -1, status = -1;
	if (pipe(report) < 0 || pipe(gate) < 0)
		_exit(1);
	pid_t holder = fork();
	if (holder == 0) {
		close(gate[1]);
		promise_all_but_room(report[1], gate[0]);
	}
	close(gate[0]);
	if (holder < 0 || read(report[0], &kept, sizeof kept) != sizeof kept)
		t_fail("the process promising all but %d MiB did not report", FORK_ROOM_MIB);
	else
		status = t_run_child(make_shared_mapping_writable, (void *)area);
	close(gate[1]);
	if (holder > 0)
		waitpid(holder, NULL, 0);
	t_note("%d MiB read-only, %d MiB more promised, %d MiB left: the fork's status %#x",
	       READ_ONLY_MIB, kept, FORK_ROOM_MIB, status);
	if (status != 0)
		t_fail("the fork with %d MiB left to promise: status %#x", FORK_ROOM_MIB, status);
	_exit(t_failed() ? 1 : 0);
}

/* Before: a fork promised the child every page of the parent's read-only
 * mappings again, though a page present there is never copied while it
 * stays read-only: with 16 MiB left to promise, a fork of a process holding
 * 64 MiB read-only was refused.  Now the shared frame carries the page's
 * one promise; the fork succeeds, and the child making the mapping
 * writable is what needs the 64 MiB (-ENOMEM). */
void a_fork_shares_read_only_pages_unpromised(void)
{
	int status = t_run_child(fork_with_a_large_read_only_mapping, NULL);
	if (status != 0)
		t_fail("the process with %d MiB read-only: status %#x", READ_ONLY_MIB, status);
}

/* ---- Ids and privileges themselves ------------------------------------------- */

static void ids_in_child(void *unused)
{
	(void)unused;
	if (getuid() != USER_ID || geteuid() != USER_ID || getgid() != USER_ID)
		t_fail("a child of uid %d is uid %d/%d gid %d", USER_ID, (int)getuid(),
		       (int)geteuid(), (int)getgid());
	_exit(t_failed() ? 1 : 0);
}

static void drop_to_user(void *unused)
{
	(void)unused;
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		t_fail("setgid/setuid(%d) as root failed", USER_ID);
	if (ms_syscall3(__NR_ms_priv, 0, 0, 0) != 0)
		t_fail("uid %d still holds privileges", USER_ID);
	if (ms_syscall3(__NR_setuid, 0, 0, 0) != -L_EPERM)
		t_fail("setuid(0) as uid %d was not refused", USER_ID);
	if (ms_syscall3(__NR_setresuid, 0, 0, 0) != -L_EPERM || getuid() != USER_ID)
		t_fail("setresuid(0, 0, 0) as uid %d was not refused", USER_ID);
	if (t_run_child(ids_in_child, NULL) != 0)
		t_fail("fork did not keep the ids");
	_exit(t_failed() ? 1 : 0);
}

static void drop_one_privilege(void *unused)
{
	(void)unused;
	long held = ms_syscall3(__NR_ms_priv, PRIV_KSHELL, 0, 0);
	if (held != (PRIV_ALL & ~PRIV_KSHELL))
		t_fail("ms_priv(PRIV_KSHELL) as root: %ld", held);
	if (kshell("") != -L_EPERM)
		t_fail("ms_kshell after dropping PRIV_KSHELL was not refused");

	if (ms_syscall3(__NR_ms_priv, 0, 0, 0) != held)
		t_fail("a dropped privilege came back");
	_exit(t_failed() ? 1 : 0);
}

/* Root without PRIV_POWER keeps the console but cannot stop the machine,
 * however the command is spelled (a refusal here is all that stands between
 * the test and a powered-off machine). */
static void drop_power(void *unused)
{
	(void)unused;
	if (ms_syscall3(__NR_ms_priv, PRIV_POWER, 0, 0) != (PRIV_ALL & ~PRIV_POWER))
		t_fail("ms_priv(PRIV_POWER) as root failed");
	if (kshell("\"poweroff\"") != -L_EPERM || kshell("  reboot") != -L_EPERM ||
	    kshell("exit 0") != -L_EPERM)
		t_fail("a command stopping the machine was not refused without PRIV_POWER");
	if (kshell("") != 0)
		t_fail("ms_kshell without PRIV_POWER refused a harmless line");
	_exit(t_failed() ? 1 : 0);
}

static void effective_id_suspends_privileges(void *unused)
{
	(void)unused;
	if (seteuid(USER_ID) < 0 || geteuid() != USER_ID || getuid() != 0)
		t_fail("seteuid(%d) as root failed", USER_ID);
	if (kshell("") != -L_EPERM)
		t_fail("ms_kshell with euid %d was not refused", USER_ID);
	if (seteuid(0) < 0 || kshell("") != 0)
		t_fail("seteuid(0) back (saved uid 0) did not give the privileges back");
	_exit(t_failed() ? 1 : 0);
}

/* Are ids inherited, privileges dropped for good, and the id calls'
 * hostile arguments refused? */
void users_and_privileges(void)
{
	if (getuid() != 0 || ms_syscall3(__NR_ms_priv, 0, 0, 0) != PRIV_ALL) {
		t_fail("usertests does not run as root with every privilege");
		return;
	}
	if (t_run_child(drop_to_user, NULL) != 0)
		t_fail("dropping to a user (see above)");
	if (t_run_child(drop_one_privilege, NULL) != 0)
		t_fail("dropping one privilege (see above)");
	if (t_run_child(drop_power, NULL) != 0)
		t_fail("dropping PRIV_POWER (see above)");
	if (t_run_child(effective_id_suspends_privileges, NULL) != 0)
		t_fail("an effective uid other than 0 (see above)");
	if (ms_syscall3(__NR_ms_priv, 0x80000000L, 0, 0) != -L_EINVAL)
		t_fail("ms_priv with an unknown bit was not refused");
	if (ms_syscall3(__NR_setuid, -1L, 0, 0) != -L_EINVAL)
		t_fail("setuid(-1) was not refused");
	uint32_t id;
	if (ms_syscall3(__NR_getresuid, 0, (long)&id, (long)&id) != -L_EFAULT ||
	    ms_syscall3(__NR_getresgid, (long)&id, (long)&id, (long)0xffff800000000000UL) !=
		-L_EFAULT)
		t_fail("getresuid/getresgid with a bad pointer did not give EFAULT");
}

/* An aspect object may not take a name the kernel's own aspects have, not
 * even when root loads it (the impostor rscfl took over accounting). */
void impostor_rscfl_is_refused(void)
{
	struct scope_ctl c = {.op = SCOPE_LOAD};
	strcpy(c.name, "/aspects/rscfl.o");
	long result = ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0);
	if (result != -L_EPERM || !strstr(c.error, "reserved"))
		t_fail("loading /aspects/rscfl.o from a file as root: %ld (%s)", result, c.error);
}

/* ---- Hole D: memory on first touch, RLIMIT_AS -------------------------------- */

struct rlimit_user {
	uint64_t current, maximum;
};

#define RLIMIT_AS_RESOURCE 9
#define TIB                (1UL << 40)

#define EXEC_REFUSED 42 /* exec_under_a_tiny_limit's status when exec said -ENOMEM */

/* A program's segments count against RLIMIT_AS as mmap's pages do: exec of
 * one larger than the limit fails, and the caller goes on. */
static void exec_under_a_tiny_limit(void *unused)
{
	(void)unused;
	struct rlimit_user tiny = {64UL << 10, 64UL << 10};
	if (ms_syscall3(__NR_setrlimit, RLIMIT_AS_RESOURCE, (long)&tiny, 0) != 0)
		_exit(1);
	char *argv[] = {"/bin/echo", "exec under RLIMIT_AS", NULL};
	long result = ms_syscall3(__NR_execve, (long)argv[0], (long)argv, 0);
	_exit(result == -L_ENOMEM ? EXEC_REFUSED : 2);
}

/* Hole D: mmap and brk of 1 TiB populated memory eagerly (and SIGKILL then
 * took a minute to tear it down).  Now memory comes on first touch, a
 * request memory cannot back fails at once, and RLIMIT_AS bounds the rest. */
void hole_d_memory_comes_on_first_touch(void)
{
	long before = t_own_pages();
	long length = 32L << 20;
	long area = ms_syscall6(__NR_mmap, 0, length, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area < 0) {
		t_fail("mmap of 32 MiB: %ld", area);
		return;
	}
	((volatile char *)area)[0] = 1;
	((volatile char *)area)[length - 1] = 1;
	long touched = t_own_pages() - before;
	if (touched < 2 || touched > 64)
		t_fail("32 MiB mapped, 2 pages touched: %ld pages mapped", touched);
	if (ms_syscall3(__NR_munmap, area, length, 0) != 0)
		t_fail("munmap of the 32 MiB failed");
	long huge = ms_syscall6(__NR_mmap, 0, (long)TIB, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (huge != -L_ENOMEM)
		t_fail("mmap of 1 TiB: %ld, expected -ENOMEM", huge);
	long brk = ms_syscall3(__NR_brk, 0, 0, 0);
	if (ms_syscall3(__NR_brk, brk + (long)TIB, 0, 0) != brk)
		t_fail("brk by 1 TiB moved the break");

	struct rlimit_user limit = {16UL << 20, 16UL << 20}, read_back;
	if (ms_syscall3(__NR_setrlimit, RLIMIT_AS_RESOURCE, (long)&limit, 0) != 0 ||
	    ms_syscall3(__NR_getrlimit, RLIMIT_AS_RESOURCE, (long)&read_back, 0) != 0 ||
	    read_back.current != limit.current)
		t_fail("setrlimit/getrlimit(RLIMIT_AS) did not take 16 MiB");
	long over = ms_syscall6(__NR_mmap, 0, 32L << 20, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (over != -L_ENOMEM)
		t_fail("mmap of 32 MiB under RLIMIT_AS 16 MiB: %ld, expected -ENOMEM", over);
	if (ms_syscall3(__NR_brk, brk + (32L << 20), 0, 0) != brk)
		t_fail("brk by 32 MiB under RLIMIT_AS 16 MiB moved the break");
	if (ms_syscall3(__NR_setrlimit, RLIMIT_AS_RESOURCE, 0, 0) != -L_EFAULT ||
	    ms_syscall3(__NR_setrlimit, 3, (long)&limit, 0) != -L_EINVAL)
		t_fail("setrlimit with a bad pointer or resource was not refused");
	int status = t_run_child(exec_under_a_tiny_limit, NULL);
	if (status != EXEC_REFUSED << 8)
		t_fail("exec of /bin/echo under RLIMIT_AS 64 KiB: status %#x, expected -ENOMEM",
		       status);
}

static void map_and_touch_then_wait(void *unused)
{
	(void)unused;
	long length = 64L << 20;
	long area = ms_syscall6(__NR_mmap, 0, length, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (long at = 0; area > 0 && at < length; at += 8L << 20)
		((volatile char *)area)[at] = 1;
	for (;;)
		t_sleep_ms(1000);
}

/* A process killed with a large, barely touched mapping ends and gives
 * everything back (its teardown walks what it touched). */
void hole_d_kill_gives_memory_back(void)
{
	for (int round = 0; round < 8; round++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			map_and_touch_then_wait(NULL);
		t_sleep_ms(50);
		kill(pid, SIGKILL);
		int status;
		if (waitpid(pid, &status, 0) != pid || !WIFSIGNALED(status)) {
			t_fail("round %d: the mapping process did not end by SIGKILL", round);
			return;
		}
	}
	long area = ms_syscall6(__NR_mmap, 0, 64L << 20, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area < 0)
		t_fail("64 MiB cannot be mapped after the killed processes: %ld", area);
}

/* ---- mprotect ---------------------------------------------------------------- */

unsigned long getauxval(unsigned long type);

static void write_byte(void *address)
{
	*(volatile char *)address = 1;
}

static void read_byte(void *address)
{
	(void)*(volatile char *)address;
}

/* PROT_NONE, by mmap or by mprotect: no access at all, the contents kept
 * for a later mprotect. */
static void prot_none_allows_nothing(char *bytes)
{
	if (raw_mprotect((uint64_t)bytes, PAGE, 0 /* PROT_NONE */) != 0)
		t_fail("mprotect to PROT_NONE failed");
	t_expect_signal("a read of a PROT_NONE page", read_byte, bytes, SIGSEGV);
	t_expect_signal("a write to a PROT_NONE page", write_byte, bytes, SIGSEGV);
	if (raw_mprotect((uint64_t)bytes, PAGE, PROT_READ) != 0 || bytes[0] != 4)
		t_fail("the PROT_NONE page lost its contents");
	long fresh = ms_syscall6(__NR_mmap, 0, PAGE, 0, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fresh < 0)
		t_fail("mmap(PROT_NONE): %ld", fresh);
	else
		t_expect_signal("a read of an mmap(PROT_NONE) page", read_byte, (void *)fresh,
				SIGSEGV);
}

#define L_EFAULT 14

static const char prot_none_pattern[] = "kept behind PROT_NONE";

/* The kernel's copies refuse a PROT_NONE buffer as the user's own accesses
 * do: write() from it and read() into it give -EFAULT. */
static void kernel_copies_refuse(const char *who, char *bytes, const int pipe_ends[2])
{
	long written = ms_syscall3(__NR_write, pipe_ends[1], (long)bytes, 16);
	if (written != -L_EFAULT)
		t_fail("%s: write() from a PROT_NONE page: %ld, expected -EFAULT", who, written);
	if (write(pipe_ends[1], "xyz", 3) != 3) {
		t_fail("%s: write() to the pipe failed", who);
		return;
	}
	long got = ms_syscall3(__NR_read, pipe_ends[0], (long)bytes, 3);
	if (got != -L_EFAULT)
		t_fail("%s: read() into a PROT_NONE page: %ld, expected -EFAULT", who, got);
	char back[4] = {0};
	if (got == -L_EFAULT && (read(pipe_ends[0], back, 3) != 3 || memcmp(back, "xyz", 3)))
		t_fail("%s: the bytes a refused read() was given are lost: \"%s\"", who, back);
}

struct prot_none_child {
	char *bytes;
	int pipe_ends[2];
};

/* A forked child's PROT_NONE pages are as its parent's: refused to the
 * kernel's copies, the contents there once readable again. */
static void prot_none_in_a_child(void *argument)
{
	struct prot_none_child *c = argument;
	kernel_copies_refuse("the child", c->bytes, c->pipe_ends);
	if (raw_mprotect((uint64_t)c->bytes, PAGE, PROT_READ) != 0 ||
	    memcmp(c->bytes, prot_none_pattern, sizeof prot_none_pattern))
		t_fail("the child's PROT_NONE page lost its contents");
	_exit(t_failed() ? 1 : 0);
}

/* write() from and read() into a PROT_NONE page give -EFAULT (the kernel
 * once mapped such pages present for itself, and its copies went through),
 * in a forked child too; once readable again the page holds what it held,
 * and the kernel's copies take it. */
void prot_none_is_refused_to_the_kernels_copies(void)
{
	struct prot_none_child c;
	long area = ms_syscall6(__NR_mmap, 0, PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area < 0 || pipe(c.pipe_ends) < 0) {
		t_fail("mmap or pipe failed: %ld", area);
		return;
	}
	c.bytes = (char *)area;
	memcpy(c.bytes, prot_none_pattern, sizeof prot_none_pattern);
	if (raw_mprotect((uint64_t)area, PAGE, 0 /* PROT_NONE */) != 0)
		t_fail("mprotect to PROT_NONE failed");
	kernel_copies_refuse("the parent", c.bytes, c.pipe_ends);
	int status = t_run_child(prot_none_in_a_child, &c);
	if (status != 0)
		t_fail("the forked child: status %#x (see above)", status);
	if (raw_mprotect((uint64_t)area, PAGE, PROT_READ | PROT_WRITE) != 0 ||
	    memcmp(c.bytes, prot_none_pattern, sizeof prot_none_pattern))
		t_fail("the PROT_NONE page lost its contents");
	char back[sizeof prot_none_pattern];
	if (write(c.pipe_ends[1], c.bytes, sizeof back) != (ssize_t)sizeof back ||
	    read(c.pipe_ends[0], back, sizeof back) != (ssize_t)sizeof back ||
	    memcmp(back, prot_none_pattern, sizeof back))
		t_fail("the page made readable again is not written and read whole");
	c.bytes[0] = 'K'; /* writable again, its own frame */
	close(c.pipe_ends[0]);
	close(c.pipe_ends[1]);
	munmap(c.bytes, PAGE);
}

/* Does mprotect change an anonymous mapping's permissions page by page
 * (PROT_NONE too), and refuse holes, bad flags and the kernel's pages (the
 * clock page here)? */
void mprotect_changes_anonymous_mappings_only(void)
{
	long area = ms_syscall6(__NR_mmap, 0, 3 * PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area < 0) {
		t_fail("mmap: %ld", area);
		return;
	}
	char *bytes = (char *)area;
	bytes[0] = 4;
	prot_none_allows_nothing(bytes);
	if (raw_mprotect((uint64_t)area, PAGE, PROT_READ | PROT_WRITE) != 0)
		t_fail("mprotect of the first page back to PROT_READ | PROT_WRITE failed");
	bytes[PAGE] = 5;
	if (raw_mprotect((uint64_t)area + PAGE, PAGE, PROT_READ) != 0)
		t_fail("mprotect of the middle page to PROT_READ failed");
	t_expect_signal("a write to a read-only page", write_byte, bytes + PAGE, SIGSEGV);
	bytes[0] = bytes[2 * PAGE] = 1; /* the pages around it stay writable */
	if (bytes[PAGE] != 5)
		t_fail("the read-only page lost its contents");
	if (raw_mprotect((uint64_t)area, 3 * PAGE, PROT_READ | PROT_WRITE) != 0)
		t_fail("mprotect back to PROT_READ | PROT_WRITE failed");
	bytes[PAGE] = 6;
	if (raw_mprotect((uint64_t)area, 3 * PAGE, 0x80) != -L_EINVAL ||
	    raw_mprotect((uint64_t)area + 1, PAGE, PROT_READ) != -L_EINVAL)
		t_fail("mprotect with bad flags or an unaligned address was not refused");
	if (raw_munmap((uint64_t)area + 2 * PAGE, PAGE) != 0 ||
	    raw_mprotect((uint64_t)area, 3 * PAGE, PROT_READ) != -L_ENOMEM)
		t_fail("mprotect over a hole was not refused with ENOMEM");
	uint64_t clock = getauxval(CLOCK_USER_AT);
	if (!clock || raw_mprotect(clock, PAGE, PROT_READ | PROT_WRITE) != -L_EPERM)
		t_fail("mprotect of the clock page was not refused with EPERM");
}

/* ms_scope_reply posts a reply that steers the kernel (a NIC's mode): only
 * the attached monitor may, whatever the arguments; the monitor itself gets
 * -ENOENT for a join point that does not exist. */
void scope_reply_is_the_monitors_only(void)
{
	static const long join_points[] = {0, 1, 0x7fffffff, 0xffffffffL, -1};
	for (size_t i = 0; i < sizeof join_points / sizeof join_points[0]; i++) {
		long result = ms_syscall3(__NR_ms_scope_reply, join_points[i], -1, 1);
		if (result != -L_EPERM)
			t_fail("ms_scope_reply(%ld) from a process that is not the monitor: %ld, "
			       "expected -EPERM",
			       join_points[i], result);
	}
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0) {
		t_fail("attaching a monitor as root: %ld", channel);
	} else {
		for (size_t i = 2; i < sizeof join_points / sizeof join_points[0]; i++) {
			long result = ms_syscall3(__NR_ms_scope_reply, join_points[i], 0, 1);
			if (result != -2 /* ENOENT */)
				t_fail(
				    "ms_scope_reply(%ld) from the monitor: %ld, expected -ENOENT",
				    join_points[i], result);
		}
	}
	if (endpoint >= 0)
		close((int)endpoint);
}

/* ---- ms_scope_reply_receive: the monitor's loop in one call -------------- */

#define MONITOR_WAIT_NS (2000L * 1000 * 1000)

static long scope_reply_receive(uint64_t token, uint64_t word0, uint64_t word1, void *message,
				uint64_t timeout_ns)
{
	return ms_syscall6(__NR_ms_scope_reply_receive, (long)token, (long)word0, (long)word1,
			   (long)message, (long)timeout_ns, 0);
}

static uint64_t late_replies(long endpoint)
{
	struct ipc_stats stats;
	memset(&stats, 0, sizeof stats);
	if (ms_syscall3(__NR_ms_ipc_stats, endpoint, (long)&stats, 0) != 0)
		t_fail("ms_ipc_stats failed");
	return stats.late_replies;
}

/* A child that calls the endpoint it inherited and exits 0 when the answer
 * is exactly (0, 5, 6, zeros, no payload).  Before calling it tries the
 * monitor's call itself, which must be refused: it is not the monitor. */
static void call_the_monitor(void *argument)
{
	long endpoint = *(const long *)argument;
	static struct ipc_message m, reply;
	if (scope_reply_receive(0, 0, 0, &m, 0) != -L_EPERM)
		exit(2);
	m.label = 7;
	m.words[0] = 42;
	m.length = 0;
	memset(&reply, 0xa5, sizeof reply);
	long result = ms_syscall6(__NR_ms_ipc_call, endpoint, (long)&m, (long)&reply,
				  (long)MONITOR_WAIT_NS, 0, 0);
	if (result != 0)
		exit(3);
	bool exact =
	    reply.label == 0 && reply.words[0] == 5 && reply.words[1] == 6 && reply.length == 0;
	for (unsigned i = 2; i < IPC_WORDS; i++)
		exact = exact && reply.words[i] == 0;
	exit(exact ? 0 : 4);
}

/* Receives the child's call with the monitor's call; returns its token or 0. */
static uint64_t take_call(struct ipc_message *m, int child)
{
	long result = scope_reply_receive(0, 0, 0, m, MONITOR_WAIT_NS);
	if (result != 0 || m->token == 0 || m->label != 7 || m->words[0] != 42 ||
	    m->sender != (uint32_t)child) {
		t_fail("receiving the child's call: %ld (token %lu, label %lu, sender %u)", result,
		       (unsigned long)m->token, (unsigned long)m->label, m->sender);
		return 0;
	}
	return m->token;
}

/* Which hostile input does ms_scope_reply_receive refuse, before or after the
 * reply goes: a caller that is not the monitor, a buffer outside user space,
 * a token naming no call, a partner killed while it waited, a buffer the
 * kernel cannot write?  And does a real round trip carry exactly two words
 * back? */
void scope_reply_receive_refuses_hostile_input(void)
{
	static struct ipc_message m;
	if (scope_reply_receive(0, 0, 0, &m, 0) != -L_EPERM)
		t_fail("ms_scope_reply_receive from a process that is not the monitor was not "
		       "refused with EPERM");
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0) {
		t_fail("attaching a monitor as root: %ld", channel);
		return;
	}
	static const uint64_t bad[] = {0xffffffff80000000ul, 0x7ffffffffff0ul,
				       0xfffffffffffffff0ul};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		long result = scope_reply_receive(0, 0, 0, (void *)bad[i], 0);
		if (result != -L_EFAULT)
			t_fail("message at %#lx: %ld, expected -EFAULT", (unsigned long)bad[i],
			       result);
	}
	if (scope_reply_receive(0, 0, 0, &m, 0) != -L_EAGAIN)
		t_fail("nothing queued and no wait did not give EAGAIN");
	uint64_t late = late_replies(endpoint);
	if (scope_reply_receive(0x12345601, 1, 2, &m, 0) != -L_EAGAIN ||
	    late_replies(endpoint) != late + 1)
		t_fail("a token that names no call was not counted as a late reply");

	int child = fork();
	if (child == 0)
		call_the_monitor(&endpoint);
	uint64_t token = child > 0 ? take_call(&m, child) : 0;
	if (token && scope_reply_receive(token, 5, 6, &m, 0) != -L_EAGAIN)
		t_fail("answering the child's call did not go on to an empty receive");
	int status = 0;
	if (child > 0 &&
	    (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
		t_fail("the caller did not get exactly (5, 6) back: status %#x", status);

	child = fork();
	if (child == 0)
		call_the_monitor(&endpoint);
	token = child > 0 ? take_call(&m, child) : 0;
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	late = late_replies(endpoint);
	if (token && (scope_reply_receive(token, 5, 6, &m, 0) != -L_EAGAIN ||
		      late_replies(endpoint) != late + 1))
		t_fail("answering a caller that was killed was not a counted late reply");

	/* In user space but not writable: the message taken is lost, the
	 * kernel goes on. */
	struct ipc_message one_way = {.label = 9};
	static const uint64_t unwritable[] = {0, 8, (uintptr_t)&late_replies};
	for (size_t i = 0; i < sizeof unwritable / sizeof unwritable[0]; i++) {
		if (ms_syscall3(__NR_ms_ipc_send, endpoint, (long)&one_way, 0) != 0)
			t_fail("ms_ipc_send to the monitor's endpoint failed");
		long result = scope_reply_receive(0, 0, 0, (void *)unwritable[i], 0);
		if (result != -L_EFAULT)
			t_fail("a message at %#lx: %ld, expected -EFAULT",
			       (unsigned long)unwritable[i], result);
	}
	if (scope_reply_receive(0, 0, 0, &m, 0) != -L_EAGAIN)
		t_fail("a message was left behind after the failed copies");
	close((int)endpoint);
}

/* The monitor's inbox: a call received at SCOPE_INBOX_ADDRESS is read there
 * in place (label, words, sender, token: nothing copied out), the answer goes
 * back as with any buffer, and the page is a kernel region the monitor can
 * neither unmap nor make writable, and the kernel writes nothing else into
 * it on the monitor's behalf. */
void scope_reply_receive_receives_into_the_inbox(void)
{
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0) {
		t_fail("attaching a monitor as root: %ld", channel);
		return;
	}
	volatile const struct ipc_message *inbox = (const void *)SCOPE_INBOX_ADDRESS;
	if (inbox->token != 0 || inbox->length != 0)
		t_fail("the inbox does not start empty");
	int child = fork();
	if (child == 0)
		call_the_monitor(&endpoint);
	long result = child > 0 ? scope_reply_receive(0, 0, 0, (void *)inbox, MONITOR_WAIT_NS) : -1;
	uint64_t token = inbox->token;
	if (result != 0 || token == 0 || inbox->label != 7 || inbox->words[0] != 42 ||
	    inbox->sender != (uint32_t)child || inbox->length != 0) {
		t_fail("the child's call in the inbox: %ld (token %lu, label %lu, sender %u)",
		       result, (unsigned long)token, (unsigned long)inbox->label, inbox->sender);
		token = 0;
	}
	if (token && scope_reply_receive(token, 5, 6, (void *)inbox, 0) != -L_EAGAIN)
		t_fail("answering the child's call did not go on to an empty receive");
	int status = 0;
	if (child > 0 &&
	    (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
		t_fail("the caller did not get exactly (5, 6) back: status %#x", status);
	expect_kernel_region("the inbox", SCOPE_INBOX_ADDRESS, PAGE);
	if (ms_syscall3(__NR_ms_ipc_stats, endpoint, SCOPE_INBOX_ADDRESS, 0) != -L_EFAULT)
		t_fail("the kernel wrote another call's answer into the inbox");
	close((int)endpoint);
}

/* A caller killed while the receiver, pinned to the caller's own CPU, holds
 * its call (the call went there by the direct switch, or by the queue when
 * the receiver was late): does the call end by the signal, withdrawn (the
 * receiver's answer finds no call: -ENOENT, counted as late), and not by its
 * minute-long deadline (no timeout counted)? */
void ipc_caller_killed_while_a_receiver_on_its_cpu_holds_the_call(void)
{
	cpu_set_t all;
	if (t_pin_to_one_cpu(&all, sizeof all) < 0) /* the child inherits it */
		return;
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	if (endpoint < 0) {
		t_fail("ms_ipc_create: %ld", endpoint);
		return;
	}
	const long minute = 60L * 1000 * 1000 * 1000;
	int child = fork();
	if (child == 0) {
		static struct ipc_message m, reply;
		for (int i = 0; i < 4; i++)
			sched_yield(); /* the parent goes into its receive first */
		m.label = 7;
		ms_syscall6(__NR_ms_ipc_call, endpoint, (long)&m, (long)&reply, minute, 0, 0);
		exit(1); /* only the signal may end the call */
	}
	static struct ipc_message m;
	long result = child < 0 ? -1 : ms_syscall3(__NR_ms_ipc_receive, endpoint, (long)&m, minute);
	if (result != 0 || m.token == 0 || m.label != 7)
		t_fail("receiving the child's call: %ld (token %lu, label %lu)", result,
		       (unsigned long)m.token, (unsigned long)m.label);
	int status = 0;
	if (child > 0) {
		kill(child, SIGKILL);
		if (waitpid(child, &status, 0) != child || !WIFSIGNALED(status) ||
		    WTERMSIG(status) != SIGKILL)
			t_fail("the caller did not end by SIGKILL: status %#x", status);
	}
	struct ipc_message answer = {.label = 8};
	result = ms_syscall3(__NR_ms_ipc_reply, endpoint, (long)m.token, (long)&answer);
	if (result != -L_ENOENT)
		t_fail("answering the killed caller: %ld, expected -ENOENT", result);
	struct ipc_stats stats;
	memset(&stats, 0, sizeof stats);
	if (ms_syscall3(__NR_ms_ipc_stats, endpoint, (long)&stats, 0) != 0 || stats.timeouts != 0 ||
	    stats.late_replies != 1 || stats.calls != 1)
		t_fail("stats: %lu calls, %lu timeouts, %lu late replies (expected 1, 0, 1)",
		       (unsigned long)stats.calls, (unsigned long)stats.timeouts,
		       (unsigned long)stats.late_replies);
	close((int)endpoint);
	sched_setaffinity(0, sizeof all, &all);
}

/* A receive into a buffer the process may not write (a read-only page) is
 * refused before a message is taken: the message waits for the next receive,
 * and a call whose reply buffer is read-only is never sent. */
void ipc_receive_into_a_bad_buffer_loses_no_message(void)
{
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	void *read_only = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (endpoint < 0 || read_only == MAP_FAILED) {
		t_fail("ms_ipc_create %ld, mmap %p", endpoint, read_only);
		return;
	}
	static struct ipc_message m, received;
	m.label = 9;
	if (ms_syscall3(__NR_ms_ipc_send, endpoint, (long)&m, 0) != 0)
		t_fail("ms_ipc_send failed");
	long result = ms_syscall3(__NR_ms_ipc_receive, endpoint, (long)read_only, 0);
	if (result != -L_EFAULT)
		t_fail("receive into a read-only page: %ld, expected -EFAULT", result);
	result = ms_syscall6(__NR_ms_ipc_reply_receive, endpoint, 0, 0, (long)read_only, 0, 0);
	if (result != -L_EFAULT)
		t_fail("reply_receive into a read-only page: %ld, expected -EFAULT", result);
	static struct ipc_message call = {.label = 10};
	result = ms_syscall6(__NR_ms_ipc_call, endpoint, (long)&call, (long)read_only, 1000, 0, 0);
	if (result != -L_EFAULT)
		t_fail("call with a read-only reply buffer: %ld, expected -EFAULT", result);
	result = ms_syscall3(__NR_ms_ipc_receive, endpoint, (long)&received, 0);
	if (result != 0 || received.label != 9)
		t_fail("the message after the refused receives: %ld, label %lu (expected 0, 9)",
		       result, (unsigned long)received.label);
	result = ms_syscall3(__NR_ms_ipc_receive, endpoint, (long)&received, 0);
	if (result != -L_EAGAIN)
		t_fail("a second message (the refused call's?): %ld, label %lu, expected -EAGAIN",
		       result, (unsigned long)received.label);
	munmap(read_only, 4096);
	close((int)endpoint);
}

#define L_ENOLINK 67

/* When the privileged unweave the kernel's accounting aspect while a process
 * accounts, does its next accounting call fail with a clear error
 * (-ENOLINK) instead of going on with stale numbers, and can it account
 * again afterwards (the aspect is woven again)? */
void rscfl_unwoven_gives_an_error(void)
{
	if (getuid() != 0)
		exit(T_SKIPPED);
	long page = ms_syscall3(__NR_ms_acct_init, 0, 0, 0);
	long token = ms_syscall3(__NR_ms_acct_get_token, 0, 0, 0);
	if (page < 0 || token <= 0) {
		t_fail("ms_acct_init %ld, token %ld", page, token);
		return;
	}
	long started = ms_syscall3(__NR_ms_acct, token, ACCT_START, 0);
	if (started != 0)
		t_fail("ACCT_START: %ld", started);
	getpid();
	long unlinked = scope_ctl(SCOPE_UNLINK, "rscfl");
	if (unlinked != 0)
		t_fail("SCOPE_UNLINK rscfl as root: %ld", unlinked);
	long stopped = ms_syscall3(__NR_ms_acct, token, ACCT_STOP, 0);
	if (stopped != -L_ENOLINK)
		t_fail("ACCT_STOP after rscfl was unwoven: %ld, expected -ENOLINK", stopped);
	long again = ms_syscall3(__NR_ms_acct, token, ACCT_STOP, 0);
	if (again != -L_EINVAL)
		t_fail("the token was not stopped by the error: ACCT_STOP gave %ld", again);
	if (ms_syscall3(__NR_ms_acct, token, ACCT_START, 0) != 0 ||
	    ms_syscall3(__NR_ms_acct, token, ACCT_STOP, 0) != 0)
		t_fail("accounting did not work again after the error");
	ms_syscall3(__NR_ms_acct_free_token, token, 0, 0);
}

static long scope_call(struct scope_ctl *c)
{
	return ms_syscall3(__NR_ms_scope_ctl, (long)c, 0, 0);
}

static void clear_as_user(void *unused)
{
	struct scope_ctl c = {.op = SCOPE_CLEAR};
	strcpy(c.name, "callcount");
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		_exit(2);
	_exit(scope_call(&c) == -L_EPERM ? 0 : 1);
}

/* Do scopectl's show and clear (ms_scope_ctl SCOPE_SHOW, SCOPE_CLEAR) keep an
 * unloaded aspect's values, and refuse unknown and unterminated names, bad
 * buffers, clearing a linked aspect, and an unprivileged clear? */
void scope_show_and_clear(void)
{
	static char text[4096];
	struct scope_ctl c = {.op = SCOPE_SHOW, .buffer = text, .length = sizeof text};
	strcpy(c.name, "nosuch");
	if (scope_call(&c) != -L_ENOENT || !c.error[0])
		t_fail("SCOPE_SHOW of no aspect: not -ENOENT with a reason ('%s')", c.error);
	memset(c.name, 'x', sizeof c.name); /* no terminating NUL */
	if (scope_call(&c) != -L_ENOENT)
		t_fail("SCOPE_SHOW of an unterminated name was not -ENOENT");
	if (scope_ctl(SCOPE_LOAD, "/aspects/callcount.o") != 0) {
		t_fail("loading callcount");
		return;
	}
	struct scope_ctl link = {.op = SCOPE_LINK, .binding = 1};
	strcpy(link.name, "callcount");
	if (scope_call(&link) != 0)
		t_fail("linking callcount direct");
	struct stat st;
	stat("/", &st);
	if (scope_ctl(SCOPE_CLEAR, "callcount") != -L_EBUSY)
		t_fail("SCOPE_CLEAR of a linked aspect was not -EBUSY");
	scope_ctl(SCOPE_UNLOAD, "callcount");
	c = (struct scope_ctl){.op = SCOPE_SHOW, .buffer = text, .length = sizeof text - 1};
	strcpy(c.name, "callcount");
	long length = scope_call(&c);
	text[length > 0 ? length : 0] = '\0';
	if (length <= 0 || !strstr(text, "unloaded; its last values") || !strstr(text, "vfs.stat"))
		t_fail("SCOPE_SHOW after unload: %ld '%s'", length, text);
	c.buffer = (char *)0xffff800000001000L;
	if (scope_call(&c) != -L_EFAULT)
		t_fail("SCOPE_SHOW into a kernel address was not -EFAULT");
	int status = t_run_child(clear_as_user, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		t_fail("SCOPE_CLEAR as uid %d was not -EPERM (status %#x)", USER_ID, status);
	if (scope_ctl(SCOPE_CLEAR, "callcount") != 0 ||
	    scope_ctl(SCOPE_CLEAR, "callcount") != -L_ENOENT)
		t_fail("SCOPE_CLEAR as root: not 0 then -ENOENT");
}

/* Attaches racing each other: several root processes, released together
 * through one pipe, each try to attach an endpoint of their own while all
 * hold theirs open (each says it tried, then waits for the others).
 * Exactly one may be the monitor; the others get -EBUSY: none replaced the
 * attached one without closing it. */
#define RACING_ATTACHES 4
#define ATTACH_RACES    32 /* rounds: the window is narrow */

struct attach_pipes {
	int release[2], tried[2], done[2];
};

static void attach_when_released(const struct attach_pipes *p)
{
	close(p->release[1]);
	close(p->tried[0]);
	close(p->done[1]);
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	char byte = 0;
	if (endpoint < 0 || read(p->release[0], &byte, 1) != 0) {
		if (write(p->tried[1], &byte, 1) != 1) /* the parent waits for one a child */
			_exit(3);
		_exit(2);
	}
	long channel = ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (write(p->tried[1], &byte, 1) != 1 || read(p->done[0], &byte, 1) != 0)
		_exit(2); /* the endpoint stays open until every attach was tried */
	_exit(channel >= 0 ? 0 : channel == -L_EBUSY ? 1 : 2);
}

static int wait_for_attach_outcomes(const int *children, int count, int *busy)
{
	int attached = 0;
	for (int i = 0; i < count; i++) {
		int status = 0;
		if (waitpid(children[i], &status, 0) != children[i] || !WIFEXITED(status))
			continue;
		attached += WEXITSTATUS(status) == 0;
		*busy += WEXITSTATUS(status) == 1;
	}
	return attached;
}

static void race_attaches_once(void)
{
	struct attach_pipes p;
	if (pipe(p.release) < 0 || pipe(p.tried) < 0 || pipe(p.done) < 0) {
		t_fail("pipe failed");
		return;
	}
	int children[RACING_ATTACHES], started = 0;
	for (; started < RACING_ATTACHES; started++) {
		children[started] = fork();
		if (children[started] == 0)
			attach_when_released(&p);
		if (children[started] < 0)
			break;
	}
	close(p.release[0]);
	close(p.release[1]); /* every child reads end of file at once */
	close(p.tried[1]);
	char byte;
	for (int i = 0; i < started; i++)
		if (read(p.tried[0], &byte, 1) != 1)
			break; /* a child that died early: its status says so */
	close(p.done[1]);
	close(p.done[0]);
	close(p.tried[0]);
	int busy = 0, attached = wait_for_attach_outcomes(children, started, &busy);
	if (started != RACING_ATTACHES || attached != 1 || busy != RACING_ATTACHES - 1)
		t_fail("%d racing attaches: %d attached, %d refused busy (want 1 and %d)", started,
		       attached, busy, RACING_ATTACHES - 1);
}

void racing_attaches_make_one_monitor(void)
{
	for (int round = 0; round < ATTACH_RACES && !t_failed(); round++)
		race_attaches_once();
}

/* ---- A monitor that detached but runs on -------------------------------------- */

struct lingering_monitor {
	int ready, gate;    /* pipe ends: it says it has detached, then waits */
	int gate_write;     /* the parent's end, closed here: end of file opens the gate */
	bool closes_itself; /* it closes its endpoint, else only gives up the privilege */
};

/* The first monitor: attaches, closes its endpoint (or not), gives up
 * PRIV_MONITOR, says so and waits for the gate; then exits 5 when its inbox
 * holds a call (the next monitor's), 6 when its endpoint is still open (it
 * would receive on without the privilege), else 0. */
static void attach_detach_and_linger(void *argument)
{
	const struct lingering_monitor *how = argument;
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0)
		_exit(2);
	if (how->closes_itself)
		close((int)endpoint);
	if (ms_syscall3(__NR_ms_priv, PRIV_MONITOR, 0, 0) < 0)
		_exit(3);
	struct ipc_stats stats;
	memset(&stats, 0, sizeof stats);
	if (!how->closes_itself &&
	    (ms_syscall3(__NR_ms_ipc_stats, endpoint, (long)&stats, 0) != 0 || !stats.closed))
		_exit(6);
	char byte = 1;
	close(how->gate_write);
	if (write(how->ready, &byte, 1) != 1 || read(how->gate, &byte, 1) < 0)
		_exit(4);
	volatile const struct ipc_message *inbox = (const void *)SCOPE_INBOX_ADDRESS;
	_exit(inbox->token != 0 || inbox->label == 7 ? 5 : 0);
}

/* Receives one call from a child at SCOPE_INBOX_ADDRESS and answers it. */
static void receive_a_call_in_the_inbox(long endpoint, const char *who)
{
	int child = fork();
	if (child == 0)
		call_the_monitor(&endpoint);
	struct ipc_message *inbox = (void *)SCOPE_INBOX_ADDRESS;
	uint64_t token = child > 0 ? take_call(inbox, child) : 0;
	if (token && scope_reply_receive(token, 5, 6, inbox, 0) != -L_EAGAIN)
		t_fail("%s: answering the call did not go on to an empty receive", who);
	int status = 0;
	if (child > 0 &&
	    (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
		t_fail("%s: the caller did not get its answer: status %#x", who, status);
}

/* In a child of the test, which ends with it: a monitor that detached keeps
 * the place while it runs, the one after included. */
static void detach_and_attach_after(void *argument)
{
	bool closes_itself = *(const bool *)argument;
	const char *how = closes_itself ? "closed its endpoint" : "gave up PRIV_MONITOR";
	int ready[2], gate[2];
	if (pipe(ready) < 0 || pipe(gate) < 0) {
		t_fail("pipe failed");
		return;
	}
	struct lingering_monitor lingering = {ready[1], gate[0], gate[1], closes_itself};
	fflush(stdout);
	int first = fork();
	if (first == 0)
		attach_detach_and_linger(&lingering);
	char byte;
	close(ready[1]); /* end of file if the first one ends early */
	if (first < 0 || read(ready[0], &byte, 1) != 1)
		t_fail("the first monitor (%s) did not attach and detach", how);
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel >= 0) {
		t_fail("a monitor attached while the one that %s still runs", how);
		receive_a_call_in_the_inbox(endpoint, "the second monitor");
	} else if (channel != -L_EBUSY) {
		t_fail("attaching while the monitor that %s runs: %ld, expected -EBUSY", how,
		       channel);
	}
	close(gate[1]); /* the first one reads end of file: it looks at its inbox */
	int status = 0;
	if (first > 0 &&
	    (waitpid(first, &status, 0) != first || !WIFEXITED(status) || WEXITSTATUS(status) != 0))
		t_fail("the monitor that %s: status %#x (5: it saw the next one's call, 6: its "
		       "endpoint stayed open)",
		       how, status);
	channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0)
		t_fail("attaching once the monitor that %s has ended: %ld", how, channel);
	else
		receive_a_call_in_the_inbox(endpoint, "the monitor after it");
	if (endpoint >= 0)
		close((int)endpoint);
	close(ready[0]);
	close(gate[0]);
	_exit(t_failed() ? 1 : 0);
}

/* The inbox and the rings stay mapped in a monitor that detached (closed
 * its endpoint and gave up PRIV_MONITOR, or only gave up the privilege,
 * which closes its endpoint for it): while it runs, no other process may
 * attach (-EBUSY), so it never reads the next monitor's calls or events
 * (before, the next monitor attached and the first read its calls in its own
 * inbox; one that only gave up the privilege went on receiving).  Once it
 * has ended, the next monitor attaches and receives. */
void a_detached_monitor_never_sees_the_next_ones_events(void)
{
	static const bool closes_itself[] = {true, false};
	for (int i = 0; i < 2; i++)
		if (t_run_child(detach_and_attach_after, (void *)&closes_itself[i]) != 0)
			t_fail("a monitor that %s (see above)",
			       closes_itself[i] ? "closed its endpoint" : "gave up PRIV_MONITOR");
}

/* The first monitor: attaches, closes its endpoint, gives up PRIV_MONITOR
 * and execs sleep, which runs on without the inbox and rings (exec dropped
 * the memory they were mapped in). */
static void attach_detach_and_exec(void)
{
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0)
		_exit(2);
	close((int)endpoint);
	if (ms_syscall3(__NR_ms_priv, PRIV_MONITOR, 0, 0) < 0)
		_exit(3);
	char *argv[] = {"/bin/sleep", "100000", NULL};
	execv(argv[0], argv);
	_exit(4);
}

static void exec_then_attach_after(void *unused)
{
	(void)unused;
	fflush(stdout);
	int first = fork();
	if (first == 0)
		attach_detach_and_exec();
	if (first < 0 || !t_wait_until_named(first, "sleep")) {
		t_fail("the first monitor did not attach, detach and exec sleep");
		_exit(1);
	}
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0)
		t_fail("attaching while the monitor before runs another program: %ld", channel);
	else
		receive_a_call_in_the_inbox(endpoint, "the monitor after one that exec'd");
	kill(first, SIGKILL);
	waitpid(first, NULL, 0);
	if (endpoint >= 0)
		close((int)endpoint);
	_exit(t_failed() ? 1 : 0);
}

/* A detached monitor holds the place only while the inbox and rings are
 * mapped in it: once it has exec'd another program (exec drops the memory
 * they were mapped in), the next monitor attaches and receives (before, the
 * attach was -EBUSY for as long as the exec'd program ran). */
void a_detached_monitor_that_execs_leaves_the_place(void)
{
	if (t_run_child(exec_then_attach_after, NULL) != 0)
		t_fail("a monitor after one that exec'd (see above)");
}

int user_reply_receive_child_main(void)
{
	long result = ms_syscall6(__NR_ms_scope_reply_receive, 0, 0, 0, (long)SCOPE_INBOX_ADDRESS,
				  1000 * 1000, 0);
	return result < 0 ? (int)-result : 0;
}

/* The monitor attaches and, still privileged with its endpoint open, execs
 * a program that calls ms_scope_reply_receive. */
static void attach_and_exec_a_receiver(void *unused)
{
	(void)unused;
	long endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	long channel = endpoint < 0 ? endpoint : ms_syscall3(__NR_ms_scope_attach, endpoint, 0, 0);
	if (channel < 0)
		_exit(200);
	char *argv[] = {"/bin/usertests", "--reply-receive", NULL};
	execv(argv[0], argv);
	_exit(201);
}

/* Once the monitor has exec'd, another monitor may attach and put the
 * first one's endpoint (the place is free: exec dropped the inbox and
 * rings), so the exec'd program is not the monitor: its reply-receive is
 * -EPERM.  Before, it passed as the monitor and received on an endpoint the
 * next attach could free under it. */
void an_execd_monitor_is_no_longer_the_monitor(void)
{
	int status = t_run_child(attach_and_exec_a_receiver, NULL);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != L_EPERM)
		t_fail(
		    "the exec'd monitor's ms_scope_reply_receive: status %#x, want exit EPERM (%d)",
		    status, L_EPERM);
}

/* Root without PRIV_MONITOR links an aspect into the monitor. */
static void link_into_the_monitor_without_priv_monitor(void *unused)
{
	(void)unused;
	if (ms_syscall3(__NR_ms_priv, PRIV_MONITOR, 0, 0) < 0)
		_exit(2);
	if (scope_ctl(SCOPE_LOAD, "/aspects/callcount.o") != 0)
		_exit(3);
	for (uint32_t binding = 2; binding <= 3; binding++) {
		struct scope_ctl link = {.op = SCOPE_LINK, .binding = binding};
		strcpy(link.name, "callcount");
		long result = ms_syscall3(__NR_ms_scope_ctl, (long)&link, 0, 0);
		if (result != -L_EPERM || !strstr(link.error, "PRIV_MONITOR"))
			t_fail(
			    "linking into the monitor (binding %u) without PRIV_MONITOR: %ld (%s)",
			    binding, result, link.error);
	}
	if (scope_ctl(SCOPE_UNLOAD, "callcount") != 0)
		t_fail("unloading the aspect after the refused links failed");
	_exit(t_failed() ? 1 : 0);
}

/* The monitor the kernel starts for a shm or msg link would take the
 * linker's credentials: root that gave up PRIV_MONITOR got a monitor that
 * could never attach (the link failed after the attach deadline, seconds
 * later).  Such a link is refused at once with -EPERM, saying why, and
 * leaves nothing behind (the aspect unloads, no monitor started). */
void linking_into_the_monitor_needs_priv_monitor(void)
{
	int status = t_run_child(link_into_the_monitor_without_priv_monitor, NULL);
	if (status != 0)
		t_fail("links into the monitor without PRIV_MONITOR: status %#x (see above)",
		       status);
	if (scope_ctl(SCOPE_UNLOAD, "callcount") != -L_ENOENT)
		t_fail("the aspect stayed loaded");
}
