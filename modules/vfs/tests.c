/*
 * The `vfs` suite: the VFS, RAM file system, initrd unpacking, devfs,
 * descriptor tables and pipes, in the running kernel.  The archive is built
 * here (cpio newc, the same bytes `cpio -o -H newc` writes) and unpacked
 * under /ktest-vfs, so the suite does not depend on a boot initrd.
 */
#include "console/console.h"
#include "devfs/devfs.h"
#include "initrd/initrd.h"
#include "joinpoint/defer.h"
#include "joinpoint/joinpoint.h"
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "pipe/pipe.h"
#include "proc/proc.h"
#include "sched/one_cpu_case.h"
#include "sched/sched.h"
#include "time/time.h"
#include "vfs/internal.h"
#include "vfs/vfs.h"

#define ARCHIVE_MAX 2048
#define TEST_ROOT   "/ktest-vfs"

struct archive {
	char bytes[ARCHIVE_MAX];
	size_t length;
};

static void pad4(struct archive *a)
{
	while (a->length % 4)
		a->bytes[a->length++] = '\0';
}

static void add(struct archive *a, const char *name, unsigned mode, const char *data)
{
	size_t size = strlen(data), name_size = strlen(name) + 1;
	a->length += (size_t)snprintf(a->bytes + a->length, ARCHIVE_MAX - a->length,
				      "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
				      1u, mode, 0u, 0u, 1u, 0u, (unsigned)size, 0u, 0u, 0u, 0u,
				      (unsigned)name_size, 0u);
	memcpy(a->bytes + a->length, name, name_size);
	a->length += name_size;
	pad4(a);
	memcpy(a->bytes + a->length, data, size);
	a->length += size;
	pad4(a);
}

static const char MOTD[] = "welcome to microScope\n";

/* Builds the test archive and unpacks it under TEST_ROOT (once). */
static int unpack_test_archive(struct initrd_stats *stats)
{
	static struct archive a;
	static int result = 1;
	static struct initrd_stats saved;
	if (result <= 0) {
		*stats = saved;
		return result;
	}
	a.length = 0;
	add(&a, ".", 0040755, "");
	add(&a, "etc", 0040755, "");
	add(&a, "etc/motd", 0100644, MOTD);
	add(&a, "./bin/hello", 0100755, "#!hello\n"); /* no entry for bin: made on the way */
	add(&a, "empty", 0100644, "");
	add(&a, "dev-node", 0020644, ""); /* a character device: skipped */
	add(&a, "TRAILER!!!", 0, "");
	int err = vfs_mkdir(TEST_ROOT, 0755);
	if (err && err != -EEXIST)
		return err;
	result = initrd_unpack(a.bytes, a.length, TEST_ROOT, &saved);
	*stats = saved;
	return result;
}

static void unpacks_an_archive(struct ktest *t)
{
	struct initrd_stats stats;
	ASSERT_EQ(t, unpack_test_archive(&stats), 0);
	EXPECT_EQ(t, stats.files, 3);
	EXPECT_EQ(t, stats.directories, 1);
	EXPECT_EQ(t, stats.skipped, 1);
	EXPECT_EQ(t, stats.bytes, sizeof MOTD - 1 + 8);
	struct vfs_stat st;
	EXPECT_EQ(t, vfs_stat(TEST_ROOT "/bin", &st), 0);
	EXPECT_TRUE(t, VFS_IS_DIR(st.mode));
	EXPECT_EQ(t, vfs_stat(TEST_ROOT "/bin/hello", &st), 0);
	EXPECT_EQ(t, st.mode, 0100755);
	EXPECT_EQ(t, vfs_stat(TEST_ROOT "/dev-node", &st), -ENOENT);
}

static void corrupt_archive_keeps_what_came_before(struct ktest *t)
{
	static struct archive a;
	a.length = 0;
	add(&a, "good", 0100644, "fine");
	size_t second = a.length;
	add(&a, "bad", 0100644, "data");
	memcpy(a.bytes + second, "07x701", 6); /* the second entry's magic */
	ASSERT_EQ(t, vfs_mkdir(TEST_ROOT "-corrupt", 0755), 0);
	EXPECT_EQ(t, initrd_unpack(a.bytes, a.length, TEST_ROOT "-corrupt", NULL), -EINVAL);
	struct vfs_stat st;
	EXPECT_EQ(t, vfs_stat(TEST_ROOT "-corrupt/good", &st), 0);
	EXPECT_EQ(t, st.size, 4);
	EXPECT_EQ(t, initrd_unpack(a.bytes, 50, TEST_ROOT "-corrupt", NULL), -EINVAL);
}

static void open_read_seek_stat(struct ktest *t)
{
	struct initrd_stats stats;
	ASSERT_EQ(t, unpack_test_archive(&stats), 0);
	struct vfs_file *f;
	char buffer[64];
	ASSERT_EQ(t, vfs_open(TEST_ROOT "/etc/../etc/./motd", VFS_O_RDONLY, 0, &f), 0);
	EXPECT_EQ(t, vfs_read(f, buffer, 7), 7);
	EXPECT_TRUE(t, !memcmp(buffer, "welcome", 7));
	EXPECT_EQ(t, vfs_lseek(f, 1, VFS_SEEK_CUR), 8);
	EXPECT_EQ(t, vfs_read(f, buffer, 2), 2);
	EXPECT_TRUE(t, !memcmp(buffer, "to", 2));
	EXPECT_EQ(t, vfs_lseek(f, -6, VFS_SEEK_END), (int64_t)sizeof MOTD - 1 - 6);
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 6);
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 0);
	EXPECT_EQ(t, vfs_lseek(f, -1, VFS_SEEK_SET), -EINVAL);
	EXPECT_EQ(t, vfs_lseek(f, 0, 7), -EINVAL);
	struct vfs_stat st;
	EXPECT_EQ(t, vfs_stat_file(f, &st), 0);
	EXPECT_EQ(t, st.size, sizeof MOTD - 1);
	EXPECT_TRUE(t, VFS_IS_REG(st.mode));
	EXPECT_EQ(t, vfs_write(f, "x", 1), -EBADF);
	vfs_close(f);
	void *whole;
	size_t length;
	ASSERT_EQ(t, vfs_read_whole_file(TEST_ROOT "/etc/motd", &whole, &length), 0);
	EXPECT_EQ(t, length, sizeof MOTD - 1);
	EXPECT_TRUE(t, !memcmp(whole, MOTD, length));
	kfree(whole);
	EXPECT_EQ(t, vfs_read_whole_file(TEST_ROOT "/etc", &whole, &length), -EISDIR);
	EXPECT_EQ(t, vfs_read_whole_file(TEST_ROOT "/nope", &whole, &length), -ENOENT);
}

static void readdir_lists_entries_in_order(struct ktest *t)
{
	struct initrd_stats stats;
	ASSERT_EQ(t, unpack_test_archive(&stats), 0);
	static const char *const expected[] = {".", "..", "etc", "bin", "empty"};
	struct vfs_file *dir;
	struct vfs_dirent entry;
	ASSERT_EQ(t, vfs_open(TEST_ROOT, VFS_O_RDONLY | VFS_O_DIRECTORY, 0, &dir), 0);
	for (unsigned i = 0; i < 5; i++) {
		ASSERT_EQ(t, vfs_readdir(dir, &entry), 1);
		EXPECT_TRUE(t, !strcmp(entry.name, expected[i]));
	}
	EXPECT_EQ(t, entry.type, VFS_DT_REG);
	EXPECT_EQ(t, vfs_readdir(dir, &entry), 0);
	EXPECT_EQ(t, vfs_lseek(dir, 0, VFS_SEEK_SET), 0); /* rewinddir */
	EXPECT_EQ(t, vfs_readdir(dir, &entry), 1);
	EXPECT_TRUE(t, !strcmp(entry.name, "."));
	EXPECT_EQ(t, vfs_read(dir, &entry, 1), -EISDIR);
	vfs_close(dir);
}

static void bad_names_give_errors(struct ktest *t)
{
	struct initrd_stats stats;
	struct vfs_file *f;
	char long_name[VFS_NAME_MAX + 8];
	ASSERT_EQ(t, unpack_test_archive(&stats), 0);
	EXPECT_EQ(t, vfs_open(TEST_ROOT "/missing", VFS_O_RDONLY, 0, &f), -ENOENT);
	EXPECT_EQ(t, vfs_open(TEST_ROOT "/etc/motd/x", VFS_O_RDONLY, 0, &f), -ENOTDIR);
	EXPECT_EQ(t, vfs_open(TEST_ROOT "/etc/motd", VFS_O_DIRECTORY, 0, &f), -ENOTDIR);
	EXPECT_EQ(t, vfs_open(TEST_ROOT "/etc", VFS_O_WRONLY, 0, &f), -EISDIR);
	EXPECT_EQ(t, vfs_open(TEST_ROOT "/etc/motd", VFS_O_CREAT | VFS_O_EXCL, 0644, &f), -EEXIST);
	EXPECT_EQ(t, vfs_open(TEST_ROOT "/etc/motd", VFS_O_ACCMODE, 0, &f), -EINVAL);
	EXPECT_EQ(t, vfs_open("", VFS_O_RDONLY, 0, &f), -ENOENT);
	EXPECT_EQ(t, vfs_open(TEST_ROOT "/no/such/dir/f", VFS_O_CREAT | VFS_O_WRONLY, 0644, &f),
		  -ENOENT);
	memset(long_name, 'n', sizeof long_name - 1);
	long_name[0] = '/';
	long_name[sizeof long_name - 1] = '\0';
	EXPECT_EQ(t, vfs_open(long_name, VFS_O_RDONLY, 0, &f), -ENAMETOOLONG);
	EXPECT_EQ(t, vfs_mkdir(TEST_ROOT "/etc", 0755), -EEXIST);
	EXPECT_EQ(t, vfs_mkdir("/", 0755), -EEXIST);
	EXPECT_EQ(t, vfs_unlink("/dev", true), -EBUSY);
	EXPECT_EQ(t, vfs_mount("/dev", vfs_ramfs_create()), -EBUSY);
}

static void writes_grow_files(struct ktest *t)
{
	struct vfs_file *f;
	char buffer[16];
	ASSERT_EQ(t, vfs_open("/ktest-grow", VFS_O_RDWR | VFS_O_CREAT | VFS_O_TRUNC, 0600, &f), 0);
	EXPECT_EQ(t, vfs_write(f, "abc", 3), 3);
	EXPECT_EQ(t, vfs_lseek(f, 10, VFS_SEEK_SET), 10);
	EXPECT_EQ(t, vfs_write(f, "z", 1), 1); /* a hole of zeros between */
	EXPECT_EQ(t, vfs_lseek(f, 0, VFS_SEEK_SET), 0);
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 11);
	EXPECT_TRUE(t, !memcmp(buffer, "abc\0\0\0\0\0\0\0z", 11));
	static char big[5000];
	memset(big, 'b', sizeof big);
	EXPECT_EQ(t, vfs_write(f, big, sizeof big), (int64_t)sizeof big);
	struct vfs_stat st;
	EXPECT_EQ(t, vfs_stat("/ktest-grow", &st), 0);
	EXPECT_EQ(t, st.size, 11 + sizeof big);
	vfs_close(f);
	ASSERT_EQ(t, vfs_open("/ktest-grow", VFS_O_WRONLY | VFS_O_APPEND, 0, &f), 0);
	EXPECT_EQ(t, vfs_write(f, "!", 1), 1);
	EXPECT_EQ(t, f->node->size, 12 + sizeof big);
	EXPECT_EQ(t, vfs_read(f, buffer, 1), -EBADF);
	vfs_close(f);
	ASSERT_EQ(t, vfs_open("/ktest-grow", VFS_O_WRONLY | VFS_O_TRUNC, 0, &f), 0);
	EXPECT_EQ(t, f->node->size, 0);
	vfs_close(f);
	EXPECT_EQ(t, vfs_unlink("/ktest-grow", false), 0);
}

static void unlink_and_rmdir(struct ktest *t)
{
	struct vfs_file *f;
	char buffer[8];
	ASSERT_EQ(t, vfs_mkdir("/ktest-dir", 0755), 0);
	ASSERT_EQ(t, vfs_open("/ktest-dir/f", VFS_O_RDWR | VFS_O_CREAT, 0644, &f), 0);
	EXPECT_EQ(t, vfs_write(f, "kept", 4), 4);
	EXPECT_EQ(t, vfs_unlink("/ktest-dir", true), -ENOTEMPTY);
	EXPECT_EQ(t, vfs_unlink("/ktest-dir", false), -EISDIR);
	EXPECT_EQ(t, vfs_unlink("/ktest-dir/f", true), -ENOTDIR);
	EXPECT_EQ(t, vfs_unlink("/ktest-dir/f", false), 0);
	EXPECT_EQ(t, vfs_unlink("/ktest-dir/f", false), -ENOENT);
	/* An open file outlives its name. */
	EXPECT_EQ(t, vfs_lseek(f, 0, VFS_SEEK_SET), 0);
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 4);
	vfs_close(f);
	EXPECT_EQ(t, vfs_unlink("/ktest-dir", true), 0);
	struct vfs_stat st;
	EXPECT_EQ(t, vfs_stat("/ktest-dir", &st), -ENOENT);
}

static void devices_null_zero_console(struct ktest *t)
{
	struct vfs_file *f;
	char buffer[8] = "xxxxxxx";
	ASSERT_EQ(t, vfs_open("/dev/null", VFS_O_RDWR, 0, &f), 0);
	EXPECT_EQ(t, vfs_write(f, "gone", 4), 4);
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 0);
	EXPECT_EQ(t, vfs_lseek(f, 0, VFS_SEEK_SET), -ESPIPE);
	EXPECT_EQ(t, vfs_ioctl(f, VFS_TCGETS, buffer), -ENOTTY);
	struct vfs_stat st;
	EXPECT_EQ(t, vfs_stat_file(f, &st), 0);
	EXPECT_EQ(t, st.mode & VFS_S_IFMT, VFS_S_IFCHR);
	vfs_close(f);
	ASSERT_EQ(t, vfs_open("/dev/zero", VFS_O_RDONLY, 0, &f), 0);
	EXPECT_EQ(t, vfs_read(f, buffer, 4), 4);
	EXPECT_EQ(t, buffer[0] | buffer[3], 0);
	vfs_close(f);
	ASSERT_EQ(t, vfs_open("/dev/console", VFS_O_WRONLY, 0, &f), 0);
	EXPECT_EQ(t, vfs_write(f, "# console write\n", 16), 16);
	uint8_t termios[DEVFS_TERMIOS_SIZE];
	EXPECT_EQ(t, vfs_ioctl(f, VFS_TCGETS, termios), 0);
	EXPECT_EQ(t, termios[17], 3); /* VINTR is ^C */
	EXPECT_EQ(t, vfs_ioctl(f, 0x1234, termios), -ENOTTY);
	vfs_close(f);
	struct vfs_dirent entry;
	unsigned found = 0;
	ASSERT_EQ(t, vfs_open("/dev", VFS_O_RDONLY, 0, &f), 0);
	while (vfs_readdir(f, &entry) > 0)
		found += !strcmp(entry.name, "console") || !strcmp(entry.name, "null");
	EXPECT_EQ(t, found, 2);
	vfs_close(f);
	EXPECT_EQ(t, vfs_open("/dev/nothing", VFS_O_RDONLY, 0, &f), -ENOENT);
	EXPECT_EQ(t, vfs_open("/dev/new", VFS_O_CREAT | VFS_O_WRONLY, 0644, &f), -ENOTSUP);
}

/* Typed bytes: "# ab", DEL, "c", Enter → a read gets "# ac\n". */
static void console_line_discipline(struct ktest *t)
{
	struct vfs_file *f;
	char buffer[32];
	ASSERT_EQ(t, vfs_open("/dev/console", VFS_O_RDONLY | VFS_O_NONBLOCK, 0, &f), 0);
	devfs_console_flush();
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), -EAGAIN);
	static const char typed[] = {'#', ' ', 'a', 'b', 0x7f, 'c', '\r'};
	devfs_console_input(typed, sizeof typed);
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 5);
	EXPECT_TRUE(t, !memcmp(buffer, "# ac\n", 5));
	devfs_console_input("# one\n# two\n", 12); /* one line per read */
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 6);
	EXPECT_EQ(t, vfs_read(f, buffer, 3), 3);
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 3);
	devfs_console_input("killed\x15# x\n", 11); /* ^U */
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 4);
	devfs_console_input("\x04", 1); /* ^D on an empty line: end of file */
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 0);
	devfs_console_input("# part\x04", 7); /* ^D after text: the text */
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 6);
	console_write("\n", 1);
	devfs_console_input("# dropped\x03", 10); /* ^C drops the line */
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), -EAGAIN);
	devfs_console_flush();
	vfs_close(f);
}

struct feeder {
	struct vfs_file *file;
	const char *text;
	size_t length;
	uint64_t delay_ns;
};

static int feed_console_later(void *arg)
{
	struct feeder *feeder = arg;
	sched_sleep_ns(feeder->delay_ns);
	devfs_console_input(feeder->text, feeder->length);
	return 0;
}

static void console_read_blocks_for_a_line(struct ktest *t)
{
	struct vfs_file *f;
	char buffer[16];
	ASSERT_EQ(t, vfs_open("/dev/console", VFS_O_RDONLY, 0, &f), 0);
	devfs_console_flush();
	struct feeder feeder = {f, "# late\n", 7, 20 * NSEC_PER_MSEC};
	struct thread *th =
	    thread_create(feed_console_later, &feeder, "feeder", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, th != NULL);
	EXPECT_EQ(t, vfs_read(f, buffer, sizeof buffer), 7);
	thread_join(th, NULL);
	vfs_close(f);
}

/* ---- Descriptor tables --------------------------------------------------- */

static struct vfs_file *open_null(void)
{
	struct vfs_file *f = NULL;
	vfs_open("/dev/null", VFS_O_RDWR, 0, &f);
	return f;
}

static void fd_table_dup_and_close(struct ktest *t)
{
	void *files = vfs_files_create();
	struct vfs_file *f, *got;
	ASSERT_TRUE(t, files != NULL);
	ASSERT_EQ(t, vfs_open("/ktest-fd", VFS_O_RDWR | VFS_O_CREAT | VFS_O_TRUNC, 0644, &f), 0);
	EXPECT_EQ(t, vfs_fd_install(files, f, false), 0);
	EXPECT_EQ(t, vfs_fd_install(files, open_null(), false), 1);
	EXPECT_EQ(t, vfs_fd_dup(files, 0), 2);
	/* dup shares the position */
	ASSERT_EQ(t, vfs_fd_get(files, 2, &got), 0);
	EXPECT_EQ(t, vfs_write(got, "12345", 5), 5);
	vfs_close(got);
	EXPECT_EQ(t, f->position, 5);
	EXPECT_EQ(t, vfs_fd_dup2(files, 0, 1), 1); /* closes /dev/null */
	ASSERT_EQ(t, vfs_fd_get(files, 1, &got), 0);
	EXPECT_TRUE(t, got == f);
	vfs_close(got);
	EXPECT_EQ(t, vfs_fd_dup2(files, 1, 1), 1);
	EXPECT_EQ(t, vfs_fd_dup2(files, 5, 1), -EBADF);
	EXPECT_EQ(t, vfs_fd_dup2(files, 0, VFS_MAX_FDS), -EBADF);
	EXPECT_EQ(t, vfs_fd_close(files, 2), 0);
	EXPECT_EQ(t, vfs_fd_close(files, 2), -EBADF);
	EXPECT_EQ(t, vfs_fd_close(files, -1), -EBADF);
	EXPECT_EQ(t, vfs_fd_get(files, 2, &got), -EBADF);
	EXPECT_EQ(t, vfs_fd_dup(files, 1), 2); /* the lowest free slot */
	EXPECT_EQ(t, f->refs, 3);
	vfs_files_release(files); /* closes all three */
	EXPECT_EQ(t, vfs_unlink("/ktest-fd", false), 0);
}

static void fd_table_fills_up(struct ktest *t)
{
	void *files = vfs_files_create();
	ASSERT_TRUE(t, files != NULL);
	struct vfs_file *f = open_null();
	ASSERT_TRUE(t, f != NULL);
	ASSERT_EQ(t, vfs_fd_install(files, f, false), 0);
	for (int fd = 1; fd < VFS_MAX_FDS; fd++)
		EXPECT_EQ(t, vfs_fd_dup(files, 0), fd);
	EXPECT_EQ(t, vfs_fd_dup(files, 0), -EMFILE);
	EXPECT_EQ(t, vfs_files_count_open(files), VFS_MAX_FDS);
	EXPECT_EQ(t, f->refs, VFS_MAX_FDS);
	vfs_files_release(files);
}

static void fork_shares_files_exec_closes_cloexec(struct ktest *t)
{
	void *parent = vfs_files_create(), *child = NULL;
	ASSERT_TRUE(t, parent != NULL);
	struct vfs_file *kept = open_null(), *dropped = open_null();
	ASSERT_EQ(t, vfs_fd_install(parent, kept, false), 0);
	ASSERT_EQ(t, vfs_fd_install(parent, dropped, true), 1);
	ASSERT_EQ(t, vfs_files_set_cwd(parent, "/dev"), 0);
	EXPECT_EQ(t, vfs_files_set_cwd(parent, "/dev/null"), -ENOTDIR);
	EXPECT_EQ(t, vfs_files_set_cwd(parent, "/nowhere"), -ENOENT);
	ASSERT_EQ(t, vfs_files_clone(parent, &child), 0);
	EXPECT_EQ(t, kept->refs, 2);
	char cwd[VFS_PATH_MAX];
	vfs_files_get_cwd(child, cwd);
	EXPECT_TRUE(t, !strcmp(cwd, "/dev"));
	vfs_files_close_on_exec(child);
	EXPECT_EQ(t, vfs_files_count_open(child), 1);
	EXPECT_EQ(t, dropped->refs, 1); /* the parent's */
	EXPECT_EQ(t, vfs_fd_set_cloexec(child, 1, true), -EBADF);
	vfs_files_release(child);
	EXPECT_EQ(t, kept->refs, 1);
	vfs_files_release(parent);
}

static void initial_table_is_the_console(struct ktest *t)
{
	void *files = vfs_files_create_initial();
	struct vfs_file *in, *err;
	ASSERT_TRUE(t, files != NULL);
	EXPECT_EQ(t, vfs_files_count_open(files), 3);
	ASSERT_EQ(t, vfs_fd_get(files, 0, &in), 0);
	ASSERT_EQ(t, vfs_fd_get(files, 2, &err), 0);
	EXPECT_TRUE(t, in == err);
	EXPECT_EQ(t, in->flags & VFS_O_ACCMODE, VFS_O_RDWR);
	vfs_close(in);
	vfs_close(err);
	vfs_files_release(files);
}

/* ---- Pipes --------------------------------------------------------------- */

static void pipe_passes_bytes_and_ends(struct ktest *t)
{
	struct vfs_file *r, *w;
	char buffer[16];
	ASSERT_EQ(t, pipe_create(0, &r, &w), 0);
	EXPECT_EQ(t, vfs_write(w, "hello", 5), 5);
	EXPECT_EQ(t, vfs_read(r, buffer, 3), 3);
	EXPECT_EQ(t, vfs_read(r, buffer, sizeof buffer), 2);
	EXPECT_EQ(t, vfs_read(w, buffer, 1), -EBADF);
	EXPECT_EQ(t, vfs_write(r, "x", 1), -EBADF);
	EXPECT_EQ(t, vfs_lseek(r, 0, VFS_SEEK_SET), -ESPIPE);
	struct vfs_stat st;
	EXPECT_EQ(t, vfs_stat_file(r, &st), 0);
	EXPECT_EQ(t, st.mode & VFS_S_IFMT, VFS_S_IFIFO);
	EXPECT_EQ(t, vfs_write(w, "end", 3), 3);
	vfs_close(w);
	EXPECT_EQ(t, vfs_read(r, buffer, sizeof buffer), 3); /* buffered data first */
	EXPECT_EQ(t, vfs_read(r, buffer, sizeof buffer), 0); /* then end of file */
	vfs_close(r);
}

static void pipe_without_reader_is_epipe(struct ktest *t)
{
	struct vfs_file *r, *w;
	ASSERT_EQ(t, pipe_create(0, &r, &w), 0);
	vfs_close(r);
	EXPECT_EQ(t, vfs_write(w, "x", 1), -EPIPE);
	vfs_close(w);
}

static void pipe_nonblocking_is_eagain(struct ktest *t)
{
	struct vfs_file *r, *w;
	static char full[PIPE_BUFFER_SIZE];
	char c;
	ASSERT_EQ(t, pipe_create(VFS_O_NONBLOCK, &r, &w), 0);
	EXPECT_EQ(t, vfs_read(r, &c, 1), -EAGAIN);
	EXPECT_EQ(t, vfs_write(w, full, sizeof full), (int64_t)sizeof full);
	EXPECT_EQ(t, vfs_write(w, "x", 1), -EAGAIN);
	vfs_close(r);
	vfs_close(w);
}

/* A poller watching one pipe sleeps through another pipe's traffic and
 * wakes for its own (poll.c's keyed notifications). */
struct pipe_poller {
	struct vfs_file *file;
	volatile unsigned rounds; /* scans that found nothing */
};

static int poll_until_readable(void *arg)
{
	struct pipe_poller *p = arg;
	for (;;) {
		uint64_t sequence = vfs_poll_sequence();
		struct vfs_poll_watch watch;
		vfs_poll_watch_init(&watch);
		unsigned ready = vfs_poll(p->file) & VFS_POLL_IN;
		vfs_poll_watch_file(&watch, p->file);
		if (ready)
			return 0;
		__atomic_add_fetch(&p->rounds, 1, __ATOMIC_RELAXED);
		vfs_poll_wait_watch(&watch, sequence, 60 * NSEC_PER_SEC); /* a hang guard */
	}
}

#define OTHER_PIPE_WRITES 100

/* On one CPU, so that the other pipe's writes never land while the poller
 * scans (a notification of any bucket during its scan sends it round once
 * more, by design).  Notifications that name no object (the console, a
 * socket's close) still wake it, however many the rest of the system makes
 * meanwhile: the bound is half the writes, where waking for each would make
 * them all. */
static void poller_sleeps_through_other_pipes_traffic_body(struct ktest *t)
{
	struct vfs_file *watched_r, *watched_w, *other_r, *other_w;
	char c;
	ASSERT_EQ(t, pipe_create(0, &watched_r, &watched_w), 0);
	ASSERT_EQ(t, pipe_create(0, &other_r, &other_w), 0);
	/* Two pipes may share a bucket (a needless wake-up each): pick another,
	 * keeping the ones passed over open until the end, or the allocator
	 * would hand the same memory, and so the same bucket, straight back. */
	struct vfs_file *passed_over[16];
	unsigned passed = 0;
	while (passed + 2 <= 16 && vfs_poll_bucket(watched_r->ops->poll_key(watched_r)) ==
				       vfs_poll_bucket(other_r->ops->poll_key(other_r))) {
		passed_over[passed++] = other_r;
		passed_over[passed++] = other_w;
		ASSERT_EQ(t, pipe_create(0, &other_r, &other_w), 0);
	}
	EXPECT_TRUE(t, vfs_poll_bucket(watched_r->ops->poll_key(watched_r)) !=
			   vfs_poll_bucket(other_r->ops->poll_key(other_r)));
	struct pipe_poller poller = {.file = watched_r};
	struct thread *thread =
	    thread_create(poll_until_readable, &poller, "poller", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, thread != NULL);
	while (!__atomic_load_n(&poller.rounds, __ATOMIC_RELAXED))
		sched_yield();
	for (unsigned i = 0; i < OTHER_PIPE_WRITES; i++) {
		EXPECT_EQ(t, vfs_write(other_w, "x", 1), 1);
		EXPECT_EQ(t, vfs_read(other_r, &c, 1), 1);
		sched_yield(); /* the poller runs now if anything woke it */
	}
	unsigned rounds_before_own = poller.rounds;
	EXPECT_EQ(t, vfs_write(watched_w, "y", 1), 1);
	EXPECT_EQ(t, thread_join(thread, NULL), 0);
	EXPECT_TRUE(t, rounds_before_own < OTHER_PIPE_WRITES / 2);
	vfs_close(watched_r);
	vfs_close(watched_w);
	vfs_close(other_r);
	vfs_close(other_w);
	for (unsigned i = 0; i < passed; i++)
		vfs_close(passed_over[i]);
}
ONE_CPU_CASE(poller_sleeps_through_other_pipes_traffic)

struct pipe_job {
	struct vfs_file *file;
	unsigned id;
	unsigned records;
	int64_t result;
	uint64_t delay_ns;
	bool close_when_done; /* the job owns a reference to file */
};

#define RECORD_SIZE 64

static int write_records(void *arg)
{
	struct pipe_job *job = arg;
	char record[RECORD_SIZE];
	sched_sleep_ns(job->delay_ns);
	memset(record, 'a' + (int)job->id, sizeof record);
	job->result = 0;
	for (unsigned i = 0; i < job->records; i++) {
		int64_t n = vfs_write(job->file, record, sizeof record);
		if (n != RECORD_SIZE) {
			job->result = n;
			break;
		}
		job->result += n;
	}
	if (job->close_when_done)
		vfs_close(job->file);
	return 0;
}

static void pipe_reader_blocks_until_written(struct ktest *t)
{
	struct vfs_file *r, *w;
	char buffer[RECORD_SIZE];
	ASSERT_EQ(t, pipe_create(0, &r, &w), 0);
	struct pipe_job job = {w, 0, 1, 0, 20 * NSEC_PER_MSEC, false};
	struct thread *th =
	    thread_create(write_records, &job, "pipe-writer", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, th != NULL);
	uint64_t start = clock_ns();
	EXPECT_EQ(t, vfs_read(r, buffer, sizeof buffer), RECORD_SIZE); /* blocks */
	EXPECT_TRUE(t, clock_ns() - start >= 10 * NSEC_PER_MSEC);
	thread_join(th, NULL);
	vfs_close(w);
	EXPECT_EQ(t, vfs_read(r, buffer, sizeof buffer), 0);
	vfs_close(r);
}

static int close_after_delay(void *arg)
{
	struct pipe_job *job = arg;
	sched_sleep_ns(job->delay_ns);
	vfs_close(job->file);
	return 0;
}

/* A writer blocked on a full pipe gets EPIPE when the reader goes away. */
static void blocked_writer_gets_epipe(struct ktest *t)
{
	struct vfs_file *r, *w;
	static char full[PIPE_BUFFER_SIZE];
	ASSERT_EQ(t, pipe_create(0, &r, &w), 0);
	EXPECT_EQ(t, vfs_write(w, full, sizeof full), (int64_t)sizeof full);
	struct pipe_job job = {r, 0, 0, 0, 20 * NSEC_PER_MSEC, false};
	struct thread *th =
	    thread_create(close_after_delay, &job, "pipe-closer", SCHED_PRIORITY_NORMAL);
	ASSERT_TRUE(t, th != NULL);
	EXPECT_EQ(t, vfs_write(w, "x", 1), -EPIPE); /* blocks, then the reader closes */
	thread_join(th, NULL);
	vfs_close(w);
}

/* Four writers, 200 records each through a 16 KiB pipe: every record
 * arrives whole (writes up to PIPE_ATOMIC_MAX do not interleave) and the
 * reader sees end of file only after the last writer closed. */
static void many_writers_never_interleave(struct ktest *t)
{
	enum { WRITERS = 4, RECORDS = 200 };
	struct vfs_file *r, *w;
	struct pipe_job jobs[WRITERS];
	struct thread *threads[WRITERS];
	unsigned counts[WRITERS] = {0};
	ASSERT_EQ(t, pipe_create(0, &r, &w), 0);
	for (unsigned i = 0; i < WRITERS; i++) {
		jobs[i] = (struct pipe_job){vfs_file_get(w), i, RECORDS, 0, 0, true};
		threads[i] =
		    thread_create(write_records, &jobs[i], "pipe-writer", SCHED_PRIORITY_NORMAL);
		ASSERT_TRUE(t, threads[i] != NULL);
	}
	vfs_close(w); /* the writers hold the only write ends now */
	char record[RECORD_SIZE];
	size_t have = 0;
	bool whole = true;
	int64_t n;
	while ((n = vfs_read(r, record + have, RECORD_SIZE - have)) > 0) {
		have += (size_t)n;
		if (have < RECORD_SIZE)
			continue;
		for (unsigned i = 0; i < RECORD_SIZE; i++)
			whole &= record[i] == record[0];
		unsigned id = (unsigned)(record[0] - 'a');
		if (id < WRITERS)
			counts[id]++;
		have = 0;
	}
	EXPECT_EQ(t, n, 0);
	for (unsigned i = 0; i < WRITERS; i++) {
		thread_join(threads[i], NULL);
		EXPECT_EQ(t, counts[i], RECORDS);
		EXPECT_EQ(t, jobs[i].result, RECORDS * RECORD_SIZE);
	}
	EXPECT_TRUE(t, whole);
	EXPECT_EQ(t, have, 0);
	vfs_close(r);
}

/* ---- exec reads what it checked ------------------------------------------ */

#define RUNNABLE_TEXT "runnable"

/* Replaces the program by a file nobody may run, once, on the test's own
 * thread, right before the next vfs_open: the window between a permission
 * check by name and the open that reads the file. */
struct exec_swap {
	struct thread *thread;
	bool armed;
	int deferred; /* jp_defer's answer */
	int renamed;  /* vfs_rename's */
};

static void swap_program(struct jp_context *context, void *cookie)
{
	(void)context;
	struct exec_swap *swap = cookie;
	swap->renamed = vfs_rename(TEST_ROOT "/exec-plain", TEST_ROOT "/exec-prog");
}

static void swap_before_open(struct jp_context *context, void *cookie)
{
	struct exec_swap *swap = cookie;
	if (context->thread != swap->thread ||
	    !__atomic_exchange_n(&swap->armed, false, __ATOMIC_ACQ_REL))
		return;
	swap->deferred = jp_defer(context, swap_program, swap); /* rename sleeps */
}

static int write_file(const char *path, uint32_t mode, const char *text)
{
	struct vfs_file *f;
	int err = vfs_open(path, VFS_O_WRONLY | VFS_O_CREAT | VFS_O_TRUNC, mode, &f);
	if (err)
		return err;
	int64_t n = vfs_write(f, text, strlen(text));
	vfs_close(f);
	return n == (int64_t)strlen(text) ? vfs_chmod(path, mode) : -EIO;
}

/* A program swapped for a file without execute bits between the check and
 * the read: exec gets -EACCES, or the program it checked, never the other
 * file (the check is made on the node it opened). */
static void exec_reads_the_file_it_checked(struct ktest *t)
{
	struct initrd_stats stats;
	ASSERT_EQ(t, unpack_test_archive(&stats), 0);
	ASSERT_EQ(t, write_file(TEST_ROOT "/exec-prog", 0755, RUNNABLE_TEXT), 0);
	ASSERT_EQ(t, write_file(TEST_ROOT "/exec-plain", 0644, "not a program"), 0);
	struct exec_swap swap = {.thread = thread_current(), .armed = true, .deferred = 1};
	struct jp_advice gate = {.name = "vfs.exec_swap",
				 .before = swap_before_open,
				 .cookie = &swap,
				 .flags = JP_ADVICE_DEFERS};
	int handle = jp_attach("vfs.open", &gate);
	ASSERT_TRUE(t, handle > 0);
	void *image = NULL;
	size_t length = 0;
	int err = vfs_read_program(TEST_ROOT "/exec-prog", &image, &length);
	jp_detach(handle);
	EXPECT_EQ(t, swap.deferred, 0); /* the swap ran in the window */
	EXPECT_EQ(t, swap.renamed, 0);
	EXPECT_TRUE(t, err == -EACCES || (err == 0 && length == strlen(RUNNABLE_TEXT) &&
					  !memcmp(image, RUNNABLE_TEXT, length)));
	proc_free_program(image, length);
	vfs_unlink(TEST_ROOT "/exec-prog", false);
}

static void api_functions_are_join_points(struct ktest *t)
{
	static const char *const names[] = {
	    "vfs.open",   "vfs.read",    "vfs.write", "vfs.lseek",           "vfs.stat",
	    "vfs.close",  "vfs.readdir", "vfs.ioctl", "vfs.read_whole_file", "pipe.read",
	    "pipe.write",
	};
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
		EXPECT_TRUE(t, jp_find(names[i]) != NULL);
}

KTEST_SUITE(vfs, KTEST_CASE(unpacks_an_archive), KTEST_CASE(corrupt_archive_keeps_what_came_before),
	    KTEST_CASE(open_read_seek_stat), KTEST_CASE(readdir_lists_entries_in_order),
	    KTEST_CASE(bad_names_give_errors), KTEST_CASE(writes_grow_files),
	    KTEST_CASE(unlink_and_rmdir), KTEST_CASE(devices_null_zero_console),
	    KTEST_CASE(console_line_discipline), KTEST_CASE(console_read_blocks_for_a_line),
	    KTEST_CASE(fd_table_dup_and_close), KTEST_CASE(fd_table_fills_up),
	    KTEST_CASE(fork_shares_files_exec_closes_cloexec),
	    KTEST_CASE(initial_table_is_the_console), KTEST_CASE(pipe_passes_bytes_and_ends),
	    KTEST_CASE(pipe_without_reader_is_epipe), KTEST_CASE(pipe_nonblocking_is_eagain),
	    KTEST_CASE(poller_sleeps_through_other_pipes_traffic),
	    KTEST_CASE(pipe_reader_blocks_until_written), KTEST_CASE(blocked_writer_gets_epipe),
	    KTEST_CASE(many_writers_never_interleave), KTEST_CASE(exec_reads_the_file_it_checked),
	    KTEST_CASE(api_functions_are_join_points));
