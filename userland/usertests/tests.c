/*
 * The tests, each under the question it answers.  Every one runs in a child
 * of the runner (usertests.c); tests that expect a process to die make a
 * grandchild for it.
 */
#define __LINUX_ERRNO_EXTENSIONS__ /* errno_values_keep_their_names */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <microscope/sched.h>
#include <microscope/signal.h>
#include <microscope/syscall.h>

#include "libc/internal.h"
#include "uapi/time.h"
#include "usertests.h"

#define SELF "/bin/usertests"

/* Reads until end of file or size-1 bytes; returns the count (NUL-terminated). */
static int read_all(int fd, char *buffer, int size)
{
	int total = 0;
	while (total < size - 1) {
		int got = read(fd, buffer + total, (size_t)(size - 1 - total));
		if (got <= 0)
			break;
		total += got;
	}
	buffer[total] = '\0';
	return total;
}

/* Does a child's exit code reach its parent's wait, and does each child get
 * a pid of its own? */
static void fork_wait_exit_status(void)
{
	pid_t children[5];
	for (int i = 0; i < 5; i++) {
		children[i] = fork();
		if (children[i] == 0)
			_exit(10 + i);
		if (children[i] < 0)
			t_fail("fork %d: %s", i, strerror(errno));
		for (int j = 0; j < i; j++)
			if (children[i] == children[j])
				t_fail("two children with pid %d", (int)children[i]);
	}
	for (int i = 4; i >= 0; i--) {
		int status = -1;
		if (waitpid(children[i], &status, 0) != children[i])
			t_fail("waitpid(%d): %s", (int)children[i], strerror(errno));
		else if (!WIFEXITED(status) || WEXITSTATUS(status) != 10 + i)
			t_fail("child %d: status %#x, expected exit %d", i, status, 10 + i);
	}
	if (wait(NULL) != -1 || errno != ECHILD)
		t_fail("wait with no children left did not fail with ECHILD");
}

/* Do bytes written into a pipe come out in order in another process, and does
 * the reader see end of file once the last writer has closed? */
static void pipe_round_trip(void)
{
	enum { TOTAL = 64 * 1024 };
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	pid_t writer = fork();
	if (writer == 0) {
		close(fds[0]);
		unsigned char chunk[1000];
		for (int sent = 0; sent < TOTAL;) {
			int n = TOTAL - sent < 1000 ? TOTAL - sent : 1000;
			for (int i = 0; i < n; i++)
				chunk[i] = (unsigned char)((sent + i) * 7);
			if (write(fds[1], chunk, (size_t)n) != n)
				_exit(1);
			sent += n;
		}
		_exit(0);
	}
	close(fds[1]);
	int received = 0, got;
	unsigned char buffer[777];
	while ((got = read(fds[0], buffer, sizeof(buffer))) > 0) {
		for (int i = 0; i < got; i++)
			if (buffer[i] != (unsigned char)((received + i) * 7)) {
				t_fail("byte %d is wrong", received + i);
				_exit(1);
			}
		received += got;
	}
	if (got < 0)
		t_fail("read: %s", strerror(errno));
	if (received != TOTAL)
		t_fail("received %d bytes of %d", received, TOTAL);
	int status;
	waitpid(writer, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		t_fail("writer ended with status %#x", status);
}

/* Does exec run a program with the arguments and environment it is given? */
static void exec_passes_arguments(void)
{
	static const struct {
		char *argv[5];
		char *envp[3];
		const char *expected;
	} runs[] = {
	    {{"/bin/echo", "hello", "big", "world", NULL}, {NULL}, "hello big world\n"},
	    {{SELF, "--print-env", "COLOUR", NULL}, {"A=1", "COLOUR=blue", NULL}, "blue\n"},
	};
	for (unsigned r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
		int fds[2];
		if (pipe(fds) < 0) {
			t_fail("pipe: %s", strerror(errno));
			return;
		}
		pid_t pid = fork();
		if (pid == 0) {
			dup2(fds[1], 1);
			close(fds[0]);
			close(fds[1]);
			execve(runs[r].argv[0], runs[r].argv, runs[r].envp);
			_exit(127);
		}
		close(fds[1]);
		char output[128];
		read_all(fds[0], output, sizeof(output));
		close(fds[0]);
		int status;
		waitpid(pid, &status, 0);
		if (strcmp(output, runs[r].expected) != 0 || status != 0)
			t_fail("%s: printed \"%s\", status %#x", runs[r].argv[0], output, status);
	}
}

/* What does exec of a program that does not exist do?  (ENOENT, and the
 * caller carries on.) */
static void exec_missing_binary(void)
{
	char *argv[] = {"/bin/no-such-program", NULL};
	long result = ms_syscall3(__NR_execve, (long)argv[0], (long)argv, 0);
	if (result != -L_ENOENT)
		t_fail("execve of a missing file returned %ld, expected %d", result, -L_ENOENT);
	result = ms_syscall3(__NR_execve, (long)"/bin", (long)argv, 0);
	if (result >= 0 || result == -L_ENOENT)
		t_fail("execve of a directory returned %ld", result);
}

/* Writes a file of length bytes: data, then zeros.  Returns 0 or -1. */
static int write_file(const char *path, const void *data, size_t length)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	if (fd < 0)
		return -1;
	int ok = write(fd, data, length) == (int)length;
	close(fd);
	return ok ? 0 : -1;
}

static void exec_file(void *path)
{
	char *argv[] = {path, NULL};
	long result = ms_syscall3(__NR_execve, (long)path, (long)argv, 0);
	_exit(result == -L_ENOEXEC ? 0 : 100 + (int)(-result & 0x3f));
}

/* What does exec do with a file that is not a program: text, an ELF header
 * that points past the file, a real program cut short?  (It refuses, or the
 * new program dies; the kernel carries on.) */
static void exec_corrupt_binary(void)
{
	mkdir("/tmp", 0777);
	static unsigned char header[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
	header[16] = 2;                       /* ET_EXEC */
	header[18] = 62;                      /* EM_X86_64 */
	header[20] = 1;                       /* EV_CURRENT */
	header[32] = 0xf0, header[33] = 0xff; /* e_phoff far past the end */
	header[54] = 56, header[56] = 4;      /* e_phentsize, e_phnum */
	char truncated[1500];
	int fd = open(SELF, O_RDONLY);
	int have_truncated = fd >= 0 && read(fd, truncated, sizeof(truncated)) == sizeof(truncated);
	if (fd >= 0)
		close(fd);
	if (write_file("/tmp/text", "#!nothing\nhello\n", 16) < 0 ||
	    write_file("/tmp/badelf", header, sizeof(header)) < 0 ||
	    (have_truncated && write_file("/tmp/truncated", truncated, sizeof(truncated)) < 0)) {
		t_note("cannot write files in /tmp: %s", strerror(errno));
		exit(T_SKIPPED);
	}
	const char *paths[] = {"/tmp/text", "/tmp/badelf",
			       have_truncated ? "/tmp/truncated" : NULL};
	for (int i = 0; i < 3 && paths[i]; i++) {
		int status = t_run_child(exec_file, (void *)paths[i]);
		if (status == -1)
			continue;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			continue;
		if (WIFSIGNALED(status))
			t_note("%s: the new program was killed by signal %d", paths[i],
			       WTERMSIG(status));
		else
			t_fail("%s: execve returned -%d, expected -ENOEXEC", paths[i],
			       WEXITSTATUS(status) - 100);
	}
	unlink("/tmp/text");
	unlink("/tmp/badelf");
	unlink("/tmp/truncated");
}

/* Numbers without a handler: one inside the table (SYSCALL_TABLE_SIZE - 1,
 * higher than any assigned), the first past it, a far one and a negative
 * one.  Each is -ENOSYS, and the process goes on. */
static void numbers_without_a_handler_are_enosys(void)
{
	const long numbers[] = {SYSCALL_TABLE_SIZE - 1, SYSCALL_TABLE_SIZE, 1L << 40, -1};
	for (unsigned i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
		long result = ms_syscall3(numbers[i], 1, 2, 3);
		if (result != -L_ENOSYS)
			t_fail("system call %ld returned %ld, expected -ENOSYS", numbers[i],
			       result);
	}
}

/* Raw calls, each with one bad pointer: the expected result is -EFAULT. */
static void check_fault(const char *call, long result)
{
	if (result == -L_ENOSYS)
		t_note("%s: not implemented", call);
	else if (result != -L_EFAULT)
		t_fail("%s returned %ld, expected -EFAULT", call, result);
}

static void bad_pointer_set(long bad)
{
	char ok_buffer[64];
	int file = open(SELF, O_RDONLY);
	int dir = open("/", O_RDONLY);
	check_fault("read", ms_syscall3(__NR_read, file, bad, 64));
	check_fault("write", ms_syscall3(__NR_write, 1, bad, 64));
	check_fault("open", ms_syscall3(__NR_open, bad, 0, 0));
	check_fault("stat(path)", ms_syscall3(__NR_stat, bad, (long)ok_buffer, 0));
	check_fault("stat(buffer)", ms_syscall3(__NR_stat, (long)"/", bad, 0));
	check_fault("fstat", ms_syscall3(__NR_fstat, file, bad, 0));
	check_fault("pipe", ms_syscall3(__NR_pipe, bad, 0, 0));
	check_fault("execve(path)", ms_syscall3(__NR_execve, bad, 0, 0));
	check_fault("execve(argv)", ms_syscall3(__NR_execve, (long)SELF, bad, 0));
	check_fault("getcwd", ms_syscall3(__NR_getcwd, bad, 64, 0));
	check_fault("chdir", ms_syscall3(__NR_chdir, bad, 0, 0));
	check_fault("unlink", ms_syscall3(__NR_unlink, bad, 0, 0));
	check_fault("mkdir", ms_syscall3(__NR_mkdir, bad, 0755, 0));
	check_fault("nanosleep", ms_syscall3(__NR_nanosleep, bad, 0, 0));
	check_fault("clock_gettime", ms_syscall3(__NR_clock_gettime, 1, bad, 0));
	check_fault("getdents64", ms_syscall3(__NR_getdents64, dir, bad, 4096));
	check_fault("ms_getprocs", ms_syscall3(__NR_ms_getprocs, bad, 4, 0));
	check_fault("ms_trace_mark", ms_syscall3(__NR_ms_trace_mark, 1, bad, 8));
	pid_t child = fork();
	if (child == 0)
		_exit(0);
	long result = ms_syscall6(__NR_wait4, child, bad, 0, 0, 0, 0);
	check_fault("wait4", result);
	waitpid(child, NULL, 0); /* reaps it if the failed wait4 did not */
	close(file);
	close(dir);
}

/* What if you pass ridiculous pointers to system calls?  (Each fails with
 * EFAULT; the kernel neither crashes nor writes through them.) */
static void bad_pointers(void)
{
	static const long pointers[] = {
	    0x1,                        /* the unmapped first page */
	    (long)0xffffffff80000000UL, /* the kernel's text */
	    (long)0xffff800000000000UL, /* the kernel's map of physical memory */
	    (long)0x0000800000000000UL, /* not canonical */
	    (long)0xfffffffffffff000UL, /* the top page: wraps */
	};
	for (unsigned i = 0; i < sizeof(pointers) / sizeof(pointers[0]); i++) {
		int before = t_failed();
		bad_pointer_set(pointers[i]);
		if (t_failed() != before)
			t_note("... with pointer %#lx", (unsigned long)pointers[i]);
	}
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page != MAP_FAILED && munmap(page, 4096) == 0) {
		bad_pointer_set((long)page);
		t_note("... and a page just unmapped (%p)", page);
	}
}

/* What happens when fork runs out of process slots?  (It fails with EAGAIN
 * or ENOMEM, and fork works again once the children are gone.) */
static void fork_until_full(void)
{
	int gate[2];
	if (pipe(gate) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	int made = 0;
	long result = 0;
	while (made < 5000) {
		result = ms_syscall3(__NR_fork, 0, 0, 0);
		if (result == 0) {
			char c;
			close(gate[1]);
			read(gate[0], &c, 1); /* end of file when the parent closes */
			_exit(0);
		}
		if (result < 0)
			break;
		made++;
	}
	close(gate[1]);
	close(gate[0]);
	while (wait(NULL) > 0)
		;
	t_note("%d processes forked before fork failed with %ld", made, result);
	if (result != -L_EAGAIN && result != -L_ENOMEM)
		t_fail("fork failed with %ld, expected -EAGAIN or -ENOMEM", result);
	pid_t again = fork();
	if (again == 0)
		_exit(0);
	if (again < 0)
		t_fail("fork fails even after every child has gone: %s", strerror(errno));
	else
		waitpid(again, NULL, 0);
}

/* Allocates and touches 1 MiB blocks until malloc fails; sends the count. */
static void allocate_everything(void *fd)
{
	int megabytes = 0;
	for (char *block; (block = malloc(1 << 20)); megabytes++)
		memset(block, 0x5a, 1 << 20);
	write((int)(long)fd, &megabytes, sizeof(megabytes));
}

static int measure_memory(void)
{
	int fds[2], megabytes = -1;
	if (pipe(fds) < 0)
		return -1;
	int status = t_run_child(allocate_everything, (void *)(long)fds[1]);
	close(fds[1]);
	if (read(fds[0], &megabytes, sizeof(megabytes)) != sizeof(megabytes))
		megabytes = -1;
	close(fds[0]);
	if (status != 0)
		t_note("the allocating process ended with status %#x", status);
	return megabytes;
}

/* What happens when a process allocates memory until there is none left?
 * (malloc returns NULL, or the process alone is killed; either way all of
 * its memory comes back when it ends.) */
static void allocate_until_out_of_memory(void)
{
	int first = measure_memory();
	int second = measure_memory();
	t_note("allocated %d MiB, then %d MiB", first, second);
	if (first > 0 && second < first - first / 10 - 1)
		t_fail("the second process got much less memory: the first one's leaked");
	void *block = malloc(1 << 20);
	if (!block)
		t_fail("cannot allocate 1 MiB afterwards");
	free(block);
}

/* What happens when a process writes into a pipe nobody reads any more?
 * (EPIPE or SIGPIPE; never a hang.) */
static void write_to_closed_pipe(void *unused)
{
	int fds[2];
	if (pipe(fds) < 0)
		_exit(2);
	close(fds[0]);
	long result = ms_syscall3(__NR_write, fds[1], (long)"x", 1);
	_exit(result == -L_EPIPE ? 0 : 1);
}

static void write_forever(void *fd)
{
	static char chunk[4096];
	for (;;)
		if (write((int)(long)fd, chunk, sizeof(chunk)) < 0)
			_exit(errno == EPIPE ? 0 : 1);
}

static void check_pipe_writer(const char *what, int status)
{
	if (status == -1)
		return;
	if (WIFSIGNALED(status) && WTERMSIG(status) != SIGPIPE)
		t_fail("%s: writer killed by signal %d", what, WTERMSIG(status));
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		t_fail("%s: write did not fail with EPIPE", what);
}

static void pipe_dead_reader(void)
{
	check_pipe_writer("closed reader", t_run_child(write_to_closed_pipe, NULL));
	/* A writer blocked on a full pipe must wake when its reader dies. */
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	pid_t reader = fork();
	if (reader == 0) {
		close(fds[1]);
		for (;;)
			t_sleep_ms(1000);
	}
	pid_t writer = fork();
	if (writer == 0) {
		close(fds[0]);
		write_forever((void *)(long)fds[1]);
	}
	close(fds[0]);
	close(fds[1]);
	t_sleep_ms(200);
	kill(reader, SIGKILL);
	waitpid(reader, NULL, 0);
	int status;
	waitpid(writer, &status, 0);
	check_pipe_writer("reader killed", status);
}

static void block_in_pipe_read(void *fd)
{
	char c;
	read((int)(long)fd, &c, 1);
	_exit(1);
}

static void block_in_sleep(void *unused)
{
	t_sleep_ms(10 * HANG_GUARD_MS); /* a kill that does not end it: the case hangs */
	_exit(1);
}

static void block_in_wait(void *unused)
{
	pid_t self = getpid();
	pid_t child = fork();
	if (child == 0) {
		while (getppid() == self) /* ends soon after its parent is killed */
			t_sleep_ms(10);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	_exit(1);
}

/* Can a process be killed while it is blocked inside a system call?  (It
 * ends, and its parent sees SIGKILL.)  Each call would block for ever: a
 * kill that did not end it would hang the case, which its hang guard
 * reports; how long the death takes is the host's business. */
static void kill_mid_syscall(void)
{
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	void (*bodies[])(void *) = {block_in_pipe_read, block_in_sleep, block_in_wait};
	const char *names[] = {"read on an empty pipe", "nanosleep", "wait4"};
	for (int i = 0; i < 3; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			bodies[i]((void *)(long)fds[0]);
		t_sleep_ms(100);
		kill(pid, SIGKILL);
		int status;
		waitpid(pid, &status, 0);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			t_fail("%s: status %#x, expected SIGKILL", names[i], status);
	}
}

static volatile int recursion_limit = 1 << 30; /* never reached: the stack ends first */

int t_recurse_until_the_stack_ends(int depth)
{
	volatile char frame[1024];
	frame[0] = (char)depth;
	if (depth >= recursion_limit)
		return 0;
	return t_recurse_until_the_stack_ends(depth + 1) + frame[0];
}

static void run_off_the_stack(void *unused)
{
	t_recurse_until_the_stack_ends(0);
}

/* What happens when recursion runs off the end of the stack?  (The guard
 * below the stack stops it with SIGSEGV; nothing else is overwritten.) */
static void stack_guard(void)
{
	t_expect_signal("deep recursion", run_off_the_stack, NULL, SIGSEGV);
}

static void touch_address(void *address)
{
	*(volatile char *)address = 1;
}

static void touch_null(void *unused)
{
	*(volatile int *)0 = 1;
}

static void touch_kernel(void *unused)
{
	(void)*(volatile int *)0xffffffff80100000UL;
}

static void write_own_code(void *unused)
{
	*(volatile unsigned char *)(void *)write_own_code = 0xc3;
}

static void jump_to_data(void *unused)
{
	static unsigned char code[] = {0xc3};
	((void (*)(void))(void *)code)();
}

/* Does touching memory the process does not own end that process alone?
 * (SIGSEGV for NULL, kernel addresses, writes to its own code, and running
 * its data when the hardware can tell.) */
static void bad_memory_access(void)
{
	t_expect_signal("NULL", touch_null, NULL, SIGSEGV);
	t_expect_signal("kernel address", touch_kernel, NULL, SIGSEGV);
	t_expect_signal("write to code", write_own_code, NULL, SIGSEGV);
	int status = t_run_child(jump_to_data, NULL);
	if (status == 0)
		t_note("data is executable (no NX)");
	else if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGSEGV)
		t_fail("running data: status %#x", status);
}

static void divide_by_zero(void *unused)
{
	volatile int zero = 0, seven = 7; /* 1 / x compiles to compares, 7 / x to idiv */
	printf("%d\n", seven / zero);
}

static void invalid_opcode(void *unused)
{
	__asm__ volatile("ud2");
}

/* Do a division by zero and an invalid instruction end the process with
 * SIGFPE and SIGILL? */
static void cpu_exceptions(void)
{
	t_expect_signal("divide by zero", divide_by_zero, NULL, SIGFPE);
	t_expect_signal("ud2", invalid_opcode, NULL, SIGILL);
}

static double float_work(int yield)
{
	volatile double sum = 0;
	for (int i = 1; i <= 20000; i++) {
		sum += sqrt((double)i) * sin(i * 0.001);
		if (yield && i % 500 == 0)
			ms_syscall3(__NR_sched_yield, 0, 0, 0);
	}
	return sum;
}

/* Do SSE registers survive context switches?  (Processes computing with
 * doubles while yielding to each other all get the undisturbed result.) */
static void float_state_survives_switches(void)
{
	double expected = float_work(0);
	pid_t children[3];
	for (int i = 0; i < 3; i++) {
		children[i] = fork();
		if (children[i] == 0)
			_exit(float_work(1) == expected ? 0 : 1);
	}
	for (int i = 0; i < 3; i++) {
		int status;
		waitpid(children[i], &status, 0);
		if (status != 0)
			t_fail("process %d: status %#x (1: a different result)", i, status);
	}
	if (float_work(1) != expected)
		t_fail("the parent's result changed");
}

/* After fork, do writes in one process stay invisible to the other? */
static void fork_copies_memory(void)
{
	static volatile int shared_looking = 1;
	char *heap = malloc(100000);
	memset(heap, 'p', 100000);
	int fds[2];
	pipe(fds);
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		shared_looking = 2;
		memset(heap, 'c', 100000);
		read(fds[0], &c, 1); /* the parent wrote its own values */
		_exit(shared_looking == 2 && heap[99999] == 'c' ? 0 : 1);
	}
	t_sleep_ms(50);
	shared_looking = 3;
	heap[99999] = 'q';
	write(fds[1], "x", 1);
	int status;
	waitpid(pid, &status, 0);
	if (status != 0)
		t_fail("the child saw the parent's writes (status %#x)", status);
	if (shared_looking != 3 || heap[0] != 'p')
		t_fail("the parent saw the child's writes");
}

/* Does the heap grow with sbrk, is new memory zeroed, and does an anonymous
 * mapping come back zeroed, writable, and go away with munmap? */
static void heap_and_mappings(void)
{
	char *old = sbrk(0);
	char *grown = sbrk(3 * 4096 + 17);
	if (grown == (void *)-1 || grown != old) {
		t_fail("sbrk: %p, expected %p", (void *)grown, (void *)old);
		return;
	}
	for (int i = 0; i < 3 * 4096 + 17; i++)
		if (grown[i] != 0) {
			t_fail("new heap byte %d is %d", i, grown[i]);
			break;
		}
	memset(grown, 1, 3 * 4096 + 17);
	char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		t_fail("mmap: %s", strerror(errno));
		return;
	}
	if (page[0] != 0 || page[8191] != 0)
		t_fail("mmap'd memory is not zeroed");
	page[0] = page[8191] = 7;
	if (munmap(page, 8192) < 0)
		t_fail("munmap: %s", strerror(errno));
	else
		t_expect_signal("touching unmapped memory", touch_address, page, SIGSEGV);
}

/* Does a copy into user memory that runs off the end of a mapping store
 * every byte up to the unmapped page, even when eight-byte pieces straddle
 * it?  (read gives the bytes that fit, or EFAULT; either way the five bytes
 * before the hole hold the data.) */
static void copy_stops_at_the_exact_byte(void)
{
	char *page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int fds[2];
	if (page == MAP_FAILED || munmap(page + 4096, 4096) < 0 || pipe(fds) < 0) {
		t_fail("setting up: %s", strerror(errno));
		return;
	}
	const char data[16] = "abcdefghijklmnop";
	if (write(fds[1], data, sizeof data) != (ssize_t)sizeof data) {
		t_fail("write: %s", strerror(errno));
		return;
	}
	char *edge = page + 4096 - 5;
	ssize_t got = read(fds[0], edge, sizeof data);
	if (got != 5 && !(got < 0 && errno == EFAULT))
		t_fail("read across the hole gave %ld (%s)", (long)got, strerror(errno));
	if (memcmp(edge, data, 5) != 0)
		t_fail("the bytes before the hole are \"%.5s\", not \"abcde\"", edge);
	close(fds[0]);
	close(fds[1]);
}

/* Does a file written in /tmp read back the same, with the right size, and
 * is it gone after unlink? */
static void file_write_read(void)
{
	mkdir("/tmp", 0777);
	FILE *out = fopen("/tmp/usertests.txt", "w");
	if (!out) {
		t_note("cannot create /tmp/usertests.txt: %s", strerror(errno));
		exit(T_SKIPPED);
	}
	for (int i = 0; i < 1000; i++)
		fprintf(out, "line %d\n", i);
	fclose(out);
	struct stat st;
	if (stat("/tmp/usertests.txt", &st) < 0 || st.st_size != 8890 || !S_ISREG(st.st_mode))
		t_fail("stat: size %ld, mode %#o", (long)st.st_size, (unsigned)st.st_mode);
	FILE *in = fopen("/tmp/usertests.txt", "r");
	char line[32];
	for (int i = 0; in && fgets(line, sizeof(line), in); i++) {
		int n = -1;
		if (sscanf(line, "line %d", &n) != 1 || n != i) {
			t_fail("line %d reads \"%s\"", i, line);
			break;
		}
	}
	if (in)
		fclose(in);
	if (unlink("/tmp/usertests.txt") < 0)
		t_fail("unlink: %s", strerror(errno));
	if (open("/tmp/usertests.txt", O_RDONLY) >= 0 || errno != ENOENT)
		t_fail("the file is still there after unlink");
}

/* Do chdir and getcwd agree, and do relative paths follow the working
 * directory? */
static void working_directory(void)
{
	char path[256];
	if (chdir("/bin") < 0 || !getcwd(path, sizeof(path)) || strcmp(path, "/bin") != 0) {
		t_fail("chdir /bin, then getcwd: \"%s\" (%s)", path, strerror(errno));
		return;
	}
	struct stat st;
	if (stat("usertests", &st) < 0)
		t_fail("relative stat in /bin: %s", strerror(errno));
	if (chdir("..") < 0 || !getcwd(path, sizeof(path)) || strcmp(path, "/") != 0)
		t_fail("chdir .. from /bin: \"%s\"", path);
	if (chdir("/no/such/dir") == 0 || errno != ENOENT)
		t_fail("chdir to a missing directory did not fail with ENOENT");
}

/* Does readdir list /bin with the programs in it? */
static void directory_listing(void)
{
	DIR *dir = opendir("/bin");
	if (!dir) {
		t_fail("opendir /bin: %s", strerror(errno));
		return;
	}
	int found = 0, entries = 0;
	for (struct dirent *entry; (entry = readdir(dir)); entries++)
		found += !strcmp(entry->d_name, "sh") + !strcmp(entry->d_name, "usertests");
	closedir(dir);
	if (found != 2)
		t_fail("/bin has %d entries, without sh or usertests", entries);
	if (opendir("/bin/sh") != NULL || errno != ENOTDIR)
		t_fail("opendir of a file did not fail with ENOTDIR");
}

/* The processes that exist, zombies included; negative without a list. */
static long process_count(void)
{
	static struct {
		int32_t pid, parent_pid, state, exit_status;
		uint64_t pages;
		char name[32];
		int32_t cpu;
		uint32_t flags;
		uint64_t cpu_ns;
		int32_t pgid, sid, run_state;
		uint32_t reserved;
	} info[64]; /* struct proc_info of proc/proc.h */
	return ms_syscall3(__NR_ms_getprocs, (long)info, 64, 0);
}

#define ORPHAN_GUARD_MS 60000 /* against a hang only */

/* Does a child whose parent exits without waiting end cleanly?  (No process
 * is left behind: the count comes back to what it was, however long the
 * orphan and init take to run.) */
static void orphans_are_reaped(void)
{
	long before = process_count();
	pid_t pid = fork();
	if (pid == 0) {
		if (fork() == 0) {
			t_sleep_ms(100);
			_exit(0);
		}
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	if (before < 0) {
		t_note("no process list (%ld): only checked that nothing hung", before);
		return;
	}
	long start = t_now_ms(), after = process_count();
	while (after > before && t_now_ms() - start < ORPHAN_GUARD_MS) {
		t_sleep_ms(10);
		after = process_count();
	}
	if (after > before)
		t_fail("%ld processes before, still %ld after %d s (the hang guard)", before, after,
		       ORPHAN_GUARD_MS / 1000);
}

/* Do the clocks move forward, and does a sleep last at least as long as
 * asked?  (How much longer is the host's business: no upper bound.) */
static void clocks_and_sleep(void)
{
	struct timespec before, after;
	struct timeval wall;
	struct tms usage;
	clock_t cpu_before = clock();
	if (clock_gettime(CLOCK_MONOTONIC, &before) < 0 || gettimeofday(&wall, NULL) < 0) {
		t_fail("clock_gettime or gettimeofday: %s", strerror(errno));
		return;
	}
	struct timespec request = {0, 100 * 1000000};
	if (nanosleep(&request, NULL) < 0)
		t_fail("nanosleep: %s", strerror(errno));
	clock_gettime(CLOCK_MONOTONIC, &after);
	long elapsed_ms =
	    (after.tv_sec - before.tv_sec) * 1000 + (after.tv_nsec - before.tv_nsec) / 1000000;
	if (elapsed_ms < 100)
		t_fail("a 100 ms sleep took %ld ms", elapsed_ms);
	for (volatile long spin = 0; spin < 20000000; spin++)
		;
	if (times(&usage) == (clock_t)-1 || clock() < cpu_before)
		t_fail("times or clock went backwards or failed");
	if (clock() == cpu_before)
		t_note("clock() did not advance over a busy loop");
}

/* Does a process pinned to one CPU run only there, does a child inherit the
 * pin, and are an empty mask, a missing process, a short buffer and a bad
 * pointer refused as Linux refuses them? */
static void affinity_pins_a_process(void)
{
	cpu_set_t all, one, got;
	if (sched_getaffinity(0, sizeof all, &all) < 0 || CPU_COUNT(&all) < 1) {
		t_fail("sched_getaffinity: %s, %d CPUs", strerror(errno), CPU_COUNT(&all));
		return;
	}
	int last = 0;
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &all))
			last = cpu;
	CPU_ZERO(&one);
	CPU_SET(last, &one);
	if (sched_setaffinity(0, sizeof one, &one) < 0)
		t_fail("sched_setaffinity to CPU %d: %s", last, strerror(errno));
	for (int i = 0; i < 100; i++) {
		int here = sched_getcpu();
		if (here != last) {
			t_fail("pinned to CPU %d, ran on %d", last, here);
			break;
		}
		sched_yield();
	}
	pid_t pid = fork();
	if (pid == 0)
		_exit(sched_getaffinity(0, sizeof got, &got) == 0 && CPU_EQUAL(&got, &one) &&
			      sched_getcpu() == last
			  ? 0
			  : 1);
	int status = -1;
	waitpid(pid, &status, 0);
	if (status != 0)
		t_fail("the child of a pinned process was not pinned (status %#x)", status);
	CPU_ZERO(&got);
	if (sched_setaffinity(0, sizeof got, &got) == 0 || errno != EINVAL)
		t_fail("an empty CPU set was not refused with EINVAL");
	if (sched_setaffinity(99999, sizeof all, &all) == 0 || errno != ESRCH)
		t_fail("a missing process was not refused with ESRCH");
	if (ms_syscall3(__NR_sched_getaffinity, 0, 4, (long)&got) != -L_EINVAL)
		t_fail("a 4-byte mask buffer was not refused with EINVAL");
	if (ms_syscall3(__NR_sched_setaffinity, 0, sizeof all, 8) != -L_EFAULT)
		t_fail("a bad mask pointer was not refused with EFAULT");
	if (sched_setaffinity(0, sizeof all, &all) < 0)
		t_fail("giving back every CPU: %s", strerror(errno));
}

/* Reads what argv prints on its standard output (up to size-1 bytes); returns
 * its wait status. */
static int capture(char *const argv[], char *output, int size)
{
	int fds[2];
	if (pipe(fds) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execve(argv[0], argv, NULL);
		_exit(127);
	}
	close(fds[1]);
	read_all(fds[0], output, size);
	close(fds[0]);
	int status = -1;
	waitpid(pid, &status, 0);
	return status;
}

/* Do top and ps show every CPU and each process's CPU, and does a monitor
 * process (and what it runs) carry the mark? */
static void top_and_ps_show_cpus(void)
{
	static char output[8192];
	cpu_set_t all;
	sched_getaffinity(0, sizeof all, &all);
	char *top[] = {"/bin/top", "-n", "1", NULL};
	int status = capture(top, output, sizeof output);
	char expected[32];
	snprintf(expected, sizeof expected, "%d CPUs", CPU_COUNT(&all));
	if (status != 0 || !strstr(output, "cpu0") || !strstr(output, expected) ||
	    !strstr(output, " top\n"))
		t_fail("top -n 1: status %#x, printed:\n%s", status, output);
	if (ms_set_monitor(0, 1) < 0)
		t_fail("ms_set_monitor: %s", strerror(errno));
	char *ps[] = {"/bin/ps", NULL};
	status = capture(ps, output, sizeof output);
	const char *line = strstr(output, " ps\n");
	while (line && line > output && line[-1] != '\n')
		line--;
	if (status != 0 || !line || !strchr(line, 'M') || strchr(line, 'M') > strstr(line, " ps\n"))
		t_fail("ps as a monitor: status %#x, printed:\n%s", status, output);
	if (ms_set_monitor(0, 2) == 0 || errno != EINVAL)
		t_fail("ms_set_monitor(0, 2) was not refused with EINVAL");
	if (ms_set_monitor(99999, 0) == 0 || errno != ESRCH)
		t_fail("ms_set_monitor of a missing process was not refused with ESRCH");
	if (ms_set_monitor(0, 0) < 0)
		t_fail("ms_set_monitor back to ordinary: %s", strerror(errno));
}

/* Does each fcntl command reach the kernel as the command it names?  newlib
 * numbers them its own way (F_DUPFD_CLOEXEC is 14 there, 1030 in the
 * kernel's Linux ABI); one newlib has and Linux does not is EINVAL. */
static void fcntl_commands_reach_the_kernel_as_named(void)
{
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	int cloexec = fcntl(fds[0], F_DUPFD_CLOEXEC, 20);
	if (cloexec < 20 || fcntl(cloexec, F_GETFD) != FD_CLOEXEC)
		t_fail("F_DUPFD_CLOEXEC gave %d (%s), its F_GETFD %d", cloexec, strerror(errno),
		       cloexec >= 0 ? fcntl(cloexec, F_GETFD) : -1);
	int plain = fcntl(fds[0], F_DUPFD, 20);
	if (plain < 20 || plain == cloexec || fcntl(plain, F_GETFD) != 0)
		t_fail("F_DUPFD gave %d (%s)", plain, strerror(errno));
	errno = 0;
	if (fcntl(fds[0], F_RGETLK, 0) != -1 || errno != EINVAL)
		t_fail("F_RGETLK (newlib's own) was not refused with EINVAL: %s", strerror(errno));
	close(cloexec);
	close(plain);
	close(fds[0]);
	close(fds[1]);
}

/* microScope maps its user clock page into every process; Linux does not. */
static bool on_microscope(void)
{
	return getauxval(CLOCK_USER_AT) != 0;
}

/* The first byte of the file, as a struct flock asks for it. */
static struct flock first_byte(short type)
{
	struct flock lock = {.l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
	return lock;
}

/* In a child of the lock's holder: exits 0 when F_GETLK names the holder's
 * write lock and F_SETLK cannot take a read lock over it, else the step
 * that went wrong. */
static void probe_parents_write_lock(void *path)
{
	int fd = open(path, O_RDWR);
	struct flock probe = first_byte(F_WRLCK);
	if (fd < 0 || fcntl(fd, F_GETLK, &probe) < 0)
		_exit(1);
	if (probe.l_type != F_WRLCK)
		_exit(2);
	if (probe.l_pid != (short)getppid())
		_exit(3);
	struct flock take = first_byte(F_RDLCK);
	errno = 0;
	if (fcntl(fd, F_SETLK, &take) != -1 || (errno != EAGAIN && errno != EACCES))
		_exit(4);
	_exit(0);
}

/* On Linux: a write lock the caller holds, seen from a child, then released. */
static void check_locks_on_linux(int fd, char *path)
{
	struct flock lock = first_byte(F_WRLCK);
	if (fcntl(fd, F_SETLK, &lock) < 0) {
		t_fail("F_SETLK F_WRLCK: %s", strerror(errno));
		return;
	}
	int status = t_run_child(probe_parents_write_lock, path);
	if (status != -1 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
		t_fail("a child did not see the write lock (status %#x: step %d)", status,
		       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	struct flock unlock = first_byte(F_UNLCK);
	if (fcntl(fd, F_SETLK, &unlock) < 0)
		t_fail("F_SETLK F_UNLCK: %s", strerror(errno));
	struct flock own = first_byte(F_WRLCK);
	if (fcntl(fd, F_GETLK, &own) < 0 || own.l_type != F_UNLCK)
		t_fail("F_GETLK after the unlock: %s, type %d", strerror(errno), own.l_type);
}

/* microScope keeps no locks: every lock command is EINVAL. */
static void check_locks_are_refused(int fd)
{
	static const int commands[] = {F_GETLK, F_SETLK, F_SETLKW};
	for (unsigned i = 0; i < 3; i++) {
		struct flock lock = first_byte(F_WRLCK);
		errno = 0;
		if (fcntl(fd, commands[i], &lock) != -1 || errno != EINVAL)
			t_fail("lock command %d was not refused with EINVAL: %s", commands[i],
			       strerror(errno));
	}
}

/* Does a struct flock reach the kernel as the lock it names?  newlib numbers
 * F_RDLCK, F_WRLCK and F_UNLCK 1, 2, 3 (Linux 0, 1, 2) and its l_pid is a
 * short: passed on as it is, a write lock would be an unlock. */
static void fcntl_locks_reach_the_kernel_as_named(void)
{
	char path[64];
	mkdir("/tmp", 0777);
	snprintf(path, sizeof path, "/tmp/usertests-lock-%d", (int)getpid());
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "x", 1) != 1) {
		t_fail("%s: %s", path, strerror(errno));
		return;
	}
	struct flock unknown = first_byte(7);
	errno = 0;
	if (fcntl(fd, F_SETLK, &unknown) != -1 || errno != EINVAL)
		t_fail("lock type 7 was not refused with EINVAL: %s", strerror(errno));
	if (on_microscope())
		check_locks_are_refused(fd);
	else
		check_locks_on_linux(fd, path);
	close(fd);
	unlink(path);
}

/* Exits 0 when kill refuses signal *sig (one Linux does not have) with
 * EINVAL, rather than send the Linux signal of the same number. */
static void send_newlib_only_signal(void *sig)
{
	errno = 0;
	int sent = kill(getpid(), *(int *)sig);
	_exit(sent == -1 && errno == EINVAL ? 0 : 1);
}

/* Ends the caller with Linux's signal *sig, which newlib has no name for;
 * exits 3 when the kernel has no such signal.  Its default action and an
 * empty mask first, by raw calls: the runner may have passed on a blocked
 * or ignored one (on a Linux host, 32 and 33 are the C library's own). */
static void die_of_linux_only_signal(void *sig)
{
	uint64_t no_signals = 0;
	struct {
		unsigned long handler, flags, restorer;
		uint64_t mask;
	} default_action = {0, 0, 0, 0};
	ms_syscall6(__NR_rt_sigaction, *(int *)sig, (long)&default_action, 0, 8, 0, 0);
	ms_syscall6(__NR_rt_sigprocmask, 2 /* SIG_SETMASK */, (long)&no_signals, 0, 8, 0, 0);
	if (ms_syscall3(__NR_kill, getpid(), *(int *)sig, 0) == -L_EINVAL)
		_exit(3);
	_exit(0);
}

/* Does each signal reach the kernel as the signal it names, and does a wait
 * status name the signal that ended the child?  newlib has SIGEMT (7, Linux's
 * SIGBUS) and SIGLOST (29, Linux's SIGIO), which Linux lacks; Linux has
 * SIGSTKFLT (16, newlib's SIGURG) and SIGPWR (30, newlib's SIGUSR1), which
 * newlib lacks. */
static void signals_reach_the_kernel_as_named(void)
{
	int newlib_only[] = {SIGEMT, SIGLOST};
	for (unsigned i = 0; i < 2; i++) {
		int status = t_run_child(send_newlib_only_signal, &newlib_only[i]);
		if (status != -1 && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
			t_fail("newlib's signal %d was not refused with EINVAL: status %#x",
			       newlib_only[i], status);
	}
	int linux_only[] = {16, 30, 32, 40, 48, 64};
	for (unsigned i = 0; i < sizeof linux_only / sizeof linux_only[0]; i++) {
		int status = t_run_child(die_of_linux_only_signal, &linux_only[i]);
		bool no_such_signal = WIFEXITED(status) && WEXITSTATUS(status) == 3;
		if (status == -1 || (no_such_signal && linux_only[i] >= 32 && on_microscope()))
			continue; /* microScope's signals end at 31 */
		if (!WIFSIGNALED(status) || WTERMSIG(status) < NSIG ||
		    ms_signal_to_linux(WTERMSIG(status)) != linux_only[i])
			t_fail(
			    "killed by Linux's signal %d: status %#x names newlib's %d, Linux's %d",
			    linux_only[i], status, WTERMSIG(status),
			    ms_signal_to_linux(WTERMSIG(status)));
	}
	struct sigaction ignore = {.sa_handler = SIG_IGN};
	errno = 0;
	if (sigaction(SIGLOST, &ignore, NULL) != -1 || errno != EINVAL)
		t_fail("sigaction(SIGLOST) was not refused with EINVAL: %s", strerror(errno));
}

/* Does a Linux errno newlib has a name for come back as that name, not as
 * EINVAL?  (Those the kernel may return, and a few it does not yet.) */
static void errno_values_keep_their_names(void)
{
	static const struct {
		int linux_value, newlib_value;
		const char *name;
	} expected[] = {
	    {67, ENOLINK, "ENOLINK"},        {94, ESOCKTNOSUPPORT, "ESOCKTNOSUPPORT"},
	    {108, ESHUTDOWN, "ESHUTDOWN"},   {109, ETOOMANYREFS, "ETOOMANYREFS"},
	    {116, ESTALE, "ESTALE"},         {122, EDQUOT, "EDQUOT"},
	    {130, EOWNERDEAD, "EOWNERDEAD"}, {131, ENOTRECOVERABLE, "ENOTRECOVERABLE"},
	    {86, ESTRPIPE, "ESTRPIPE"},      {87, EUSERS, "EUSERS"},
	    {77, EBADFD, "EBADFD"},          {123, ENOMEDIUM, "ENOMEDIUM"},
	};
	for (unsigned i = 0; i < sizeof expected / sizeof expected[0]; i++) {
		int got = errno_from_linux(expected[i].linux_value);
		if (got != expected[i].newlib_value)
			t_fail("Linux's %s (%d) came back as %d", expected[i].name,
			       expected[i].linux_value, got);
	}
}

/* Does every errno a system call can give have a message?  newlib's
 * strerror knows only some of the Linux errnos it has names for. */
static void every_errno_has_a_message(void)
{
	for (int linux_errno = 1; linux_errno < 4096; linux_errno++) {
		int value = errno_from_linux(linux_errno);
		if (value == EINVAL && linux_errno != L_EINVAL)
			continue; /* no name in newlib */
		if (strerror(value)[0] == '\0')
			t_fail("no message for Linux's errno %d (newlib's %d)", linux_errno, value);
	}
}

/* Clock linux_clock by the system call, in nanoseconds; -1 when it failed. */
static long long raw_clock_ns(long linux_clock)
{
	struct timespec t;
	if (ms_syscall3(__NR_clock_gettime, linux_clock, (long)&t, 0) < 0)
		return -1;
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Does each clock newlib numbers reach the kernel as the Linux clock of that
 * name?  Each library reading must lie between two readings of that Linux
 * clock by the system call, made just before and just after it (clocks that
 * never go back only).  newlib's CLOCK_MONOTONIC is 4 (Linux's 1),
 * CLOCK_MONOTONIC_RAW 5 (Linux's 4) and CLOCK_BOOTTIME 7 (Linux's too); it
 * names the last two only under _GNU_SOURCE, and CLOCK_PROCESS_CPUTIME_ID
 * (2 on both sides) only under _POSIX_CPUTIME. */
static void clocks_reach_the_kernel_as_named(void)
{
	static const struct {
		clockid_t clock;
		long linux_clock;
		const char *name;
	} clocks[] = {
	    {(clockid_t)2, 2, "CLOCK_PROCESS_CPUTIME_ID"},
	    {(clockid_t)3, 3, "CLOCK_THREAD_CPUTIME_ID"},
	    {(clockid_t)4, 1, "CLOCK_MONOTONIC"},
	    {(clockid_t)5, 4, "CLOCK_MONOTONIC_RAW"},
	    {(clockid_t)7, 7, "CLOCK_BOOTTIME"},
	};
	for (unsigned i = 0; i < sizeof clocks / sizeof clocks[0]; i++) {
		long long before = raw_clock_ns(clocks[i].linux_clock);
		struct timespec now = {-1, -1};
		int result = clock_gettime(clocks[i].clock, &now);
		long long after = raw_clock_ns(clocks[i].linux_clock);
		long long library = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
		if (result < 0)
			t_fail("%s: %s", clocks[i].name, strerror(errno));
		else if (before < 0 || now.tv_nsec < 0 || now.tv_nsec >= 1000000000 ||
			 library < before || library > after)
			t_fail(
			    "%s: %lld.%09ld, not between Linux's clock %ld readings %lld and %lld",
			    clocks[i].name, (long long)now.tv_sec, now.tv_nsec,
			    clocks[i].linux_clock, before, after);
	}
}

/* Does FASYNC (newlib's 0x40) reach Linux as O_ASYNC (020000), and come back
 * from F_GETFL?  microScope keeps no O_ASYNC: there only its refusals. */
static void open_flag_fasync_reaches_the_kernel(void)
{
	int fds[2];
	if (pipe(fds) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	errno = 0;
	if (fcntl(fds[0], F_SETFL, FNBIO) != -1 || errno != EINVAL)
		t_fail("F_SETFL FNBIO was not refused with EINVAL: %s", strerror(errno));
	if (!on_microscope()) {
		int flags = fcntl(fds[0], F_SETFL, FASYNC) < 0 ? -1 : fcntl(fds[0], F_GETFL);
		if (flags < 0 || !(flags & FASYNC))
			t_fail("F_SETFL FASYNC, then F_GETFL gave %#x (%s)", flags,
			       strerror(errno));
	}
	close(fds[0]);
	close(fds[1]);
}

/* Is an open() flag Linux does not have refused rather than dropped?
 * newlib's O_SEARCH (also its O_EXEC) has no Linux counterpart; passed on
 * as nothing it would open a directory for reading. */
static void open_flags_linux_lacks_are_refused(void)
{
	errno = 0;
	int fd = open("/", O_RDONLY | O_SEARCH);
	if (fd != -1 || errno != EINVAL)
		t_fail("open(O_SEARCH) gave %d (%s), expected EINVAL", fd, strerror(errno));
	if (fd >= 0)
		close(fd);
	errno = 0;
	fd = open("/", O_RDONLY | FNBIO);
	if (fd != -1 || errno != EINVAL)
		t_fail("open(FNBIO) gave %d (%s), expected EINVAL", fd, strerror(errno));
	if (fd >= 0)
		close(fd);
	open_flag_fasync_reaches_the_kernel();
}

/* Each case with its hang guard: it only ends a case that hangs, it never
 * times one (usertests.c). */
const struct user_test user_tests[] = {
    {"fork_wait_exit_status", fork_wait_exit_status, HANG_GUARD_MS},
    {"pipe_round_trip", pipe_round_trip, HANG_GUARD_MS},
    {"fcntl_commands_reach_the_kernel_as_named", fcntl_commands_reach_the_kernel_as_named,
     HANG_GUARD_MS},
    {"signals_reach_the_kernel_as_named", signals_reach_the_kernel_as_named, HANG_GUARD_MS},
    {"fcntl_locks_reach_the_kernel_as_named", fcntl_locks_reach_the_kernel_as_named, HANG_GUARD_MS},
    {"errno_values_keep_their_names", errno_values_keep_their_names, HANG_GUARD_MS},
    {"every_errno_has_a_message", every_errno_has_a_message, HANG_GUARD_MS},
    {"clocks_reach_the_kernel_as_named", clocks_reach_the_kernel_as_named, HANG_GUARD_MS},
    {"open_flags_linux_lacks_are_refused", open_flags_linux_lacks_are_refused, HANG_GUARD_MS},
    {"copy_stops_at_the_exact_byte", copy_stops_at_the_exact_byte, HANG_GUARD_MS},
    {"exec_passes_arguments", exec_passes_arguments, HANG_GUARD_MS},
    {"exec_missing_binary", exec_missing_binary, HANG_GUARD_MS},
    {"exec_corrupt_binary", exec_corrupt_binary, HANG_GUARD_MS},
    {"bad_pointers", bad_pointers, HANG_GUARD_MS},
    {"fork_until_full", fork_until_full, HANG_GUARD_MS},
    {"a_user_cannot_fill_the_process_table", a_user_cannot_fill_the_process_table, HANG_GUARD_MS},
    {"one_users_forks_leave_another_user_forking", one_users_forks_leave_another_user_forking,
     HANG_GUARD_MS},
    {"a_users_process_count_returns_when_reaped", a_users_process_count_returns_when_reaped,
     HANG_GUARD_MS},
    {"a_process_takes_its_count_to_its_new_real_uid", a_process_takes_its_count_to_its_new_real_uid,
     HANG_GUARD_MS},
    {"a_users_endpoints_are_bounded", a_users_endpoints_are_bounded, HANG_GUARD_MS},
    {"a_users_results_pages_are_bounded", a_users_results_pages_are_bounded, HANG_GUARD_MS},
    {"a_users_pipes_are_bounded", a_users_pipes_are_bounded, HANG_GUARD_MS},
    {"a_users_stacks_take_no_promised_memory", a_users_stacks_take_no_promised_memory,
     SLOW_HANG_GUARD_MS},
    {"root_keeps_memory_a_user_cannot_promise_away", root_keeps_memory_a_user_cannot_promise_away,
     SLOW_HANG_GUARD_MS},
    {"a_fork_shares_read_only_pages_unpromised", a_fork_shares_read_only_pages_unpromised,
     SLOW_HANG_GUARD_MS},
    {"allocate_until_out_of_memory", allocate_until_out_of_memory, SLOW_HANG_GUARD_MS},
    {"committed_memory_is_there_when_touched", committed_memory_is_there_when_touched,
     SLOW_HANG_GUARD_MS},
    {"sparse_pages_come_with_their_tables", sparse_pages_come_with_their_tables,
     SLOW_HANG_GUARD_MS},
    {"a_user_filling_tmp_takes_no_promised_memory", a_user_filling_tmp_takes_no_promised_memory,
     SLOW_HANG_GUARD_MS},
    {"pipe_dead_reader", pipe_dead_reader, HANG_GUARD_MS},
    {"kill_mid_syscall", kill_mid_syscall, HANG_GUARD_MS},
    {"stack_guard", stack_guard, HANG_GUARD_MS},
    {"bad_memory_access", bad_memory_access, HANG_GUARD_MS},
    {"cpu_exceptions", cpu_exceptions, HANG_GUARD_MS},
    {"float_state_survives_switches", float_state_survives_switches, HANG_GUARD_MS},
    {"fork_copies_memory", fork_copies_memory, HANG_GUARD_MS},
    {"heap_and_mappings", heap_and_mappings, HANG_GUARD_MS},
    {"file_write_read", file_write_read, HANG_GUARD_MS},
    {"working_directory", working_directory, HANG_GUARD_MS},
    {"directory_listing", directory_listing, HANG_GUARD_MS},
    {"orphans_are_reaped", orphans_are_reaped, HANG_GUARD_MS},
    {"clocks_and_sleep", clocks_and_sleep, HANG_GUARD_MS},
    {"user_clock_agrees_with_the_kernel", user_clock_agrees_with_the_kernel, HANG_GUARD_MS},
    {"user_clock_is_monotonic", user_clock_is_monotonic, HANG_GUARD_MS},
    {"user_clock_page_is_read_only", user_clock_page_is_read_only, HANG_GUARD_MS},
    {"user_clock_survives_fork_and_exec", user_clock_survives_fork_and_exec, HANG_GUARD_MS},
    {"affinity_pins_a_process", affinity_pins_a_process, HANG_GUARD_MS},
    {"top_and_ps_show_cpus", top_and_ps_show_cpus, HANG_GUARD_MS},
    {"trace_marks_reach_the_stream", trace_marks_reach_the_stream, SLOW_HANG_GUARD_MS},
    {"trace_mark_refuses_bad_input", trace_mark_refuses_bad_input, HANG_GUARD_MS},
    {"uscope_traces_a_program_by_name", uscope_traces_a_program_by_name, SLOW_HANG_GUARD_MS},
    {"uscope_follows_a_fork_and_stops_at_a_renamed_exec",
     uscope_follows_a_fork_and_stops_at_a_renamed_exec, SLOW_HANG_GUARD_MS},
    {"uscope_a_user_traces_only_their_own_processes", uscope_a_user_traces_only_their_own_processes,
     SLOW_HANG_GUARD_MS},
    {"uscope_refuses_bad_requests", uscope_refuses_bad_requests, HANG_GUARD_MS},
    {"lattrack_records_reach_the_descriptor", lattrack_records_reach_the_descriptor, HANG_GUARD_MS},
    {"lattrack_overflow_is_counted", lattrack_overflow_is_counted, HANG_GUARD_MS},
    {"lattrack_refuses_bad_input", lattrack_refuses_bad_input, HANG_GUARD_MS},
    {"lattrack_last_owner_ends_the_tracker", lattrack_last_owner_ends_the_tracker, HANG_GUARD_MS},
    {"lattrack_privileges_hold", lattrack_privileges_hold, HANG_GUARD_MS},
    {"lattrack_syscall_report_has_the_user_stack", lattrack_syscall_report_has_the_user_stack,
     SLOW_HANG_GUARD_MS},
    {"uscope_unwinds_code_without_frame_pointers", uscope_unwinds_code_without_frame_pointers,
     SLOW_HANG_GUARD_MS},
    {"uscope_same_registers_other_caller", uscope_same_registers_other_caller, SLOW_HANG_GUARD_MS},
    {"uscope_stack_on_unmapped_memory_is_not_remembered",
     uscope_stack_on_unmapped_memory_is_not_remembered, SLOW_HANG_GUARD_MS},
    {"uscope_stacks_follow_the_events_named", uscope_stacks_follow_the_events_named,
     SLOW_HANG_GUARD_MS},
    {"uscope_stacks_only_trace_holds_nothing_else", uscope_stacks_only_trace_holds_nothing_else,
     SLOW_HANG_GUARD_MS},
    {"uscope_stacks_at_joinpoints_that_cannot_sleep", uscope_stacks_at_joinpoints_that_cannot_sleep,
     SLOW_HANG_GUARD_MS},
    {"hole_a_results_page_is_a_kernel_region", hole_a_results_page_is_a_kernel_region,
     HANG_GUARD_MS},
    {"hole_e_telemetry_ring_is_a_kernel_region", hole_e_telemetry_ring_is_a_kernel_region,
     HANG_GUARD_MS},
    {"attacks_are_refused_to_an_unprivileged_user", attacks_are_refused_to_an_unprivileged_user,
     HANG_GUARD_MS},
    {"attacks_succeed_as_root", attacks_succeed_as_root, HANG_GUARD_MS},
    {"a_user_pins_only_its_own_processes", a_user_pins_only_its_own_processes, HANG_GUARD_MS},
    {"scope_reply_is_the_monitors_only", scope_reply_is_the_monitors_only, HANG_GUARD_MS},
    {"scope_reply_receive_refuses_hostile_input", scope_reply_receive_refuses_hostile_input,
     HANG_GUARD_MS},
    {"scope_reply_receive_receives_into_the_inbox", scope_reply_receive_receives_into_the_inbox,
     HANG_GUARD_MS},
    {"racing_attaches_make_one_monitor", racing_attaches_make_one_monitor, HANG_GUARD_MS},
    {"a_detached_monitor_never_sees_the_next_ones_events",
     a_detached_monitor_never_sees_the_next_ones_events, HANG_GUARD_MS},
    {"a_detached_monitor_that_execs_leaves_the_place",
     a_detached_monitor_that_execs_leaves_the_place, HANG_GUARD_MS},
    {"an_execd_monitor_is_no_longer_the_monitor", an_execd_monitor_is_no_longer_the_monitor,
     HANG_GUARD_MS},
    {"linking_into_the_monitor_needs_priv_monitor", linking_into_the_monitor_needs_priv_monitor,
     HANG_GUARD_MS},
    {"ipc_caller_killed_while_a_receiver_on_its_cpu_holds_the_call",
     ipc_caller_killed_while_a_receiver_on_its_cpu_holds_the_call, HANG_GUARD_MS},
    {"ipc_receive_into_a_bad_buffer_loses_no_message",
     ipc_receive_into_a_bad_buffer_loses_no_message, HANG_GUARD_MS},
    {"users_and_privileges", users_and_privileges, HANG_GUARD_MS},
    {"impostor_rscfl_is_refused", impostor_rscfl_is_refused, HANG_GUARD_MS},
    {"aspect_failures_show_no_kernel_address_to_a_user",
     aspect_failures_show_no_kernel_address_to_a_user, HANG_GUARD_MS},
    {"hole_d_memory_comes_on_first_touch", hole_d_memory_comes_on_first_touch, HANG_GUARD_MS},
    {"hole_d_kill_gives_memory_back", hole_d_kill_gives_memory_back, HANG_GUARD_MS},
    {"mprotect_changes_anonymous_mappings_only", mprotect_changes_anonymous_mappings_only,
     HANG_GUARD_MS},
    {"prot_none_is_refused_to_the_kernels_copies", prot_none_is_refused_to_the_kernels_copies,
     HANG_GUARD_MS},
    {"groups_and_sessions", groups_and_sessions, HANG_GUARD_MS},
    {"stop_and_continue", stop_and_continue, HANG_GUARD_MS},
    {"a_stopped_read_goes_on_after_continue", a_stopped_read_goes_on_after_continue, HANG_GUARD_MS},
    {"numbers_without_a_handler_are_enosys", numbers_without_a_handler_are_enosys, HANG_GUARD_MS},
    {"signal_to_a_group", signal_to_a_group, HANG_GUARD_MS},
    {"ignored_signals", ignored_signals, HANG_GUARD_MS},
    {"a_handler_runs_for_raise", a_handler_runs_for_raise, HANG_GUARD_MS},
    {"siginfo_names_the_signal_the_newlib_way", siginfo_names_the_signal_the_newlib_way,
     HANG_GUARD_MS},
    {"a_blocked_signal_waits_until_unblocked", a_blocked_signal_waits_until_unblocked,
     HANG_GUARD_MS},
    {"resethand_runs_the_handler_once", resethand_runs_the_handler_once, HANG_GUARD_MS},
    {"signal_returns_the_previous_handler", signal_returns_the_previous_handler, HANG_GUARD_MS},
    {"sigaction_refuses_an_unknown_flag", sigaction_refuses_an_unknown_flag, HANG_GUARD_MS},
    {"a_handler_keeps_the_interrupted_floating_point",
     a_handler_keeps_the_interrupted_floating_point, HANG_GUARD_MS},
    {"sigsuspend_waits_for_a_childs_signal", sigsuspend_waits_for_a_childs_signal, HANG_GUARD_MS},
    {"terminal_ioctls", terminal_ioctls, HANG_GUARD_MS},
    {"kshell_output_captured", kshell_output_captured, HANG_GUARD_MS},
    {"scope_counts_joinpoint_calls", scope_counts_joinpoint_calls, HANG_GUARD_MS},
    {"scope_text_answers_refuse_bad_buffers", scope_text_answers_refuse_bad_buffers, HANG_GUARD_MS},
    {"file_permissions_hold_against_a_user", file_permissions_hold_against_a_user, HANG_GUARD_MS},
    {"rename_and_links", rename_and_links, HANG_GUARD_MS},
    {"file_calls_refuse_hostile_input", file_calls_refuse_hostile_input, HANG_GUARD_MS},
    {"ramfs_directory_of_ten_thousand", ramfs_directory_of_ten_thousand, SLOW_HANG_GUARD_MS},
    {"ramfs_files_are_sparse_pages", ramfs_files_are_sparse_pages, SLOW_HANG_GUARD_MS},
    {"mount_and_umount", mount_and_umount, HANG_GUARD_MS},
    {"renames_racing_never_make_a_cycle", renames_racing_never_make_a_cycle, SLOW_HANG_GUARD_MS},
    {"directory_with_a_mount_below_stays", directory_with_a_mount_below_stays, HANG_GUARD_MS},
    {"a_mount_inside_a_closed_directory_is_closed", a_mount_inside_a_closed_directory_is_closed,
     HANG_GUARD_MS},
    {"a_mount_through_a_link_is_reached_both_ways", a_mount_through_a_link_is_reached_both_ways,
     HANG_GUARD_MS},
    {"a_link_planted_in_tmp_steers_nobody", a_link_planted_in_tmp_steers_nobody, HANG_GUARD_MS},
    {"select_timeout_is_checked_and_never_wraps", select_timeout_is_checked_and_never_wraps,
     HANG_GUARD_MS},
    {"pipe_read_into_a_bad_buffer_keeps_the_bytes", pipe_read_into_a_bad_buffer_keeps_the_bytes,
     HANG_GUARD_MS},
    {"pipe_pollout_means_a_pipe_buf_write_fits", pipe_pollout_means_a_pipe_buf_write_fits,
     HANG_GUARD_MS},
    {"pipe_large_nonblocking_write_is_partial", pipe_large_nonblocking_write_is_partial,
     HANG_GUARD_MS},
    {"file_mmap_and_positional_io", file_mmap_and_positional_io, HANG_GUARD_MS},
    {"sendfile_sends_a_file_to_a_socket_and_a_file", sendfile_sends_a_file_to_a_socket_and_a_file,
     HANG_GUARD_MS},
    {"sendfile_refuses_hostile_input", sendfile_refuses_hostile_input, HANG_GUARD_MS},
    {"sockets_refuse_what_is_not_the_callers", sockets_refuse_what_is_not_the_callers,
     HANG_GUARD_MS},
    {"a_user_cannot_take_every_socket", a_user_cannot_take_every_socket, HANG_GUARD_MS},
    {"small_socket_pools_keep_roots_share", small_socket_pools_keep_roots_share, HANG_GUARD_MS},
    {"a_listeners_queue_counts_against_its_owner", a_listeners_queue_counts_against_its_owner,
     HANG_GUARD_MS},
    {"many_users_hold_pipes_and_sockets_at_once", many_users_hold_pipes_and_sockets_at_once,
     HANG_GUARD_MS},
    {"shared_file_mmap", shared_file_mmap, HANG_GUARD_MS},
    {"ext2_read_copies_into_user_memory", ext2_read_copies_into_user_memory, HANG_GUARD_MS},
    {"bounced_read_stops_at_a_bad_page", bounced_read_stops_at_a_bad_page, HANG_GUARD_MS},
    {"orphans_go_to_init", orphans_go_to_init, HANG_GUARD_MS},
    {"orphaned_group_hears_sighup", orphaned_group_hears_sighup, HANG_GUARD_MS},
    {"console_hangup_reaches_foreground", console_hangup_reaches_foreground, HANG_GUARD_MS},
    {"console_cooked_after_hangup", console_cooked_after_hangup, HANG_GUARD_MS},
    {"ps_shows_wait_channels", ps_shows_wait_channels, HANG_GUARD_MS},
    {"rscfl_unwoven_gives_an_error", rscfl_unwoven_gives_an_error, HANG_GUARD_MS},
    {"scope_show_and_clear", scope_show_and_clear, HANG_GUARD_MS},
    {"sigaction_sets_and_reports_handlers", sigaction_sets_and_reports_handlers, HANG_GUARD_MS},
    {"a_handler_gets_linux_frame", a_handler_gets_linux_frame, HANG_GUARD_MS},
    {"registers_and_sse_survive_a_handler", registers_and_sse_survive_a_handler, HANG_GUARD_MS},
    {"a_spinning_process_gets_its_handler", a_spinning_process_gets_its_handler, HANG_GUARD_MS},
    {"sa_nodefer_and_sa_resethand", sa_nodefer_and_sa_resethand, HANG_GUARD_MS},
    {"sigprocmask_blocks_until_unblocked", sigprocmask_blocks_until_unblocked, HANG_GUARD_MS},
    {"a_signal_storm_is_counted_exactly", a_signal_storm_is_counted_exactly, HANG_GUARD_MS},
    {"sigsuspend_waits_for_a_signal", sigsuspend_waits_for_a_signal, HANG_GUARD_MS},
    {"sigchld_reaches_a_handler", sigchld_reaches_a_handler, HANG_GUARD_MS},
    {"a_handled_signal_interrupts_a_read", a_handled_signal_interrupts_a_read, HANG_GUARD_MS},
    {"sa_restart_makes_the_read_again", sa_restart_makes_the_read_again, HANG_GUARD_MS},
    {"faults_go_to_their_handlers", faults_go_to_their_handlers, HANG_GUARD_MS},
    {"a_broken_pipe_signals_the_writer", a_broken_pipe_signals_the_writer, HANG_GUARD_MS},
    {"a_program_can_single_step_itself", a_program_can_single_step_itself, HANG_GUARD_MS},
    {"a_fault_at_a_kernel_address_says_nothing_of_the_map",
     a_fault_at_a_kernel_address_says_nothing_of_the_map, HANG_GUARD_MS},
    {"a_frame_holds_nothing_of_the_kernel", a_frame_holds_nothing_of_the_kernel, HANG_GUARD_MS},
    {"a_background_read_with_sigttin_blocked_gets_eio",
     a_background_read_with_sigttin_blocked_gets_eio, HANG_GUARD_MS},
    {"sa_restart_does_not_make_an_ipc_call_again", sa_restart_does_not_make_an_ipc_call_again,
     HANG_GUARD_MS},
    {"fork_keeps_and_exec_resets_handlers", fork_keeps_and_exec_resets_handlers, HANG_GUARD_MS},
    {"sigreturn_refuses_hostile_frames", sigreturn_refuses_hostile_frames, HANG_GUARD_MS},
    {"a_frame_that_cannot_be_written_ends_the_process",
     a_frame_that_cannot_be_written_ends_the_process, HANG_GUARD_MS},
    {"a_stack_overflow_is_caught_on_the_alternate_stack",
     a_stack_overflow_is_caught_on_the_alternate_stack, HANG_GUARD_MS},
    {"sigaltstack_reports_and_refuses_as_linux", sigaltstack_reports_and_refuses_as_linux,
     HANG_GUARD_MS},
    {"sigaltstack_with_an_unwritable_old_ss_changes_nothing",
     sigaltstack_with_an_unwritable_old_ss_changes_nothing, HANG_GUARD_MS},
    {"a_handler_runs_on_the_alternate_stack", a_handler_runs_on_the_alternate_stack, HANG_GUARD_MS},
    {"ss_autodisarm_disarms_the_stack_while_its_handler_runs",
     ss_autodisarm_disarms_the_stack_while_its_handler_runs, HANG_GUARD_MS},
    {"sigreturn_sets_the_stack_uc_stack_names", sigreturn_sets_the_stack_uc_stack_names,
     HANG_GUARD_MS},
    {"a_frame_the_alternate_stack_cannot_take_ends_the_process",
     a_frame_the_alternate_stack_cannot_take_ends_the_process, HANG_GUARD_MS},
    {"fork_keeps_and_exec_clears_the_alternate_stack",
     fork_keeps_and_exec_clears_the_alternate_stack, HANG_GUARD_MS},
    {NULL, NULL, 0},
};
