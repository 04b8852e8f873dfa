/*
 * Signal handlers, masks and waiting: sigaction, signal, raise, sigprocmask,
 * sigpending, sigsuspend, pause and sigaltstack.  The kernel numbers signals, sets and
 * flags Linux's way, and it is given one handler for every signal a program
 * catches: run_program_handler, which names the signal newlib's way and
 * calls the program's own handler, kept here.  The kernel returns from it
 * through ms_return_from_signal (rt_sigreturn), given as SA_RESTORER.
 *
 * newlib's libc.a has a signal() and raise() of its own that call handlers
 * in the process without the kernel; these replace them (the glue is linked
 * before libc.a).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "internal.h"

#define LINUX_SIGNALS 64 /* Linux's signals are 1..64, bit n - 1 of a mask */

#define LINUX_SA_NOCLDSTOP 0x00000001UL
#define LINUX_SA_SIGINFO   0x00000004UL
#define LINUX_SA_RESTORER  0x04000000UL
#define LINUX_SA_ONSTACK   0x08000000UL
#define LINUX_SA_RESTART   0x10000000UL
#define LINUX_SA_NODEFER   0x40000000UL
#define LINUX_SA_RESETHAND 0x80000000UL

#define LINUX_SIG_BLOCK   0
#define LINUX_SIG_UNBLOCK 1
#define LINUX_SIG_SETMASK 2

#define LINUX_ENOSYS 38

#ifndef __NR_rt_sigpending
#define __NR_rt_sigpending 127
#endif
#ifndef __NR_rt_sigsuspend
#define __NR_rt_sigsuspend 130
#endif
#ifndef __NR_sigaltstack
#define __NR_sigaltstack 131
#endif

/* newlib's stack_t and its flags are Linux's: sigaltstack passes them
 * through, so that a bad pointer is the kernel's EFAULT. */
_Static_assert(offsetof(stack_t, ss_sp) == 0 && offsetof(stack_t, ss_flags) == 8 &&
		   offsetof(stack_t, ss_size) == 16 && sizeof(stack_t) == 24,
	       "Linux's stack_t");
_Static_assert(SS_ONSTACK == 1 && SS_DISABLE == 2 && SS_AUTODISARM == 1U << 31 &&
		   MINSIGSTKSZ == 2048,
	       "Linux's SS_ flags and MINSIGSTKSZ");

/* The kernel's struct sigaction (Linux x86_64). */
struct kernel_sigaction {
	unsigned long handler;
	unsigned long flags;
	unsigned long restorer;
	unsigned long mask;
};

/* The start of the kernel's siginfo (Linux x86_64, 128 bytes in all): a
 * signal sent by kill, sigqueue or a timer has its value at offset 24. */
struct kernel_siginfo {
	int32_t signo;
	int32_t errno_value;
	int32_t code;
	int32_t pad;
	int32_t pid;
	uint32_t uid;
	union sigval value;
};

static const struct {
	int newlib_flag;
	unsigned long linux_flag;
} flags[] = {
    {SA_NOCLDSTOP, LINUX_SA_NOCLDSTOP}, {SA_SIGINFO, LINUX_SA_SIGINFO},
    {SA_ONSTACK, LINUX_SA_ONSTACK},     {SA_RESTART, LINUX_SA_RESTART},
    {SA_NODEFER, LINUX_SA_NODEFER},     {SA_RESETHAND, LINUX_SA_RESETHAND},
};

/* Linux's si_code values for a signal a process sent, and newlib's. */
static const struct {
	int linux_code;
	int newlib_code;
} codes[] = {
    {0, SI_USER},   {-1, SI_QUEUE},   {-2, SI_TIMER},
    {-3, SI_MESGQ}, {-4, SI_ASYNCIO}, {-6, SI_USER} /* tkill */,
};

#define COUNT(array) (sizeof(array) / sizeof((array)[0]))

/* The program's action for each signal, by the kernel's number (the one
 * run_program_handler is called with). */
static struct sigaction program_actions[LINUX_SIGNALS + 1];

/* Where the kernel returns from run_program_handler: rt_sigreturn (15). */
void ms_return_from_signal(void);
__asm__(".text\n"
	".globl ms_return_from_signal\n"
	".type ms_return_from_signal, @function\n"
	"ms_return_from_signal:\n"
	"\tmov $15, %eax\n"
	"\tsyscall\n"
	".size ms_return_from_signal, . - ms_return_from_signal\n");

static bool flags_to_linux(int newlib_flags, unsigned long *linux_flags)
{
	*linux_flags = 0;
	for (unsigned i = 0; i < COUNT(flags); i++)
		if (newlib_flags & flags[i].newlib_flag) {
			*linux_flags |= flags[i].linux_flag;
			newlib_flags &= ~flags[i].newlib_flag;
		}
	return newlib_flags == 0;
}

static int flags_from_linux(unsigned long linux_flags)
{
	int newlib_flags = 0;
	for (unsigned i = 0; i < COUNT(flags); i++)
		if (linux_flags & flags[i].linux_flag)
			newlib_flags |= flags[i].newlib_flag;
	return newlib_flags;
}

/* A newlib set as a Linux mask: each signal's bit moves to its Linux
 * number's; one Linux does not have is left out. */
static unsigned long mask_to_linux(sigset_t set)
{
	unsigned long mask = 0;
	for (int sig = 1; sig < (int)(8 * sizeof set); sig++) {
		if (!(set & (1UL << sig)))
			continue;
		int linux_sig = signal_to_linux(sig);
		if (linux_sig >= 1 && linux_sig <= LINUX_SIGNALS)
			mask |= 1UL << (linux_sig - 1);
	}
	return mask;
}

static sigset_t mask_from_linux(unsigned long mask)
{
	sigset_t set = 0;
	for (int linux_sig = 1; linux_sig <= LINUX_SIGNALS; linux_sig++) {
		if (!(mask & (1UL << (linux_sig - 1))))
			continue;
		int sig = signal_from_linux(linux_sig);
		if (sig >= 1 && sig < (int)(8 * sizeof set))
			set |= 1UL << sig;
	}
	return set;
}

static int code_from_linux(int linux_code)
{
	for (unsigned i = 0; i < COUNT(codes); i++)
		if (codes[i].linux_code == linux_code)
			return codes[i].newlib_code;
	return linux_code; /* the kernel's own reasons (CLD_EXITED, SEGV_MAPERR...) */
}

static void siginfo_from_linux(const struct kernel_siginfo *in, int sig, siginfo_t *out)
{
	*out = (siginfo_t){0};
	out->si_signo = sig;
	if (!in)
		return;
	out->si_code = code_from_linux(in->code);
	out->si_value = in->value;
}

static bool is_function(_sig_func_ptr handler)
{
	return handler != SIG_DFL && handler != SIG_IGN && handler != SIG_ERR;
}

/* What the kernel calls for every signal a program catches.  The kernel
 * resets its action for SA_RESETHAND as it calls this; the program's entry
 * goes back to SIG_DFL with it. */
static void run_program_handler(int linux_sig, struct kernel_siginfo *info, void *context)
{
	if (linux_sig < 1 || linux_sig > LINUX_SIGNALS)
		return;
	struct sigaction action = program_actions[linux_sig];
	if (action.sa_flags & SA_RESETHAND)
		program_actions[linux_sig] = (struct sigaction){.sa_handler = SIG_DFL};
	if (!is_function(action.sa_handler))
		return; /* the action changed while the signal was on its way */
	int saved_errno = errno;
	int sig = signal_from_linux(linux_sig);
	if (action.sa_flags & SA_SIGINFO) {
		siginfo_t newlib_info;
		siginfo_from_linux(info, sig, &newlib_info);
		action.sa_sigaction(sig, &newlib_info, context);
	} else {
		action.sa_handler(sig);
	}
	errno = saved_errno;
}

static bool action_to_kernel(const struct sigaction *action, struct kernel_sigaction *out)
{
	*out = (struct kernel_sigaction){0};
	if (!flags_to_linux(action->sa_flags, &out->flags))
		return false;
	out->mask = mask_to_linux(action->sa_mask);
	if (action->sa_handler == SIG_DFL || action->sa_handler == SIG_IGN) {
		out->handler = (unsigned long)action->sa_handler;
		return true;
	}
	if (action->sa_handler == SIG_ERR)
		return false;
	out->handler = (unsigned long)run_program_handler;
	out->flags |= LINUX_SA_RESTORER;
	out->restorer = (unsigned long)ms_return_from_signal;
	return true;
}

/* The kernel's action in newlib's terms: the program's handler rather than
 * run_program_handler. */
static void action_from_kernel(const struct kernel_sigaction *in, const struct sigaction *program,
			       struct sigaction *out)
{
	*out = (struct sigaction){0};
	if (in->handler == (unsigned long)run_program_handler)
		out->sa_handler = program->sa_handler; /* sa_sigaction shares its place */
	else
		out->sa_handler = (_sig_func_ptr)in->handler;
	out->sa_flags = flags_from_linux(in->flags);
	out->sa_mask = mask_from_linux(in->mask);
}

/* The program's entry changes before the kernel's, so that a signal the
 * kernel hands over as soon as it has the new action finds its handler;
 * it changes back when the kernel refuses. */
int sigaction(int sig, const struct sigaction *action, struct sigaction *old)
{
	struct kernel_sigaction in, out = {0};
	int linux_sig = signal_to_linux(sig);
	if (linux_sig < 1 || linux_sig > LINUX_SIGNALS ||
	    (action && !action_to_kernel(action, &in))) {
		errno = EINVAL;
		return -1;
	}
	struct sigaction previous = program_actions[linux_sig];
	if (action)
		program_actions[linux_sig] = *action;
	long result = sys_result(ms_syscall6(__NR_rt_sigaction, linux_sig, action ? (long)&in : 0,
					     (long)&out, sizeof in.mask, 0, 0));
	if (result < 0) {
		program_actions[linux_sig] = previous;
		return -1;
	}
	if (old)
		action_from_kernel(&out, &previous, old);
	return 0;
}

/* BSD's and glibc's signal(): the handler stays, interrupted calls restart. */
_sig_func_ptr signal(int sig, _sig_func_ptr handler)
{
	struct sigaction action = {.sa_handler = handler, .sa_flags = SA_RESTART}, old;
	if (sigaction(sig, &action, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* Handled before it returns when the signal is not blocked: the kernel
 * delivers a signal a process sends itself on the way back from kill. */
int raise(int sig)
{
	return kill(getpid(), sig);
}

static int how_to_linux(int how)
{
	switch (how) {
	case SIG_BLOCK: return LINUX_SIG_BLOCK;
	case SIG_UNBLOCK: return LINUX_SIG_UNBLOCK;
	case SIG_SETMASK: return LINUX_SIG_SETMASK;
	default: return -1;
	}
}

/* A kernel without signal masks (ENOSYS) blocks nothing: the mask is empty
 * and stays so. */
int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int linux_how = how_to_linux(how);
	if (set && linux_how < 0) {
		errno = EINVAL;
		return -1;
	}
	unsigned long in = set ? mask_to_linux(*set) : 0, out = 0;
	long result = ms_syscall6(__NR_rt_sigprocmask, set ? linux_how : LINUX_SIG_BLOCK,
				  set ? (long)&in : 0, old ? (long)&out : 0, sizeof in, 0, 0);
	if (result == -LINUX_ENOSYS)
		result = 0;
	if (sys_result(result) < 0)
		return -1;
	if (old)
		*old = mask_from_linux(out);
	return 0;
}

int sigpending(sigset_t *set)
{
	unsigned long pending = 0;
	if (sys_result(ms_syscall3(__NR_rt_sigpending, (long)&pending, sizeof pending, 0)) < 0)
		return -1;
	*set = mask_from_linux(pending);
	return 0;
}

/* Always -1: EINTR once a handler has run. */
int sigsuspend(const sigset_t *set)
{
	unsigned long mask = mask_to_linux(*set);
	return (int)sys_result(ms_syscall3(__NR_rt_sigsuspend, (long)&mask, sizeof mask, 0));
}

/* sigsuspend with the mask the caller already has. */
int pause(void)
{
	unsigned long mask = 0;
	long result =
	    ms_syscall6(__NR_rt_sigprocmask, LINUX_SIG_BLOCK, 0, (long)&mask, sizeof mask, 0, 0);
	if (result < 0 && result != -LINUX_ENOSYS)
		return (int)sys_result(result);
	return (int)sys_result(ms_syscall3(__NR_rt_sigsuspend, (long)&mask, sizeof mask, 0));
}

int sigaltstack(const stack_t *restrict stack, stack_t *restrict old)
{
	return (int)sys_result(ms_syscall3(__NR_sigaltstack, (long)stack, (long)old, 0));
}
