/*
 * The C library's side of signal handlers: handlers see newlib's signal
 * numbers, masks and flags convert both ways, SA_RESETHAND, signal(),
 * sigsuspend, and a handler leaves the interrupted code's floating point
 * alone.  They run on the host (Linux) too; under a kernel that refuses
 * handlers (rt_sigaction with a function: EINVAL) they skip.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/signal.h>
#include <microscope/syscall.h>

#include "usertests.h"

#define UNKNOWN_FLAG 0x1000 /* no SA_ flag of newlib's */

static volatile sig_atomic_t handled_count;
static volatile sig_atomic_t handled_signal;

static void count_signal(int sig)
{
	handled_count++;
	handled_signal = sig;
}

static void other_count_signal(int sig)
{
	handled_count += 100;
	handled_signal = sig;
}

static volatile sig_atomic_t info_signal, info_code;

static void record_siginfo(int sig, siginfo_t *info, void *context)
{
	handled_count++;
	handled_signal = sig;
	info_signal = info ? info->si_signo : -1;
	info_code = info ? info->si_code : -1;
}

static int install(int sig, void (*handler)(int), int flags)
{
	struct sigaction action = {.sa_handler = handler, .sa_flags = flags};
	sigemptyset(&action.sa_mask);
	return sigaction(sig, &action, NULL);
}

/* The kernel's struct sigaction (Linux x86_64). */
struct kernel_sigaction {
	unsigned long handler, flags, restorer, mask;
};

#define LINUX_SA_RESTORER 0x04000000UL

/* Ends the case as skipped when the kernel runs no handlers: it refuses
 * rt_sigaction with a function (EINVAL).  Asked of the kernel itself, so
 * that the C library's refusal is a failure. */
static void handlers_or_skip(void)
{
	struct kernel_sigaction probe = {.handler = (unsigned long)count_signal,
					 .flags = LINUX_SA_RESTORER,
					 .restorer = (unsigned long)count_signal},
				old = {0};
	long linux_sig = ms_signal_to_linux(SIGUSR1);
	long result = ms_syscall6(__NR_rt_sigaction, linux_sig, (long)&probe, (long)&old,
				  sizeof old.mask, 0, 0);
	if (result == -L_EINVAL) {
		t_note("the kernel runs no signal handlers (rt_sigaction with a function: EINVAL)");
		_exit(T_SKIPPED);
	}
	if (result != 0)
		t_fail("rt_sigaction with a handler: %ld", result);
	else
		ms_syscall6(__NR_rt_sigaction, linux_sig, (long)&old, 0, sizeof old.mask, 0, 0);
}

/* Does raise(SIGUSR1) run the handler before it returns, with newlib's
 * number (30; Linux's is 10), and does sigaction report the program's own
 * handler and mask back? */
void a_handler_runs_for_raise(void)
{
	handlers_or_skip();
	struct sigaction action = {.sa_handler = count_signal}, old;
	sigemptyset(&action.sa_mask);
	sigaddset(&action.sa_mask, SIGUSR2);
	if (sigaction(SIGUSR1, &action, NULL) < 0)
		t_fail("sigaction: %s", strerror(errno));
	if (raise(SIGUSR1) != 0)
		t_fail("raise: %s", strerror(errno));
	if (handled_count != 1 || handled_signal != SIGUSR1)
		t_fail("after raise: %d calls, last with %d (SIGUSR1 is %d)", (int)handled_count,
		       (int)handled_signal, SIGUSR1);
	if (sigaction(SIGUSR1, NULL, &old) < 0)
		t_fail("sigaction (reading): %s", strerror(errno));
	else if (old.sa_handler != count_signal || !sigismember(&old.sa_mask, SIGUSR2) ||
		 sigismember(&old.sa_mask, SIGUSR1))
		t_fail("the action read back: handler %p (set %p), mask %#lx",
		       (void *)old.sa_handler, (void *)count_signal, (unsigned long)old.sa_mask);
}

/* Does an SA_SIGINFO handler get newlib's number in its argument and in
 * si_signo, and SI_USER for a signal a process sent? */
void siginfo_names_the_signal_the_newlib_way(void)
{
	handlers_or_skip();
	struct sigaction action = {.sa_sigaction = record_siginfo, .sa_flags = SA_SIGINFO}, old;
	sigemptyset(&action.sa_mask);
	if (sigaction(SIGUSR2, &action, NULL) < 0)
		t_fail("sigaction: %s", strerror(errno));
	raise(SIGUSR2);
	if (handled_count != 1 || handled_signal != SIGUSR2 || info_signal != SIGUSR2)
		t_fail("%d calls, argument %d, si_signo %d (SIGUSR2 is %d)", (int)handled_count,
		       (int)handled_signal, (int)info_signal, SIGUSR2);
	if (info_code != SI_USER)
		t_fail("si_code %d, expected SI_USER (%d)", (int)info_code, SI_USER);
	if (sigaction(SIGUSR2, NULL, &old) < 0 || old.sa_sigaction != record_siginfo ||
	    !(old.sa_flags & SA_SIGINFO))
		t_fail("the action read back: %p, flags %#x", (void *)old.sa_sigaction,
		       old.sa_flags);
}

/* Does a blocked signal wait in sigpending, and run its handler once when
 * unblocked? */
void a_blocked_signal_waits_until_unblocked(void)
{
	handlers_or_skip();
	sigset_t usr1, pending, mask;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	install(SIGUSR1, count_signal, 0);
	if (sigprocmask(SIG_BLOCK, &usr1, NULL) < 0)
		t_fail("sigprocmask(SIG_BLOCK): %s", strerror(errno));
	sigprocmask(SIG_BLOCK, NULL, &mask);
	if (!sigismember(&mask, SIGUSR1) || sigismember(&mask, SIGUSR2))
		t_fail("the mask read back: %#lx", (unsigned long)mask);
	raise(SIGUSR1);
	raise(SIGUSR1);
	if (handled_count != 0)
		t_fail("the handler ran %d times while the signal was blocked", (int)handled_count);
	if (sigpending(&pending) < 0 || !sigismember(&pending, SIGUSR1))
		t_fail("SIGUSR1 is not pending: %#lx (%s)", (unsigned long)pending,
		       strerror(errno));
	sigprocmask(SIG_UNBLOCK, &usr1, NULL);
	if (handled_count != 1 || handled_signal != SIGUSR1)
		t_fail("after unblocking: %d calls with %d", (int)handled_count,
		       (int)handled_signal);
	if (sigpending(&pending) < 0 || sigismember(&pending, SIGUSR1))
		t_fail("SIGUSR1 still pending: %#lx", (unsigned long)pending);
}

static void raise_twice_with_resethand(void *unused)
{
	handled_count = 0;
	install(SIGUSR1, count_signal, SA_RESETHAND);
	raise(SIGUSR1);
	if (handled_count != 1)
		_exit(2);
	raise(SIGUSR1); /* the default action now: the end */
	_exit(3);
}

/* Does SA_RESETHAND run the handler once and then leave SIG_DFL? */
void resethand_runs_the_handler_once(void)
{
	handlers_or_skip();
	struct sigaction old;
	install(SIGUSR1, count_signal, SA_RESETHAND);
	raise(SIGUSR1);
	if (handled_count != 1)
		t_fail("the handler ran %d times", (int)handled_count);
	if (sigaction(SIGUSR1, NULL, &old) < 0 || old.sa_handler != SIG_DFL)
		t_fail("the action after the handler: %p, not SIG_DFL", (void *)old.sa_handler);
	t_expect_signal("the second raise", raise_twice_with_resethand, NULL, SIGUSR1);
}

/* Does signal() give back the previous handler, and is the new one run? */
void signal_returns_the_previous_handler(void)
{
	handlers_or_skip();
	_sig_func_ptr first = signal(SIGUSR1, count_signal);
	_sig_func_ptr second = signal(SIGUSR1, other_count_signal);
	if (first != SIG_DFL || second != count_signal)
		t_fail("signal returned %p then %p (expected SIG_DFL then %p)", (void *)first,
		       (void *)second, (void *)count_signal);
	raise(SIGUSR1);
	if (handled_count != 100 || handled_signal != SIGUSR1)
		t_fail("after raise: count %d, signal %d", (int)handled_count, (int)handled_signal);
	if (signal(SIGUSR1, SIG_IGN) != other_count_signal)
		t_fail("signal(SIG_IGN) did not return the handler it replaced");
	raise(SIGUSR1);
	if (handled_count != 100)
		t_fail("an ignored signal ran a handler");
	if (signal(SIGEMT, SIG_IGN) != SIG_ERR || errno != EINVAL)
		t_fail("signal(SIGEMT), which Linux lacks, was not SIG_ERR with EINVAL");
}

/* Is a flag the C library does not know refused with EINVAL, the action
 * left as it was?  (Runs under any kernel: the library refuses it.) */
void sigaction_refuses_an_unknown_flag(void)
{
	struct sigaction action = {.sa_handler = SIG_IGN, .sa_flags = UNKNOWN_FLAG}, old;
	sigemptyset(&action.sa_mask);
	errno = 0;
	if (sigaction(SIGUSR1, &action, NULL) != -1 || errno != EINVAL)
		t_fail("flag %#x: not refused with EINVAL (%s)", UNKNOWN_FLAG, strerror(errno));
	action.sa_handler = count_signal;
	errno = 0;
	if (sigaction(SIGUSR1, &action, NULL) != -1 || errno != EINVAL)
		t_fail("flag %#x with a handler: not refused with EINVAL (%s)", UNKNOWN_FLAG,
		       strerror(errno));
	if (sigaction(SIGUSR1, NULL, &old) < 0 || old.sa_handler != SIG_DFL)
		t_fail("the refused action took effect: %p", (void *)old.sa_handler);
}

#define MXCSR_ROUND_DOWN 0x3f80u /* the default (0x1f80) rounding toward -infinity */
#define MXCSR_ROUND_ZERO 0x7f80u

/* Computes with doubles and leaves other values in every SSE register and
 * another rounding mode in MXCSR. */
static void clobber_floating_point(int sig)
{
	volatile double x = sig;
	for (int i = 0; i < 16; i++)
		x = x * 1.75 + 0.5;
	unsigned mxcsr = MXCSR_ROUND_ZERO;
	__asm__ volatile("ldmxcsr %0\n\t"
			 "pcmpeqd %%xmm0, %%xmm0\n\tpcmpeqd %%xmm1, %%xmm1\n\t"
			 "pcmpeqd %%xmm2, %%xmm2\n\tpcmpeqd %%xmm3, %%xmm3\n\t"
			 "pcmpeqd %%xmm4, %%xmm4\n\tpcmpeqd %%xmm5, %%xmm5\n\t"
			 "pcmpeqd %%xmm6, %%xmm6\n\tpcmpeqd %%xmm7, %%xmm7\n\t"
			 "pcmpeqd %%xmm8, %%xmm8\n\tpcmpeqd %%xmm9, %%xmm9\n\t"
			 "pcmpeqd %%xmm10, %%xmm10\n\tpcmpeqd %%xmm11, %%xmm11\n\t"
			 "pcmpeqd %%xmm12, %%xmm12\n\tpcmpeqd %%xmm13, %%xmm13\n\t"
			 "pcmpeqd %%xmm14, %%xmm14\n\tpcmpeqd %%xmm15, %%xmm15\n\t"
			 :
			 : "m"(mxcsr)
			 : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",
			   "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
	handled_count++;
}

/* Do the interrupted code's SSE registers and MXCSR come back from a
 * handler that changed them all?  The signal is sent by a kill system call
 * made with values held in registers across it, so it is handled on the
 * way back from that call, between the loads and the stores. */
void a_handler_keeps_the_interrupted_floating_point(void)
{
	handlers_or_skip();
	static const double values[4] = {1.5, -2.25, 3.0e100, 0.1};
	double after[4] = {0};
	unsigned mxcsr_set = MXCSR_ROUND_DOWN, mxcsr_after = 0, mxcsr_default = 0x1f80;
	install(SIGUSR1, clobber_floating_point, 0);
	long result = __NR_kill;
	__asm__ volatile("ldmxcsr %[set]\n\t"
			 "movsd 0(%[in]), %%xmm0\n\tmovsd 8(%[in]), %%xmm5\n\t"
			 "movsd 16(%[in]), %%xmm9\n\tmovsd 24(%[in]), %%xmm15\n\t"
			 "syscall\n\t"
			 "movsd %%xmm0, 0(%[out])\n\tmovsd %%xmm5, 8(%[out])\n\t"
			 "movsd %%xmm9, 16(%[out])\n\tmovsd %%xmm15, 24(%[out])\n\t"
			 "stmxcsr %[got]\n\t"
			 "ldmxcsr %[restore]"
			 : "+a"(result), [got] "=m"(mxcsr_after)
			 : "D"((long)getpid()),
			   "S"((long)ms_signal_to_linux(SIGUSR1)), [in] "r"(values),
			   [out] "r"(after), [set] "m"(mxcsr_set), [restore] "m"(mxcsr_default)
			 : "rcx", "r11", "memory", "xmm0", "xmm5", "xmm9", "xmm15");
	if (result != 0)
		t_fail("kill: %ld", result);
	if (handled_count != 1)
		t_fail("the handler ran %d times", (int)handled_count);
	for (int i = 0; i < 4; i++)
		if (memcmp(&after[i], &values[i], sizeof values[i]) != 0)
			t_fail("register %d: %g became %g", i, values[i], after[i]);
	if (mxcsr_after != MXCSR_ROUND_DOWN)
		t_fail("MXCSR %#x became %#x", MXCSR_ROUND_DOWN, mxcsr_after);
}

/* Does sigsuspend wait with SIGUSR1 unblocked until a child sends it, run
 * the handler and give the mask back?  SIGUSR1 is blocked before the fork,
 * so the signal waits for sigsuspend however soon the child sends it. */
void sigsuspend_waits_for_a_childs_signal(void)
{
	handlers_or_skip();
	sigset_t usr1, waiting, after;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	install(SIGUSR1, count_signal, 0);
	sigprocmask(SIG_BLOCK, &usr1, &waiting);
	sigdelset(&waiting, SIGUSR1);
	pid_t child = fork();
	if (child == 0)
		_exit(kill(getppid(), SIGUSR1) == 0 ? 0 : 1);
	if (child < 0) {
		t_fail("fork: %s", strerror(errno));
		return;
	}
	errno = 0;
	int result = sigsuspend(&waiting);
	if (result != -1 || errno != EINTR)
		t_fail("sigsuspend gave %d (%s), expected -1 with EINTR", result, strerror(errno));
	if (handled_count != 1 || handled_signal != SIGUSR1)
		t_fail("after sigsuspend: %d calls with %d", (int)handled_count,
		       (int)handled_signal);
	sigprocmask(SIG_BLOCK, NULL, &after);
	if (!sigismember(&after, SIGUSR1))
		t_fail("sigsuspend did not give the mask back: %#lx", (unsigned long)after);
	int status;
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		t_fail("the child: status %#x", status);
}
