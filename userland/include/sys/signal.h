/*
 * newlib's <sys/signal.h> with the struct sigaction of a system that runs
 * signal handlers.  newlib built for a bare target gives struct sigaction
 * sa_handler, sa_mask and sa_flags with SA_NOCLDSTOP only; the kernel runs
 * handlers as Linux does, so programs get sa_sigaction and the usual SA_
 * flags here, numbered newlib's way (its RTEMS values where it has them; the
 * C library turns them into Linux's).  The fields keep newlib's order.
 *
 *     struct sigaction act = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};
 *     sigemptyset(&act.sa_mask);
 *     sigaction(SIGUSR1, &act, NULL);
 *
 * sigaltstack takes newlib's stack_t as it is (its layout and SS_ values
 * are Linux's); SS_AUTODISARM, which newlib lacks, is here.
 *
 * The set macros shift 1UL: newlib's (1 << sig) makes signal 31 a negative
 * int, which widens into a set that also holds every number above 31.
 */
#ifndef MICROSCOPE_SYS_SIGNAL_H_WRAPPER
#define MICROSCOPE_SYS_SIGNAL_H_WRAPPER

/* newlib's struct sigaction and its prototype, under another name. */
#define sigaction newlib_sigaction
#include_next <sys/signal.h>
#undef sigaction

#if __POSIX_VISIBLE

#define SA_SIGINFO   0x2  /* sa_sigaction(sig, info, context), not sa_handler(sig) */
#define SA_ONSTACK   0x4  /* run on the alternate signal stack */
#define SA_RESTART   0x8  /* an interrupted system call starts again */
#define SA_NODEFER   0x10 /* the signal is not blocked while its handler runs */
#define SA_RESETHAND 0x20 /* the action goes back to SIG_DFL when the handler is called */

struct sigaction {
	union {
		_sig_func_ptr sa_handler; /* SIG_DFL, SIG_IGN or a function */
#if __POSIX_VISIBLE >= 199309
		void (*sa_sigaction)(int, siginfo_t *, void *); /* with SA_SIGINFO */
#endif
	};
	sigset_t sa_mask; /* blocked as well while the handler runs */
	int sa_flags;     /* SA_ */
};

int sigaction(int, const struct sigaction *, struct sigaction *);

#endif /* __POSIX_VISIBLE */

#if __BSD_VISIBLE || __XSI_VISIBLE >= 4 || __POSIX_VISIBLE >= 200809
/* With SS_ONSTACK or 0 in sigaltstack's ss_flags: a handler that enters
 * the stack disarms it until it returns (Linux's flag and value; newlib's
 * stack_t, SS_ONSTACK, SS_DISABLE and MINSIGSTKSZ are Linux's already). */
#define SS_AUTODISARM (1U << 31)
#endif

#if __POSIX_VISIBLE

#ifdef sigaddset
#undef sigaddset
#undef sigdelset
#undef sigismember
#define sigaddset(what, sig)   (*(what) |= (1UL << (sig)), 0)
#define sigdelset(what, sig)   (*(what) &= ~(1UL << (sig)), 0)
#define sigismember(what, sig) (((*(what)) & (1UL << (sig))) != 0)
#endif

#endif /* __POSIX_VISIBLE */

#endif
