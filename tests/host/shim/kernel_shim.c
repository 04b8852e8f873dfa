/*
 * Generic host stand-ins for the kernel services most sources use: the console
 * (printk and friends print to stdout as KTAP comments and are captured for
 * hosttest_console_output), panic (longjmp to a catcher, or abort), spinlocks
 * that check ownership on one thread, preemption counting, an empty
 * KERNEL_PARAM section, and this_cpu() (the GS base points at one struct cpu,
 * so the kernel's inline "mov %gs:0" works unchanged).
 *
 * Every function is weak: a test-specific shim or a real kernel source linked
 * into the same test replaces it without a clash.
 */
#include <asm/prctl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "boot/cmdline.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "cpu/spinlock.h"
#include "hosttest.h"
#include "lib/string.h"
#include "panic/panic.h"

#define WEAK            __attribute__((weak))
#define CONSOLE_CAPTURE 65536

jmp_buf *hosttest_panic_catcher;
char hosttest_last_panic[256];

static char console_text[CONSOLE_CAPTURE];
static size_t console_length;
static enum log_level console_level = LOG_DEBUG;
static struct cpu host_cpu;

/* An empty KERNEL_PARAM section: cmdline_apply() sees no options. */
__asm__(".pushsection .rodata\n"
	".weak __kparams_start\n.weak __kparams_end\n"
	".balign 8\n__kparams_start:\n__kparams_end:\n"
	".popsection\n");

__attribute__((constructor)) static void point_gs_at_the_cpu(void)
{
	host_cpu.self = &host_cpu;
	if (syscall(SYS_arch_prctl, ARCH_SET_GS, (unsigned long)&host_cpu) != 0)
		perror("kernel_shim: arch_prctl(ARCH_SET_GS)");
}

const char *hosttest_console_output(void)
{
	return console_text;
}

void hosttest_console_clear(void)
{
	console_length = 0;
	console_text[0] = '\0';
}

/* Appends to the capture, and echoes each line as a KTAP comment. */
static void capture(const char *text, size_t length)
{
	size_t room = sizeof console_text - 1 - console_length;
	size_t n = length < room ? length : room;
	memcpy(console_text + console_length, text, n);
	console_length += n;
	console_text[console_length] = '\0';
	printf("    # console: %.*s%s", (int)length, text,
	       length && text[length - 1] == '\n' ? "" : "\n");
}

WEAK int printk(enum log_level level, const char *format, ...)
{
	char buffer[1024];
	va_list args;
	va_start(args, format);
	int n = vsnprintf(buffer, sizeof buffer, format, args);
	va_end(args);
	if (level <= console_level)
		capture(buffer, strlen(buffer));
	return n;
}

WEAK void console_write(const char *text, size_t length)
{
	capture(text, length);
}

WEAK void console_print(const char *format, ...)
{
	char buffer[1024];
	va_list args;
	va_start(args, format);
	vsnprintf(buffer, sizeof buffer, format, args);
	va_end(args);
	capture(buffer, strlen(buffer));
}

WEAK void console_register(struct console_sink *sink)
{
}

WEAK void console_set_level(enum log_level level)
{
	console_level = level;
}

WEAK enum log_level console_get_level(void)
{
	return console_level;
}

WEAK void console_enter_panic_mode(void)
{
}

WEAK void panic(const char *format, ...)
{
	va_list args;
	va_start(args, format);
	vsnprintf(hosttest_last_panic, sizeof hosttest_last_panic, format, args);
	va_end(args);
	if (hosttest_panic_catcher)
		longjmp(*hosttest_panic_catcher, 1);
	printf("    # panic: %s\n", hosttest_last_panic);
	fflush(stdout);
	abort();
}

WEAK void preempt_disable(void)
{
	host_cpu.preempt_count++;
}

WEAK void preempt_enable(void)
{
	ASSERT(host_cpu.preempt_count > 0);
	host_cpu.preempt_count--;
}

WEAK void spin_init(struct spinlock *lock, const char *name)
{
	*lock = (struct spinlock)SPINLOCK_INIT(name);
}

WEAK void spin_lock(struct spinlock *lock)
{
	if (lock->owner_cpu == 0)
		panic("spin_lock: '%s' taken twice (deadlock)", lock->name);
	preempt_disable();
	lock->next_ticket++;
	lock->serving = lock->next_ticket - 1;
	lock->owner_cpu = 0;
}

WEAK bool spin_trylock(struct spinlock *lock)
{
	if (lock->owner_cpu >= 0)
		return false;
	spin_lock(lock);
	return true;
}

WEAK void spin_unlock(struct spinlock *lock)
{
	if (lock->owner_cpu != 0)
		panic("spin_unlock: '%s' is not held", lock->name);
	lock->owner_cpu = -1;
	lock->serving++;
	preempt_enable();
}

WEAK uint64_t spin_lock_irqsave(struct spinlock *lock)
{
	spin_lock(lock);
	return 0;
}

WEAK void spin_unlock_irqrestore(struct spinlock *lock, uint64_t flags)
{
	spin_unlock(lock);
}

WEAK bool spin_held_by_me(const struct spinlock *lock)
{
	return lock->owner_cpu == 0;
}

/* glibc 2.36 has no strlcpy; the kernel's lib/string.h promises one. */
WEAK size_t strlcpy(char *dst, const char *src, size_t size)
{
	size_t length = strlen(src);
	if (size) {
		size_t n = length < size - 1 ? length : size - 1;
		memcpy(dst, src, n);
		dst[n] = '\0';
	}
	return length;
}
