/*
 * devfs: the device directory mounted at /dev, and the devices in it:
 * console (COM1 with a line discipline: echo, backspace, ^U, ^C, ^D), null
 * and zero.  A driver registers a character device by name with its file
 * operations; opening /dev/<name> gives a file with those operations.
 *
 *     static const struct vfs_file_ops ops = {.read = my_read, .write = my_write};
 *     devfs_register("mydev", 0666, &ops, NULL);
 *     vfs_open("/dev/mydev", VFS_O_RDWR, 0, &file);
 */
#ifndef MODULES_DEVFS_DEVFS_H
#define MODULES_DEVFS_DEVFS_H

#include <stddef.h>

#include "vfs/vfs.h"

#define DEVFS_MAX_DEVICES 16
#define DEVFS_NAME_MAX    16

/* Sizes of the console ioctls' arguments (Linux's struct termios and
 * struct winsize, as the system call copies them). */
#define DEVFS_TERMIOS_SIZE 36
#define DEVFS_WINSIZE_SIZE 8

/* The console's line length: longer lines are cut (the rest is dropped). */
#define DEVFS_CONSOLE_LINE_MAX 256

/* Returns devfs's root (referenced), making it and the built-in devices on
 * the first call, or NULL when memory ran out. */
struct vfs_node *devfs_create(void);
/* Adds /dev/name (a character device, root's, with permission bits mode;
 * private goes to every file opened on it).  Returns 0, -EEXIST, -ENOSPC
 * (DEVFS_MAX_DEVICES), -EINVAL (name empty, too long or with '/'; mode
 * outside 0777), -ENOMEM. */
int devfs_register(const char *name, unsigned mode, const struct vfs_file_ops *ops, void *private);

/* Feeds bytes to the console's line discipline as if typed on COM1 (tests,
 * and the receive interrupt).  Any context. */
void devfs_console_input(const char *bytes, size_t length);
/* Drops whatever the console holds: typed lines, a half-typed line, pending
 * end-of-file marks (tests). */
void devfs_console_flush(void);

#endif
