/*
 * scopectl: control aspects from user space, over ms_scope_ctl.
 *
 *     scopectl list                          join points with their signatures
 *     scopectl load /aspects/callcount.o     link an object in the kernel
 *     scopectl link callcount --binding shm  weave it: direct | shm | msg
 *     scopectl relink callcount --binding direct
 *     scopectl unlink callcount
 *     scopectl unload callcount
 *     scopectl stats [NAME]                  events, drops, time, binding, state
 *     scopectl counter NAME COUNTER          one counter's value
 *     scopectl msg-mode oneway | sync [DEADLINE_US]
 *
 * Exit status 0 on success, 1 with the kernel's message otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microscope/syscall.h>

#include "uapi/scope.h"

static char text[32 * 1024];

static int usage(void)
{
	fprintf(stderr, "usage: scopectl list | load FILE | link NAME --binding B | relink NAME "
			"--binding B | unlink NAME | unload NAME | stats [NAME] | counter NAME "
			"COUNTER | msg-mode oneway|sync [DEADLINE_US]\n");
	return 2;
}

static int binding_of(const char *name)
{
	if (!strcmp(name, "direct"))
		return 1;
	if (!strcmp(name, "shm"))
		return 2;
	if (!strcmp(name, "msg"))
		return 3;
	return 0;
}

static long call(struct scope_ctl *c)
{
	c->buffer = text;
	c->length = sizeof text - 1;
	long result = ms_syscall3(__NR_ms_scope_ctl, (long)c, 0, 0);
	if (result < 0) {
		fprintf(stderr, "scopectl: %s (error %ld)\n", c->error[0] ? c->error : "failed",
			-result);
		return result;
	}
	if (result > 0)
		fwrite(text, 1, (size_t)result, stdout);
	return 0;
}

/* Fills op, name and binding from the command line; returns 0 or usage's. */
static int parse(int argc, char **argv, struct scope_ctl *c)
{
	static const struct {
		const char *word;
		enum scope_op op;
		int args; /* words after the command, without --binding */
		int binding;
	} commands[] = {
	    {"list", SCOPE_LIST_JOINPOINTS, 0, 0},
	    {"load", SCOPE_LOAD, 1, 0},
	    {"link", SCOPE_LINK, 1, 1},
	    {"relink", SCOPE_RELINK, 1, 1},
	    {"unlink", SCOPE_UNLINK, 1, 0},
	    {"unload", SCOPE_UNLOAD, 1, 0},
	    {"stats", SCOPE_STATS, -1, 0},
	    {"counter", SCOPE_COUNTER, 2, 0},
	};
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
		if (strcmp(argv[1], commands[i].word))
			continue;
		c->op = commands[i].op;
		int want = commands[i].args + (commands[i].binding ? 2 : 0);
		if (commands[i].args >= 0 && argc - 2 != want)
			return usage();
		if (argc > 2)
			strncpy(c->name, argv[2], sizeof c->name - 1);
		if (c->op == SCOPE_COUNTER)
			strncpy(c->counter, argv[3], sizeof c->counter - 1);
		if (commands[i].binding) {
			c->binding = (uint32_t)binding_of(argv[4]);
			if (strcmp(argv[3], "--binding") || !c->binding)
				return usage();
		}
		return 0;
	}
	return usage();
}

int main(int argc, char **argv)
{
	static struct scope_ctl c;
	if (argc < 2)
		return usage();
	if (!strcmp(argv[1], "msg-mode")) {
		if (argc < 3)
			return usage();
		c.op = SCOPE_SET_MSG_MODE;
		c.binding = !strcmp(argv[2], "sync");
		c.value = argc > 3 ? atoll(argv[3]) * 1000 : 0;
		return call(&c) ? 1 : 0;
	}
	int error = parse(argc, argv, &c);
	if (error)
		return error;
	if (call(&c))
		return 1;
	if (c.op == SCOPE_COUNTER)
		printf("%s %s %lld\n", c.name, c.counter, (long long)c.value);
	return 0;
}
