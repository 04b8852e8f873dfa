/*
 * rscflnet: does network work follow its activity?  Per-activity accounting
 * of TCP, as init (init=/bin/rscflnet exit=qemu) printing KTAP, or from a
 * shell.  Each case answers one question:
 *   - does a transfer work while no process uses accounting (and how long
 *     does it take: the figure for accounting off)?
 *   - does sending 1 MiB over TCP (loopback, to a forked child) inside an
 *     activity show the net subsystem, at least 1 MiB of TCP payload sent,
 *     segments both ways, lwIP's work on the connection as asynchronous
 *     work, and no NIC packets (no NIC carried it)?
 *   - does the receiving child, inside its own activity, see exactly the
 *     bytes it read as TCP payload received, in segments?
 *   - does a transfer outside any activity charge nothing: not a stopped
 *     token, not a token allocated in the slot of a freed one?
 *   - with an address (rscflnet a.b.c.d:port, a sink that reads to the end
 *     and closes): does 1 MiB sent through the NIC count NIC packets both
 *     ways besides the TCP figures?
 * Only relations are asserted, never times or exact segment counts.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "librscfl/librscfl.h"

#define PORT     7077
#define TOTAL    (1024 * 1024)
#define CHUNK    (64 * 1024)
#define MAX_CASE 5

static int failures, case_number;
static rscfl_handle handle;
static char chunk[CHUNK];

static void report(const char *name, int ok)
{
	case_number++;
	if (!ok)
		failures++;
	printf("%sok %d %s\n", ok ? "" : "not ", case_number, name);
	fflush(stdout);
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

static unsigned long long u(uint64_t v)
{
	return (unsigned long long)v;
}

static void print_net(const char *what, const struct rscfl_acct *a)
{
	const struct acct_result *r = &a->kernel;
	printf("# %s: tcp bytes sent %llu received %llu, segments sent %llu received %llu, "
	       "retransmits %llu, nic packets sent %llu received %llu, async %llu items %llu ns\n",
	       what, u(r->tcp_bytes_sent), u(r->tcp_bytes_received), u(r->tcp_segments_sent),
	       u(r->tcp_segments_received), u(r->tcp_retransmits), u(r->nic_packets_sent),
	       u(r->nic_packets_received), u(r->async_items), u(r->async_ns));
	const struct acct_subsystem *net = rscfl_find_subsystem(a, "net");
	if (net)
		printf("#   net calls %llu inclusive %llu ns\n", u(net->calls),
		       u(net->inclusive_ns));
}

static struct sockaddr_in address_of(uint32_t host, uint16_t port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(host);
	return a;
}

/* Connects to a and writes TOTAL bytes.  Returns the bytes written, or -1. */
static long send_megabyte(const struct sockaddr_in *a, int wait_for_close)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (const struct sockaddr *)a, sizeof *a) < 0) {
		printf("# socket or connect: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	long done = 0;
	while (done < TOTAL) {
		ssize_t n = write(fd, chunk, CHUNK);
		if (n <= 0)
			break;
		done += n;
	}
	if (wait_for_close) {
		/* The peer reads to the end, then closes: its FIN comes back. */
		shutdown(fd, SHUT_WR);
		char c;
		while (read(fd, &c, 1) > 0)
			;
	}
	close(fd);
	return done;
}

/* Child: accepts one connection on listener, inside an activity of its own,
 * and reads it to the end.  Exits 0 when its figures are right. */
static void receive_in_child(int listener)
{
	/* librscfl keeps the parent's handle across fork; the child's own
	 * results area is mapped at the same address once it asks for one. */
	if (ms_syscall3(__NR_ms_acct_init, 0, 0, 0) != (long)ACCT_USER_ADDRESS)
		_exit(2);
	rscfl_handle h = rscfl_init();
	int token = h ? rscfl_get_token(h) : -1, ok = 1;
	int started = token > 0 ? rscfl_acct(h, token, ACCT_START) : -1;
	if (started != 0) {
		printf("# receiver: handle %p token %d start %d\n", (void *)h, token, started);
		_exit(2);
	}
	int fd = accept(listener, NULL, NULL);
	long total = 0;
	ssize_t n;
	static char buffer[CHUNK];
	while (fd >= 0 && (n = read(fd, buffer, sizeof buffer)) > 0)
		total += n;
	rscfl_acct(h, token, ACCT_STOP);
	struct rscfl_acct a;
	CHECK(ok, rscfl_read_acct(h, token, &a) == 0);
	print_net("receiver", &a);
	CHECK(ok, total == TOTAL);
	CHECK(ok, a.kernel.tcp_bytes_received == (uint64_t)total);
	CHECK(ok, a.kernel.tcp_segments_received > 0);
	CHECK(ok, a.kernel.tcp_bytes_sent == 0);
	fflush(stdout);
	if (fd >= 0)
		close(fd);
	_exit(ok ? 0 : 1);
}

/* Forks a child listening on 127.0.0.1:PORT that receives one connection
 * (accounted when accounted is set, else it only reads).  Returns its pid
 * once it listens, or -1. */
static pid_t start_receiver(int accounted)
{
	int ready[2];
	if (pipe(ready) < 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(ready[0]);
		int listener = socket(AF_INET, SOCK_STREAM, 0);
		int one = 1;
		setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		struct sockaddr_in a = address_of(INADDR_LOOPBACK, PORT);
		if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof a) < 0 ||
		    listen(listener, 1) < 0)
			_exit(3);
		write(ready[1], "r", 1);
		if (accounted)
			receive_in_child(listener);
		int fd = accept(listener, NULL, NULL);
		while (fd >= 0 && read(fd, chunk, sizeof chunk) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	char c;
	int got = pid > 0 && read(ready[0], &c, 1) == 1;
	close(ready[0]);
	return got ? pid : -1;
}

static int child_status(pid_t pid)
{
	int status = 0;
	if (pid <= 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* Does a transfer work while no process uses accounting?  Its time is the
 * network path's cost with accounting off (docs/PERFORMANCE.md: instructions
 * under -icount shift=0). */
static void transfer_without_accounting(void)
{
	int ok = 1;
	pid_t pid = start_receiver(0);
	struct sockaddr_in a = address_of(INADDR_LOOPBACK, PORT);
	uint64_t start = now_ns();
	CHECK(ok, send_megabyte(&a, 0) == TOTAL);
	CHECK(ok, child_status(pid) == 0);
	printf("# 1 MiB over loopback, accounting off: %llu ns\n", u(now_ns() - start));
	report("transfer_without_accounting", ok);
}

/* Does 1 MiB sent over loopback inside an activity show in it, and does the
 * receiving child see what it read in its own? */
static void loopback_send_is_charged(void)
{
	int ok = 1, token = rscfl_get_token(handle);
	pid_t pid = start_receiver(1);
	CHECK(ok, pid > 0);
	struct sockaddr_in a = address_of(INADDR_LOOPBACK, PORT);
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == 0);
	long sent = send_megabyte(&a, 0);
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == 0);
	int status = child_status(pid);
	struct rscfl_acct r;
	CHECK(ok, rscfl_read_acct(handle, token, &r) == 0);
	print_net("sender", &r);
	const struct acct_subsystem *net = rscfl_find_subsystem(&r, "net");
	CHECK(ok, sent == TOTAL);
	CHECK(ok, net && net->calls > 0);
	CHECK(ok, r.kernel.tcp_bytes_sent >= TOTAL);
	CHECK(ok, r.kernel.tcp_segments_sent > 0);
	CHECK(ok, r.kernel.tcp_segments_received > 0); /* the receiver's ACKs */
	CHECK(ok, r.kernel.tcp_retransmits <= r.kernel.tcp_segments_sent);
	CHECK(ok, r.kernel.async_items > 0 && r.kernel.async_ns > 0);
	CHECK(ok, r.kernel.nic_packets_sent == 0 && r.kernel.nic_packets_received == 0);
	report("loopback_send_is_charged", ok);
	report("loopback_receive_is_charged", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	rscfl_free_token(handle, token);
}

static int tcp_untouched(const struct acct_result *r)
{
	return r->tcp_bytes_sent == 0 && r->tcp_bytes_received == 0 && r->tcp_segments_sent == 0 &&
	       r->tcp_segments_received == 0 && r->async_items == 0 && r->nic_packets_sent == 0;
}

/* Does a transfer outside any activity charge nothing: neither a token that
 * was stopped before it, nor one allocated where a freed one was? */
static void unaccounted_transfer_charges_nothing(void)
{
	int ok = 1, stopped = rscfl_get_token(handle), fresh = rscfl_get_token(handle);
	struct rscfl_acct before, after, other;
	CHECK(ok, rscfl_acct(handle, stopped, ACCT_START) == 0);
	CHECK(ok, rscfl_acct(handle, stopped, ACCT_STOP) == 0);
	CHECK(ok, rscfl_read_acct(handle, stopped, &before) == 0);
	pid_t pid = start_receiver(0);
	struct sockaddr_in a = address_of(INADDR_LOOPBACK, PORT);
	CHECK(ok, send_megabyte(&a, 0) == TOTAL);
	CHECK(ok, child_status(pid) == 0);
	CHECK(ok, rscfl_read_acct(handle, stopped, &after) == 0);
	CHECK(ok, rscfl_read_acct(handle, fresh, &other) == 0);
	CHECK(ok, tcp_untouched(&before.kernel) && tcp_untouched(&after.kernel));
	CHECK(ok, tcp_untouched(&other.kernel));
	rscfl_free_token(handle, stopped);
	rscfl_free_token(handle, fresh);
	report("unaccounted_transfer_charges_nothing", ok);
}

/* Does 1 MiB sent through the NIC, to a sink at address, count NIC packets
 * both ways besides the TCP figures? */
static void nic_send_is_charged(const char *address)
{
	int ok = 1, token = rscfl_get_token(handle);
	unsigned b[4], port = 0;
	CHECK(ok, sscanf(address, "%u.%u.%u.%u:%u", &b[0], &b[1], &b[2], &b[3], &port) == 5);
	struct sockaddr_in a =
	    address_of(b[0] << 24 | b[1] << 16 | b[2] << 8 | b[3], (uint16_t)port);
	CHECK(ok, rscfl_acct(handle, token, ACCT_START) == 0);
	long sent = send_megabyte(&a, 1);
	CHECK(ok, rscfl_acct(handle, token, ACCT_STOP) == 0);
	struct rscfl_acct r;
	CHECK(ok, rscfl_read_acct(handle, token, &r) == 0);
	print_net("nic sender", &r);
	const struct acct_subsystem *net = rscfl_find_subsystem(&r, "net");
	CHECK(ok, sent == TOTAL);
	CHECK(ok, net && net->calls > 0);
	CHECK(ok, r.kernel.tcp_bytes_sent >= TOTAL);
	CHECK(ok, r.kernel.tcp_segments_sent > 0 && r.kernel.tcp_segments_received > 0);
	CHECK(ok, r.kernel.nic_packets_sent > 0 && r.kernel.nic_packets_received > 0);
	CHECK(ok, r.kernel.nic_packets_sent <= r.kernel.tcp_segments_sent);
	CHECK(ok, r.kernel.nic_packets_received <= r.kernel.tcp_segments_received);
	CHECK(ok, r.kernel.async_items > 0);
	rscfl_free_token(handle, token);
	report("nic_send_is_charged", ok);
}

int main(int argc, char **argv)
{
	const char *sink = argc > 1 ? argv[1] : NULL;
	printf("KTAP version 1\n1..%d\n", sink ? MAX_CASE : MAX_CASE - 1);
	fflush(stdout);
	memset(chunk, 'x', sizeof chunk);
	transfer_without_accounting(); /* first: before this process is an owner */
	handle = rscfl_init();
	if (!handle || handle->page->magic != ACCT_PAGE_MAGIC) {
		printf("# rscfl_init failed\n");
		return 1;
	}
	loopback_send_is_charged();
	unaccounted_transfer_charges_nothing();
	if (sink)
		nic_send_is_charged(sink);
	printf(failures ? "# %d FAILED\n" : "# ALL TESTS PASSED\n", failures);
	return failures ? 1 : 0;
}
