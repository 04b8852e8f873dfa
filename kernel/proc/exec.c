/*
 * Giving a process a program: build a complete new memory (segments, an
 * empty heap after the highest segment, the stack with argv, envp and auxv)
 * while the old one stays untouched, and only when every step has worked
 * swap them and point the registers at the entry.  A failure at any step
 * frees the new memory and leaves the process as it was, so execve of a
 * corrupt or missing program returns an error to a caller that still runs.
 * Also process creation from a program (proc_spawn, proc_spawn_image).
 * Every new memory gets the kernel's user clock page, read-only, at
 * USER_CLOCK_ADDRESS (the auxiliary vector says where); fork shares it like
 * any other read-only page.
 */
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/gdt.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "proc/internal.h"
#include "time/time.h"

#define STACK_BUFFER_SIZE (PROC_ARG_MAX + 4096)
#define USER_RFLAGS       0x202 /* IF, and the always-one bit */

static uint64_t page_down(uint64_t value)
{
	return value & ~(uint64_t)(PAGE_SIZE - 1);
}

static unsigned vm_flags_of(unsigned segment_flags)
{
	return (segment_flags & EXEC_SEGMENT_WRITE ? VM_WRITE : 0) |
	       (segment_flags & EXEC_SEGMENT_EXEC ? VM_EXEC : 0);
}

static int load_segment(struct proc_memory *memory, const uint8_t *file,
			const struct exec_segment *s)
{
	uint64_t start = page_down(s->vaddr);
	uint64_t end = page_down(s->vaddr + s->memsz + PAGE_SIZE - 1);
	int error = memory_add_program(memory, start, end, vm_flags_of(s->flags));
	if (!error)
		error = memory_populate(memory, start, end);
	if (error)
		return error;
	return memory_write(memory, s->vaddr, file + s->offset, s->filesz);
}

static void fill_random(uint8_t bytes[16])
{
	uint64_t a = rdtsc() * 0x9e3779b97f4a7c15ULL, b = (a ^ (a >> 29)) * 0xbf58476d1ce4e5b9ULL;
	memcpy(bytes, &a, 8);
	memcpy(bytes + 8, &b, 8);
}

/* Maps the stack region and copies the argument block to its top.  Returns
 * the user stack pointer, or 0 with *error set. */
static uint64_t build_stack(struct proc_memory *memory, const struct exec_image *image,
			    char *const argv[], char *const envp[], int *error)
{
	uint8_t random[16];
	fill_random(random);
	struct exec_stack_args args = {argv, envp, image, random, USER_CLOCK_ADDRESS};
	uint8_t *buffer = kmalloc(STACK_BUFFER_SIZE);
	uint64_t sp = 0;
	*error = -ENOMEM;
	if (!buffer || !memory_add_region(memory, USER_STACK_TOP - USER_STACK_SIZE, USER_STACK_TOP,
					  VM_WRITE, REGION_STACK, error))
		goto out;
	sp = exec_build_stack(buffer, STACK_BUFFER_SIZE, USER_STACK_TOP, &args);
	*error = -E2BIG;
	if (!sp)
		goto out;
	*error = memory_populate(memory, page_down(sp) - USER_STACK_EAGER, USER_STACK_TOP);
	if (!*error)
		*error =
		    memory_write(memory, sp, buffer + STACK_BUFFER_SIZE - (USER_STACK_TOP - sp),
				 USER_STACK_TOP - sp);
	if (*error)
		sp = 0;
out:
	kfree(buffer);
	return sp;
}

/* Builds the new memory for image, under old's RLIMIT_AS (none: no limit).
 * Returns it with *sp set, or NULL. */
static struct proc_memory *build_memory(const void *file, const struct exec_image *image,
					char *const argv[], char *const envp[],
					const struct proc_memory *old, uint64_t *sp, int *error)
{
	struct proc_memory *memory = memory_create();
	*error = -ENOMEM;
	if (!memory)
		return NULL;
	if (old)
		memory->address_limit = old->address_limit; /* RLIMIT_AS outlives exec */
	for (unsigned i = 0; i < image->segment_count; i++) {
		*error = load_segment(memory, file, &image->segments[i]);
		if (*error)
			goto out_destroy;
	}
	memory->heap =
	    memory_add_region(memory, image->end, image->end, VM_WRITE, REGION_HEAP, error);
	if (!memory->heap)
		goto out_destroy;
	memory->brk = image->end;
	*sp = build_stack(memory, image, argv, envp, error);
	if (!*sp)
		goto out_destroy;
	*error = memory_map_kernel_page(memory, USER_CLOCK_ADDRESS, clock_user_page_phys(),
					REGION_CLOCK);
	if (*error)
		goto out_destroy;
	return memory;
out_destroy:
	memory_destroy(memory);
	return NULL;
}

static void set_entry_frame(struct trap_frame *frame, uint64_t entry, uint64_t sp)
{
	memset(frame, 0, sizeof *frame);
	frame->rip = entry;
	frame->rsp = sp;
	frame->cs = GDT_USER_CODE;
	frame->ss = GDT_USER_DATA;
	frame->rflags = USER_RFLAGS;
}

/* p->args: argv joined by spaces, cut to fit (argv is the kernel's copy);
 * the rest of the field cleared, since the process list copies it whole and
 * an earlier, longer command line must not show past the new one. */
static void note_args(struct process *p, char *const argv[])
{
	size_t used = 0;
	memset(p->args, 0, sizeof p->args);
	for (size_t i = 0; argv && argv[i] && used + 1 < sizeof p->args; i++) {
		if (i)
			p->args[used++] = ' ';
		used += strlcpy(p->args + used, argv[i], sizeof p->args - used);
		if (used >= sizeof p->args)
			used = sizeof p->args - 1;
	}
	p->args[used] = '\0';
}

int proc_exec_image(struct process *p, const void *file, size_t size, char *const argv[],
		    char *const envp[], struct trap_frame *frame)
{
	struct exec_image image;
	int error = exec_parse_elf(file, size, &image);
	if (error)
		return error;
	uint64_t sp;
	struct proc_memory *old = p->memory;
	struct proc_memory *memory = build_memory(file, &image, argv, envp, old, &sp, &error);
	if (!memory)
		return error;
	uint64_t lock_flags = spin_lock_irqsave(&proc_lock); /* the process list reads it */
	p->memory = memory;
	p->execs++; /* the kernel's mappings in the old memory go with it */
	proc_signals_exec_locked(p);
	spin_unlock_irqrestore(&proc_lock, lock_flags);
	if (thread_current() == p->thread)
		thread_set_process(p->thread, p, memory->space);
	if (old)
		memory_destroy(old);
	set_entry_frame(frame, image.entry, sp);
	note_args(p, argv);
	p->own_code_start = image.own_code_start;
	p->own_code_end = image.own_code_end;
	p->unwind = image.unwind;
	return 0;
}

/* ---- New processes from programs ------------------------------------------ */

/* A new process running image, named after name's last component. */
static int spawn(const void *image, size_t size, const char *name, char *const argv[],
		 char *const envp[])
{
	static char *const no_environment[] = {NULL};
	int error;
	struct process *p = proc_alloc(proc_current(), name, &error);
	if (!p)
		return error;
	proc_set_name(p, name);
	proc_start_session(p); /* a program the kernel starts (a monitor) is nobody's job */
	error = proc_files_spawn(p);
	if (!error)
		error = proc_exec_image(p, image, size, argv, envp ? envp : no_environment,
					&p->start_frame);
	int pid = p->pid; /* once started, any kernel thread may reap it */
	if (!error)
		error = proc_start_thread(p);
	if (error) {
		proc_free_embryo(p);
		return error;
	}
	return pid;
}

int proc_spawn_image(const void *image, size_t size, const char *name, char *const argv[])
{
	return spawn(image, size, name, argv, NULL);
}

int proc_spawn(const char *path, char *const argv[], char *const envp[])
{
	void *image;
	size_t size;
	int error = proc_read_program(path, &image, &size);
	if (error)
		return error;
	int pid = spawn(image, size, path, argv, envp);
	proc_free_program(image, size);
	return pid;
}
