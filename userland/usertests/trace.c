/*
 * The trace stream from user space: marks written with ms_trace_mark while
 * a trace runs (started through the kernel shell into a directory) come out
 * in the CTF trace, in order, with their bytes; the call refuses bad
 * pointers and lengths whether or not a trace runs; and the trace map
 * (uscope) records user stacks for exactly the processes of the program it
 * names, which a fork and an exec decide.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <microscope/syscall.h>

#include "uapi/cred.h"
#include "uapi/telemetry.h"
#include "uapi/trace.h"
#include "usertests.h"

#define TRACE_DIR    "/tmp/usertrace"
#define PACKET_BYTES 72 /* the CTF packet header and context (kernel/trace/ctf.h) */

static long mark(uint32_t type, const void *data, long length)
{
	return ms_syscall3(__NR_ms_trace_mark, type, (long)data, length);
}

static long shell(const char *line)
{
	return ms_syscall3(__NR_ms_kshell, (long)line, 0, 0);
}

/* Where the packet at packet in stream ends its content (*end: its last
 * record's payload may end before that record's padding) and where the next
 * packet starts (returned). */
static long packet_bounds(const uint8_t *stream, long packet, long *end)
{
	uint64_t content_bits, size_bits;
	memcpy(&content_bits, stream + packet + 40, 8);
	memcpy(&size_bits, stream + packet + 48, 8);
	*end = packet + (long)(content_bits / 8);
	return packet + (long)(size_bits / 8);
}

/* Counts the marks of type in one stream file whose data is "mark N" with
 * N = the count so far (in order). */
static int marks_in(const char *path, uint32_t type, int *out_of_order)
{
	static uint8_t stream[256 * 1024] __attribute__((aligned(8)));
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	long bytes = read(fd, stream, sizeof stream);
	close(fd);
	int found = 0;
	for (long packet = 0; packet + PACKET_BYTES <= bytes;) {
		long end, next = packet_bounds(stream, packet, &end);
		for (long at = packet + PACKET_BYTES; at < end && at < bytes;) {
			const struct tel_record *r = (const void *)(stream + at);
			const struct trace_mark *m = tel_record_payload(r);
			if (r->type == TRACE_USER_MARK && m->type == type) {
				char expect[16];
				int n = snprintf(expect, sizeof expect, "mark %d", found);
				*out_of_order +=
				    m->length != (uint32_t)n || memcmp(m + 1, expect, n);
				found++;
			}
			if (!r->words)
				break;
			at += (long)tel_record_bytes(r);
		}
		packet = next > packet ? next : bytes;
	}
	return found;
}

void trace_marks_reach_the_stream(void)
{
	if (shell("trace start -o file:" TRACE_DIR) != 0) {
		t_fail("trace start failed");
		return;
	}
	for (int i = 0; i < 100; i++) {
		char text[16];
		int n = snprintf(text, sizeof text, "mark %d", i);
		if (mark(0x5eed, text, n) != 0)
			t_fail("mark %d refused", i);
	}
	/* The stream's channel has one reader, the kernel's drain: even a
	 * privileged process may not take records out of it. */
	int refused = 0;
	for (int channel = 0; channel < TEL_CHANNEL_MAX; channel++) {
		static uint8_t buffer[4096];
		refused += ms_syscall6(__NR_ms_tel_read, channel, 0, (long)buffer, sizeof buffer, 0,
				       0) == -L_EBUSY;
	}
	if (refused < 1)
		t_fail("no telemetry channel refused ms_tel_read with EBUSY while a trace ran");
	if (shell("trace stop") != 0)
		t_fail("trace stop failed");
	int found = 0, out_of_order = 0;
	for (int cpu = 0; cpu < 64; cpu++) {
		char path[64];
		snprintf(path, sizeof path, TRACE_DIR "/stream_%d", cpu);
		found += marks_in(path, 0x5eed, &out_of_order);
	}
	if (found != 100 || out_of_order)
		t_fail("found %d of 100 marks, %d out of order or garbled", found, out_of_order);
	if (access(TRACE_DIR "/metadata", R_OK) != 0)
		t_fail("no metadata in " TRACE_DIR);
}

void trace_mark_refuses_bad_input(void)
{
	char text[TRACE_MARK_MAX + 1] = "x";
	if (mark(1, text, TRACE_MARK_MAX + 1) != -L_EINVAL)
		t_fail("a mark longer than TRACE_MARK_MAX was not refused with EINVAL");
	if (mark(1, (void *)0xffffffff80000000UL, 8) != -L_EFAULT)
		t_fail("a kernel pointer was not refused with EFAULT");
	if (mark(1, (void *)0x1, 8) != -L_EFAULT)
		t_fail("an unmapped pointer was not refused with EFAULT");
	if (mark(1, text, -1) != -L_EINVAL)
		t_fail("a negative length was not refused with EINVAL");
	if (mark(1, NULL, 0) != 0 || mark(1, text, TRACE_MARK_MAX) != 0)
		t_fail("an empty or a full-size mark was refused");
}

/* ---- uscope: the trace map ---------------------------------------------- */

struct stacks_seen {
	int of_cat, of_others, deep, names, outside_own, too_many;
	unsigned keep;
	uint64_t own_start, own_end;
	int32_t cat_tids[8];
	int cat_count;
};

static int is_cat(const struct stacks_seen *seen, int32_t tid)
{
	for (int i = 0; i < seen->cat_count; i++)
		if (seen->cat_tids[i] == tid)
			return 1;
	return 0;
}

/* A stream's stacks sent whole (user_stack_def), by id, so that the
 * references to them (user_stack_ref, syscall_stack) read as the stacks
 * they stand for (uapi/trace.h). */
#define DEFS_MAX 1024
static struct {
	uint32_t id[DEFS_MAX];
	const struct trace_user_stack_def *def[DEFS_MAX];
	int count;
} defs;
static int references_seen; /* user_stack_ref and syscall_stack records read */

static const struct trace_user_stack_def *def_of(uint32_t id)
{
	for (int i = defs.count - 1; i >= 0; i--)
		if (defs.id[i] == id)
			return defs.def[i];
	return NULL;
}

/* Visits thread tid's user_stack record with def's frames (none and marked
 * lost when def is NULL), stamped as r. */
static void visit_stack(const struct tel_record *r, int32_t tid,
			const struct trace_user_stack_def *def,
			void (*visit)(const struct tel_record *, void *), void *arg)
{
	static uint64_t record[2 + TRACE_STACK_MAX];
	unsigned count = def && def->count <= TRACE_STACK_MAX ? def->count : 0;
	struct tel_record head = {.type = TRACE_USER_STACK,
				  .words = (uint8_t)(2 + count),
				  .kind = TEL_COMPACT,
				  .time = r->time};
	struct trace_user_stack stack = {.tid = tid,
					 .count = (uint16_t)count,
					 .flags = def ? def->flags
						      : TRACE_STACK_UNREADABLE | TRACE_STACK_LOST};
	memcpy(record, &head, 8);
	memcpy(record + 1, &stack, 8);
	if (count)
		memcpy(record + 2, def + 1, count * 8);
	visit((const struct tel_record *)record, arg);
}

/* Visits r, or what it stands for: a definition as the user_stack it is, a
 * reference as its definition's, a syscall_stack as its syscall_entry and
 * that stack. */
static void visit_resolved(const struct tel_record *r,
			   void (*visit)(const struct tel_record *, void *), void *arg)
{
	if (r->type == TRACE_USER_STACK_DEF) {
		const struct trace_user_stack_def *def = tel_record_payload(r);
		if (defs.count < DEFS_MAX) {
			defs.id[defs.count] = def->id;
			defs.def[defs.count++] = def;
		}
		visit_stack(r, def->tid, def, visit, arg);
	} else if (r->type == TRACE_USER_STACK_REF) {
		const struct trace_user_stack_ref *ref = tel_record_payload(r);
		references_seen++;
		visit_stack(r, ref->tid, def_of(ref->id), visit, arg);
	} else if (r->type == TRACE_SYSCALL_STACK) {
		const struct trace_syscall_stack *both = tel_record_payload(r);
		uint64_t entry[3];
		struct tel_record head = {
		    .type = TRACE_SYSCALL_ENTRY, .words = 3, .kind = TEL_COMPACT, .time = r->time};
		struct trace_syscall_entry call = {.number = both->number, .arg0 = both->arg0};
		memcpy(entry, &head, 8);
		memcpy(entry + 1, &call, 16);
		references_seen++;
		visit((const struct tel_record *)entry, arg);
		visit_stack(r, both->tid, def_of(both->id), visit, arg);
	} else {
		visit(r, arg);
	}
}

/* Walks one stream file's records, calling visit on each (references to
 * stacks resolved). */
static void each_record(const char *path, void (*visit)(const struct tel_record *, void *),
			void *arg)
{
	static uint8_t stream[256 * 1024] __attribute__((aligned(8)));
	defs.count = 0;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	long bytes = read(fd, stream, sizeof stream);
	close(fd);
	for (long packet = 0; packet + PACKET_BYTES <= bytes;) {
		long end, next = packet_bounds(stream, packet, &end);
		for (long at = packet + PACKET_BYTES; at < end && at < bytes;) {
			const struct tel_record *r = (const void *)(stream + at);
			if (!r->words)
				break;
			visit_resolved(r, visit, arg);
			at += (long)tel_record_bytes(r);
		}
		packet = next > packet ? next : bytes;
	}
}

static void note_names(const struct tel_record *r, void *arg)
{
	struct stacks_seen *seen = arg;
	const struct trace_thread_name *n = tel_record_payload(r);
	if (r->type == TRACE_PROCESS_EXEC && !strcmp(n->name, "cat") && seen->cat_count < 8)
		seen->cat_tids[seen->cat_count++] = n->tid;
}

static void note_stacks(const struct tel_record *r, void *arg)
{
	struct stacks_seen *seen = arg;
	const struct trace_user_stack *s = tel_record_payload(r);
	if (r->type != TRACE_USER_STACK)
		return;
	*(is_cat(seen, s->tid) ? &seen->of_cat : &seen->of_others) += 1;
	seen->deep += s->count >= 3;
	seen->too_many += s->count > seen->keep;
	const uint64_t *frames = (const uint64_t *)(s + 1);
	for (unsigned i = 0; i < s->count; i++)
		seen->outside_own += frames[i] < seen->own_start || frames[i] >= seen->own_end;
}

static void run_quietly(const char *path, char *const argv[])
{
	pid_t child = fork();
	if (child == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execv(path, argv);
		_exit(127);
	}
	waitpid(child, NULL, 0);
}

/* The address range of a program's .text.own section (0, 0: none). */
static void own_code_of(const char *path, uint64_t *start, uint64_t *end)
{
	static uint8_t file[256 * 1024];
	*start = *end = 0;
	int fd = open(path, O_RDONLY);
	long size = fd < 0 ? -1 : read(fd, file, sizeof file);
	if (fd >= 0)
		close(fd);
	uint64_t shoff;
	uint16_t shnum, shstrndx;
	if (size < 64)
		return;
	memcpy(&shoff, file + 40, 8);
	memcpy(&shnum, file + 60, 2);
	memcpy(&shstrndx, file + 62, 2);
	if (shoff + (uint64_t)shnum * 64 > (uint64_t)size || shstrndx >= shnum)
		return;
	uint64_t names;
	memcpy(&names, file + shoff + shstrndx * 64 + 24, 8);
	for (unsigned i = 1; i < shnum; i++) {
		const uint8_t *sh = file + shoff + i * 64;
		uint32_t name;
		memcpy(&name, sh, 4);
		if (names + name + 10 <= (uint64_t)size &&
		    !memcmp(file + names + name, ".text.own", 10)) {
			uint64_t addr, length;
			memcpy(&addr, sh + 16, 8);
			memcpy(&length, sh + 32, 8);
			*start = addr;
			*end = addr + length;
		}
	}
}

/* Traces cat in mode, budget; runs cat (traced) and echo (not); returns
 * what the trace holds. */
static struct stacks_seen stacks_of_cat(unsigned mode, unsigned budget)
{
	struct stacks_seen seen = {.keep = mode == 1 || mode == 3 ? 1 : budget};
	own_code_of("/bin/cat", &seen.own_start, &seen.own_end);
	char line[64];
	snprintf(line, sizeof line, "uscope trace cat --mode %u --budget %u", mode, budget);
	if (shell(line) != 0 || shell("trace start -o file:" TRACE_DIR) != 0) {
		t_fail("'%s' or trace start failed", line);
		return seen;
	}
	char *cat[] = {"cat", "/etc/rc", NULL}, *echo[] = {"echo", "hi", NULL};
	run_quietly("/bin/cat", cat);
	run_quietly("/bin/echo", echo);
	shell("trace stop");
	shell("uscope untrace cat");
	for (int pass = 0; pass < 2; pass++) {
		for (int cpu = 0; cpu < 64; cpu++) {
			char path[64];
			snprintf(path, sizeof path, TRACE_DIR "/stream_%d", cpu);
			each_record(path, pass ? note_stacks : note_names, &seen);
		}
	}
	if (!seen.cat_count || !seen.of_cat)
		t_fail("mode %u: %d process_exec of cat, %d stacks of cat", mode, seen.cat_count,
		       seen.of_cat);
	if (seen.of_others)
		t_fail("mode %u: %d stacks of processes that are not cat", mode, seen.of_others);
	if (seen.too_many)
		t_fail("mode %u: %d stacks longer than %u frames", mode, seen.too_many, seen.keep);
	return seen;
}

void uscope_traces_a_program_by_name(void)
{
	uint64_t start, end;
	own_code_of("/bin/cat", &start, &end);
	if (start >= end)
		t_fail("/bin/cat has no .text.own section");
	struct stacks_seen all = stacks_of_cat(4, 8);
	if (!all.deep || !all.outside_own)
		t_fail("mode 4: %d stacks of 3 frames or more, %d frames outside cat's own code",
		       all.deep, all.outside_own);
	for (unsigned mode = 1; mode <= 2; mode++) {
		struct stacks_seen own = stacks_of_cat(mode, 3);
		if (own.outside_own)
			t_fail("mode %u: %d frames outside cat's own code", mode, own.outside_own);
	}
	if (shell("uscope trace cat --mode 5") == 0 || shell("uscope untrace nobody") == 0)
		t_fail("mode 5 or an unknown name was accepted");
}

/* ---- uscope: fork inherits, exec re-decides ---------------------------- */

/* Stacks of sh, which forks a child that execs cat, in one CPU's stream (the
 * test pins itself, and so its children, to one CPU: the stream is then in
 * the order things ran). */
struct lineage {
	int32_t sh_tids[8], cat_tids[8];
	int sh_count, cat_count;
	int of_sh, of_child_before_exec, of_child_after_exec, of_others;
	int32_t exec_seen[8]; /* cat_tids whose exec the walk has passed */
	int exec_seen_count;
};

static int tid_in(const int32_t *tids, int count, int32_t tid)
{
	for (int i = 0; i < count; i++)
		if (tids[i] == tid)
			return 1;
	return 0;
}

static void note_lineage_names(const struct tel_record *r, void *arg)
{
	struct lineage *l = arg;
	const struct trace_thread_name *n = tel_record_payload(r);
	if (r->type != TRACE_PROCESS_EXEC)
		return;
	if (!strcmp(n->name, "sh") && l->sh_count < 8)
		l->sh_tids[l->sh_count++] = n->tid;
	if (!strcmp(n->name, "cat") && l->cat_count < 8)
		l->cat_tids[l->cat_count++] = n->tid;
}

static void note_lineage_stacks(const struct tel_record *r, void *arg)
{
	struct lineage *l = arg;
	if (r->type == TRACE_PROCESS_EXEC) {
		const struct trace_thread_name *n = tel_record_payload(r);
		if (tid_in(l->cat_tids, l->cat_count, n->tid) && l->exec_seen_count < 8)
			l->exec_seen[l->exec_seen_count++] = n->tid;
		return;
	}
	if (r->type != TRACE_USER_STACK)
		return;
	const struct trace_user_stack *s = tel_record_payload(r);
	if (tid_in(l->cat_tids, l->cat_count, s->tid))
		*(tid_in(l->exec_seen, l->exec_seen_count, s->tid) ? &l->of_child_after_exec
								   : &l->of_child_before_exec) += 1;
	else
		*(tid_in(l->sh_tids, l->sh_count, s->tid) ? &l->of_sh : &l->of_others) += 1;
}

/* With sh in the map, sh -c "cat /etc/rc": sh is traced by its name; the
 * child it forks is traced from the fork on (it inherits the mark) until
 * its exec into cat, which the map does not name; nothing else is. */
void uscope_follows_a_fork_and_stops_at_a_renamed_exec(void)
{
	cpu_set_t all;
	int cpu = t_pin_to_one_cpu(&all, sizeof all); /* the children inherit it */
	if (cpu < 0)
		return;
	if (shell("uscope trace sh --mode 4 --budget 4") != 0 ||
	    shell("trace start -o file:" TRACE_DIR) != 0) {
		t_fail("uscope trace sh or trace start failed");
		shell("uscope untrace sh");
		sched_setaffinity(0, sizeof all, &all);
		return;
	}
	char *sh[] = {"sh", "-c", "cat /etc/rc", NULL};
	run_quietly("/bin/sh", sh);
	shell("trace stop");
	shell("uscope untrace sh");
	sched_setaffinity(0, sizeof all, &all);
	static struct lineage l;
	memset(&l, 0, sizeof l);
	char path[64];
	snprintf(path, sizeof path, TRACE_DIR "/stream_%d", cpu);
	each_record(path, note_lineage_names, &l);
	each_record(path, note_lineage_stacks, &l);
	if (l.sh_count != 1 || l.cat_count != 1)
		t_fail("%d process_exec of sh and %d of cat on CPU %d, expected one each",
		       l.sh_count, l.cat_count, cpu);
	if (!l.of_sh)
		t_fail("no stack of sh, which the map names");
	if (!l.of_child_before_exec)
		t_fail("no stack of sh's child before its exec: the fork did not pass the mark on");
	if (l.of_child_after_exec)
		t_fail(
		    "%d stacks of the child after its exec into cat, which the map does not name",
		    l.of_child_after_exec);
	if (l.of_others)
		t_fail("%d stacks of processes that are neither sh nor its child", l.of_others);
}

/* ---- uscope: a user's own entries (ms_uscope) ---------------------------- */

#define L_EPERM 1
#define USER_ID 1000

static long uscope_call(uint32_t op, const void *name, void *arg, uint64_t size)
{
	return ms_syscall6(__NR_ms_uscope, op, (long)name, (long)arg, (long)size, 0, 0);
}

static long uscope_add(const char *name, uint32_t mode, uint32_t budget)
{
	struct uscope_request request = {.mode = mode, .budget = budget, .events = "*"};
	return uscope_call(USCOPE_TRACE, name, &request, sizeof request);
}

static void become_user(void)
{
	if (setgid(USER_ID) < 0 || setuid(USER_ID) < 0 || getuid() != USER_ID) {
		t_fail("becoming uid %d failed", USER_ID);
		_exit(1);
	}
}

static void add_cat_as_user(void *unused)
{
	(void)unused;
	become_user();
	long slot = uscope_add("cat", 4, 4);
	if (slot <= 0)
		t_fail("ms_uscope(TRACE, cat) as uid %d: %ld", USER_ID, slot);
	_exit(t_failed() ? 1 : 0);
}

static void untrace_cat_as_user(void *unused)
{
	(void)unused;
	become_user();
	long error = uscope_call(USCOPE_UNTRACE, "cat", NULL, 0);
	if (error != 0)
		t_fail("ms_uscope(UNTRACE, cat) as uid %d: %ld", USER_ID, error);
	_exit(t_failed() ? 1 : 0);
}

/* Runs cat (its output to /dev/null) as uid (0: root); returns its pid. */
static pid_t run_cat_as(uid_t uid)
{
	pid_t child = fork();
	if (child == 0) {
		if (uid && (setgid(uid) < 0 || setuid(uid) < 0))
			_exit(126);
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		char *argv[] = {"cat", "/etc/rc", NULL};
		execv("/bin/cat", argv);
		_exit(127);
	}
	waitpid(child, NULL, 0);
	return child;
}

struct two_cats {
	pid_t pid[2];   /* the user's, root's */
	int32_t tid[2]; /* their threads, from their process_exec records */
	int stacks[2];  /* their user stacks */
	int others;     /* stacks of any other thread */
};

static void note_cat_threads(const struct tel_record *r, void *arg)
{
	struct two_cats *cats = arg;
	const struct trace_thread_name *n = tel_record_payload(r);
	if (r->type == TRACE_PROCESS_EXEC)
		for (int i = 0; i < 2; i++)
			if (n->pid == cats->pid[i])
				cats->tid[i] = n->tid;
}

static void count_cat_stacks(const struct tel_record *r, void *arg)
{
	struct two_cats *cats = arg;
	const struct trace_user_stack *s = tel_record_payload(r);
	if (r->type != TRACE_USER_STACK)
		return;
	int i = s->tid == cats->tid[0] ? 0 : s->tid == cats->tid[1] ? 1 : -1;
	*(i < 0 ? &cats->others : &cats->stacks[i]) += 1;
}

/* A user puts cat in the map through ms_uscope, without privileges: the cat
 * the user runs has stacks, root's cat none (the entry is the user's). */
void uscope_a_user_traces_only_their_own_processes(void)
{
	if (t_run_child(add_cat_as_user, NULL) != 0 ||
	    shell("trace start -o file:" TRACE_DIR) != 0) {
		t_fail("the user's entry or trace start failed");
		shell("uscope untrace cat");
		return;
	}
	static struct two_cats cats;
	memset(&cats, 0, sizeof cats);
	cats.pid[0] = run_cat_as(USER_ID);
	cats.pid[1] = run_cat_as(0);
	shell("trace stop");
	if (t_run_child(untrace_cat_as_user, NULL) != 0)
		t_fail("the user could not take their entry out");
	for (int pass = 0; pass < 2; pass++)
		for (int cpu = 0; cpu < 64; cpu++) {
			char path[64];
			snprintf(path, sizeof path, TRACE_DIR "/stream_%d", cpu);
			each_record(path, pass ? count_cat_stacks : note_cat_threads, &cats);
		}
	if (!cats.tid[0] || !cats.tid[1])
		t_fail("no process_exec of the user's cat (%d) or root's (%d)", cats.pid[0],
		       cats.pid[1]);
	if (!cats.stacks[0])
		t_fail("no stack of the user's cat, which the user's entry names");
	if (cats.stacks[1] || cats.others)
		t_fail("%d stacks of root's cat and %d of others: the entry is the user's only",
		       cats.stacks[1], cats.others);
}

struct refusal {
	const char *what;
	long got, want;
};

static void expect_all(const struct refusal *cases, int count, const char *who)
{
	for (int i = 0; i < count; i++)
		if (cases[i].got != cases[i].want)
			t_fail("%s, %s: %ld, expected %ld", who, cases[i].what, cases[i].got,
			       cases[i].want);
}

/* As the user: bad input of every kind, then the rules an entry of one's
 * own keeps (its number, another's entry, what a list shows). */
static void bad_requests_as_user(void *unused)
{
	(void)unused;
	become_user();
	struct uscope_request good = {.mode = 2, .budget = 3, .events = "*"};
	struct uscope_request no_nul = good, bad_mode = good, big_budget = good;
	memset(no_nul.events, 'a', sizeof no_nul.events);
	bad_mode.mode = 5;
	big_budget.budget = 1000;
	char long_name[64];
	memset(long_name, 'n', sizeof long_name - 1);
	long_name[sizeof long_name - 1] = 0;
	const void *kernel = (const void *)0xffff800000000000ul;
	struct uscope_info info[USCOPE_MAP_MAX];
	struct refusal cases[] = {
	    {"an unknown op", uscope_call(99, "cat", &good, sizeof good), -L_EINVAL},
	    {"a NULL name", uscope_call(USCOPE_TRACE, NULL, &good, sizeof good), -L_EFAULT},
	    {"a name at a kernel address", uscope_call(USCOPE_TRACE, kernel, &good, sizeof good),
	     -L_EFAULT},
	    {"an empty name", uscope_call(USCOPE_TRACE, "", &good, sizeof good), -L_EINVAL},
	    {"a name too long", uscope_call(USCOPE_TRACE, long_name, &good, sizeof good),
	     -L_EINVAL},
	    {"a short request", uscope_call(USCOPE_TRACE, "cat", &good, sizeof good - 1),
	     -L_EINVAL},
	    {"a request at a kernel address",
	     uscope_call(USCOPE_TRACE, "cat", (void *)kernel, sizeof good), -L_EFAULT},
	    {"events without a NUL", uscope_call(USCOPE_TRACE, "cat", &no_nul, sizeof no_nul),
	     -L_EINVAL},
	    {"mode 5", uscope_call(USCOPE_TRACE, "cat", &bad_mode, sizeof bad_mode), -L_EINVAL},
	    {"budget 1000", uscope_call(USCOPE_TRACE, "cat", &big_budget, sizeof big_budget),
	     -L_EINVAL},
	    {"untrace with an argument", uscope_call(USCOPE_UNTRACE, "cat", &good, 0), -L_EINVAL},
	    {"untrace of nothing", uscope_call(USCOPE_UNTRACE, "nothing-here", NULL, 0), -L_ENOENT},
	    {"list with a name", uscope_call(USCOPE_LIST, "cat", info, USCOPE_MAP_MAX), -L_EINVAL},
	    {"untrace of root's entry", uscope_call(USCOPE_UNTRACE, "echo", NULL, 0), -L_EPERM},
	    {"a first entry", uscope_add("ls", 2, 3) > 0, 1},
	    {"a second entry", uscope_add("cat", 2, 3) > 0, 1},
	    {"the same entry again", uscope_add("cat", 4, 8) > 0, 1},
	    {"a third entry", uscope_add("sh", 2, 3), -L_ENOSPC},
	    {"a list into a kernel address", uscope_call(USCOPE_LIST, NULL, (void *)kernel, 8),
	     -L_EFAULT},
	    {"a list: root's echo and the user's ls and cat",
	     uscope_call(USCOPE_LIST, NULL, info, USCOPE_MAP_MAX), 3},
	};
	expect_all(cases, (int)(sizeof cases / sizeof cases[0]), "as a user");
	for (int i = 0; i < 3; i++)
		if (!info[i].every_user && info[i].owner != USER_ID)
			t_fail("the user's list shows %s of uid %u", info[i].name, info[i].owner);
	uscope_call(USCOPE_UNTRACE, "ls", NULL, 0);
	uscope_call(USCOPE_UNTRACE, "cat", NULL, 0);
	_exit(t_failed() ? 1 : 0);
}

/* Real and effective user ids that differ (a set-uid program's) belong to
 * no one user: such a caller may add no entry of its own. */
static void request_with_mixed_ids(void *unused)
{
	(void)unused;
	if (ms_syscall3(__NR_setresgid, USER_ID, USER_ID, USER_ID) < 0 ||
	    ms_syscall3(__NR_setresuid, USER_ID, USER_ID + 1, USER_ID) < 0)
		t_fail("setresuid(%d, %d, %d) failed", USER_ID, USER_ID + 1, USER_ID);
	long got = uscope_add("cat", 2, 3);
	if (got != -L_EPERM)
		t_fail("ms_uscope(TRACE) with mixed user ids: %ld, expected -EPERM", got);
	_exit(t_failed() ? 1 : 0);
}

/* Root that gave up PRIV_MONITOR may not put root's processes (the
 * system's) in the map. */
static void request_as_root_without_monitor(void *unused)
{
	(void)unused;
	if (ms_syscall3(__NR_ms_priv, PRIV_MONITOR, 0, 0) < 0)
		t_fail("ms_priv(drop PRIV_MONITOR) failed");
	long got = uscope_add("cat", 2, 3);
	if (got != -L_EPERM)
		t_fail("ms_uscope(TRACE) as root without PRIV_MONITOR: %ld, expected -EPERM", got);
	_exit(t_failed() ? 1 : 0);
}

/* ms_uscope refuses bad input with the error it documents and loses
 * nothing: the map holds what it held. */
void uscope_refuses_bad_requests(void)
{
	if (shell("uscope trace echo --mode 2 --budget 3") != 0) {
		t_fail("uscope trace echo failed");
		return;
	}
	if (t_run_child(bad_requests_as_user, NULL) != 0)
		t_fail("as a user: see above");
	if (t_run_child(request_with_mixed_ids, NULL) != 0)
		t_fail("with mixed ids: see above");
	if (t_run_child(request_as_root_without_monitor, NULL) != 0)
		t_fail("as root without PRIV_MONITOR: see above");
	struct uscope_info info[USCOPE_MAP_MAX];
	long n = uscope_call(USCOPE_LIST, NULL, info, USCOPE_MAP_MAX);
	if (n != 1 || strcmp(info[0].name, "echo") || !info[0].every_user)
		t_fail("the map after: %ld entries, expected root's echo alone", n);
	if (uscope_call(USCOPE_UNTRACE, "echo", NULL, 0) != 0)
		t_fail("root could not take echo out through ms_uscope");
}

/* ---- uscope: stacks of code without frame pointers ---------------------- */

struct symbol_range {
	const char *name;
	uint64_t start, end;
};

static long read_at(int fd, long offset, void *to, long length)
{
	return lseek(fd, offset, SEEK_SET) == offset ? read(fd, to, length) : -1;
}

/* Fills each range's start and end from path's symbol table; returns how
 * many were found. */
static int symbols_of(const char *path, struct symbol_range *ranges, int count)
{
	static uint8_t headers[64 * 64], symbols[64 * 1024];
	static char names[32 * 1024];
	int fd = open(path, O_RDONLY), found = 0;
	uint8_t elf[64];
	if (fd < 0 || read(fd, elf, 64) != 64) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	uint64_t shoff;
	uint16_t shnum;
	memcpy(&shoff, elf + 40, 8);
	memcpy(&shnum, elf + 60, 2);
	if (shnum > 64 || read_at(fd, (long)shoff, headers, shnum * 64) != shnum * 64)
		shnum = 0;
	for (unsigned i = 0; i < shnum; i++) {
		const uint8_t *sh = headers + i * 64;
		uint32_t type, link;
		uint64_t offset, size;
		memcpy(&type, sh + 4, 4);
		memcpy(&link, sh + 40, 4);
		memcpy(&offset, sh + 24, 8);
		memcpy(&size, sh + 32, 8);
		if (type != 2 || link >= shnum || size > sizeof symbols) /* SHT_SYMTAB */
			continue;
		uint64_t names_offset, names_size;
		memcpy(&names_offset, headers + link * 64 + 24, 8);
		memcpy(&names_size, headers + link * 64 + 32, 8);
		if (names_size > sizeof names ||
		    read_at(fd, (long)offset, symbols, (long)size) != (long)size ||
		    read_at(fd, (long)names_offset, names, (long)names_size) != (long)names_size)
			break;
		for (uint64_t at = 0; at + 24 <= size; at += 24) {
			uint32_t name;
			uint64_t value, length;
			memcpy(&name, symbols + at, 4);
			memcpy(&value, symbols + at + 8, 8);
			memcpy(&length, symbols + at + 16, 8);
			for (int r = 0; r < count && name < names_size; r++)
				if (!strncmp(names + name, ranges[r].name, names_size - name) &&
				    !ranges[r].end) {
					ranges[r].start = value;
					ranges[r].end = value + length;
					found++;
				}
		}
	}
	close(fd);
	return found;
}

enum { INNER, MIDDLE, OUTER, MAIN, CORRUPT, OTHER, UNWIND_SYMBOLS };

struct unwind_seen {
	struct symbol_range symbols[UNWIND_SYMBOLS];
	int32_t tids[4];
	int tid_count;
	int calls, chains_right, corrupt_calls, corrupt_marked, too_long;
	unsigned expect;    /* frames the mode keeps: the chain inner, middle, outer, main first */
	uint16_t last_type; /* the record before a stack in its ring */
	int stacks, after_call; /* stacks of unwind, and those after a join point's call record */
};

static int in_symbol(const struct unwind_seen *seen, int which, uint64_t address)
{
	return address >= seen->symbols[which].start && address < seen->symbols[which].end;
}

static void note_unwind_names(const struct tel_record *r, void *arg)
{
	struct unwind_seen *seen = arg;
	const struct trace_thread_name *n = tel_record_payload(r);
	if (r->type == TRACE_PROCESS_EXEC && !strcmp(n->name, "unwind") && seen->tid_count < 4)
		seen->tids[seen->tid_count++] = n->tid;
}

/* The stacks of unwind's getppid calls: the chain in order, the corrupt call
 * one frame and marked. */
static void note_unwind_stacks(const struct tel_record *r, void *arg)
{
	struct unwind_seen *seen = arg;
	const struct trace_user_stack *s = tel_record_payload(r);
	uint16_t before = seen->last_type;
	seen->last_type = r->type;
	if (r->type != TRACE_USER_STACK || !s->count)
		return;
	int ours = 0;
	for (int i = 0; i < seen->tid_count; i++)
		ours |= seen->tids[i] == s->tid;
	const uint64_t *frames = (const uint64_t *)(s + 1);
	if (!ours)
		return;
	seen->stacks++;
	seen->after_call +=
	    before >= TRACE_JP_BASE && (before - TRACE_JP_BASE) % 3 == TRACE_JP_CALL;
	seen->too_long += s->count > seen->expect && in_symbol(seen, INNER, frames[0]);
	if (in_symbol(seen, CORRUPT, frames[0])) {
		seen->corrupt_calls++;
		/* a walk that keeps one frame reads nothing past it, so finds nothing wrong */
		seen->corrupt_marked +=
		    s->count == 1 && (seen->expect == 1 || (s->flags & TRACE_STACK_UNREADABLE));
		return;
	}
	if (!in_symbol(seen, INNER, frames[0]))
		return;
	seen->calls++;
	int right = s->count == seen->expect;
	for (unsigned i = 0; i < seen->expect && i <= MAIN && i < s->count; i++)
		right &= in_symbol(seen, INNER + (int)i, frames[i]);
	seen->chains_right += right;
}

/* Where unwind's stacks are taken: at its system calls (getppid), or at a
 * join point that may not sleep which its call (pipe) reaches. */
struct unwind_how {
	const char *events;    /* the trace map's --events */
	const char *pattern;   /* join points the trace records, or "" */
	char *plain, *corrupt; /* unwind's argument for each run */
};
static const struct unwind_how at_getppid = {"*", "", NULL, "corrupt"};
static const struct unwind_how at_kmalloc = {"mm.kmalloc", " mm.kmalloc", "pipe", "corrupt-pipe"};

/* Traces unwind in mode, budget, runs it plainly and corrupted as how says. */
static struct unwind_seen stacks_of_unwind(unsigned mode, unsigned budget, unsigned expect,
					   const struct unwind_how *how)
{
	struct unwind_seen seen = {.symbols = {{"unwind_inner"},
					       {"unwind_middle"},
					       {"unwind_outer"},
					       {"main"},
					       {"unwind_corrupt"},
					       {"unwind_other"}},
				   .expect = expect};
	if (symbols_of("/bin/unwind", seen.symbols, UNWIND_SYMBOLS) != UNWIND_SYMBOLS) {
		t_fail("/bin/unwind lacks one of its symbols");
		return seen;
	}
	char line[96], start[96];
	snprintf(line, sizeof line, "uscope trace unwind --mode %u --budget %u --events %s", mode,
		 budget, how->events);
	snprintf(start, sizeof start, "trace start -o file:" TRACE_DIR "%s", how->pattern);
	if (shell(line) != 0 || shell(start) != 0) {
		t_fail("'%s' or '%s' failed", line, start);
		shell("uscope untrace unwind");
		return seen;
	}
	char *plain[] = {"unwind", how->plain, NULL}, *corrupt[] = {"unwind", how->corrupt, NULL};
	int status[2] = {-1, -1};
	for (int run = 0; run < 2; run++) {
		pid_t child = fork();
		if (child == 0) {
			execv("/bin/unwind", run ? corrupt : plain);
			_exit(127);
		}
		waitpid(child, &status[run], 0);
	}
	shell("trace stop");
	shell("uscope untrace unwind");
	for (int pass = 0; pass < 2; pass++)
		for (int cpu = 0; cpu < 64; cpu++) {
			char path[64];
			snprintf(path, sizeof path, TRACE_DIR "/stream_%d", cpu);
			seen.last_type = 0;
			each_record(path, pass ? note_unwind_stacks : note_unwind_names, &seen);
		}
	if (!WIFEXITED(status[0]) || WEXITSTATUS(status[0]) || !WIFEXITED(status[1]) ||
	    WEXITSTATUS(status[1]))
		t_fail("mode %u: unwind exited with status %#x, corrupt with %#x", mode, status[0],
		       status[1]);
	return seen;
}

/* The stacks of one getppid call each: the chain, and the corrupt one marked. */
static void expect_unwind_chain(unsigned mode, unsigned budget, unsigned expect)
{
	struct unwind_seen seen = stacks_of_unwind(mode, budget, expect, &at_getppid);
	if (seen.calls != 1 || seen.chains_right != 1 || seen.too_long)
		t_fail("mode %u budget %u: %d calls from unwind_inner, %d with the chain of %u "
		       "right, %d longer",
		       mode, budget, seen.calls, seen.chains_right, expect, seen.too_long);
	if (seen.corrupt_calls != 1 || seen.corrupt_marked != 1)
		t_fail("mode %u: %d corrupt calls, %d of one frame marked unreadable", mode,
		       seen.corrupt_calls, seen.corrupt_marked);
}

/* Does a program built without frame pointers unwind by its CFI, in every
 * mode, to exactly the chain its symbols give (unwind_inner, unwind_middle,
 * unwind_outer, main), cut where the budget says; and does a call made with
 * a corrupted stack give a one-frame stack marked unreadable, no fault? */
void uscope_unwinds_code_without_frame_pointers(void)
{
	expect_unwind_chain(4, 8, 6); /* all code: the chain, then start_program, _start */
	expect_unwind_chain(4, 3, 3);
	expect_unwind_chain(2, 3, 3); /* own code: inner, middle, outer */
	expect_unwind_chain(2, 8, 4); /* own code: the chain ends at main */
	expect_unwind_chain(1, 8, 1);
	expect_unwind_chain(3, 8, 1);
}

/* Is a traced process's stack recorded at a join point that may not sleep
 * (mm.kmalloc, which the recorder's fast path runs), right after its call
 * record: the chain unwind_inner, unwind_middle, unwind_outer, main at each
 * allocation of its pipe call, walked without a fault; and is the stack of
 * the same call made with rsp in memory whose pages are not present (mapped,
 * never touched) marked unreadable, the pages not faulted in?  No stack
 * follows a system call's entry (the map names mm.kmalloc only). */
void uscope_stacks_at_joinpoints_that_cannot_sleep(void)
{
	for (unsigned mode = 2; mode <= 4; mode += 2) {
		struct unwind_seen seen = stacks_of_unwind(mode, 8, mode == 4 ? 6 : 4, &at_kmalloc);
		if (!seen.calls || seen.chains_right != seen.calls || seen.too_long)
			t_fail("mode %u: %d stacks at mm.kmalloc from unwind_inner, %d with the "
			       "chain right, %d longer",
			       mode, seen.calls, seen.chains_right, seen.too_long);
		if (!seen.corrupt_calls || seen.corrupt_marked != seen.corrupt_calls)
			t_fail("mode %u: %d stacks at mm.kmalloc from unwind_corrupt, %d of one "
			       "frame marked unreadable",
			       mode, seen.corrupt_calls, seen.corrupt_marked);
		if (seen.after_call != seen.stacks)
			t_fail(
			    "mode %u: %d of unwind's %d stacks follow a join point's call record",
			    mode, seen.after_call, seen.stacks);
	}
}

/* The callers of unwind's calls from unwind_inner, in order: 'O' for
 * unwind_outer, 'X' for unwind_other, '?' for neither. */
struct callers_seen {
	struct unwind_seen unwind;
	char order[16];
	int count;
};

static void note_callers(const struct tel_record *r, void *arg)
{
	struct callers_seen *seen = arg;
	const struct trace_user_stack *s = tel_record_payload(r);
	if (r->type != TRACE_USER_STACK || !s->count)
		return;
	int ours = 0;
	for (int i = 0; i < seen->unwind.tid_count; i++)
		ours |= seen->unwind.tids[i] == s->tid;
	const uint64_t *frames = (const uint64_t *)(s + 1);
	if (!ours || !in_symbol(&seen->unwind, INNER, frames[0]) || seen->count >= 15)
		return;
	char caller = s->count < 3 || !in_symbol(&seen->unwind, MIDDLE, frames[1]) ? '?'
		      : in_symbol(&seen->unwind, OUTER, frames[2])                 ? 'O'
		      : in_symbol(&seen->unwind, OTHER, frames[2])                 ? 'X'
										   : '?';
	seen->order[seen->count++] = caller;
}

/* Does a stack found the same by the registers at the call (rip, rsp, rbp)
 * but reached from another caller come out with its own caller, not the
 * stack sent before: unwind's six calls from unwind_outer, unwind_outer,
 * unwind_other, unwind_other, unwind_outer, unwind_outer (rsp the same at
 * each, which unwind checks) give exactly those callers, and the second of
 * each pair goes as a reference (the memo is used, and would have been
 * wrong at the third and fifth)?  In a trace of every kernel event (the
 * stack after the call's entry record) and in a trace of stacks alone (the
 * system call's path checks the memo in line: syscall_stack records). */
static void same_registers_other_caller(const char *trace_start);

void uscope_same_registers_other_caller(void)
{
	same_registers_other_caller("trace start -o file:" TRACE_DIR);
	same_registers_other_caller("trace start --stacks -o file:" TRACE_DIR);
}

static void same_registers_other_caller(const char *trace_start)
{
	struct callers_seen seen = {.unwind = {.symbols = {{"unwind_inner"},
							   {"unwind_middle"},
							   {"unwind_outer"},
							   {"main"},
							   {"unwind_corrupt"},
							   {"unwind_other"}}}};
	if (symbols_of("/bin/unwind", seen.unwind.symbols, UNWIND_SYMBOLS) != UNWIND_SYMBOLS) {
		t_fail("/bin/unwind lacks one of its symbols");
		return;
	}
	if (shell("uscope trace unwind --mode 4 --budget 8") != 0 || shell(trace_start) != 0) {
		t_fail("uscope trace or trace start failed");
		shell("uscope untrace unwind");
		return;
	}
	int status = -1;
	pid_t child = fork();
	if (child == 0) {
		execl("/bin/unwind", "unwind", "callers", (char *)NULL);
		_exit(127);
	}
	waitpid(child, &status, 0);
	shell("trace stop");
	shell("uscope untrace unwind");
	references_seen = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int cpu = 0; cpu < 64; cpu++) {
			char path[64];
			snprintf(path, sizeof path, TRACE_DIR "/stream_%d", cpu);
			each_record(path, pass ? note_callers : note_unwind_names, &seen);
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		t_fail("%s: unwind callers exited with status %#x (2: rsp differed between calls)",
		       trace_start, status);
	if (seen.count != 6 || strcmp(seen.order, "OOXXOO"))
		t_fail("%s: the calls' callers came out as '%s', not OOXXOO", trace_start,
		       seen.order);
	if (references_seen < 6) /* the pairs' seconds, and each of both passes */
		t_fail("%s: %d references to stacks sent before, expected 3 a pass", trace_start,
		       references_seen / 2);
}

/* The stacks of unwind's calls from unwind_corrupt, in order: frames and
 * flags. */
struct corrupt_seen {
	struct unwind_seen unwind;
	uint16_t count[8], flags[8];
	int calls;
};

static void note_corrupt_calls(const struct tel_record *r, void *arg)
{
	struct corrupt_seen *seen = arg;
	const struct trace_user_stack *s = tel_record_payload(r);
	if (r->type != TRACE_USER_STACK || !s->count)
		return;
	int ours = 0;
	for (int i = 0; i < seen->unwind.tid_count; i++)
		ours |= seen->unwind.tids[i] == s->tid;
	const uint64_t *frames = (const uint64_t *)(s + 1);
	if (!ours || !in_symbol(&seen->unwind, CORRUPT, frames[0]) || seen->calls >= 8)
		return;
	seen->count[seen->calls] = s->count;
	seen->flags[seen->calls++] = s->flags;
}

/* Is a stack remembered from memory that is unmapped since not sent again:
 * unwind makes the same call (the same registers) three times with rsp in
 * memory it filled with an address in main, the third after unmapping it;
 * the first two stacks are eight frames (the budget), the second sent as a
 * reference to the first, and the third is one frame, marked unreadable?
 * In a trace of every kernel event and in a trace of stacks alone (the
 * memo's check in line in the system call's path). */
static void stack_on_unmapped_memory(const char *trace_start);

void uscope_stack_on_unmapped_memory_is_not_remembered(void)
{
	stack_on_unmapped_memory("trace start -o file:" TRACE_DIR);
	stack_on_unmapped_memory("trace start --stacks -o file:" TRACE_DIR);
}

static void stack_on_unmapped_memory(const char *trace_start)
{
	struct corrupt_seen seen = {.unwind = {.symbols = {{"unwind_inner"},
							   {"unwind_middle"},
							   {"unwind_outer"},
							   {"main"},
							   {"unwind_corrupt"},
							   {"unwind_other"}}}};
	if (symbols_of("/bin/unwind", seen.unwind.symbols, UNWIND_SYMBOLS) != UNWIND_SYMBOLS) {
		t_fail("/bin/unwind lacks one of its symbols");
		return;
	}
	if (shell("uscope trace unwind --mode 4 --budget 8") != 0 || shell(trace_start) != 0) {
		t_fail("uscope trace or trace start failed");
		shell("uscope untrace unwind");
		return;
	}
	int status = -1;
	pid_t child = fork();
	if (child == 0) {
		execl("/bin/unwind", "unwind", "unmapped", (char *)NULL);
		_exit(127);
	}
	waitpid(child, &status, 0);
	shell("trace stop");
	shell("uscope untrace unwind");
	references_seen = 0;
	for (int pass = 0; pass < 2; pass++)
		for (int cpu = 0; cpu < 64; cpu++) {
			char path[64];
			snprintf(path, sizeof path, TRACE_DIR "/stream_%d", cpu);
			each_record(path, pass ? note_corrupt_calls : note_unwind_names, &seen);
		}
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		t_fail("%s: unwind unmapped exited with status %#x", trace_start, status);
	if (seen.calls != 3)
		t_fail("%s: %d stacks of calls from unwind_corrupt, not 3", trace_start,
		       seen.calls);
	else if (seen.count[0] != 8 || seen.count[1] != 8 ||
		 !(seen.flags[0] & TRACE_STACK_TRUNCATED))
		t_fail("%s: the calls from filled memory gave %u and %u frames (flags %#x), not 8",
		       trace_start, seen.count[0], seen.count[1], seen.flags[0]);
	else if (seen.count[2] != 1 || !(seen.flags[2] & TRACE_STACK_UNREADABLE))
		t_fail("%s: the call from unmapped memory gave %u frames, flags %#x: not one, "
		       "unreadable",
		       trace_start, seen.count[2], seen.flags[2]);
	if (references_seen < 2) /* the second call's, in each pass */
		t_fail("%s: the second call's stack was not sent as a reference", trace_start);
}

/* ---- uscope: stacks at the events an entry names ------------------------ */

struct events_seen {
	int32_t tids[4];
	int tid_count;
	int32_t running;    /* the thread on the CPU (sched_switch): cat's calls only count */
	uint16_t last_type; /* the last system call's or join point's entry before a stack */
	int64_t last_number;
	int after_read, after_other_syscall, after_joinpoint;
	int64_t other_number; /* the last system call not read that a stack followed */
};

static void note_cat_exec(const struct tel_record *r, void *arg)
{
	struct events_seen *seen = arg;
	const struct trace_thread_name *n = tel_record_payload(r);
	if (r->type == TRACE_PROCESS_EXEC && !strcmp(n->name, "cat") && seen->tid_count < 4)
		seen->tids[seen->tid_count++] = n->tid;
}

static int is_cat_thread(const struct events_seen *seen, int32_t tid)
{
	for (int i = 0; i < seen->tid_count; i++)
		if (seen->tids[i] == tid)
			return 1;
	return 0;
}

/* The last system call's or join point's entry made by a cat thread (a
 * thread preempted between its entry and its stack may let another's entry
 * come between them in the ring), and what each stack of cat followed. */
static void note_event_stacks(const struct tel_record *r, void *arg)
{
	struct events_seen *seen = arg;
	if (r->type == TRACE_SCHED_SWITCH) {
		const struct trace_sched_switch *s = tel_record_payload(r);
		seen->running = s->next_tid;
	} else if (!is_cat_thread(seen, seen->running)) {
		return;
	} else if (r->type == TRACE_SYSCALL_ENTRY) {
		const struct trace_syscall_entry *e = tel_record_payload(r);
		seen->last_type = r->type;
		seen->last_number = e->number;
	} else if (r->type >= TRACE_JP_BASE && (r->type - TRACE_JP_BASE) % 3 == TRACE_JP_ENTRY) {
		seen->last_type = r->type;
	} else if (r->type == TRACE_USER_STACK) {
		const struct trace_user_stack *s = tel_record_payload(r);
		if (!is_cat_thread(seen, s->tid))
			return;
		if (seen->last_type == TRACE_SYSCALL_ENTRY && seen->last_number == __NR_read)
			seen->after_read++;
		else if (seen->last_type == TRACE_SYSCALL_ENTRY)
			seen->after_other_syscall++, seen->other_number = seen->last_number;
		else
			seen->after_joinpoint++;
	}
}

/* cat traced with --events events while the trace records the join point
 * vfs.read: where its stacks came. */
static struct events_seen stacks_at(const char *events)
{
	struct events_seen seen = {0};
	char line[96];
	snprintf(line, sizeof line, "uscope trace cat --events %s --mode 4 --budget 4", events);
	if (shell(line) != 0 || shell("trace start -o file:" TRACE_DIR " vfs.read") != 0) {
		t_fail("'%s' or trace start failed", line);
		return seen;
	}
	char *cat[] = {"cat", "/etc/rc", NULL};
	run_quietly("/bin/cat", cat);
	shell("trace stop");
	shell("uscope untrace cat");
	for (int pass = 0; pass < 2; pass++)
		for (int cpu = 0; cpu < 64; cpu++) {
			char path[64];
			snprintf(path, sizeof path, TRACE_DIR "/stream_%d", cpu);
			seen.last_type = 0;
			seen.running = -1;
			each_record(path, pass ? note_event_stacks : note_cat_exec, &seen);
		}
	return seen;
}

/* Does --events choose where stacks are recorded: at the system calls it
 * names (sys.read, not the others), at a recorded join point reached from
 * the process (vfs.read, whose entry record comes just before), at both with
 * "*"; and is a pattern too long for the map refused? */
void uscope_stacks_follow_the_events_named(void)
{
	struct events_seen reads = stacks_at("sys.read");
	if (!reads.after_read || reads.after_other_syscall || reads.after_joinpoint)
		t_fail(
		    "--events sys.read: %d stacks at read, %d at other calls (the last %lld), %d "
		    "at join points",
		    reads.after_read, reads.after_other_syscall, (long long)reads.other_number,
		    reads.after_joinpoint);
	struct events_seen vfs = stacks_at("vfs.*");
	if (!vfs.after_joinpoint || vfs.after_read || vfs.after_other_syscall)
		t_fail("--events vfs.*: %d stacks at join points, %d at system calls",
		       vfs.after_joinpoint, vfs.after_read + vfs.after_other_syscall);
	struct events_seen all = stacks_at("*");
	if (!all.after_joinpoint || !all.after_read || !all.after_other_syscall)
		t_fail("--events *: %d stacks at join points, %d at read, %d at other calls",
		       all.after_joinpoint, all.after_read, all.after_other_syscall);
	if (shell("uscope trace cat --events "
		  "a.pattern.far.too.long.for.the.trace.map.to.keep.at.all") == 0)
		t_fail("a pattern longer than the map keeps was accepted");
}

/* ---- uscope: a trace of stacks alone ------------------------------------ */

struct stacks_only_seen {
	int stacks, entries, names, others;
	uint16_t other_type;
};

static void note_stacks_only(const struct tel_record *r, void *arg)
{
	struct stacks_only_seen *seen = arg;
	if (r->type == TRACE_USER_STACK)
		seen->stacks++;
	else if (r->type == TRACE_SYSCALL_ENTRY)
		seen->entries++;
	else if (r->type == TRACE_THREAD_NAME || r->type == TRACE_PROCESS_EXEC)
		seen->names++;
	else
		seen->others++, seen->other_type = r->type;
}

/* Does `trace start --stacks` record the traced program's stacks, each with
 * the system call it belongs to, the programs' names, and nothing else: no
 * scheduling, interrupt, exit or other process's event, no join point (and
 * is a join-point pattern refused with it)? */
void uscope_stacks_only_trace_holds_nothing_else(void)
{
	if (shell("trace start --stacks -o file:" TRACE_DIR " vfs.*") == 0) {
		shell("trace stop");
		t_fail("a trace of stacks took a join-point pattern");
	}
	if (shell("uscope trace cat --mode 2 --budget 4") != 0 ||
	    shell("trace start --stacks -o file:" TRACE_DIR) != 0) {
		t_fail("uscope trace cat or trace start --stacks failed");
		shell("uscope untrace cat");
		return;
	}
	char *cat[] = {"cat", "/etc/rc", NULL}, *echo[] = {"echo", "hi", NULL};
	run_quietly("/bin/cat", cat);
	run_quietly("/bin/echo", echo);
	shell("trace stop");
	shell("uscope untrace cat");
	struct stacks_only_seen seen = {0};
	for (int cpu = 0; cpu < 64; cpu++) {
		char path[64];
		snprintf(path, sizeof path, TRACE_DIR "/stream_%d", cpu);
		each_record(path, note_stacks_only, &seen);
	}
	if (!seen.stacks || seen.entries != seen.stacks || !seen.names || seen.others)
		t_fail("%d stacks, %d system calls, %d names, %d other records (type %u)",
		       seen.stacks, seen.entries, seen.names, seen.others, seen.other_type);
}
