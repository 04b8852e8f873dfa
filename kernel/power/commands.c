/*
 * The kernel shell's commands that stop the machine: `reboot` pulses the
 * keyboard controller's reset line; `poweroff` (and its other name `exit`)
 * stops the machine as a requested stop, which QEMU with exit=qemu turns into
 * its exit status 39.
 *
 *     reboot              poweroff            exit
 */
#include "power/power.h"

#include "arch/x86_64/cpu.h"
#include "kshell/kshell.h"
#include "lib/errno.h"
#include "time/time.h"

#define KBD_CONTROLLER_COMMAND 0x64
#define KBD_PULSE_RESET        0xfe

static int cmd_reboot(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("rebooting\n");
	outb(KBD_CONTROLLER_COMMAND, KBD_PULSE_RESET);
	clock_delay_ns(100 * NSEC_PER_MSEC);
	kshell_print("reboot: the keyboard controller did not reset the machine\n");
	return -EIO;
}
KSHELL_COMMAND(reboot, cmd_reboot, "reboot", "reset the machine");

static int cmd_poweroff(int argc, char **argv)
{
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("stopping the machine\n");
	power_stop(POWER_REQUESTED);
}
KSHELL_COMMAND(poweroff, cmd_poweroff, "poweroff", "stop the machine (QEMU exits with exit=qemu)");
KSHELL_COMMAND(exit, cmd_poweroff, "exit", "the same as poweroff");
