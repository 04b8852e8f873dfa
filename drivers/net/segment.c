/*
 * TCP segmentation in software, for a NIC whose device cannot cut a large
 * frame itself (virtio-net where the host offers no offload): the stack
 * hands the driver one Ethernet + IPv4 + TCP frame of up to
 * NIC_SEGMENTED_MAX bytes (transmit_segmented), and the driver writes its
 * segments straight into its transmit buffers with nic_segment_write.  What
 * this saves is the stack's work per segment (lwIP's output path, a buffer
 * and a driver call each); the checksums are made here instead of there,
 * over the same bytes.  Each segment gets what a device that segments gives
 * it (transmit_segmented's contract in nic.h): the headers, the IP length,
 * an id one more than the last, the IP checksum, the sequence number of its
 * first byte, FIN and PSH on the last segment only, and its TCP checksum.
 */
#include "net/nic.h"

#include "lib/checksum.h"
#include "lib/string.h"
#include "lib/unaligned.h"

#define ETHERNET_HEADER NIC_FRAME_MIN
#define IP_MIN_HEADER   20
#define TCP_MIN_HEADER  20
#define TCP_FIN         0x01
#define TCP_PSH         0x08
#define IP_PROTO_TCP    6

/* The IPv4 header of frame when it is an Ethernet + IPv4 frame of length
 * bytes carrying TCP whose IP header fits (*ip_length its bytes), else NULL:
 * the checks both lookups below begin with. */
static const uint8_t *tcp_ipv4_header(const uint8_t *frame, size_t length, size_t *ip_length)
{
	const uint8_t *ip = frame + ETHERNET_HEADER;
	if (length < ETHERNET_HEADER + IP_MIN_HEADER + TCP_MIN_HEADER || frame[12] != 0x08 ||
	    frame[13] != 0x00 || (ip[0] >> 4) != 4 || ip[9] != IP_PROTO_TCP)
		return NULL;
	*ip_length = (size_t)(ip[0] & 0x0f) * 4;
	return *ip_length >= IP_MIN_HEADER ? ip : NULL;
}

size_t nic_tcp_ip_length(const void *frame, size_t length, size_t header_length)
{
	size_t ip_length;
	const uint8_t *ip = tcp_ipv4_header(frame, length, &ip_length);
	if (!ip || header_length >= length ||
	    header_length < ETHERNET_HEADER + ip_length + TCP_MIN_HEADER)
		return 0;
	size_t tcp_length = header_length - ETHERNET_HEADER - ip_length;
	return (size_t)(ip[ip_length + 12] >> 4) * 4 == tcp_length ? ip_length
								   : 0; /* data offset */
}

size_t nic_tcp_checksum_start(const void *frame, size_t length, size_t *tcp_bytes)
{
	size_t ip_length;
	const uint8_t *ip = tcp_ipv4_header(frame, length, &ip_length);
	if (!ip)
		return 0;
	size_t total = read_be16(ip + 2);
	bool fragment = (read_be16(ip + 6) & 0x3fff) != 0; /* more fragments, or an offset */
	if (fragment || total < ip_length + TCP_MIN_HEADER || ETHERNET_HEADER + total > length)
		return 0;
	*tcp_bytes = total - ip_length;
	return ETHERNET_HEADER + ip_length;
}

/* The payload bytes a segment of frame carries on a wire of mtu bytes (the
 * MTU less the IP and TCP headers); 0 when frame is not an IPv4 TCP frame
 * with those headers or they leave no room. */
static size_t segment_payload(const uint8_t *frame, size_t length, size_t header_length, size_t mtu,
			      size_t *ip_length)
{
	*ip_length = frame ? nic_tcp_ip_length(frame, length, header_length) : 0;
	if (!*ip_length || mtu + ETHERNET_HEADER <= header_length)
		return 0;
	return mtu + ETHERNET_HEADER - header_length;
}

unsigned nic_segment_count(const void *frame, size_t length, size_t header_length, size_t mtu)
{
	size_t ip_length, mss = segment_payload(frame, length, header_length, mtu, &ip_length);
	return mss ? (unsigned)((length - header_length + mss - 1) / mss) : 0;
}

/* Two ones' complement sums (net_checksum's) added and folded. */
static uint16_t add_sums(uint16_t a, uint16_t b)
{
	uint32_t sum = (uint32_t)a + b;
	return (uint16_t)((sum & 0xffff) + (sum >> 16));
}

uint16_t nic_tcp_pseudo_sum(const void *ip_header, size_t tcp_bytes)
{
	const uint8_t *ip = ip_header;
	uint8_t pseudo[12];
	memcpy(pseudo, ip + 12, 8); /* source and destination */
	pseudo[8] = 0;
	pseudo[9] = IP_PROTO_TCP;
	write_be16(pseudo + 10, (uint16_t)tcp_bytes);
	return net_checksum(pseudo, sizeof pseudo);
}

void nic_seed_tcp_checksum(void *frame_in, size_t start, size_t tcp_bytes)
{
	uint8_t *frame = frame_in;
	uint16_t pseudo = nic_tcp_pseudo_sum(frame + ETHERNET_HEADER, tcp_bytes);
	memcpy(frame + start + 16, &pseudo, sizeof pseudo); /* the wire's order */
}

/* The TCP checksum of the segment whose TCP header (checksum field 0) and
 * payload take tcp_bytes at tcp, between the addresses of ip. */
static uint16_t tcp_checksum(const uint8_t *ip, const uint8_t *tcp, size_t tcp_bytes)
{
	return (uint16_t)~add_sums(nic_tcp_pseudo_sum(ip, tcp_bytes),
				   net_checksum(tcp, (int)tcp_bytes));
}

size_t nic_segment_write(const void *frame_in, size_t length, size_t header_length, size_t mtu,
			 unsigned index, void *out_buffer)
{
	const uint8_t *frame = frame_in;
	uint8_t *out = out_buffer;
	size_t ip_length, mss = segment_payload(frame, length, header_length, mtu, &ip_length);
	size_t payload = length - header_length, offset = (size_t)index * mss;
	if (!out || !mss || offset >= payload)
		return 0;
	size_t bytes = payload - offset < mss ? payload - offset : mss;
	bool last = offset + bytes == payload;
	memcpy(out, frame, header_length);
	memcpy(out + header_length, frame + header_length + offset, bytes);

	uint8_t *ip = out + ETHERNET_HEADER, *tcp = ip + ip_length;
	size_t tcp_bytes = header_length - ETHERNET_HEADER - ip_length + bytes;
	write_be16(ip + 2, (uint16_t)(ip_length + tcp_bytes));
	write_be16(ip + 4, (uint16_t)(read_be16(ip + 4) + index));
	write_be16(ip + 10, 0);
	uint16_t ip_sum = (uint16_t)~net_checksum(ip, (int)ip_length);
	memcpy(ip + 10, &ip_sum, sizeof ip_sum); /* net_checksum's order is the wire's */

	write_be32(tcp + 4, read_be32(tcp + 4) + (uint32_t)offset);
	if (!last)
		tcp[13] &= (uint8_t) ~(TCP_FIN | TCP_PSH);
	write_be16(tcp + 16, 0);
	uint16_t tcp_sum = tcp_checksum(ip, tcp, tcp_bytes);
	memcpy(tcp + 16, &tcp_sum, sizeof tcp_sum);
	return header_length + bytes;
}
