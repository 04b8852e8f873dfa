/*
 * The RAM file system: directories are lists of named entries, files are
 * kmalloc'd buffers that grow (doubling) as they are written and are freed
 * when truncated to nothing (a rotated log gives its memory back).  The initrd is
 * unpacked into one at boot.  One sleeping lock, ramfs_lock, guards every
 * RAM file system's entries and file contents; it is never held while a
 * node is released, so release may free without locking.
 *
 * References: each directory entry holds one on its node, so a file lives
 * while it has a name or is open; a directory's release puts its entries.
 */
#include "vfs/vfs.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"

#define RAMFS_FILE_MAX     (256UL << 20)
#define RAMFS_MIN_CAPACITY 64

struct ram_entry {
	struct ram_entry *next;
	struct vfs_node *node; /* referenced */
	size_t length;
	char name[];
};

struct ram_node {
	struct vfs_node vnode;
	struct ram_entry *entries; /* directories, in creation order */
	char *data;                /* regular files */
	size_t capacity;
};

static struct mutex ramfs_lock = MUTEX_INIT(ramfs_lock, "ramfs");
static const struct vfs_node_ops ramfs_dir_ops;
static const struct vfs_node_ops ramfs_file_node_ops;
static const struct vfs_file_ops ramfs_file_ops;

static struct ram_node *ram(struct vfs_node *node)
{
	return node->private;
}

static struct ram_node *new_node(uint32_t mode)
{
	struct ram_node *n = kzalloc(sizeof *n);
	if (!n)
		return NULL;
	if (VFS_IS_DIR(mode))
		vfs_node_init(&n->vnode, mode, &ramfs_dir_ops, NULL, n);
	else
		vfs_node_init(&n->vnode, mode, &ramfs_file_node_ops, &ramfs_file_ops, n);
	n->vnode.links = VFS_IS_DIR(mode) ? 2 : 1;
	return n;
}

struct vfs_node *vfs_ramfs_create(void)
{
	struct ram_node *root = new_node(VFS_S_IFDIR | 0755);
	return root ? &root->vnode : NULL;
}

static struct ram_entry *find(struct ram_node *dir, const char *name, size_t length)
{
	mutex_assert_held(&ramfs_lock);
	for (struct ram_entry *e = dir->entries; e; e = e->next)
		if (e->length == length && !memcmp(e->name, name, length))
			return e;
	return NULL;
}

static int ramfs_lookup(struct vfs_node *dir, const char *name, size_t length,
			struct vfs_node **child)
{
	mutex_lock(&ramfs_lock);
	struct ram_entry *e = find(ram(dir), name, length);
	if (e)
		*child = vfs_node_get(e->node);
	mutex_unlock(&ramfs_lock);
	return e ? 0 : -ENOENT;
}

static void append(struct ram_node *dir, struct ram_entry *entry)
{
	struct ram_entry **slot = &dir->entries;
	while (*slot)
		slot = &(*slot)->next;
	*slot = entry;
}

static int ramfs_create(struct vfs_node *dir, const char *name, size_t length, uint32_t mode,
			struct vfs_node **child)
{
	if (length == 0 || length > VFS_NAME_MAX)
		return length ? -ENAMETOOLONG : -ENOENT;
	struct ram_entry *entry = kmalloc(sizeof *entry + length + 1);
	struct ram_node *node = new_node(mode);
	if (!entry || !node) {
		kfree(entry);
		kfree(node);
		return -ENOMEM;
	}
	memcpy(entry->name, name, length);
	entry->name[length] = '\0';
	entry->length = length;
	entry->next = NULL;
	entry->node = &node->vnode; /* the entry's reference */
	mutex_lock(&ramfs_lock);
	bool exists = find(ram(dir), name, length) != NULL;
	if (!exists) {
		append(ram(dir), entry);
		*child = vfs_node_get(&node->vnode);
		if (VFS_IS_DIR(mode))
			dir->links++;
	}
	mutex_unlock(&ramfs_lock);
	if (exists) {
		kfree(entry);
		kfree(node);
		return -EEXIST;
	}
	return 0;
}

/* Checks that entry may go (rmdir or unlink, as asked). */
static int check_unlink(struct ram_entry *entry, bool dir_wanted)
{
	if (!entry)
		return -ENOENT;
	bool is_dir = VFS_IS_DIR(entry->node->mode);
	if (is_dir && !dir_wanted)
		return -EISDIR;
	if (!is_dir && dir_wanted)
		return -ENOTDIR;
	if (is_dir && ram(entry->node)->entries)
		return -ENOTEMPTY;
	return 0;
}

static int ramfs_unlink(struct vfs_node *dir, const char *name, size_t length, bool dir_wanted)
{
	mutex_lock(&ramfs_lock);
	struct ram_entry *entry = find(ram(dir), name, length);
	int err = check_unlink(entry, dir_wanted);
	if (!err) {
		struct ram_entry **slot = &ram(dir)->entries;
		while (*slot != entry)
			slot = &(*slot)->next;
		*slot = entry->next;
		entry->node->links = 0;
		if (dir_wanted)
			dir->links--;
	}
	mutex_unlock(&ramfs_lock);
	if (!err) {
		vfs_node_put(entry->node);
		kfree(entry);
	}
	return err;
}

static uint8_t dirent_type(uint32_t mode)
{
	switch (mode & VFS_S_IFMT) {
	case VFS_S_IFDIR: return VFS_DT_DIR;
	case VFS_S_IFREG: return VFS_DT_REG;
	case VFS_S_IFCHR: return VFS_DT_CHR;
	case VFS_S_IFIFO: return VFS_DT_FIFO;
	default: return VFS_DT_UNKNOWN;
	}
}

static int ramfs_readdir(struct vfs_node *dir, uint64_t index, struct vfs_dirent *entry)
{
	mutex_lock(&ramfs_lock);
	struct ram_entry *e = ram(dir)->entries;
	while (e && index--)
		e = e->next;
	if (e) {
		entry->inode = e->node->inode;
		entry->type = dirent_type(e->node->mode);
		memcpy(entry->name, e->name, e->length + 1);
	}
	mutex_unlock(&ramfs_lock);
	return e ? 1 : 0;
}

/* Makes room for size bytes (zeroing what lies past the old end). */
static int reserve(struct ram_node *file, uint64_t size)
{
	mutex_assert_held(&ramfs_lock);
	if (size > RAMFS_FILE_MAX)
		return -EFBIG;
	if (size > file->capacity) {
		size_t capacity = file->capacity ? file->capacity : RAMFS_MIN_CAPACITY;
		while (capacity < size)
			capacity *= 2;
		char *data = krealloc(file->data, capacity);
		if (!data)
			return -ENOMEM;
		file->data = data;
		file->capacity = capacity;
	}
	if (size > file->vnode.size)
		memset(file->data + file->vnode.size, 0, size - file->vnode.size);
	return 0;
}

static int ramfs_truncate(struct vfs_node *node, uint64_t size)
{
	mutex_lock(&ramfs_lock);
	if (size == 0) { /* emptied (O_TRUNC: a rotated log): its memory goes back */
		struct ram_node *file = ram(node);
		kfree(file->data);
		file->data = NULL;
		file->capacity = 0;
	}
	int err = reserve(ram(node), size);
	if (!err)
		node->size = size;
	mutex_unlock(&ramfs_lock);
	return err;
}

static void ramfs_release(struct vfs_node *node)
{
	struct ram_node *n = ram(node);
	while (n->entries) {
		struct ram_entry *e = n->entries;
		n->entries = e->next;
		vfs_node_put(e->node);
		kfree(e);
	}
	kfree(n->data);
	kfree(n);
}

static int64_t ramfs_read(struct vfs_file *file, void *buffer, size_t length, uint64_t offset)
{
	struct vfs_node *node = file->node;
	mutex_lock(&ramfs_lock);
	size_t n = 0;
	if (offset < node->size) {
		n = node->size - offset < length ? node->size - offset : length;
		memcpy(buffer, ram(node)->data + offset, n);
	}
	mutex_unlock(&ramfs_lock);
	return (int64_t)n;
}

static int64_t ramfs_write(struct vfs_file *file, const void *buffer, size_t length,
			   uint64_t offset)
{
	struct vfs_node *node = file->node;
	if (length == 0)
		return 0;
	if (offset + length < offset)
		return -EFBIG;
	mutex_lock(&ramfs_lock);
	int err = reserve(ram(node), offset + length);
	if (!err) {
		memcpy(ram(node)->data + offset, buffer, length);
		if (offset + length > node->size)
			node->size = offset + length;
	}
	mutex_unlock(&ramfs_lock);
	return err ? err : (int64_t)length;
}

static const struct vfs_node_ops ramfs_dir_ops = {
    .lookup = ramfs_lookup,
    .create = ramfs_create,
    .unlink = ramfs_unlink,
    .readdir = ramfs_readdir,
    .release = ramfs_release,
};

static const struct vfs_node_ops ramfs_file_node_ops = {
    .truncate = ramfs_truncate,
    .release = ramfs_release,
};

static const struct vfs_file_ops ramfs_file_ops = {
    .read = ramfs_read,
    .write = ramfs_write,
};
