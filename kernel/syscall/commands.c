/*
 * The `syscalls` command of the kernel shell: the system call table as the
 * running kernel holds it, by number, with the source file of each handler.
 * docs/SYSCALLS.md is the same table written from the sources
 * (tools/mksyscalls.py), with the arguments.
 *
 *     syscalls
 */
#include "syscall/syscall.h"

#include "kshell/kshell.h"

static int cmd_syscalls(int argc, char **argv)
{
	unsigned count = 0;
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("number  name                       file\n");
	for (unsigned number = 0; number < SYSCALL_TABLE_SIZE; number++) {
		const struct syscall_entry *entry = syscall_find(number);
		if (!entry)
			continue;
		kshell_print("%6u  %-25s  %s\n", entry->number, entry->name, entry->file);
		count++;
	}
	kshell_print("%u system call(s)\n", count);
	return 0;
}
KSHELL_COMMAND(syscalls, cmd_syscalls, "syscalls", "the system call table: number, name, file");
