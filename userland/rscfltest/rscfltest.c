/*
 * rscfltest: per-activity accounting end to end, as init (init=/bin/rscfltest
 * exit=qemu), printing KTAP.  Each case answers one question:
 *   - does a 10 ms sleep inside an activity show as time off the CPU, blocked,
 *     at least as long as the sleep and longer than the CPU time?
 *   - does writing 1 MiB through a pipe show the pipe and vfs subsystems?
 *   - are bad calls (unknown token, STOP without START, START twice, too many
 *     tokens, bad flags) errors, never a crash?
 *   - with two requests interleaved by switching tokens, is each charged only
 *     its own system calls, and do their wall times add up to at most the
 *     elapsed time?
 *   - does ACCT_NEXT account exactly the next system call?
 *   - is the results page private and read-only: a forked child has no
 *     mapping (reading the parent's handle faults), and writing its own page
 *     faults?
 *   - do application metrics come back beside the kernel's?
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
	for (unsigned i = 0; i < r->subsystem_count && i < ACCT_MAX_SUBSYSTEMS; i++)
		printf("#   %-8s calls %llu inclusive %llu out %llu\n", r->subsystems[i].name,
		       (unsigned long long)r->subsystems[i].calls,
		       (unsigned long long)r->subsystems[i].inclusive_ns,
		       (unsigned long long)r->subsystems[i].sched_out_ns);
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
		/* The child is not an owner: the kernel says so, then its copy of
		 * the parent's handle points at nothing mapped. */
		if (ms_syscall3(__NR_ms_acct_get_token, 0, 0, 0) != -E_NOENT)
			_exit(3);
		struct rscfl_acct a;
		rscfl_read_acct(handle, token, &a);
		_exit(4);
	}
	int status = child_status(pid);
	CHECK(ok, WIFSIGNALED(status) && WTERMSIG(status) == 11);
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
	CHECK(ok, rscfl_free_token(handle, token) == 0);
	report("metrics_are_stored_beside", ok);
}

int main(void)
{
	printf("KTAP version 1\n1..7\n");
	handle = rscfl_init();
	if (!handle || handle->page->magic != ACCT_PAGE_MAGIC) {
		printf("# rscfl_init failed\n");
		return 1;
	}
	sleep_is_scheduled_out();
	pipe_write_shows_pipe_and_vfs();
	bad_input_is_an_error();
	switched_tokens_charge_each_once();
	next_accounts_one_system_call();
	results_page_is_private_and_read_only();
	metrics_are_stored_beside();
	printf(failures ? "# %d FAILED\n" : "# ALL TESTS PASSED\n", failures);
	return failures ? 1 : 0;
}
