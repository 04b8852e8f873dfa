/*
 * The /dev directory: a fixed table of character devices, each a node of
 * its own.  Devices are only added, under devfs_lock; a slot, once filled,
 * never changes, so readers take the count with an acquire load and read
 * the slots below it without the lock.
 */
#include "devfs/devfs.h"

#include "devfs/internal.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

/* A device's node lives for ever; its private pointer is the one files
 * opened on it get. */
struct device {
	char name[DEVFS_NAME_MAX];
	struct vfs_node node;
};

static struct device *devices[DEVFS_MAX_DEVICES];
static unsigned device_count;
static struct spinlock devfs_lock = SPINLOCK_INIT("devfs");
static struct vfs_node *root;
static struct mutex create_lock = MUTEX_INIT(create_lock, "devfs.create");

static unsigned count(void)
{
	return __atomic_load_n(&device_count, __ATOMIC_ACQUIRE);
}

static int devfs_lookup(struct vfs_node *dir, const char *name, size_t length,
			struct vfs_node **child)
{
	unsigned n = count();
	for (unsigned i = 0; i < n; i++) {
		struct device *d = devices[i];
		if (strlen(d->name) == length && !memcmp(d->name, name, length)) {
			*child = vfs_node_get(&d->node);
			return 0;
		}
	}
	return -ENOENT;
}

static int devfs_readdir(struct vfs_node *dir, uint64_t index, struct vfs_dirent *entry)
{
	if (index >= count())
		return 0;
	struct device *d = devices[index];
	entry->inode = d->node.inode;
	entry->type = VFS_DT_CHR;
	strlcpy(entry->name, d->name, sizeof entry->name);
	return 1;
}

static const struct vfs_node_ops devfs_dir_ops = {
    .lookup = devfs_lookup,
    .readdir = devfs_readdir,
};

static bool valid_name(const char *name)
{
	size_t length = name ? strnlen(name, DEVFS_NAME_MAX) : 0;
	return length > 0 && length < DEVFS_NAME_MAX && !strchr(name, '/');
}

int devfs_register(const char *name, unsigned mode, const struct vfs_file_ops *ops, void *private)
{
	struct vfs_node *dummy;
	if (!valid_name(name) || !ops || mode > 0777)
		return -EINVAL;
	struct device *d = kzalloc(sizeof *d);
	if (!d)
		return -ENOMEM;
	strlcpy(d->name, name, sizeof d->name);
	vfs_node_init(&d->node, VFS_S_IFCHR | mode, NULL, ops, private);
	uint64_t flags = spin_lock_irqsave(&devfs_lock);
	int err = devfs_lookup(NULL, name, strlen(name), &dummy) == 0 ? -EEXIST : 0;
	if (!err && device_count == DEVFS_MAX_DEVICES)
		err = -ENOSPC;
	if (!err) {
		d->node.rdev = device_count + 1;
		devices[device_count] = d;
		__atomic_store_n(&device_count, device_count + 1, __ATOMIC_RELEASE);
	}
	spin_unlock_irqrestore(&devfs_lock, flags);
	if (err) {
		if (err == -EEXIST)
			vfs_node_put(dummy);
		kfree(d);
	}
	return err;
}

struct vfs_node *devfs_create(void)
{
	static struct vfs_node root_node;
	mutex_lock(&create_lock);
	if (!root) {
		vfs_node_init(&root_node, VFS_S_IFDIR | 0755, &devfs_dir_ops, NULL, NULL);
		root_node.links = 2;
		root = &root_node;
		devfs_register_builtin();
	}
	mutex_unlock(&create_lock);
	return vfs_node_get(root);
}
