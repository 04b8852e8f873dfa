/*
 * Unified tracing from kernel to user code (Uscope's idea): a trace map names
 * applications by program name or path, and every process of a named
 * application (fork inherits, exec re-decides, so a daemon's workers are
 * traced from their start without giving PIDs) gets its user call stack
 * written into the trace stream at each system call, as a user_stack record
 * right after the syscall_entry record.
 *
 * The stack is walked in the kernel from the user registers saved at entry,
 * along the frame-pointer chain (microScope's programs and newlib are built
 * with frame pointers), every read through copy_from_user: a stack that
 * cannot be read ends the walk and is marked, never a fault.  Work is bounded
 * by the entry's budget.  Scope modes (Uscope's table): 3 = the last frame
 * (where the system call was made), 4 = up to the budget's frames.  Modes 1
 * and 2 (the application's own code only) need the program's own address
 * ranges and are refused until the build records them.
 */
#include "trace/internal.h"

#include "arch/x86_64/trapframe.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "telemetry/tracepoint.h"
#include "uaccess/uaccess.h"
#include "uapi/proc.h"

struct uscope_entry {
	bool used;
	char name[PROC_NAME_MAX]; /* a program's name, or a path (with a '/') */
	unsigned mode;
	unsigned budget;
};

/* Slot i of the map is entries[i]; slot 0 means "not traced". */
static struct uscope_entry entries[USCOPE_MAP_MAX + 1];
static struct spinlock map_lock = SPINLOCK_INIT("trace.uscope");

static bool entry_matches(const struct uscope_entry *e, const char *name, const char *path)
{
	return e->used && (!strcmp(e->name, name) || (path && !strcmp(e->name, path)));
}

/* The exec hook: the slot naming this program, or 0. */
static int decide(const char *name, const char *path)
{
	for (int slot = 1; slot <= USCOPE_MAP_MAX; slot++)
		if (entry_matches(&entries[slot], name, path))
			return slot;
	return 0;
}

static int retrace_pick(const char *name, int slot)
{
	int named = decide(name, NULL);
	if (named)
		return named;
	return slot && entries[slot].used ? slot : 0; /* inherited, still in the map */
}

int uscope_trace(const char *name, unsigned mode, unsigned budget)
{
	if (!name || !*name || strlen(name) >= PROC_NAME_MAX || budget > TRACE_STACK_MAX)
		return -EINVAL;
	if (mode == 1 || mode == 2)
		return -EOPNOTSUPP; /* own code needs the program's address ranges */
	if (mode < 3 || mode > 4)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&map_lock);
	int slot = decide(name, NULL), free_slot = 0;
	for (int i = 1; i <= USCOPE_MAP_MAX && !slot && !free_slot; i++)
		if (!entries[i].used)
			free_slot = i;
	slot = slot ? slot : free_slot;
	if (slot) {
		entries[slot] = (struct uscope_entry){
		    .used = true, .mode = mode, .budget = budget ? budget : 1};
		strlcpy(entries[slot].name, name, sizeof entries[slot].name);
	}
	spin_unlock_irqrestore(&map_lock, irq);
	if (!slot)
		return -ENOSPC;
	proc_set_trace_exec_hook(decide);
	proc_retrace(retrace_pick); /* processes running now join at once */
	return slot;
}

int uscope_untrace(const char *name)
{
	uint64_t irq = spin_lock_irqsave(&map_lock);
	int slot = name ? decide(name, NULL) : 0;
	if (slot)
		entries[slot].used = false;
	spin_unlock_irqrestore(&map_lock, irq);
	if (!slot)
		return -ENOENT;
	proc_retrace(retrace_pick);
	return 0;
}

int uscope_list(struct uscope_info *info, int count)
{
	int n = 0;
	for (int slot = 1; slot <= USCOPE_MAP_MAX; slot++) {
		const struct uscope_entry *e = &entries[slot];
		if (!e->used)
			continue;
		if (n < count) {
			info[n] = (struct uscope_info){.mode = e->mode, .budget = e->budget};
			strlcpy(info[n].name, e->name, sizeof info[n].name);
		}
		n++;
	}
	return n;
}

/* Walks the frame-pointer chain from user registers into frames; returns
 * how many, with *flags saying how the walk ended early. */
static unsigned walk(const struct trap_frame *user, unsigned budget, uint64_t *frames,
		     uint16_t *flags)
{
	unsigned count = 0;
	frames[count++] = user->rip;
	uint64_t rbp = user->rbp;
	while (count < budget) {
		uint64_t pair[2]; /* the saved rbp, the return address */
		if (!rbp)
			return count; /* the outermost frame */
		if ((rbp & 7) || copy_from_user(pair, (const void *)rbp, sizeof pair) ||
		    (pair[0] && pair[0] <= rbp)) {
			*flags |= TRACE_STACK_UNREADABLE;
			return count;
		}
		frames[count++] = pair[1];
		rbp = pair[0];
	}
	if (rbp)
		*flags |= TRACE_STACK_TRUNCATED;
	return count;
}

void uscope_record_stack(const struct trap_frame *user)
{
	int slot = proc_trace_slot(proc_current());
	if (!slot || !user)
		return;
	const struct uscope_entry *e = &entries[slot];
	unsigned budget = e->mode == 3 ? 1 : e->budget;
	struct {
		struct trace_user_stack head;
		uint64_t frames[TRACE_STACK_MAX];
	} event = {.head = {.tid = (int32_t)thread_id(thread_current())}};
	event.head.count = (uint16_t)walk(user, budget, event.frames, &event.head.flags);
	tracepoint_write(TRACE_USER_STACK, &event,
			 (uint32_t)(sizeof event.head + event.head.count * sizeof event.frames[0]));
}
