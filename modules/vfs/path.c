/*
 * Path names, by name only: a path is joined to its base directory and its
 * "." and ".." components and repeated slashes are resolved before any file
 * system sees it, so every lookup walks an absolute path with neither.  ".."
 * at the root stays at the root.  There are no symbolic links, so resolving
 * ".." by name gives the same answer as walking up the tree; the one
 * difference is that "/file/.." names "/" instead of failing with ENOTDIR.
 */
#include "vfs/vfs.h"

#include "lib/errno.h"
#include "lib/string.h"

/* Appends one component to out (length *used, never empty, starting "/"). */
static int push_component(char *out, size_t size, size_t *used, const char *name, size_t length)
{
	if (length > VFS_NAME_MAX)
		return -ENAMETOOLONG;
	size_t slash = *used > 1 ? 1 : 0;
	if (*used + slash + length + 1 > size)
		return -ENAMETOOLONG;
	if (slash)
		out[(*used)++] = '/';
	memcpy(out + *used, name, length);
	*used += length;
	out[*used] = '\0';
	return 0;
}

/* Removes the last component of out ("/a/b" → "/a", "/a" → "/"). */
static void pop_component(char *out, size_t *used)
{
	while (*used > 1 && out[*used - 1] != '/')
		(*used)--;
	if (*used > 1)
		(*used)--;
	out[*used] = '\0';
}

/* Applies every component of path to out. */
static int apply_path(char *out, size_t size, size_t *used, const char *path)
{
	while (*path) {
		while (*path == '/')
			path++;
		const char *start = path;
		while (*path && *path != '/')
			path++;
		size_t length = (size_t)(path - start);
		if (length == 0 || (length == 1 && start[0] == '.'))
			continue;
		if (length == 2 && start[0] == '.' && start[1] == '.') {
			pop_component(out, used);
			continue;
		}
		int err = push_component(out, size, used, start, length);
		if (err)
			return err;
	}
	return 0;
}

int vfs_path_normalize(const char *base, const char *path, char *out, size_t size)
{
	if (!path || !path[0])
		return -ENOENT;
	if (base && base[0] != '/')
		return -EINVAL;
	if (size < 2)
		return -ENAMETOOLONG;
	size_t used = 1;
	out[0] = '/';
	out[1] = '\0';
	int err = 0;
	if (path[0] != '/' && base)
		err = apply_path(out, size, &used, base);
	if (!err)
		err = apply_path(out, size, &used, path);
	if (err) {
		out[0] = '\0';
		return err;
	}
	return (int)used;
}
