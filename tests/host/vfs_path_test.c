// host-test-sources: modules/vfs/path.c
/*
 * The VFS's path normalizer: joining to a working directory, ".", "..",
 * repeated and trailing slashes, ".." at the root, and the limits (a result
 * longer than the buffer, a component longer than VFS_NAME_MAX) reported as
 * errors without writing past the output buffer.
 */
#include <stdlib.h>
#include <string.h>

#include "hosttest.h"
#include "lib/errno.h"
#include "vfs/vfs.h"

static const char *normalize(const char *base, const char *path)
{
	static char out[VFS_PATH_MAX];
	int n = vfs_path_normalize(base, path, out, sizeof out);
	return n < 0 ? "(error)" : out;
}

static void dot_dot_and_dot_resolve_by_name(void)
{
	CHECK_STR_EQ(normalize(NULL, "/a/../b"), "/b");
	CHECK_STR_EQ(normalize(NULL, "/a/./b/."), "/a/b");
	CHECK_STR_EQ(normalize(NULL, "/a/b/c/../../d"), "/a/d");
	CHECK_STR_EQ(normalize("/usr", "."), "/usr");
	CHECK_STR_EQ(normalize("/usr/bin", ".."), "/usr");
	CHECK_STR_EQ(normalize(NULL, "/a/..."), "/a/..."); /* a name, not ".." */
}

static void repeated_and_trailing_slashes_collapse(void)
{
	CHECK_STR_EQ(normalize(NULL, "//x"), "/x");
	CHECK_STR_EQ(normalize(NULL, "///a//b///"), "/a/b");
	CHECK_STR_EQ(normalize(NULL, "/"), "/");
	CHECK_STR_EQ(normalize("/", "x/"), "/x");
}

static void dot_dot_at_the_root_stays_there(void)
{
	CHECK_STR_EQ(normalize(NULL, "/.."), "/");
	CHECK_STR_EQ(normalize(NULL, "/../../etc"), "/etc");
	CHECK_STR_EQ(normalize("/", "../.."), "/");
}

static void relative_paths_join_the_base(void)
{
	CHECK_STR_EQ(normalize("/home/user", "file"), "/home/user/file");
	CHECK_STR_EQ(normalize("/home/user", "../other/./f"), "/home/other/f");
	CHECK_STR_EQ(normalize(NULL, "bin/ls"), "/bin/ls");
	CHECK_STR_EQ(normalize("/ignored", "/abs"), "/abs");
}

static void empty_path_and_bad_base_are_errors(void)
{
	char out[VFS_PATH_MAX];
	CHECK_EQ(vfs_path_normalize(NULL, "", out, sizeof out), -ENOENT);
	CHECK_EQ(vfs_path_normalize(NULL, NULL, out, sizeof out), -ENOENT);
	CHECK_EQ(vfs_path_normalize("relative", "x", out, sizeof out), -EINVAL);
}

static void returns_the_length(void)
{
	char out[VFS_PATH_MAX];
	CHECK_EQ(vfs_path_normalize(NULL, "/abc/de", out, sizeof out), 7);
	CHECK_EQ(vfs_path_normalize(NULL, "/", out, sizeof out), 1);
}

static void too_long_is_enametoolong(void)
{
	char *path = malloc(2 * VFS_PATH_MAX);
	for (int i = 0; i < 2 * VFS_PATH_MAX - 1; i++)
		path[i] = i % 8 == 0 ? '/' : 'a';
	path[2 * VFS_PATH_MAX - 1] = '\0';
	char *out = malloc(VFS_PATH_MAX); /* exact size: ASan sees an overrun */
	CHECK_EQ(vfs_path_normalize(NULL, path, out, VFS_PATH_MAX), -ENAMETOOLONG);
	/* Long input that shrinks back under the limit is fine. */
	CHECK_EQ(vfs_path_normalize(NULL, "/aaaaaaaa/../b", out, VFS_PATH_MAX), 2);
	free(path);
	free(out);
}

static void long_component_is_enametoolong(void)
{
	char name[VFS_NAME_MAX + 3];
	name[0] = '/';
	memset(name + 1, 'n', VFS_NAME_MAX + 1);
	name[VFS_NAME_MAX + 2] = '\0';
	char out[1024];
	CHECK_EQ(vfs_path_normalize(NULL, name, out, sizeof out), -ENAMETOOLONG);
	name[VFS_NAME_MAX + 1] = '\0'; /* exactly VFS_NAME_MAX */
	CHECK_EQ(vfs_path_normalize(NULL, name, out, sizeof out), VFS_NAME_MAX + 1);
}

static void tiny_buffers_are_never_overrun(void)
{
	for (size_t size = 0; size < 8; size++) {
		char *out = malloc(size ? size : 1);
		int n = vfs_path_normalize(NULL, "/abc", out, size);
		CHECK(size >= 5 ? n == 4 : n == -ENAMETOOLONG);
		free(out);
	}
}

HOSTTEST_MAIN(HOSTTEST_CASE(dot_dot_and_dot_resolve_by_name),
	      HOSTTEST_CASE(repeated_and_trailing_slashes_collapse),
	      HOSTTEST_CASE(dot_dot_at_the_root_stays_there),
	      HOSTTEST_CASE(relative_paths_join_the_base),
	      HOSTTEST_CASE(empty_path_and_bad_base_are_errors), HOSTTEST_CASE(returns_the_length),
	      HOSTTEST_CASE(too_long_is_enametoolong),
	      HOSTTEST_CASE(long_component_is_enametoolong),
	      HOSTTEST_CASE(tiny_buffers_are_never_overrun))
