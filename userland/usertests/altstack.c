/*
 * usertests for the alternate signal stack (sigaltstack, SA_ONSTACK), the
 * way a program catches its own stack overflow.  They go through the C
 * library (newlib's stack_t, which is Linux's) and run on the host (Linux)
 * too, which checks that the kernel behaves as Linux does; the one case
 * where microScope differs on purpose (an unwritable old_ss) is left out
 * there.  A handler records what it sees in globals and the case checks
 * them after it; a case that may end a process runs it in a child whose
 * exit code names the step that went wrong.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "usertests.h"

/* Room for Linux's frames too: with AVX-512 state they take about 3 KiB. */
#define STACK_BYTES (64 * 1024)
#define BAD_POINTER ((void *)0x10)

static uint8_t alternate[STACK_BYTES] __attribute__((aligned(16)));
static uint8_t other_alternate[STACK_BYTES] __attribute__((aligned(16)));

/* The start of the kernel's ucontext (Linux x86_64) a handler's third
 * argument points at: uc_flags, uc_link, then uc_stack. */
struct kernel_ucontext_head {
	unsigned long flags;
	unsigned long link;
	stack_t stack;
};

static int set_altstack(void *sp, size_t size, int flags)
{
	stack_t stack = {.ss_sp = sp, .ss_flags = flags, .ss_size = size};
	return sigaltstack(&stack, NULL);
}

static stack_t current_altstack(void)
{
	stack_t now;
	memset(&now, 0xa5, sizeof now);
	if (sigaltstack(NULL, &now) < 0)
		t_fail("sigaltstack(NULL, &old): %s", strerror(errno));
	return now;
}

static bool same_stack(stack_t got, void *sp, size_t size, int flags)
{
	return got.ss_sp == sp && got.ss_size == size && got.ss_flags == flags;
}

static void expect_altstack(const char *what, void *sp, size_t size, int flags)
{
	stack_t now = current_altstack();
	if (!same_stack(now, sp, size, flags))
		t_fail("%s: {%p, %#x, %zu}, expected {%p, %#x, %zu}", what, now.ss_sp, now.ss_flags,
		       now.ss_size, sp, flags, size);
}

static void expect_success(const char *what, int result)
{
	if (result != 0)
		t_fail("%s: %d (%s)", what, result, strerror(errno));
}

static void expect_error(const char *what, int result, int error)
{
	if (result != -1 || errno != error)
		t_fail("%s: %d (%s), expected -1 with %s", what, result, strerror(errno),
		       strerror(error));
}

static bool within(const uint8_t *stack, uintptr_t address)
{
	return address >= (uintptr_t)stack && address < (uintptr_t)stack + STACK_BYTES;
}

static void install(int sig, void (*handler)(int, siginfo_t *, void *), int flags)
{
	struct sigaction action = {.sa_sigaction = handler, .sa_flags = SA_SIGINFO | flags};
	sigemptyset(&action.sa_mask);
	if (sigaction(sig, &action, NULL) < 0)
		t_fail("sigaction(%d, flags %#x): %s", sig, flags, strerror(errno));
}

/* ---- Catching a stack overflow ------------------------------------------------- */

static jmp_buf after_overflow;
static volatile uintptr_t overflow_handler_local;
static volatile int overflow_handler_flags;

static void leave_the_overflow(int sig, siginfo_t *info, void *context)
{
	int local;
	stack_t now;
	overflow_handler_local = (uintptr_t)&local;
	overflow_handler_flags = sigaltstack(NULL, &now) == 0 ? now.ss_flags : -1;
	longjmp(after_overflow, sig);
}

/* Recurses without end with a SIGSEGV handler installed with flags; exits
 * 0 when the handler ran on the alternate stack and the program went on. */
static void overflow_the_stack(void *flags)
{
	if (set_altstack(alternate, sizeof alternate, 0) < 0)
		_exit(1);
	install(SIGSEGV, leave_the_overflow, (int)(intptr_t)flags);
	if (setjmp(after_overflow) == 0) {
		t_recurse_until_the_stack_ends(0);
		_exit(2);
	}
	sigset_t segv;
	sigemptyset(&segv);
	sigaddset(&segv, SIGSEGV);
	sigprocmask(SIG_UNBLOCK, &segv, NULL); /* longjmp left the handler's mask */
	if (!within(alternate, overflow_handler_local))
		_exit(3);
	if (overflow_handler_flags != SS_ONSTACK)
		_exit(4);
	stack_t now;
	if (sigaltstack(NULL, &now) < 0 || now.ss_flags != 0)
		_exit(5); /* back on the program's stack: armed, not on it */
	_exit(0);
}

/* Can a program catch its own stack overflow?  With SA_ONSTACK the SIGSEGV
 * handler runs on the alternate stack (its local is there, sigaltstack says
 * SS_ONSTACK) and longjmp takes the program on; without, the frame cannot be
 * written on the exhausted stack and SIGSEGV ends it. */
void a_stack_overflow_is_caught_on_the_alternate_stack(void)
{
	int status = t_run_child(overflow_the_stack, (void *)(intptr_t)SA_ONSTACK);
	if (status != -1 && status != 0)
		t_fail("with SA_ONSTACK: status %#x (exit code: the step that went wrong)", status);
	t_expect_signal("the same overflow without SA_ONSTACK", overflow_the_stack, (void *)0,
			SIGSEGV);
}

/* ---- The call ------------------------------------------------------------------ */

/* Does sigaltstack report and refuse as Linux does, each refusal leaving
 * the stack as it was?  No address is checked when the stack is set (a
 * kernel address, a range that wraps): only a frame written there is. */
void sigaltstack_reports_and_refuses_as_linux(void)
{
	expect_altstack("at first", NULL, 0, SS_DISABLE);
	expect_success("a stack", set_altstack(alternate, sizeof alternate, 0));
	expect_altstack("set", alternate, sizeof alternate, 0);
	expect_error("flags 4", set_altstack(other_alternate, STACK_BYTES, 4), EINVAL);
	expect_error("SS_ONSTACK | SS_DISABLE", set_altstack(other_alternate, STACK_BYTES, 3),
		     EINVAL);
	expect_error("flags -1", set_altstack(other_alternate, STACK_BYTES, -1), EINVAL);
	expect_error("MINSIGSTKSZ - 1", set_altstack(other_alternate, MINSIGSTKSZ - 1, 0), ENOMEM);
	expect_error("size 0", set_altstack(other_alternate, 0, SS_AUTODISARM), ENOMEM);
	expect_error("an unreadable ss", sigaltstack(BAD_POINTER, NULL), EFAULT);
	expect_error("an unwritable old_ss", sigaltstack(NULL, BAD_POINTER), EFAULT);
	expect_altstack("unchanged by the refusals", alternate, sizeof alternate, 0);
	expect_success("MINSIGSTKSZ", set_altstack(other_alternate, MINSIGSTKSZ, 0));
	expect_altstack("MINSIGSTKSZ", other_alternate, MINSIGSTKSZ, 0);
	expect_success("SS_ONSTACK as the flag", set_altstack(alternate, STACK_BYTES, SS_ONSTACK));
	expect_altstack("SS_ONSTACK reads as 0 off the stack", alternate, STACK_BYTES, 0);
	expect_success("SS_AUTODISARM", set_altstack(alternate, STACK_BYTES, SS_AUTODISARM));
	expect_altstack("SS_AUTODISARM", alternate, STACK_BYTES, SS_AUTODISARM);
	expect_success("SS_DISABLE", set_altstack(alternate, STACK_BYTES, SS_DISABLE));
	expect_altstack("disabled: no address, no size", NULL, 0, SS_DISABLE);
	expect_success("SS_DISABLE | SS_AUTODISARM, size 1",
		       set_altstack(alternate, 1, SS_DISABLE | SS_AUTODISARM));
	expect_altstack("SS_DISABLE | SS_AUTODISARM", NULL, 0, SS_DISABLE | SS_AUTODISARM);
	void *kernel = (void *)0xffffffff80000000UL;
	expect_success("a kernel address", set_altstack(kernel, STACK_BYTES, 0));
	expect_altstack("a kernel address", kernel, STACK_BYTES, 0);
	void *near_the_top = (void *)0xfffffffffffff000UL;
	expect_success("a size that wraps", set_altstack(near_the_top, SIZE_MAX / 2, 0));
	expect_altstack("a size that wraps", near_the_top, SIZE_MAX / 2, 0);
	expect_success("off again", set_altstack(NULL, 0, SS_DISABLE));
}

/* Linux sets the new stack and then fails with EFAULT when old_ss cannot
 * be written; microScope writes old_ss first and changes nothing.  (Not
 * run on the host.) */
void sigaltstack_with_an_unwritable_old_ss_changes_nothing(void)
{
	expect_success("a stack", set_altstack(alternate, sizeof alternate, 0));
	stack_t other = {.ss_sp = other_alternate, .ss_size = STACK_BYTES};
	long result = ms_syscall3(__NR_sigaltstack, (long)&other, (long)BAD_POINTER, 0);
	if (result != -L_EFAULT)
		t_fail("sigaltstack(ss, bad old_ss): %ld, expected -EFAULT", result);
	expect_altstack("unchanged", alternate, sizeof alternate, 0);
}

/* ---- A handler on the alternate stack ------------------------------------------ */

struct handler_view {
	uintptr_t local, context;
	stack_t uc_stack, reported;
	int change_error, disable_error; /* 0: the call succeeded */
	uintptr_t nested_local;
};

static struct handler_view view;

static int error_of(int result)
{
	return result == 0 ? 0 : errno;
}

static void note_nested(int sig, siginfo_t *info, void *context)
{
	int local;
	view.nested_local = (uintptr_t)&local;
}

/* Records where it runs and what it is told, raises SIGUSR2 (a nested
 * handler), then tries to change and to disable the stack. */
static void look_at_the_stack(int sig, siginfo_t *info, void *context)
{
	int local;
	view.local = (uintptr_t)&local;
	view.context = (uintptr_t)context;
	view.uc_stack = ((struct kernel_ucontext_head *)context)->stack;
	sigaltstack(NULL, &view.reported);
	raise(SIGUSR2);
	view.change_error = error_of(set_altstack(other_alternate, STACK_BYTES, 0));
	view.disable_error = error_of(set_altstack(NULL, 0, SS_DISABLE));
}

static void raise_and_look(int flags)
{
	memset(&view, 0, sizeof view);
	install(SIGUSR1, look_at_the_stack, flags);
	raise(SIGUSR1);
}

/* Does an SA_ONSTACK handler get its frame at the top of the alternate
 * stack (16-byte aligned: the ucontext at a multiple of 16), with uc_stack
 * saying which stack it is, sigaltstack saying SS_ONSTACK and refusing to
 * change or disable it (EPERM); does a nested SA_ONSTACK signal go below it
 * on the same stack; and does a handler without SA_ONSTACK stay on the
 * program's stack, free to change it (until rt_sigreturn sets the one its
 * uc_stack names)? */
void a_handler_runs_on_the_alternate_stack(void)
{
	struct sigaction old;
	expect_success("a stack", set_altstack(alternate, sizeof alternate, 0));
	install(SIGUSR2, note_nested, SA_ONSTACK);
	raise_and_look(SA_ONSTACK);
	if (sigaction(SIGUSR1, NULL, &old) < 0 || !(old.sa_flags & SA_ONSTACK))
		t_fail("SA_ONSTACK not read back: flags %#x", old.sa_flags);
	if (!within(alternate, view.local) || !within(alternate, view.context))
		t_fail("the handler's local %#lx, its ucontext %#lx: not on the alternate stack",
		       (unsigned long)view.local, (unsigned long)view.context);
	if (view.context % 16 != 0)
		t_fail("the ucontext at %#lx, not 16-byte aligned", (unsigned long)view.context);
	if (!same_stack(view.uc_stack, alternate, STACK_BYTES, 0))
		t_fail("uc_stack {%p, %#x, %zu}", view.uc_stack.ss_sp, view.uc_stack.ss_flags,
		       view.uc_stack.ss_size);
	if (!same_stack(view.reported, alternate, STACK_BYTES, SS_ONSTACK))
		t_fail("sigaltstack in the handler: flags %#x", view.reported.ss_flags);
	if (view.change_error != EPERM || view.disable_error != EPERM)
		t_fail("changing it on it: %s; disabling it: %s (expected EPERM)",
		       strerror(view.change_error), strerror(view.disable_error));
	if (!within(alternate, view.nested_local) || view.nested_local >= view.local)
		t_fail("the nested handler's local %#lx: not below the first's %#lx on the stack",
		       (unsigned long)view.nested_local, (unsigned long)view.local);
	expect_altstack("after the handler", alternate, STACK_BYTES, 0);
	raise_and_look(0);
	if (within(alternate, view.local) || within(alternate, view.context))
		t_fail("a handler without SA_ONSTACK ran on the alternate stack");
	if (!same_stack(view.uc_stack, alternate, STACK_BYTES, 0) || view.reported.ss_flags != 0)
		t_fail("without SA_ONSTACK: uc_stack flags %#x, reported %#x",
		       view.uc_stack.ss_flags, view.reported.ss_flags);
	if (view.change_error || view.disable_error)
		t_fail("off the stack, changing it: %s, disabling it: %s",
		       strerror(view.change_error), strerror(view.disable_error));
	expect_altstack("disabled in that handler, given back by rt_sigreturn (uc_stack)",
			alternate, STACK_BYTES, 0);
	set_altstack(NULL, 0, SS_DISABLE);
}

/* Does SS_AUTODISARM disarm the stack while its handler runs (sigaltstack
 * says SS_DISABLE, uc_stack keeps it armed, a change is allowed) and does
 * rt_sigreturn arm it again from uc_stack? */
void ss_autodisarm_disarms_the_stack_while_its_handler_runs(void)
{
	expect_success("a stack", set_altstack(alternate, sizeof alternate, SS_AUTODISARM));
	install(SIGUSR2, note_nested, 0);
	raise_and_look(SA_ONSTACK);
	if (!within(alternate, view.local))
		t_fail("the handler's local %#lx: not on the alternate stack",
		       (unsigned long)view.local);
	if (!same_stack(view.uc_stack, alternate, STACK_BYTES, SS_AUTODISARM))
		t_fail("uc_stack {%p, %#x, %zu}", view.uc_stack.ss_sp, view.uc_stack.ss_flags,
		       view.uc_stack.ss_size);
	if (!same_stack(view.reported, NULL, 0, SS_DISABLE))
		t_fail("sigaltstack in the handler: {%p, %#x, %zu}, expected disarmed",
		       view.reported.ss_sp, view.reported.ss_flags, view.reported.ss_size);
	if (view.change_error || view.disable_error)
		t_fail("changing it while disarmed: %s, %s", strerror(view.change_error),
		       strerror(view.disable_error));
	expect_altstack("armed again after the handler", alternate, STACK_BYTES, SS_AUTODISARM);
}

static stack_t rewritten_uc_stack;

static void rewrite_uc_stack(int sig, siginfo_t *info, void *context)
{
	((struct kernel_ucontext_head *)context)->stack = rewritten_uc_stack;
}

/* The stack after a handler (with handler_flags) returns through a frame
 * whose uc_stack it rewrote, from a stack set with flags. */
static stack_t after_rewrite(int flags, int handler_flags, stack_t rewritten)
{
	set_altstack(NULL, 0, SS_DISABLE);
	if (set_altstack(alternate, STACK_BYTES, flags) < 0)
		t_fail("sigaltstack(flags %#x): %s", flags, strerror(errno));
	rewritten_uc_stack = rewritten;
	install(SIGUSR1, rewrite_uc_stack, handler_flags);
	raise(SIGUSR1);
	return current_altstack();
}

/* rt_sigreturn sets the stack uc_stack names, checked as sigaltstack checks
 * it, against the stack the handler returns from: from the alternate stack
 * (armed) nothing changes, from a disarmed one or the program's own stack
 * it does; flags or a size sigaltstack refuses change nothing. */
void sigreturn_sets_the_stack_uc_stack_names(void)
{
	stack_t other = {.ss_sp = other_alternate, .ss_size = STACK_BYTES};
	stack_t bad_flags = {.ss_sp = other_alternate, .ss_flags = 0x55, .ss_size = STACK_BYTES};
	stack_t too_small = {.ss_sp = other_alternate, .ss_size = 100};
	stack_t got = after_rewrite(0, SA_ONSTACK, other);
	if (!same_stack(got, alternate, STACK_BYTES, 0))
		t_fail("returning from the stack: it became %p (size %zu)", got.ss_sp, got.ss_size);
	got = after_rewrite(SS_AUTODISARM, SA_ONSTACK, other);
	if (!same_stack(got, other_alternate, STACK_BYTES, 0))
		t_fail("returning from a disarmed stack: %p (size %zu), expected the new one",
		       got.ss_sp, got.ss_size);
	got = after_rewrite(0, 0, other);
	if (!same_stack(got, other_alternate, STACK_BYTES, 0))
		t_fail("returning from the program's stack: %p, expected the new one", got.ss_sp);
	got = after_rewrite(SS_AUTODISARM, SA_ONSTACK, bad_flags);
	if (!same_stack(got, NULL, 0, SS_DISABLE))
		t_fail("flags 0x55 in uc_stack: {%p, %#x}, expected it left disarmed", got.ss_sp,
		       got.ss_flags);
	got = after_rewrite(SS_AUTODISARM, SA_ONSTACK, too_small);
	if (!same_stack(got, NULL, 0, SS_DISABLE))
		t_fail("size 100 in uc_stack: {%p, %zu}, expected it left disarmed", got.ss_sp,
		       got.ss_size);
	set_altstack(NULL, 0, SS_DISABLE);
}

/* ---- Stacks a frame cannot go on ------------------------------------------------ */

struct hostile_stack {
	const char *what;
	uintptr_t sp;
	size_t size;
};

static void do_nothing(int sig, siginfo_t *info, void *context)
{
}

/* Takes SIGUSR1 with an SA_ONSTACK handler on the stack named: the frame
 * cannot be written, so SIGSEGV ends the child (exit code 1: the handler
 * ran). */
static void signal_onto(void *argument)
{
	const struct hostile_stack *stack = argument;
	if (set_altstack((void *)stack->sp, stack->size, 0) < 0)
		_exit(2);
	install(SIGUSR1, do_nothing, SA_ONSTACK);
	raise(SIGUSR1);
	_exit(1);
}

/* A stack of MINSIGSTKSZ with memory the program owns just below it: the
 * first frame fits (on microScope), a nested one would run off its bottom
 * into that memory, and must end the process instead. */
static uint8_t below_and_small[STACK_BYTES + MINSIGSTKSZ] __attribute__((aligned(16)));

static void raise_nested(int sig, siginfo_t *info, void *context)
{
	raise(SIGUSR2);
}

static void overflow_the_alternate_stack(void *unused)
{
	if (set_altstack(below_and_small + STACK_BYTES, MINSIGSTKSZ, 0) < 0)
		_exit(2);
	install(SIGUSR2, do_nothing, SA_ONSTACK);
	install(SIGUSR1, raise_nested, SA_ONSTACK);
	raise(SIGUSR1);
	_exit(1);
}

static void a_good_alternate_stack(void *unused)
{
	if (set_altstack(alternate, STACK_BYTES, 0) < 0)
		_exit(2);
	install(SIGUSR2, note_nested, 0);
	raise_and_look(SA_ONSTACK);
	_exit(within(alternate, view.local) ? 0 : 3);
}

/* What if the alternate stack is a kernel address, unmapped, wraps around
 * the top of the address space or leaves canonical addresses, or is too
 * small for a nested frame?  The frame is never written (nothing of the
 * kernel's, nothing below the stack): SIGSEGV with its default action ends
 * the process, and the kernel goes on (a good stack in the next child
 * works). */
void a_frame_the_alternate_stack_cannot_take_ends_the_process(void)
{
	static const struct hostile_stack stacks[] = {
	    {"a kernel address", 0xffffffff80000000UL, STACK_BYTES},
	    {"the start of the kernel's half", 0xffff800000000000UL, STACK_BYTES},
	    {"an unmapped page", 0x1000UL, 0x2000},
	    {"wrapping past the top", 0xfffffffffffff000UL, 0x10000},
	    {"a top past the canonical half", 0x00007ffffffff000UL, 0x10000},
	};
	for (unsigned i = 0; i < sizeof stacks / sizeof stacks[0]; i++)
		t_expect_signal(stacks[i].what, signal_onto, (void *)&stacks[i], SIGSEGV);
	/* Its top, past the end of the address space, is memory the program may
	 * write: a frame there would not be on the stack. */
	struct hostile_stack wraps_round = {"wrapping round to the program's memory", 0UL - 0x10000,
					    0x10000 + (uintptr_t)(other_alternate + STACK_BYTES)};
	t_expect_signal(wraps_round.what, signal_onto, &wraps_round, SIGSEGV);
	t_expect_signal("a nested frame below a small stack", overflow_the_alternate_stack, NULL,
			SIGSEGV);
	int status = t_run_child(a_good_alternate_stack, NULL);
	if (status != -1 && status != 0)
		t_fail("a good alternate stack after them: status %#x", status);
}

/* ---- fork and exec ------------------------------------------------------------- */

static void check_the_forked_stack(void *unused)
{
	stack_t now;
	if (sigaltstack(NULL, &now) < 0)
		_exit(2);
	_exit(same_stack(now, alternate, STACK_BYTES, SS_AUTODISARM) ? 0 : 3);
}

static void exec_the_check(void *unused)
{
	char *argv[] = {"usertests", "--altstack-after-exec", NULL};
	execv(t_program_path, argv);
	_exit(100);
}

/* As Linux: no stack, the flags as they were (SS_AUTODISARM stays set). */
int altstack_exec_child_main(void)
{
	stack_t now;
	if (sigaltstack(NULL, &now) < 0)
		return 2;
	return same_stack(now, NULL, 0, SS_DISABLE | SS_AUTODISARM) ? 0 : 3;
}

/* Does a forked child keep the alternate stack (the same memory is there
 * in its copy) and does exec leave none (the stack was in the old memory;
 * Linux keeps the flags, SS_AUTODISARM here)? */
void fork_keeps_and_exec_clears_the_alternate_stack(void)
{
	expect_success("a stack", set_altstack(alternate, STACK_BYTES, SS_AUTODISARM));
	int status = t_run_child(check_the_forked_stack, NULL);
	if (status != -1 && status != 0)
		t_fail("the forked child: status %#x (3: not the parent's stack)", status);
	status = t_run_child(exec_the_check, NULL);
	if (status != -1 && status != 0)
		t_fail("after exec: status %#x (3: a stack left, 100: exec failed)", status);
}
