/*
 * acctbench: what librscfl's calls cost, run as init (init=/bin/acctbench
 * exit=qemu) and timed with RDTSC, which user mode may read.  Under QEMU
 * -icount shift=0 a tick is a guest instruction (the calibration loop of a
 * known instruction count shows it), so the figures repeat from run to run;
 * tests/bench_acct.py (make bench-acct) boots it that way and reads the
 * "acct_bench: case <name> ops <n> ticks <t>" lines.
 *
 * Cases, each timed in BATCHES batches of a few operations, the median batch
 * kept (a timer interrupt lands in some batches, not in the median):
 *   getpid       one system call round trip, the yardstick
 *   start-stop   rscfl_acct START then STOP with nothing else accounted: the
 *                kernel weaves its advice at START and unweaves it at STOP
 *   request      what httpd -a pays per request, with its server token
 *                started (suspended, so the aspect stays linked):
 *                START|TK_RESET, STOP
 *   switch-pair  two rscfl_switch_token calls between started tokens
 *   read         rscfl_read_acct of a result with subsystems (no system call)
 *   file-off     a request's kernel work without the network: open
 *                /www/small.txt, fstat, read it, close, write it to a pipe
 *                and read it back, accounting off (nothing woven)
 *   file-on      the same inside httpd's per-request sequence, with the
 *                server token started: what accounting adds to that work,
 *                control calls and the advice on every join point together
 *   getpid-other getpid in a child process that is not accounted, while
 *                this one's server token is started (the aspect linked):
 *                what accounting on for one process costs the others
 * The loop itself is timed and subtracted.  Exits 0 when every call worked.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "librscfl/librscfl.h"

#define BATCHES            15
#define CALIBRATION_ROUNDS 10000
#define OPS                8 /* operations per batch */

static rscfl_handle handle;
static int request_token, server_token;
static int failures;
static int pipe_fds[2];

static inline uint64_t ticks_now(void)
{
	uint32_t low, high;
	__asm__ volatile("rdtsc" : "=a"(low), "=d"(high));
	return (uint64_t)high << 32 | low;
}

/* Ticks of a loop of CALIBRATION_ROUNDS * 10 + 1 instructions. */
static uint64_t calibration_ticks(void)
{
	uint64_t start = ticks_now();
	__asm__ volatile("mov %0, %%ecx\n"
			 "1: nop; nop; nop; nop; nop; nop; nop; nop\n"
			 "dec %%ecx\n"
			 "jnz 1b\n"
			 :
			 : "i"(CALIBRATION_ROUNDS)
			 : "rcx", "cc");
	return ticks_now() - start;
}

static void check(int result, const char *what)
{
	if (result < 0) {
		printf("acct_bench: %s failed: %d\n", what, result);
		failures++;
	}
}

static void op_nothing(void)
{
	__asm__ volatile("");
}

static void op_getpid(void)
{
	ms_syscall3(__NR_getpid, 0, 0, 0);
}

static void op_start_stop(void)
{
	check(rscfl_acct(handle, request_token, ACCT_START), "START");
	check(rscfl_acct(handle, request_token, ACCT_STOP), "STOP");
}

static void op_request(void)
{
	check(rscfl_acct(handle, request_token, ACCT_START | ACCT_TK_RESET), "START|TK_RESET");
	check(rscfl_acct(handle, request_token, ACCT_STOP), "STOP");
}

static void op_switch_pair(void)
{
	check(rscfl_switch_token(handle, request_token), "switch to the request");
	check(rscfl_switch_token(handle, server_token), "switch to the server");
}

static void op_read(void)
{
	static struct rscfl_acct acct;
	check(rscfl_read_acct(handle, request_token, &acct), "read");
}

static void op_file_off(void)
{
	char buffer[64];
	struct stat st;
	int fd = open("/www/small.txt", O_RDONLY);
	check(fd, "open /www/small.txt");
	if (fd < 0)
		return;
	fstat(fd, &st);
	ssize_t n = read(fd, buffer, sizeof buffer);
	close(fd);
	if (n > 0 && write(pipe_fds[1], buffer, (size_t)n) == n)
		read(pipe_fds[0], buffer, (size_t)n);
}

static void op_file_on(void)
{
	check(rscfl_acct(handle, request_token, ACCT_START | ACCT_TK_RESET), "START|TK_RESET");
	op_file_off();
	check(rscfl_acct(handle, request_token, ACCT_STOP), "STOP");
}

static int compare(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The median over BATCHES of the ticks of ops calls of op. */
static uint64_t time_op(void (*op)(void), unsigned ops)
{
	uint64_t batches[BATCHES];
	op(); /* warm: first touches, first weave */
	for (unsigned b = 0; b < BATCHES; b++) {
		uint64_t start = ticks_now();
		for (unsigned i = 0; i < ops; i++)
			op();
		batches[b] = ticks_now() - start;
	}
	qsort(batches, BATCHES, sizeof batches[0], compare);
	return batches[BATCHES / 2];
}

static void report(const char *name, void (*op)(void), unsigned ops, uint64_t loop)
{
	uint64_t ticks = time_op(op, ops);
	ticks = ticks > loop ? ticks - loop : 0;
	printf("acct_bench: case %s ops %u ticks %llu\n", name, ops, (unsigned long long)ticks);
}

/* getpid timed in a child process that never asks for accounting. */
static void report_in_another_process(uint64_t loop)
{
	pid_t child = fork();
	if (child == 0) {
		report("getpid-other", op_getpid, OPS, loop);
		_exit(0);
	}
	int status = 0;
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		printf("acct_bench: the other process failed (%d, status %#x)\n", child, status);
		failures++;
	}
}

/* Makes request_token's result look like a request's: a few system calls in
 * a few subsystems, so that read copies a realistic result. */
static void give_request_subsystems(void)
{
	check(rscfl_acct(handle, request_token, ACCT_START | ACCT_TK_RESET), "START");
	int fds[2];
	if (pipe(fds) == 0) {
		char byte = 'x';
		write(fds[1], &byte, 1);
		read(fds[0], &byte, 1);
		close(fds[0]);
		close(fds[1]);
	}
	check(rscfl_acct(handle, request_token, ACCT_STOP), "STOP");
}

int main(void)
{
	handle = rscfl_init();
	request_token = handle ? rscfl_get_token(handle) : -1;
	server_token = handle ? rscfl_get_token(handle) : -1;
	if (request_token <= 0 || server_token <= 0) {
		printf("acct_bench: no accounting (handle %p, tokens %d %d)\n", (void *)handle,
		       request_token, server_token);
		return 1;
	}
	calibration_ticks();
	printf("acct_bench: calibration %u instructions took %llu ticks\n",
	       CALIBRATION_ROUNDS * 10 + 1, (unsigned long long)calibration_ticks());
	uint64_t loop = time_op(op_nothing, OPS);
	if (pipe(pipe_fds) < 0) {
		printf("acct_bench: no pipe\n");
		return 1;
	}
	report("getpid", op_getpid, OPS, loop);
	report("file-off", op_file_off, OPS, loop);
	report("start-stop", op_start_stop, OPS, loop);
	check(rscfl_acct(handle, server_token, ACCT_START), "START the server");
	give_request_subsystems();
	report("read", op_read, OPS, loop);
	report("request", op_request, OPS, loop);
	report("file-on", op_file_on, OPS, loop);
	report_in_another_process(loop);
	check(rscfl_acct(handle, request_token, ACCT_START), "START the request");
	check(rscfl_switch_token(handle, server_token), "switch to the server");
	report("switch-pair", op_switch_pair, OPS, loop);
	printf("acct_bench: %s\n", failures ? "FAILED" : "done");
	return failures != 0;
}
