/*
 * Socket options: Linux's levels and names translated to lwIP's, plus the
 * ones the socket layer keeps itself: SO_RCVTIMEO and SO_SNDTIMEO (the
 * blocking loop in socket.c enforces them; lwIP keeps its one-slice
 * timeouts), SO_SNDBUF (lwIP has none: accepted and reported as TCP_SND_BUF)
 * and SO_LINGER (accepted, not enforced).  Integer options are 4 bytes, as
 * on Linux; a shorter value is -EINVAL.
 */
#include "lwip/sockets.h"

#include "joinpoint/joinpoint.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "net/internal.h"
#include "time/time.h"

struct option_map {
	int level, name;           /* Linux's */
	int lwip_level, lwip_name; /* lwIP's */
};

static const struct option_map options[] = {
    {NET_SOL_SOCKET, NET_SO_REUSEADDR, SOL_SOCKET, SO_REUSEADDR},
    {NET_SOL_SOCKET, NET_SO_REUSEPORT, SOL_SOCKET, SO_REUSEADDR},
    {NET_SOL_SOCKET, NET_SO_TYPE, SOL_SOCKET, SO_TYPE},
    {NET_SOL_SOCKET, NET_SO_ERROR, SOL_SOCKET, SO_ERROR},
    {NET_SOL_SOCKET, NET_SO_BROADCAST, SOL_SOCKET, SO_BROADCAST},
    {NET_SOL_SOCKET, NET_SO_RCVBUF, SOL_SOCKET, SO_RCVBUF},
    {NET_SOL_SOCKET, NET_SO_KEEPALIVE, SOL_SOCKET, SO_KEEPALIVE},
    {NET_SOL_SOCKET, NET_SO_ACCEPTCONN, SOL_SOCKET, SO_ACCEPTCONN},
    {NET_IPPROTO_TCP, NET_TCP_NODELAY, IPPROTO_TCP, TCP_NODELAY},
    {NET_IPPROTO_TCP, NET_TCP_KEEPIDLE, IPPROTO_TCP, TCP_KEEPIDLE},
    {NET_IPPROTO_TCP, NET_TCP_KEEPINTVL, IPPROTO_TCP, TCP_KEEPINTVL},
    {NET_IPPROTO_TCP, NET_TCP_KEEPCNT, IPPROTO_TCP, TCP_KEEPCNT},
    {NET_IPPROTO_IP, NET_IP_TOS, IPPROTO_IP, IP_TOS},
    {NET_IPPROTO_IP, NET_IP_TTL, IPPROTO_IP, IP_TTL},
};

static const struct option_map *find_option(int level, int name)
{
	for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
		if (options[i].level == level && options[i].name == name)
			return &options[i];
	return NULL;
}

static bool is_timeout(int level, int name)
{
	return level == NET_SOL_SOCKET && (name == NET_SO_RCVTIMEO || name == NET_SO_SNDTIMEO);
}

static uint64_t *timeout_slot(struct net_socket *s, int name)
{
	return name == NET_SO_RCVTIMEO ? &s->recv_timeout_ns : &s->send_timeout_ns;
}

/* Longer timeouts mean "for ever" (stored as 0, as no timeout), as a
 * deadline that far off would overflow the clock's nanoseconds. */
#define TIMEOUT_MAX_SECONDS (100ULL * 365 * 24 * 3600)

static int set_timeout(struct net_socket *s, int name, const void *value, size_t length)
{
	struct net_timeval tv;
	if (length < sizeof tv)
		return -EINVAL;
	memcpy(&tv, value, sizeof tv);
	if (tv.seconds < 0 || tv.microseconds < 0 || tv.microseconds >= 1000000)
		return -EINVAL;
	*timeout_slot(s, name) =
	    (uint64_t)tv.seconds > TIMEOUT_MAX_SECONDS
		? 0
		: (uint64_t)tv.seconds * NSEC_PER_SEC + (uint64_t)tv.microseconds * 1000;
	return 0;
}

JOINPOINT_DEFINE(net, setsockopt, int, struct net_socket *, socket, int, level, int, name,
		 const void *, value, size_t, length)
{
	if (!socket || !value)
		return -EINVAL;
	if (is_timeout(level, name))
		return set_timeout(socket, name, value, length);
	if (length < sizeof(int))
		return -EINVAL;
	if (level == NET_SOL_SOCKET && (name == NET_SO_SNDBUF || name == NET_SO_LINGER))
		return 0;
	const struct option_map *o = find_option(level, name);
	if (!o)
		return -ENOPROTOOPT;
	int v;
	memcpy(&v, value, sizeof v);
	if (lwip_setsockopt(socket->lwip, o->lwip_level, o->lwip_name, &v, sizeof v) < 0)
		return -net_port_take_errno();
	return 0;
}

static int get_timeout(struct net_socket *s, int name, void *value, size_t *length)
{
	uint64_t ns = *timeout_slot(s, name);
	struct net_timeval tv = {(int64_t)(ns / NSEC_PER_SEC), (int64_t)(ns % NSEC_PER_SEC / 1000)};
	if (*length < sizeof tv)
		return -EINVAL;
	memcpy(value, &tv, sizeof tv);
	*length = sizeof tv;
	return 0;
}

static int get_int(void *value, size_t *length, int v)
{
	memcpy(value, &v, sizeof v);
	*length = sizeof v;
	return 0;
}

JOINPOINT_DEFINE(net, getsockopt, int, struct net_socket *, socket, int, level, int, name, void *,
		 value, size_t *, length)
{
	if (!socket || !value || !length)
		return -EINVAL;
	if (is_timeout(level, name))
		return get_timeout(socket, name, value, length);
	if (*length < sizeof(int))
		return -EINVAL;
	if (level == NET_SOL_SOCKET && name == NET_SO_SNDBUF)
		return get_int(value, length, TCP_SND_BUF);
	if (level == NET_SOL_SOCKET && name == NET_SO_LINGER)
		return get_int(value, length, 0);
	const struct option_map *o = find_option(level, name);
	if (!o)
		return -ENOPROTOOPT;
	int v = 0;
	socklen_t v_length = sizeof v;
	if (lwip_getsockopt(socket->lwip, o->lwip_level, o->lwip_name, &v, &v_length) < 0)
		return -net_port_take_errno();
	if (o->name == NET_SO_ERROR && socket->connecting) {
		socket->connecting = false; /* a nonblocking connect's outcome */
		if (v == ECONNRESET)
			v = ECONNREFUSED;
	}
	return get_int(value, length, v);
}
