/*
 * sockets: what a socket call must not give a caller that is not entitled
 * to it: a port below 1024 to a user without PRIV_NET_BIND, a port another
 * socket listens on (lwIP's SO_REUSEADDR would let a more exact bind take
 * its connections), and a TCP peer's address out of recvfrom (none: its
 * length 0, as Linux; lwIP would have left stack bytes there after a reset).
 * And a user's share of lwIP's sockets: one user opening sockets until
 * refused leaves root sockets and a working connection, a listener's queue
 * counts against its owner's share, and any number of users hold sockets
 * and pipes at once.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "usertests.h"

#define L_EACCES     13
#define L_EADDRINUSE 98
#define L_ENOBUFS    105
#define USER_ID      1000
#define LOW_PORT     79 /* below 1024, and nothing listens there */

static long raw_bind(int fd, uint32_t address, int port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(address)};
	return ms_syscall3(__NR_bind, fd, (long)&a, sizeof a);
}

static void bind_low_port_as_user(void *unused)
{
	(void)unused;
	if (setuid(USER_ID) < 0) {
		t_fail("setuid(%d) failed", USER_ID);
		_exit(1);
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	long result = raw_bind(fd, INADDR_LOOPBACK, LOW_PORT);
	if (result != -L_EACCES)
		t_fail("bind to port %d as uid %d: %ld, expected -EACCES", LOW_PORT, USER_ID,
		       result);
	close(fd);
	_exit(t_failed() ? 1 : 0);
}

/* A listener on 0.0.0.0:port; returns it, or -1. */
static int listen_on_any(int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), on = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	socklen_t length = sizeof a;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) ||
	    bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 2) ||
	    getsockname(fd, (struct sockaddr *)&a, &length))
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

static void no_bind_over_a_listener(int port)
{
	int thief = socket(AF_INET, SOCK_STREAM, 0), on = 1;
	setsockopt(thief, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
	long result = raw_bind(thief, INADDR_LOOPBACK, port);
	if (result != -L_EADDRINUSE)
		t_fail("bind to 127.0.0.1:%d over a listener on 0.0.0.0: %ld, expected -EADDRINUSE",
		       port, result);
	close(thief);
}

static void stream_recvfrom_gives_no_address(int listener, int port)
{
	int client = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (client < 0 || connect(client, (struct sockaddr *)&to, sizeof to)) {
		t_fail("connect to 127.0.0.1:%d failed", port);
		return;
	}
	int server = accept(listener, NULL, NULL);
	if (server < 0 || send(server, "hello", 5, 0) != 5)
		t_fail("accept and send failed");
	uint8_t from[16], data[8];
	memset(from, 0xaa, sizeof from);
	uint32_t from_length = sizeof from;
	long n = ms_syscall6(__NR_recvfrom, client, (long)data, sizeof data, 0, (long)from,
			     (long)&from_length);
	if (n != 5 || from_length != 0)
		t_fail("recvfrom on TCP: %ld bytes, address length %u (expected 5, 0)", n,
		       from_length);
	for (size_t i = 0; i < sizeof from; i++)
		if (from[i] != 0xaa) {
			t_fail("recvfrom on TCP wrote byte %zu of the address: %#x", i, from[i]);
			break;
		}
	close(client);
	if (server >= 0)
		close(server);
}

void sockets_refuse_what_is_not_the_callers(void)
{
	int status = t_run_child(bind_low_port_as_user, NULL);
	if (status != 0)
		t_fail("the bind as uid %d: status %#x (see above)", USER_ID, status);
	int port;
	int listener = listen_on_any(&port);
	if (listener < 0) {
		t_fail("cannot listen on 0.0.0.0");
		return;
	}
	no_bind_over_a_listener(port);
	stream_recvfrom_gives_no_address(listener, port);
	close(listener);
}

/* ---- A user's share of the sockets ------------------------------------------ */

#define SOCKETS_TRIED 240 /* past a user's share, short of a process's 256 descriptors */
#define FILLERS       5   /* users that fill their share at once: together past lwIP's pool */

struct socket_fill {
	long made;   /* sockets opened */
	long result; /* what the last socket() returned */
};

/* One socket of each kind (kept open): its descriptor or the negated errno
 * of the call that failed. */
static long open_stream(void)
{
	return ms_syscall3(__NR_socket, AF_INET, SOCK_STREAM, 0);
}

static long open_datagram(void)
{
	return ms_syscall3(__NR_socket, AF_INET, SOCK_DGRAM, 0);
}

static long open_listener(void)
{
	long fd = open_stream();
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	long result = fd < 0 ? fd : ms_syscall3(__NR_bind, fd, (long)&a, sizeof a);
	if (result == 0)
		result = ms_syscall3(__NR_listen, fd, 1, 0);
	return result < 0 ? result : fd;
}

/* As uid: opens sockets with make until one is refused (or SOCKETS_TRIED),
 * reports through report_fd, holds them until the gate closes. */
static void fill_sockets_as(uint32_t uid, long (*make)(void), int report_fd, int gate_fd)
{
	if (setgid(uid) < 0 || setuid(uid) < 0)
		_exit(1);
	struct socket_fill fill = {0, 0};
	while (fill.made < SOCKETS_TRIED) {
		fill.result = make();
		if (fill.result < 0)
			break;
		fill.made++;
	}
	write(report_fd, &fill, sizeof fill);
	char c;
	read(gate_fd, &c, 1); /* end of file when the test closes the gate */
	_exit(0);
}

/* Forks a process of uid that fills (fill_sockets_as) and returns its
 * report; *pid is the process, which holds its sockets until gate closes. */
static struct socket_fill filled_by(uint32_t uid, long (*make)(void), const int gate[2], pid_t *pid)
{
	struct socket_fill fill = {-1, 0};
	int fds[2];
	if (pipe(fds) < 0)
		return fill;
	fflush(stdout);
	*pid = fork();
	if (*pid == 0) {
		close(fds[0]);
		close(gate[1]);
		fill_sockets_as(uid, make, fds[1], gate[0]);
	}
	close(fds[1]);
	if (*pid < 0 || read(fds[0], &fill, sizeof fill) != sizeof fill)
		fill.made = -1;
	close(fds[0]);
	return fill;
}

/* As root: a listener on 127.0.0.1, a connection to it, one byte across.
 * Returns 0, or the step that failed. */
static const char *loopback_connection_works(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t length = sizeof a;
	int listener = socket(AF_INET, SOCK_STREAM, 0), client = -1, server = -1;
	const char *failed = NULL;
	char byte = 'x', got = 0;
	if (listener < 0)
		failed = "socket (listener)";
	else if (bind(listener, (struct sockaddr *)&a, sizeof a) || listen(listener, 1) ||
		 getsockname(listener, (struct sockaddr *)&a, &length))
		failed = "bind, listen";
	else if ((client = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		failed = "socket (client)";
	else if (connect(client, (struct sockaddr *)&a, sizeof a))
		failed = "connect";
	else if ((server = accept(listener, NULL, NULL)) < 0)
		failed = "accept";
	else if (write(client, &byte, 1) != 1 || read(server, &got, 1) != 1 || got != byte)
		failed = "a byte across";
	if (server >= 0)
		close(server);
	if (client >= 0)
		close(client);
	if (listener >= 0)
		close(listener);
	return failed;
}

/* Users 1000.. fill their shares of stream sockets at once (FILLERS of
 * them); returns how many the first made, the others in *others. */
static long fill_stream_shares(const int gate[2], pid_t pids[FILLERS + 1], long *others)
{
	struct socket_fill first = filled_by(USER_ID, open_stream, gate, &pids[0]);
	if (first.made < 1 || first.made >= 100 || first.result != -L_ENOBUFS)
		t_fail("uid %d opened %ld sockets, then %ld: expected its share (under 100), then "
		       "-ENOBUFS",
		       USER_ID, first.made, first.result);
	struct socket_fill more = filled_by(USER_ID, open_stream, gate, &pids[1]);
	if (more.made != 0 || more.result != -L_ENOBUFS)
		t_fail("another process of uid %d opened %ld sockets more, then %ld: expected none",
		       USER_ID, more.made, more.result);
	*others = 0;
	for (int i = 1; i < FILLERS; i++) {
		struct socket_fill fill = filled_by(USER_ID + i, open_stream, gate, &pids[i + 1]);
		if (fill.result != -L_ENOBUFS)
			t_fail("uid %d's sockets ended with %ld, expected -ENOBUFS", USER_ID + i,
			       fill.result);
		*others += fill.made > 0 ? fill.made : 0;
	}
	return first.made;
}

static void end_fillers(int gate[2], pid_t *pids, int count)
{
	close(gate[1]);
	for (int i = 0; i < count; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
	close(gate[0]);
}

/* Before: one user's processes opened sockets until lwIP's pool (128 then) was
 * empty, and root could not open one: httpd could not accept.  Now a user
 * holds NET_USER_SOCKETS_MAX (-ENOBUFS past it), all users together leave
 * root its reserve, and root's connection over loopback works. */
void a_user_cannot_take_every_socket(void)
{
	int gate[2];
	pid_t pids[FILLERS + 1] = {0};
	if (pipe(gate) < 0) {
		t_fail("pipe failed");
		return;
	}
	long others, made = fill_stream_shares(gate, pids, &others);
	const char *failed = loopback_connection_works();
	if (failed)
		t_fail("root's connection over loopback failed at %s while users held %ld sockets",
		       failed, made + others);
	end_fillers(gate, pids, FILLERS + 1);
	pid_t again_pid;
	int again_gate[2];
	if (pipe(again_gate) < 0)
		return;
	struct socket_fill again = filled_by(USER_ID, open_stream, again_gate, &again_pid);
	if (again.made != made)
		t_fail("once its processes ended, uid %d opened %ld sockets, expected %ld again",
		       USER_ID, again.made, made);
	end_fillers(again_gate, &again_pid, 1);
	t_note("uid %d opened %ld sockets before -ENOBUFS; %d users together %ld", USER_ID, made,
	       FILLERS, made + others);
}

/* A user fills what all users may hold of a pool lwIP keeps small (make:
 * UDP sockets, listeners; what: their name), and root still gets one with
 * root_make. */
static void small_pool_keeps_roots_share(long (*make)(void), long (*root_make)(void),
					 const char *what)
{
	int gate[2];
	pid_t pid;
	if (pipe(gate) < 0) {
		t_fail("pipe failed");
		return;
	}
	struct socket_fill fill = filled_by(USER_ID, make, gate, &pid);
	if (fill.made < 1 || fill.result != -L_ENOBUFS)
		t_fail("uid %d made %ld %s, then %ld: expected some, then -ENOBUFS", USER_ID,
		       fill.made, what, fill.result);
	long root = root_make();
	if (root < 0)
		t_fail("root cannot make one of the %s while uid %d holds %ld: %ld", what, USER_ID,
		       fill.made, root);
	else
		close((int)root);
	end_fillers(gate, &pid, 1);
	t_note("uid %d made %ld %s before -ENOBUFS", USER_ID, fill.made, what);
}

/* Before: lwIP's 16 UDP sockets and 16 listeners went to whoever asked:
 * a user holding them left root none (httpd could not listen again). */
void small_socket_pools_keep_roots_share(void)
{
	small_pool_keeps_roots_share(open_datagram, open_datagram, "UDP sockets");
	small_pool_keeps_roots_share(open_listener, open_listener, "listeners");
}

/* ---- A listener's queue counts against its owner ----------------------------- */

#define USER_SOCKETS    80 /* NET_USER_SOCKETS_MAX, modules/net/net.h */
#define USER_QUEUE      8  /* NET_USER_QUEUE_MAX: a user's listener's places at most */
#define ASKED_BACKLOG   128
#define QUEUE_CONNECTED USER_QUEUE

struct queue_report {
	long made_after_listen; /* streams opened past the listener before -ENOBUFS */
	long listen_when_full;  /* listen() with the share taken: its result */
	int port;               /* where the listener listens */
};

/* Opens streams with open_stream until refused; returns how many (they stay
 * open) and the refusal in *result. */
static long open_until_refused(long *result, long *last_fd)
{
	long made = 0;
	*last_fd = -1;
	while (made < SOCKETS_TRIED && (*result = open_stream()) >= 0) {
		*last_fd = *result;
		made++;
	}
	return made;
}

/* As uid 1000: a listener on loopback asked for a long queue, then streams
 * until refused; then with one of those closed, a stream made to listen
 * when nothing is left for its queue.  Reports, then accepts QUEUE_CONNECTED
 * connections once the gate says so. */
static void queue_filler(int report_fd, int gate_fd)
{
	struct queue_report report = {0, 0, 0};
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t length = sizeof a;
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		_exit(1);
	int listener = socket(AF_INET, SOCK_STREAM, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof a) ||
	    listen(listener, ASKED_BACKLOG) ||
	    getsockname(listener, (struct sockaddr *)&a, &length))
		_exit(2);
	report.port = ntohs(a.sin_port);
	long result, last;
	report.made_after_listen = open_until_refused(&result, &last);
	close((int)last); /* one place: a socket, but nothing for its queue */
	long lone = open_stream();
	report.listen_when_full = lone < 0 ? lone : ms_syscall3(__NR_listen, lone, 1, 0);
	write(report_fd, &report, sizeof report);
	char c;
	read(gate_fd, &c, 1); /* root has connected */
	close((int)lone);
	int accepted = 0;
	for (int i = 0; i < QUEUE_CONNECTED; i++) { /* room: the closed lone socket's */
		int server = accept(listener, NULL, NULL);
		accepted += server >= 0;
		if (server >= 0)
			close(server);
	}
	_exit(accepted == QUEUE_CONNECTED ? 0 : 3);
}

/* As root: QUEUE_CONNECTED connections to 127.0.0.1:port, all left in
 * clients[]; returns how many connected. */
static int connect_clients(int port, int clients[QUEUE_CONNECTED])
{
	struct sockaddr_in to = {.sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int connected = 0;
	for (int i = 0; i < QUEUE_CONNECTED; i++) {
		clients[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (clients[i] >= 0 && !connect(clients[i], (struct sockaddr *)&to, sizeof to))
			connected++;
	}
	return connected;
}

static void check_queue_report(const struct queue_report *r)
{
	long expected = USER_SOCKETS - 1 - USER_QUEUE;
	if (r->made_after_listen != expected)
		t_fail("uid %d opened %ld streams beside a listener asked for a backlog of %d, "
		       "expected %ld (its queue's %d places count as its sockets)",
		       USER_ID, r->made_after_listen, ASKED_BACKLOG, expected, USER_QUEUE);
	if (r->listen_when_full != -L_ENOBUFS)
		t_fail("uid %d's listen with no room for a queue: %ld, expected -ENOBUFS", USER_ID,
		       r->listen_when_full);
}

/* Before: the connections lwIP completed in a listener's queue were no
 * one's, so a user's listener asked for a backlog of 128 took as many of
 * the pool's sockets beyond the user's 80.  Now its places (at most
 * NET_USER_QUEUE_MAX) count as the owner's sockets from listen to close,
 * and the queue still takes that many connections for accept. */
void a_listeners_queue_counts_against_its_owner(void)
{
	int report_pipe[2], gate[2], clients[QUEUE_CONNECTED];
	struct queue_report report = {-1, 0, 0};
	if (pipe(report_pipe) < 0 || pipe(gate) < 0) {
		t_fail("pipe failed");
		return;
	}
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		close(report_pipe[0]);
		close(gate[1]);
		queue_filler(report_pipe[1], gate[0]);
	}
	close(report_pipe[1]);
	close(gate[0]);
	if (pid < 0 || read(report_pipe[0], &report, sizeof report) != sizeof report)
		t_fail("uid %d's listener did not report", USER_ID);
	else
		check_queue_report(&report);
	int connected = report.port ? connect_clients(report.port, clients) : 0;
	if (connected != QUEUE_CONNECTED)
		t_fail("%d of %d connections to uid %d's listener completed before accept",
		       connected, QUEUE_CONNECTED, USER_ID);
	close(gate[1]);
	int status = -1;
	if (pid > 0)
		waitpid(pid, &status, 0);
	if (status != 0)
		t_fail("uid %d's listener: status %#x (3: could not accept the queued connections)",
		       USER_ID, status);
	for (int i = 0; i < QUEUE_CONNECTED && report.port; i++)
		if (clients[i] >= 0)
			close(clients[i]);
	close(report_pipe[0]);
	t_note("uid %d: %ld streams beside its listener, %d queued connections accepted", USER_ID,
	       report.made_after_listen, connected);
}

/* ---- Many users at once ------------------------------------------------------ */

#define MANY_USERS 24   /* past the 16 users the per-user tables once held */
#define FIRST_UID  2000 /* no other case's */

struct holder_report {
	long pipe_result;   /* 0, or pipe's negated errno */
	long socket_result; /* a descriptor, or socket's negated errno */
};

/* As uid: a pipe and a socket, reported, held until the gate closes. */
static void hold_pipe_and_socket_as(uint32_t uid, int report_fd, int gate_fd)
{
	if (setgid(uid) < 0 || setuid(uid) < 0)
		_exit(1);
	int fds[2];
	struct holder_report report = {ms_syscall3(__NR_pipe, (long)fds, 0, 0), open_stream()};
	write(report_fd, &report, sizeof report);
	char c;
	read(gate_fd, &c, 1); /* end of file when the test closes the gate */
	_exit(0);
}

static struct holder_report held_by(uint32_t uid, const int gate[2], pid_t *pid)
{
	struct holder_report report = {-1000, -1000};
	int fds[2];
	if (pipe(fds) < 0)
		return report;
	fflush(stdout);
	*pid = fork();
	if (*pid == 0) {
		close(fds[0]);
		close(gate[1]);
		hold_pipe_and_socket_as(uid, fds[1], gate[0]);
	}
	close(fds[1]);
	if (*pid < 0 || read(fds[0], &report, sizeof report) != sizeof report)
		report.pipe_result = report.socket_result = -1000;
	close(fds[0]);
	return report;
}

/* Root's pipe and socket while every user holds its own; returns the step
 * that failed, or NULL. */
static const char *root_still_gets_a_pipe_and_a_socket(void)
{
	int fds[2];
	if (pipe(fds) < 0)
		return "pipe";
	close(fds[0]);
	close(fds[1]);
	long fd = open_stream();
	if (fd < 0)
		return "socket";
	close((int)fd);
	return NULL;
}

/* Before: what users held of kernel memory and of sockets was counted in
 * two tables of 16 users each, so with 16 users holding a pipe and a socket
 * the 17th was refused both (-ENFILE, -ENOBUFS) though it held nothing.  Now
 * one table (kernel/proc/user_charges.c) holds any number of users. */
void many_users_hold_pipes_and_sockets_at_once(void)
{
	int gate[2];
	pid_t pids[MANY_USERS] = {0};
	if (pipe(gate) < 0) {
		t_fail("pipe failed");
		return;
	}
	int refused = 0;
	for (int i = 0; i < MANY_USERS; i++) {
		struct holder_report r = held_by(FIRST_UID + i, gate, &pids[i]);
		if (r.pipe_result < 0 || r.socket_result < 0) {
			refused++;
			t_fail("uid %d (user %d of %d holding at once): pipe %ld, socket %ld",
			       FIRST_UID + i, i + 1, MANY_USERS, r.pipe_result, r.socket_result);
		}
	}
	const char *failed = root_still_gets_a_pipe_and_a_socket();
	if (failed)
		t_fail("root's %s was refused while %d users held theirs", failed, MANY_USERS);
	end_fillers(gate, pids, MANY_USERS);
	t_note("%d users held a pipe and a socket at once, %d refused", MANY_USERS, refused);
}
