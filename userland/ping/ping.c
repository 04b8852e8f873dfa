/*
 * ping: ICMP echo requests to an IPv4 address, one a second, each reply
 * printed with its round-trip time; a summary at the end.  Uses a raw ICMP
 * socket (replies arrive with their IP header, which is skipped), or, where
 * raw sockets are refused, a datagram ICMP socket ("ping socket": replies
 * arrive without the header and the kernel owns the identifier).  Exits 0
 * when any reply came, 1 when none did, 2 on bad usage.
 *
 *     ping [-c count] [-i interval_ms] [-W timeout_s] address
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define ICMP_ECHO_REPLY   0
#define ICMP_ECHO_REQUEST 8
#define PAYLOAD_BYTES     56

struct icmp_echo {
	uint8_t type;
	uint8_t code;
	uint16_t checksum;
	uint16_t id;
	uint16_t sequence;
	uint8_t payload[PAYLOAD_BYTES];
};

struct ping {
	int fd;
	int raw; /* replies carry an IP header */
	struct sockaddr_in target;
	uint16_t id;
	int count, interval_ms, timeout_s;
	int sent, received;
	double min_ms, max_ms, total_ms;
};

static uint64_t now_us(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* The Internet checksum (RFC 1071) of length bytes. */
static uint16_t checksum(const void *data, size_t length)
{
	const uint8_t *bytes = data;
	uint32_t sum = 0;
	for (size_t i = 0; i + 1 < length; i += 2)
		sum += (uint32_t)(bytes[i] << 8 | bytes[i + 1]);
	if (length & 1)
		sum += (uint32_t)bytes[length - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

static int open_socket(struct ping *p)
{
	p->fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	p->raw = p->fd >= 0;
	if (p->fd < 0)
		p->fd = socket(AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
	if (p->fd < 0)
		fprintf(stderr, "ping: socket: %s\n", strerror(errno));
	return p->fd;
}

static int send_echo(struct ping *p, int sequence)
{
	struct icmp_echo echo = {
	    .type = ICMP_ECHO_REQUEST, .id = htons(p->id), .sequence = htons((uint16_t)sequence)};
	uint64_t sent_at = now_us();
	memcpy(echo.payload, &sent_at, sizeof(sent_at));
	for (int i = sizeof(sent_at); i < PAYLOAD_BYTES; i++)
		echo.payload[i] = (uint8_t)i;
	echo.checksum = checksum(&echo, sizeof(echo));
	if (sendto(p->fd, &echo, sizeof(echo), 0, (struct sockaddr *)&p->target,
		   sizeof(p->target)) < 0) {
		fprintf(stderr, "ping: sendto: %s\n", strerror(errno));
		return -1;
	}
	p->sent++;
	return 0;
}

/* Returns the echo reply in packet (n bytes) for sequence, or NULL. */
static const struct icmp_echo *match_reply(struct ping *p, const uint8_t *packet, ssize_t n,
					   int sequence)
{
	if (p->raw) {
		if (n < 20 || (size_t)n < (size_t)(packet[0] & 0xf) * 4)
			return NULL;
		size_t header = (size_t)(packet[0] & 0xf) * 4;
		packet += header;
		n -= (ssize_t)header;
	}
	const struct icmp_echo *echo = (const struct icmp_echo *)packet;
	if (n < 8 + (ssize_t)sizeof(uint64_t) || echo->type != ICMP_ECHO_REPLY ||
	    ntohs(echo->sequence) != sequence || (p->raw && ntohs(echo->id) != p->id))
		return NULL;
	return echo;
}

static void report_reply(struct ping *p, const struct icmp_echo *echo, ssize_t n)
{
	uint64_t sent_at;
	memcpy(&sent_at, echo->payload, sizeof(sent_at));
	double ms = (double)(now_us() - sent_at) / 1000.0;
	printf("%d bytes from %s: icmp_seq=%d time=%.3f ms\n", (int)n,
	       inet_ntoa(p->target.sin_addr), ntohs(echo->sequence), ms);
	fflush(stdout);
	if (p->received == 0 || ms < p->min_ms)
		p->min_ms = ms;
	if (ms > p->max_ms)
		p->max_ms = ms;
	p->total_ms += ms;
	p->received++;
}

/* Waits up to wait_ms for sequence's reply.  Returns 1 (reply), 0 (none). */
static int await_reply(struct ping *p, int sequence, int wait_ms)
{
	uint64_t deadline = now_us() + (uint64_t)wait_ms * 1000u;
	for (uint64_t now; (now = now_us()) < deadline;) {
		struct pollfd pfd = {.fd = p->fd, .events = POLLIN};
		if (poll(&pfd, 1, (int)((deadline - now + 999) / 1000)) <= 0)
			continue;
		uint8_t packet[1500];
		ssize_t n = recv(p->fd, packet, sizeof(packet), 0);
		if (n < 0)
			continue;
		const struct icmp_echo *echo = match_reply(p, packet, n, sequence);
		if (echo) {
			report_reply(p, echo, n - (p->raw ? (packet[0] & 0xf) * 4 : 0));
			return 1;
		}
	}
	return 0;
}

static int parse_options(int argc, char **argv, struct ping *p)
{
	int c;
	while ((c = getopt(argc, argv, "c:i:W:")) != -1) {
		switch (c) {
		case 'c': p->count = atoi(optarg); break;
		case 'i': p->interval_ms = atoi(optarg); break;
		case 'W': p->timeout_s = atoi(optarg); break;
		default: return -1;
		}
	}
	if (optind != argc - 1 || p->count <= 0 || p->interval_ms < 0 || p->timeout_s <= 0)
		return -1;
	p->target.sin_family = AF_INET;
	if (inet_pton(AF_INET, argv[optind], &p->target.sin_addr) != 1) {
		fprintf(stderr, "ping: %s: not an IPv4 address\n", argv[optind]);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct ping p = {.count = 4, .interval_ms = 1000, .timeout_s = 2};
	if (parse_options(argc, argv, &p) < 0) {
		fprintf(stderr, "usage: ping [-c count] [-i interval_ms] [-W timeout_s] address\n");
		return 2;
	}
	if (open_socket(&p) < 0)
		return 1;
	p.id = (uint16_t)getpid();
	printf("PING %s: %d data bytes\n", inet_ntoa(p.target.sin_addr), PAYLOAD_BYTES);
	for (int sequence = 1; sequence <= p.count; sequence++) {
		uint64_t started = now_us();
		if (send_echo(&p, sequence) == 0 && !await_reply(&p, sequence, p.timeout_s * 1000))
			printf("no reply to icmp_seq=%d\n", sequence);
		uint64_t spent_ms = (now_us() - started) / 1000u;
		if (sequence < p.count && spent_ms < (uint64_t)p.interval_ms)
			usleep((useconds_t)((uint64_t)p.interval_ms - spent_ms) * 1000u);
	}
	printf("--- %s: %d packets transmitted, %d received", inet_ntoa(p.target.sin_addr), p.sent,
	       p.received);
	if (p.received)
		printf(", rtt min/avg/max %.3f/%.3f/%.3f ms", p.min_ms, p.total_ms / p.received,
		       p.max_ms);
	printf("\n");
	close(p.fd);
	return p.received ? 0 : 1;
}
