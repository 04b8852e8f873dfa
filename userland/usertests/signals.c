/*
 * usertests for signal handlers with Linux's x86_64 ABI: rt_sigaction,
 * rt_sigprocmask, rt_sigpending, rt_sigsuspend and rt_sigreturn by raw
 * system calls (Linux's numbers and layouts, a restorer of our own), so
 * that what is checked is the kernel's behaviour, not a library's.  Cases
 * that may end a process run it in a grandchild whose exit code says which
 * step went wrong (0: none); waits for a signal use a blocked mask and
 * rt_sigsuspend or rt_sigpending, never time.
 */
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/ipc.h"
#include "uapi/proc.h"
#include "usertests.h"

#define SIGUSR1_BIT (1ULL << (SIGUSR1 - 1))
#define SIGUSR2_BIT (1ULL << (SIGUSR2 - 1))
#define SIGTERM_BIT (1ULL << (SIGTERM - 1))
#define SIGKILL_BIT (1ULL << (SIGKILL - 1))
#define SIGSTOP_BIT (1ULL << (SIGSTOP - 1))

#define SIG_BLOCK     0
#define SIG_UNBLOCK   1
#define SIG_SETMASK   2
#define SA_SIGINFO    0x00000004UL
#define SA_RESTORER   0x04000000UL
#define SA_ONSTACK    0x08000000UL
#define SA_RESTART    0x10000000UL
#define SA_NODEFER    0x40000000UL
#define SA_RESETHAND  0x80000000UL
#define SI_USER       0
#define SEGV_MAPERR   1
#define SI_KERNEL     0x80
#define ILL_ILLOPN    2
#define FPE_INTDIV    1
#define FPE_FLTDIV    3
#define CLD_EXITED    1
#define L_EINTR       4
#define BAD_POINTER   0x10L
#define UNMAPPED_PAGE 0x1000UL
#define RFLAGS_IF     (1UL << 9)
#define RFLAGS_TF     (1UL << 8)
#define RFLAGS_IOPL   (3UL << 12)
#define RFLAGS_NT     (1UL << 14)
#define MXCSR_DEFAULT 0x1f80u

/* Linux's x86_64 layouts (the kernel's, not a C library's). */
struct k_sigaction {
	unsigned long handler, flags, restorer;
	uint64_t mask;
};
struct k_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip;
	uint64_t eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;
	uint64_t reserved[8];
};
struct k_ucontext {
	uint64_t flags, link, ss_sp;
	int32_t ss_flags, pad;
	uint64_t ss_size;
	struct k_sigcontext mc;
	uint64_t sigmask;
};
struct k_siginfo {
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
_Static_assert(sizeof(struct k_ucontext) == 304, "Linux's struct ucontext");
_Static_assert(sizeof(struct k_siginfo) == 128, "Linux's siginfo_t");

/* What a handler's ret goes to: rt_sigreturn. */
void signals_restorer(void);
__asm__(".pushsection .text\n"
	".globl signals_restorer\n"
	".type signals_restorer, @function\n"
	"signals_restorer:\n"
	"\tmov $15, %eax\n"
	"\tsyscall\n"
	"\tud2\n"
	".popsection\n");

typedef void (*handler_fn)(int, struct k_siginfo *, struct k_ucontext *);

static long set_action(int sig, unsigned long handler, unsigned long flags, uint64_t mask)
{
	struct k_sigaction action = {handler, flags, (unsigned long)signals_restorer, mask};
	return ms_syscall6(__NR_rt_sigaction, sig, (long)&action, 0, 8, 0, 0);
}

static long set_handler(int sig, handler_fn handler, unsigned long flags, uint64_t mask)
{
	return set_action(sig, (unsigned long)handler, flags | SA_RESTORER | SA_SIGINFO, mask);
}

static long change_mask(int how, uint64_t set, uint64_t *old)
{
	return ms_syscall6(__NR_rt_sigprocmask, how, (long)&set, (long)old, 8, 0, 0);
}

static uint64_t current_mask(void)
{
	uint64_t old = ~0ULL;
	ms_syscall6(__NR_rt_sigprocmask, SIG_BLOCK, 0, (long)&old, 8, 0, 0);
	return old;
}

static uint64_t pending_set(void)
{
	uint64_t set = ~0ULL;
	ms_syscall6(__NR_rt_sigpending, (long)&set, 8, 0, 0, 0, 0);
	return set;
}

/* The user code and stack selectors this system gives programs. */
static uint16_t code_selector(void)
{
	uint16_t selector;
	__asm__ volatile("mov %%cs, %0" : "=r"(selector));
	return selector;
}

static uint16_t stack_selector(void)
{
	uint16_t selector;
	__asm__ volatile("mov %%ss, %0" : "=r"(selector));
	return selector;
}

static long own_pid(void)
{
	return ms_syscall3(__NR_getpid, 0, 0, 0);
}

static long kill_self(int sig)
{
	return ms_syscall3(__NR_kill, own_pid(), sig, 0);
}

static long suspend_with(uint64_t mask)
{
	return ms_syscall6(__NR_rt_sigsuspend, (long)&mask, 8, 0, 0, 0, 0);
}

static __attribute__((noreturn)) void exit_with(long code)
{
	ms_syscall3(__NR_exit, code, 0, 0);
	__builtin_unreachable();
}

/* Runs body in a child, which exits with its result; returns the child's
 * wait status (Linux's encoding), or -1. */
static int run_in_child(long (*body)(void))
{
	long pid = fork();
	if (pid == 0)
		exit_with(body());
	int status = 0;
	if (pid < 0 || ms_syscall6(__NR_wait4, pid, (long)&status, 0, 0, 0, 0) != pid) {
		t_fail("fork or wait4 failed");
		return -1;
	}
	return status;
}

static void expect_exit(const char *what, long (*body)(void))
{
	int status = run_in_child(body);
	if (status != -1 && status != 0)
		t_fail("%s: status %#x (exit code: the step that went wrong)", what, status);
}

static void expect_killed(const char *what, long (*body)(void), int sig)
{
	int status = run_in_child(body);
	if (status != -1 && (status & 0x7f) != sig)
		t_fail("%s: status %#x, not killed by signal %d", what, status, sig);
}

static void expect(const char *what, long got, long want)
{
	if (got != want)
		t_fail("%s: got %ld, expected %ld", what, got, want);
}

/* ---- rt_sigaction ---------------------------------------------------------- */

static volatile int handled_count;
static volatile int handled_signal;
static struct k_siginfo handled_info;
static uint64_t mask_in_handler;

static void count_signal(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	(void)uc;
	handled_count++;
	handled_signal = sig;
	handled_info = *info;
	mask_in_handler = current_mask();
}

void sigaction_sets_and_reports_handlers(void)
{
	unsigned long flags = SA_SIGINFO | SA_RESTORER | SA_RESTART;
	struct k_sigaction action = {(unsigned long)count_signal, flags,
				     (unsigned long)signals_restorer,
				     SIGUSR2_BIT | SIGKILL_BIT | SIGSTOP_BIT};
	struct k_sigaction old = {0};
	expect("a handler", ms_syscall6(__NR_rt_sigaction, SIGUSR1, (long)&action, 0, 8, 0, 0), 0);
	expect("read back", ms_syscall6(__NR_rt_sigaction, SIGUSR1, 0, (long)&old, 8, 0, 0), 0);
	expect("old handler", (long)old.handler, (long)count_signal);
	expect("old flags", (long)old.flags, (long)flags);
	expect("old restorer", (long)old.restorer, (long)signals_restorer);
	expect("old mask, SIGKILL and SIGSTOP dropped", (long)old.mask, (long)SIGUSR2_BIT);
	expect("without SA_RESTORER", set_action(SIGUSR1, (unsigned long)count_signal, 0, 0),
	       -L_EINVAL);
	expect("SA_ONSTACK", set_action(SIGUSR1, 0, SA_ONSTACK | SA_RESTORER, 0), 0);
	expect("SA_ONSTACK read back",
	       ms_syscall6(__NR_rt_sigaction, SIGUSR1, 0, (long)&old, 8, 0, 0) == 0 &&
		   (old.flags & SA_ONSTACK),
	       1);
	expect("a handler again",
	       ms_syscall6(__NR_rt_sigaction, SIGUSR1, (long)&action, 0, 8, 0, 0), 0);
	expect("an unknown flag", set_action(SIGUSR1, 0, 0x100, 0), -L_EINVAL);
	expect("a SIGKILL handler", set_handler(SIGKILL, count_signal, 0, 0), -L_EINVAL);
	expect("a SIGSTOP handler", set_handler(SIGSTOP, count_signal, 0, 0), -L_EINVAL);
	expect("signal 0", set_handler(0, count_signal, 0, 0), -L_EINVAL);
	expect("signal 32", set_handler(32, count_signal, 0, 0), -L_EINVAL);
	expect("signal -1", set_handler(-1, count_signal, 0, 0), -L_EINVAL);
	expect("mask size 4", ms_syscall6(__NR_rt_sigaction, SIGUSR1, (long)&action, 0, 4, 0, 0),
	       -L_EINVAL);
	expect("a bad action", ms_syscall6(__NR_rt_sigaction, SIGUSR1, BAD_POINTER, 0, 8, 0, 0),
	       -L_EFAULT);
	expect("a bad old action",
	       ms_syscall6(__NR_rt_sigaction, SIGUSR1, 0, (long)UNMAPPED_PAGE, 8, 0, 0), -L_EFAULT);
	expect("unchanged by the refusals",
	       ms_syscall6(__NR_rt_sigaction, SIGUSR1, 0, (long)&old, 8, 0, 0) == 0 &&
		   old.handler == (unsigned long)count_signal,
	       1);
	expect("back to the default", set_action(SIGUSR1, 0, SA_RESTORER, 0), 0);
}

/* ---- Delivery ----------------------------------------------------------------- */

static struct k_ucontext seen_context;
static uint64_t seen_return_address, seen_uc_address, seen_mxcsr_inside;
static uint32_t seen_mxcsr_saved;

static void look_at_frame(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	count_signal(sig, info, uc);
	seen_context = *uc;
	seen_uc_address = (uint64_t)uc;
	seen_return_address = ((uint64_t *)uc)[-1];
	uint32_t mxcsr;
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	seen_mxcsr_inside = mxcsr;
	memcpy(&seen_mxcsr_saved, (const char *)uc->mc.fpstate + 24, sizeof seen_mxcsr_saved);
}

void a_handler_gets_linux_frame(void)
{
	handled_count = 0;
	uint32_t mxcsr = 0x7f80, restored = 0; /* round toward zero: not the default */
	__asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
	expect("handler", set_handler(SIGUSR1, look_at_frame, 0, SIGUSR2_BIT), 0);
	expect("kill", kill_self(SIGUSR1), 0);
	__asm__ volatile("stmxcsr %0" : "=m"(restored));
	expect("handled once", handled_count, 1);
	expect("signal", handled_signal, SIGUSR1);
	expect("si_signo", handled_info.signo, SIGUSR1);
	expect("si_code", handled_info.code, SI_USER);
	expect("si_pid", handled_info.sender.pid, own_pid());
	expect("si_uid", handled_info.sender.uid, getuid());
	expect("return address", (long)seen_return_address, (long)signals_restorer);
	expect("(rsp + 8) % 16 at entry", (long)((seen_uc_address - 8 + 8) % 16), 0);
	expect("mask in the handler", (long)mask_in_handler, (long)(SIGUSR1_BIT | SIGUSR2_BIT));
	expect("uc_sigmask", (long)seen_context.sigmask, 0);
	expect("user code and stack selectors",
	       seen_context.mc.cs == code_selector() && seen_context.mc.ss == stack_selector(), 1);
	expect("fpstate 16-byte aligned", (long)(seen_context.mc.fpstate % 16), 0);
	expect("below the red zone",
	       seen_context.mc.fpstate + 512 <= seen_context.mc.rsp - 128 &&
		   seen_uc_address + sizeof(struct k_ucontext) + sizeof(struct k_siginfo) <=
		       seen_context.mc.fpstate,
	       1);
	expect("MXCSR saved", seen_mxcsr_saved, 0x7f80);
	expect("a clean MXCSR in the handler", (long)seen_mxcsr_inside, MXCSR_DEFAULT);
	expect("MXCSR back after", restored, 0x7f80);
	expect("mask after", (long)current_mask(), 0);
	mxcsr = MXCSR_DEFAULT;
	__asm__ volatile("ldmxcsr %0" : : "m"(mxcsr));
}

/* The handler scribbles on every register it may and on xmm7. */
static void clobber_registers(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	count_signal(sig, info, uc);
	__asm__ volatile("mov $-1, %%rbx\n\tmov $-1, %%r12\n\tmov $-1, %%r13\n\t"
			 "mov $-1, %%r14\n\tmov $-1, %%r15\n\tmov $-1, %%r8\n\tmov $-1, %%r9\n\t"
			 "mov $-1, %%r10\n\tpcmpeqd %%xmm7, %%xmm7"
			 :
			 :
			 : "rbx", "r12", "r13", "r14", "r15", "r8", "r9", "r10", "xmm7");
}

/* The registers a program had at kill(self) are there after the handler:
 * rt_sigreturn restores them all (RCX and R11 are the call's). */
static long registers_survive(void)
{
	if (set_handler(SIGUSR1, clobber_registers, 0, 0) != 0)
		return 1;
	uint64_t out[9];
	const uint64_t pattern = 0x1122334455667788ULL;
	uint64_t first = pattern;
	long pid = own_pid();
	__asm__ volatile("mov %%rax, %%rbx\n\tlea 1(%%rbx), %%r12\n\tlea 2(%%rbx), %%r13\n\t"
			 "lea 3(%%rbx), %%r14\n\tlea 4(%%rbx), %%r15\n\tlea 5(%%rbx), %%r8\n\t"
			 "lea 6(%%rbx), %%r9\n\tlea 7(%%rbx), %%r10\n\tmovq %%rbx, %%xmm7\n\t"
			 "mov $62, %%eax\n\tmov %%rsi, %%rdi\n\tmov $10, %%esi\n\tsyscall\n\t"
			 "mov %%rbx, 0(%%rdx)\n\tmov %%r12, 8(%%rdx)\n\tmov %%r13, 16(%%rdx)\n\t"
			 "mov %%r14, 24(%%rdx)\n\tmov %%r15, 32(%%rdx)\n\tmov %%r8, 40(%%rdx)\n\t"
			 "mov %%r9, 48(%%rdx)\n\tmov %%r10, 56(%%rdx)\n\tmovq %%xmm7, 64(%%rdx)"
			 : "+a"(first), "+S"(pid)
			 : "d"(out)
			 : "rbx", "r12", "r13", "r14", "r15", "rdi", "rcx", "r11", "r8", "r9",
			   "r10", "xmm7", "memory");
	if (handled_count != 1)
		return 2;
	for (int i = 0; i < 8; i++)
		if (out[i] != pattern + (uint64_t)i)
			return 10 + i;
	return out[8] == pattern ? 0 : 20;
}

void registers_and_sse_survive_a_handler(void)
{
	expect_exit("registers after a handler", registers_survive);
}

static long nodefer_and_resethand(void)
{
	handled_count = 0;
	if (set_handler(SIGUSR1, count_signal, SA_NODEFER, 0) != 0)
		return 1;
	kill_self(SIGUSR1);
	if (handled_count != 1 || (mask_in_handler & SIGUSR1_BIT))
		return 2; /* SA_NODEFER: the signal is not blocked in its handler */
	if (set_handler(SIGUSR1, count_signal, SA_RESETHAND, 0) != 0)
		return 3;
	kill_self(SIGUSR1);
	if (handled_count != 2)
		return 4;
	struct k_sigaction old = {0};
	ms_syscall6(__NR_rt_sigaction, SIGUSR1, 0, (long)&old, 8, 0, 0);
	if (old.handler != 0)
		return 5;   /* SA_RESETHAND: back to SIG_DFL */
	kill_self(SIGUSR1); /* the default action: the end */
	return 6;
}

void sa_nodefer_and_sa_resethand(void)
{
	expect_killed("SA_NODEFER then SA_RESETHAND", nodefer_and_resethand, SIGUSR1);
}

static volatile int spin_flag;
static int ready_pipe[2];

static void end_the_spin(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	count_signal(sig, info, uc);
	spin_flag = 1;
}

/* Says it is ready, then spins in user mode (no system call: only an
 * interrupt can bring the signal) with patterns in RCX and R11, which the
 * handler's return must give back. */
static long spin_until_handled(void)
{
	uint64_t rcx = 0, r11 = 0;
	if (ms_syscall3(__NR_write, ready_pipe[1], (long)"r", 1) != 1)
		return 1;
	__asm__ volatile("mov $0x7777, %%rcx\n\tmov $0x8888, %%r11\n"
			 "1:\tcmpl $0, %[flag]\n\tje 1b\n\t"
			 "mov %%rcx, %[rcx]\n\tmov %%r11, %[r11]"
			 : [rcx] "=m"(rcx), [r11] "=m"(r11)
			 : [flag] "m"(spin_flag)
			 : "rcx", "r11", "memory", "cc");
	if (handled_count != 1)
		return 2;
	return rcx == 0x7777 && r11 == 0x8888 ? 0 : 3;
}

void a_spinning_process_gets_its_handler(void)
{
	char ready;
	handled_count = 0;
	expect("pipe", pipe(ready_pipe), 0);
	expect("handler", set_handler(SIGUSR1, end_the_spin, 0, 0), 0);
	long child = fork();
	if (child == 0)
		exit_with(spin_until_handled());
	expect("ready", ms_syscall3(__NR_read, ready_pipe[0], (long)&ready, 1), 1);
	expect("kill", ms_syscall3(__NR_kill, child, SIGUSR1, 0), 0);
	int status = -1;
	expect("wait4", ms_syscall6(__NR_wait4, child, (long)&status, 0, 0, 0, 0), child);
	expect("the spinner's status", status, 0);
}

/* ---- The mask --------------------------------------------------------------- */

static long blocked_signal_waits(void)
{
	if (change_mask(SIG_BLOCK, SIGTERM_BIT, NULL) != 0)
		return 1;
	kill_self(SIGTERM);
	if (pending_set() != SIGTERM_BIT)
		return 2;                            /* still here, and the signal pending */
	change_mask(SIG_UNBLOCK, SIGTERM_BIT, NULL); /* ends the process */
	return 3;
}

void sigprocmask_blocks_until_unblocked(void)
{
	uint64_t old = 1;
	expect("read", ms_syscall6(__NR_rt_sigprocmask, SIG_BLOCK, 0, (long)&old, 8, 0, 0), 0);
	expect("empty at first", (long)old, 0);
	expect("block all", change_mask(SIG_SETMASK, ~0ULL, NULL), 0);
	expect("SIGKILL and SIGSTOP never blocked", (long)(current_mask() & 0x7fffffffULL),
	       (long)(0x7fffffffULL & ~SIGKILL_BIT & ~SIGSTOP_BIT));
	expect("unblock", change_mask(SIG_UNBLOCK, ~0ULL, &old), 0);
	expect("old set", (long)(old & 0x7fffffffULL),
	       (long)(0x7fffffffULL & ~SIGKILL_BIT & ~SIGSTOP_BIT));
	expect("bad how", change_mask(7, SIGUSR1_BIT, NULL), -L_EINVAL);
	expect("size 4", ms_syscall6(__NR_rt_sigprocmask, SIG_BLOCK, (long)&old, 0, 4, 0, 0),
	       -L_EINVAL);
	expect("bad set", ms_syscall6(__NR_rt_sigprocmask, SIG_BLOCK, BAD_POINTER, 0, 8, 0, 0),
	       -L_EFAULT);
	expect("bad old set",
	       ms_syscall6(__NR_rt_sigprocmask, SIG_BLOCK, 0, (long)UNMAPPED_PAGE, 8, 0, 0),
	       -L_EFAULT);
	expect("sigpending bad pointer",
	       ms_syscall6(__NR_rt_sigpending, BAD_POINTER, 8, 0, 0, 0, 0), -L_EFAULT);
	expect("sigpending size 9", ms_syscall6(__NR_rt_sigpending, (long)&old, 9, 0, 0, 0, 0),
	       -L_EINVAL);
	expect("sigpending size 4 (Linux: up to 8)",
	       ms_syscall6(__NR_rt_sigpending, (long)&old, 4, 0, 0, 0, 0), 0);
	expect("sigsuspend bad pointer",
	       ms_syscall6(__NR_rt_sigsuspend, BAD_POINTER, 8, 0, 0, 0, 0), -L_EFAULT);
	expect("sigsuspend size 4", ms_syscall6(__NR_rt_sigsuspend, (long)&old, 4, 0, 0, 0, 0),
	       -L_EINVAL);
	expect_killed("a blocked SIGTERM, then unblocked", blocked_signal_waits, SIGTERM);
}

/* 1000 kills of self while blocked are one pending signal, handled once
 * when unblocked; unblocked, each kill is handled on its way back. */
void a_signal_storm_is_counted_exactly(void)
{
	handled_count = 0;
	expect("handler", set_handler(SIGUSR1, count_signal, 0, 0), 0);
	expect("block", change_mask(SIG_BLOCK, SIGUSR1_BIT, NULL), 0);
	for (int i = 0; i < 1000; i++)
		kill_self(SIGUSR1);
	expect("none handled while blocked", handled_count, 0);
	expect("pending", (long)pending_set(), (long)SIGUSR1_BIT);
	expect("unblock", change_mask(SIG_UNBLOCK, SIGUSR1_BIT, NULL), 0);
	expect("handled once", handled_count, 1);
	expect("nothing pending", (long)pending_set(), 0);
	for (int i = 0; i < 1000; i++)
		kill_self(SIGUSR1);
	expect("each one after", handled_count, 1001);
}

/* ---- Waiting for signals -------------------------------------------------------- */

void sigsuspend_waits_for_a_signal(void)
{
	handled_count = 0;
	expect("handler", set_handler(SIGUSR1, count_signal, 0, 0), 0);
	expect("block", change_mask(SIG_BLOCK, SIGUSR1_BIT, NULL), 0);
	long parent = own_pid(), child = fork();
	if (child == 0)
		exit_with(ms_syscall3(__NR_kill, parent, SIGUSR1, 0));
	expect("sigsuspend", suspend_with(0), -L_EINTR);
	expect("handled", handled_count, 1);
	expect("sender", handled_info.sender.pid, child);
	expect("the mask back", (long)current_mask(), (long)SIGUSR1_BIT);
	int status = -1;
	ms_syscall6(__NR_wait4, child, (long)&status, 0, 0, 0, 0);
	expect("the sender's status", status, 0);
}

void sigchld_reaches_a_handler(void)
{
	handled_count = 0;
	expect("handler", set_handler(SIGCHLD, count_signal, 0, 0), 0);
	expect("block", change_mask(SIG_BLOCK, 1ULL << (SIGCHLD - 1), NULL), 0);
	long child = fork();
	if (child == 0)
		exit_with(7);
	expect("sigsuspend", suspend_with(0), -L_EINTR);
	expect("handled", handled_count, 1);
	expect("signal", handled_signal, SIGCHLD);
	expect("si_code", handled_info.code, CLD_EXITED);
	expect("si_pid", handled_info.sender.pid, child);
	expect("si_status", handled_info.sender.status, 7);
	int status = -1;
	expect("reaped", ms_syscall6(__NR_wait4, child, (long)&status, 0, 0, 0, 0), child);
}

/* A write to a pipe nobody reads: -EPIPE, and SIGPIPE from the writer
 * itself, as Linux sends it (SI_USER with the writer's pid and uid). */
static long broken_pipe_signals_the_writer(void)
{
	int fds[2];
	if (set_handler(SIGPIPE, count_signal, 0, 0) != 0 || pipe(fds) != 0)
		return 1;
	close(fds[0]);
	if (ms_syscall3(__NR_write, fds[1], (long)"x", 1) != -32 /* EPIPE */)
		return 2;
	if (handled_count != 1 || handled_signal != SIGPIPE)
		return 3;
	if (handled_info.code != SI_USER || handled_info.sender.pid != own_pid() ||
	    handled_info.sender.uid != (uint32_t)ms_syscall3(__NR_getuid, 0, 0, 0))
		return 4;
	return 0;
}

void a_broken_pipe_signals_the_writer(void)
{
	expect_exit("SIGPIPE from the writer", broken_pipe_signals_the_writer);
}

static int blocked_read_pipe[2], handler_ran_pipe[2];

static bool sleeps_on(long pid, const char *channel)
{
	static struct proc_info_wait listed[PROC_MAX];
	long count = ms_syscall3(__NR_ms_getprocs, (long)listed, PROC_MAX, sizeof listed[0]);
	for (long i = 0; i < count && i < PROC_MAX; i++)
		if (listed[i].info.pid == pid)
			return strcmp(listed[i].wait_channel, channel) == 0;
	return false;
}

/* Waits until process pid sleeps reading a pipe; the limit only guards
 * against a hang. */
static bool wait_until_reading(long pid)
{
	for (long tries = 0; !sleeps_on(pid, "pipe"); tries++) {
		if (tries > 100000)
			return false;
		t_sleep_ms(1);
	}
	return true;
}

static void count_and_tell(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	count_signal(sig, info, uc);
	ms_syscall3(__NR_write, handler_ran_pipe[1], (long)"h", 1);
}

/* The child: once the reader sleeps in read, SIGUSR1; then, to_write, once
 * the handler ran and the reader sleeps in read again, a byte. */
static __attribute__((noreturn)) void interrupt_reader(long reader, bool to_write)
{
	char byte;
	if (!wait_until_reading(reader))
		exit_with(1);
	ms_syscall3(__NR_kill, reader, SIGUSR1, 0);
	if (to_write) {
		if (ms_syscall3(__NR_read, handler_ran_pipe[0], (long)&byte, 1) != 1)
			exit_with(2);
		if (!wait_until_reading(reader))
			exit_with(3);
		ms_syscall3(__NR_write, blocked_read_pipe[1], (long)"x", 1);
	}
	exit_with(0);
}

/* What a read of an empty pipe returns when a handler with flags runs
 * while it waits. */
static long read_interrupted(unsigned long flags, bool to_write)
{
	handled_count = 0;
	static struct proc_info_wait probe;
	if (ms_syscall3(__NR_ms_getprocs, (long)&probe, 1, sizeof probe) < 0)
		exit_with(T_SKIPPED); /* no wait channels to watch (another kernel) */
	if (pipe(blocked_read_pipe) < 0 || pipe(handler_ran_pipe) < 0 ||
	    set_handler(SIGUSR1, count_and_tell, flags, 0) != 0)
		return -1000;
	long reader = own_pid(), child = fork();
	if (child == 0)
		interrupt_reader(reader, to_write);
	char byte;
	long got = ms_syscall3(__NR_read, blocked_read_pipe[0], (long)&byte, 1);
	int status = -1;
	ms_syscall6(__NR_wait4, child, (long)&status, 0, 0, 0, 0);
	if (status != 0 || handled_count != 1)
		return -2000 - status;
	return got;
}

void a_handled_signal_interrupts_a_read(void)
{
	expect("without SA_RESTART", read_interrupted(0, false), -L_EINTR);
}

void sa_restart_makes_the_read_again(void)
{
	expect("with SA_RESTART", read_interrupted(SA_RESTART, true), 1);
}

/* ---- Faults --------------------------------------------------------------- */

#define TRAP_TRACE 2
#define STEPS      4

static volatile int steps_seen;
static volatile uint64_t step_address, step_rip;

/* Counts a single step and keeps TF set in the frame until STEPS were seen:
 * rt_sigreturn gives TF back, so the program goes on stepping. */
static void count_a_step(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	count_signal(sig, info, uc);
	step_address = info->address;
	step_rip = uc->mc.rip;
	if (++steps_seen >= STEPS)
		uc->mc.eflags &= ~RFLAGS_TF;
}

/* A program single-steps itself: TF set by popf raises SIGTRAP after each
 * instruction (TRAP_TRACE, si_addr the next instruction's address), and
 * the handler's return keeps it set until the handler clears it. */
static long single_steps_reach_a_handler(void)
{
	if (set_handler(SIGTRAP, count_a_step, 0, 0) != 0)
		return 1;
	__asm__ volatile("pushf\n\torq $0x100, (%%rsp)\n\tpopf\n\tnop\n\tnop\n\tnop\n\tnop\n\t"
			 "nop\n\tnop" ::
			     : "memory", "cc");
	if (steps_seen != STEPS || handled_signal != SIGTRAP)
		return 2;
	if (handled_info.code != TRAP_TRACE || step_address != step_rip)
		return 3;
	return 0;
}

void a_program_can_single_step_itself(void)
{
	expect_exit("single steps", single_steps_reach_a_handler);
}

static void skip_the_fault(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	count_signal(sig, info, uc);
	seen_context = *uc;
	uc->mc.rip = uc->mc.rbx; /* the landing place the faulting code left there */
}

/* Skips the faulting instruction as skip_the_fault does, and clears the x87
 * exception flags and masks them again in the frame's FXSAVE image (FSW at
 * byte 2, FCW at 0), so the fwait after the handler does not fault again. */
static void skip_the_x87_fault(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	skip_the_fault(sig, info, uc);
	uint16_t *fx = (uint16_t *)uc->mc.fpstate;
	if (fx) {
		fx[0] |= 0x3f;
		fx[1] = 0;
	}
}

/* A floating-point division by zero with the exception unmasked, in x87
 * (#MF at the fwait after it) and SSE (#XM at the divss): SIGFPE with
 * FPE_FLTDIV at the instruction that raised it.  QEMU's TCG never raises
 * #XM, so the SSE half is checked only where the CPU raises it. */
static long float_divide_by_zero_is_fpe_fltdiv(void)
{
	set_handler(SIGFPE, skip_the_x87_fault, 0, 0);
	uint16_t control = 0x037f & ~0x4; /* the default with ZM clear */
	uint64_t at = 0;
	__asm__ volatile("fninit\n\tfldcw %[control]\n\tfld1\n\tfldz\n\tfdivrp\n\t"
			 "lea 1f(%%rip), %%rbx\n\tlea 2f(%%rip), %%r8\n2:\tfwait\n1:\t"
			 "fninit\n\tmov %%r8, %[at]"
			 : [at] "=m"(at)
			 : [control] "m"(control)
			 : "rbx", "r8", "memory", "st", "st(1)");
	if (handled_count != 5 || handled_signal != SIGFPE || seen_context.mc.trapno != 16)
		return 11;
	if (handled_info.code != FPE_FLTDIV || handled_info.address != at)
		return 12;
	set_handler(SIGFPE, skip_the_fault, 0, 0);
	uint32_t unmasked = MXCSR_DEFAULT & ~0x200u, saved = MXCSR_DEFAULT; /* ZM clear */
	float zero = 0.0f, one = 1.0f;
	__asm__ volatile(
	    "ldmxcsr %[unmasked]\n\tlea 1f(%%rip), %%rbx\n\tlea 2f(%%rip), %%r8\n\t"
	    "movss %[one], %%xmm0\n2:\tdivss %[zero], %%xmm0\n1:\t"
	    "ldmxcsr %[saved]\n\tmov %%r8, %[at]"
	    : [at] "=m"(at)
	    : [unmasked] "m"(unmasked), [saved] "m"(saved), [one] "m"(one), [zero] "m"(zero)
	    : "rbx", "r8", "xmm0", "memory");
	if (handled_count == 5)
		return 0; /* no #XM from this CPU */
	if (handled_count != 6 || handled_signal != SIGFPE || seen_context.mc.trapno != 19)
		return 13;
	return handled_info.code == FPE_FLTDIV && handled_info.address == at ? 0 : 14;
}

/* A fault with RCX and R11 holding patterns the handler's return must give
 * back (the way out after rt_sigreturn restores every register). */
static long fault_goes_to_its_handler(void)
{
	if (set_handler(SIGSEGV, skip_the_fault, 0, 0) != 0 ||
	    set_handler(SIGILL, skip_the_fault, 0, 0) != 0 ||
	    set_handler(SIGFPE, skip_the_fault, 0, 0) != 0 ||
	    set_handler(SIGTRAP, skip_the_fault, 0, 0) != 0)
		return 1;
	uint64_t rcx = 0, r11 = 0;
	__asm__ volatile("lea 1f(%%rip), %%rbx\n\tmov $0x5555, %%rcx\n\t"
			 "mov $0x6666, %%r11\n\tmovl $0, (%[bad])\n1:\t"
			 "mov %%rcx, %[rcx]\n\tmov %%r11, %[r11]"
			 : [rcx] "=m"(rcx), [r11] "=m"(r11)
			 : [bad] "r"(BAD_POINTER)
			 : "rbx", "rcx", "r11", "memory");
	if (handled_count != 1 || handled_signal != SIGSEGV)
		return 2;
	if (handled_info.code != SEGV_MAPERR || handled_info.address != BAD_POINTER ||
	    seen_context.mc.cr2 != BAD_POINTER || seen_context.mc.trapno != 14)
		return 3;
	if (rcx != 0x5555 || r11 != 0x6666)
		return 4;
	uint64_t at = 0;
	__asm__ volatile("lea 1f(%%rip), %%rbx\n\tlea 2f(%%rip), %%r8\n2:\tud2\n1:\t"
			 "mov %%r8, %[at]"
			 : [at] "=m"(at)::"rbx", "r8", "memory");
	if (handled_count != 2 || handled_signal != SIGILL || seen_context.mc.trapno != 6)
		return 5;
	if (handled_info.code != ILL_ILLOPN || handled_info.address != at)
		return 8;
	__asm__ volatile("lea 1f(%%rip), %%rbx\n\tlea 2f(%%rip), %%r8\n\txor %%ecx, %%ecx\n\t"
			 "mov $1, %%eax\n\tcltd\n2:\tidivl %%ecx\n1:\tmov %%r8, %[at]"
			 : [at] "=m"(at)
			 :
			 : "rax", "rbx", "rcx", "rdx", "r8", "memory", "cc");
	if (handled_count != 3 || handled_signal != SIGFPE || seen_context.mc.trapno != 0)
		return 6;
	if (handled_info.code != FPE_INTDIV || handled_info.address != at ||
	    seen_context.mc.cr2 == at)
		return 9;
	__asm__ volatile("lea 1f(%%rip), %%rbx\n\tint3\n1:" ::: "rbx", "memory");
	if (handled_count != 4 || handled_signal != SIGTRAP || seen_context.mc.trapno != 3)
		return 7;
	if (handled_info.code != SI_KERNEL)
		return 10;
	return float_divide_by_zero_is_fpe_fltdiv();
}

static long blocked_fault_ends_the_process(void)
{
	set_handler(SIGSEGV, skip_the_fault, 0, 0);
	change_mask(SIG_BLOCK, 1ULL << (SIGSEGV - 1), NULL);
	__asm__ volatile("movl $1, (%0)" : : "r"(BAD_POINTER) : "memory");
	return 1;
}

void faults_go_to_their_handlers(void)
{
	expect_exit("SIGSEGV and SIGILL handled", fault_goes_to_its_handler);
	expect_killed("a blocked SIGSEGV", blocked_fault_ends_the_process, SIGSEGV);
}

/* What a fault at a kernel address tells: a protection fault (SEGV_ACCERR,
 * the error code's P bit) whether or not the kernel maps that page, so
 * that nothing of the kernel's map shows. */
static void note_fault(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	count_signal(sig, info, uc);
	seen_context = *uc;
	uc->mc.rip = uc->mc.rbx;
}

static long kernel_faults_look_alike(void)
{
	static const uint64_t kernel_addresses[] = {0xffffffff80100000UL, 0xfffffffff0000000UL,
						    0xffff800000100000UL, 0xffffa00000000000UL};
	if (set_handler(SIGSEGV, note_fault, 0, 0) != 0)
		return 1;
	for (unsigned i = 0; i < sizeof kernel_addresses / sizeof kernel_addresses[0]; i++) {
		handled_count = 0;
		__asm__ volatile("lea 1f(%%rip), %%rbx\n\tmovq (%[at]), %%rax\n1:"
				 :
				 : [at] "r"(kernel_addresses[i])
				 : "rax", "rbx", "memory");
		if (handled_count != 1 || handled_signal != SIGSEGV)
			return 10 + i;
		if (handled_info.code != 2 /* SEGV_ACCERR */ || !(seen_context.mc.err & 1))
			return 20 + i;
	}
	return 0;
}

void a_fault_at_a_kernel_address_says_nothing_of_the_map(void)
{
	expect_exit("faults at kernel addresses", kernel_faults_look_alike);
}

int signal_of_a_read(uint64_t address, int sig, int *code, uint64_t *fault_address)
{
	handled_count = 0;
	handled_signal = 0;
	if (set_handler(sig, note_fault, 0, 0) != 0)
		return -1;
	__asm__ volatile("lea 1f(%%rip), %%rbx\n\tmovb (%[at]), %%al\n1:"
			 :
			 : [at] "r"(address)
			 : "rax", "rbx", "memory");
	set_action(sig, 0 /* SIG_DFL */, 0, 0);
	*code = handled_info.code;
	*fault_address = handled_info.address;
	return handled_count == 1 ? handled_signal : 0;
}

/* ---- What a frame holds --------------------------------------------------------- */

static uint8_t fpu_tail[96]; /* bytes 416-511 of the frame's FXSAVE area */

static void copy_fpu_tail(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	count_signal(sig, info, uc);
	memcpy(fpu_tail, (const uint8_t *)uc->mc.fpstate + 416, sizeof fpu_tail);
}

/* The part of the FXSAVE area the instruction leaves alone: nothing of the
 * kernel's stack (kernel addresses lay there) may reach the handler. */
void a_frame_holds_nothing_of_the_kernel(void)
{
	if (set_handler(SIGUSR1, copy_fpu_tail, 0, 0) != 0) {
		t_fail("rt_sigaction");
		return;
	}
	for (int round = 0; round < 8; round++) {
		char cwd[64];
		ms_syscall3(__NR_getcwd, (long)cwd, sizeof cwd, 0); /* leaves things on the stack */
		memset(fpu_tail, 0xaa, sizeof fpu_tail);
		kill_self(SIGUSR1);
		for (unsigned i = 0; i < sizeof fpu_tail; i++)
			if (fpu_tail[i]) {
				t_fail("round %d: byte %u of the FXSAVE area's tail is %#x", round,
				       416 + i, fpu_tail[i]);
				return;
			}
	}
	set_action(SIGUSR1, 0, SA_RESTORER, 0);
}

/* ---- A background read with SIGTTIN blocked ------------------------------------- */

/* In a background group of a session that has the console: reads fd 0 with
 * SIGTTIN blocked.  0 when the read is -EIO (Linux's answer: the signal
 * would not act), 4 for -EINTR (the signal left pending: a loop of
 * retries that never ends). */
static long read_in_the_background(void)
{
	if (ms_syscall3(__NR_setpgid, 0, 0, 0) != 0)
		return 80;
	change_mask(SIG_BLOCK, 1ULL << (SIGTTIN - 1), NULL);
	char byte;
	long got = ms_syscall3(__NR_read, 0, (long)&byte, 1);
	return got == -5 ? 0 : got == -L_EINTR ? 4 : 5;
}

static long lead_a_console_session(void)
{
	ms_syscall3(__NR_setsid, 0, 0, 0);
	if (ms_syscall3(__NR_ioctl, 0, 0x540e /* TIOCSCTTY */, 0) != 0)
		return T_SKIPPED; /* no console to take (another kernel, another stdin) */
	int status = run_in_child(read_in_the_background);
	return status == 0 ? 0 : (status >> 8) ? (status >> 8) : 60;
}

void a_background_read_with_sigttin_blocked_gets_eio(void)
{
	int status = run_in_child(lead_a_console_session);
	if (status == (T_SKIPPED << 8)) {
		t_note("no console to take: skipped");
		return;
	}
	if (status != 0)
		t_fail("status %#x (exit code 4: -EINTR with SIGTTIN left pending)", status);
}

/* ---- SA_RESTART and microScope's own calls ---------------------------------------- */

static long ipc_endpoint;

static void note_signal(int sig, struct k_siginfo *info, struct k_ucontext *uc)
{
	count_signal(sig, info, uc);
}

/* An IPC call the server has taken, interrupted by a handler with
 * SA_RESTART: made again, its request would reach the server twice, so it
 * ends with -EINTR (the deadline only bounds the wrong answer). */
static long call_once_with_restart(void)
{
	if (set_handler(SIGUSR1, note_signal, SA_RESTART, 0) != 0)
		return 90;
	static struct ipc_message request, reply;
	request.label = 7;
	request.words[0] = 42;
	long result = ms_syscall6(__NR_ms_ipc_call, ipc_endpoint, (long)&request, (long)&reply,
				  10L * 1000 * 1000 * 1000, 0, 0);
	return result == -L_EINTR ? 0 : 50 + (-result & 0x3f);
}

void sa_restart_does_not_make_an_ipc_call_again(void)
{
	ipc_endpoint = ms_syscall3(__NR_ms_ipc_create, IPC_QUEUE_MAX, 0, 0);
	if (ipc_endpoint < 0) {
		t_note("no IPC endpoints (another kernel): skipped");
		return;
	}
	long child = fork();
	if (child == 0)
		exit_with(call_once_with_restart());
	static struct ipc_message taken;
	long received = ms_syscall3(__NR_ms_ipc_receive, ipc_endpoint, (long)&taken,
				    10L * 1000 * 1000 * 1000 /* against a hang only */);
	expect("the call received", received, 0);
	if (received == 0)
		ms_syscall3(__NR_kill, child, SIGUSR1, 0);
	int status = -1;
	ms_syscall6(__NR_wait4, child, (long)&status, 0, 0, 0, 0);
	if (status != 0)
		t_fail("the caller's status %#x (exit code 50 + errno: not -EINTR)", status);
	close((int)ipc_endpoint);
}

/* ---- fork and exec ------------------------------------------------------------- */

static long child_keeps_handler_and_mask(void)
{
	handled_count = 0;
	if (current_mask() != SIGTERM_BIT)
		return 1;
	if (pending_set() != 0)
		return 2; /* the parent's pending SIGTERM is not the child's */
	kill_self(SIGUSR1);
	return handled_count == 1 ? 0 : 3;
}

int signals_exec_child_main(void)
{
	struct k_sigaction old = {0};
	int state = 0;
	ms_syscall6(__NR_rt_sigaction, SIGUSR1, 0, (long)&old, 8, 0, 0);
	state |= old.handler == 0 ? 1 : 0; /* a handler is back to SIG_DFL */
	ms_syscall6(__NR_rt_sigaction, SIGUSR2, 0, (long)&old, 8, 0, 0);
	state |= old.handler == 1 ? 2 : 0; /* ignored stays ignored */
	state |= current_mask() == SIGTERM_BIT ? 4 : 0;
	return state;
}

static long exec_resets_handlers(void)
{
	char *argv[] = {"usertests", "--signals-after-exec", NULL};
	execv("/bin/usertests", argv);
	return 100;
}

void fork_keeps_and_exec_resets_handlers(void)
{
	expect("handler", set_handler(SIGUSR1, count_signal, 0, 0), 0);
	expect("ignore SIGUSR2", set_action(SIGUSR2, 1, SA_RESTORER, 0), 0);
	expect("block SIGTERM", change_mask(SIG_BLOCK, SIGTERM_BIT, NULL), 0);
	kill_self(SIGTERM);
	expect_exit("a forked child", child_keeps_handler_and_mask);
	int status = run_in_child(exec_resets_handlers);
	expect("after exec", status, 7 << 8);
	set_action(SIGTERM, 1, SA_RESTORER, 0); /* drops the pending one */
}

/* ---- Hostile frames ------------------------------------------------------------ */

static uint64_t landing_stack[1024] __attribute__((aligned(16)));
static uint8_t fx_area[512] __attribute__((aligned(16)));

/* Where good frames resume: exits with what it finds (RFLAGS, MXCSR). */
static __attribute__((noreturn, used)) void landing(void)
{
	uint64_t flags;
	uint32_t mxcsr;
	__asm__ volatile("pushf\n\tpop %0" : "=r"(flags));
	__asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
	long code = 0;
	if (!(flags & RFLAGS_IF) || (flags & (RFLAGS_TF | RFLAGS_IOPL | RFLAGS_NT)))
		code |= 1;
	if (mxcsr & 0xffff0000u)
		code |= 2;
	exit_with(code);
}

/* rt_sigreturn with uc as the frame (RSP at it, as after the handler's ret). */
static __attribute__((noreturn)) void return_through(struct k_ucontext *uc)
{
	__asm__ volatile("mov %0, %%rsp\n\tmov $15, %%eax\n\tsyscall\n\tud2"
			 :
			 : "r"(uc)
			 : "memory");
	__builtin_unreachable();
}

static struct k_ucontext good_frame(void)
{
	struct k_ucontext uc;
	memset(&uc, 0, sizeof uc);
	uc.mc.rip = (uint64_t)landing;
	uc.mc.rsp = (uint64_t)&landing_stack[1022] - 8; /* (rsp + 8) % 16 == 0 */
	uc.mc.eflags = 0x202;
	uc.mc.cs = code_selector(); /* Linux takes them from the frame; microScope forces its own */
	uc.mc.ss = stack_selector();
	return uc;
}

static struct k_ucontext hostile;

static long with_rip(uint64_t rip)
{
	hostile = good_frame();
	hostile.mc.rip = rip;
	return_through(&hostile);
}

static long non_canonical_rip(void)
{
	return with_rip(0x8000000000000000ULL);
}

static long kernel_rip(void)
{
	return with_rip(0xffffffff80000000ULL);
}

static long privileged_flags(void)
{
	hostile = good_frame();
	hostile.mc.eflags = RFLAGS_IOPL | RFLAGS_NT | (1UL << 17) | 0x2;
	return_through(&hostile);
}

static long bad_fpstate(void)
{
	hostile = good_frame();
	hostile.mc.fpstate = UNMAPPED_PAGE;
	return_through(&hostile);
}

static long misaligned_fpstate(void)
{
	hostile = good_frame();
	hostile.mc.fpstate = (uint64_t)fx_area + 8;
	return_through(&hostile);
}

static long mxcsr_reserved_bits(void)
{
	hostile = good_frame();
	__asm__ volatile("fxsave64 %0" : "=m"(fx_area));
	memset(fx_area + 24, 0xff, 4);
	hostile.mc.fpstate = (uint64_t)fx_area;
	return_through(&hostile);
}

static long frame_on_unmapped_stack(void)
{
	return_through((struct k_ucontext *)UNMAPPED_PAGE);
}

static long non_canonical_rsp(void)
{
	hostile = good_frame();
	hostile.mc.rsp = 0x8000000000000000ULL;
	return_through(&hostile);
}

static long good_frame_resumes(void)
{
	hostile = good_frame();
	return_through(&hostile);
}

void sigreturn_refuses_hostile_frames(void)
{
	expect_exit("a good frame", good_frame_resumes);
	expect_killed("a non-canonical rip", non_canonical_rip, SIGSEGV);
	expect_killed("a kernel rip", kernel_rip, SIGSEGV);
	expect_exit("IOPL, NT and VM asked for", privileged_flags);
	expect_killed("fpstate unmapped", bad_fpstate, SIGSEGV);
	expect_killed("fpstate not aligned", misaligned_fpstate, SIGSEGV);
	expect_exit("MXCSR's reserved bits", mxcsr_reserved_bits);
	expect_killed("a frame on unmapped memory", frame_on_unmapped_stack, SIGSEGV);
	expect_killed("a non-canonical rsp", non_canonical_rsp, SIGSEGV);
}

static long handler_on_unmapped_stack(void)
{
	if (set_handler(SIGUSR1, count_signal, 0, 0) != 0)
		return 1;
	long pid = own_pid();
	__asm__ volatile("mov %%rsp, %%rbx\n\tmov %[bad], %%rsp\n\tmov $62, %%eax\n\t"
			 "mov %[pid], %%rdi\n\tmov $10, %%esi\n\tsyscall\n\tmov %%rbx, %%rsp"
			 :
			 : [bad] "r"(UNMAPPED_PAGE + 64), [pid] "r"(pid)
			 : "rax", "rbx", "rcx", "rdi", "rsi", "r11", "memory");
	return 2;
}

static long handler_at_a_kernel_address(void)
{
	set_action(SIGUSR1, 0xffffffff80000000UL, SA_RESTORER, 0);
	kill_self(SIGUSR1);
	return 1;
}

void a_frame_that_cannot_be_written_ends_the_process(void)
{
	expect_killed("a handler on an unmapped stack", handler_on_unmapped_stack, SIGSEGV);
	expect_killed("a handler at a kernel address", handler_at_a_kernel_address, SIGSEGV);
}
