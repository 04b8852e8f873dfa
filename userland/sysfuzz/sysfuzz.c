/*
 * sysfuzz: random system calls with typed arguments, made by unprivileged
 * processes, to find what makes the kernel panic or hang.  Workers (uid
 * 1000, every privilege gone) each make a batch of calls from a seed: most
 * from a table that says what each argument is (a descriptor, a user
 * pointer, a length, flags, a pid, a path), the rest any number with any
 * arguments.  Pointers are a real buffer of random bytes, its last byte,
 * NULL, kernel addresses, unmapped memory and the kernel's pages in the
 * process (results page, clock page).  A worker that outlives its time is
 * killed; one that then does not end is a hang, reported with its seed (the
 * reproducer: `sysfuzz CALLS SEED` with a batch's seed runs that batch
 * first).  A panic stops the machine, which the harness reports.
 *
 *     sysfuzz [calls [seed]]     (as init: the crash corpus (corpus.c), then
 *                                 30000 calls, seed 1, KTAP, then the OS stops)
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "sysfuzz.h"

#define DEFAULT_CALLS   30000
#define WORKER_LIMIT_MS 5000  /* then the worker is killed */
#define DEATH_LIMIT_MS  10000 /* after SIGKILL: longer is a hang */
#define PROGRESS_FD     60    /* one byte per 100 calls to the parent; the calls use fds < 16 */
#define USER_ID         1000
#define PAGE            4096UL

static uint64_t state;
static long killed; /* batches that outlived their time (a blocking call) */
static uint8_t buffer[64 * 1024] __attribute__((aligned(4096)));

static uint64_t next_random(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

static uint64_t pick(const uint64_t *values, size_t count)
{
	return values[next_random() % count];
}

#define PICK(array) pick(array, sizeof(array) / sizeof(array[0]))

static const char *const paths[] = {"/tmp/fuzz",
				    "/",
				    "/etc/passwd",
				    "",
				    "/tmp",
				    "/dev/null",
				    "/tmp/fuzz/x",
				    "..",
				    "/aspects/callcount.o",
				    "/tmp/fuzz/l",
				    "/tmp/fuzz/x/../l"};

static long argument(char type)
{
	static const uint64_t pointers[] = {(uint64_t)buffer,
					    (uint64_t)buffer + sizeof buffer - 1,
					    (uint64_t)buffer + 8,
					    0,
					    1,
					    0xffff800000000000UL,
					    0xffffffff80000000UL,
					    0x00007ffffffff000UL,
					    0x0000500000000000UL,
					    0x0000700000000000UL,  /* the results pages */
					    0x0000700000100000UL}; /* the clock page */
	static const uint64_t lengths[] = {
	    0, 1, 8, 64, 4096, 65536, 0x7fffffff, UINT64_MAX, UINT64_MAX / 2, 4097};
	static const uint64_t ints[] = {0,          1,          2,  3,  7, 9, 15, 64, (uint64_t)-1,
					0x7fffffff, 0x80000000, 41, 560};
	static const uint64_t addresses[] = {0,
					     0x0000200000000000UL,
					     0x0000700000000000UL,
					     0x0000700000100000UL,
					     0x0000780000000000UL,
					     0x0000100000000000UL,
					     0x10000,
					     0xffff800000000000UL,
					     1};
	switch (type) {
	case 'f': return (long)(next_random() % 17) - 1; /* -1 .. 15 */
	case 'p': return (long)PICK(pointers);
	case 'l': return (long)PICK(lengths);
	case 'g': return (long)(next_random() & (next_random() & 1 ? 0xff : 0xffffffff));
	case 'i': return (long)PICK(ints);
	case 'P': {
		static const uint64_t pids[] = {0, 1, (uint64_t)-1, 2, 99999};
		return next_random() % 4 ? (long)PICK(pids) : (long)getpid();
	}
	case 's': return (long)paths[next_random() % (sizeof paths / sizeof paths[0])];
	case 'a': return (long)PICK(addresses);
	default: return (long)next_random();
	}
}

struct call {
	int number;
	const char *arguments; /* one type letter per argument */
};

static const struct call calls[] = {
    {__NR_read, "fpl"},
    {__NR_write, "fpl"},
    {__NR_open, "sgi"},
    {__NR_close, "f"},
    {__NR_stat, "sp"},
    {__NR_fstat, "fp"},
    {__NR_lstat, "sp"},
    {__NR_poll, "pii"},
    {__NR_lseek, "fig"},
    {__NR_mmap, "allgfl"},
    {__NR_mprotect, "alg"},
    {__NR_munmap, "al"},
    {__NR_brk, "a"},
    {__NR_ioctl, "fip"},
    {__NR_access, "si"},
    {__NR_pipe, "p"},
    {__NR_select, "ipppp"},
    {__NR_dup, "f"},
    {__NR_dup2, "ff"},
    {__NR_socket, "iii"},
    {__NR_connect, "fpl"},
    {__NR_accept, "fpp"},
    {__NR_sendfile, "ffpl"},
    {__NR_sendto, "fplgpl"},
    {__NR_recvfrom, "fplgpp"},
    {__NR_shutdown, "fi"},
    {__NR_bind, "fpl"},
    {__NR_listen, "fi"},
    {__NR_getsockname, "fpp"},
    {__NR_getpeername, "fpp"},
    {__NR_setsockopt, "fiipl"},
    {__NR_getsockopt, "fiipp"},
    {__NR_wait4, "Ppgp"},
    {__NR_kill, "Pi"},
    {__NR_fcntl, "fii"},
    {__NR_getdents, "fpl"},
    {__NR_getcwd, "pl"},
    {__NR_chdir, "s"},
    {__NR_mkdir, "si"},
    {__NR_rmdir, "s"},
    {__NR_creat, "si"},
    {__NR_unlink, "s"},
    {__NR_rename, "ss"},
    {__NR_link, "ss"},
    {__NR_symlink, "ss"},
    {__NR_readlink, "spl"},
    {__NR_chmod, "si"},
    {__NR_fchmod, "fi"},
    {__NR_chown, "sii"},
    {__NR_fchown, "fii"},
    {__NR_lchown, "sii"},
    {__NR_umask, "i"},
    {__NR_mount, "ssspp"},
    {__NR_umount2, "si"},
    {__NR_pread64, "fpll"},
    {__NR_pwrite64, "fpll"},
    {__NR_ftruncate, "fl"},
    {__NR_gettimeofday, "pp"},
    {__NR_getrlimit, "ip"},
    {__NR_setrlimit, "ip"},
    {__NR_times, "p"},
    {__NR_getuid, ""},
    {__NR_setuid, "i"},
    {__NR_setgid, "i"},
    {__NR_setreuid, "ii"},
    {__NR_setresuid, "iii"},
    {__NR_getresuid, "ppp"},
    {__NR_getresgid, "ppp"},
    {__NR_sigaltstack, "pp"},
    {__NR_sched_setaffinity, "Plp"},
    {__NR_sched_getaffinity, "Plp"},
    {__NR_clock_gettime, "ip"},
    {__NR_clock_getres, "ip"},
    {__NR_getdents64, "fpl"},
    {__NR_openat, "isgi"},
    {__NR_accept4, "fppg"},
    {__NR_pipe2, "pg"},
    {__NR_getcpu, "ppp"},
    {__NR_ms_getprocs, "pil"},
    {__NR_ms_kshell, "s"},
    {__NR_ms_ipc_create, "i"},
    {__NR_ms_ipc_send, "fp"},
    {__NR_ms_ipc_call, "fppi"},
    {__NR_ms_ipc_receive, "fpi"},
    {__NR_ms_ipc_reply, "fip"},
    {__NR_ms_ipc_stats, "fp"},
    {__NR_ms_ipc_reply_receive, "fippi"},
    {__NR_ms_tel_read, "iipl"},
    {__NR_ms_tel_stats, "iip"},
    {__NR_ms_tel_map, "ip"},
    {__NR_ms_scope_ctl, "p"},
    {__NR_ms_scope_attach, "f"},
    {__NR_ms_scope_image, "ipl"},
    {__NR_ms_scope_report, "ip"},
    {__NR_ms_scope_device_counter, "ssp"},
    {__NR_ms_scope_emit, "iipl"},
    {__NR_ms_scope_reply, "iii"},
    {__NR_ms_scope_reply_receive, "iiipi"},
    {__NR_ms_getcpus, "pi"},
    {__NR_ms_setmonitor, "Pi"},
    {__NR_ms_acct_init, ""},
    {__NR_ms_acct_get_token, ""},
    {__NR_ms_acct_free_token, "i"},
    {__NR_ms_acct, "ii"},
    {__NR_ms_acct_switch_token, "i"},
    {__NR_ms_priv, "g"},
    {__NR_ms_lattrack_create, "p"},
    {__NR_ms_lattrack_open, "s"},
    {__NR_ms_lattrack_event, "fipli"},
    {__NR_ms_uscope, "ispl"},
};

/* Numbers never made: they end or replace the worker, or sleep on purpose. */
static int excluded(long number)
{
	return number == __NR_exit || number == __NR_exit_group || number == __NR_fork ||
	       number == __NR_vfork || number == __NR_execve || number == __NR_nanosleep;
}

static void one_call(void)
{
	long a[6];
	long number;
	if (next_random() % 4) {
		const struct call *c = &calls[next_random() % (sizeof calls / sizeof calls[0])];
		number = c->number;
		size_t typed = strlen(c->arguments);
		for (size_t i = 0; i < 6; i++)
			a[i] = i < typed ? argument(c->arguments[i]) : 0;
	} else {
		number = (long)(next_random() % 640);
		for (int i = 0; i < 6; i++)
			a[i] = argument("fplgiPsa?"[next_random() % 9]);
	}
	if (excluded(number))
		return;
	if (number == __NR_kill && (a[1] == 9 || a[1] == 15) && a[0] == getpid())
		return; /* killing itself only shortens the batch */
	ms_syscall6(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

static void worker(uint64_t seed, int count)
{
	state = seed * 0x9e3779b97f4a7c15ULL + 1;
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		_exit(3);
	for (size_t i = 0; i < sizeof buffer; i++)
		buffer[i] = (uint8_t)next_random();
	for (int fd = 0; fd < 16; fd++)
		close(fd); /* never the console: random bytes there would garble the report */
	int fds[2];
	ms_syscall3(__NR_pipe2, (long)fds, 04000, 0); /* 0 and 1: to read and write (O_NONBLOCK) */
	ms_syscall3(__NR_socket, 2, 2 | 04000, 0);    /* 2: a nonblocking UDP socket */
	for (int i = 0; i < count; i++) {
		one_call();
		if (i % 100 == 99)
			ms_syscall3(__NR_write, PROGRESS_FD, (long)"", 1);
	}
	_exit(0);
}

static long now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Waits up to limit_ms for pid.  Returns 1 when it ended. */
static int ended_within(pid_t pid, long limit_ms)
{
	long start = now_ms();
	int status;
	while (now_ms() - start < limit_ms) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return 1;
		struct timespec ten_ms = {0, 10000000};
		nanosleep(&ten_ms, NULL);
	}
	return 0;
}

long sysfuzz_run_batch(uint64_t seed, int count, int progress[2])
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return 0;
	if (pid == 0) {
		close(progress[0]);
		dup2(progress[1], PROGRESS_FD);
		worker(seed, count);
	}
	if (!ended_within(pid, WORKER_LIMIT_MS)) {
		killed++;
		printf("# seed %llu: killed at its time limit\n", (unsigned long long)seed);
		kill(pid, SIGKILL);
		if (!ended_within(pid, DEATH_LIMIT_MS))
			return -1;
	}
	char bytes[BATCH / 100 + 1];
	long made = 0, n;
	while ((n = read(progress[0], bytes, sizeof bytes)) > 0)
		made += n * 100;
	return made;
}

static void report(int number, const char *name, int ok)
{
	printf("%s %d %s\n", ok ? "ok" : "not ok", number, name);
}

int main(int argc, char **argv)
{
	long total = argc > 1 ? atol(argv[1]) : DEFAULT_CALLS;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
	int as_init = getpid() == 1;
	int progress[2];
	if (pipe(progress) < 0)
		return 1;
	/* nonblocking reads: O_NONBLOCK in Linux's numbering */
	ms_syscall3(__NR_fcntl, progress[0], 4 /* F_SETFL */, 04000);
	int corpus_ok = 1;
	if (as_init) {
		printf("KTAP version 1\n1..3\n");
		int objects = corpus_replay_objects(), seeds = corpus_replay_seeds(progress);
		report(1, "corpus_objects_refused", objects);
		report(2, "corpus_seeds_replayed", seeds);
		corpus_ok = objects && seeds;
	}
	long made = 0, batches = 0;
	int hang = 0;
	for (uint64_t s = seed; made < total; s++, batches++) {
		long calls = sysfuzz_run_batch(s, BATCH, progress);
		if (calls < 0) {
			printf("# hang: the worker of seed %llu did not end after SIGKILL "
			       "(reproduce: sysfuzz %d %llu)\n",
			       (unsigned long long)s, BATCH, (unsigned long long)s);
			hang = 1;
			break;
		}
		made += calls;
		if ((batches + 1) % 25 == 0) {
			printf("# sysfuzz: %ld calls so far, %ld batches, %ld killed\n", made,
			       batches + 1, killed);
			fflush(stdout);
		}
		if (batches > total / 100 + 100)
			break; /* workers die early every time: stop anyway */
	}
	printf("# sysfuzz: %ld calls in %ld batches (%ld killed at their time limit) from seed "
	       "%llu, %s\n",
	       made, batches, killed, (unsigned long long)seed,
	       hang ? "a hang" : "no hang, no panic");
	if (as_init)
		report(3, "sysfuzz", !hang && made >= total);
	fflush(stdout);
	return hang || made < total || !corpus_ok;
}
