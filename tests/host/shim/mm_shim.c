/*
 * Kernel services for mm's host tests: spinlocks that check ownership (one
 * thread), panic that aborts or longjmps to a catcher, printk to stdout as
 * KTAP comments, and the KTAP runner.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console/console.h"
#include "cpu/spinlock.h"
#include "mm_shim.h"
#include "panic/panic.h"

#define MAX_HELD 16

jmp_buf *mm_shim_panic_catcher;
char mm_shim_last_panic[256];
int mm_test_failures;
static struct spinlock *held[MAX_HELD];
static int held_count;

void spin_init(struct spinlock *lock, const char *name)
{
	lock->next_ticket = 0;
	lock->serving = 0;
	lock->owner_cpu = -1;
	lock->name = name;
}

void preempt_disable(void)
{
}

void preempt_enable(void)
{
}

void spin_lock(struct spinlock *lock)
{
	if (lock->owner_cpu == 0)
		panic("spinlock '%s' taken twice", lock->name);
	if (held_count == MAX_HELD)
		abort();
	lock->owner_cpu = 0;
	held[held_count++] = lock;
}

bool spin_trylock(struct spinlock *lock)
{
	if (lock->owner_cpu == 0)
		return false;
	spin_lock(lock);
	return true;
}

void spin_unlock(struct spinlock *lock)
{
	if (lock->owner_cpu != 0)
		panic("spinlock '%s' released but not held", lock->name);
	lock->owner_cpu = -1;
	for (int i = 0; i < held_count; i++) {
		if (held[i] == lock) {
			held[i] = held[--held_count];
			break;
		}
	}
}

uint64_t spin_lock_irqsave(struct spinlock *lock)
{
	spin_lock(lock);
	return 0;
}

void spin_unlock_irqrestore(struct spinlock *lock, uint64_t flags)
{
	(void)flags;
	spin_unlock(lock);
}

bool spin_held_by_me(const struct spinlock *lock)
{
	return lock->owner_cpu == 0;
}

void panic(const char *format, ...)
{
	va_list args;
	va_start(args, format);
	vsnprintf(mm_shim_last_panic, sizeof mm_shim_last_panic, format, args);
	va_end(args);
	if (mm_shim_panic_catcher) {
		while (held_count)
			held[--held_count]->owner_cpu = -1;
		printf("# caught panic: %s\n", mm_shim_last_panic);
		longjmp(*mm_shim_panic_catcher, 1);
	}
	printf("# KERNEL PANIC: %s\n", mm_shim_last_panic);
	fflush(stdout);
	abort();
}

int printk(enum log_level level, const char *format, ...)
{
	char line[512];
	va_list args;
	va_start(args, format);
	int length = vsnprintf(line, sizeof line, format, args);
	va_end(args);
	(void)level;
	printf("# %s", line);
	return length;
}

int mm_test_main(const struct mm_test_case *cases, size_t count)
{
	int failed_cases = 0;
	printf("KTAP version 1\n1..%zu\n", count);
	for (size_t i = 0; i < count; i++) {
		int before = mm_test_failures;
		cases[i].run();
		bool ok = mm_test_failures == before;
		failed_cases += !ok;
		printf("%s %zu %s\n", ok ? "ok" : "not ok", i + 1, cases[i].name);
		fflush(stdout);
	}
	return failed_cases ? 1 : 0;
}
