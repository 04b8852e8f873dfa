/*
 * The monitor session behind the `shm` and `msg` bindings.  The kernel
 * starts /bin/monitor when a binding first needs it; the monitor creates an
 * IPC endpoint and attaches it (ms_scope_attach), which gives it the
 * telemetry channel shm events go to, shared with it (its rings mapped into
 * the monitor: telemetry/telemetry.h).  Aspects get small ids (their index in
 * `ids` plus one); LOAD tells the monitor to fetch the object
 * (ms_scope_image) and link it in its own memory, FLUSH makes it run what is
 * pending and hand its counters back (ms_scope_report), which the kernel
 * merges into the aspect's store: counts carry over relinks.  Two more calls
 * give aspects in the monitor the rest of the aspect ABI from the kernel:
 * device counters (ms_scope_device_counter) and telemetry records
 * (ms_scope_emit, into the channel direct aspects emit to).
 *
 * The monitor is an ordinary process: when it ends, its endpoint closes
 * (ipc/ipc.h), and the join-point side sees monitor_is_gone() at the next
 * event and reports the aspect, which the linker's thread unlinks.  Nothing
 * here waits on the monitor without a deadline.  A new monitor starts a new
 * generation: ids of the old one are void.  The inbox and the rings stay
 * mapped in a monitor's process until it ends, so no other process attaches
 * while one that detached (closed its endpoint, or gave up PRIV_MONITOR,
 * which closes it) still runs.
 *
 * Control paths (load, flush, unload) run under the linker's control mutex;
 * the session's fields change under `lock`, and the join-point side reads
 * the endpoint and channel pointers with acquire loads.  The endpoint of a
 * dead monitor is kept (closed) until the next one attaches, so the
 * join-point side never sees it freed under it.
 */
#include "linker/weave/monitor_internal.h"

#include "microscope/aspect.h"

#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "syscall/syscall.h"
#include "time/time.h"
#include "uaccess/uaccess.h"

#define MONITOR_PATH          "/bin/monitor"
#define MONITOR_CHANNEL_BYTES (64 * 1024)
#define ATTACH_TIMEOUT_NS     (10 * NSEC_PER_SEC)
#define CONTROL_TIMEOUT_NS    (5 * NSEC_PER_SEC)

/* Not static: the join-point side reads it in line (monitor_internal.h), an
 * event's checks costing less than a call to them. */
struct monitor_session monitor_session = {.lock = SPINLOCK_INIT("monitor.session")};

static struct mutex report_lock = MUTEX_INIT(report_lock, "monitor.report");

static struct waitq attached = WAITQ_INIT(attached, "monitor.attach");

struct tel_channel *monitor_channel(void)
{
	return __atomic_load_n(&monitor_session.channel, __ATOMIC_ACQUIRE);
}

bool monitor_is_gone(void)
{
	struct ipc_endpoint *e = monitor_endpoint();
	return !e || ipc_endpoint_is_closed(e);
}

/* monitor_is_caller, then monitor_is_gone, in one call.  The channel is
 * stored before the endpoint (release), so an endpoint read with acquire
 * comes with its channel. */
struct tel_channel *monitor_event_channel(const struct jp_context *context, uint64_t generation,
					  bool *gone)
{
	if (monitor_is_caller(context))
		return NULL;
	struct ipc_endpoint *e = monitor_endpoint_of(generation);
	if (!e || ipc_endpoint_is_closed(e)) {
		*gone = true;
		return NULL;
	}
	return monitor_session.channel;
}

int linker_monitor_pid(void)
{
	return monitor_is_gone() ? 0 : __atomic_load_n(&monitor_session.pid, __ATOMIC_RELAXED);
}

static uint64_t monitor_receives;

uint64_t linker_monitor_receives(void)
{
	return __atomic_load_n(&monitor_receives, __ATOMIC_RELAXED);
}

/* ---- Starting and attaching ------------------------------------------------- */

static bool monitor_attached(void *arg)
{
	(void)arg;
	return !monitor_is_gone();
}

/* The monitor is a monitor process, kept on the CPUs reserved for monitors
 * (monitor_cpus=) when there are any: left ordinary it would run on the
 * other CPUs only, beside the join points that wait for it. */
static void keep_on_monitor_cpus(int pid)
{
	int error = proc_set_monitor(pid, true);
	uint64_t cpus = sched_monitor_cpus();
	if (!error && cpus)
		error = proc_set_affinity(pid, cpus);
	if (error)
		pr_warn("monitor: pid %d not kept on the monitor CPUs (error %d)\n", pid, error);
}

/* ---- Whose the inbox and rings are ---------------------------------------- */

/* The inbox and the rings are mapped into the process that attached, for as
 * long as it runs the program that attached: the kernel cannot take them out
 * of another process's memory (only a process's own thread changes it), and
 * they are the same pages for the next monitor.  So the next attach waits for
 * that process to end or to exec (exec leaves the old memory, mappings and
 * all); until then only it may attach again (it maps them already). */
static bool earlier_monitor_runs(void)
{
	struct process *p = __atomic_load_n(&monitor_session.process, __ATOMIC_RELAXED);
	return p &&
	       proc_still_runs_program(__atomic_load_n(&monitor_session.pid, __ATOMIC_RELAXED), p,
				       __atomic_load_n(&monitor_session.execs, __ATOMIC_RELAXED));
}

static bool may_take_the_pages(void)
{
	return __atomic_load_n(&monitor_session.process, __ATOMIC_RELAXED) == proc_current() ||
	       !earlier_monitor_runs();
}

static int start_monitor(void)
{
	if (!monitor_is_gone())
		return 0;
	if (earlier_monitor_runs()) { /* a new monitor could not attach */
		pr_warn("monitor: pid %d, detached, still runs with the monitor's pages mapped\n",
			__atomic_load_n(&monitor_session.pid, __ATOMIC_RELAXED));
		return -EBUSY;
	}
	char *argv[] = {"monitor", NULL}, *envp[] = {NULL};
	int pid = proc_spawn(MONITOR_PATH, argv, envp);
	if (pid < 0) {
		pr_warn("monitor: cannot start %s (error %d)\n", MONITOR_PATH, pid);
		return pid;
	}
	keep_on_monitor_cpus(pid);
	if (waitq_wait_timeout(&attached, monitor_attached, NULL, ATTACH_TIMEOUT_NS) < 0) {
		pr_warn("monitor: pid %d did not attach\n", pid);
		proc_kill(pid, SIGKILL);
		return -ETIMEDOUT;
	}
	pr_info("monitor: pid %d attached\n", pid);
	return 0;
}

/* Discards what a dead monitor left in the channel. */
static void drain_channel(struct tel_channel *channel)
{
	static uint8_t scratch[4096];
	for (unsigned cpu = 0; cpu < MAX_CPUS; cpu++)
		while (tel_channel_read(channel, cpu, scratch, sizeof scratch) > 0)
			;
}

/* The monitor's inbox: the page its ms_scope_reply_receive receives into
 * when asked (SCOPE_INBOX_ADDRESS), mapped read-only as a kernel region of
 * the monitor, so the message is read in place and never copied out.  The
 * kernel writes it only as an endpoint's receive buffer, under the endpoint
 * lock, and never reads it back.  Made at the first attach and kept, as the
 * channel is: a monitor's mapping ends with it. */
_Static_assert(sizeof(struct ipc_message) <= PAGE_SIZE, "a message fits the inbox");
static struct ipc_message *inbox;

static struct ipc_message *inbox_page(void)
{
	struct ipc_message *page = __atomic_load_n(&inbox, __ATOMIC_ACQUIRE);
	if (page)
		return page;
	page = mm_alloc_pages(1, PAGE_SIZE);
	struct ipc_message *none = NULL;
	if (page && !__atomic_compare_exchange_n(&inbox, &none, page, false, __ATOMIC_ACQ_REL,
						 __ATOMIC_ACQUIRE)) {
		mm_free_pages(page, 1); /* another attach made it first */
		page = none;
	}
	return page;
}

/* Maps the inbox into the attaching monitor, cleared of what an earlier
 * monitor received (its endpoint is closed: nothing writes it now). */
static int map_inbox(void)
{
	struct ipc_message *page = inbox_page();
	if (!page)
		return -ENOMEM;
	memset(page, 0, PAGE_SIZE);
	int error = proc_add_kernel_region(SCOPE_INBOX_ADDRESS, SCOPE_INBOX_ADDRESS + PAGE_SIZE);
	if (!error)
		error = proc_map_kernel_frame(SCOPE_INBOX_ADDRESS, virt_to_phys(page), false);
	return error == -EEXIST ? 0 : error;
}

/* Makes the caller, holding e, the attached monitor; attach_lock held, no
 * monitor attached. */
static int attach_monitor(struct ipc_endpoint *e)
{
	int error = map_inbox();
	struct tel_channel *channel = error ? NULL : monitor_channel();
	if (!error && !channel)
		channel = tel_channel_create("scope", MONITOR_CHANNEL_BYTES, TEL_STREAM);
	if (!channel)
		return error ? error : -ENOMEM;
	drain_channel(channel);
	/* Nothing produces into it while no monitor is attached: share it with
	 * this one, which maps it (ms_tel_map) and reads the rings in place. */
	error = tel_channel_share(channel, proc_pid(proc_current()));
	if (error)
		return error;
	uint64_t irq = spin_lock_irqsave(&monitor_session.lock);
	struct ipc_endpoint *old = monitor_session.endpoint;
	__atomic_store_n(&monitor_session.generation, monitor_session.generation + 1,
			 __ATOMIC_RELAXED);
	monitor_session.pid = proc_pid(proc_current());
	__atomic_store_n(&monitor_session.execs, proc_exec_count(proc_current()), __ATOMIC_RELAXED);
	__atomic_store_n(&monitor_session.process, proc_current(), __ATOMIC_RELAXED);
	__atomic_store_n(&monitor_session.channel, channel, __ATOMIC_RELEASE);
	__atomic_store_n(&monitor_session.endpoint, e, __ATOMIC_RELEASE);
	spin_unlock_irqrestore(&monitor_session.lock, irq);
	/* The old one is closed; a join point that loaded it just before may
	 * still look at it: keep it until a grace period has passed. */
	if (old) {
		jp_synchronize();
		ipc_endpoint_put(old);
	}
	return tel_channel_id(channel);
}

static void detach_monitor_without_privilege(void);

/* Attaches are serialised from the check that no monitor is attached to the
 * store of the new one: two at once would otherwise both find the place
 * free, the second clearing the inbox the first reads and replacing its
 * endpoint without closing it. */
static struct mutex attach_lock = MUTEX_INIT(attach_lock, "monitor.attaching");

SYSCALL_DEFINE1(ms_scope_attach, int, fd)
{
	if (!proc_has_privilege(PRIV_MONITOR))
		return -EPERM; /* the monitor receives every process's events */
	struct ipc_endpoint *e = ipc_endpoint_from_fd(fd);
	if (!e)
		return -EBADF;
	proc_set_cred_change_hook(detach_monitor_without_privilege);
	mutex_lock(&attach_lock);
	int result = monitor_is_gone() && may_take_the_pages() ? attach_monitor(e) : -EBUSY;
	mutex_unlock(&attach_lock);
	if (result < 0)
		ipc_endpoint_put(e);
	else
		waitq_wake_all(&attached);
	return result;
}

/* ---- Aspect ids --------------------------------------------------------------- */

static int find_id(struct aspect *aspect)
{
	for (int i = 0; i < ASPECT_MAX; i++)
		if (monitor_session.ids[i].aspect == aspect &&
		    monitor_session.ids[i].generation == monitor_session.generation)
			return i + 1;
	return 0;
}

/* The aspect the attached monitor knows as id, referenced (aspect_put), or
 * NULL.  For the monitor's system calls: an aspect is unbound, and so its id
 * let go under the lock, before it can be unloaded. */
static struct aspect *aspect_of_id(uint32_t id)
{
	if (id == 0 || id > ASPECT_MAX)
		return NULL;
	struct aspect_id *slot = &monitor_session.ids[id - 1];
	uint64_t irq = spin_lock_irqsave(&monitor_session.lock);
	struct aspect *aspect =
	    slot->generation == monitor_session.generation ? aspect_get(slot->aspect) : NULL;
	spin_unlock_irqrestore(&monitor_session.lock, irq);
	return aspect;
}

/* Sets what id names (NULL: nothing); control mutex held. */
static void set_id(int id, struct aspect *aspect)
{
	uint64_t irq = spin_lock_irqsave(&monitor_session.lock);
	monitor_session.ids[id - 1].aspect = aspect;
	spin_unlock_irqrestore(&monitor_session.lock, irq);
}

/* Forgets a report an earlier holder of the slot never had merged. */
static void drop_report(struct aspect_id *slot)
{
	mutex_lock(&report_lock);
	kfree(slot->report);
	slot->report = NULL;
	mutex_unlock(&report_lock);
}

static int claim_id(struct aspect *aspect)
{
	for (int i = 0; i < ASPECT_MAX; i++) {
		struct aspect_id *slot = &monitor_session.ids[i];
		if (!slot->aspect || slot->generation != monitor_session.generation) {
			drop_report(slot);
			uint64_t irq = spin_lock_irqsave(&monitor_session.lock);
			*slot =
			    (struct aspect_id){aspect, 0, monitor_session.generation, false, NULL};
			spin_unlock_irqrestore(&monitor_session.lock, irq);
			return i + 1;
		}
	}
	return -ENOSPC;
}

/* ---- Control messages ------------------------------------------------------------ */

/* The attached monitor's endpoint, referenced: a control call may wait in it
 * for seconds, while another monitor attaching puts the last one's. */
static struct ipc_endpoint *session_endpoint_get(void)
{
	preempt_disable(); /* the attach puts an old endpoint after a grace period */
	struct ipc_endpoint *e = monitor_endpoint();
	if (e)
		ipc_endpoint_get(e);
	preempt_enable();
	return e;
}

/* A monitor that no longer holds PRIV_MONITOR (ms_priv, an effective uid
 * other than 0) receives no more events: its endpoint is closed as if it had
 * closed it.  Its own thread runs this right after the change
 * (proc_set_cred_change_hook, set at the first attach). */
static void detach_monitor_without_privilege(void)
{
	struct process *self = proc_current();
	if (proc_has_privilege(PRIV_MONITOR) || !monitor_is_process(self))
		return;
	struct ipc_endpoint *e = session_endpoint_get();
	if (!e)
		return;
	ipc_endpoint_close(e);
	ipc_endpoint_put(e);
	pr_info("monitor: pid %d gave up PRIV_MONITOR: detached\n", proc_pid(self));
}

static int control_call(uint64_t label, uint32_t id, uint64_t word1, const char *name)
{
	struct ipc_endpoint *e = session_endpoint_get();
	if (!e)
		return -EPIPE;
	struct ipc_message m = {.label = label, .words = {id, word1}}, reply;
	if (name) {
		m.length = strlen(name) + 1;
		memcpy(m.payload, name, m.length);
	}
	/* The queue may be full of events the monitor has not taken yet: a
	 * control message waits for room, up to its deadline. */
	uint64_t deadline = clock_ns() + CONTROL_TIMEOUT_NS;
	int error;
	while ((error = ipc_call(e, &m, &reply, CONTROL_TIMEOUT_NS)) == -EAGAIN &&
	       clock_ns() < deadline)
		sched_sleep_ns(NSEC_PER_MSEC);
	ipc_endpoint_put(e);
	return error ? error : (int)reply.words[0];
}

int monitor_load_aspect(struct aspect *aspect, bool rings)
{
	int error = start_monitor();
	if (error)
		return error;
	int id = find_id(aspect);
	if (id) {
		struct aspect_id *slot = &monitor_session.ids[id - 1];
		/* linked already: a LOAD again only says its rings are in use */
		if (rings && !slot->rings &&
		    (error = control_call(SCOPE_MSG_LOAD, (uint32_t)id, 1, aspect->name)))
			return error;
		slot->rings |= rings;
		slot->refs++;
		return id;
	}
	id = claim_id(aspect);
	if (id < 0)
		return id;
	error = control_call(SCOPE_MSG_LOAD, (uint32_t)id, rings, aspect->name);
	if (error) {
		set_id(id, NULL);
		pr_warn("monitor: cannot link %s (error %d)\n", aspect->name, error);
		return error;
	}
	monitor_session.ids[id - 1].refs = 1;
	monitor_session.ids[id - 1].rings = rings;
	return id;
}

/* Merges what the monitor reported for id (every report since the last
 * merge, a late one after a FLUSH that timed out included). */
static void merge_report(struct aspect *aspect, uint32_t id)
{
	mutex_lock(&report_lock);
	struct linker_counters *report = monitor_session.ids[id - 1].report;
	monitor_session.ids[id - 1].report = NULL;
	mutex_unlock(&report_lock);
	if (!report)
		return;
	if (aspect->counters)
		linker_counters_merge(aspect->counters, report);
	kfree(report);
}

int monitor_flush_aspect(struct aspect *aspect)
{
	int id = find_id(aspect);
	if (!id)
		return -ENOENT;
	int error = control_call(SCOPE_MSG_FLUSH, (uint32_t)id, 0, NULL);
	merge_report(aspect, (uint32_t)id);
	return error;
}

uint64_t monitor_id_generation(int id)
{
	return monitor_session.ids[id - 1].generation;
}

void monitor_unload_aspect(struct aspect *aspect, int id, uint64_t generation)
{
	struct aspect_id *slot = &monitor_session.ids[id - 1];
	if (slot->aspect != aspect || slot->generation != generation ||
	    generation != monitor_session.generation || --slot->refs > 0)
		return;
	if (monitor_flush_aspect(aspect) == 0)
		control_call(SCOPE_MSG_UNLOAD, (uint32_t)id, 0, NULL);
	set_id(id, NULL);
}

/* ---- What the monitor asks ---------------------------------------------------------- */

static bool caller_is_monitor(void)
{
	struct process *p = proc_current();
	return p && proc_pid(p) == monitor_session.pid && !monitor_is_gone();
}

SYSCALL_DEFINE3(ms_scope_image, uint32_t, id, void *, buffer, uint64_t, length)
{
	struct aspect *aspect = caller_is_monitor() ? aspect_of_id(id) : NULL;
	if (!aspect)
		return -ENOENT;
	long result = (long)aspect->image_size;
	if (length >= aspect->image_size && copy_to_user(buffer, aspect->image, aspect->image_size))
		result = -EFAULT;
	aspect_put(aspect);
	return result;
}

/* Keeps report for id until monitor_flush_aspect merges it; one that finds
 * an earlier report still there (its FLUSH timed out) is added to it: the
 * monitor zeroes what it reported.  Returns 0, or -ENOENT when no aspect has
 * id (any more): the report is dropped. */
static int keep_report(uint32_t id, struct linker_counters *report)
{
	mutex_lock(&report_lock);
	struct aspect_id *slot = &monitor_session.ids[id - 1];
	uint64_t irq = spin_lock_irqsave(&monitor_session.lock);
	bool named = slot->aspect && slot->generation == monitor_session.generation;
	spin_unlock_irqrestore(&monitor_session.lock, irq);
	if (!named) { /* no aspect has this id (any more): nobody's counts */
		mutex_unlock(&report_lock);
		kfree(report);
		return -ENOENT;
	}
	if (slot->report) {
		linker_counters_merge(slot->report, report);
		kfree(report);
	} else {
		slot->report = report;
	}
	mutex_unlock(&report_lock);
	return 0;
}

SYSCALL_DEFINE2(ms_scope_report, uint32_t, id, const struct linker_counters *, counters)
{
	if (!caller_is_monitor() || id == 0 || id > ASPECT_MAX)
		return -ENOENT;
	struct linker_counters *report = kmalloc(sizeof *report);
	if (!report)
		return -ENOMEM;
	if (copy_from_user(report, counters, sizeof *report)) {
		kfree(report);
		return -EFAULT;
	}
	return keep_report(id, report);
}

/* The aspect ABI's device counters for aspects in the monitor: the kernel's
 * own answer (ms_device_counter, linker/abi_kernel.c), so an aspect reads
 * the same counters in every binding. */
SYSCALL_DEFINE3(ms_scope_device_counter, const char *, device, const char *, counter, uint64_t *,
		value)
{
	char d[MS_NAME_MAX], c[MS_NAME_MAX];
	if (!caller_is_monitor())
		return -EPERM;
	long dl = strncpy_from_user(d, device, sizeof d),
	     cl = strncpy_from_user(c, counter, sizeof c);
	if (dl == -EFAULT || cl == -EFAULT)
		return -EFAULT;
	if (dl < 0 || cl < 0)
		return -ENOENT; /* longer than any name */
	uint64_t result;
	int error = ms_device_counter(d, c, &result);
	if (error)
		return error;
	return put_user_u64(value, result) ? -EFAULT : 0;
}

/* The aspect ABI's ms_emit for aspects in the monitor: the record goes to the
 * same "aspects" telemetry channel, in the same format, and is counted the
 * same way (emitted, or a drop when the ring is full) as a direct aspect's. */
SYSCALL_DEFINE4(ms_scope_emit, uint32_t, id, uint32_t, type, const void *, payload, uint64_t,
		length)
{
	uint8_t copy[MS_EMIT_MAX];
	if (length > MS_EMIT_MAX || (length && copy_from_user(copy, payload, length)))
		return -EINVAL;
	struct aspect *aspect = caller_is_monitor() ? aspect_of_id(id) : NULL;
	if (!aspect)
		return -ENOENT;
	long result = linker_emit_record(aspect, type, copy, length);
	aspect_put(aspect);
	return result;
}

/* The aspect ABI's ms_reply for aspects in the monitor when no call waits
 * (shm, one-way msg): the value is posted for the join point's owner under
 * (join point, key) as a direct advice's reply is (reply.c).  The key is
 * only compared by the owner, never followed. */
SYSCALL_DEFINE3(ms_scope_reply, uint32_t, joinpoint, uint64_t, key, int64_t, value)
{
	if (!caller_is_monitor())
		return -EPERM;
	const struct joinpoint *jp = jp_at(joinpoint);
	if (!jp)
		return -ENOENT;
	return aspect_reply_post(jp, key, value);
}

/* The attached monitor's endpoint when the caller is that monitor; else
 * NULL.  No reference is taken, and none is needed for the call: the
 * endpoint is the session's, which puts it only when the next monitor
 * attaches (attach_monitor), and none attaches while this call runs.
 * Another process attaches only once this one has ended or exec'd
 * (may_take_the_pages), which its thread does itself, and this one only
 * from its thread: a process has one (proc.h), and it is here.  So the
 * caller must still run the program that attached: once it has exec'd,
 * another monitor may attach (and put this endpoint) while it sleeps in
 * the call.  For the same reason the endpoint and the process read here
 * are one monitor's.  The caller is the process asked about, so it runs and
 * its exec count is its own thread's to read: proc_still_runs_program's
 * look-up under proc_lock (50 instructions of the round trip) would find
 * the same.  In line, as proc_exec_count is: the system call's arguments
 * then stay in the registers they came in, with no call to save them
 * across.  The attach stores the process before the endpoint (release; the
 * endpoint is loaded with acquire, first).  The process test is the
 * join-point side's (monitor_is_process), with the exec count beside it. */
static inline __attribute__((always_inline)) struct ipc_endpoint *callers_monitor_endpoint(void)
{
	struct ipc_endpoint *e = monitor_endpoint();
	struct process *p = proc_current();
	return e && monitor_is_process(p) &&
		       proc_exec_count(p) ==
			   __atomic_load_n(&monitor_session.execs, __ATOMIC_RELAXED)
		   ? e
		   : NULL;
}

/* ms_scope_reply_receive into a buffer of the monitor's own (e: its
 * endpoint): received on the stack, then copied out once.  Out of line: the
 * message's room on the stack and the copy are not the inbox path's. */
static __attribute__((noinline)) long
reply_receive_copying(uint64_t token, uint64_t word0, uint64_t word1, struct ipc_message *message,
		      uint64_t timeout_ns, struct ipc_endpoint *e)
{
	if (!uaccess_range_ok((uint64_t)message, sizeof *message))
		return -EFAULT;
	struct ipc_message received;
	int error = ipc_reply_words_receive(token, word0, word1, &received, timeout_ns, e);
	if (error)
		return error;
	return copy_to_user(message, &received, IPC_HEADER_SIZE + received.length) ? -EFAULT : 0;
}

/* The monitor's loop, one system call per event (seL4's reply / receive):
 * the answer comes in registers, the endpoint is the session's, and the
 * message received goes into the inbox the monitor reads in place
 * (SCOPE_INBOX_ADDRESS), or is copied out once to any other buffer.  The
 * range is checked before the reply goes: a bad buffer changes nothing.
 * The caller being the attached monitor, its attach mapped the inbox. */
SYSCALL_DEFINE5(ms_scope_reply_receive, uint64_t, token, uint64_t, word0, uint64_t, word1,
		struct ipc_message *, message, uint64_t, timeout_ns)
{
	struct ipc_endpoint *e = callers_monitor_endpoint();
	if (!e)
		return -EPERM;
	__atomic_fetch_add(&monitor_receives, 1, __ATOMIC_RELAXED);
	if ((uint64_t)message != SCOPE_INBOX_ADDRESS)
		return reply_receive_copying(token, word0, word1, message, timeout_ns, e);
	return ipc_reply_words_receive(token, word0, word1, inbox, timeout_ns, e);
}

/* ---- The event record (event_fill.h) --------------------------------------------------- */

uint64_t monitor_tsc_to_ns(uint64_t tsc)
{
	uint64_t now_tsc = rdtsc(), now_ns = clock_ns();
	uint64_t ago = now_tsc > tsc ? clock_tsc_to_ns(now_tsc - tsc) : 0;
	return now_ns > ago ? now_ns - ago : 0;
}

const char monitor_kernel_name[SCOPE_PROGRAM_NAME_MAX] = "kernel";

/* ---- Weaving shared by the shm and msg bindings -------------------------- */

struct monitor_state {
	struct monitor_advice advice[LINKER_MAX_ADVICE];
	int id;              /* the aspect's id in the monitor it was loaded into */
	uint64_t generation; /* that monitor's */
};

static void monitor_prepare_advice(struct monitor_advice *a, struct aspect *aspect, int id,
				   unsigned index, bool defers,
				   const struct monitor_advice_code *code)
{
	const struct linker_advice *advice = &aspect->object.advice[index];
	*a = (struct monitor_advice){.aspect = aspect,
				     .event_head = monitor_event_head((uint32_t)id, index, 0),
				     .call_head =
					 monitor_event_head((uint32_t)id, index, SCOPE_EVENT_CALL)};
	a->jp = (struct jp_advice){
	    .name = aspect->name,
	    .before = advice->kind == MS_ADVICE_BEFORE ? code->before : NULL,
	    .after = advice->kind == MS_ADVICE_AFTER ? code->after : NULL,
	    .around = advice->kind == MS_ADVICE_BEFORE ? code->around_before : NULL,
	    .cookie = a,
	    .priority = advice->priority,
	    .flags = ((advice->flags & MS_WANT_TIMESTAMPS) ? JP_ADVICE_TIMESTAMPS : 0) |
		     (defers ? JP_ADVICE_DEFERS : 0),
	};
}

int monitor_weave_aspect(struct aspect *aspect, enum aspect_binding binding,
			 const struct monitor_advice_code *code)
{
	/* Its events go to the monitor, which receives every process's: the
	 * caller must hold what attaching as the monitor needs (a monitor the
	 * kernel started for it would take its credentials and never attach). */
	if (!proc_has_privilege(PRIV_MONITOR)) {
		pr_warn("%s: linking it into the monitor needs PRIV_MONITOR\n", aspect->name);
		return -EPERM;
	}
	struct monitor_state *state = kzalloc(sizeof *state);
	if (!state)
		return -ENOMEM;
	int id = monitor_load_aspect(aspect, binding == ASPECT_BINDING_SHM);
	if (id < 0) {
		kfree(state);
		return id;
	}
	state->id = id;
	state->generation = monitor_id_generation(id);
	aspect->binding_state[binding] = state;
	for (unsigned i = 0; i < aspect->object.advice_count; i++) {
		monitor_prepare_advice(&state->advice[i], aspect, id, i,
				       binding == ASPECT_BINDING_MSG, /* its calls defer */
				       code);
		state->advice[i].generation = state->generation;
		int error = aspect_weave_advice(aspect, binding, i, &state->advice[i].jp);
		if (error) {
			monitor_unweave_aspect(aspect, binding);
			return error;
		}
	}
	return 0;
}

/* Synchronous msg events of state's advice that sleep outside their section
 * (bind_msg.c) end by their deadline: waits for them after the grace period,
 * which ended every section that could start one. */
static void wait_in_flight(struct monitor_state *state)
{
	for (unsigned i = 0; state && i < LINKER_MAX_ADVICE; i++)
		while (msg_advice_calling(&state->advice[i]))
			sched_sleep_ns(NSEC_PER_MSEC);
}

void monitor_unweave_aspect(struct aspect *aspect, enum aspect_binding binding)
{
	struct monitor_state *state = aspect->binding_state[binding];
	aspect_unweave_binding(aspect, binding);
	wait_in_flight(state);
	monitor_unload_aspect(aspect, state->id, state->generation);
	kfree(state);
	aspect->binding_state[binding] = NULL;
}
