/*
 * rscfltest: per-activity accounting end to end, as init (init=/bin/rscfltest
 * exit=qemu), printing KTAP.  Each case answers one question:
 *   - is the first activity's system call counted?
 *   - does a 10 ms sleep inside an activity show as time off the CPU, blocked,
 *     at least as long as the sleep and longer than the CPU time?
 *   - does writing 1 MiB through a pipe show the pipe and vfs subsystems?
 *   - are bad calls (unknown token, STOP without START, START twice, too many
 *     tokens, bad flags) errors, never a crash?
 *   - with two requests interleaved by switching tokens, is each charged only
 *     its own system calls, and do their wall times add up to at most the
 *     elapsed time?
 *   - does ACCT_NEXT account exactly the next system call, and end when
 *     that call starts another token?
 *   - is the results page private and read-only: a forked child has no
 *     mapping (reading the parent's handle faults), and writing its own page
 *     faults?
 *   - do application metrics come back beside the kernel's, stored by name
 *     or by position?
 *   - does reading only what is used copy the fields, the subsystems in use
 *     and the metrics as a whole read does, and leave the rest alone?
 *   - does touching fresh stack pages count page faults, and the frames they
 *     bring in as allocations of the "trap" subsystem?  (Anonymous mmap
 *     populates its pages at once here: the stack below its first 16 KiB is
 *     what faults in on first touch.)
 *   - are the allocations of a pipe's life (create, write, close) charged
 *     to the system calls that made them, and its frees counted?
 *   - an event loop serving interleaved requests with nested (START while
 *     another is current) and switched tokens: does each request get exactly
 *     its own system calls, nothing twice, and do the requests plus
 *     unattributed add up to every call made while accounting was on?
 *   - are a freed token's STOP, START, switch and free errors?
 *   - do the totals agree with the scheduler's CPU time and the monotonic
 *     clock within the unattributed remainder, and is steal time flagged?
 * No case asserts absolute times: only relations that hold on a slow machine.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "librscfl/librscfl.h"

#define E_NOENT   2
#define E_INVAL   22
#define E_NOSPC   28
#define E_ALREADY 114
#define MSEC      1000000ULL
#define PAGE      4096

static int failures, case_number;
static rscfl_handle handle;

static void report(const char *name, int ok)
{
	case_number++;
	if (!ok)
		failures++;
	printf("%sok %d %s\n", ok ? "" : "not ", case_number, name);
}

#define CHECK(ok, cond)                                             \
	do {                                                        \
		if (!(cond)) {                                      \
			printf("# line %d: %s\n", __LINE__, #cond); \
			ok = 0;                                     \
		}                                                   \
	} while (0)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void print_result(const char *what, const struct rscfl_acct *a)
{
	const struct acct_result *r = &a->kernel;
	printf("# %s: wall %llu cpu %llu out %llu (preempted %llu blocked %llu) switches %llu "
	       "syscalls %llu\n",
	       what, (unsigned long long)r->wall_ns, (unsigned long long)r->cpu_ns,
	       (unsigned long long)r->sched_out_ns, (unsigned long long)r->preempted_ns,
	       (unsigned long long)r->blocked_ns, (unsigned long long)r->context_switches,
	       (unsigned long long)r->syscalls);
	printf("#   interrupts %llu (%llu ns) page faults %llu alloc %llu free %llu bytes\n",
	       (unsigned long long)r->interrupts, (unsigned long long)r->irq_ns,
	       (unsigned long long)r->page_faults, (unsigned long long)r->alloc_bytes,
	       (unsigned long long)r->free_bytes);
	for (unsigned i = 0; i < r->subsystem_count && i < ACCT_MAX_SUBSYSTEMS; i++) {
		const struct acct_subsystem *s = &r->subsystems[i];
		printf("#   %-8s calls %llu inclusive %llu exclusive %llu out %llu irqs %llu "
		       "allocs %llu (%llu bytes) frees %llu\n",
		       s->name, (unsigned long long)s->calls, (unsigned long long)s->inclusive_ns,
		       (unsigned long long)s->exclusive_ns, (unsigned long long)s->sched_out_ns,
		       (unsigned long long)s->interrupts, (unsigned long long)s->allocs,
		       (unsigned long long)s->alloc_bytes, (unsigned long long)s->frees);
	}
}

/* Is the first activity's system call counted?  (It also pays, outside
 * the cases that compare times, for the first run of the freshly linked
 * rscfl aspect, which under QEMU's TCG includes translating its code.) */
static void first_activity_counts_its_call(void)
{
	int ok = 1, token = rscfl_get_token(handle);
	struct rscfl_acct a;
	CHECK(ok, token > 0);
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == 0);
	ms_syscall3(__NR_getpid, 0, 0, 0);
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == 0);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == 0);
	CHECK(ok, a.kernel.syscalls == 1);
	CHECK(ok, rscfl_find_subsystem(&a, "sys") != NULL);
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("first_activity_counts_its_call", ok);
}

/* Does a 10 ms sleep inside an activity show as time off the CPU? */
static void sleep_is_scheduled_out(void)
{
	int ok = 1, token = rscfl_get_token(handle);
	struct rscfl_acct a;
	CHECK(ok, token > 0);
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == 0);
	struct timespec ten_ms = {0, 10 * MSEC};
	nanosleep(&ten_ms, NULL);
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == 0);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == 0);
	print_result("sleep", &a);
	const struct acct_result *r = &a.kernel;
	CHECK(ok, r->sched_out_ns >= 10 * MSEC);
	CHECK(ok, r->blocked_ns >= 10 * MSEC);
	CHECK(ok, r->sched_out_ns > r->cpu_ns);
	CHECK(ok, r->wall_ns >= r->sched_out_ns);
	CHECK(ok, r->context_switches >= 1);
	CHECK(ok, r->state == ACCT_TOKEN_IDLE);
	const struct acct_subsystem *sys = rscfl_find_subsystem(&a, "sys");
	CHECK(ok, sys && sys->calls >= 1 && sys->sched_out_ns >= 10 * MSEC);
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("sleep_is_scheduled_out", ok);
}

/* Does writing 1 MiB through a pipe show the pipe and vfs subsystems? */
static void pipe_write_shows_pipe_and_vfs(void)
{
	static char chunk[4096];
	int ok = 1, fds[2], token = rscfl_get_token(handle);
	struct rscfl_acct a;
	CHECK(ok, token > 0 && pipe(fds) == 0);
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == 0);
	for (int i = 0; i < (1 << 20) / (int)sizeof chunk; i++) {
		if (write(fds[1], chunk, sizeof chunk) != sizeof chunk ||
		    read(fds[0], chunk, sizeof chunk) != sizeof chunk) {
			ok = 0;
			break;
		}
	}
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == 0);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == 0);
	print_result("pipe", &a);
	const struct acct_subsystem *p = rscfl_find_subsystem(&a, "pipe");
	const struct acct_subsystem *v = rscfl_find_subsystem(&a, "vfs");
	CHECK(ok, p && p->calls >= 512);
	CHECK(ok, v && v->calls >= 512);
	CHECK(ok, a.kernel.syscalls >= 512);
	CHECK(ok, p && v && v->inclusive_ns >= p->inclusive_ns);
	close(fds[0]);
	close(fds[1]);
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("pipe_write_shows_pipe_and_vfs", ok);
}

/* Are bad calls errors, never a crash? */
static void bad_input_is_an_error(void)
{
	int ok = 1, tokens[ACCT_MAX_TOKENS], n = 0;
	struct rscfl_acct a;
	CHECK(ok, rscfl_acct(handle, 99, ACCT_START) == -E_INVAL);
	CHECK(ok, rscfl_acct(handle, -1, ACCT_STOP) == -E_INVAL);
	CHECK(ok, rscfl_acct(handle, 3, ACCT_START) == -E_INVAL); /* not allocated */
	CHECK(ok, rscfl_read_acct(handle, 99, &a) == -E_INVAL);
	CHECK(ok, rscfl_read_acct(handle, 3, &a) == -E_INVAL);
	CHECK(ok, rscfl_switch_token(handle, 5) == -E_INVAL);
	CHECK(ok, rscfl_free_token(handle, 0) == -E_INVAL);
	while (n < ACCT_MAX_TOKENS && (tokens[n] = rscfl_get_token(handle)) > 0)
		n++;
	CHECK(ok, n == ACCT_MAX_TOKENS);
	CHECK(ok, rscfl_get_token(handle) == -E_NOSPC);
	CHECK(ok, rscfl_acct(handle, tokens[0], ACCT_STOP) == -E_INVAL);
	CHECK(ok, rscfl_switch_token(handle, tokens[0]) == -E_INVAL);
	CHECK(ok, rscfl_acct(handle, tokens[0], ACCT_START | ACCT_STOP) == -E_INVAL);
	CHECK(ok, rscfl_acct(handle, tokens[0], 0x100) == -E_INVAL);
	CHECK(ok, rscfl_acct(handle, tokens[0], 0) == -E_INVAL);
	CHECK(ok, rscfl_acct(handle, tokens[0], ACCT_START) == 0);
	CHECK(ok, rscfl_acct(handle, tokens[0], ACCT_START) == -E_ALREADY);
	CHECK(ok, rscfl_acct(handle, tokens[0], ACCT_STOP) == 0);
	CHECK(ok, rscfl_acct(handle, tokens[0], ACCT_STOP) == -E_INVAL);
	for (int i = 0; i < n; i++)
		CHECK(ok, rscfl_free_token(handle, tokens[i]) == 0);
	CHECK(ok, rscfl_free_token(handle, tokens[0]) == -E_INVAL);
	CHECK(ok, rscfl_read_acct(handle, tokens[0], &a) == -E_INVAL);
	CHECK(ok, rscfl_read_acct(NULL, 1, &a) == -E_INVAL);
	report("bad_input_is_an_error", ok);
}

static void stat_times(int count)
{
	struct stat st;
	for (int i = 0; i < count; i++)
		stat("/", &st);
}

static uint64_t calls_of(const struct rscfl_acct *a, const char *name)
{
	const struct acct_subsystem *s = rscfl_find_subsystem(a, name);
	return s ? s->calls : 0;
}

/* With two requests interleaved by switching tokens, is each charged only its
 * own work, and nothing twice? */
static void switched_tokens_charge_each_once(void)
{
	int ok = 1, first = rscfl_get_token(handle), second = rscfl_get_token(handle);
	struct rscfl_acct a, b;
	CHECK(ok, first > 0 && second > 0);
	uint64_t start = now_ns();
	CHECK(ok, rscfl_acct(handle, first, ACCT_START) == 0);
	stat_times(10);
	CHECK(ok, rscfl_acct(handle, second, ACCT_START) == 0); /* first is suspended */
	stat_times(20);
	CHECK(ok, rscfl_switch_token(handle, first) == 0);
	stat_times(10);
	CHECK(ok, rscfl_switch_token(handle, second) == 0);
	stat_times(20);
	CHECK(ok, rscfl_acct(handle, second, ACCT_STOP) == 0);
	CHECK(ok, rscfl_acct(handle, first, ACCT_STOP) == 0); /* suspended: stops too */
	uint64_t elapsed = now_ns() - start;
	CHECK(ok,
	      rscfl_read_acct(handle, first, &a) == 0 && rscfl_read_acct(handle, second, &b) == 0);
	print_result("first", &a);
	print_result("second", &b);
	/* Each stat is one vfs.stat call (at least); second did twice first's. */
	CHECK(ok, calls_of(&a, "vfs") >= 20 && calls_of(&b, "vfs") >= 40);
	CHECK(ok, calls_of(&b, "vfs") >= 2 * calls_of(&a, "vfs") - 4);
	CHECK(ok, calls_of(&b, "vfs") <= 2 * calls_of(&a, "vfs") + 4);
	CHECK(ok, a.kernel.wall_ns + b.kernel.wall_ns <= elapsed);
	CHECK(ok, a.kernel.cpu_ns <= a.kernel.wall_ns && b.kernel.cpu_ns <= b.kernel.wall_ns);
	CHECK(ok, rscfl_free_token(handle, first) == 0 && rscfl_free_token(handle, second) == 0);
	report("switched_tokens_charge_each_once", ok);
}

/* Does ACCT_NEXT account exactly the next system call? */
static void next_accounts_one_system_call(void)
{
	int ok = 1, token = rscfl_get_token(handle);
	struct rscfl_acct a;
	CHECK(ok, rscfl_acct(handle, token, ACCT_NEXT) == 0);
	stat_times(3);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == 0);
	print_result("next", &a);
	CHECK(ok, a.kernel.syscalls == 1);
	CHECK(ok, calls_of(&a, "vfs") >= 1 && calls_of(&a, "vfs") < 3);
	CHECK(ok, a.kernel.state == ACCT_TOKEN_IDLE);
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == -E_INVAL);
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("next_accounts_one_system_call", ok);
}

/* A token of ACCT_NEXT whose system call starts another token: the call
 * ends it (idle, the call counted) and the other one is current, not a
 * token left started that the program never started. */
static void next_ends_at_a_start_of_another(void)
{
	int ok = 1, waiting = rscfl_get_token(handle), other = rscfl_get_token(handle);
	struct rscfl_acct a;
	CHECK(ok, rscfl_acct(handle, waiting, ACCT_NEXT) == 0);
	CHECK(ok, rscfl_acct(handle, other, ACCT_START) == 0);
	stat_times(2);
	CHECK(ok, rscfl_read_acct(handle, waiting, &a) == 0);
	print_result("next, then a start", &a);
	CHECK(ok, a.kernel.state == ACCT_TOKEN_IDLE);
	CHECK(ok, a.kernel.syscalls == 1);
	CHECK(ok, calls_of(&a, "vfs") == 0);
	CHECK(ok, rscfl_acct(handle, waiting, ACCT_STOP) == -E_INVAL);
	CHECK(ok, rscfl_read_acct(handle, other, &a) == 0);
	CHECK(ok, a.kernel.state == ACCT_TOKEN_CURRENT);
	CHECK(ok, rscfl_acct(handle, other, ACCT_STOP) == 0);
	CHECK(ok, rscfl_read_acct(handle, other, &a) == 0);
	CHECK(ok, a.kernel.syscalls >= 2 && calls_of(&a, "vfs") >= 2);
	CHECK(ok, rscfl_free_token(handle, waiting) == 0 && rscfl_free_token(handle, other) == 0);
	report("next_ends_at_a_start_of_another", ok);
}

static int child_status(pid_t pid)
{
	int status = 0;
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* Is the results page private to its process, and read-only? */
static void results_page_is_private_and_read_only(void)
{
	int ok = 1, token = rscfl_get_token(handle);
	CHECK(ok, rscfl_acct(handle, token, ACCT_START | ACCT_TK_RESET) == 0);
	stat_times(2);
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		/* The child is not an owner: the kernel says so, librscfl says
		 * the parent's handle is not the child's, and the page it points
		 * at is not mapped here. */
		if (ms_syscall3(__NR_ms_acct_get_token, 0, 0, 0) != -E_NOENT)
			_exit(3);
		struct rscfl_acct a;
		if (rscfl_read_acct(handle, token, &a) != -E_NOENT ||
		    rscfl_get_token(handle) != -E_NOENT)
			_exit(5);
		(void)*(volatile const uint32_t *)&handle->page->magic;
		_exit(4);
	}
	int status = child_status(pid);
	CHECK(ok, WIFSIGNALED(status) && WTERMSIG(status) == 11);
	pid = fork();
	if (pid == 0) { /* rscfl_init makes the handle the child's own */
		struct rscfl_acct a;
		rscfl_handle mine = rscfl_init();
		int child_token = mine == handle ? rscfl_get_token(mine) : -1;
		int started = child_token > 0 ? rscfl_acct(mine, child_token, ACCT_START) : -1;
		stat_times(1);
		_exit(started == 0 && rscfl_acct(mine, child_token, ACCT_STOP) == 0 &&
			      rscfl_read_acct(mine, child_token, &a) == 0 && a.kernel.syscalls >= 1
			  ? 0
			  : 6);
	}
	status = child_status(pid);
	CHECK(ok, WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pid = fork();
	if (pid == 0) {
		long page = ms_syscall3(__NR_ms_acct_init, 0, 0, 0);
		if (page != (long)ACCT_USER_ADDRESS)
			_exit(3);
		const struct acct_page *mine = (const struct acct_page *)page;
		if (mine->magic != ACCT_PAGE_MAGIC || mine->pid != getpid())
			_exit(5);
		*(volatile uint32_t *)&mine->magic = 0;
		_exit(4);
	}
	status = child_status(pid);
	CHECK(ok, WIFSIGNALED(status) && WTERMSIG(status) == 11);
	CHECK(ok, handle->page->magic == ACCT_PAGE_MAGIC && handle->page->pid == getpid());
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("results_page_is_private_and_read_only", ok);
}

/* Do application metrics come back beside the kernel's? */
static void metrics_are_stored_beside(void)
{
	int ok = 1, token = rscfl_get_token(handle);
	struct rscfl_acct a;
	CHECK(ok, rscfl_store_metric(handle, token, "bytes", 100) == 0);
	CHECK(ok, rscfl_store_metric(handle, token, "bytes", 200) == 0);
	CHECK(ok, rscfl_store_metric(handle, token, "rows", 3) == 0);
	CHECK(ok, rscfl_store_metric(handle, token, "c", 1) == 0);
	CHECK(ok, rscfl_store_metric(handle, token, "d", 1) == 0);
	CHECK(ok, rscfl_store_metric(handle, token, "e", 1) == -E_NOSPC);
	CHECK(ok, rscfl_store_metric(handle, 99, "x", 1) == -E_INVAL);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == 0);
	CHECK(ok, a.metric_count == 4 && a.metrics[0].value == 200 && a.metrics[1].value == 3);
	CHECK(ok, strcmp(a.metrics[1].name, "rows") == 0);
	/* By position, in place of those: the names kept NUL-ended. */
	struct rscfl_metric two[] = {{"status", 200}, {"", 5}};
	memcpy(two[1].name, "body_bytes_and_more", RSCFL_METRIC_NAME); /* no NUL in it */
	struct rscfl_metric five[RSCFL_MAX_METRICS + 1] = {{"a", 1}};
	CHECK(ok, rscfl_store_metrics(handle, token, two, 2) == 0);
	CHECK(ok, rscfl_store_metrics(handle, token, five, RSCFL_MAX_METRICS + 1) == -E_NOSPC);
	CHECK(ok, rscfl_store_metrics(handle, 99, two, 1) == -E_INVAL);
	CHECK(ok, rscfl_store_metrics(handle, token, NULL, 1) == -E_INVAL);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == 0);
	CHECK(ok, a.metric_count == 2 && a.metrics[0].value == 200 && a.metrics[1].value == 5);
	CHECK(ok, strcmp(a.metrics[0].name, "status") == 0);
	CHECK(ok, strcmp(a.metrics[1].name, "body_bytes_and_") == 0);
	CHECK(ok, rscfl_store_metric(handle, token, "status", 404) == 0);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == 0 && a.metric_count == 2);
	CHECK(ok, a.metrics[0].value == 404);
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("metrics_are_stored_beside", ok);
}

/* Does rscfl_read_acct_used copy what rscfl_read_acct does for the fields,
 * the subsystems in use and the metrics, and leave the rest alone? */
static void read_used_copies_what_is_used(void)
{
	static char chunk[512];
	static struct rscfl_acct all, used;
	int ok = 1, fds[2], token = rscfl_get_token(handle);
	CHECK(ok, token > 0 && pipe(fds) == 0);
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == 0);
	CHECK(ok, write(fds[1], chunk, sizeof chunk) == sizeof chunk);
	CHECK(ok, read(fds[0], chunk, sizeof chunk) == sizeof chunk);
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == 0);
	CHECK(ok, rscfl_store_metric(handle, token, "bytes", 512) == 0);
	memset(&used, 0xa5, sizeof used);
	CHECK(ok, rscfl_read_acct(handle, token, &all) == 0);
	CHECK(ok, rscfl_read_acct_used(handle, token, &used) == 0);
	unsigned n = all.kernel.subsystem_count;
	CHECK(ok, n > 0 && n < ACCT_MAX_SUBSYSTEMS);
	CHECK(ok, memcmp(&all.kernel, &used.kernel, offsetof(struct acct_result, subsystems)) == 0);
	CHECK(ok, memcmp(all.kernel.subsystems, used.kernel.subsystems,
			 n * sizeof all.kernel.subsystems[0]) == 0);
	CHECK(ok,
	      n < ACCT_MAX_SUBSYSTEMS && used.kernel.subsystems[n].calls == 0xa5a5a5a5a5a5a5a5ULL);
	CHECK(ok, used.metric_count == 1 && used.metrics[0].value == 512);
	CHECK(ok, strcmp(used.metrics[0].name, "bytes") == 0);
	CHECK(ok, used.metrics[1].value == (int64_t)0xa5a5a5a5a5a5a5a5ULL);
	CHECK(ok, rscfl_read_acct_used(handle, 99, &used) == -E_INVAL);
	close(fds[0]);
	close(fds[1]);
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("read_used_copies_what_is_used", ok);
}

/* Touches every page of a 1 MiB stack frame, far below anything used before. */
__attribute__((noinline)) static void touch_deep_stack(void)
{
	volatile char area[1 << 20];
	for (unsigned i = 0; i < sizeof area; i += PAGE)
		area[i] = 1;
}

/* Does touching fresh stack pages count page faults, with the frames they
 * bring in as the "trap" subsystem's allocations? */
static void fresh_stack_pages_are_page_faults(void)
{
	int ok = 1, token = rscfl_get_token(handle);
	struct rscfl_acct a;
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == 0);
	touch_deep_stack();
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == 0);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == 0);
	print_result("stack", &a);
	const struct acct_result *r = &a.kernel;
	const struct acct_subsystem *trap = rscfl_find_subsystem(&a, "trap");
	CHECK(ok, r->page_faults >= 200); /* 256 pages, a few near the top seen before */
	CHECK(ok, trap && trap->calls >= r->page_faults);
	CHECK(ok, trap && trap->allocs >= 200 && trap->alloc_bytes >= 200 * PAGE);
	CHECK(ok, trap && trap->exclusive_ns > 0 && trap->exclusive_ns <= trap->inclusive_ns);
	CHECK(ok, trap && r->alloc_bytes >= trap->alloc_bytes);
	CHECK(ok, r->syscalls == 0);
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("fresh_stack_pages_are_page_faults", ok);
}

/* Are the allocations of a pipe's life (its buffer is a page) charged to the
 * system calls that made them, and its frees counted? */
static void pipe_allocations_are_charged(void)
{
	int ok = 1, fds[2], token = rscfl_get_token(handle);
	struct rscfl_acct a;
	char byte = 'x';
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == 0);
	CHECK(ok, pipe(fds) == 0);
	CHECK(ok, write(fds[1], &byte, 1) == 1);
	CHECK(ok, close(fds[0]) == 0 && close(fds[1]) == 0);
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == 0);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == 0);
	print_result("pipe life", &a);
	const struct acct_result *r = &a.kernel;
	const struct acct_subsystem *sys = rscfl_find_subsystem(&a, "sys");
	CHECK(ok, sys && sys->allocs >= 1 && sys->alloc_bytes >= PAGE);
	CHECK(ok, sys && sys->frees >= 1);
	CHECK(ok, sys && r->alloc_bytes >= sys->alloc_bytes);
	for (unsigned i = 0; i < r->subsystem_count; i++)
		CHECK(ok, !sys || r->subsystems[i].alloc_bytes <= r->alloc_bytes);
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("pipe_allocations_are_charged", ok);
}

static void getpid_times(int count)
{
	for (int i = 0; i < count; i++)
		ms_syscall3(__NR_getpid, 0, 0, 0);
}

/* Checks the sums within one result; returns 1 when they hold. */
static int result_adds_up(const struct rscfl_acct *a)
{
	int ok = 1;
	const struct acct_result *r = &a->kernel;
	uint64_t exclusive = 0;
	CHECK(ok, r->cpu_ns <= r->wall_ns);
	CHECK(ok, r->sched_out_ns == r->preempted_ns + r->blocked_ns);
	for (unsigned i = 0; i < r->subsystem_count; i++) {
		const struct acct_subsystem *s = &r->subsystems[i];
		CHECK(ok, s->exclusive_ns <= s->inclusive_ns);
		CHECK(ok, s->sched_out_ns == s->preempted_ns + s->blocked_ns);
		exclusive += s->exclusive_ns;
	}
	CHECK(ok, exclusive <= r->wall_ns); /* outermost calls only: nothing twice */
	const struct acct_subsystem *sys = rscfl_find_subsystem(a, "sys");
	CHECK(ok, (sys ? sys->calls : 0) == r->syscalls);
	return ok;
}

/* An event loop serving two interleaved requests: does each get exactly
 * its own system calls, and do the requests plus unattributed add up to
 * every call made while accounting was on? */
static void event_loop_adds_up_with_unattributed(void)
{
	int ok = 1, first = rscfl_get_token(handle), second = rscfl_get_token(handle);
	struct rscfl_acct a, b, before, after;
	CHECK(ok, first > 0 && second > 0);
	CHECK(ok, rscfl_read_unattributed(handle, &before) == 0);
	uint64_t start = now_ns();
	/* Control calls (START, STOP, switch) are charged to nobody. */
	CHECK(ok, rscfl_acct(handle, first, ACCT_START) == 0);
	getpid_times(2);                                        /* first */
	CHECK(ok, rscfl_acct(handle, second, ACCT_START) == 0); /* first suspended */
	getpid_times(3);                                        /* second */
	CHECK(ok, rscfl_switch_token(handle, first) == 0);
	getpid_times(1);                                      /* first */
	CHECK(ok, rscfl_acct(handle, first, ACCT_STOP) == 0); /* second still started */
	getpid_times(4);                                      /* unattributed */
	CHECK(ok, rscfl_switch_token(handle, second) == 0);
	getpid_times(2);                                       /* second */
	CHECK(ok, rscfl_acct(handle, second, ACCT_STOP) == 0); /* accounting off */
	getpid_times(5);                                       /* nobody's */
	uint64_t elapsed = now_ns() - start;
	CHECK(ok, rscfl_read_acct(handle, first, &a) == 0);
	CHECK(ok, rscfl_read_acct(handle, second, &b) == 0);
	CHECK(ok, rscfl_read_unattributed(handle, &after) == 0);
	print_result("request 1", &a);
	print_result("request 2", &b);
	print_result("unattributed", &after);
	uint64_t unattributed = after.kernel.syscalls - before.kernel.syscalls;
	CHECK(ok, a.kernel.syscalls == 3);
	CHECK(ok, b.kernel.syscalls == 5);
	CHECK(ok, unattributed == 4);
	CHECK(ok, a.kernel.syscalls + b.kernel.syscalls + unattributed == 2 + 3 + 1 + 4 + 2);
	CHECK(ok, a.kernel.wall_ns + b.kernel.wall_ns +
			  (after.kernel.wall_ns - before.kernel.wall_ns) <=
		      elapsed);
	CHECK(ok, after.kernel.wall_ns > before.kernel.wall_ns);
	CHECK(ok, result_adds_up(&a) && result_adds_up(&b));
	CHECK(ok, after.kernel.state == ACCT_TOKEN_IDLE);
	CHECK(ok, rscfl_read_unattributed(NULL, &after) == -E_INVAL);
	CHECK(ok, rscfl_free_token(handle, first) == 0 && rscfl_free_token(handle, second) == 0);
	report("event_loop_adds_up_with_unattributed", ok);
}

/* Are a freed token's STOP, START, switch, read and free errors? */
static void freed_token_refuses_everything(void)
{
	int ok = 1, token = rscfl_get_token(handle);
	struct rscfl_acct a;
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == 0);
	CHECK(ok, rscfl_free_token(handle, token) == 0); /* started: stopped by the free */
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == -E_INVAL);
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == -E_INVAL);
	CHECK(ok, rscfl_acct(handle, token, ACCT_NEXT) == -E_INVAL);
	CHECK(ok, rscfl_switch_token(handle, token) == -E_INVAL);
	CHECK(ok, rscfl_read_acct(handle, token, &a) == -E_INVAL);
	CHECK(ok, rscfl_free_token(handle, token) == -E_INVAL);
	report("freed_token_refuses_everything", ok);
}

/* The scheduler's CPU time of this process: the kernel's clock_gettime of
 * Linux's CLOCK_PROCESS_CPUTIME_ID (2), which newlib's headers and the libc
 * glue do not name. */
static uint64_t cpu_time_ns(void)
{
	struct {
		int64_t seconds, nanoseconds;
	} ts = {0, 0};
	ms_syscall3(__NR_clock_gettime, 2, (long)&ts, 0);
	return (uint64_t)ts.seconds * 1000000000ULL + (uint64_t)ts.nanoseconds;
}

/* Work of every kind the accounting charges: system calls, a pipe (memory,
 * two subsystems), a sleep (time off the CPU) and user-mode loops. */
static void mixed_work(void)
{
	static char chunk[PAGE];
	int fds[2];
	if (pipe(fds) != 0)
		return;
	for (int i = 0; i < 20; i++) {
		if (write(fds[1], chunk, sizeof chunk) != sizeof chunk ||
		    read(fds[0], chunk, sizeof chunk) != sizeof chunk)
			break;
		for (volatile int j = 0; j < 2000; j++)
			;
	}
	getpid_times(50);
	struct timespec pause = {0, 2 * MSEC};
	nanosleep(&pause, NULL);
	close(fds[0]);
	close(fds[1]);
}

/* Two clocks that know nothing of the accounting, around START and STOP.
 * The remainder between each and the result is the time outside the
 * activity but inside the clocks: reading them and the START and STOP calls
 * themselves, which an empty activity measured the same way bounds. */
struct outside_measure {
	uint64_t wall_ns, cpu_ns;
};

static struct outside_measure measured_activity(int token, void (*work)(void), struct rscfl_acct *a)
{
	uint64_t wall = now_ns(), cpu = cpu_time_ns();
	rscfl_acct(handle, token, ACCT_START | ACCT_TK_RESET);
	if (work)
		work();
	rscfl_acct(handle, token, ACCT_STOP);
	struct outside_measure m = {now_ns() - wall, cpu_time_ns() - cpu};
	rscfl_read_acct(handle, token, a);
	return m;
}

/* Do the totals agree with measures taken without the accounting: the
 * scheduler's CPU time of the process (CLOCK_PROCESS_CPUTIME_ID) and the
 * monotonic clock?  Each result total is at most its outside measure and
 * falls short of it by no more than the unattributed remainder: twice what
 * an empty activity leaves outside (the START and STOP of both runs), plus
 * one timer interrupt that may land in one run's brackets and not the
 * other's (ACCT_REMAINDER_TICK_NS).  Inside, the wall time splits exactly
 * into CPU, off-CPU and steal time, and the subsystems' exclusive times fit
 * in the wall time.  The steal time is flagged measured or not reported,
 * never both, and is 0 when not reported. */
#define ACCT_REMAINDER_TICK_NS 20000ULL
static void totals_match_independent_clocks(void)
{
	int ok = 1, server = rscfl_get_token(handle), token = rscfl_get_token(handle);
	struct rscfl_acct empty, full;
	CHECK(ok, server > 0 && token > 0);
	/* A started token keeps the accounting woven (as httpd's server token
	 * does), so the START and STOP measured take no weave. */
	CHECK(ok, rscfl_acct(handle, server, ACCT_START) == 0);
	struct outside_measure bracket = measured_activity(token, NULL, &empty);
	struct outside_measure outside = measured_activity(token, mixed_work, &full);
	const struct acct_result *r = &full.kernel;
	uint64_t steal = handle->page->steal_ns[token - 1];
	uint64_t wall_gap = outside.wall_ns - r->wall_ns,
		 cpu_gap = outside.cpu_ns - (r->cpu_ns + steal);
	uint64_t wall_allowed =
	    2 * (bracket.wall_ns - empty.kernel.wall_ns) + ACCT_REMAINDER_TICK_NS;
	uint64_t cpu_allowed = 2 * (bracket.cpu_ns - empty.kernel.cpu_ns) + ACCT_REMAINDER_TICK_NS;
	printf("# wall %llu ns (clock %llu, remainder %llu, allowed %llu); cpu %llu ns "
	       "(scheduler %llu, remainder %llu, allowed %llu); out %llu steal %llu\n",
	       (unsigned long long)r->wall_ns, (unsigned long long)outside.wall_ns,
	       (unsigned long long)wall_gap, (unsigned long long)wall_allowed,
	       (unsigned long long)r->cpu_ns, (unsigned long long)outside.cpu_ns,
	       (unsigned long long)cpu_gap, (unsigned long long)cpu_allowed,
	       (unsigned long long)r->sched_out_ns, (unsigned long long)steal);
	CHECK(ok, r->wall_ns <= outside.wall_ns && wall_gap <= wall_allowed);
	CHECK(ok, r->cpu_ns + steal <= outside.cpu_ns && cpu_gap <= cpu_allowed);
	CHECK(ok, r->wall_ns == r->cpu_ns + r->sched_out_ns + steal);
	CHECK(ok, r->blocked_ns >= 2 * MSEC);
	uint64_t exclusive = 0;
	for (unsigned i = 0; i < r->subsystem_count && i < ACCT_MAX_SUBSYSTEMS; i++)
		exclusive += r->subsystems[i].exclusive_ns;
	CHECK(ok, exclusive > 0 && exclusive <= r->wall_ns);
	unsigned flags =
	    handle->page->flags & (ACCT_PAGE_STEAL_MEASURED | ACCT_PAGE_STEAL_NOT_REPORTED);
	CHECK(ok, flags == ACCT_PAGE_STEAL_MEASURED || flags == ACCT_PAGE_STEAL_NOT_REPORTED);
	CHECK(ok, !(flags & ACCT_PAGE_STEAL_NOT_REPORTED) || steal == 0);
	if (!ok)
		print_result("mixed work", &full);
	CHECK(ok, rscfl_switch_token(handle, server) == 0);
	CHECK(ok, rscfl_acct(handle, server, ACCT_STOP) == 0);
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	CHECK(ok, rscfl_free_token(handle, server) == 0);
	report("totals_match_independent_clocks", ok);
}

/* Not a case: what accounting adds per system call and per pipe round trip,
 * printed for docs/PERFORMANCE.md (under -icount shift=0, 1 ns is one
 * instruction). */
static uint64_t pipe_round_trips(int fds[2], int count)
{
	static char chunk[PAGE];
	uint64_t start = now_ns();
	for (int i = 0; i < count; i++)
		if (write(fds[1], chunk, sizeof chunk) != sizeof chunk ||
		    read(fds[0], chunk, sizeof chunk) != sizeof chunk)
			return 0;
	return (now_ns() - start) / (uint64_t)count;
}

static uint64_t getpid_cost(int count)
{
	uint64_t start = now_ns();
	getpid_times(count);
	return (now_ns() - start) / (uint64_t)count;
}

static void print_costs(void)
{
	enum { CALLS = 2000, TRIPS = 200 };
	int fds[2], token = rscfl_get_token(handle);
	if (token <= 0 || pipe(fds) != 0)
		return;
	uint64_t getpid_off = getpid_cost(CALLS), pipe_off = pipe_round_trips(fds, TRIPS);
	rscfl_acct(handle, token, ACCT_START);
	uint64_t getpid_on = getpid_cost(CALLS), pipe_on = pipe_round_trips(fds, TRIPS);
	rscfl_acct(handle, token, ACCT_STOP);
	printf("# cost: getpid %llu ns off, %llu ns accounted; 4 KiB pipe write+read %llu ns off, "
	       "%llu ns accounted\n",
	       (unsigned long long)getpid_off, (unsigned long long)getpid_on,
	       (unsigned long long)pipe_off, (unsigned long long)pipe_on);
	close(fds[0]);
	close(fds[1]);
	rscfl_free_token(handle, token);
}

int main(void)
{
	printf("KTAP version 1\n1..15\n");
	handle = rscfl_init();
	if (!handle || handle->page->magic != ACCT_PAGE_MAGIC) {
		printf("# rscfl_init failed\n");
		return 1;
	}
	first_activity_counts_its_call();
	sleep_is_scheduled_out();
	pipe_write_shows_pipe_and_vfs();
	bad_input_is_an_error();
	switched_tokens_charge_each_once();
	next_accounts_one_system_call();
	next_ends_at_a_start_of_another();
	results_page_is_private_and_read_only();
	metrics_are_stored_beside();
	read_used_copies_what_is_used();
	fresh_stack_pages_are_page_faults();
	pipe_allocations_are_charged();
	event_loop_adds_up_with_unattributed();
	freed_token_refuses_everything();
	totals_match_independent_clocks();
	print_costs();
	printf(failures ? "# %d FAILED\n" : "# ALL TESTS PASSED\n", failures);
	return failures ? 1 : 0;
}
