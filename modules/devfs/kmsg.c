/*
 * /dev/kmsg: the kernel's console output kept for reading back (`dmesg`).
 * A console sink copies every byte the console writes into a ring of
 * KMSG_SIZE bytes.  Each open file reads on from its own cursor (bytes
 * counted since boot, kept in the file's position, which the VFS leaves to
 * devices), skipping what was overwritten already: `cat /dev/kmsg` prints
 * the last 64 KiB of the log, and a reader that keeps its descriptor open
 * reads only what is new.  The sink runs under the console's lock with
 * interrupts off: a copy, no sleeping; kmsg.lock orders it against readers.
 * Two threads reading one open file at once may both see the same bytes.
 */
#include "devfs/devfs.h"

#include "console/console.h"
#include "devfs/internal.h"
#include "lib/string.h"

#define KMSG_SIZE (64 * 1024)

static struct {
	struct spinlock lock;
	uint64_t total; /* bytes written since boot */
} kmsg = {.lock = SPINLOCK_INIT("kmsg")};
static char ring[KMSG_SIZE]; /* apart from kmsg: zeroed memory (.bss), not 64 KiB of the image */

static void kmsg_write(const char *text, size_t length)
{
	uint64_t flags = spin_lock_irqsave(&kmsg.lock);
	for (size_t i = 0; i < length; i++)
		ring[(kmsg.total + i) % KMSG_SIZE] = text[i];
	kmsg.total += length;
	spin_unlock_irqrestore(&kmsg.lock, flags);
}

static struct console_sink kmsg_sink = {.name = "kmsg", .write = kmsg_write};

static int64_t kmsg_read(struct vfs_file *file, void *buffer, size_t length, uint64_t offset)
{
	char *out = buffer;
	uint64_t flags = spin_lock_irqsave(&kmsg.lock);
	uint64_t oldest = kmsg.total > KMSG_SIZE ? kmsg.total - KMSG_SIZE : 0;
	uint64_t from = file->position > oldest ? file->position : oldest;
	size_t n = 0;
	for (; n < length && from + n < kmsg.total; n++)
		out[n] = ring[(from + n) % KMSG_SIZE];
	file->position = from + n;
	spin_unlock_irqrestore(&kmsg.lock, flags);
	return (int64_t)n;
}

static const struct vfs_file_ops kmsg_ops = {.read = kmsg_read};

int devfs_kmsg_register(void)
{
	console_register(&kmsg_sink);
	/* root's alone (Linux's dmesg_restrict): the kernel's lines say what
	 * other users' processes did */
	return devfs_register("kmsg", 0600, &kmsg_ops, NULL);
}
