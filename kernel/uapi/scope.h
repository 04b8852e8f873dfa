/*
 * Scope: the contract between the kernel's runtime linker and the processes
 * that watch or steer it.  Two parties use it, through system calls:
 *
 *  - scopectl (userland/scopectl) controls aspects: list join points, load an
 *    object, link / relink with a binding, unlink, read statistics
 *    (ms_scope_ctl, over linker/linker.h);
 *  - the monitor process (userland/monitor) runs aspects bound `shm` or
 *    `msg`: it registers its IPC endpoint (ms_scope_attach), fetches the
 *    objects it is told to link (ms_scope_image), takes events from the
 *    telemetry channel (ms_tel_read) or as messages, and hands its counters
 *    back (ms_scope_report).
 *
 *     struct scope_ctl c = {.op = SCOPE_LINK, .binding = 3};
 *     strcpy(c.name, "callcount");
 *     long err = ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0);
 *
 * Plain declarations only: user space includes this header.
 */
#ifndef UAPI_SCOPE_H
#define UAPI_SCOPE_H

#include <stdint.h>

/* ---- Events: what a join point hands a monitor ------------------------------
 * One per advice run, as the payload of a telemetry record (type
 * SCOPE_RECORD_EVENT, shm) or of an IPC message (label SCOPE_MSG_EVENT,
 * msg).  The monitor's ABI answers the context accessors from it.  It holds
 * numbers only, except the program's name (which may change at exec, or be
 * gone with its process before a ring record is read): the join point is
 * its index in the registry, named once by SCOPE_JOINPOINT_NAME, so that an
 * event is the 16 words its accessors use. */
#define SCOPE_PROGRAM_NAME_MAX 16
#define SCOPE_EVENT_AFTER      0x1u /* an `after` advice: ret and exit_ns valid */
#define SCOPE_EVENT_CALL       0x2u /* msg, synchronous: a reply is awaited */

struct scope_event {
	uint32_t aspect_id; /* the kernel's number for the aspect (SCOPE_MSG_LOAD) */
	uint16_t advice_index;
	uint16_t flags; /* SCOPE_EVENT_* */
	int32_t pid, tid;
	uint32_t cpu;
	uint32_t argc;
	uint64_t args[6];
	uint64_t ret;
	uint64_t entry_ns, exit_ns;
	uint64_t activity;
	uint32_t joinpoint; /* index in the registry (SCOPE_JOINPOINT_NAME) */
	uint32_t reserved;  /* 0 */
	char program[SCOPE_PROGRAM_NAME_MAX];
};

#define SCOPE_RECORD_EVENT 0x5c01 /* telemetry record type */

/* ---- Messages from the kernel to the monitor (IPC labels) ------------------
 * LOAD    words[0] = aspect id, payload = its name: link the object
 *         (ms_scope_image); reply words[0] = 0 or a negative error.
 *         words[1] = 1: its events come through the rings (shm), which the
 *         monitor reads from then on; an aspect already linked may be
 *         loaded again for this alone.
 * UNLOAD  words[0] = aspect id: forget it.  Reply words[0] = 0.
 * FLUSH   words[0] = aspect id: run every pending event, report the aspect's
 *         counters (ms_scope_report), zero them; reply words[0] = 0.
 * EVENT   payload = struct scope_event; a call (token != 0) awaits a reply
 *         with words[0] = 1 when the advice called ms_reply, words[1] = the
 *         value. */
#define SCOPE_MSG_LOAD   1
#define SCOPE_MSG_UNLOAD 2
#define SCOPE_MSG_FLUSH  3
#define SCOPE_MSG_EVENT  4

/* ---- Control (ms_scope_ctl) ------------------------------------------------ */

enum scope_op {
	SCOPE_LIST_JOINPOINTS = 1, /* buffer ← text, one join point per line */
	SCOPE_LOAD,                /* name = path of an object file */
	SCOPE_LINK,                /* name = aspect, binding = 1 direct, 2 shm, 3 msg */
	SCOPE_RELINK,
	SCOPE_UNLINK,
	SCOPE_UNLOAD,
	SCOPE_STATS,           /* buffer ← text, one aspect per line (name = "" for all) */
	SCOPE_COUNTER,         /* value ← counter `counter` of aspect name */
	SCOPE_SET_MSG_MODE,    /* binding = 0 one-way, 1 synchronous; value = deadline in ns */
	SCOPE_JOINPOINT_NAME,  /* name ← the name of join point number value (an event's
			       * joinpoint); -ENOENT past the last one */
	SCOPE_JOINPOINT_STATS, /* buffer ← text, "NAME CALLS TIMED_CALLS TOTAL_NS" per join
				* point that the built-in count or time advice counted */
	SCOPE_DEVICE_COUNTERS, /* buffer ← text, "NIC COUNTER VALUE" per counter of each NIC
				* (the NIC module's, then the driver's) */
	SCOPE_SHOW,            /* buffer ← text: whose values (live, unlinked, unloaded), then
		      * each counter and histogram (count, mean, p50/p90/p99/max
		      * with its unit); an unloaded aspect's last values stay until
		      * cleared or an aspect of that name is loaded */
	SCOPE_CLEAR,           /* forget aspect name's values (not while it is linked: -EBUSY) */
};
/* A histogram's unit is its name's suffix: _ns, _us, _ms, _s (time, printed
 * scaled), _bytes, _cycles, _pages; without one its values are plain counts.
 * Percentiles and max are the upper bounds of the log2 buckets they fall in.
 * SCOPE_COUNTER on a histogram: value ← its count, buffer ← its line. */

struct scope_ctl {
	uint32_t op; /* enum scope_op */
	uint32_t binding;
	char name[128];
	char counter[48];
	int64_t value;
	char *buffer; /* user memory for text answers */
	uint64_t length;
	char error[160]; /* why, when the answer is an error */
};

/* The monitor's inbox: ms_scope_attach maps one read-only page here, a kernel
 * region of the monitor (it can neither unmap it nor map over it), and
 * ms_scope_reply_receive given this address as its message receives into
 * it: the monitor reads the message in place until its next receive. */
#define SCOPE_INBOX_ADDRESS 0x0000700000200000UL /* past the user clock page */

/* ms_scope_ctl(struct scope_ctl *) → 0 or bytes written to buffer, or a
 * negative error (with error filled in).
 * ms_scope_attach(endpoint fd) → the telemetry channel id of shm events,
 *     with the inbox mapped at SCOPE_INBOX_ADDRESS; -EPERM without
 *     PRIV_MONITOR, -EBUSY when another monitor is attached or an earlier
 *     one, detached, still runs (the inbox and the rings stay mapped in it
 *     until it ends; it alone may attach again), -EINVAL when something else
 *     is mapped there.  A monitor detaches by closing its endpoint or giving
 *     up PRIV_MONITOR (ms_priv, an effective uid other than 0), which closes
 *     its endpoint for it.
 * ms_scope_image(aspect id, buffer, length) → the object's size (copied when
 *     it fits), -ENOENT.
 * ms_scope_report(aspect id, const struct linker_counters *) → 0, -EFAULT.
 * ms_scope_device_counter(device, counter, uint64_t *value) → 0, -ENOENT,
 *     -EPERM (not the monitor), -EFAULT: the kernel's ms_device_counter.
 * ms_scope_emit(aspect id, type, payload, length) → as ms_emit (0, -EINVAL,
 *     -ENOBUFS), -ENOENT (not the monitor, no such aspect): a record into the
 *     channel direct aspects emit to.
 * ms_scope_reply(join point index, key, value) → 0, -ENOSPC (no slot),
 *     -ENOENT (no such join point), -EPERM (not the monitor): an advice's
 *     ms_reply when no call waits for it (shm, one-way msg), posted for the
 *     join point's owner under key, the event's first argument.
 * ms_scope_reply_receive(token, word0, word1, struct ipc_message *message,
 *     timeout_ns) → as ms_ipc_reply_receive on the attached endpoint (0,
 *     -ETIMEDOUT, -EAGAIN for a timeout of 0, -EPIPE, -EINTR, -EFAULT), or
 *     -EPERM (not the monitor): the monitor's loop in one call.  When token
 *     is not 0 it first answers that call with words[0] = word0 and
 *     words[1] = word1 (label, the other words and the length 0), passed in
 *     registers: no reply is read from memory and no descriptor is looked
 *     up.  A token that names no call (its caller timed out or is gone) is
 *     counted in late_replies and the receive goes on.  A message pointer
 *     of SCOPE_INBOX_ADDRESS receives into the monitor's inbox, read in
 *     place: nothing is copied out.
 * Only the attached monitor may call image, report, device_counter, emit,
 * reply, reply_receive. */

/* ---- Kernel API (user space sees the declarations only) -------------------- */

/* Switches the msg binding to synchronous calls with deadline_ns (0: the
 * default, 10 ms) or back to one-way messages. */
void scope_set_msg_mode(int synchronous, uint64_t deadline_ns);

#endif
