/*
 * The shell's own commands: help, version (and its other name uname), echo.
 * Every other command is declared with KSHELL_COMMAND in the commands.c of
 * the module it belongs to (kernel/mm/commands.c has `mem`, and so on); the
 * section is the table.
 * A command checks its arguments first, returns KSHELL_USAGE when they are
 * wrong, and only then acts.
 */
#include "kshell/internal.h"

#include "cpu/percpu.h"
#include "lib/errno.h"
#include "time/time.h"
#include "version.h"

static int cmd_help(int argc, char **argv)
{
	if (argc > 2)
		return KSHELL_USAGE;
	if (argc == 2) {
		const struct kshell_command *command = kshell_find_command(argv[1]);
		if (!command)
			return -ENOENT;
		kshell_print("usage: %s\n  %s\n", command->usage, command->help);
		return 0;
	}
	for (const struct kshell_command *c = __kshell_commands_start; c < __kshell_commands_end;
	     c++)
		kshell_print("  %-28s %s\n", c->usage, c->help);
	return 0;
}
KSHELL_COMMAND(help, cmd_help, "help [command]", "list the commands, or explain one");

static int cmd_version(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("microScope %s x86_64, %u CPU(s), TSC %lu MHz (calibrated against %s)\n",
		     MICROSCOPE_VERSION, cpu_count, clock_tsc_hz() / 1000000, clock_reference());
	return 0;
}
KSHELL_COMMAND(version, cmd_version, "version", "system name, version and machine");
KSHELL_COMMAND(uname, cmd_version, "uname", "the same as version");

static int cmd_echo(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		kshell_print("%s%s", argv[i], i + 1 < argc ? " " : "");
	kshell_print("\n");
	return 0;
}
KSHELL_COMMAND(echo, cmd_echo, "echo [word...]", "print the words");
