/*
 * The `loglevel` command of the kernel shell: show the console's verbosity,
 * or set it by number or by name.
 *
 *     loglevel            loglevel 7            loglevel warn
 */
#include "console/console.h"

#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/string.h"

static const char *const level_names[] = {"emerg", "alert",  "crit", "err",
					  "warn",  "notice", "info", "debug"};

/* Returns the level named by text ("0".."7" or a name), or -EINVAL. */
static int parse_level(const char *text)
{
	if (text[0] >= '0' && text[0] <= '7' && text[1] == '\0')
		return text[0] - '0';
	for (int i = 0; i <= LOG_DEBUG; i++) {
		if (!strcmp(text, level_names[i]))
			return i;
	}
	return -EINVAL;
}

static int cmd_loglevel(int argc, char **argv)
{
	if (argc > 2 || (argc == 2 && parse_level(argv[1]) < 0))
		return KSHELL_USAGE;
	if (argc == 2)
		console_set_level((enum log_level)parse_level(argv[1]));
	enum log_level level = console_get_level();
	kshell_print("loglevel %d (%s)\n", level, level_names[level]);
	return 0;
}
KSHELL_COMMAND(loglevel, cmd_loglevel, "loglevel [0-7|emerg..debug]",
	       "show or set the console's verbosity");
