/*
 * The initial user stack, as the System V x86_64 ABI lays it out for _start:
 *
 *     stack_top → [argv and envp strings][AT_RANDOM bytes] (padding to 16)
 *                 auxv pairs ending with AT_NULL
 *                 NULL, envp[n-1] .. envp[0]
 *                 NULL, argv[n-1] .. argv[0]
 *     rsp →       argc                        (rsp is 16-byte aligned)
 *
 * It is built in a kernel buffer that mirrors the top of the stack, so the
 * caller copies it in one go.  Sizes are checked before anything is written:
 * too much gives 0 (the caller's -E2BIG).
 */
#include "exec/exec.h"

#include "arch/x86_64/layout.h"
#include "lib/string.h"
#include "time/time.h"

#define AUXV_PAIRS 9 /* AT_PHDR .. AT_EXECFN, CLOCK_USER_AT, AT_NULL */

static size_t count_strings(char *const *list, size_t *bytes)
{
	size_t n = 0;
	for (; list && list[n]; n++)
		*bytes += strlen(list[n]) + 1;
	return n;
}

/* The buffer mirrors [stack_top - size, stack_top). */
struct stack_writer {
	uint8_t *buffer;
	size_t size;
	uint64_t stack_top;
};

static void *at(const struct stack_writer *w, uint64_t address)
{
	return w->buffer + w->size - (w->stack_top - address);
}

static void put_word(const struct stack_writer *w, uint64_t address, uint64_t value)
{
	memcpy(at(w, address), &value, sizeof value);
}

/* Copies list's strings from *cursor upwards and their addresses into the
 * words from *slot on, then a NULL word. */
static void put_strings(const struct stack_writer *w, char *const *list, size_t n, uint64_t *cursor,
			uint64_t *slot)
{
	for (size_t i = 0; i < n; i++) {
		size_t length = strlen(list[i]) + 1;
		memcpy(at(w, *cursor), list[i], length);
		put_word(w, *slot, *cursor);
		*cursor += length;
		*slot += 8;
	}
	put_word(w, *slot, 0);
	*slot += 8;
}

static void put_auxv(const struct stack_writer *w, uint64_t slot,
		     const struct exec_stack_args *args, uint64_t random_address, uint64_t execfn)
{
	const struct exec_image *image = args->image;
	const uint64_t auxv[AUXV_PAIRS][2] = {
	    {AT_PHDR, image->phdr_vaddr},
	    {AT_PHENT, 56},
	    {AT_PHNUM, image->phnum},
	    {AT_PAGESZ, PAGE_SIZE},
	    {AT_ENTRY, image->entry},
	    {AT_RANDOM, random_address},
	    {AT_EXECFN, execfn},
	    {CLOCK_USER_AT, args->clock_page},
	    {AT_NULL, 0},
	};
	for (int i = 0; i < AUXV_PAIRS; i++) {
		put_word(w, slot + 16 * i, auxv[i][0]);
		put_word(w, slot + 16 * i + 8, auxv[i][1]);
	}
}

uint64_t exec_build_stack(uint8_t *buffer, size_t buffer_size, uint64_t stack_top,
			  const struct exec_stack_args *args)
{
	size_t string_bytes = 0;
	size_t argc = count_strings(args->argv, &string_bytes);
	size_t envc = count_strings(args->envp, &string_bytes);
	if (string_bytes + 16 > buffer_size || argc + envc > buffer_size / 8)
		return 0;
	uint64_t random_address = stack_top - 16;
	uint64_t strings = random_address - string_bytes;
	size_t words = 1 + argc + 1 + envc + 1 + 2 * AUXV_PAIRS;
	uint64_t sp = (strings - words * 8) & ~(uint64_t)15;
	if (stack_top - sp > buffer_size)
		return 0;

	struct stack_writer w = {buffer, buffer_size, stack_top};
	memset(at(&w, sp), 0, stack_top - sp);
	memcpy(at(&w, random_address), args->random, 16);
	uint64_t cursor = strings, slot = sp + 8;
	put_word(&w, sp, argc);
	put_strings(&w, args->argv, argc, &cursor, &slot);
	put_strings(&w, args->envp, envc, &cursor, &slot);
	put_auxv(&w, slot, args, random_address, argc ? strings : 0);
	return sp;
}
