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
 * the page tables without a fault (uaccess's user_peek): a stack that cannot
 * be read ends the walk and is marked, never a fault.  Work is bounded: at
 * most TRACE_STACK_MAX frames, the rules found cached per CPU.  In a streamed
 * trace a stack the CPU sent before, found the same by the registers and the
 * words its walk read (stack_memo.c), goes as a reference to it.  Scope modes (Uscope's table): 1 = the last frame
 * in the application's own code, 2 = up to the budget's frames of its own
 * code, 3 = the last frame wherever it is, 4 = up to the budget's frames of
 * all code.  The programs are static: own code is told from newlib's and
 * librscfl's by the address range of the program's .text.own section, which
 * the build puts its own objects in (userland/own-code.ld) and exec notes.
 */
#include "trace/internal.h"
#include "trace/stack_memo.h"
#include "trace/uscope_syscall.h"

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
	bool every_user; /* every user's processes (the console's, PRIV_MONITOR's) */
	uint32_t owner;  /* else: the user whose processes it traces, who alone changes it */
	char name[PROC_NAME_MAX]; /* a program's name, or a path (with a '/') */
	unsigned mode;
	unsigned budget;
	char events[USCOPE_EVENTS_MAX]; /* the events with stacks: a join-point pattern */
};

/* Slot i of the map is entries[i]; slot 0 means "not traced". */
static struct uscope_entry entries[USCOPE_MAP_MAX + 1];
static struct spinlock map_lock = SPINLOCK_INIT("trace.uscope");
/* What the system call's path reads (uscope_syscall.h). */
uint64_t uscope_call_config[UINT8_MAX + 1];

/* How much of the stack slot's entry keeps. */
static unsigned frames_kept(const struct uscope_entry *e)
{
	return e->mode == 1 || e->mode == 3 ? 1 : e->budget;
}

/* The memo's config for e's stacks: what its mode keeps (never 0). */
static uint32_t memo_config(const struct uscope_entry *e)
{
	return e->mode | frames_kept(e) << 8;
}

/* Rules found, per CPU (lib/cfi.h), and the stacks each CPU sent
 * (stack_memo.c, cpu->stack_memo): made with the map's first entry. */
static struct cfi_cache *rule_caches[MAX_CPUS];
static bool memos_made; /* every CPU has its stack_memo */

/* The stream's epoch for references: 0 while none may be written (no
 * trace, or a flight recorder, whose oldest records are overwritten). */
static uint32_t stream_epoch;
static uint32_t epochs;

/* Sets uscope_call_config from the map, the stream's epoch and the memos
 * (under map_lock). */
static void note_call_configs(void)
{
	uint32_t epoch = __atomic_load_n(&stream_epoch, __ATOMIC_ACQUIRE);
	for (int slot = 1; slot <= USCOPE_MAP_MAX; slot++) {
		const struct uscope_entry *e = &entries[slot];
		bool every_call = e->used && !strcmp(e->events, "*") && epoch &&
				  __atomic_load_n(&memos_made, __ATOMIC_ACQUIRE);
		uint64_t config = every_call ? stack_memo_config(memo_config(e), epoch) : 0;
		__atomic_store_n(&uscope_call_config[slot], config, __ATOMIC_RELEASE);
	}
}

static void refresh_call_configs(void)
{
	uint64_t irq = spin_lock_irqsave(&map_lock);
	note_call_configs();
	spin_unlock_irqrestore(&map_lock, irq);
}

/* *slot, made if it is NULL (another command may make it meanwhile). */
static void make_once(void **slot, size_t size)
{
	if (__atomic_load_n(slot, __ATOMIC_ACQUIRE))
		return;
	void *made = kzalloc(size), *none = NULL;
	if (made && !__atomic_compare_exchange_n(slot, &none, made, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE))
		kfree(made);
}

static void make_rule_caches(void)
{
	bool all = true;
	for (unsigned cpu = 0; cpu < cpu_count; cpu++) {
		make_once((void **)&rule_caches[cpu], sizeof *rule_caches[cpu]);
		make_once((void **)&cpus[cpu].stack_memo, sizeof *cpus[cpu].stack_memo);
		all = all && __atomic_load_n(&cpus[cpu].stack_memo, __ATOMIC_ACQUIRE);
	}
	if (all && !__atomic_load_n(&memos_made, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&memos_made, true, __ATOMIC_RELEASE);
		refresh_call_configs();
	}
}

static void new_epoch(bool references)
{
	uint32_t epoch = 0;
	if (references && !(epoch = ++epochs))
		epoch = ++epochs; /* 0 is "none" */
	__atomic_store_n(&stream_epoch, epoch, __ATOMIC_RELEASE);
	refresh_call_configs();
}

void uscope_stream_begins(bool references)
{
	new_epoch(references);
}

void uscope_stream_ends(void)
{
	new_epoch(false);
}

void uscope_stream_lost(void)
{
	if (__atomic_load_n(&stream_epoch, __ATOMIC_ACQUIRE))
		new_epoch(true);
}

_Static_assert(USCOPE_NAME_MAX == PROC_NAME_MAX, "a name in the map is a process's name");

/* Does e trace the processes of owner (proc_current_owner)? */
static bool entry_covers(const struct uscope_entry *e, uint32_t owner)
{
	return e->used && (e->every_user || (owner != PROC_OWNER_MIXED && e->owner == owner));
}

static bool entry_matches(const struct uscope_entry *e, const char *name, const char *path,
			  uint32_t owner)
{
	return entry_covers(e, owner) &&
	       (!strcmp(e->name, name) || (path && !strcmp(e->name, path)));
}

/* The exec hook: the slot naming this program for a process of owner, or 0
 * (an entry for every user first). */
static int decide(const char *name, const char *path, uint32_t owner)
{
	int own = 0;
	for (int slot = 1; slot <= USCOPE_MAP_MAX; slot++)
		if (entry_matches(&entries[slot], name, path, owner)) {
			if (entries[slot].every_user)
				return slot;
			own = own ? own : slot;
		}
	return own;
}

static int retrace_pick(const char *name, int slot, uint32_t owner)
{
	int named = decide(name, NULL, owner);
	if (named)
		return named;
	/* inherited, and its entry still in the map for this process */
	return slot && entry_covers(&entries[slot], owner) ? slot : 0;
}

static const struct uscope_requester console = {.every_user = true};

/* The slot of the entry named name that is requester's (under map_lock),
 * or 0. */
static int entry_of(const char *name, struct uscope_requester who)
{
	for (int slot = 1; slot <= USCOPE_MAP_MAX; slot++) {
		const struct uscope_entry *e = &entries[slot];
		if (e->used && !strcmp(e->name, name) && e->every_user == who.every_user &&
		    (who.every_user || e->owner == who.owner))
			return slot;
	}
	return 0;
}

/* How many entries owner has (under map_lock). */
static int entries_owned(uint32_t owner)
{
	int count = 0;
	for (int slot = 1; slot <= USCOPE_MAP_MAX; slot++)
		count +=
		    entries[slot].used && !entries[slot].every_user && entries[slot].owner == owner;
	return count;
}

/* Every CPU notes whether its running thread is traced now (the recorder's
 * fast path leaves a traced thread's calls to C, which records the stack). */
static void refresh_user_stacks(void)
{
	proc_refresh_user_stacks(NULL);
	smp_call_all(proc_refresh_user_stacks, NULL);
}

int uscope_trace_as(const char *name, unsigned mode, unsigned budget, const char *events,
		    struct uscope_requester who)
{
	events = events ? events : "*";
	if (!name || !*name || strlen(name) >= PROC_NAME_MAX || budget > TRACE_STACK_MAX ||
	    !*events || strlen(events) >= USCOPE_EVENTS_MAX)
		return -EINVAL;
	if (mode < 1 || mode > 4)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&map_lock);
	int slot = entry_of(name, who), free_slot = 0;
	bool room = slot || who.every_user || entries_owned(who.owner) < USCOPE_USER_MAX;
	for (int i = 1; i <= USCOPE_MAP_MAX && !slot && !free_slot && room; i++)
		if (!entries[i].used)
			free_slot = i;
	slot = slot ? slot : free_slot;
	if (slot) {
		entries[slot] = (struct uscope_entry){.used = true,
						      .every_user = who.every_user,
						      .owner = who.owner,
						      .mode = mode,
						      .budget = budget ? budget : 1};
		strlcpy(entries[slot].name, name, sizeof entries[slot].name);
		strlcpy(entries[slot].events, events, sizeof entries[slot].events);
		note_call_configs();
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

int uscope_trace(const char *name, unsigned mode, unsigned budget, const char *events)
{
	return uscope_trace_as(name, mode, budget, events, console);
}

/* The slot of any entry named name (under map_lock), or 0. */
static int any_entry_named(const char *name)
{
	for (int slot = 1; slot <= USCOPE_MAP_MAX; slot++)
		if (entries[slot].used && !strcmp(entries[slot].name, name))
			return slot;
	return 0;
}

int uscope_untrace_as(const char *name, struct uscope_requester who)
{
	uint64_t irq = spin_lock_irqsave(&map_lock);
	int slot = name ? entry_of(name, who) : 0, others = name ? any_entry_named(name) : 0;
	slot = slot ? slot : who.every_user ? others : 0;
	if (slot) {
		entries[slot].used = false;
		note_call_configs();
	}
	spin_unlock_irqrestore(&map_lock, irq);
	if (!slot)
		return others ? -EPERM : -ENOENT;
	proc_retrace(retrace_pick);
	refresh_user_stacks();
	return 0;
}

int uscope_untrace(const char *name)
{
	return uscope_untrace_as(name, console);
}

int uscope_list_as(struct uscope_info *info, int count, struct uscope_requester who)
{
	int n = 0;
	uint64_t irq = spin_lock_irqsave(&map_lock);
	for (int slot = 1; slot <= USCOPE_MAP_MAX; slot++) {
		const struct uscope_entry *e = &entries[slot];
		if (!e->used || !(who.every_user || e->every_user || e->owner == who.owner))
			continue;
		if (n < count) {
			info[n] = (struct uscope_info){.mode = e->mode,
						       .budget = e->budget,
						       .every_user = e->every_user,
						       .owner = e->every_user ? 0 : e->owner};
			strlcpy(info[n].name, e->name, sizeof info[n].name);
			strlcpy(info[n].events, e->events, sizeof info[n].events);
		}
		n++;
	}
	spin_unlock_irqrestore(&map_lock, irq);
	return n;
}

int uscope_list(struct uscope_info *info, int count)
{
	return uscope_list_as(info, count, console);
}

/* The user stack, walked and filtered as an entry's mode says. */
struct walk {
	unsigned keep; /* frames to keep at most */
	bool own_only; /* only frames in [own_start, own_end) */
	uint64_t own_start, own_end;
	struct cfi_tables unwind; /* the program's (lib/cfi.h), or empty */
	struct cfi_cache *cache;  /* this CPU's found rules, or NULL */
	struct stack_memo *memo;  /* notes the stack words read, or NULL */
	uint32_t rbp_word;        /* regs.rbp came from the memo's word of this bit (0: not) */
	uint32_t unused_rbp;      /* the memo's words that gave an rbp no step used */
	struct user_peek *peek;   /* the pages the walk has found */
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
 * The steps read words and pairs of words: those copies are moves.  Reads
 * of the unwind tables (they do not change while the program runs). */
static int read_table(void *to, uint64_t address, size_t length, void *arg)
{
	if (length == 8)
		return user_peek_read(arg, to, address, 8);
	if (length == 16)
		return user_peek_read(arg, to, address, 16);
	return user_peek_read(arg, to, address, length);
}

/* A read of the stack (what the steps read): noted for the memo when the
 * walk is to be remembered. */
static inline __attribute__((always_inline)) int read_stack(struct walk *w, void *to,
							    uint64_t address, size_t length)
{
	if (!w->memo)
		return user_peek_read(w->peek, to, address, length);
	const uint8_t *at = user_peek_where(w->peek, address, length);
	if (!at || (length != 8 && length != 16)) {
		w->memo->unusable = true; /* across pages, unreadable, or not words */
		return user_peek_read(w->peek, to, address, length);
	}
	__builtin_memcpy(to, at, length);
	stack_memo_note(w->memo, at);
	if (length == 16)
		stack_memo_note(w->memo, at + 8);
	return 0;
}

static int read_user(void *to, uint64_t address, size_t length, void *arg)
{
	if (length == 8)
		return read_stack(arg, to, address, 8);
	if (length == 16)
		return read_stack(arg, to, address, 16);
	return read_stack(arg, to, address, length);
}

/* The memo checks only the words a walk's outcome depends on: a saved rbp
 * read at a step and never used afterwards (the later steps found their CFA
 * by rsp, and kept or read rbp anew, or the walk ended) changes no frame and
 * no address read, whatever its value.  Code built without frame pointers
 * saves rbp as any other register: those words are left out of the check. */
static inline void rbp_used(struct walk *w)
{
	w->unused_rbp &= ~w->rbp_word;
	w->rbp_word = 0;
}

/* The word the walk notes next (if it notes it: else the memo's entry is
 * not kept) is a saved rbp. */
static inline void rbp_read_next(struct walk *w)
{
	if (w->memo) {
		w->rbp_word = 1u << w->memo->filling->words; /* at most 1 << STACK_MEMO_WORDS */
		w->unused_rbp |= w->rbp_word;
	}
}

/* One step out along the frame-pointer chain, for code the unwind tables do
 * not cover: 0, CFI_OUTERMOST (rbp 0), -EINVAL (a frame below the stack
 * pointer, misaligned, or a chain that does not go up) or -EFAULT. */
static int frame_pointer_step(struct walk *w, struct cfi_regs *regs)
{
	uint64_t pair[2]; /* the saved rbp, the return address */
	rbp_used(w);      /* the next rbp is tested at once: its word is checked too */
	if (!regs->rbp)
		return CFI_OUTERMOST;
	if ((regs->rbp & 7) || regs->rbp < regs->rsp)
		return -EINVAL;
	if (read_stack(w, pair, regs->rbp, sizeof pair))
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
	    (rule->rbp.how != CFI_SAME && rule->rbp.how != CFI_AT_CFA)) {
		rbp_used(w); /* any use, and the next rbp from any word */
		return cfi_step_by_rule(rule, regs, read_user, w);
	}
	if (!by_rsp)
		rbp_used(w);
	uint64_t cfa = (by_rsp ? regs->rsp : regs->rbp) + (uint64_t)rule->cfa_offset;
	uint64_t rip, rbp = regs->rbp;
	if (cfa <= regs->rsp)
		return -EINVAL; /* a caller's frame lies above its callee's */
	if (read_stack(w, &rip, cfa - 8, 8))
		return -EFAULT;
	if (rule->rbp.how == CFI_AT_CFA) {
		rbp_read_next(w);
		if (read_stack(w, &rbp, cfa + (uint64_t)rule->rbp.offset, 8))
			return -EFAULT;
	}
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
	int error = cfi_find_rule(&w->unwind, pc, read_table, w->peek, &rule);
	if (w->cache)
		cfi_cache_insert(w->cache, w->unwind.identity, pc, &rule, error);
	if (error)
		return error;
	rbp_used(w);
	return cfi_step_by_rule(&rule, regs, read_user, w);
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
	event.head =
	    (struct trace_user_stack){.tid = tid, .count = (uint16_t)count, .flags = flags};
	memcpy(event.frames, frames, count * sizeof frames[0]);
	tracepoint_write(TRACE_USER_STACK, &event,
			 (uint32_t)(sizeof event.head + count * sizeof event.frames[0]));
}

/* A stack the memo found: a reference to the one sent before (with the
 * system call's entry, in a trace of stacks alone). */
static inline __attribute__((always_inline)) void
put_reference(struct trace_user_stack_ref ref, const struct trace_syscall_entry *call)
{
	if (call)
		uscope_put_syscall_stack(ref, call->number, call->arg0);
	else
		uscope_put_record(TRACE_USER_STACK_REF, &ref, sizeof ref);
}

/* The walk of the current process's stack, which the memo did not have (memo: this CPU's, to
 * remember it under key, whose config holds the stream's epoch; NULL: the
 * stream takes no references), its record written after call's (if any).
 * Interrupts are off. */
static __attribute__((noinline)) void record_walked(const struct uscope_entry *e,
						    const struct trap_frame *user, int32_t tid,
						    const struct trace_syscall_entry *call,
						    const struct stack_memo_key *key,
						    struct stack_memo *memo)
{
	struct stack_memo *cpu_memo = this_cpu_read(stack_memo);
	struct {
		struct trace_user_stack_def head;
		uint64_t frames[TRACE_STACK_MAX]; /* only the first count are written and sent */
	} event;
	struct user_peek none = {0};
	struct walk w = {.keep = frames_kept(e),
			 .own_only = e->mode <= 2,
			 .cache = __atomic_load_n(&rule_caches[this_cpu_id()], __ATOMIC_ACQUIRE),
			 .memo = memo,
			 .peek = &none,
			 .frames = event.frames};
	struct process *p = proc_current();
	proc_own_code(p, &w.own_start, &w.own_end);
	proc_unwind_tables(p, &w.unwind);
	/* The pages the CPU's last walk found hold while the space's stamp does
	 * (every unmap and change of protection gives it a new one): the walk
	 * starts with them and leaves its own there (interrupts are off: they
	 * are the CPU's alone).  A walk that keeps the first frame of any code
	 * reads nothing. */
	if ((w.own_only || w.keep > 1) && cpu_memo && key->space) {
		if (cpu_memo->pages_space != key->space) {
			cpu_memo->pages = none;
			cpu_memo->pages_space = key->space;
		}
		w.peek = &cpu_memo->pages;
	}
	if (memo)
		stack_memo_begin(memo, key);
	if (call)
		uscope_put_record(TRACE_SYSCALL_ENTRY, call, sizeof *call);
	walk(user, &w);
	uint32_t length = (uint32_t)(w.count * sizeof event.frames[0]);
	if (memo) {
		uint32_t id = ++memo->next_id;
		event.head = (struct trace_user_stack_def){
		    .tid = tid, .count = (uint16_t)w.count, .flags = w.flags, .id = id};
		if (uscope_put_record(TRACE_USER_STACK_DEF, &event, sizeof event.head + length) &&
		    !(w.flags & TRACE_STACK_UNREADABLE))
			stack_memo_keep(memo, key,
					(struct trace_user_stack_ref){.tid = tid, .id = id},
					w.unused_rbp);
	} else {
		/* A user_stack is a def without its id: the frames move up. */
		struct trace_user_stack *plain = (struct trace_user_stack *)((uint8_t *)&event + 8);
		*plain = (struct trace_user_stack){
		    .tid = tid, .count = (uint16_t)w.count, .flags = w.flags};
		uscope_put_record(TRACE_USER_STACK, plain, sizeof *plain + length);
	}
}

/* Writes the current process's user stack (slot's entry says how much) into
 * the stream; call:
 * the system call's entry record to write first (a trace of stacks alone),
 * or NULL.  In a streamed trace a stack this CPU sent before, found the same
 * by the memo, goes as a reference; one walked goes as a user_stack_def the
 * memo remembers. */
static inline __attribute__((always_inline)) void
record_stack(int slot, const struct trap_frame *user, const struct trace_syscall_entry *call,
	     bool looked)
{
	const struct uscope_entry *e = &entries[slot];
	int32_t tid = (int32_t)thread_id(thread_current());
	uint64_t irq = irq_save();
	uint32_t epoch = __atomic_load_n(&stream_epoch, __ATOMIC_ACQUIRE);
	struct stack_memo_key key = {.rip = user->rip,
				     .rsp = user->rsp,
				     .rbp = user->rbp,
				     .space = vm_space_stamp(),
				     .config = stack_memo_config(memo_config(e), epoch),
				     .thread = thread_current()};
	struct stack_memo *memo = epoch ? this_cpu_read(stack_memo) : NULL;
	const struct stack_memo_entry *sent = memo && !looked ? stack_memo_find(memo, &key) : NULL;
	if (sent)
		put_reference(sent->ref, call);
	else
		record_walked(e, user, tid, call, &key, memo);
	irq_restore(irq);
}

/* wants, for a pattern other than "*". */
static __attribute__((noinline)) bool wants_named(int slot, const char *prefix, const char *name)
{
	const char *events = entries[slot].events;
	char full[64];
	size_t length = strlcpy(full, prefix, sizeof full);
	strlcpy(full + length, name, sizeof full - length);
	return jp_pattern_match(events, full);
}

/* Does slot's entry want stacks at the event named prefix + name? */
static inline bool wants(int slot, const char *prefix, const char *name)
{
	const char *events = entries[slot].events;
	return (events[0] == '*' && !events[1]) || wants_named(slot, prefix, name);
}

/* These three are flattened: the ring's reserve and commit in line (GCC
 * leaves them out of line in functions this size), as at a system call. */
__attribute__((flatten)) void uscope_record_stack(const struct trap_frame *user,
						  const char *syscall_name)
{
	struct process *p = proc_current();
	int slot = proc_trace_slot(p);
	if (!slot || !user || !wants(slot, "sys.", syscall_name ? syscall_name : "?"))
		return;
	record_stack(slot, user, NULL, false);
}

__attribute__((flatten)) void uscope_record_syscall(const struct trap_frame *user,
						    const char *syscall_name, int64_t number,
						    uint64_t arg0, unsigned slot)
{
	struct trace_syscall_entry call = {.number = number, .arg0 = arg0};
	/* The CPU's slot is set again when the map changes: an entry taken out
	 * meanwhile is no longer used.  When the entry wants every call's stack,
	 * uscope_syscall_sent has looked in the memo already: a walk now (even
	 * if the thread moved to a CPU whose memo has the stack) is always a
	 * right answer. */
	if (slot <= USCOPE_MAP_MAX && entries[slot].used &&
	    wants((int)slot, "sys.", syscall_name ? syscall_name : "?"))
		record_stack((int)slot, user, &call,
			     __atomic_load_n(&uscope_call_config[slot], __ATOMIC_RELAXED) != 0);
	else
		tracepoint_write(TRACE_SYSCALL_ENTRY, &call, sizeof call);
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
	struct user_peek none = {0};
	struct walk w = {
	    .keep = max < TRACE_STACK_MAX ? max : TRACE_STACK_MAX, .peek = &none, .frames = frames};
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

__attribute__((flatten)) void uscope_record_joinpoint_stack(const char *joinpoint)
{
	struct process *p = proc_current();
	int slot = proc_trace_slot(p);
	struct cpu *cpu = this_cpu();
	if (!slot || cpu->irq_depth || !strncmp(joinpoint, "sys.", 4) ||
	    !wants(slot, "", joinpoint))
		return;
	const struct trap_frame *user = (const struct trap_frame *)cpu->syscall_stack - 1;
	if (trap_frame_from_user(user))
		record_stack(slot, user, NULL, false);
}
