/*
 * usertests of the process table's bounds: users together stop short of
 * root's last slots, and each user stops at its own share, so that one user
 * forking until refused leaves root and every other user forking.  Apart
 * from security.c, whose libc headers name signals differently from
 * uapi/proc.h, where the bounds are.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/proc.h"
#include "usertests.h"

struct fill_report {
	long made;   /* processes the user forked */
	long result; /* what its last fork returned */
};

#define FILL_UID              3000 /* the first of the users that fill: no other case runs as them */
#define FILL_USERS            (PROC_MAX / USER_PROC_MAX + 1) /* more than the table holds together */
#define OWN_PROCESSES(report) ((report).made + 1)            /* its forks and the user itself */

/* As root: becomes a process of real uid first that keeps a saved uid of 0,
 * then (euid 0 again, which the saved uid allows) changes its real uid to
 * uid. */
static bool become_by_way_of(uint32_t first, uint32_t uid)
{
	return setgid(uid) == 0 && ms_syscall3(__NR_setresuid, first, first, 0) == 0 &&
	       getuid() == first && ms_syscall3(__NR_setresuid, -1, 0, -1) == 0 &&
	       ms_syscall3(__NR_setresuid, uid, uid, uid) == 0;
}

/* As uid (having been first, when that differs): forks until fork fails,
 * each child blocked on the gate, and reports how far it got; then waits
 * for them all.  pipes: gate's read and write ends, report's read and write
 * ends. */
static void fork_until_refused_as(uint32_t first, uint32_t uid, const int pipes[4])
{
	close(pipes[2]);
	if (first != uid && !become_by_way_of(first, uid))
		_exit(1);
	if (setgid(uid) < 0 || setuid(uid) < 0)
		_exit(1);
	struct fill_report report = {0, 0};
	while (report.made < 5000) {
		report.result = ms_syscall3(__NR_fork, 0, 0, 0);
		if (report.result == 0) {
			char c;
			close(pipes[1]);
			read(pipes[0], &c, 1); /* end of file when root closes the gate */
			_exit(0);
		}
		if (report.result < 0)
			break;
		report.made++;
	}
	close(pipes[1]);
	write(pipes[3], &report, sizeof report);
	while (wait(NULL) > 0)
		;
	_exit(0);
}

/* Forks a process that becomes uid (by way of real uid first, when that
 * differs) and forks until refused, its processes holding until the gate
 * closes; reads its report into *report (made -1: none came).  Returns its
 * pid or -1. */
static pid_t fill_after(uint32_t first, uint32_t uid, const int gate[2], struct fill_report *report)
{
	int reports[2];
	*report = (struct fill_report){-1, 0};
	if (pipe(reports) < 0)
		return -1;
	fflush(stdout);
	pid_t user = fork();
	if (user == 0) {
		int pipes[4] = {gate[0], gate[1], reports[0], reports[1]};
		fork_until_refused_as(first, uid, pipes);
	}
	close(reports[1]);
	if (user < 0 || read(reports[0], report, sizeof *report) != sizeof *report)
		*report = (struct fill_report){-1, 0};
	close(reports[0]);
	return user;
}

static pid_t fill_as(uint32_t uid, const int gate[2], struct fill_report *report)
{
	return fill_after(uid, uid, gate, report);
}

/* Opens the gate the users' processes wait on and reaps the users (each
 * reaps its own processes first). */
static void release_users(int gate[2], const pid_t *users, int count)
{
	close(gate[1]);
	for (int i = 0; i < count; i++)
		if (users[i] > 0)
			waitpid(users[i], NULL, 0);
	close(gate[0]);
}

/* Whether root (this process) can fork now. */
static long root_forks(void)
{
	long root = ms_syscall3(__NR_fork, 0, 0, 0);
	if (root == 0)
		_exit(0);
	if (root > 0)
		waitpid((pid_t)root, NULL, 0);
	return root;
}

/* Before: a user forking until fork failed filled all 64 slots, and root (the
 * console shell, an administrator's kill -9 pipeline) could not fork again
 * until the user's processes ended.  Now all users' forks together stop at
 * PROC_MAX - PROC_ROOT_RESERVED processes: FILL_USERS users, each forking
 * until refused, would hold more than that with USER_PROC_MAX each, so the
 * last one is refused short of its own share, and root still forks.  (Each
 * user is a process root forked: root's forks may go past the 56.) */
void a_user_cannot_fill_the_process_table(void)
{
	int gate[2];
	pid_t users[FILL_USERS];
	struct fill_report report = {-1, 0};
	long held = 0;
	if (pipe(gate) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	for (int i = 0; i < FILL_USERS; i++) {
		users[i] = fill_as(FILL_UID + (uint32_t)i, gate, &report);
		if (report.made < 0)
			t_fail("uid %d's forks did not report", FILL_UID + i);
		else if (report.result != -L_EAGAIN && report.result != -L_ENOMEM)
			t_fail("uid %d's fork failed with %ld, expected -EAGAIN or -ENOMEM",
			       FILL_UID + i, report.result);
		else
			held += OWN_PROCESSES(report);
	}
	if (report.made < 0 || OWN_PROCESSES(report) >= USER_PROC_MAX)
		t_fail(
		    "the last of %d users had %ld processes when refused: the %d slots all users "
		    "share were not full",
		    FILL_USERS, OWN_PROCESSES(report), PROC_MAX - PROC_ROOT_RESERVED);
	long root = root_forks();
	if (root < 0)
		t_fail("root cannot fork once %d users hold %ld processes: %ld", FILL_USERS, held,
		       root);
	t_note("%d users held %ld processes before their forks failed", FILL_USERS, held);
	release_users(gate, users, FILL_USERS);
}

/* Before: all users but root shared the table's first 56 slots and nothing
 * else, so one user forking until refused left every other user unable to
 * fork (-EAGAIN) until its processes ended.  Now a user's forks stop at
 * USER_PROC_MAX processes of its own (the filling process counts: it became
 * the user by setuid), and another user and root still fork. */
void one_users_forks_leave_another_user_forking(void)
{
	int gate[2];
	pid_t users[2];
	struct fill_report first, second;
	if (pipe(gate) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	users[0] = fill_as(FILL_UID, gate, &first);
	users[1] = fill_as(FILL_UID + 1, gate, &second);
	if (first.result != -L_EAGAIN || OWN_PROCESSES(first) != USER_PROC_MAX)
		t_fail("uid %d had %ld processes when its fork failed with %ld, expected %d, "
		       "then -EAGAIN",
		       FILL_UID, OWN_PROCESSES(first), first.result, USER_PROC_MAX);
	if (second.result != -L_EAGAIN || OWN_PROCESSES(second) != USER_PROC_MAX)
		t_fail("uid %d had %ld processes (then %ld) while uid %d held %ld: expected %d, "
		       "then -EAGAIN",
		       FILL_UID + 1, OWN_PROCESSES(second), second.result, FILL_UID,
		       OWN_PROCESSES(first), USER_PROC_MAX);
	long root = root_forks();
	if (root < 0)
		t_fail("root cannot fork while two users hold their processes: %ld", root);
	release_users(gate, users, 2);
}

/* A user's processes count until they are reaped: once its processes have
 * ended and been waited for, the user forks as many again (before, the
 * count was only the table's, and a user got whatever the other users had
 * left of the 56 shared slots). */
void a_users_process_count_returns_when_reaped(void)
{
	struct fill_report rounds[2];
	for (int i = 0; i < 2; i++) {
		int gate[2];
		if (pipe(gate) < 0) {
			t_fail("pipe: %s", strerror(errno));
			return;
		}
		pid_t user = fill_as(FILL_UID, gate, &rounds[i]);
		release_users(gate, &user, 1);
		if (rounds[i].result != -L_EAGAIN || OWN_PROCESSES(rounds[i]) != USER_PROC_MAX)
			t_fail("round %d: uid %d had %ld processes when its fork failed with %ld, "
			       "expected %d, then -EAGAIN",
			       i + 1, FILL_UID, OWN_PROCESSES(rounds[i]), rounds[i].result,
			       USER_PROC_MAX);
	}
}

/* A process counts to its real uid: one that changes it takes its count
 * from the old uid to the new.  A process of uid FILL_UID (saved uid 0)
 * becomes FILL_UID + 1 and forks until refused: it and its forks are
 * USER_PROC_MAX; then FILL_UID, while that process still holds, has all
 * USER_PROC_MAX of its own again. */
void a_process_takes_its_count_to_its_new_real_uid(void)
{
	int gate[2];
	pid_t users[2];
	struct fill_report moved, left;
	if (pipe(gate) < 0) {
		t_fail("pipe: %s", strerror(errno));
		return;
	}
	users[0] = fill_after(FILL_UID, FILL_UID + 1, gate, &moved);
	users[1] = fill_as(FILL_UID, gate, &left);
	if (moved.result != -L_EAGAIN || OWN_PROCESSES(moved) != USER_PROC_MAX)
		t_fail("uid %d, once uid %d, had %ld processes when its fork failed with %ld, "
		       "expected %d, then -EAGAIN",
		       FILL_UID + 1, FILL_UID, OWN_PROCESSES(moved), moved.result, USER_PROC_MAX);
	if (left.result != -L_EAGAIN || OWN_PROCESSES(left) != USER_PROC_MAX)
		t_fail("uid %d had %ld processes when its fork failed with %ld after a process "
		       "left it for uid %d: expected %d, then -EAGAIN",
		       FILL_UID, OWN_PROCESSES(left), left.result, FILL_UID + 1, USER_PROC_MAX);
	release_users(gate, users, 2);
}
