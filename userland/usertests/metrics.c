/*
 * What httpd's /metrics reads from the kernel through ms_scope_ctl, which
 * any process may call: the calls the built-in count advice counted per
 * join point (SCOPE_JOINPOINT_STATS) and every NIC's counters
 * (SCOPE_DEVICE_COUNTERS).  Both answer text into the caller's buffer, cut
 * at its length, and refuse a buffer the caller does not own.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/scope.h"
#include "usertests.h"

#define BAD_POINTER ((char *)0xffff800000001000L)

static long scope_text(uint32_t op, char *buffer, uint64_t length)
{
	struct scope_ctl c = {.op = op, .buffer = buffer, .length = length};
	return ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0);
}

/* A TCP socket, closed at once: one net.socket call. */
static void make_a_socket(void)
{
	long fd = ms_syscall3(__NR_socket, 2 /* AF_INET */, 1 /* SOCK_STREAM */, 0);
	if (fd >= 0)
		close((int)fd);
}

static long shell(const char *line)
{
	return ms_syscall3(__NR_ms_kshell, (long)line, 0, 0);
}

/* The count of join point name in SCOPE_JOINPOINT_STATS's text, -1 if absent. */
static long counted_calls(const char *name)
{
	static char text[32 * 1024];
	long n = scope_text(SCOPE_JOINPOINT_STATS, text, sizeof text - 1);
	if (n < 0)
		return n;
	text[n] = 0;
	for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
		char found[64];
		unsigned long long calls;
		if (sscanf(line, "%63s %llu", found, &calls) == 2 && !strcmp(found, name))
			return (long)calls;
	}
	return -1;
}

/* Do the counted calls of a join point show, and grow with the calls made? */
void scope_counts_joinpoint_calls(void)
{
	if (shell("jp attach net.socket count") < 0) {
		t_fail("jp attach net.socket count refused");
		return;
	}
	long before = counted_calls("net.socket");
	for (int i = 0; i < 3; i++)
		make_a_socket();
	long after = counted_calls("net.socket");
	shell("jp detach net.socket");
	if (before < 0 && before != -1)
		t_fail("SCOPE_JOINPOINT_STATS: %ld", before);
	else if (after < (before < 0 ? 0 : before) + 3)
		t_fail("net.socket counted %ld then %ld over 3 sockets", before, after);
}

/* Are the answers cut at the buffer's length, and bad buffers refused? */
void scope_text_answers_refuse_bad_buffers(void)
{
	static const uint32_t ops[] = {SCOPE_JOINPOINT_STATS, SCOPE_DEVICE_COUNTERS};
	shell("jp attach net.socket count");
	make_a_socket();
	for (unsigned i = 0; i < 2; i++) {
		char small[8];
		memset(small, 'x', sizeof small);
		long n = scope_text(ops[i], small, 4);
		if (n != 4 && !(ops[i] == SCOPE_DEVICE_COUNTERS && n == 0))
			t_fail("op %u into 4 bytes: %ld", ops[i], n);
		if (small[4] != 'x')
			t_fail("op %u wrote past the length it was given", ops[i]);
		long bad = scope_text(ops[i], BAD_POINTER, 64);
		if (bad != -L_EFAULT && !(ops[i] == SCOPE_DEVICE_COUNTERS && bad == 0))
			t_fail("op %u into a kernel address: %ld", ops[i], bad);
		if (scope_text(ops[i], small, 0) != 0)
			t_fail("op %u with length 0 did not answer 0 bytes", ops[i]);
	}
	shell("jp detach net.socket");
	struct scope_ctl c = {.op = 999};
	if (ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0) >= 0)
		t_fail("an unknown op was accepted");
}
