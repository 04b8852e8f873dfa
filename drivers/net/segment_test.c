/*
 * The nicseg suite: TCP segmentation in software (segment.c), on frames
 * built here, no device needed.  Each segment's IP and TCP checksums are
 * checked the receiver's way (the sum over the checksummed bytes, the
 * checksum included, comes to 0xffff), so a wrong checksum cannot agree with
 * a wrong computation of it.
 */
#include "ktest/ktest.h"
#include "lib/checksum.h"
#include "lib/string.h"
#include "lib/unaligned.h"
#include "net/nic.h"
#include "net/test_frames.h"

#define HEADERS   54 /* Ethernet 14, IPv4 20, TCP 20 */
#define PAYLOAD   4000
#define MTU       1500
#define MSS       (MTU - 40) /* the payload a segment carries */
#define IP_AT     14
#define TCP_AT    34
#define FIRST_ID  0xfffe      /* the ids wrap too */
#define FIRST_SEQ 0xfffff000u /* and the sequence numbers */

static uint8_t frame[HEADERS + PAYLOAD];
static uint8_t segment[HEADERS + MSS];

/* A frame as the stack hands it to transmit_segmented: its headers' length
 * fields and checksums are the large frame's, which no segment keeps. */
static void build_frame(uint8_t flags)
{
	test_tcp_frame(frame, sizeof frame);
	memset(frame, 0x52, 12); /* MACs */
	uint8_t *ip = frame + IP_AT, *tcp = frame + TCP_AT;
	write_be16(ip + 4, FIRST_ID);
	write_be16(ip + 6, 0x4000); /* don't fragment */
	write_be32(tcp + 4, FIRST_SEQ);
	write_be32(tcp + 8, 0x12345678);
	tcp[13] = flags;
	write_be16(tcp + 14, 65535);
}

static uint16_t fold(uint32_t sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)((sum & 0xffff) + (sum >> 16));
}

/* The receiver's check of a segment's TCP checksum. */
static bool tcp_checksum_holds(const uint8_t *seg, size_t length)
{
	uint8_t pseudo[12];
	memcpy(pseudo, seg + IP_AT + 12, 8);
	pseudo[8] = 0;
	pseudo[9] = 6;
	write_be16(pseudo + 10, (uint16_t)(length - TCP_AT));
	return fold((uint32_t)net_checksum(pseudo, 12) +
		    net_checksum(seg + TCP_AT, (int)(length - TCP_AT))) == 0xffff;
}

static void segments_carry_the_frame_with_their_own_headers(struct ktest *t)
{
	build_frame(0x10 | 0x08 | 0x01); /* ACK, PSH, FIN */
	unsigned count = nic_segment_count(frame, sizeof frame, HEADERS, MTU);
	ASSERT_EQ(t, count, (PAYLOAD + MSS - 1) / MSS);
	size_t carried = 0;
	for (unsigned i = 0; i < count; i++) {
		memset(segment, 0xee, sizeof segment);
		size_t length = nic_segment_write(frame, sizeof frame, HEADERS, MTU, i, segment);
		size_t bytes = i + 1 < count ? MSS : PAYLOAD - (count - 1) * MSS;
		ASSERT_EQ(t, length, HEADERS + bytes);
		const uint8_t *ip = segment + IP_AT, *tcp = segment + TCP_AT;
		EXPECT_EQ(t, (ip[2] << 8 | ip[3]), 40 + bytes);
		EXPECT_EQ(t, (ip[4] << 8 | ip[5]), (uint16_t)(FIRST_ID + i));
		EXPECT_EQ(t, net_checksum(ip, 20), 0xffff);
		EXPECT_EQ(t, read_be32(tcp + 4), FIRST_SEQ + (uint32_t)(i * MSS));
		bool last = i + 1 == count;
		EXPECT_EQ(t, tcp[13], last ? 0x19 : 0x10);
		EXPECT_TRUE(t, tcp_checksum_holds(segment, length));
		EXPECT_EQ(t, memcmp(segment, frame, 12), 0);
		EXPECT_EQ(t, memcmp(segment + HEADERS, frame + HEADERS + carried, bytes), 0);
		carried += bytes;
	}
	EXPECT_EQ(t, carried, PAYLOAD);
	EXPECT_EQ(t, nic_segment_write(frame, sizeof frame, HEADERS, MTU, count, segment), 0);
}

/* What is not an IPv4 TCP frame with the headers said, or a segment past
 * the last, gives nothing. */
static void frames_that_are_not_tcp_give_no_segments(struct ktest *t)
{
	build_frame(0x10);
	EXPECT_EQ(t, nic_segment_count(frame, sizeof frame, HEADERS + 4, MTU), 0); /* wrong split */
	EXPECT_EQ(t, nic_segment_count(frame, sizeof frame, HEADERS, 0), 0);
	EXPECT_EQ(t, nic_segment_count(frame, sizeof frame, HEADERS, 40), 0); /* headers fill it */
	EXPECT_EQ(t, nic_segment_count(NULL, sizeof frame, HEADERS, MTU), 0);
	EXPECT_EQ(t, nic_segment_count(frame, HEADERS, HEADERS, MTU), 0); /* no payload */
	frame[IP_AT + 9] = 17;                                            /* UDP */
	EXPECT_EQ(t, nic_segment_count(frame, sizeof frame, HEADERS, MTU), 0);
	EXPECT_EQ(t, nic_segment_write(frame, sizeof frame, HEADERS, MTU, 0, segment), 0);
	build_frame(0x10);
	frame[IP_AT] = 0x4f; /* a 60-byte IP header that the split does not allow for */
	EXPECT_EQ(t, nic_segment_count(frame, sizeof frame, HEADERS, MTU), 0);
	build_frame(0x10);
	write_be16(frame + 12, 0x86dd); /* IPv6 */
	EXPECT_EQ(t, nic_segment_count(frame, sizeof frame, HEADERS, MTU), 0);
	build_frame(0x10);
	EXPECT_EQ(t, nic_segment_write(frame, sizeof frame, HEADERS, MTU, 0, NULL), 0);
	EXPECT_EQ(t, nic_segment_write(NULL, sizeof frame, HEADERS, MTU, 0, segment), 0);
}

/* Where a device that makes checksums finds the TCP header: only in a whole,
 * unfragmented IPv4 TCP packet whose lengths agree with the frame. */
static void checksum_start_is_found_only_in_whole_tcp_frames(struct ktest *t)
{
	size_t tcp_bytes = 0, length = HEADERS + 100;
	build_frame(0x18);
	uint8_t *ip = frame + IP_AT;
	write_be16(ip + 2, 20 + 20 + 100);
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length, &tcp_bytes), TCP_AT);
	EXPECT_EQ(t, tcp_bytes, 20 + 100);
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length + 6, &tcp_bytes), TCP_AT); /* padding */
	EXPECT_EQ(t, tcp_bytes, 20 + 100);
	write_be16(ip + 6, 0x2000); /* more fragments */
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length, &tcp_bytes), 0);
	write_be16(ip + 6, 0x0001); /* a later fragment */
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length, &tcp_bytes), 0);
	write_be16(ip + 6, 0x4000);
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length - 1, &tcp_bytes), 0); /* IP says more */
	write_be16(ip + 2, 20 + 19); /* no whole TCP header */
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length, &tcp_bytes), 0);
	write_be16(ip + 2, 20 + 20 + 100);
	ip[9] = 17; /* UDP */
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length, &tcp_bytes), 0);
	ip[9] = 6;
	ip[0] = 0x44; /* a header shorter than IPv4's least */
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length, &tcp_bytes), 0);
	ip[0] = 0x46; /* 24 bytes: options */
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length, &tcp_bytes), TCP_AT + 4);
	EXPECT_EQ(t, tcp_bytes, 20 + 100 - 4);
	ip[0] = 0x45;
	write_be16(frame + 12, 0x8100); /* a VLAN tag: not looked into */
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, length, &tcp_bytes), 0);
	EXPECT_EQ(t, nic_tcp_checksum_start(frame, 20, &tcp_bytes), 0); /* too short */
}

KTEST_SUITE(nicseg, KTEST_CASE(segments_carry_the_frame_with_their_own_headers),
	    KTEST_CASE(frames_that_are_not_tcp_give_no_segments),
	    KTEST_CASE(checksum_start_is_found_only_in_whole_tcp_frames));
