/* Private to modules/devfs. */
#ifndef MODULES_DEVFS_INTERNAL_H
#define MODULES_DEVFS_INTERNAL_H

/* Registers console, null and zero; called once by devfs_create. */
void devfs_register_builtin(void);
/* Registers /dev/console and hooks it to COM1 input. */
int devfs_console_register(void);
/* /dev/kmsg (kmsg.c): registers its console sink and the device. */
int devfs_kmsg_register(void);

#endif
