/*
 * Unpacking the initrd into the VFS.  Each entry becomes a directory or a
 * regular file under the target root through the public VFS API, so the
 * archive's contents end up in ordinary RAM file system files that can be
 * written, grown and removed; the archive itself (reserved boot memory) is
 * only read.  Parent directories are made on the way, since archives built
 * from a file list need not name them.
 */
#include "initrd/initrd.h"

#include "boot/bootinfo.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "vfs/vfs.h"

#define CPIO_MAGIC_PREFIX "07070"

/* Makes every directory above path ("/a/b/c": "/a", "/a/b"). */
static int make_parents(const char *path)
{
	char prefix[VFS_PATH_MAX];
	for (const char *slash = strchr(path + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		size_t length = (size_t)(slash - path);
		memcpy(prefix, path, length);
		prefix[length] = '\0';
		int err = vfs_mkdir(prefix, 0755);
		if (err && err != -EEXIST)
			return err;
	}
	return 0;
}

static int write_file(const char *path, const struct cpio_entry *entry)
{
	struct vfs_file *file;
	int err =
	    vfs_open(path, VFS_O_WRONLY | VFS_O_CREAT | VFS_O_TRUNC, entry->mode & 07777, &file);
	if (err)
		return err;
	int64_t n = entry->size ? vfs_write(file, entry->data, entry->size) : 0;
	vfs_close(file);
	if (n < 0)
		return (int)n;
	return (size_t)n == entry->size ? 0 : -EIO;
}

/* Adds one entry under root; counts it in *stats. */
static int add_entry(const char *root, const struct cpio_entry *entry, struct initrd_stats *stats)
{
	char path[VFS_PATH_MAX];
	int n = vfs_path_normalize(root, entry->name, path, sizeof path);
	if (n == -ENOENT || (n > 0 && !strcmp(path, root)))
		return 0; /* "" or ".": the root itself */
	if (n < 0)
		return n;
	int err = make_parents(path);
	if (err)
		return err;
	if (VFS_IS_DIR(entry->mode)) {
		err = vfs_mkdir(path, entry->mode & 07777);
		stats->directories += !err;
		return err == -EEXIST ? 0 : err;
	}
	if (!VFS_IS_REG(entry->mode)) {
		stats->skipped++;
		return 0;
	}
	err = write_file(path, entry);
	if (!err) {
		stats->files++;
		stats->bytes += entry->size;
	}
	return err;
}

int initrd_unpack(const void *archive, size_t length, const char *root, struct initrd_stats *stats)
{
	struct initrd_stats counts = {0};
	struct cpio_entry entry;
	const char *why = NULL;
	size_t offset = 0;
	int err;
	if (!archive || !root || root[0] != '/')
		return -EINVAL;
	while ((err = cpio_next(archive, length, &offset, &entry, &why)) > 0) {
		err = add_entry(root, &entry, &counts);
		if (err) {
			pr_warn("initrd: cannot add '%s': error %d\n", entry.name, err);
			break;
		}
	}
	if (err == -EINVAL && why)
		pr_warn("initrd: corrupt archive at byte %lu: %s\n", (unsigned long)offset, why);
	if (stats)
		*stats = counts;
	return err < 0 ? err : 0;
}

/* The first boot module that starts like a newc archive, or NULL. */
static const struct boot_module *find_archive(void)
{
	const struct boot_info *boot = bootinfo();
	for (unsigned i = 0; i < boot->module_count; i++) {
		const struct boot_module *m = &boot->modules[i];
		if (m->end - m->start >= CPIO_HEADER_SIZE &&
		    !memcmp(phys_to_virt(m->start), CPIO_MAGIC_PREFIX, 5))
			return m;
	}
	return NULL;
}

int initrd_load_boot_module(void)
{
	const struct boot_module *m = find_archive();
	struct initrd_stats stats;
	if (!m) {
		pr_info("initrd: no initrd (%u boot module(s))\n", bootinfo()->module_count);
		return 0;
	}
	int err = initrd_unpack(phys_to_virt(m->start), m->end - m->start, "/", &stats);
	pr_info("initrd: %u files, %lu KiB (%u directories, %u skipped)%s\n", stats.files,
		(unsigned long)((stats.bytes + 1023) / 1024), stats.directories, stats.skipped,
		err ? ", incomplete" : "");
	return err;
}
