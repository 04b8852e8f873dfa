/*
 * The RAM file system: directories are hash tables of named entries (kept
 * in creation order too, for readdir), files are kmalloc'd buffers that grow
 * (doubling) as they are written and are freed when truncated to nothing (a
 * rotated log gives its memory back), symbolic links keep their target as
 * their contents.  The initrd is unpacked into one at boot.  One sleeping
 * lock, ramfs_lock, guards every RAM file system's entries and file
 * contents; it is never held while a node is released, so release may free
 * without locking.
 *
 * Scale: lookup, insert and remove are constant time on average (a table
 * that doubles when it holds more entries than buckets); readdir at the
 * index after the last one returned is constant time too (a cursor per
 * directory), so listing a directory of n entries costs O(n), not O(n^2).
 *
 * References: each directory entry holds one on its node, so a file lives
 * while it has a name or is open; a hard link is one more entry holding one
 * more reference.  A directory's release puts its entries.
 */
#include "vfs/vfs.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "panic/panic.h"
#include "proc/proc.h"

#define RAMFS_MIN_SLOTS   16 /* page pointers a file starts with */
#define RAMFS_MIN_BUCKETS 8
#define RAMFS_LINK_MAX    65000

struct ram_entry {
	struct ram_entry *next, *previous; /* creation order */
	struct ram_entry *chain;           /* the hash bucket's list */
	struct vfs_node *node;             /* referenced */
	uint32_t hash;
	size_t length;
	char name[];
};

struct ram_node {
	struct vfs_node vnode;
	/* directories */
	struct ram_entry *first, *last;
	struct ram_entry **buckets;
	size_t bucket_count, entry_count;
	struct ram_entry *cursor; /* the entry readdir returned last, at cursor_index */
	uint64_t cursor_index;
	/* regular files: one page per PAGE_SIZE of contents, NULL for a hole
	 * (reads as zeros); bytes past the size in the last page are zero */
	char **pages;
	size_t page_slots;
	/* symbolic links: the target */
	char *data;
};

static struct mutex ramfs_lock = MUTEX_INIT(ramfs_lock, "ramfs");
static const struct vfs_node_ops ramfs_dir_ops;
static const struct vfs_node_ops ramfs_file_node_ops;
static const struct vfs_node_ops ramfs_link_ops;
static const struct vfs_file_ops ramfs_file_ops;

static struct ram_node *ram(struct vfs_node *node)
{
	return node->private;
}

static bool is_ramfs(const struct vfs_node *node)
{
	return node->ops == &ramfs_dir_ops || node->ops == &ramfs_file_node_ops ||
	       node->ops == &ramfs_link_ops;
}

static struct ram_node *new_node(const struct vfs_create *what)
{
	struct ram_node *n = kzalloc(sizeof *n);
	if (!n)
		return NULL;
	uint32_t mode = what->mode;
	if (VFS_IS_DIR(mode))
		vfs_node_init(&n->vnode, mode, &ramfs_dir_ops, NULL, n);
	else if (VFS_IS_LNK(mode))
		vfs_node_init(&n->vnode, mode, &ramfs_link_ops, NULL, n);
	else
		vfs_node_init(&n->vnode, mode, &ramfs_file_node_ops, &ramfs_file_ops, n);
	n->vnode.links = VFS_IS_DIR(mode) ? 2 : 1;
	n->vnode.uid = what->uid;
	n->vnode.gid = what->gid;
	if (VFS_IS_LNK(mode)) {
		size_t length = strlen(what->link_target);
		n->data = kmalloc(length);
		if (!n->data) {
			kfree(n);
			return NULL;
		}
		memcpy(n->data, what->link_target, length);
		n->vnode.size = length;
	}
	return n;
}

struct vfs_node *vfs_ramfs_create(void)
{
	struct vfs_create what = {.mode = VFS_S_IFDIR | 0755};
	struct ram_node *root = new_node(&what);
	return root ? &root->vnode : NULL;
}

/* ---- The hash table --------------------------------------------------------- */

static uint32_t hash_name(const char *name, size_t length)
{
	uint32_t hash = 2166136261u; /* FNV-1a */
	for (size_t i = 0; i < length; i++)
		hash = (hash ^ (uint8_t)name[i]) * 16777619u;
	return hash;
}

static struct ram_entry *find(struct ram_node *dir, const char *name, size_t length)
{
	mutex_assert_held(&ramfs_lock);
	if (!dir->bucket_count)
		return NULL;
	uint32_t hash = hash_name(name, length);
	for (struct ram_entry *e = dir->buckets[hash % dir->bucket_count]; e; e = e->chain)
		if (e->hash == hash && e->length == length && !memcmp(e->name, name, length))
			return e;
	return NULL;
}

/* Rehashes dir into count buckets; keeps the old table when memory is short
 * (lookups stay right, only slower). */
static void rehash(struct ram_node *dir, size_t count)
{
	struct ram_entry **buckets = kzalloc(count * sizeof *buckets);
	if (!buckets)
		return;
	for (struct ram_entry *e = dir->first; e; e = e->next) {
		e->chain = buckets[e->hash % count];
		buckets[e->hash % count] = e;
	}
	kfree(dir->buckets);
	dir->buckets = buckets;
	dir->bucket_count = count;
}

/* Grows dir's table for one more entry.  Returns 0, or -ENOMEM when it has
 * no table at all. */
static int make_room(struct ram_node *dir)
{
	if (dir->entry_count + 1 > dir->bucket_count)
		rehash(dir, dir->bucket_count ? dir->bucket_count * 2 : RAMFS_MIN_BUCKETS);
	return dir->bucket_count ? 0 : -ENOMEM;
}

/* Appends entry (its hash set) to dir. */
static int insert(struct ram_node *dir, struct ram_entry *entry)
{
	mutex_assert_held(&ramfs_lock);
	if (make_room(dir))
		return -ENOMEM;
	size_t slot = entry->hash % dir->bucket_count;
	entry->chain = dir->buckets[slot];
	dir->buckets[slot] = entry;
	entry->next = NULL;
	entry->previous = dir->last;
	if (dir->last)
		dir->last->next = entry;
	else
		dir->first = entry;
	dir->last = entry;
	dir->entry_count++;
	return 0;
}

static void take_out(struct ram_node *dir, struct ram_entry *entry)
{
	mutex_assert_held(&ramfs_lock);
	struct ram_entry **slot = &dir->buckets[entry->hash % dir->bucket_count];
	while (*slot != entry)
		slot = &(*slot)->chain;
	*slot = entry->chain;
	if (entry->previous)
		entry->previous->next = entry->next;
	else
		dir->first = entry->next;
	if (entry->next)
		entry->next->previous = entry->previous;
	else
		dir->last = entry->previous;
	dir->entry_count--;
	dir->cursor = NULL; /* indexes after it moved */
}

static struct ram_entry *new_entry(const char *name, size_t length, struct vfs_node *node)
{
	struct ram_entry *entry = kmalloc(sizeof *entry + length + 1);
	if (!entry)
		return NULL;
	memcpy(entry->name, name, length);
	entry->name[length] = '\0';
	entry->length = length;
	entry->hash = hash_name(name, length);
	entry->node = node;
	return entry;
}

/* ---- Directory operations ------------------------------------------------------ */

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

/* Adds entry to dir unless the name exists; dir still linked (not removed). */
static int add_entry(struct vfs_node *dir, struct ram_entry *entry)
{
	mutex_assert_held(&ramfs_lock);
	if (dir->links == 0)
		return -ENOENT;
	if (find(ram(dir), entry->name, entry->length))
		return -EEXIST;
	return insert(ram(dir), entry);
}

static int ramfs_create(struct vfs_node *dir, const char *name, size_t length,
			const struct vfs_create *what, struct vfs_node **child)
{
	if (length == 0 || length > VFS_NAME_MAX)
		return length ? -ENAMETOOLONG : -ENOENT;
	struct ram_node *node = new_node(what);
	struct ram_entry *entry = node ? new_entry(name, length, &node->vnode) : NULL;
	if (!entry) {
		if (node)
			node->vnode.links = 0;
		vfs_node_put(node ? &node->vnode : NULL);
		return -ENOMEM;
	}
	mutex_lock(&ramfs_lock);
	int err = add_entry(dir, entry);
	if (!err) {
		*child = vfs_node_get(&node->vnode);
		if (VFS_IS_DIR(what->mode))
			dir->links++;
	}
	mutex_unlock(&ramfs_lock);
	if (err) {
		kfree(entry);
		node->vnode.links = 0; /* never named */
		vfs_node_put(&node->vnode);
	}
	return err;
}

static int ramfs_link(struct vfs_node *dir, const char *name, size_t length, struct vfs_node *node)
{
	if (length == 0 || length > VFS_NAME_MAX)
		return length ? -ENAMETOOLONG : -ENOENT;
	if (!is_ramfs(node))
		return -EXDEV;
	struct ram_entry *entry = new_entry(name, length, node);
	if (!entry)
		return -ENOMEM;
	mutex_lock(&ramfs_lock);
	int err = node->links >= RAMFS_LINK_MAX ? -EMLINK
		  : node->links == 0            ? -ENOENT /* its last name went meanwhile */
						: add_entry(dir, entry);
	if (!err) {
		vfs_node_get(node);
		node->links++;
	}
	mutex_unlock(&ramfs_lock);
	if (err)
		kfree(entry);
	return err;
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
	if (is_dir && ram(entry->node)->entry_count)
		return -ENOTEMPTY;
	return 0;
}

/* Takes entry out of dir and its node's link count down.  Lock held; the
 * caller puts entry->node and frees entry after dropping it. */
static void remove_entry(struct vfs_node *dir, struct ram_entry *entry)
{
	take_out(ram(dir), entry);
	if (VFS_IS_DIR(entry->node->mode)) {
		entry->node->links = 0;
		dir->links--;
	} else {
		entry->node->links--;
	}
}

static int ramfs_unlink(struct vfs_node *dir, const char *name, size_t length, bool dir_wanted)
{
	mutex_lock(&ramfs_lock);
	struct ram_entry *entry = find(ram(dir), name, length);
	int err = check_unlink(entry, dir_wanted);
	if (!err)
		remove_entry(dir, entry);
	mutex_unlock(&ramfs_lock);
	if (!err) {
		vfs_node_put(entry->node);
		kfree(entry);
	}
	return err;
}

/* Whether moved may replace what target names (POSIX rename's rules). */
static int check_replace(struct ram_entry *moved, struct ram_entry *target)
{
	if (!target)
		return 0;
	bool moved_dir = VFS_IS_DIR(moved->node->mode), target_dir = VFS_IS_DIR(target->node->mode);
	if (moved_dir && !target_dir)
		return -ENOTDIR;
	if (!moved_dir && target_dir)
		return -EISDIR;
	return target_dir && ram(target->node)->entry_count ? -ENOTEMPTY : 0;
}

static int ramfs_rename(struct vfs_node *old_dir, const char *old_name, size_t old_length,
			struct vfs_node *new_dir, const char *new_name, size_t new_length)
{
	if (new_length == 0 || new_length > VFS_NAME_MAX)
		return new_length ? -ENAMETOOLONG : -ENOENT;
	if (!is_ramfs(new_dir))
		return -EXDEV;
	struct ram_entry *fresh = new_entry(new_name, new_length, NULL), *target = NULL;
	if (!fresh)
		return -ENOMEM;
	mutex_lock(&ramfs_lock);
	struct ram_entry *moved = find(ram(old_dir), old_name, old_length);
	target = find(ram(new_dir), new_name, new_length);
	int err = !moved ? -ENOENT : new_dir->links == 0 ? -ENOENT : 0;
	bool same = !err && target && target->node == moved->node; /* POSIX: nothing to do */
	if (!err && !same)
		err = check_replace(moved, target);
	if (!err && !same)
		err = make_room(ram(new_dir)); /* so that the insert below cannot fail */
	if (!err && !same) {
		if (target)
			remove_entry(new_dir, target);
		bool dir = VFS_IS_DIR(moved->node->mode);
		take_out(ram(old_dir), moved);
		fresh->node = moved->node;   /* the entry's reference moves with it */
		insert(ram(new_dir), fresh); /* cannot fail: make_room above */
		if (dir && old_dir != new_dir) {
			old_dir->links--;
			new_dir->links++;
		}
	}
	mutex_unlock(&ramfs_lock);
	if (err || same) {
		kfree(fresh);
		return err;
	}
	kfree(moved);
	if (target) {
		vfs_node_put(target->node);
		kfree(target);
	}
	return 0;
}

static uint8_t dirent_type(uint32_t mode)
{
	switch (mode & VFS_S_IFMT) {
	case VFS_S_IFDIR: return VFS_DT_DIR;
	case VFS_S_IFREG: return VFS_DT_REG;
	case VFS_S_IFCHR: return VFS_DT_CHR;
	case VFS_S_IFIFO: return VFS_DT_FIFO;
	case VFS_S_IFLNK: return VFS_DT_LNK;
	default: return VFS_DT_UNKNOWN;
	}
}

/* The index'th entry of dir, from the cursor when it lies at or before it. */
static struct ram_entry *entry_at(struct ram_node *dir, uint64_t index)
{
	struct ram_entry *e = dir->first;
	uint64_t at = 0;
	if (dir->cursor && dir->cursor_index <= index) {
		e = dir->cursor;
		at = dir->cursor_index;
	}
	for (; e && at < index; at++)
		e = e->next;
	if (e) {
		dir->cursor = e;
		dir->cursor_index = index;
	}
	return e;
}

static int ramfs_readdir(struct vfs_node *dir, uint64_t index, struct vfs_dirent *entry)
{
	mutex_lock(&ramfs_lock);
	struct ram_entry *e = entry_at(ram(dir), index);
	if (e) {
		entry->inode = e->node->inode;
		entry->type = dirent_type(e->node->mode);
		memcpy(entry->name, e->name, e->length + 1);
	}
	mutex_unlock(&ramfs_lock);
	return e ? 1 : 0;
}

/* ---- File contents --------------------------------------------------------------- */

/* A file may hold as much as the machine has memory. */
static uint64_t file_size_limit(void)
{
	return pmm_count_total() * PAGE_SIZE;
}

/* Of left bytes from file offset at, those in at's page. */
static size_t bytes_in_page(uint64_t at, size_t left)
{
	size_t room = PAGE_SIZE - (size_t)(at % PAGE_SIZE);
	return room < left ? room : left;
}

static size_t pages_for(uint64_t size)
{
	return (size_t)((size + PAGE_SIZE - 1) / PAGE_SIZE);
}

/* Makes file's page array hold count pointers (the new ones NULL). */
static int ensure_slots(struct ram_node *file, size_t count)
{
	mutex_assert_held(&ramfs_lock);
	if (count <= file->page_slots)
		return 0;
	size_t slots = file->page_slots ? file->page_slots : RAMFS_MIN_SLOTS;
	while (slots < count)
		slots *= 2;
	char **pages = krealloc(file->pages, slots * sizeof *pages);
	if (!pages)
		return -ENOMEM;
	memset(pages + file->page_slots, 0, (slots - file->page_slots) * sizeof *pages);
	file->pages = pages;
	file->page_slots = slots;
	return 0;
}

/* The page that holds offset, made (zeroed) if it was a hole; NULL when no
 * memory is left.  The slot exists (ensure_slots).  A file's page is
 * promised like a process's (proc_promise_pages): a user filling /tmp
 * otherwise took the frames other processes had been promised, and they
 * died on their first touch of them. */
static char *page_to_write(struct ram_node *file, uint64_t offset)
{
	char **slot = &file->pages[offset / PAGE_SIZE];
	if (!*slot && proc_promise_pages(1) == 0) {
		*slot = mm_alloc_pages(1, PAGE_SIZE);
		if (*slot)
			memset(*slot, 0, PAGE_SIZE);
		else
			proc_release_pages(1);
	}
	return *slot;
}

/* Gives back the pages wholly past size and zeroes the rest of the last. */
static void drop_past(struct ram_node *file, uint64_t size)
{
	size_t keep = pages_for(size);
	for (size_t i = keep; i < file->page_slots; i++) {
		if (file->pages[i]) {
			mm_free_pages(file->pages[i], 1);
			proc_release_pages(1);
		}
		file->pages[i] = NULL;
	}
	if (size % PAGE_SIZE && keep <= file->page_slots && file->pages[keep - 1])
		memset(file->pages[keep - 1] + size % PAGE_SIZE, 0, PAGE_SIZE - size % PAGE_SIZE);
	if (!size) { /* emptied (O_TRUNC: a rotated log): its memory goes back */
		kfree(file->pages);
		file->pages = NULL;
		file->page_slots = 0;
	}
}

static int ramfs_truncate(struct vfs_node *node, uint64_t size)
{
	if (size > file_size_limit())
		return -EFBIG;
	mutex_lock(&ramfs_lock);
	int err = 0;
	if (size < node->size)
		drop_past(ram(node), size);
	else
		err = ensure_slots(ram(node), pages_for(size)); /* a hole: no pages yet */
	if (!err)
		node->size = size;
	mutex_unlock(&ramfs_lock);
	return err;
}

static void ramfs_release(struct vfs_node *node)
{
	struct ram_node *n = ram(node);
	ASSERT(VFS_IS_DIR(node->mode) || node->links == 0); /* a named file holds a reference */
	while (n->first) {                                  /* an unmounted tree: its names go */
		struct ram_entry *e = n->first;
		n->first = e->next;
		if (VFS_IS_DIR(e->node->mode))
			e->node->links = 0;
		else
			e->node->links--;
		vfs_node_put(e->node);
		kfree(e);
	}
	kfree(n->buckets);
	if (n->pages)
		drop_past(n, 0);
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
		for (size_t done = 0; done < n;) {
			uint64_t at = offset + done;
			size_t chunk = bytes_in_page(at, n - done);
			const char *page = ram(node)->pages[at / PAGE_SIZE];
			if (page)
				memcpy((char *)buffer + done, page + at % PAGE_SIZE, chunk);
			else
				memset((char *)buffer + done, 0, chunk);
			done += chunk;
		}
	}
	mutex_unlock(&ramfs_lock);
	return (int64_t)n;
}

/* Copies length bytes into the file from offset, making pages as it goes.
 * Returns the bytes written: fewer than length only when memory ran out. */
static size_t write_pages(struct ram_node *file, const void *buffer, size_t length, uint64_t offset)
{
	size_t done = 0;
	while (done < length) {
		uint64_t at = offset + done;
		size_t chunk = bytes_in_page(at, length - done);
		char *page = page_to_write(file, at);
		if (!page)
			break;
		memcpy(page + at % PAGE_SIZE, (const char *)buffer + done, chunk);
		done += chunk;
	}
	return done;
}

/* Writes at *offset, or with at_end at the end (O_APPEND: the end is read
 * under ramfs_lock, which every writer holds); *offset is then where. */
static int64_t ramfs_write_at(struct vfs_file *file, const void *buffer, size_t length, bool at_end,
			      uint64_t *offset)
{
	struct vfs_node *node = file->node;
	if (length == 0)
		return 0;
	mutex_lock(&ramfs_lock);
	uint64_t at = at_end ? node->size : *offset;
	int err = at + length < at || at + length > file_size_limit() ? -EFBIG : 0;
	if (!err)
		err = ensure_slots(ram(node), pages_for(at + length));
	size_t written = err ? 0 : write_pages(ram(node), buffer, length, at);
	if (written && at + written > node->size)
		node->size = at + written;
	mutex_unlock(&ramfs_lock);
	*offset = at;
	if (err == -EFBIG)
		return err;
	if (err || !written)
		return -ENOSPC; /* no memory for the page array or the first page */
	return (int64_t)written;
}

static int64_t ramfs_write(struct vfs_file *file, const void *buffer, size_t length,
			   uint64_t offset)
{
	return ramfs_write_at(file, buffer, length, false, &offset);
}

static int64_t ramfs_append(struct vfs_file *file, const void *buffer, size_t length, uint64_t *end)
{
	uint64_t at = 0;
	int64_t n = ramfs_write_at(file, buffer, length, true, &at);
	if (n > 0)
		*end = at + (uint64_t)n;
	return n;
}

static int64_t ramfs_readlink(struct vfs_node *node, char *buffer, size_t size)
{
	size_t n = node->size < size ? node->size : size;
	memcpy(buffer, ram(node)->data, n); /* a link's target never changes */
	return (int64_t)n;
}

static const struct vfs_node_ops ramfs_dir_ops = {
    .lookup = ramfs_lookup,
    .create = ramfs_create,
    .link = ramfs_link,
    .rename = ramfs_rename,
    .unlink = ramfs_unlink,
    .readdir = ramfs_readdir,
    .release = ramfs_release,
};

static const struct vfs_node_ops ramfs_file_node_ops = {
    .truncate = ramfs_truncate,
    .release = ramfs_release,
};

static const struct vfs_node_ops ramfs_link_ops = {
    .readlink = ramfs_readlink,
    .release = ramfs_release,
};

static const struct vfs_file_ops ramfs_file_ops = {
    .read = ramfs_read,
    .write = ramfs_write,
    .append = ramfs_append,
};
