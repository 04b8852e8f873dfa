/*
 * The `mem` command of the kernel shell: free and used frames, and the kernel
 * heap's caches (mm_print_stats).
 *
 *     mem
 */
#include "mm/mm.h"

#include "kshell/kshell.h"

static int cmd_mem(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	mm_print_stats();
	return 0;
}
KSHELL_COMMAND(mem, cmd_mem, "mem", "memory: frames and kernel heap caches");
