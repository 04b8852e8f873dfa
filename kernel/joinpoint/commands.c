/*
 * The `jp` command of the kernel shell: list join points with their
 * signatures, attach the built-in counting or timing advice to a pattern,
 * show statistics, detach.  Attachments made here are remembered in a small
 * table (pattern, advice, handle) so that `jp detach` takes either the
 * handle `jp attach` printed or the pattern it was given.  The table is only
 * touched by the shell's one thread, under a lock all the same.  Output goes
 * through console_print, which is where kshell_print writes too.
 *
 *     jp list sched.*          jp attach mm.* time
 *     jp stats                 jp detach mm.*
 */
#include "joinpoint/internal.h"

#include "console/console.h"
#include "cpu/spinlock.h"
#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/string.h"

#define SHELL_ATTACHMENTS 16
#define SHELL_PATTERN_MAX 64

struct shell_attachment {
	char pattern[SHELL_PATTERN_MAX];
	const struct jp_advice *advice;
	int handle; /* 0: slot free */
};

static struct shell_attachment attached[SHELL_ATTACHMENTS];
static struct spinlock attached_lock = SPINLOCK_INIT("jp shell");

/* Returns the built-in advice named name, or NULL. */
static const struct jp_advice *builtin_named(const char *name)
{
	if (!strcmp(name, "count"))
		return &jp_advice_count;
	if (!strcmp(name, "time"))
		return &jp_advice_time;
	return NULL;
}

/* Parses a positive decimal handle; returns it, or 0 when text is not one. */
static int parse_handle(const char *text)
{
	long value = 0;
	for (const char *c = text; *c; c++) {
		if (*c < '0' || *c > '9' || value > 0x7fffffff / 10)
			return 0;
		value = value * 10 + (*c - '0');
	}
	return (int)value;
}

static int remember(const char *pattern, const struct jp_advice *advice, int handle)
{
	uint64_t flags = spin_lock_irqsave(&attached_lock);
	for (unsigned i = 0; i < SHELL_ATTACHMENTS; i++) {
		if (attached[i].handle)
			continue;
		strlcpy(attached[i].pattern, pattern, sizeof attached[i].pattern);
		attached[i].advice = advice;
		attached[i].handle = handle;
		spin_unlock_irqrestore(&attached_lock, flags);
		return 0;
	}
	spin_unlock_irqrestore(&attached_lock, flags);
	return -ENOSPC;
}

/* Takes the first remembered attachment matching key (a handle or the
 * pattern it was attached with) out of the table; returns its handle or 0. */
static int take(const char *key)
{
	int handle = parse_handle(key);
	uint64_t flags = spin_lock_irqsave(&attached_lock);
	for (unsigned i = 0; i < SHELL_ATTACHMENTS; i++) {
		struct shell_attachment *a = &attached[i];
		if (!a->handle || (a->handle != handle && strcmp(a->pattern, key)))
			continue;
		int found = a->handle;
		a->handle = 0;
		spin_unlock_irqrestore(&attached_lock, flags);
		return found;
	}
	spin_unlock_irqrestore(&attached_lock, flags);
	return handle;
}

static int jp_cmd_attach(const char *pattern, const char *advice_name)
{
	const struct jp_advice *advice = builtin_named(advice_name);
	if (!advice || strlen(pattern) >= SHELL_PATTERN_MAX)
		return KSHELL_USAGE;
	int handle = jp_attach(pattern, advice);
	if (handle < 0)
		return handle;
	if (remember(pattern, advice, handle) < 0) {
		jp_detach(handle);
		return -ENOSPC;
	}
	console_print("attached %s to %s: handle %d\n", advice->name, pattern, handle);
	return 0;
}

static int jp_cmd_detach(const char *key)
{
	int handle = take(key);
	if (!handle)
		return -ENOENT;
	int error = jp_detach(handle);
	if (error == 0)
		console_print("detached handle %d\n", handle);
	return error;
}

static void print_attachments(void)
{
	for (unsigned i = 0; i < SHELL_ATTACHMENTS; i++) {
		if (attached[i].handle)
			console_print("  handle %d: %s on %s\n", attached[i].handle,
				      attached[i].advice->name, attached[i].pattern);
	}
}

int jp_shell_command(int argc, char **argv)
{
	if (argc < 2)
		return KSHELL_USAGE;
	const char *sub = argv[1];
	const char *pattern = argc > 2 ? argv[2] : "*";
	if (!strcmp(sub, "list") && argc <= 3) {
		jp_print_matching(pattern);
		return 0;
	}
	if (!strcmp(sub, "stats") && argc <= 3) {
		jp_print_matching_stats(pattern);
		print_attachments();
		return 0;
	}
	if (!strcmp(sub, "attach") && argc == 4)
		return jp_cmd_attach(argv[2], argv[3]);
	if (!strcmp(sub, "detach") && argc == 3)
		return jp_cmd_detach(argv[2]);
	if (!strcmp(sub, "reset") && argc == 2) {
		jp_reset_stats();
		return 0;
	}
	return KSHELL_USAGE;
}
KSHELL_COMMAND(jp, jp_shell_command,
	       "jp list [pattern] | attach <pattern> count|time | stats [pattern] | "
	       "detach <pattern|handle> | reset",
	       "join points: list, attach built-in advice, statistics, detach");
