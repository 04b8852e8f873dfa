/*
 * The trace stream over TCP, for machines without a virtio console: with
 * trace_tcp=PORT on the command line the kernel listens on PORT and serves
 * one host at a time with the same framing and control lines as the
 * console (uapi/trace.h; tools/mscope record --tcp HOST:PORT).  Off unless
 * asked for: whoever connects may run kernel-shell lines.
 *
 * lwIP's sockets are not full duplex here (LWIP_NETCONN_FULLDUPLEX 0), so
 * the socket is only ever used under one lock: the server thread polls it
 * for the host's bytes without blocking, and the sink sends frames from the
 * drain thread.  Both threads are left out of the trace.  When the host goes
 * away, a trace into this sink is stopped (nobody would receive it).  A host
 * that has said nothing for trace_tcp_idle seconds (60) while no trace runs
 * into this sink is let go, so that one that connected and vanished, or never
 * meant to speak, does not hold the port from the next.
 */
#include "lwip/sockets.h"

#include "boot/cmdline.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/number.h"
#include "net/internal.h"
#include "sched/sched.h"
#include "time/time.h"
#include "trace/trace.h"

#define POLL_NS (10 * 1000 * 1000)

static unsigned listen_port;
static uint64_t idle_ns = 60 * NSEC_PER_SEC;
static struct mutex socket_lock = MUTEX_INIT(socket_lock, "trace.tcp");
static int connection = -1; /* lwIP's socket of the host, under socket_lock */

static int set_port(const char *value)
{
	uint64_t port;
	if (parse_decimal(value, 65535, &port) || !port)
		return -EINVAL;
	listen_port = (unsigned)port;
	return 0;
}
KERNEL_PARAM(trace_tcp, set_port, "PORT: serve the trace stream and its control lines over TCP");

static int set_idle(const char *value)
{
	uint64_t seconds;
	if (parse_decimal(value, 24 * 3600, &seconds) || !seconds)
		return -EINVAL;
	idle_ns = seconds * NSEC_PER_SEC;
	return 0;
}
KERNEL_PARAM(trace_tcp_idle, set_idle,
	     "SECONDS: let a TCP trace host go after this long silent with no trace running (60)");

/* Sends all of data on the connection; socket_lock held. */
static int send_all(const void *data, size_t length)
{
	const uint8_t *at = data;
	while (length) {
		int sent = lwip_send(connection, at, length, 0);
		if (sent <= 0)
			return -EIO;
		at += sent;
		length -= (size_t)sent;
	}
	return 0;
}

static int write_frame(void *context, uint16_t kind, uint16_t stream, const void *data,
		       uint32_t length)
{
	struct trace_frame header = {
	    .magic = TRACE_FRAME_MAGIC, .kind = kind, .stream = stream, .length = length};
	mutex_lock(&socket_lock);
	int error = connection < 0 ? -ENOTCONN : send_all(&header, sizeof header);
	if (!error && length)
		error = send_all(data, length);
	mutex_unlock(&socket_lock);
	return error;
}

static const struct trace_sink tcp_sink = {.name = "tcp", .frame = write_frame};
static struct trace_control control = {.sink = &tcp_sink};

/* The host's bytes now, without waiting: > 0 bytes, 0 none yet, < 0 gone. */
static int receive_some(uint8_t *buffer, size_t size)
{
	mutex_lock(&socket_lock);
	int n = lwip_recv(connection, buffer, size, MSG_DONTWAIT);
	int error = n < 0 ? net_port_take_errno() : 0;
	mutex_unlock(&socket_lock);
	if (n < 0)
		return error == EWOULDBLOCK || error == EAGAIN ? 0 : -1;
	return n ? n : -1; /* 0: the host closed */
}

/* True when the host has been silent for idle_ns and nothing streams to it. */
static bool host_is_idle(uint64_t last_heard)
{
	return !trace_running_into(&tcp_sink) && clock_ns() - last_heard >= idle_ns;
}

static void serve_connection(void)
{
	static uint8_t buffer[4096];
	uint64_t last_heard = clock_ns();
	int n;
	while ((n = receive_some(buffer, sizeof buffer)) >= 0) {
		if (n) {
			trace_control_bytes(&control, buffer, (size_t)n);
			last_heard = clock_ns();
		} else if (host_is_idle(last_heard)) {
			pr_info("trace: the TCP host said nothing for %lu s: letting it go\n",
				(unsigned long)(idle_ns / NSEC_PER_SEC));
			break;
		} else {
			sched_sleep_ns(POLL_NS);
		}
	}
	trace_control_end(&control);
	if (trace_running_into(&tcp_sink))
		trace_stop(NULL); /* the frames would go nowhere */
	mutex_lock(&socket_lock);
	lwip_close(connection);
	connection = -1;
	mutex_unlock(&socket_lock);
}

static int listen_on(unsigned port)
{
	int listener = lwip_socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = lwip_htons(port)};
	if (listener < 0 || lwip_bind(listener, (struct sockaddr *)&address, sizeof address) ||
	    lwip_listen(listener, 1)) {
		pr_warn("trace: cannot listen on TCP port %u\n", port);
		return -1;
	}
	pr_info("trace: the trace stream is served on TCP port %u\n", port);
	return listener;
}

static int server(void *arg)
{
	thread_set_untraced(true);
	int listener = listen_on(listen_port);
	while (listener >= 0) {
		int host = lwip_accept(listener, NULL, NULL);
		if (host < 0)
			continue;
		mutex_lock(&socket_lock);
		connection = host;
		mutex_unlock(&socket_lock);
		serve_connection();
	}
	return 0;
}

void net_trace_tcp_init(void)
{
	if (!listen_port)
		return;
	trace_register_sink(&tcp_sink);
	struct thread *t = thread_create(server, NULL, "trace-tcp", SCHED_PRIORITY_NORMAL);
	if (t)
		thread_detach(t); /* nobody joins it: its stack goes back when it ends */
	else
		pr_warn("trace: no thread for the TCP sink on port %u\n", (unsigned)listen_port);
}
