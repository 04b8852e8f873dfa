/*
 * The `uptime` command of the kernel shell: time since boot, and the ticks
 * this CPU's timer has counted.
 *
 *     uptime
 */
#include "time/time.h"

#include "kshell/kshell.h"

static int cmd_uptime(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	uint64_t now = clock_ns();
	kshell_print("up %lu.%06lu s, %lu tick(s) on this CPU at %u Hz\n",
		     (uint64_t)(now / NSEC_PER_SEC), (uint64_t)(now % NSEC_PER_SEC / NSEC_PER_USEC),
		     timer_tick_count(), timer_hz());
	return 0;
}
KSHELL_COMMAND(uptime, cmd_uptime, "uptime", "time since boot");
