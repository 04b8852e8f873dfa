/*
 * The kernel command line (from GRUB's "multiboot2 ... ARGS" or QEMU -append).
 * Options are declared where they are used, by KERNEL_PARAM, into a linker
 * section; cmdline_apply walks the line once and calls each option's setter.
 * Unknown options and bad values are reported and ignored, never fatal.
 *
 *     static int set_level(const char *value) { ... return 0 or -1; }
 *     KERNEL_PARAM(loglevel, set_level, "0-7 or a name: console verbosity");
 */
#ifndef KERNEL_BOOT_CMDLINE_H
#define KERNEL_BOOT_CMDLINE_H

#include <stdbool.h>

struct kernel_param {
	const char *name;
	/* value is NULL for a bare "name"; returns 0, or < 0 to reject it */
	int (*set)(const char *value);
	const char *help;
};

#define KERNEL_PARAM(param_name, setter, help_text)                                        \
	static const struct kernel_param kernel_param_##param_name                         \
	    __attribute__((section(".kparams"), used, aligned(8))) = {#param_name, setter, \
								      help_text}

/* Applies every "name" or "name=value" word of cmdline to the params in
 * [first, last).  Returns the number of words reported and ignored. */
int cmdline_apply_params(const char *cmdline, const struct kernel_param *first,
			 const struct kernel_param *last);
/* The same against the kernel's own KERNEL_PARAM section. */
int cmdline_apply(const char *cmdline);
/* A setter's value "on" or "off" into *off (true for "off").  Returns 0, or
 * -1 (nothing changed) for anything else, a bare name included. */
int cmdline_on_off(const char *value, bool *off);

#endif
