/*
 * scopectl: control aspects from user space, over ms_scope_ctl.
 *
 *     scopectl list [PATTERN]                join points with their signatures
 *     scopectl load /aspects/callcount.o     link an object in the kernel
 *     scopectl link callcount --binding shm  weave it: direct | shm | msg
 *     scopectl relink callcount --binding direct
 *     scopectl unlink callcount
 *     scopectl unload callcount
 *     scopectl stats [NAME]                  events, drops, time, binding, state
 *     scopectl counter NAME COUNTER          one counter's value, or a histogram's line
 *     scopectl show NAME                     its counters and histograms (count, mean,
 *                                            p50/p90/p99/max with units); an unlinked or
 *                                            unloaded aspect's last values
 *     scopectl clear NAME                    forget them (not while linked)
 *     scopectl msg-mode oneway | sync [DEADLINE_US]
 *
 * Every command that changes an aspect says what it did; a failure prints
 * the kernel's reason (the linker's own message when it gave one).  Exit
 * status 0 on success, 1 with the kernel's message otherwise (also for a
 * list PATTERN that matches nothing).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microscope/syscall.h>

#include "uapi/scope.h"

static char text[32 * 1024];

static int usage(void)
{
	fprintf(stderr,
		"usage: scopectl list [PATTERN] | load FILE | link NAME --binding B | relink NAME "
		"--binding B | unlink NAME | unload NAME | stats [NAME] | counter NAME "
		"COUNTER | show NAME | clear NAME | msg-mode oneway|sync [DEADLINE_US]\n");
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

static const char *error_name(long error)
{
	switch (error) {
	case 1: return "not permitted";
	case 2: return "not found";
	case 12: return "out of memory";
	case 16: return "busy";
	case 17: return "already exists";
	case 22: return "invalid argument";
	default: return "failed";
	}
}

/* A shell-style pattern: '*' any run of characters, '?' one; as the kernel's
 * join-point patterns read. */
static int glob_match(const char *pattern, const char *name)
{
	if (*pattern == '*')
		return glob_match(pattern + 1, name) || (*name && glob_match(pattern, name + 1));
	if (!*pattern || !*name)
		return !*pattern && !*name;
	return (*pattern == '?' || *pattern == *name) && glob_match(pattern + 1, name + 1);
}

/* Prints the lines of text whose join-point name (before the '(') matches
 * pattern.  Returns how many. */
static int print_matching(const char *lines, long length, const char *pattern)
{
	int matched = 0;
	for (const char *line = lines; line < lines + length;) {
		const char *end = memchr(line, '\n', (size_t)(lines + length - line));
		end = end ? end + 1 : lines + length;
		char name[128];
		size_t n = strcspn(line, "(\n");
		if (n < sizeof name) {
			memcpy(name, line, n);
			name[n] = '\0';
			if (glob_match(pattern, name)) {
				fwrite(line, 1, (size_t)(end - line), stdout);
				matched++;
			}
		}
		line = end;
	}
	return matched;
}

/* Makes the call; prints its text (only lines matching pattern, if one is
 * given) or the kernel's reason.  Returns 0 or the negative error. */
static long call(struct scope_ctl *c, const char *pattern)
{
	c->buffer = text;
	c->length = sizeof text - 1;
	long result = ms_syscall3(__NR_ms_scope_ctl, (long)c, 0, 0);
	if (result < 0) {
		fprintf(stderr, "scopectl: %s (error %ld: %s)\n", c->error[0] ? c->error : "failed",
			-result, error_name(-result));
		return result;
	}
	if (pattern && print_matching(text, result, pattern) == 0) {
		fprintf(stderr, "scopectl: no join point matches '%s'\n", pattern);
		return -2;
	}
	if (!pattern && result > 0)
		fwrite(text, 1, (size_t)result, stdout);
	return result;
}

/* One line saying what a command that changed an aspect did. */
static void say_what_was_done(const struct scope_ctl *c, const char *binding)
{
	switch (c->op) {
	case SCOPE_LOAD: printf("scopectl: loaded aspect '%s'\n", c->name); break;
	case SCOPE_LINK: printf("scopectl: linked '%s' (%s)\n", c->name, binding); break;
	case SCOPE_RELINK: printf("scopectl: relinked '%s' (%s)\n", c->name, binding); break;
	case SCOPE_UNLINK: printf("scopectl: unlinked '%s'\n", c->name); break;
	case SCOPE_UNLOAD:
		printf("scopectl: unloaded '%s' (its last values: scopectl show %s)\n", c->name,
		       c->name);
		break;
	case SCOPE_CLEAR: printf("scopectl: cleared the values of '%s'\n", c->name); break;
	default: break;
	}
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
	    {"list", SCOPE_LIST_JOINPOINTS, -1, 0},
	    {"load", SCOPE_LOAD, 1, 0},
	    {"link", SCOPE_LINK, 1, 1},
	    {"relink", SCOPE_RELINK, 1, 1},
	    {"unlink", SCOPE_UNLINK, 1, 0},
	    {"unload", SCOPE_UNLOAD, 1, 0},
	    {"stats", SCOPE_STATS, -1, 0},
	    {"counter", SCOPE_COUNTER, 2, 0},
	    {"show", SCOPE_SHOW, 1, 0},
	    {"clear", SCOPE_CLEAR, 1, 0},
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
		if (call(&c, NULL) < 0)
			return 1;
		printf("scopectl: msg binding now %s\n", c.binding ? "sync" : "oneway");
		return 0;
	}
	int error = parse(argc, argv, &c);
	if (error)
		return error;
	if (c.op == SCOPE_LIST_JOINPOINTS && argc > 3)
		return usage();
	long result = call(&c, c.op == SCOPE_LIST_JOINPOINTS && argc == 3 ? argv[2] : NULL);
	if (result < 0)
		return 1;
	say_what_was_done(&c, argc > 4 ? argv[4] : "");
	if (c.op == SCOPE_COUNTER && result == 0) /* a histogram printed its own line */
		printf("%s %s %lld\n", c.name, c.counter, (long long)c.value);
	return 0;
}
