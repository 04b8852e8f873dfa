/*
 * uscope: the trace map from user space, over ms_uscope (uapi/trace.h), so
 * that a user can have the stacks of their own programs recorded without
 * the kernel console's privilege.
 *
 *     uscope trace NAME|PATH [--mode 1-4] [--budget S] [--events PATTERN]
 *     uscope untrace NAME|PATH
 *     uscope list
 *
 * Without PRIV_MONITOR an entry traces only the caller's user's processes
 * (at most USCOPE_USER_MAX entries a user); with it, every user's.  The
 * stacks go into the trace stream whenever a trace runs (trace start, or
 * mscope record on the host).  Exit status 0 on success, 1 with the
 * kernel's reason otherwise, 2 for a wrong command.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microscope/syscall.h>

#include "uapi/trace.h"

static long uscope_call(uint32_t op, const char *name, void *arg, uint64_t size)
{
	return ms_syscall6(__NR_ms_uscope, op, (long)name, (long)arg, (long)size, 0, 0);
}

static int usage(void)
{
	fprintf(stderr, "usage: uscope trace NAME|PATH [--mode 1-4] [--budget S] [--events "
			"PATTERN] | untrace NAME|PATH | list\n");
	return 2;
}

static int failed(const char *what, const char *name, long error)
{
	fprintf(stderr, "uscope: %s %s: %s\n", what, name, strerror((int)-error));
	return 1;
}

/* A decimal argument of at most 1000. */
static int number(const char *text, uint32_t *value)
{
	char *end;
	unsigned long n = strtoul(text, &end, 10);
	if (!*text || *end || n > 1000)
		return -1;
	*value = (uint32_t)n;
	return 0;
}

static int trace(int argc, char **argv)
{
	struct uscope_request request = {.mode = 4, .budget = 8, .events = "*"};
	for (int i = 3; i < argc; i += 2) {
		if (i + 1 >= argc)
			return usage();
		int bad = 0;
		if (!strcmp(argv[i], "--mode"))
			bad = number(argv[i + 1], &request.mode);
		else if (!strcmp(argv[i], "--budget"))
			bad = number(argv[i + 1], &request.budget);
		else if (!strcmp(argv[i], "--events") &&
			 strlen(argv[i + 1]) < sizeof request.events)
			strcpy(request.events, argv[i + 1]);
		else
			bad = -1;
		if (bad)
			return usage();
	}
	long slot = uscope_call(USCOPE_TRACE, argv[2], &request, sizeof request);
	if (slot < 0)
		return failed("cannot trace", argv[2], slot);
	printf("uscope: tracing %s, mode %u, budget %u, events %s (slot %ld)\n", argv[2],
	       request.mode, request.budget ? request.budget : 1, request.events, slot);
	return 0;
}

static int list(void)
{
	struct uscope_info info[USCOPE_MAP_MAX];
	long n = uscope_call(USCOPE_LIST, NULL, info, USCOPE_MAP_MAX);
	if (n < 0)
		return failed("cannot list", "the map", n);
	for (long i = 0; i < n && i < USCOPE_MAP_MAX; i++) {
		char whose[32];
		if (info[i].every_user)
			snprintf(whose, sizeof whose, "every user");
		else
			snprintf(whose, sizeof whose, "user %u", info[i].owner);
		printf("%-16s mode %u budget %u events %s (%s)\n", info[i].name, info[i].mode,
		       info[i].budget, info[i].events, whose);
	}
	if (!n)
		printf("uscope: nothing traced\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "trace"))
		return trace(argc, argv);
	if (argc == 3 && !strcmp(argv[1], "untrace")) {
		long error = uscope_call(USCOPE_UNTRACE, argv[2], NULL, 0);
		if (error < 0)
			return failed("cannot untrace", argv[2], error);
		printf("uscope: %s untraced\n", argv[2]);
		return 0;
	}
	if (argc == 2 && !strcmp(argv[1], "list"))
		return list();
	return usage();
}
