/*
 * sockets: what a socket call must not give a caller that is not entitled
 * to it: a port below 1024 to a user without PRIV_NET_BIND, a port another
 * socket listens on (lwIP's SO_REUSEADDR would let a more exact bind take
 * its connections), and a TCP peer's address out of recvfrom (none: its
 * length 0, as Linux; lwIP would have left stack bytes there after a reset).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "usertests.h"

#define L_EACCES     13
#define L_EADDRINUSE 98
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
