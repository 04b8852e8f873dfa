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
 * by the entry's budget.  Scope modes (Uscope's table): 1 = the last frame
 * in the application's own code, 2 = up to the budget's frames of its own
 * code, 3 = the last frame wherever it is, 4 = up to the budget's frames of
 * all code.  The programs are static: own code is told from newlib's and
 * librscfl's by the address range of the program's .text.own section, which
 * the build puts its own objects in (userland/own-code.ld) and exec notes.
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
	if (mode < 1 || mode > 4)
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

/* The user stack, walked and filtered as an entry's mode says. */
struct walk {
	unsigned keep;      /* frames to keep at most */
	bool own_only;      /* only frames in [own_start, own_end) */
	uint64_t own_start, own_end;
	uint64_t *frames;
	unsigned count;
	uint16_t flags;
};

/* Keeps address when the mode wants it; returns false once enough are kept. */
static bool keep_frame(struct walk *w, uint64_t address)
{
	if (!w->own_only || (address >= w->own_start && address < w->own_end))
		w->frames[w->count++] = address;
	return w->count < w->keep;
}

/* Walks the frame-pointer chain from the user registers, reading at most
 * TRACE_STACK_MAX frames (the work is bounded whatever the mode keeps). */
static void walk(const struct trap_frame *user, struct walk *w)
{
	uint64_t rbp = user->rbp;
	if (!keep_frame(w, user->rip))
		return;
	for (unsigned read = 1; read < TRACE_STACK_MAX; read++) {
		uint64_t pair[2]; /* the saved rbp, the return address */
		if (!rbp)
			return; /* the outermost frame */
		if ((rbp & 7) || copy_from_user(pair, (const void *)rbp, sizeof pair) ||
		    (pair[0] && pair[0] <= rbp)) {
			w->flags |= TRACE_STACK_UNREADABLE;
			return;
		}
		rbp = pair[0];
		if (!keep_frame(w, pair[1])) {
			if (rbp)
				w->flags |= TRACE_STACK_TRUNCATED;
			return;
		}
	}
	w->flags |= TRACE_STACK_TRUNCATED;
}

void uscope_record_stack(const struct trap_frame *user)
{
	struct process *p = proc_current();
	int slot = proc_trace_slot(p);
	if (!slot || !user)
		return;
	const struct uscope_entry *e = &entries[slot];
	struct {
		struct trace_user_stack head;
		uint64_t frames[TRACE_STACK_MAX];
	} event = {.head = {.tid = (int32_t)thread_id(thread_current())}};
	struct walk w = {.keep = e->mode == 1 || e->mode == 3 ? 1 : e->budget,
			 .own_only = e->mode <= 2,
			 .frames = event.frames};
	proc_own_code(p, &w.own_start, &w.own_end);
	walk(user, &w);
	event.head.count = (uint16_t)w.count;
	event.head.flags = w.flags;
	tracepoint_write(TRACE_USER_STACK, &event,
			 (uint32_t)(sizeof event.head + w.count * sizeof event.frames[0]));
}
