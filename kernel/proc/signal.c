/*
 * Signal handlers, with Linux's x86_64 ABI so that the same programs run on
 * both: the actions rt_sigaction sets, the mask, and the frame a handler
 * runs on (struct rt_sigframe: the return address sa_restorer, a ucontext
 * whose mcontext is Linux's struct sigcontext, then a siginfo; the FXSAVE
 * image just above it), on the user stack or, for SA_ONSTACK, on the
 * alternate stack (altstack.c).  Delivery happens on the way back to user
 * mode and only when something is pending (process.c's out-of-line path),
 * so the usual exit is as short as it was.  rt_sigreturn reads the frame
 * once into a kernel copy and checks every value before it loads any of it:
 * a program may hand it anything.
 *
 * Bits: bit n stands for signal n in the kernel's words (bit 0 of
 * pending_signals is the exit request); Linux's sigset_t in user memory
 * has signal n at bit n - 1 (pack_mask and unpack_mask convert).
 */
#include "arch/x86_64/fpu.h"
#include "arch/x86_64/gdt.h"
#include "arch/x86_64/traps.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/internal.h"
#include "uaccess/uaccess.h"

#define SIGNAL_BITS 0xfffffffeu /* signals 1 .. 31 */
/* The signals exceptions send: taken first, as Linux does, so that the
 * frame of a fault describes the fault. */
#define SYNCHRONOUS_SIGNALS \
	((1u << SIGSEGV) | (1u << SIGBUS) | (1u << SIGILL) | (1u << SIGTRAP) | (1u << SIGFPE))
#define UNBLOCKABLE ((1u << SIGKILL) | (1u << SIGSTOP))

#define SIG_DFL 0
#define SIG_IGN 1

#define SA_NOCLDSTOP 0x00000001UL /* SIGCHLD is only sent at exit: nothing to do */
#define SA_SIGINFO   0x00000004UL
#define SA_RESTORER  0x04000000UL
#define SA_ONSTACK   0x08000000UL
#define SA_RESTART   0x10000000UL
#define SA_NODEFER   0x40000000UL
#define SA_RESETHAND 0x80000000UL
#define SA_KNOWN                                                                          \
	(SA_NOCLDSTOP | SA_SIGINFO | SA_RESTORER | SA_ONSTACK | SA_RESTART | SA_NODEFER | \
	 SA_RESETHAND)

#define SI_USER     0
#define SI_KERNEL   0x80
#define SEGV_MAPERR 1
#define SEGV_ACCERR 2
#define BUS_ADRERR  2 /* no such place in the object mapped there */
#define ILL_ILLOPN  2 /* an undefined instruction (ud2) */
#define TRAP_BRKPT  1
#define TRAP_TRACE  2
#define FPE_INTDIV  1
#define FPE_FLTDIV  3
#define FPE_FLTOVF  4
#define FPE_FLTUND  5
#define FPE_FLTRES  6
#define FPE_FLTINV  7

#define UC_SIGCONTEXT_SS      0x2
#define UC_STRICT_RESTORE_SS  0x4
#define RED_ZONE_BYTES        128
#define PAGE_FAULT_PROTECTION 1u /* the error code's P bit: the page was present */

/* The flags user code may set through rt_sigreturn, Linux's FIX_EFLAGS: CF,
 * PF, AF, ZF, SF, TF, DF, OF, RF and AC (TF so that a handler can go on
 * single-stepping; the #DB it raises is the process's, in user mode).  IF
 * is always set; NT, IOPL, VM and the rest never. */
#define RFLAGS_USER     0x50dd5UL
#define RFLAGS_FIXED    0x2UL /* bit 1 reads as one */
#define RFLAGS_IF       (1UL << 9)
#define RFLAGS_TF       (1UL << 8)
#define RFLAGS_DF       (1UL << 10)
#define RFLAGS_RF       (1UL << 16)
#define USER_STACK_LAST 0x0000800000000000UL /* the end of the canonical lower half */

#define FXSAVE_MXCSR      24
#define FXSAVE_MXCSR_MASK 28

/* Linux's struct sigcontext (x86_64). */
struct sigcontext_user {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip;
	uint64_t eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate; /* the FXSAVE image's user address, or 0 */
	uint64_t reserved[8];
};

/* Linux's struct ucontext as the kernel writes it (sigset_t of 8 bytes). */
struct ucontext_user {
	uint64_t flags;
	uint64_t link;
	uint64_t stack_sp;
	int32_t stack_flags;
	int32_t stack_pad;
	uint64_t stack_size;
	struct sigcontext_user mcontext;
	uint64_t sigmask;
};

/* Linux's siginfo_t: 128 bytes, the union at 16. */
struct siginfo_user {
	int32_t signo, error, code, pad;
	union {
		struct {
			int32_t pid;
			uint32_t uid;
			int32_t status;
		} sender;
		uint64_t address;
		uint8_t bytes[112];
	};
};

struct rt_sigframe_user {
	uint64_t pretcode; /* sa_restorer: where the handler's ret goes */
	struct ucontext_user uc;
	struct siginfo_user info;
};

_Static_assert(sizeof(struct sigcontext_user) == 256, "Linux's struct sigcontext");
_Static_assert(offsetof(struct ucontext_user, mcontext) == 40, "Linux's struct ucontext");
_Static_assert(sizeof(struct ucontext_user) == 304, "Linux's struct ucontext");
_Static_assert(sizeof(struct siginfo_user) == 128, "Linux's siginfo_t");
_Static_assert(offsetof(struct rt_sigframe_user, info) == 312, "Linux's struct rt_sigframe");

/* ---- Masks ------------------------------------------------------------------ */

uint64_t proc_pack_mask(uint32_t mask)
{
	return (uint64_t)(mask & SIGNAL_BITS) >> 1;
}

uint32_t proc_unpack_mask(uint64_t set)
{
	return (uint32_t)(set << 1) & SIGNAL_BITS; /* signals 32 and up do not exist */
}

/* Does signal's bit do anything in p when it is not blocked: a handler, or
 * a default action other than nothing (SIG_IGN is dropped before). */
static bool acts_in(const struct process *p, uint32_t bit)
{
	return (bit & p->handled_signals) || !(bit & PROC_IGNORED_SIGNALS);
}

static uint32_t acting_in(const struct process *p, uint32_t bits)
{
	return (bits & ~p->ignored_signals) & (p->handled_signals | ~PROC_IGNORED_SIGNALS);
}

void proc_set_blocked_locked(struct process *p, uint32_t mask)
{
	spin_assert_held(&proc_lock);
	mask &= SIGNAL_BITS & ~UNBLOCKABLE;
	uint32_t pending = __atomic_load_n(&p->pending_signals, __ATOMIC_ACQUIRE);
	uint32_t newly_held = pending & mask;
	uint32_t released = acting_in(p, p->held_signals & ~mask);
	p->blocked_signals = mask;
	p->held_signals = (p->held_signals & mask) | newly_held;
	__atomic_and_fetch(&p->pending_signals, ~newly_held, __ATOMIC_RELEASE);
	__atomic_or_fetch(&p->pending_signals, released, __ATOMIC_RELEASE);
}

uint32_t proc_held_signals(void)
{
	struct process *p = proc_current();
	if (!p)
		return 0;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	uint32_t held = p->held_signals;
	spin_unlock_irqrestore(&proc_lock, irq);
	return held;
}

int proc_change_mask(int how, const uint32_t *set, uint32_t *old)
{
	struct process *p = proc_current();
	if (!p)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	*old = p->blocked_signals;
	int error = 0;
	if (set) {
		switch (how) {
		case PROC_SIG_BLOCK: proc_set_blocked_locked(p, *old | *set); break;
		case PROC_SIG_UNBLOCK: proc_set_blocked_locked(p, *old & ~*set); break;
		case PROC_SIG_SETMASK: proc_set_blocked_locked(p, *set); break;
		default: error = -EINVAL;
		}
	}
	spin_unlock_irqrestore(&proc_lock, irq);
	return error;
}

static bool interrupted(void *arg)
{
	return proc_is_interrupted(arg);
}

int proc_suspend_with_mask(uint32_t mask)
{
	struct process *p = proc_current();
	if (!p)
		return -EINVAL;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	if (!p->restore_mask) { /* made again after a stop: the first mask is the caller's */
		p->saved_mask = p->blocked_signals;
		p->restore_mask = true;
	}
	proc_set_blocked_locked(p, mask);
	spin_unlock_irqrestore(&proc_lock, irq);
	waitq_wait(&p->signal_queue, interrupted, p);
	return -EINTR;
}

/* ---- Sending ------------------------------------------------------------------ */

void proc_queue_signal_locked(struct process *p, int signal, const struct proc_siginfo *info)
{
	uint32_t bit = 1u << signal;
	bool blocked = (p->blocked_signals & bit) != 0;
	if (!blocked && !acts_in(p, bit))
		return;
	uint32_t pending = __atomic_load_n(&p->pending_signals, __ATOMIC_ACQUIRE);
	if (!((pending | p->held_signals) & bit)) /* a second one merges into the first */
		p->infos[signal] = *info;
	if (blocked)
		p->held_signals |= bit;
	else
		__atomic_or_fetch(&p->pending_signals, bit, __ATOMIC_RELEASE);
}

static void reset_action_locked(struct process *p, int signal)
{
	uint32_t bit = 1u << signal;
	p->actions[signal] = (struct proc_sigaction){0};
	p->handled_signals &= ~bit;
	p->ignored_signals &= ~bit;
}

bool proc_force_signal_locked(struct process *p, int signal, const struct proc_siginfo *info,
			      bool to_default)
{
	uint32_t bit = 1u << signal;
	if (to_default || (p->blocked_signals & bit) || (p->ignored_signals & bit)) {
		reset_action_locked(p, signal);
		proc_set_blocked_locked(p, p->blocked_signals & ~bit);
	}
	p->infos[signal] = *info;
	__atomic_or_fetch(&p->pending_signals, bit, __ATOMIC_RELEASE);
	return (p->handled_signals & bit) != 0;
}

/* The SIGSEGV a frame that cannot be written or read back ends p with. */
static void force_sigsegv(struct process *p)
{
	struct proc_siginfo info = {.code = SI_KERNEL};
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	proc_force_signal_locked(p, SIGSEGV, &info, true);
	spin_unlock_irqrestore(&proc_lock, irq);
}

/* ---- Actions ------------------------------------------------------------------- */

static int check_action(int signal, const struct proc_sigaction *action)
{
	if (action->flags & ~SA_KNOWN)
		return -EINVAL;
	if (signal == SIGKILL || signal == SIGSTOP)
		return -EINVAL;
	if (action->handler != SIG_DFL && action->handler != SIG_IGN &&
	    !(action->flags & SA_RESTORER))
		return -EINVAL; /* a handler could not return */
	return 0;
}

static void report_action_locked(const struct process *p, int signal, struct proc_sigaction *old)
{
	uint32_t bit = 1u << signal;
	*old = p->actions[signal];
	old->handler = (p->handled_signals & bit)   ? p->actions[signal].handler
		       : (p->ignored_signals & bit) ? SIG_IGN
						    : SIG_DFL;
}

static void set_action_locked(struct process *p, int signal, const struct proc_sigaction *action)
{
	uint32_t bit = 1u << signal;
	p->actions[signal] = *action;
	p->actions[signal].mask &= SIGNAL_BITS & ~UNBLOCKABLE;
	p->handled_signals &= ~bit;
	p->ignored_signals &= ~bit;
	if (action->handler == SIG_IGN)
		p->ignored_signals |= bit;
	else if (action->handler != SIG_DFL)
		p->handled_signals |= bit;
	if (!acting_in(p, bit)) { /* now ignored: what is pending goes (POSIX) */
		__atomic_and_fetch(&p->pending_signals, ~bit, __ATOMIC_RELEASE);
		p->held_signals &= ~bit;
	}
}

int proc_set_signal_action(int signal, const struct proc_sigaction *action,
			   struct proc_sigaction *old)
{
	struct process *p = proc_current();
	if (!p || signal <= 0 || signal >= PROC_SIGNALS)
		return -EINVAL;
	int error = action ? check_action(signal, action) : 0;
	if (error)
		return error;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	report_action_locked(p, signal, old);
	if (action)
		set_action_locked(p, signal, action);
	spin_unlock_irqrestore(&proc_lock, irq);
	return 0;
}

void proc_signals_fork(struct process *child, const struct process *parent)
{
	child->blocked_signals = parent->blocked_signals;
	child->handled_signals = parent->handled_signals;
	memcpy(child->actions, parent->actions, sizeof child->actions);
	child->altstack = parent->altstack;
}

void proc_signals_exec_locked(struct process *p)
{
	uint32_t handled = p->handled_signals;
	for (int signal = 1; signal < PROC_SIGNALS; signal++)
		if (handled & (1u << signal))
			p->actions[signal] = (struct proc_sigaction){0};
	p->handled_signals = 0;
	proc_altstack_forget(&p->altstack);
	/* a handled signal whose default is to do nothing is dropped */
	__atomic_and_fetch(&p->pending_signals, ~(handled & PROC_IGNORED_SIGNALS),
			   __ATOMIC_RELEASE);
}

/* ---- Delivery ------------------------------------------------------------------ */

static bool is_user_code_address(uint64_t address)
{
	return address < USER_SPACE_END;
}

/* System calls Linux never makes again after a handler ran (they return
 * -EINTR): the waits for a signal and the ones with a time limit; and
 * microScope's own (ms_*, from 512): an IPC call or reply made again would
 * send its request or its answer twice, and a timeout would start over. */
#define OWN_CALLS 512 /* microScope's calls' numbers start here */

static bool restartable(uint64_t number)
{
	if (number >= OWN_CALLS)
		return false;
	switch (number) {
	case 7:   /* poll */
	case 23:  /* select */
	case 34:  /* pause */
	case 35:  /* nanosleep */
	case 130: /* rt_sigsuspend */
	case 230: /* clock_nanosleep */
	case 232: /* epoll_wait */
	case 270: /* pselect6 */
	case 271: /* ppoll */
	case 281: /* epoll_pwait */ return false;
	default: return number != PROC_NO_CALL;
	}
}

static void fill_context(struct sigcontext_user *sc, const struct trap_frame *frame, int signal,
			 const struct proc_siginfo *info, uint64_t fpstate)
{
	*sc = (struct sigcontext_user){.r8 = frame->r8,
				       .r9 = frame->r9,
				       .r10 = frame->r10,
				       .r11 = frame->r11,
				       .r12 = frame->r12,
				       .r13 = frame->r13,
				       .r14 = frame->r14,
				       .r15 = frame->r15,
				       .rdi = frame->rdi,
				       .rsi = frame->rsi,
				       .rbp = frame->rbp,
				       .rbx = frame->rbx,
				       .rdx = frame->rdx,
				       .rax = frame->rax,
				       .rcx = frame->rcx,
				       .rsp = frame->rsp,
				       .rip = frame->rip,
				       .eflags = frame->rflags,
				       .cs = (uint16_t)frame->cs,
				       .ss = (uint16_t)frame->ss,
				       .fpstate = fpstate};
	if (frame->vector < 32 && (SYNCHRONOUS_SIGNALS & (1u << signal))) { /* the exception's */
		sc->trapno = frame->vector;
		sc->err = frame->error_code;
		if (frame->vector == TRAP_PAGE_FAULT && info->address >= USER_SPACE_END)
			sc->err |= PAGE_FAULT_PROTECTION; /* nothing of the kernel's map shows */
		if (frame->vector == TRAP_PAGE_FAULT)
			sc->cr2 = info->address; /* si_addr of the others is their rip */
	}
}

static void fill_info(struct siginfo_user *out, int signal, const struct proc_siginfo *info)
{
	out->signo = signal;
	out->code = info->code;
	if (info->address)
		out->address = info->address;
	else {
		out->sender.pid = info->pid;
		out->sender.uid = info->uid;
		out->sender.status = info->status;
	}
}

/* Where a handler's frame goes, as Linux places it: below the red zone of
 * the interrupted stack, or at the top of the alternate stack when the
 * action asks for it (SA_ONSTACK) and the thread is not on it already.
 * bounded: the frame must end inside the alternate stack (it starts there,
 * or the interrupted code ran there), else it would run off its bottom. */
struct frame_place {
	uint64_t top;
	bool bounded;
};

static struct frame_place place_frame(const struct process *p, const struct trap_frame *frame,
				      const struct proc_sigaction *action)
{
	uint64_t below_red_zone = frame->rsp - RED_ZONE_BYTES;
	const struct proc_altstack *altstack = &p->altstack;
	if ((action->flags & SA_ONSTACK) && proc_altstack_state(altstack, below_red_zone) == 0)
		return (struct frame_place){altstack->sp + altstack->size, true};
	return (struct frame_place){below_red_zone, proc_altstack_holds(altstack, frame->rsp)};
}

/* Writes the frame for signal (placed by place_frame) and points frame at
 * the handler; SS_AUTODISARM disarms the alternate stack once the frame is
 * written (its uc_stack holds it armed, for rt_sigreturn).  False when the
 * stack cannot take it (frame and alternate stack unchanged).  The
 * arithmetic may wrap (an alternate stack at the top of the address space):
 * the checks below and copy_to_user's range check refuse what does. */
static bool write_frame(struct process *p, struct trap_frame *frame, int signal,
			const struct proc_sigaction *action, const struct proc_siginfo *info,
			uint32_t saved_mask)
{
	struct frame_place place = place_frame(p, frame, action);
	uint64_t fpstate = (place.top - sizeof(struct fpu_state)) & ~63UL;
	uint64_t sp = ((fpstate - sizeof(struct rt_sigframe_user)) & ~15UL) - 8;
	if (sp >= fpstate || (place.bounded && !proc_altstack_within(&p->altstack, sp)))
		return false;
	struct rt_sigframe_user out;
	memset(&out, 0, sizeof out);
	out.pretcode = action->restorer;
	out.uc.flags = UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS;
	out.uc.stack_sp = p->altstack.sp;
	out.uc.stack_flags = (int32_t)p->altstack.flags;
	out.uc.stack_size = p->altstack.size;
	fill_context(&out.uc.mcontext, frame, signal, info, fpstate);
	out.uc.mcontext.oldmask = proc_pack_mask(saved_mask);
	out.uc.sigmask = proc_pack_mask(saved_mask);
	fill_info(&out.info, signal, info);
	struct fpu_state fpu;
	memset(&fpu, 0, sizeof fpu); /* FXSAVE leaves bytes 416-511 as they were: kernel stack */
	fpu_save(&fpu);
	if (copy_to_user((void __user *)fpstate, &fpu, sizeof fpu) < 0 ||
	    copy_to_user((void __user *)sp, &out, sizeof out) < 0)
		return false;
	if (p->altstack.flags & PROC_SS_AUTODISARM)
		proc_altstack_reset(&p->altstack);
	fpu_init_state(&fpu); /* the handler starts with a clean FPU, as on Linux */
	fpu_restore(&fpu);
	frame->rip = action->handler;
	frame->rsp = sp;
	frame->rdi = (uint64_t)signal;
	frame->rsi = sp + offsetof(struct rt_sigframe_user, info);
	frame->rdx = sp + offsetof(struct rt_sigframe_user, uc);
	frame->rax = 0;
	frame->rflags &= ~(RFLAGS_TF | RFLAGS_DF | RFLAGS_RF);
	frame->cs = GDT_USER_CODE;
	frame->ss = GDT_USER_DATA;
	return true;
}

/* Takes the lowest pending signal with a handler, setting the mask the
 * handler runs with; false when there is none. */
static bool take_handled_signal(struct process *p, int *signal, struct proc_sigaction *action,
				struct proc_siginfo *info, uint32_t *saved_mask)
{
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	uint32_t ready = __atomic_load_n(&p->pending_signals, __ATOMIC_ACQUIRE) &
			 p->handled_signals & SIGNAL_BITS;
	if (ready) {
		*signal = __builtin_ctz(ready & SYNCHRONOUS_SIGNALS ? ready & SYNCHRONOUS_SIGNALS
								    : ready);
		uint32_t bit = 1u << *signal;
		__atomic_and_fetch(&p->pending_signals, ~bit, __ATOMIC_RELEASE);
		*action = p->actions[*signal];
		*info = p->infos[*signal];
		*saved_mask = p->restore_mask ? p->saved_mask : p->blocked_signals;
		p->restore_mask = false;
		if (action->flags & SA_RESETHAND)
			reset_action_locked(p, *signal);
		uint32_t during = p->blocked_signals | action->mask;
		proc_set_blocked_locked(p, during | (action->flags & SA_NODEFER ? 0 : bit));
	}
	spin_unlock_irqrestore(&proc_lock, irq);
	return ready != 0;
}

/* A call the signal interrupted is made again after the handler when the
 * action asks (SA_RESTART): back to the SYSCALL (or int $0x80, also two
 * bytes) with the number in RAX, as the entry found it. */
static void restart_if_asked(struct trap_frame *frame, uint64_t number,
			     const struct proc_sigaction *action)
{
	if ((long)frame->rax == -EINTR && (action->flags & SA_RESTART) && restartable(number)) {
		frame->rax = number;
		frame->rip -= 2;
	}
}

void proc_deliver_signals(struct process *p, struct trap_frame *frame, uint64_t number)
{
	int signal;
	struct proc_sigaction action;
	struct proc_siginfo info;
	uint32_t saved_mask;
	while (take_handled_signal(p, &signal, &action, &info, &saved_mask)) {
		restart_if_asked(frame, number, &action);
		number = PROC_NO_CALL; /* only the first handler's frame holds the call */
		if (!is_user_code_address(action.handler) ||
		    !write_frame(p, frame, signal, &action, &info, saved_mask)) {
			force_sigsegv(p);
			return;
		}
	}
}

void proc_restore_mask(struct process *p)
{
	if (!p->restore_mask)
		return;
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	p->restore_mask = false;
	proc_set_blocked_locked(p, p->saved_mask);
	spin_unlock_irqrestore(&proc_lock, irq);
}

/* ---- Synchronous faults --------------------------------------------------------- */

/* Linux's si_code for a floating-point exception's unmasked flags
 * (invalid, then divide by zero, overflow, underflow or denormal, precision;
 * fpu__exception_code's order). */
static int float_code(uint32_t flags)
{
	if (flags & 0x01)
		return FPE_FLTINV;
	if (flags & 0x04)
		return FPE_FLTDIV;
	if (flags & 0x08)
		return FPE_FLTOVF;
	if (flags & 0x12)
		return FPE_FLTUND;
	if (flags & 0x20)
		return FPE_FLTRES;
	return SI_KERNEL;
}

/* A user #DB: a single step (TRAP_TRACE) or int1 (TRAP_BRKPT), as Linux
 * tells them; DR6 is cleared for the next one.  No hardware breakpoint is
 * ever set.  Interrupts are still off: DR6 is this CPU's, the one that
 * trapped. */
static int debug_code(void)
{
	uint64_t status = read_dr6();
	write_dr6(DR6_CLEAR);
	return status & DR6_SINGLE_STEP ? TRAP_TRACE : TRAP_BRKPT;
}

/* The si_code of an exception other than a page fault or int3 (which
 * Linux reports as SI_KERNEL).  The thread's x87 and SSE registers are
 * still its own here: the kernel never uses them. */
static int exception_code(uint64_t vector)
{
	switch (vector) {
	case TRAP_DIVIDE_ERROR: return FPE_INTDIV;
	case TRAP_INVALID_OPCODE: return ILL_ILLOPN;
	case TRAP_SIMD_FLOATING_POINT: return float_code(fpu_unmasked_simd_exceptions());
	case TRAP_X87_FLOATING_POINT: return float_code(fpu_unmasked_x87_exceptions());
	case TRAP_DEBUG: return debug_code();
	default: return SI_KERNEL;
	}
}

/* What a fault's handler is told, as Linux tells it: for a page fault the
 * address touched (SIGBUS: a mapped file could not give it; SIGSEGV: not
 * mapped, or not so, where the kernel's half always reads as a protection
 * fault whatever its page tables hold); for int3 nothing; for the others
 * their code and the instruction that raised them. */
static struct proc_siginfo fault_info(int signal, const struct trap_frame *frame, uint64_t address)
{
	if (frame->vector == TRAP_BREAKPOINT)
		return (struct proc_siginfo){.code = SI_KERNEL};
	if (frame->vector != TRAP_PAGE_FAULT)
		return (struct proc_siginfo){.code = exception_code(frame->vector),
					     .address = frame->rip};
	if (signal == SIGBUS)
		return (struct proc_siginfo){.code = BUS_ADRERR, .address = address};
	bool kernel_half = address >= USER_SPACE_END;
	bool protection = kernel_half || (frame->error_code & PAGE_FAULT_PROTECTION);
	return (struct proc_siginfo){.code = protection ? SEGV_ACCERR : SEGV_MAPERR,
				     .address = address};
}

bool proc_signal_fault(struct process *p, int signal, const struct trap_frame *frame,
		       uint64_t address)
{
	struct proc_siginfo info = fault_info(signal, frame, address);
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	bool handled = proc_force_signal_locked(p, signal, &info, false);
	spin_unlock_irqrestore(&proc_lock, irq);
	return handled;
}

/* ---- Return from a handler -------------------------------------------------------- */

static uint32_t mxcsr_valid_bits(void)
{
	static uint32_t valid;
	if (!valid) {
		struct fpu_state state;
		fpu_save(&state);
		uint32_t mask;
		memcpy(&mask, state.bytes + FXSAVE_MXCSR_MASK, sizeof mask);
		__atomic_store_n(&valid, mask ? mask : 0xffbfu, __ATOMIC_RELAXED);
	}
	return valid;
}

/* The FPU state a handler's frame names: read once, MXCSR's reserved bits
 * cleared (FXRSTOR would fault on them in the kernel).  0: the clean state,
 * as Linux. */
static bool read_fpstate(uint64_t address, struct fpu_state *state)
{
	if (!address) {
		fpu_init_state(state);
		return true;
	}
	if (address & 15 || copy_from_user(state, (const void __user *)address, sizeof *state) < 0)
		return false;
	uint32_t mxcsr;
	memcpy(&mxcsr, state->bytes + FXSAVE_MXCSR, sizeof mxcsr);
	mxcsr &= mxcsr_valid_bits();
	memcpy(state->bytes + FXSAVE_MXCSR, &mxcsr, sizeof mxcsr);
	memset(state->bytes + FXSAVE_MXCSR_MASK, 0, sizeof mxcsr); /* ignored by FXRSTOR */
	return true;
}

static void load_registers(struct trap_frame *frame, const struct sigcontext_user *sc)
{
	frame->r8 = sc->r8, frame->r9 = sc->r9, frame->r10 = sc->r10, frame->r11 = sc->r11;
	frame->r12 = sc->r12, frame->r13 = sc->r13, frame->r14 = sc->r14, frame->r15 = sc->r15;
	frame->rdi = sc->rdi, frame->rsi = sc->rsi, frame->rbp = sc->rbp, frame->rbx = sc->rbx;
	frame->rdx = sc->rdx, frame->rax = sc->rax, frame->rcx = sc->rcx, frame->rsp = sc->rsp;
	frame->rip = sc->rip;
	frame->rflags = (sc->eflags & RFLAGS_USER) | RFLAGS_IF | RFLAGS_FIXED;
	frame->cs = GDT_USER_CODE;
	frame->ss = GDT_USER_DATA;
}

/* The alternate stack the frame's uc_stack names comes back, checked as
 * sigaltstack checks it against sp, the stack the handler returns from (as
 * Linux does: a handler running on the stack cannot change it this way,
 * one that SS_AUTODISARM let in gets it back armed).  A refused one leaves
 * the stack as it is, as on Linux. */
static void restore_altstack(struct process *p, const struct ucontext_user *uc, uint64_t sp)
{
	struct proc_altstack wanted = {
	    .sp = uc->stack_sp, .size = uc->stack_size, .flags = (uint32_t)uc->stack_flags};
	if (proc_altstack_check(&p->altstack, &wanted, sp) == 0)
		p->altstack = wanted;
}

long proc_sigreturn(struct trap_frame *frame)
{
	struct process *p = proc_current();
	if (!p || !trap_frame_from_user(frame))
		return -EINVAL;
	struct ucontext_user uc; /* the one read of the frame */
	uint64_t at = frame->rsp - sizeof(uint64_t) + offsetof(struct rt_sigframe_user, uc);
	struct fpu_state fpu;
	if (copy_from_user(&uc, (const void __user *)at, sizeof uc) < 0 ||
	    !is_user_code_address(uc.mcontext.rip) || uc.mcontext.rsp >= USER_STACK_LAST ||
	    !read_fpstate(uc.mcontext.fpstate, &fpu)) {
		force_sigsegv(p);
		return -EFAULT;
	}
	restore_altstack(p, &uc, frame->rsp);
	load_registers(frame, &uc.mcontext);
	fpu_restore(&fpu);
	uint64_t irq = spin_lock_irqsave(&proc_lock);
	proc_set_blocked_locked(p, proc_unpack_mask(uc.sigmask));
	spin_unlock_irqrestore(&proc_lock, irq);
	p->context_restored = true;
	return -EINTR; /* not the program's: it leads the way out to proc_resume_restored */
}

bool proc_take_context_restored(void)
{
	struct process *p = proc_current();
	if (!p || !p->context_restored)
		return false;
	p->context_restored = false;
	return true;
}

__attribute__((noreturn)) void proc_resume_restored(struct trap_frame *frame)
{
	proc_return_from_call(frame, PROC_NO_CALL);
	arch_enter_user(frame); /* every register, RCX and R11 too: not SYSRET */
}
