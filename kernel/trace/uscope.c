/*
 * Unified tracing from kernel to user code (Uscope's idea): a trace map names
 * applications by program name or path, and every process of a named
 * application (fork inherits, exec re-decides, so a daemon's workers are
 * traced from their start without giving PIDs) gets its user call stack
 * written into the trace stream at the events its entry names: a system
 * call (a user_stack record right after the syscall_entry record) or a
 * recorded join point that may sleep (right after its entry record).
 *
 * The stack is walked in the kernel from the user registers saved at entry,
 * by the program's DWARF CFI (.eh_frame, noted at exec: lib/cfi.h) where it
 * covers the code, so that code built without frame pointers unwinds, and
 * along the frame-pointer chain where it does not; every read goes through
 * copy_from_user: a stack that cannot be read ends the walk and is marked,
 * never a fault.  Work is bounded: at most TRACE_STACK_MAX frames, the rules
 * found cached per CPU.  Scope modes (Uscope's table): 1 = the last frame
 * in the application's own code, 2 = up to the budget's frames of its own
 * code, 3 = the last frame wherever it is, 4 = up to the budget's frames of
 * all code.  The programs are static: own code is told from newlib's and
 * librscfl's by the address range of the program's .text.own section, which
 * the build puts its own objects in (userland/own-code.ld) and exec notes.
 */
#include "trace/internal.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/trapframe.h"
#include "cpu/percpu.h"
#include "joinpoint/joinpoint.h"
#include "lib/cfi.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "smp/smp.h"
#include "telemetry/tracepoint.h"
#include "uaccess/uaccess.h"
#include "uapi/proc.h"

struct uscope_entry {
	bool used;
	char name[PROC_NAME_MAX]; /* a program's name, or a path (with a '/') */
	unsigned mode;
	unsigned budget;
	char events[USCOPE_EVENTS_MAX]; /* the events with stacks: a join-point pattern */
};

/* Slot i of the map is entries[i]; slot 0 means "not traced". */
static struct uscope_entry entries[USCOPE_MAP_MAX + 1];
static struct spinlock map_lock = SPINLOCK_INIT("trace.uscope");

/* Rules found, per CPU (lib/cfi.h): made with the map's first entry. */
static struct cfi_cache *rule_caches[MAX_CPUS];

static void make_rule_caches(void)
{
	for (unsigned cpu = 0; cpu < cpu_count; cpu++)
		if (!__atomic_load_n(&rule_caches[cpu], __ATOMIC_ACQUIRE)) {
			struct cfi_cache *cache = kzalloc(sizeof *cache), *none = NULL;
			if (cache && !__atomic_compare_exchange_n(&rule_caches[cpu], &none, cache,
								  false, __ATOMIC_ACQ_REL,
								  __ATOMIC_ACQUIRE))
				kfree(cache); /* another command made it meanwhile */
		}
}

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

/* Every CPU notes whether its running thread is traced now (the recorder's
 * fast path leaves a traced thread's calls to C, which records the stack). */
static void refresh_user_stacks(void)
{
	proc_refresh_user_stacks(NULL);
	smp_call_all(proc_refresh_user_stacks, NULL);
}

int uscope_trace(const char *name, unsigned mode, unsigned budget, const char *events)
{
	events = events ? events : "*";
	if (!name || !*name || strlen(name) >= PROC_NAME_MAX || budget > TRACE_STACK_MAX ||
	    !*events || strlen(events) >= USCOPE_EVENTS_MAX)
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
		strlcpy(entries[slot].events, events, sizeof entries[slot].events);
	}
	spin_unlock_irqrestore(&map_lock, irq);
	if (!slot)
		return -ENOSPC;
	make_rule_caches();
	proc_set_trace_exec_hook(decide);
	proc_retrace(retrace_pick); /* processes running now join at once */
	refresh_user_stacks();
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
	refresh_user_stacks();
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
			strlcpy(info[n].events, e->events, sizeof info[n].events);
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
	struct cfi_tables unwind; /* the program's (lib/cfi.h), or empty */
	struct cfi_cache *cache;  /* this CPU's found rules, or NULL */
	struct user_peek peek;    /* the pages the walk has found */
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

/* Every read of the walk: present pages only, never a fault or a sleep (the
 * walk runs with interrupts off, at join points that may not sleep too).
 * The steps read words and pairs of words: those copies are moves. */
static int read_user(void *to, uint64_t address, size_t length, void *arg)
{
	if (length == 8)
		return user_peek_read(arg, to, address, 8);
	if (length == 16)
		return user_peek_read(arg, to, address, 16);
	return user_peek_read(arg, to, address, length);
}

/* One step out along the frame-pointer chain, for code the unwind tables do
 * not cover: 0, CFI_OUTERMOST (rbp 0), -EINVAL (a frame below the stack
 * pointer, misaligned, or a chain that does not go up) or -EFAULT. */
static int frame_pointer_step(struct walk *w, struct cfi_regs *regs)
{
	uint64_t pair[2]; /* the saved rbp, the return address */
	if (!regs->rbp)
		return CFI_OUTERMOST;
	if ((regs->rbp & 7) || regs->rbp < regs->rsp)
		return -EINVAL;
	if (user_peek_read(&w->peek, pair, regs->rbp, sizeof pair))
		return -EFAULT;
	if (pair[0] && pair[0] <= regs->rbp)
		return -EINVAL;
	*regs = (struct cfi_regs){.rip = pair[1], .rsp = regs->rbp + 16, .rbp = pair[0]};
	return 0;
}

/* The rule at pc, from this CPU's cache or found and kept there (the walk
 * runs with interrupts off: the cache is this CPU's alone meanwhile). */
/* cfi_step_by_rule for the rules GCC writes nearly everywhere (the CFA by
 * rsp or rbp, the return address at CFA - 8, rbp kept or saved at an offset
 * from the CFA), the same answers without the calls through the reader: the
 * walk's hot path.  Other rules go to cfi_step_by_rule. */
static int quick_step(struct walk *w, const struct cfi_rule *rule, struct cfi_regs *regs)
{
	bool by_rsp = rule->cfa_register == CFI_DWARF_RSP;
	if (rule->cfa_known != CFI_CFA_REGISTER ||
	    (!by_rsp && rule->cfa_register != CFI_DWARF_RBP) ||
	    rule->return_address.how != CFI_AT_CFA || rule->return_address.offset != -8 ||
	    (rule->rbp.how != CFI_SAME && rule->rbp.how != CFI_AT_CFA))
		return cfi_step_by_rule(rule, regs, read_user, &w->peek);
	uint64_t cfa = (by_rsp ? regs->rsp : regs->rbp) + (uint64_t)rule->cfa_offset;
	uint64_t rip, rbp = regs->rbp;
	if (cfa <= regs->rsp)
		return -EINVAL; /* a caller's frame lies above its callee's */
	if (user_peek_read(&w->peek, &rip, cfa - 8, 8) ||
	    (rule->rbp.how == CFI_AT_CFA &&
	     user_peek_read(&w->peek, &rbp, cfa + (uint64_t)rule->rbp.offset, 8)))
		return -EFAULT;
	*regs = (struct cfi_regs){.rip = rip, .rsp = cfa, .rbp = rbp};
	return 0;
}

/* One step by the program's CFI (what cfi_unwind_step returns), by the rule
 * in this CPU's cache or found and kept there (the walk runs with
 * interrupts off: the cache is this CPU's alone meanwhile). */
static int cfi_step(struct walk *w, struct cfi_regs *regs, enum cfi_frame frame)
{
	if (!w->unwind.fde_count)
		return -ENOENT;
	uint64_t pc = frame == CFI_FIRST_FRAME ? regs->rip : regs->rip - 1;
	const struct cfi_cache_slot *cached =
	    w->cache ? cfi_cache_find(w->cache, w->unwind.identity, pc) : NULL;
	if (cached)
		return cached->error ? cached->error : quick_step(w, &cached->rule, regs);
	struct cfi_rule rule;
	int error = cfi_find_rule(&w->unwind, pc, read_user, &w->peek, &rule);
	if (w->cache)
		cfi_cache_insert(w->cache, w->unwind.identity, pc, &rule, error);
	return error ? error : cfi_step_by_rule(&rule, regs, read_user, &w->peek);
}

/* Walks out from the user registers, reading at most TRACE_STACK_MAX frames
 * (the work is bounded whatever the mode keeps): each step by the program's
 * CFI where an FDE covers the code, else by its frame pointer.  Interrupts
 * are off. */
static void walk(const struct trap_frame *user, struct walk *w)
{
	struct cfi_regs regs = {.rip = user->rip, .rsp = user->rsp, .rbp = user->rbp};
	enum cfi_frame frame = CFI_FIRST_FRAME;
	if (!keep_frame(w, regs.rip))
		return;
	for (unsigned read = 1; read < TRACE_STACK_MAX; read++) {
		int step = cfi_step(w, &regs, frame);
		if (step == -ENOENT)
			step = frame_pointer_step(w, &regs);
		frame = CFI_RETURN_ADDRESS;
		if (step == CFI_OUTERMOST || (step == 0 && !regs.rip))
			return;
		if (step < 0) {
			w->flags |= TRACE_STACK_UNREADABLE;
			return;
		}
		if (!keep_frame(w, regs.rip)) {
			w->flags |= TRACE_STACK_TRUNCATED;
			return;
		}
	}
	w->flags |= TRACE_STACK_TRUNCATED;
}

/* Writes count frames of thread tid's user stack into the stream. */
static void write_stack(int32_t tid, const uint64_t *frames, unsigned count, uint16_t flags)
{
	struct {
		struct trace_user_stack head;
		uint64_t frames[TRACE_STACK_MAX]; /* only the first count are written and sent */
	} event;
	count = count < TRACE_STACK_MAX ? count : TRACE_STACK_MAX;
	event.head = (struct trace_user_stack){.tid = tid, .count = (uint16_t)count, .flags = flags};
	memcpy(event.frames, frames, count * sizeof frames[0]);
	tracepoint_write(TRACE_USER_STACK, &event,
			 (uint32_t)(sizeof event.head + count * sizeof event.frames[0]));
}

/* Writes p's user stack (slot's entry says how much) into the stream. */
static void record_stack(struct process *p, int slot, const struct trap_frame *user)
{
	const struct uscope_entry *e = &entries[slot];
	struct {
		struct trace_user_stack head;
		uint64_t frames[TRACE_STACK_MAX]; /* only the first count are written and sent */
	} event;
	event.head = (struct trace_user_stack){.tid = (int32_t)thread_id(thread_current())};
	struct walk w = {.keep = e->mode == 1 || e->mode == 3 ? 1 : e->budget,
			 .own_only = e->mode <= 2,
			 .frames = event.frames};
	proc_own_code(p, &w.own_start, &w.own_end);
	proc_unwind_tables(p, &w.unwind);
	uint64_t irq = irq_save();
	w.cache = __atomic_load_n(&rule_caches[this_cpu_id()], __ATOMIC_ACQUIRE);
	walk(user, &w);
	event.head.count = (uint16_t)w.count;
	event.head.flags = w.flags;
	tracepoint_write(TRACE_USER_STACK, &event,
			 (uint32_t)(sizeof event.head + w.count * sizeof event.frames[0]));
	irq_restore(irq);
}

/* Does slot's entry want stacks at the event named prefix + name? */
static bool wants(int slot, const char *prefix, const char *name)
{
	const char *events = entries[slot].events;
	if (events[0] == '*' && !events[1])
		return true;
	char full[64];
	size_t length = strlcpy(full, prefix, sizeof full);
	strlcpy(full + length, name, sizeof full - length);
	return jp_pattern_match(events, full);
}

void uscope_record_stack(const struct trap_frame *user, const char *syscall_name)
{
	struct process *p = proc_current();
	int slot = proc_trace_slot(p);
	if (!slot || !user || !wants(slot, "sys.", syscall_name ? syscall_name : "?"))
		return;
	record_stack(p, slot, user);
}

/* The registers the current thread entered the kernel with, when it came
 * from user space and this is not an interrupt; else NULL. */
static const struct trap_frame *entry_registers(void)
{
	struct cpu *cpu = this_cpu();
	if (cpu->irq_depth || !proc_current() || !cpu->syscall_stack)
		return NULL;
	const struct trap_frame *user = (const struct trap_frame *)cpu->syscall_stack - 1;
	return trap_frame_from_user(user) ? user : NULL;
}

unsigned uscope_take_stack(uint64_t *frames, unsigned max, uint16_t *flags)
{
	*flags = 0;
	const struct trap_frame *user = entry_registers();
	if (!user || !max || !irq_enabled())
		return 0;
	struct walk w = {.keep = max < TRACE_STACK_MAX ? max : TRACE_STACK_MAX, .frames = frames};
	proc_unwind_tables(proc_current(), &w.unwind);
	walk(user, &w);
	*flags = w.flags;
	return w.count;
}

void uscope_prepare_stacks(void)
{
	make_rule_caches();
}

void uscope_write_stack(int tid, const uint64_t *frames, unsigned count, uint16_t flags)
{
	write_stack((int32_t)tid, frames, count, flags);
}

void uscope_record_joinpoint_stack(const char *joinpoint)
{
	struct process *p = proc_current();
	int slot = proc_trace_slot(p);
	struct cpu *cpu = this_cpu();
	if (!slot || cpu->irq_depth || !strncmp(joinpoint, "sys.", 4) || !wants(slot, "", joinpoint))
		return;
	const struct trap_frame *user = (const struct trap_frame *)cpu->syscall_stack - 1;
	if (trap_frame_from_user(user))
		record_stack(p, slot, user);
}
