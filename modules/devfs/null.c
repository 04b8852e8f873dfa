/*
 * /dev/null (reads end at once, writes vanish) and /dev/zero (reads give
 * zeros, writes vanish), and the registration of every built-in device.
 */
#include "devfs/devfs.h"

#include "devfs/internal.h"
#include "lib/string.h"
#include "panic/panic.h"

static int64_t null_read(struct vfs_file *file, void *buffer, size_t length, uint64_t offset)
{
	return 0;
}

static int64_t discard_write(struct vfs_file *file, const void *buffer, size_t length,
			     uint64_t offset)
{
	return (int64_t)length;
}

static int64_t zero_read(struct vfs_file *file, void *buffer, size_t length, uint64_t offset)
{
	memset(buffer, 0, length);
	return (int64_t)length;
}

static const struct vfs_file_ops null_ops = {.read = null_read, .write = discard_write};
static const struct vfs_file_ops zero_ops = {.read = zero_read, .write = discard_write};

void devfs_register_builtin(void)
{
	if (devfs_console_register() < 0 || devfs_register("null", 0666, &null_ops, NULL) < 0 ||
	    devfs_register("zero", 0666, &zero_ops, NULL) < 0 || devfs_kmsg_register() < 0)
		panic("devfs: cannot register the built-in devices");
}
