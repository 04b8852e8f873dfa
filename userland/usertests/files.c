/*
 * Files as a hostile user and as POSIX says: permission bits and owners
 * enforced against uid 1000 (and not against root), the sticky /tmp, umask,
 * rename, hard and symbolic links on the RAM file system, an unlinked file
 * that stays open, the new calls
 * against bad pointers, lengths and descriptors, and a directory of 10,000
 * files.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "usertests.h"

#define L_EPERM        1
#define L_EACCES       13
#define L_EEXIST       17
#define L_EXDEV        18
#define L_ENOTDIR      20
#define L_EISDIR       21
#define L_ENAMETOOLONG 36
#define L_ENOTEMPTY    39
#define L_ELOOP        40

#define USER_ID 1000

int lstat(const char *path, struct stat *st); /* the glue has it; newlib declares none */
#define PERM_DIR    "/tmp/perm"
#define KERNEL_ADDR 0xffff800000001000L

static long sys2(long number, const void *a, const void *b)
{
	return ms_syscall3(number, (long)a, (long)b, 0);
}

static void expect(const char *what, long got, long want)
{
	if (got != want)
		t_fail("%s: %ld, expected %ld", what, got, want);
}

static int put_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0)
		return -1;
	int ok = write(fd, text, strlen(text)) == (int)strlen(text);
	close(fd);
	return ok && chmod(path, mode) == 0 ? 0 : -1;
}

static long raw_open(const char *path, int linux_flags)
{
	long fd = ms_syscall3(__NR_open, (long)path, linux_flags, 0644);
	if (fd >= 0)
		close((int)fd);
	return fd < 0 ? fd : 0;
}

#define L_O_WRONLY   01
#define L_O_RDWR     02
#define L_O_CREAT    0100
#define L_O_EXCL     0200
#define L_O_TRUNC    01000
#define L_O_NOFOLLOW 0400000

/* Root's files for the permission cases. */
static int make_root_tree(void)
{
	umask(022);
	mkdir("/tmp", 01777);
	mkdir(PERM_DIR, 0755);
	mkdir(PERM_DIR "/closed", 0700);
	return put_file(PERM_DIR "/secret", "secret\n", 0600) |
	       put_file(PERM_DIR "/public", "public\n", 0644) |
	       put_file(PERM_DIR "/closed/inside", "inside\n", 0644) |
	       put_file(PERM_DIR "/script", "#!nothing\n", 0644) |
	       put_file("/tmp/roots-file", "anyone may write\n", 0666);
}

/* What a user may not do to root's files, each refused. */
static void refused_to_a_user(void)
{
	expect("open 0600 file for reading", raw_open(PERM_DIR "/secret", 0), -L_EACCES);
	expect("open 0644 file for reading", raw_open(PERM_DIR "/public", 0), 0);
	expect("open 0644 file for writing", raw_open(PERM_DIR "/public", L_O_WRONLY), -L_EACCES);
	expect("open 0644 file for truncation", raw_open(PERM_DIR "/public", L_O_RDWR | L_O_TRUNC),
	       -L_EACCES);
	expect("create in root's 0755 directory", raw_open(PERM_DIR "/new", L_O_CREAT | L_O_WRONLY),
	       -L_EACCES);
	expect("mkdir in root's directory", sys2(__NR_mkdir, PERM_DIR "/newdir", (void *)0755),
	       -L_EACCES);
	expect("unlink in root's directory", sys2(__NR_unlink, PERM_DIR "/public", NULL),
	       -L_EACCES);
	expect("rename in root's directory",
	       sys2(__NR_rename, PERM_DIR "/public", PERM_DIR "/moved"), -L_EACCES);
	expect("rename out of root's directory", sys2(__NR_rename, PERM_DIR "/public", "/tmp/mine"),
	       -L_EACCES);
	expect("link into root's directory", sys2(__NR_link, PERM_DIR "/public", PERM_DIR "/again"),
	       -L_EACCES);
	expect("symlink in root's directory", sys2(__NR_symlink, "x", PERM_DIR "/link"), -L_EACCES);
	expect("stat through a 0700 directory", raw_open(PERM_DIR "/closed/inside", 0), -L_EACCES);
	expect("list a 0700 directory", raw_open(PERM_DIR "/closed", 0), -L_EACCES);
	expect("chdir into a 0700 directory", sys2(__NR_chdir, PERM_DIR "/closed", NULL),
	       -L_EACCES);
	expect("chmod of root's file", sys2(__NR_chmod, PERM_DIR "/public", (void *)0666),
	       -L_EPERM);
	expect("chown of root's file",
	       ms_syscall3(__NR_chown, (long)PERM_DIR "/public", USER_ID, USER_ID), -L_EPERM);
	expect("access(W_OK) of root's file", sys2(__NR_access, PERM_DIR "/public", (void *)2),
	       -L_EACCES);
	expect("access(R_OK) of root's file", sys2(__NR_access, PERM_DIR "/public", (void *)4), 0);
	char *argv[] = {PERM_DIR "/script", NULL};
	expect("exec of a file without x", ms_syscall3(__NR_execve, (long)argv[0], (long)argv, 0),
	       -L_EACCES);
	/* the sticky /tmp: anyone makes files, only owners remove them */
	expect("unlink root's file in /tmp", sys2(__NR_unlink, "/tmp/roots-file", NULL), -L_EPERM);
	if (put_file("/tmp/users-file", "mine\n", 0644) < 0)
		t_fail("a user cannot make a file in /tmp: %s", strerror(errno));
	expect("rename over root's file in /tmp",
	       sys2(__NR_rename, "/tmp/users-file", "/tmp/roots-file"), -L_EPERM);
	expect("write root's 0666 file in /tmp", raw_open("/tmp/roots-file", L_O_WRONLY), 0);
	expect("give one's file to root", ms_syscall3(__NR_chown, (long)"/tmp/users-file", 0, 0),
	       -L_EPERM);
	expect("chmod of one's own file", sys2(__NR_chmod, "/tmp/users-file", (void *)0600), 0);
	expect("unlink of one's own file in /tmp", sys2(__NR_unlink, "/tmp/users-file", NULL), 0);
	/* the console and the kernel's lines are root's; /dev/null is anyone's */
	expect("open the console", raw_open("/dev/console", L_O_RDWR), -L_EACCES);
	expect("read the kernel's lines", raw_open("/dev/kmsg", 0), -L_EACCES);
	expect("write /dev/null", raw_open("/dev/null", L_O_RDWR), 0);
	/* umask takes bits away from what is created */
	umask(077);
	struct stat st;
	if (put_file("/tmp/masked", "x", 0666) < 0 || chmod("/tmp/masked", 0666) < 0)
		t_fail("cannot make /tmp/masked");
	umask(077);
	int fd = open("/tmp/masked2", O_WRONLY | O_CREAT, 0666);
	if (fd < 0 || fstat(fd, &st) < 0 || (st.st_mode & 0777) != 0600 || st.st_uid != USER_ID)
		t_fail("umask 077: mode %o uid %d", fd < 0 ? 0 : (unsigned)st.st_mode & 0777,
		       fd < 0 ? -1 : (int)st.st_uid);
	if (fd >= 0)
		close(fd);
	unlink("/tmp/masked");
	unlink("/tmp/masked2");
}

static void as_user(void *unused)
{
	(void)unused;
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0 || getuid() != USER_ID) {
		t_fail("cannot become uid %d", USER_ID);
		_exit(1);
	}
	refused_to_a_user();
	_exit(t_failed() ? 1 : 0);
}

/* Does a user (uid 1000) meet the permission bits, owners and the sticky
 * bit at every call that names a file, while root does not? */
void file_permissions_hold_against_a_user(void)
{
	if (make_root_tree() < 0) {
		t_fail("cannot make root's files: %s", strerror(errno));
		return;
	}
	int status = t_run_child(as_user, NULL);
	if (status != 0)
		t_fail("as uid %d: status %#x (see above)", USER_ID, status);
	/* root reads the 0600 file, writes the 0644 one, enters 0700 */
	expect("root reads a 0600 file", raw_open(PERM_DIR "/secret", 0), 0);
	expect("root writes a 0644 file", raw_open(PERM_DIR "/public", L_O_WRONLY), 0);
	expect("root enters a 0700 directory", raw_open(PERM_DIR "/closed/inside", 0), 0);
	char *argv[] = {PERM_DIR "/script", NULL};
	expect("root execs a file without x",
	       ms_syscall3(__NR_execve, (long)argv[0], (long)argv, 0), -L_EACCES);
	expect("root chowns", ms_syscall3(__NR_chown, (long)PERM_DIR "/public", USER_ID, USER_ID),
	       0);
	struct stat st;
	if (stat(PERM_DIR "/public", &st) < 0 || st.st_uid != USER_ID || st.st_gid != USER_ID)
		t_fail("chown by root did not take");
	const char *files[] = {PERM_DIR "/secret", PERM_DIR "/public", PERM_DIR "/closed/inside",
			       PERM_DIR "/script", "/tmp/roots-file"};
	for (unsigned i = 0; i < sizeof files / sizeof files[0]; i++)
		unlink(files[i]);
	rmdir(PERM_DIR "/closed");
	rmdir(PERM_DIR);
}

/* ---- rename and links ------------------------------------------------------- */

#define R "/tmp/names"

static bool reads(const char *path, const char *text)
{
	char buffer[64] = {0};
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return false;
	int n = read(fd, buffer, sizeof buffer - 1);
	close(fd);
	return n == (int)strlen(text) && !memcmp(buffer, text, (size_t)n);
}

static void rename_cases(void)
{
	put_file(R "/a", "a\n", 0644);
	put_file(R "/b", "b\n", 0644);
	expect("rename over a file", sys2(__NR_rename, R "/a", R "/b"), 0);
	if (!reads(R "/b", "a\n") || access(R "/a", F_OK) == 0)
		t_fail("rename over a file: b is not a's contents, or a is left");
	mkdir(R "/d", 0755);
	mkdir(R "/d/sub", 0755);
	put_file(R "/d/sub/f", "f\n", 0644);
	mkdir(R "/empty", 0755);
	expect("a directory over an empty one", sys2(__NR_rename, R "/d", R "/empty"), 0);
	if (!reads(R "/empty/sub/f", "f\n"))
		t_fail("the moved directory's contents are not under its new name");
	mkdir(R "/full", 0755);
	put_file(R "/full/x", "x\n", 0644);
	expect("over a non-empty directory", sys2(__NR_rename, R "/empty", R "/full"),
	       -L_ENOTEMPTY);
	expect("a file over a directory", sys2(__NR_rename, R "/b", R "/full"), -L_EISDIR);
	expect("a directory over a file", sys2(__NR_rename, R "/full", R "/b"), -L_ENOTDIR);
	expect("a directory into itself", sys2(__NR_rename, R "/empty", R "/empty/sub/in"),
	       -22 /* EINVAL */);
	expect("across mounts", sys2(__NR_rename, R "/b", "/dev/b"), -L_EXDEV);
	expect("a missing name", sys2(__NR_rename, R "/missing", R "/c"), -L_ENOENT);
	expect("onto itself", sys2(__NR_rename, R "/b", R "/b"), 0);
	expect("a non-empty directory onto itself", sys2(__NR_rename, R "/full", R "/full"), 0);
	if (!reads(R "/full/x", "x\n"))
		t_fail("a directory renamed onto itself lost its contents");
	expect("mount point", sys2(__NR_rename, "/dev", R "/dev"), -16 /* EBUSY */);
}

static void link_cases(void)
{
	put_file(R "/orig", "linked\n", 0644);
	expect("link", sys2(__NR_link, R "/orig", R "/second"), 0);
	struct stat st;
	if (stat(R "/orig", &st) < 0 || st.st_nlink != 2)
		t_fail("two names, st_nlink %d", (int)st.st_nlink);
	expect("link to a taken name", sys2(__NR_link, R "/orig", R "/second"), -L_EEXIST);
	expect("link of a directory", sys2(__NR_link, R "/full", R "/dirlink"), -L_EPERM);
	expect("link across mounts", sys2(__NR_link, R "/orig", "/dev/orig"), -L_EXDEV);
	expect("rename between two names of one file", sys2(__NR_rename, R "/orig", R "/second"),
	       0);
	unlink(R "/orig");
	if (!reads(R "/second", "linked\n"))
		t_fail("the second name lost the contents when the first went");
}

/* An unlinked file lives on while a descriptor holds it: read, written and
 * seen by fstat through the descriptor, gone from its directory. */
static void unlinked_open_file_cases(void)
{
	put_file(R "/doomed", "still here\n", 0644);
	int fd = open(R "/doomed", O_RDWR);
	if (fd < 0) {
		t_fail("open " R "/doomed");
		return;
	}
	expect("unlink of an open file", unlink(R "/doomed"), 0);
	struct stat st;
	expect("stat after the unlink", stat(R "/doomed", &st) < 0 ? errno : 0, ENOENT);
	char text[32] = "";
	if (pread(fd, text, sizeof text - 1, 0) != 11 || strcmp(text, "still here\n") != 0)
		t_fail("the unlinked file's contents through its descriptor: '%s'", text);
	if (pwrite(fd, "more\n", 5, 11) != 5 || fstat(fd, &st) < 0 || st.st_size != 16 ||
	    st.st_nlink != 0)
		t_fail("writing the unlinked file: size %ld, links %d", (long)st.st_size,
		       (int)st.st_nlink);
	close(fd);
}

/* O_CREAT through a dangling link makes the file it names, as on Linux;
 * O_EXCL makes the name itself, so a link there is -EEXIST. */
static void dangling_link_cases(void)
{
	expect("O_CREAT | O_EXCL on a dangling link",
	       raw_open(R "/dangling", L_O_CREAT | L_O_EXCL | L_O_WRONLY), -L_EEXIST);
	struct stat st;
	expect("the link's target before", stat(R "/nowhere", &st) < 0 ? errno : 0, ENOENT);
	expect("O_CREAT through a dangling link", raw_open(R "/dangling", L_O_CREAT | L_O_WRONLY),
	       0);
	if (lstat(R "/dangling", &st) < 0 || !S_ISLNK(st.st_mode))
		t_fail("the link is still a link after O_CREAT through it");
	if (lstat(R "/nowhere", &st) < 0 || !S_ISREG(st.st_mode) || st.st_size != 0)
		t_fail("O_CREAT through a dangling link made no empty file where it points");
	expect("O_CREAT | O_EXCL on a link to a file",
	       raw_open(R "/dangling", L_O_CREAT | L_O_EXCL | L_O_WRONLY), -L_EEXIST);
	expect("a dangling link into a missing directory",
	       sys2(__NR_symlink, "no/dir/f", R "/deep"), 0);
	expect("O_CREAT through it", raw_open(R "/deep", L_O_CREAT | L_O_WRONLY), -L_ENOENT);
}

static void symlink_cases(void)
{
	expect("symlink", sys2(__NR_symlink, "orig-target", R "/l"), 0);
	put_file(R "/orig-target", "through a link\n", 0644);
	if (!reads(R "/l", "through a link\n"))
		t_fail("open through a symbolic link");
	char buffer[64];
	long n = ms_syscall3(__NR_readlink, (long)R "/l", (long)buffer, sizeof buffer);
	if (n != 11 || memcmp(buffer, "orig-target", 11))
		t_fail("readlink: %ld", n);
	expect("readlink into 4 bytes", ms_syscall3(__NR_readlink, (long)R "/l", (long)buffer, 4),
	       4);
	expect("readlink of a file", ms_syscall3(__NR_readlink, (long)R "/b", (long)buffer, 64),
	       -22);
	struct stat st;
	if (lstat(R "/l", &st) < 0 || !S_ISLNK(st.st_mode) || stat(R "/l", &st) < 0 ||
	    !S_ISREG(st.st_mode))
		t_fail("lstat sees the link, stat what it names");
	expect("a directory link in a path", sys2(__NR_symlink, "../names/empty/sub", R "/dl"), 0);
	if (!reads(R "/dl/f", "f\n"))
		t_fail("a path through a relative directory link");
	expect("an absolute link", sys2(__NR_symlink, "/tmp/names/b", R "/abs"), 0);
	if (!reads(R "/abs", "a\n"))
		t_fail("a path through an absolute link");
	expect("a dangling link", sys2(__NR_symlink, "nowhere", R "/dangling"), 0);
	expect("open a dangling link", raw_open(R "/dangling", 0), -L_ENOENT);
	sys2(__NR_symlink, "loop2", R "/loop1");
	sys2(__NR_symlink, "loop1", R "/loop2");
	expect("a loop of links", raw_open(R "/loop1", 0), -L_ELOOP);
	expect("O_NOFOLLOW on a link", raw_open(R "/abs", L_O_NOFOLLOW), -L_ELOOP);
	expect("O_NOFOLLOW on a dangling link", raw_open(R "/dangling", L_O_NOFOLLOW), -L_ELOOP);
	expect("O_NOFOLLOW | O_CREAT on a dangling link",
	       raw_open(R "/dangling", L_O_NOFOLLOW | L_O_CREAT | L_O_WRONLY), -L_ELOOP);
	dangling_link_cases();
	expect("O_NOFOLLOW on a file", raw_open(R "/b", L_O_NOFOLLOW), 0);
	expect("O_NOFOLLOW through a directory link", raw_open(R "/dl/f", L_O_NOFOLLOW), 0);
	expect("unlink a link", sys2(__NR_unlink, R "/l", NULL), 0);
	if (!reads(R "/orig-target", "through a link\n"))
		t_fail("unlinking the link touched its target");
}

static void clean_names(void)
{
	const char *files[] = {R "/b",     R "/second",   R "/orig-target", R "/dl",
			       R "/abs",   R "/dangling", R "/nowhere",     R "/deep",
			       R "/loop1", R "/loop2",    R "/full/x",      R "/empty/sub/f"};
	for (unsigned i = 0; i < sizeof files / sizeof files[0]; i++)
		unlink(files[i]);
	const char *dirs[] = {R "/full", R "/empty/sub", R "/empty", R};
	for (unsigned i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
		if (rmdir(dirs[i]) < 0)
			t_fail("rmdir %s: %s", dirs[i], strerror(errno));
}

/* Do rename, link and symlink keep POSIX's promises on the RAM file system:
 * replacing, refusing (directories, other mounts, loops), following? */
void rename_and_links(void)
{
	mkdir("/tmp", 01777);
	if (mkdir(R, 0755) < 0) {
		t_fail("mkdir %s: %s", R, strerror(errno));
		return;
	}
	rename_cases();
	link_cases();
	unlinked_open_file_cases();
	symlink_cases();
	clean_names();
}

/* ---- renames racing ------------------------------------------------------------- */

#define RACE        "/tmp/race"
#define RACE_A      RACE "/a"
#define RACE_B      RACE "/b"
#define RACE_AIB    RACE "/b/c" /* a's name inside b */
#define RACE_BIA    RACE "/a/d" /* b's name inside a */
#define RACE_ROUNDS 5000

static bool reachable(const char *name, const char *name_inside_other)
{
	struct stat st;
	return stat(name, &st) == 0 || stat(name_inside_other, &st) == 0;
}

static bool both_reachable(void)
{
	return reachable(RACE_A, RACE_AIB) && reachable(RACE_B, RACE_BIA);
}

/* Puts the caller on the which'th CPU it may run on, when there is one, so
 * that the two racers run at the same time. */
static void run_on_own_cpu(int which)
{
	cpu_set_t all, one;
	if (sched_getaffinity(0, sizeof all, &all) < 0 || CPU_COUNT(&all) <= which)
		return;
	int cpu = 0;
	for (int seen = 0;; cpu++) {
		if (CPU_ISSET(cpu, &all) && seen++ == which)
			break;
	}
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof one, &one);
}

/* One racer: a into b and back, or b into a and back, RACE_ROUNDS times. */
static void rename_back_and_forth(int which)
{
	run_on_own_cpu(which);
	const char *from = which ? RACE_B : RACE_A, *to = which ? RACE_BIA : RACE_AIB;
	for (int i = 0; i < RACE_ROUNDS; i++) {
		sys2(__NR_rename, from, to);
		sys2(__NR_rename, to, from);
	}
	_exit(0);
}

/* Two processes move a into b and b into a at once: each rename alone is
 * fine, together they would put each directory inside the other, out of
 * the tree for good, unless renames are checked and done one at a time.
 * Both must be reachable when the racers are done.  (A race: it cannot prove
 * the absence of the cycle; without the serialization a run on two CPUs
 * failed every time it was tried.) */
void renames_racing_never_make_a_cycle(void)
{
	mkdir("/tmp", 01777);
	if (mkdir(RACE, 0755) < 0 || mkdir(RACE_A, 0755) < 0 || mkdir(RACE_B, 0755) < 0) {
		t_fail("mkdir " RACE ": %s", strerror(errno));
		return;
	}
	pid_t racers[2];
	for (int which = 0; which < 2; which++)
		if ((racers[which] = fork()) == 0)
			rename_back_and_forth(which);
	for (int which = 0; which < 2; which++) {
		int status = -1;
		if (racers[which] < 0 || waitpid(racers[which], &status, 0) < 0)
			t_fail("racer %d: fork or wait failed", which);
		else if (status != 0)
			t_fail("racer %d: status %#x", which, status);
	}
	if (!both_reachable()) /* a cycle stays: each directory is inside the other */
		t_fail("after the race a or b is not reachable from " RACE);
	sys2(__NR_rename, RACE_AIB, RACE_A);
	sys2(__NR_rename, RACE_BIA, RACE_B);
	rmdir(RACE_A);
	rmdir(RACE_B);
	rmdir(RACE);
}

/* ---- hostile input -------------------------------------------------------- */

/* What if the new file calls get ridiculous pointers, lengths, ids and
 * descriptors?  (-EFAULT, -ENAMETOOLONG, -EINVAL, -EBADF; nothing changes.) */
void file_calls_refuse_hostile_input(void)
{
	static const long bad[] = {0, 1, KERNEL_ADDR, 0x7ffffffff000L, -1L};
	char long_path[400];
	memset(long_path, 'p', sizeof long_path);
	long_path[0] = '/';
	long_path[sizeof long_path - 1] = 0;
	mkdir("/tmp", 01777);
	put_file("/tmp/hostile", "h\n", 0644);
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		long p = bad[i];
		const long fault = -L_EFAULT;
		expect("rename(bad, ok)", ms_syscall3(__NR_rename, p, (long)"/tmp/x", 0), fault);
		expect("rename(ok, bad)", ms_syscall3(__NR_rename, (long)"/tmp/hostile", p, 0),
		       fault);
		expect("link(bad, ok)", ms_syscall3(__NR_link, p, (long)"/tmp/x", 0), fault);
		expect("link(ok, bad)", ms_syscall3(__NR_link, (long)"/tmp/hostile", p, 0), fault);
		expect("symlink(bad, ok)", ms_syscall3(__NR_symlink, p, (long)"/tmp/x", 0), fault);
		expect("symlink(ok, bad)", ms_syscall3(__NR_symlink, (long)"x", p, 0), fault);
		expect("readlink(bad, ...)", ms_syscall3(__NR_readlink, p, (long)long_path, 10),
		       fault);
		expect("chmod(bad)", ms_syscall3(__NR_chmod, p, 0644, 0), fault);
		expect("chown(bad)", ms_syscall3(__NR_chown, p, 0, 0), fault);
		expect("lchown(bad)", ms_syscall3(__NR_lchown, p, 0, 0), fault);
		expect("lstat(ok, bad)", ms_syscall3(__NR_lstat, (long)"/tmp/hostile", p, 0),
		       fault);
	}
	expect("symlink", sys2(__NR_symlink, "hostile", "/tmp/hostile-link"), 0);
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
		expect("readlink into a bad buffer",
		       ms_syscall3(__NR_readlink, (long)"/tmp/hostile-link", bad[i], 64),
		       -L_EFAULT);
	expect("readlink, size 0",
	       ms_syscall3(__NR_readlink, (long)"/tmp/hostile-link", (long)long_path, 0),
	       -L_EINVAL);
	expect("readlink, size -1",
	       ms_syscall3(__NR_readlink, (long)"/tmp/hostile-link", (long)long_path, -1),
	       -L_EINVAL);
	/* the size is an int, as Linux's: 2^40 is 0 */
	expect("readlink, size 2^40",
	       ms_syscall3(__NR_readlink, (long)"/tmp/hostile-link", (long)long_path, 1L << 40),
	       -L_EINVAL);
	expect("rename, path too long", sys2(__NR_rename, long_path, "/tmp/x"), -L_ENAMETOOLONG);
	expect("link, path too long", sys2(__NR_link, "/tmp/hostile", long_path), -L_ENAMETOOLONG);
	expect("symlink, target too long", sys2(__NR_symlink, long_path, "/tmp/x"),
	       -L_ENAMETOOLONG);
	expect("symlink, empty target", sys2(__NR_symlink, "", "/tmp/x"), -L_ENOENT);
	expect("rename, empty path", sys2(__NR_rename, "", "/tmp/x"), -L_ENOENT);
	expect("fchmod, bad fd", ms_syscall3(__NR_fchmod, -1, 0644, 0), -L_EBADF);
	expect("fchmod, fd 1000", ms_syscall3(__NR_fchmod, 1000, 0644, 0), -L_EBADF);
	expect("fchown, bad fd", ms_syscall3(__NR_fchown, 99, 0, 0), -L_EBADF);
	expect("access, bad mode", ms_syscall3(__NR_access, (long)"/tmp", 8, 0), -L_EINVAL);
	long old = ms_syscall3(__NR_umask, -1L, 0, 0);
	expect("umask keeps 9 bits", ms_syscall3(__NR_umask, old, 0, 0), 0777);
	expect("chown -1 -1 changes nothing",
	       ms_syscall3(__NR_chown, (long)"/tmp/hostile", 0xffffffffL, 0xffffffffL), 0);
	struct stat st;
	if (stat("/tmp/hostile", &st) < 0 || st.st_uid != 0 || (st.st_mode & 07777) != 0644)
		t_fail("the hostile calls changed /tmp/hostile");
	unlink("/tmp/hostile-link");
	unlink("/tmp/hostile");
}

/* ---- mount and umount --------------------------------------------------------- */

static long sys_mount(const char *source, const char *target, const char *type, long flags)
{
	return ms_syscall6(__NR_mount, (long)source, (long)target, (long)type, flags, 0, 0);
}

static void mount_as_user(void *unused)
{
	(void)unused;
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0)
		_exit(1);
	expect("mount as a user", sys_mount("none", "/tmp/mnt", "tmpfs", 0), -L_EPERM);
	expect("umount as a user", ms_syscall3(__NR_umount2, (long)"/tmp/mnt", 0, 0), -L_EPERM);
	_exit(t_failed() ? 1 : 0);
}

/* Can root mount a RAM file system, is it a mount of its own (EXDEV), is it
 * kept while a file in it is open, and are a user, bad pointers, flags and
 * types refused? */
void mount_and_umount(void)
{
	mkdir("/tmp", 01777);
	expect("mount tmpfs", sys_mount("none", "/tmp/mnt", "tmpfs", 0), 0);
	int status = t_run_child(mount_as_user, NULL);
	if (status != 0)
		t_fail("as uid %d: status %#x", USER_ID, status);
	put_file("/tmp/mnt/inside", "in the mount\n", 0644);
	put_file("/tmp/outside", "outside\n", 0644);
	expect("rename into the mount", sys2(__NR_rename, "/tmp/outside", "/tmp/mnt/x"), -L_EXDEV);
	expect("link into the mount", sys2(__NR_link, "/tmp/outside", "/tmp/mnt/x"), -L_EXDEV);
	expect("mount twice", sys_mount("none", "/tmp/mnt", "tmpfs", 0), -16 /* EBUSY */);
	int fd = open("/tmp/mnt/inside", O_RDONLY);
	expect("umount, a file open", ms_syscall3(__NR_umount2, (long)"/tmp/mnt", 0, 0), 0);
	/* the RAM fs has nothing to write back: it goes, the open file lives on */
	char buffer[32] = {0};
	if (fd < 0 || read(fd, buffer, sizeof buffer) != 13 || strcmp(buffer, "in the mount\n"))
		t_fail("the open file of an unmounted RAM fs did not read back");
	if (fd >= 0)
		close(fd);
	if (access("/tmp/mnt/inside", F_OK) == 0)
		t_fail("the unmounted file system's file is still reachable");
	expect("umount a plain directory", ms_syscall3(__NR_umount2, (long)"/tmp/mnt", 0, 0),
	       -L_EINVAL);
	expect("umount /", ms_syscall3(__NR_umount2, (long)"/", 0, 0), -16);
	expect("umount, flags", ms_syscall3(__NR_umount2, (long)"/tmp/mnt", 1, 0), -L_EINVAL);
	expect("mount, flags", sys_mount("none", "/tmp/mnt", "tmpfs", 1), -L_EINVAL);
	expect("mount, unknown type", sys_mount("none", "/tmp/mnt", "nfs", 0), -19 /* ENODEV */);
	expect("mount, no such disk", sys_mount("/dev/vdz", "/tmp/mnt", "ext2", 0), -19);
	static const long bad[] = {0, 1, KERNEL_ADDR, 0x7ffffffff000L};
	for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		expect("mount, bad type", sys_mount("none", "/tmp/mnt", (const char *)bad[i], 0),
		       -L_EFAULT);
		expect("mount, bad target", sys_mount("none", (const char *)bad[i], "tmpfs", 0),
		       -L_EFAULT);
		expect("mount, bad source", sys_mount((const char *)bad[i], "/tmp/mnt", "ext2", 0),
		       -L_EFAULT);
		expect("umount, bad target", ms_syscall3(__NR_umount2, bad[i], 0, 0), -L_EFAULT);
	}
	unlink("/tmp/outside");
	rmdir("/tmp/mnt");
}

/* ---- a mount below a directory ---------------------------------------------- */

#define MB "/tmp/mount-below"

/* May a directory with a mount somewhere below it be renamed or removed
 * (no: EBUSY, the mount stays reachable), and may one whose name merely
 * starts with the same letters (yes)? */
void directory_with_a_mount_below_stays(void)
{
	mkdir("/tmp", 01777);
	mkdir(MB, 0755);
	mkdir(MB "/inner", 0755);
	mkdir(MB "/inner/deeper", 0755);
	mkdir(MB "/inne", 0755);
	expect("mount tmpfs", sys_mount("none", MB "/inner/deeper/m", "tmpfs", 0), 0);
	put_file(MB "/inner/deeper/m/f", "mounted\n", 0644);
	expect("rename of the mount's grandparent", sys2(__NR_rename, MB "/inner", MB "/moved"),
	       -L_EBUSY);
	expect("rename of the mount's parent", sys2(__NR_rename, MB "/inner/deeper", MB "/moved"),
	       -L_EBUSY);
	expect("rename of the top", sys2(__NR_rename, MB, "/tmp/mount-below-2"), -L_EBUSY);
	expect("rmdir of the mount's parent",
	       ms_syscall3(__NR_rmdir, (long)MB "/inner/deeper", 0, 0), -L_EBUSY);
	if (!reads(MB "/inner/deeper/m/f", "mounted\n"))
		t_fail("the mount's file is not reachable by its path any more");
	expect("rename of a sibling with a common prefix",
	       sys2(__NR_rename, MB "/inne", MB "/other"), 0);
	unlink(MB "/inner/deeper/m/f");
	expect("umount", ms_syscall3(__NR_umount2, (long)MB "/inner/deeper/m", 0, 0), 0);
	expect("rename once the mount is gone", sys2(__NR_rename, MB "/inner", MB "/moved"), 0);
	rmdir(MB "/moved/deeper/m");
	rmdir(MB "/moved/deeper");
	rmdir(MB "/moved");
	rmdir(MB "/other");
	rmdir(MB);
}

/* ---- a mount inside a closed directory --------------------------------------- */

#define CA "/tmp/closed-above"

/* What a user meets in a file system mounted inside root's 0700 directory,
 * straight and through a link to that directory: nothing, as in the
 * directory itself; and in one mounted inside a 0755 directory, the file. */
static void closed_above_as_user(void *unused)
{
	(void)unused;
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0) {
		t_fail("cannot become uid %d", USER_ID);
		_exit(1);
	}
	struct stat st;
	expect("open below a mount in a 0700 directory", raw_open(CA "/m/f", 0), -L_EACCES);
	expect("stat of the mount's root", stat(CA "/m", &st) < 0 ? -errno : 0, -EACCES);
	expect("chdir into the mount", sys2(__NR_chdir, CA "/m", NULL), -L_EACCES);
	expect("open through a link to the 0700 directory", raw_open("/tmp/closed-link/m/f", 0),
	       -L_EACCES);
	expect("open below a mount in a 0755 directory", raw_open(CA "-open/m/f", 0), 0);
	_exit(t_failed() ? 1 : 0);
}

/* Are the directories above a mount searched like any others: a user who
 * may not search root's 0700 directory may not reach a file system mounted
 * inside it either, while root may? */
void a_mount_inside_a_closed_directory_is_closed(void)
{
	mkdir("/tmp", 01777);
	umask(022);
	mkdir(CA, 0700);
	mkdir(CA "-open", 0755);
	symlink(CA, "/tmp/closed-link");
	expect("mount in the 0700 directory", sys_mount("none", CA "/m", "tmpfs", 0), 0);
	expect("mount in the 0755 directory", sys_mount("none", CA "-open/m", "tmpfs", 0), 0);
	chmod(CA "/m", 0755);
	chmod(CA "-open/m", 0755);
	put_file(CA "/m/f", "inside\n", 0644);
	put_file(CA "-open/m/f", "inside\n", 0644);
	int status = t_run_child(closed_above_as_user, NULL);
	if (status != 0)
		t_fail("as uid %d: status %#x (see above)", USER_ID, status);
	if (!reads(CA "/m/f", "inside\n"))
		t_fail("root cannot read the file in the mount in its 0700 directory");
	unlink(CA "/m/f");
	unlink(CA "-open/m/f");
	expect("umount", ms_syscall3(__NR_umount2, (long)CA "/m", 0, 0), 0);
	expect("umount", ms_syscall3(__NR_umount2, (long)CA "-open/m", 0, 0), 0);
	unlink("/tmp/closed-link");
	rmdir(CA "/m");
	rmdir(CA "-open/m");
	rmdir(CA);
	rmdir(CA "-open");
}

#define ML "/tmp/mount-link"

/* A mount made through a symbolic link: is it reached by the link's path and
 * by the path the link leads to, and unmounted by either? */
void a_mount_through_a_link_is_reached_both_ways(void)
{
	mkdir("/tmp", 01777);
	mkdir(ML "-real", 0755);
	symlink(ML "-real", ML);
	expect("mount through a link", sys_mount("none", ML "/m", "tmpfs", 0), 0);
	put_file(ML "/m/f", "mounted\n", 0644);
	if (!reads(ML "-real/m/f", "mounted\n"))
		t_fail("the mount is not reached by the path the link leads to");
	if (!reads(ML "/m/f", "mounted\n"))
		t_fail("the mount is not reached through the link");
	expect("mount again by the real path", sys_mount("none", ML "-real/m", "tmpfs", 0),
	       -L_EBUSY);
	unlink(ML "/m/f");
	expect("umount through the link", ms_syscall3(__NR_umount2, (long)ML "/m", 0, 0), 0);
	expect("umount again", ms_syscall3(__NR_umount2, (long)ML "-real/m", 0, 0), -L_EINVAL);
	unlink(ML);
	rmdir(ML "-real/m");
	rmdir(ML "-real");
}

/* ---- mmap of files, pread, pwrite, ftruncate ----------------------------------- */

#define L_ESPIPE   29
#define L_ENODEV   19
#define FILE_BYTES 10000

static long raw_mmap(long length, int protection, int flags, int fd, long offset)
{
	return ms_syscall6(__NR_mmap, 0, length, protection, flags, fd, offset);
}

static void mmap_cases(int fd, const char *data)
{
	long at = raw_mmap(FILE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (at < 0) {
		t_fail("mmap of a file: %ld", at);
		return;
	}
	char *map = (char *)at;
	if (memcmp(map, data, FILE_BYTES) || map[FILE_BYTES] != 0)
		t_fail("the mapping is not the file's bytes, zeros after");
	map[0] = 'X'; /* private: the file keeps its byte */
	char first;
	if (pread(fd, &first, 1, 0) != 1 || first != data[0])
		t_fail("a write to a private mapping reached the file");
	munmap(map, FILE_BYTES);
	at = raw_mmap(4096, PROT_READ, MAP_PRIVATE, fd, 8192);
	if (at < 0 || memcmp((char *)at, data + 8192, FILE_BYTES - 8192))
		t_fail("mmap at offset 8192: %ld", at);
	else
		munmap((void *)at, 4096);
	expect("mmap MAP_SHARED on the RAM fs", raw_mmap(4096, PROT_READ, MAP_SHARED, fd, 0),
	       -L_ENODEV);
	expect("mmap, offset not a page", raw_mmap(4096, PROT_READ, MAP_PRIVATE, fd, 100),
	       -L_EINVAL);
	expect("mmap, bad fd", raw_mmap(4096, PROT_READ, MAP_PRIVATE, 99, 0), -L_EBADF);
	expect("mmap, fd -1 without MAP_ANONYMOUS", raw_mmap(4096, PROT_READ, MAP_PRIVATE, -1, 0),
	       -L_EBADF);
	int dir = open("/tmp", O_RDONLY);
	expect("mmap of a directory", raw_mmap(4096, PROT_READ, MAP_PRIVATE, dir, 0), -L_ENODEV);
	close(dir);
	int writer = open("/tmp/mapped", O_WRONLY);
	expect("mmap of a write-only fd", raw_mmap(4096, PROT_READ, MAP_PRIVATE, writer, 0),
	       -L_EACCES);
	close(writer);
}

static void positional_cases(int fd, const char *data)
{
	char buffer[64];
	lseek(fd, 5, SEEK_SET);
	if (pread(fd, buffer, 10, 4000) != 10 || memcmp(buffer, data + 4000, 10))
		t_fail("pread at 4000");
	if (lseek(fd, 0, SEEK_CUR) != 5)
		t_fail("pread moved the position");
	if (pwrite(fd, "abc", 3, 9998) != 3 || pread(fd, buffer, 8, 9998) != 3 ||
	    memcmp(buffer, "abc", 3))
		t_fail("pwrite past the end");
	expect("pread, negative offset", ms_syscall6(__NR_pread64, fd, (long)buffer, 1, -1, 0, 0),
	       -L_EINVAL);
	expect("pread, bad buffer", ms_syscall6(__NR_pread64, fd, KERNEL_ADDR, 10, 0, 0, 0),
	       -L_EFAULT);
	expect("pwrite, bad buffer", ms_syscall6(__NR_pwrite64, fd, 0, 10, 0, 0, 0), -L_EFAULT);
	expect("pread, bad fd", ms_syscall6(__NR_pread64, 77, (long)buffer, 1, 0, 0, 0), -L_EBADF);
	int pipe_fds[2];
	if (pipe(pipe_fds) == 0) {
		expect("pread of a pipe",
		       ms_syscall6(__NR_pread64, pipe_fds[0], (long)buffer, 1, 0, 0, 0), -L_ESPIPE);
		close(pipe_fds[0]);
		close(pipe_fds[1]);
	}
	if (ftruncate(fd, 100) < 0 || lseek(fd, 0, SEEK_END) != 100)
		t_fail("ftruncate to 100");
	if (ftruncate(fd, 20000) < 0 || pread(fd, buffer, 4, 19000) != 4 || buffer[0] != 0)
		t_fail("ftruncate up: zeros");
	expect("ftruncate, negative", ms_syscall3(__NR_ftruncate, fd, -1, 0), -L_EINVAL);
	int reader = open("/tmp/mapped", O_RDONLY);
	expect("ftruncate of a read-only fd", ms_syscall3(__NR_ftruncate, reader, 0, 0), -L_EBADF);
	close(reader);
}

/* Does mmap of a file give a private copy of its bytes (through the file
 * system, so from the page cache on ext2), and do pread, pwrite and ftruncate
 * work at an offset without moving the position, refusing what they must? */
void file_mmap_and_positional_io(void)
{
	mkdir("/tmp", 01777);
	static char data[FILE_BYTES];
	for (int i = 0; i < FILE_BYTES; i++)
		data[i] = (char)('a' + i % 23 + i / 4096);
	int fd = open("/tmp/mapped", O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, FILE_BYTES) != FILE_BYTES) {
		t_fail("cannot write /tmp/mapped");
		return;
	}
	mmap_cases(fd, data);
	positional_cases(fd, data);
	close(fd);
	unlink("/tmp/mapped");
}

/* ---- MAP_SHARED of an ext2 file ---------------------------------------------- */

/* tests/run.py checks /disk/shared.bin on the host: these bytes, with the
 * stores below in them. */
#define SHARED_FILE  "/disk/shared.bin"
#define SHARED_HOLE  "/disk/shared-hole.bin"
#define SHARED_BYTES (3 * 4096 + 100)
#define SIGBUS_LINUX 7 /* the kernel's number (newlib's SIGBUS is 10) */
#define BUS_ADRERR   2
#define L_EOVERFLOW  75
#define L_ENOMEM     12

static char shared_byte(long i)
{
	return (char)('a' + i % 23);
}

static void store_in_child(void *map)
{
	((char *)map)[20] = 'C';
	_exit(0);
}

static void touch_past_the_end(void *map)
{
	volatile char *p = map;
	p[4 * 4096] = 1; /* the mapping's fifth page: past the file's last */
	_exit(0);
}

/* Stores through one mapping reach read(), another mapping, a forked child's
 * stores reach the parent, and write() reaches the mapping. */
static void shared_stores_are_the_file(int fd)
{
	long at = raw_mmap(5 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	long second = raw_mmap(4096, PROT_READ, MAP_SHARED, fd, 4096);
	if (at < 0 || second < 0) {
		t_fail("mmap MAP_SHARED of an ext2 file: %ld, %ld", at, second);
		return;
	}
	char *map = (char *)at, *other = (char *)second, byte = 0;
	for (long i = 0; i < SHARED_BYTES; i++)
		if (map[i] != shared_byte(i)) {
			t_fail("the mapping differs from the file at %ld", i);
			break;
		}
	if (map[SHARED_BYTES] != 0)
		t_fail("the last page is not zero past the end of the file");
	map[10] = 'M';
	map[5000] = 'N';
	if (pread(fd, &byte, 1, 10) != 1 || byte != 'M')
		t_fail("a store to the mapping is not what read() sees: %c", byte);
	if (other[5000 - 4096] != 'N')
		t_fail("a store is not seen through another mapping of the file");
	if (pwrite(fd, "W", 1, 8192) != 1 || map[8192] != 'W')
		t_fail("write() is not seen through the mapping");
	int status = t_run_child(store_in_child, map);
	if (status != 0 || map[20] != 'C')
		t_fail("a forked child's store is not the parent's: status %d", status);
	t_expect_signal("a touch past the end of the file", touch_past_the_end, map, SIGBUS);
	int code = 0;
	uint64_t address = 0;
	int sig = signal_of_a_read((uint64_t)(map + 4 * 4096 + 8), SIGBUS_LINUX, &code, &address);
	if (sig != SIGBUS_LINUX || code != BUS_ADRERR || address != (uint64_t)(map + 4 * 4096 + 8))
		t_fail("a read past the end: signal %d code %d address %#lx, expected SIGBUS "
		       "(BUS_ADRERR) at %p",
		       sig, code, (unsigned long)address, (void *)(map + 4 * 4096 + 8));
	expect("msync", msync(map, 5 * 4096, MS_SYNC), 0);
	expect("mprotect of a shared file mapping", ms_syscall3(__NR_mprotect, at, 4096, PROT_READ),
	       -L_EINVAL);
	expect("munmap", munmap(map, 5 * 4096), 0);
	expect("munmap", munmap(other, 4096), 0);
}

/* A store into a hole gets a block: munmap then fsync put it on the disk. */
static void shared_store_fills_a_hole(void)
{
	int fd = open(SHARED_HOLE, O_RDWR | O_CREAT | O_TRUNC, 0644);
	char byte = 0;
	if (fd < 0 || ftruncate(fd, 2 * 4096) < 0) {
		t_fail("cannot make " SHARED_HOLE);
		return;
	}
	long at = raw_mmap(2 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (at < 0) {
		t_fail("mmap of a file of holes: %ld", at);
	} else {
		((char *)at)[4096 + 7] = 'H';
		munmap((void *)at, 2 * 4096);
		if (pread(fd, &byte, 1, 4096 + 7) != 1 || byte != 'H')
			t_fail("a store into a hole is not read back: %c", byte);
		expect("fsync", fsync(fd), 0);
	}
	close(fd);
}

static void shared_mmap_refuses(int fd)
{
	expect("MAP_SHARED, offset not a page", raw_mmap(4096, PROT_READ, MAP_SHARED, fd, 100),
	       -L_EINVAL);
	expect("MAP_SHARED, length 0", raw_mmap(0, PROT_READ, MAP_SHARED, fd, 0), -L_EINVAL);
	expect("MAP_SHARED, huge length", raw_mmap(1L << 62, PROT_READ, MAP_SHARED, fd, 0),
	       -L_EINVAL);
	expect("MAP_SHARED, offset and length overflow",
	       raw_mmap(8192, PROT_READ, MAP_SHARED, fd, -4096L), -L_EOVERFLOW);
	expect("MAP_SHARED and MAP_PRIVATE",
	       raw_mmap(4096, PROT_READ, MAP_SHARED | MAP_PRIVATE, fd, 0), -L_EINVAL);
	expect("MAP_SHARED anonymous", raw_mmap(4096, PROT_READ, MAP_SHARED | MAP_ANONYMOUS, -1, 0),
	       -L_EINVAL);
	expect("MAP_SHARED, bad fd", raw_mmap(4096, PROT_READ, MAP_SHARED, 99, 0), -L_EBADF);
	int reader = open(SHARED_FILE, O_RDONLY), writer = open(SHARED_FILE, O_WRONLY);
	expect("MAP_SHARED PROT_WRITE of a read-only fd",
	       raw_mmap(4096, PROT_READ | PROT_WRITE, MAP_SHARED, reader, 0), -L_EACCES);
	long at = raw_mmap(4096, PROT_READ, MAP_SHARED, reader, 0);
	if (at < 0)
		t_fail("MAP_SHARED PROT_READ of a read-only fd: %ld", at);
	else
		munmap((void *)at, 4096);
	expect("MAP_SHARED of a write-only fd", raw_mmap(4096, PROT_READ, MAP_SHARED, writer, 0),
	       -L_EACCES);
	close(reader);
	close(writer);
	int dir = open("/disk", O_RDONLY);
	expect("MAP_SHARED of a directory", raw_mmap(4096, PROT_READ, MAP_SHARED, dir, 0),
	       -L_ENODEV);
	close(dir);
	char page[4096] __attribute__((aligned(4096)));
	expect("msync, address not a page", ms_syscall3(__NR_msync, (long)page + 1, 10, MS_SYNC),
	       -L_EINVAL);
	expect("msync, unknown flags", ms_syscall3(__NR_msync, (long)page, 10, 0x100), -L_EINVAL);
	expect("msync, MS_SYNC and MS_ASYNC",
	       ms_syscall3(__NR_msync, (long)page, 10, MS_SYNC | MS_ASYNC), -L_EINVAL);
	expect("msync, kernel address", ms_syscall3(__NR_msync, KERNEL_ADDR, 4096, MS_SYNC),
	       -L_EINVAL);
	expect("msync, nothing mapped", ms_syscall3(__NR_msync, 0x10000000000L, 4096, MS_SYNC),
	       -L_ENOMEM);
}

/* Does MAP_SHARED of an ext2 file map the page cache's own pages: stores are
 * what read() and other mappings see, reach the disk after msync, munmap and
 * fsync (the host's e2fsck and debugfs check the image after the run), and
 * are bad offsets, lengths, flags, descriptors and protections refused? */
void shared_file_mmap(void)
{
	int fd = open(SHARED_FILE, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		t_fail("no ext2 disk at /disk: cannot make " SHARED_FILE);
		return;
	}
	static char data[SHARED_BYTES];
	for (long i = 0; i < SHARED_BYTES; i++)
		data[i] = shared_byte(i);
	if (write(fd, data, SHARED_BYTES) != SHARED_BYTES) {
		t_fail("cannot write " SHARED_FILE);
		close(fd);
		return;
	}
	shared_stores_are_the_file(fd);
	shared_store_fills_a_hole();
	shared_mmap_refuses(fd);
	close(fd);
	sync();
}

/* ---- read() of an ext2 file straight into user memory --------------------------- */

#define DIRECT_FILE  "/disk/direct.bin"
#define DIRECT_BYTES (3 * 4096 + 100)
#define UNMAPPED     0x10000000000L

static long sys_read(int fd, long buffer, long count)
{
	return ms_syscall3(__NR_read, fd, buffer, count);
}

/* Bad buffers: nothing read, the position stays; a buffer whose second
 * page is unmapped: the first page, and the position moves by that much. */
static void direct_read_refuses_bad_buffers(int fd)
{
	expect("read into an unmapped page", sys_read(fd, UNMAPPED, 4096), -L_EFAULT);
	expect("read into kernel memory", sys_read(fd, KERNEL_ADDR, 4096), -L_EFAULT);
	expect("pread into an unmapped page",
	       ms_syscall6(__NR_pread64, fd, UNMAPPED, 4096, 0, 0, 0), -L_EFAULT);
	long readonly = raw_mmap(4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (readonly > 0) {
		expect("read into a read-only page", sys_read(fd, readonly, 100), -L_EFAULT);
		munmap((void *)readonly, 4096);
	}
	expect("position after refused reads", lseek(fd, 0, SEEK_CUR), 0);
	long at = raw_mmap(2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (at < 0 || munmap((char *)at + 4096, 4096) < 0) {
		t_fail("cannot map a page followed by a hole: %ld", at);
		return;
	}
	expect("read running into an unmapped page", sys_read(fd, at, 8192), 4096);
	expect("position after a short read", lseek(fd, 0, SEEK_CUR), 4096);
	if (((char *)at)[0] != shared_byte(0) || ((char *)at)[4095] != shared_byte(4095))
		t_fail("the short read's bytes are not the file's");
	munmap((void *)at, 4096);
}

/* The destination is a shared mapping of the file itself: the copy out of
 * the cache faults in the file's own page, which takes ext2's and the
 * cache's locks (a read holding either would hang here). */
static void direct_read_into_the_files_own_mapping(int fd)
{
	long at = raw_mmap(4 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (at < 0) {
		t_fail("mmap MAP_SHARED of " DIRECT_FILE ": %ld", at);
		return;
	}
	char *map = (char *)at, back[64];
	expect("pread of page 0 into the mapping's page 1", pread(fd, map + 4096, 4096, 0), 4096);
	if (pread(fd, back, sizeof back, 4096 + 1000) != sizeof back)
		t_fail("cannot read page 1 back");
	for (long i = 0; i < (long)sizeof back; i++)
		if (back[i] != shared_byte(1000 + i)) {
			t_fail("page 1 after the copy differs at %ld", i);
			break;
		}
	expect("munmap", munmap(map, 4 * 4096), 0);
}

/* Does read() of an ext2 file, which copies from the page cache straight
 * into the caller's buffer, give the file's bytes, refuse bad buffers with
 * EFAULT (a short count when part of the buffer is good), and survive a
 * buffer that is a mapping of the same file? */
void ext2_read_copies_into_user_memory(void)
{
	static char data[DIRECT_BYTES], got[DIRECT_BYTES + 10];
	for (long i = 0; i < DIRECT_BYTES; i++)
		data[i] = shared_byte(i);
	int fd = open(DIRECT_FILE, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, data, DIRECT_BYTES) != DIRECT_BYTES) {
		t_fail("no ext2 disk at /disk: cannot make " DIRECT_FILE);
		if (fd >= 0)
			close(fd);
		return;
	}
	lseek(fd, 0, SEEK_SET);
	expect("read of the whole file", read(fd, got, sizeof got), DIRECT_BYTES);
	if (memcmp(got, data, DIRECT_BYTES) != 0)
		t_fail("read() gives other bytes than write() wrote");
	expect("pread across pages", pread(fd, got, 5000, 3000), 5000);
	if (memcmp(got, data + 3000, 5000) != 0)
		t_fail("pread across pages gives other bytes");
	lseek(fd, 0, SEEK_SET);
	direct_read_refuses_bad_buffers(fd);
	direct_read_into_the_files_own_mapping(fd);
	close(fd);
	unlink(DIRECT_FILE);
}

/* Does a read of a RAM file system file (copied through the kernel's bounce
 * buffer) into a buffer whose second page is unmapped give the first page,
 * with the position moved by that much only, and a read into an unmapped
 * buffer EFAULT with the position unchanged? */
void bounced_read_stops_at_a_bad_page(void)
{
	static char data[8192];
	for (int i = 0; i < (int)sizeof data; i++)
		data[i] = (char)(i * 3 + 1);
	mkdir("/tmp", 01777);
	int fd = open("/tmp/bounced", O_RDWR | O_CREAT | O_TRUNC, 0644);
	char *map = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || map == MAP_FAILED || write(fd, data, sizeof data) != (long)sizeof data) {
		t_fail("cannot make /tmp/bounced or map a buffer");
		return;
	}
	munmap(map + 4096, 4096);
	lseek(fd, 0, SEEK_SET);
	expect("read into a buffer whose second page is unmapped", read(fd, map, 8192), 4096);
	if (memcmp(map, data, 4096) != 0)
		t_fail("the first page holds other bytes than the file's");
	expect("the position after the short read", lseek(fd, 0, SEEK_CUR), 4096);
	errno = 0;
	expect("read into an unmapped buffer", read(fd, map + 4096, 100), -1);
	expect("its errno", errno, EFAULT);
	expect("the position after the refused read", lseek(fd, 0, SEEK_CUR), 4096);
	munmap(map, 4096);
	close(fd);
	unlink("/tmp/bounced");
}

/* ---- scale ------------------------------------------------------------------ */

#define MANY 10000

/* Does a directory of 10,000 files work, every name found and listed once,
 * and (a figure, not a check) how long do 10,000 take against 1,000?  With
 * linear directories the ratio was about 100; constant-time ones give ~10. */
static long make_and_list(const char *dir, int count)
{
	char name[64];
	long start = t_now_ms();
	mkdir(dir, 0755);
	for (int i = 0; i < count; i++) {
		snprintf(name, sizeof name, "%s/file-%05d", dir, i);
		int fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			t_fail("create %s: %s", name, strerror(errno));
			return -1;
		}
		close(fd);
	}
	for (int i = 0; i < count; i += 7) {
		snprintf(name, sizeof name, "%s/file-%05d", dir, i);
		if (access(name, F_OK) < 0)
			t_fail("%s is missing", name);
	}
	DIR *d = opendir(dir);
	int listed = 0;
	for (struct dirent *e; d && (e = readdir(d));)
		listed += e->d_name[0] != '.';
	if (d)
		closedir(d);
	if (listed != count)
		t_fail("%s lists %d names, %d made", dir, listed, count);
	for (int i = 0; i < count; i++) {
		snprintf(name, sizeof name, "%s/file-%05d", dir, i);
		if (unlink(name) < 0)
			t_fail("unlink %s: %s", name, strerror(errno));
	}
	if (rmdir(dir) < 0)
		t_fail("rmdir %s: %s", dir, strerror(errno));
	return t_now_ms() - start;
}

void ramfs_directory_of_ten_thousand(void)
{
	mkdir("/tmp", 01777);
	long small = make_and_list("/tmp/thousand", MANY / 10);
	long large = make_and_list("/tmp/many", MANY);
	t_note("ramfs: %d files made, found, listed, removed in %ld ms; %d in %ld ms", MANY / 10,
	       small, MANY, large);
}

/* RAM fs files are pages, made when written: a file may be as large as the
 * machine's memory, a hole costs nothing and reads as zeros, shrinking gives
 * the pages back, and an offset past memory is EFBIG. */
void ramfs_files_are_sparse_pages(void)
{
	mkdir("/tmp", 01777);
	const off_t far = 200L << 20; /* 200 MiB, more than the RAM fs once held */
	int fd = open("/tmp/sparse", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		t_fail("open /tmp/sparse");
		return;
	}
	if (pwrite(fd, "end", 3, far) != 3)
		t_fail("a write at 200 MiB: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size != far + 3)
		t_fail("size after a write at 200 MiB: %ld", (long)st.st_size);
	char middle[64], expect_zero[64] = {0};
	if (pread(fd, middle, sizeof middle, 100L << 20) != (ssize_t)sizeof middle ||
	    memcmp(middle, expect_zero, sizeof middle) != 0)
		t_fail("the hole does not read as zeros");
	char end[4] = "";
	if (pread(fd, end, 3, far) != 3 || memcmp(end, "end", 3) != 0)
		t_fail("the bytes at 200 MiB read back as '%.3s'", end);
	if (ftruncate(fd, 10) != 0 || pwrite(fd, "x", 1, 4095) != 1 ||
	    pread(fd, middle, 20, 0) != 20 || memcmp(middle + 10, expect_zero, 10) != 0)
		t_fail("shrinking then growing: bytes past the old end are not zeros");
	expect("a write past the machine's memory", pwrite(fd, "x", 1, 1L << 40) < 0 ? errno : 0,
	       EFBIG);
	close(fd);
	unlink("/tmp/sparse");
}

/* ---- links planted in a shared sticky directory --------------------------- */

#define PL  "/tmp/planted"
#define PLR "/tmp/planted-roots-dir" /* root's 0755 directory: the links' targets */

/* uid 1000 plants links in /tmp (sticky, world-writable, root's): to a name
 * root might create, to root's file, and to a directory; and one in a
 * directory of its own. */
static void plant_as_user(void *unused)
{
	(void)unused;
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0) {
		t_fail("cannot become uid %d", USER_ID);
		_exit(1);
	}
	expect("plant a dangling link", sys2(__NR_symlink, PLR "/made", PL), 0);
	expect("plant a link to root's file", sys2(__NR_symlink, PLR "/file", PL "-file"), 0);
	expect("plant a directory link", sys2(__NR_symlink, PLR, PL "-dir"), 0);
	expect("a directory of its own", sys2(__NR_mkdir, PL "-own", (void *)0755), 0);
	expect("a link in it", sys2(__NR_symlink, PLR "/file", PL "-own/file"), 0);
	expect("its owner follows its link", raw_open(PL "-file", 0), 0);
	expect("root's link in /tmp is followed by others", raw_open(PL "-roots", 0), 0);
	_exit(t_failed() ? 1 : 0);
}

static void remove_planted(void)
{
	const char *names[] = {PL,          PL "-file",  PL "-dir",  PL "-own/file",
			       PL "-roots", PLR "/file", PLR "/made"};
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
		unlink(names[i]);
	rmdir(PL "-own");
	rmdir(PLR);
}

/* Does a link another user planted in /tmp steer nothing root opens or
 * creates (-EACCES), while lstat and readlink still see it and root may
 * remove it, and are links in a directory that is not shared followed as
 * before?  The links lead only to the test's own files. */
void a_link_planted_in_tmp_steers_nobody(void)
{
	mkdir("/tmp", 01777);
	chmod("/tmp", 01777);
	umask(022);
	remove_planted();
	expect("root's directory", sys2(__NR_mkdir, PLR, (void *)0755), 0);
	put_file(PLR "/file", "root's\n", 0644);
	expect("root's own link in /tmp", sys2(__NR_symlink, PLR "/file", PL "-roots"), 0);
	int status = t_run_child(plant_as_user, NULL);
	if (status != 0)
		t_fail("as uid %d: status %#x (see above)", USER_ID, status);
	expect("O_CREAT through the planted link", raw_open(PL, L_O_CREAT | L_O_WRONLY), -L_EACCES);
	struct stat st;
	expect("nothing made where it points", stat(PLR "/made", &st) < 0 ? errno : 0, ENOENT);
	expect("open through the planted link", raw_open(PL "-file", 0), -L_EACCES);
	expect("O_TRUNC through the planted link", raw_open(PL "-file", L_O_WRONLY | L_O_TRUNC),
	       -L_EACCES);
	expect("a path through the planted directory link (as Linux, only a last name's link is "
	       "checked)",
	       raw_open(PL "-dir/file", 0), 0);
	expect("a link in the user's own directory", raw_open(PL "-own/file", 0), 0);
	expect("root follows its own link", raw_open(PL "-roots", 0), 0);
	if (lstat(PL, &st) < 0 || !S_ISLNK(st.st_mode) || st.st_uid != USER_ID)
		t_fail("lstat of the planted link");
	char target[64];
	expect("readlink of the planted link",
	       ms_syscall3(__NR_readlink, (long)PL, (long)target, sizeof target),
	       (long)strlen(PLR "/made"));
	if (!reads(PLR "/file", "root's\n"))
		t_fail("root's file was touched through the link");
	expect("root removes the planted link", sys2(__NR_unlink, PL, NULL), 0);
	remove_planted();
}
