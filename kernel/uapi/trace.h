/*
 * The trace stream as a consumer sees it: the events the kernel records into
 * its per-CPU trace rings (one telemetry channel, records as in
 * uapi/telemetry.h), their payloads, and the framing that carries the CTF
 * trace out of the OS over a byte stream (virtio console, TCP).  The kernel
 * generates the CTF 1.8 metadata that describes every event below (and one
 * event per join point, see TRACE_JP_EVENT); a host reads the stream with
 * tools/mscope.  Plain declarations; user space includes this header.
 */
#ifndef UAPI_TRACE_H
#define UAPI_TRACE_H

#include <stdint.h>

/* ---- Event types (tel_record.type of the trace channel) -------------------- */

enum trace_event {
	/* 0 is the ring's pad (TEL_TYPE_PAD), never in a trace. */
	TRACE_SCHED_SWITCH = 1, /* struct trace_sched_switch */
	TRACE_SCHED_WAKEUP,     /* struct trace_sched_wakeup */
	TRACE_SCHED_MIGRATE,    /* struct trace_sched_migrate */
	TRACE_IRQ_ENTRY,        /* struct trace_irq */
	TRACE_IRQ_EXIT,         /* struct trace_irq */
	TRACE_SYSCALL_ENTRY,    /* struct trace_syscall_entry */
	TRACE_SYSCALL_EXIT,     /* struct trace_syscall_exit */
	TRACE_PAGE_FAULT,       /* struct trace_page_fault */
	TRACE_PROCESS_FORK,     /* struct trace_process_fork */
	TRACE_PROCESS_EXEC,     /* struct trace_thread_name: the program's name */
	TRACE_PROCESS_EXIT,     /* struct trace_process_exit */
	TRACE_THREAD_NAME,      /* struct trace_thread_name: a thread that existed at start */
	TRACE_USER_MARK,        /* struct trace_mark, then length bytes */
	TRACE_ASPECT_EMIT,      /* struct trace_mark, then length bytes (ms_emit) */
	TRACE_USER_STACK,       /* struct trace_user_stack, then count frames */
	TRACE_USER_STACK_DEF,   /* struct trace_user_stack_def, then count frames */
	TRACE_USER_STACK_REF,   /* struct trace_user_stack_ref */
	TRACE_SYSCALL_STACK,    /* struct trace_syscall_stack */
	TRACE_BUILTIN_EVENTS,   /* one past the last built-in event */
};

/* Join point j (its index in the registry) has three events: its entry
 * (payload: the first argument), its exit (the return value), and a call
 * (entry and exit folded into one record, written at the exit of a join point
 * that cannot sleep). */
#define TRACE_JP_BASE           1024
#define TRACE_JP_EVENT(j, kind) (TRACE_JP_BASE + 3 * (j) + (kind))
enum trace_jp_kind { TRACE_JP_ENTRY, TRACE_JP_EXIT, TRACE_JP_CALL };

#define TRACE_NAME_MAX 16 /* names travel truncated to this, NUL-padded */

struct trace_sched_switch {
	int32_t prev_tid, next_tid;
	int32_t prev_state; /* enum trace_thread_state */
	int32_t next_pid;
};
enum trace_thread_state {
	TRACE_RUNNABLE,
	TRACE_BLOCKED,
	TRACE_EXITED,
};
struct trace_sched_wakeup {
	int32_t tid;
	int32_t target_cpu;
};
struct trace_sched_migrate {
	int32_t tid;
	int32_t from_cpu, to_cpu;
	int32_t reserved;
};
struct trace_irq {
	uint32_t vector;
	uint32_t reserved;
};
struct trace_syscall_entry {
	int64_t number;
	uint64_t arg0;
};
struct trace_syscall_exit {
	int64_t number;
	int64_t result;
};
struct trace_page_fault {
	uint64_t address;
	uint64_t ip;
	uint32_t error_code; /* the CPU's page-fault error code */
	int32_t tid;
};
struct trace_process_fork {
	int32_t parent_pid, child_pid;
	int32_t child_tid, reserved;
};
struct trace_process_exit {
	int32_t pid;
	int32_t status;
};
struct trace_thread_name {
	int32_t pid, tid;
	char name[TRACE_NAME_MAX];
};
struct trace_mark {
	uint32_t type;   /* the caller's */
	uint32_t length; /* bytes of data after this header */
};
#define TRACE_MARK_MAX 256 /* bytes of data in one mark */
/* The user stack of a traced process at a kernel event (the record just
 * before it in the same ring): frames[0] is where user code was (the
 * instruction after the system call), then the return addresses out,
 * innermost first. */
struct trace_user_stack {
	int32_t tid;
	uint16_t count; /* frames that follow (uint64_t each) */
	uint16_t flags; /* TRACE_STACK_* */
};
#define TRACE_STACK_TRUNCATED  1 /* the budget ended the walk before the stack did */
#define TRACE_STACK_UNREADABLE 2 /* a frame could not be read (or went the wrong way) */
#define TRACE_STACK_LOST       4 /* a reference whose stack never reached the reader */
#define TRACE_STACK_MAX        32
/* A stack the thread's walk found the same as one already in the stream
 * goes as a reference to it.  In a streamed trace (not a flight recorder)
 * a stack is written once as a user_stack_def, which is a user_stack with
 * an id (the CPU's count: unique in its stream), and again as a
 * user_stack_ref naming that id, in the same CPU's stream, after it; in a
 * trace of stacks alone a system call whose stack is a reference is one
 * syscall_stack record (its syscall_entry and the reference).  A reader
 * makes each into what it stands for: a def into the user_stack, a ref into
 * the user_stack of its def with the ref's tid, a syscall_stack into a
 * syscall_entry and that user_stack (tools/mscope does, as it records); a
 * ref to an id it never saw (a packet lost) is a user_stack with no frame
 * and TRACE_STACK_UNREADABLE | TRACE_STACK_LOST. */
struct trace_user_stack_def {
	int32_t tid;
	uint16_t count; /* frames that follow (uint64_t each) */
	uint16_t flags; /* TRACE_STACK_* */
	uint32_t id;
	uint32_t reserved;
};
struct trace_user_stack_ref {
	int32_t tid;
	uint32_t id; /* of a user_stack_def before it in the same stream */
};
struct trace_syscall_stack {
	int64_t number; /* the syscall_entry's */
	uint64_t arg0;
	int32_t tid; /* the user_stack_ref's */
	uint32_t id;
};

struct trace_jp_call {
	uint64_t arg0;
	int32_t result;    /* the low 32 bits of the return value */
	uint32_t duration; /* clock ticks from entry to exit */
};

/* ---- System call ---------------------------------------------------------------
 * ms_trace_mark(type, data, length) → 0 (written into the stream when a trace
 *     runs, nothing otherwise), -EINVAL (length > TRACE_MARK_MAX), -EFAULT */

/* ---- The stream out of the OS ------------------------------------------------
 * A sequence of frames, each a struct trace_frame and length bytes:
 *   METADATA  the CTF metadata (TSDL text), first and whole;
 *   PACKET    one CTF packet of stream `stream` (the file stream_<stream>);
 *   END       struct trace_end: the capture is over and complete;
 *   TEXT      the answer to a control line (below), as text.
 * A host writes METADATA to DIR/metadata and appends each PACKET to
 * DIR/stream_<stream>: the directory is then a CTF trace. */
#define TRACE_FRAME_MAGIC 0x5254534dU /* "MSTR" */
enum trace_frame_kind {
	TRACE_FRAME_METADATA = 1,
	TRACE_FRAME_PACKET = 2,
	TRACE_FRAME_END = 3,
	TRACE_FRAME_TEXT = 4,
};
struct trace_frame {
	uint32_t magic;
	uint16_t kind;
	uint16_t stream;
	uint32_t length;
	uint32_t reserved; /* 0 */
};
/* Counted end to end: every record recorded is delivered in a packet or
 * counted in dropped (refused by a full ring, or not sent). */
struct trace_end {
	uint64_t recorded;
	uint64_t delivered;
	uint64_t dropped;
};

/* ---- Control, into the OS over the same byte stream ---------------------------
 * Lines of text, each answered by one TEXT frame ("trace started", "trace
 * stopped: ..." after the END frame, "error ...", a file's "stored ..."):
 *   trace start [--flight] [PATTERN...]
 *                              record the kernel's events and the join points
 *                              matching PATTERN; packets follow as recorded
 *                              (--flight: only on trace snapshot)
 *   trace snapshot             a flight recorder's records now
 *   trace stop                 flush, then END
 *   put NAME LENGTH            then LENGTH raw bytes (at most TRACE_PUT_MAX):
 *                              stored as /tmp/NAME (NAME: letters, digits,
 *                              '.', '_' and '-')
 *   ANY OTHER LINE             run by the kernel shell (kcmd); the answer is
 *                              what the command printed, then "ok" or
 *                              "error N" (e.g. "aspect load /tmp/a.o") */
#define TRACE_CONTROL_LINE_MAX 256
#define TRACE_PUT_MAX          (4 * 1024 * 1024)
#define TRACE_PUT_NAME_MAX     64

/* ---- The trace map from a program (ms_uscope) ---------------------------------
 * ms_uscope(op, name, arg, size):
 *   USCOPE_TRACE    name (a program's name or path), arg: struct
 *                   uscope_request, size: its size; returns the map's slot
 *   USCOPE_UNTRACE  name, arg NULL, size 0; returns 0
 *   USCOPE_LIST     name NULL, arg: struct uscope_info[size]; returns the
 *                   entries the caller may see (fills up to size of them)
 * With PRIV_MONITOR an entry traces every user's processes of the program.
 * Without it an entry is the caller's own: it traces only the processes of
 * the caller's user (real, effective and saved user ids all that user's),
 * only its owner may change or take it out (-EPERM), it shows only to its
 * owner and to PRIV_MONITOR, and a user has at most USCOPE_USER_MAX of them
 * (-ENOSPC).  A caller whose user ids differ (set-uid), or root without
 * PRIV_MONITOR, may add none (-EPERM).  Errors: -EFAULT (a bad pointer), -EINVAL (a bad op, name,
 * size, mode, budget or events), -ENOSPC (the map is full), -ENOENT (no
 * such entry of the caller's). */
#define USCOPE_TRACE   1
#define USCOPE_UNTRACE 2
#define USCOPE_LIST    3

#define USCOPE_MAP_MAX    8  /* entries in the map */
#define USCOPE_USER_MAX   2  /* entries one user may own without PRIV_MONITOR */
#define USCOPE_NAME_MAX   32 /* a name or path with its NUL (the kernel's PROC_NAME_MAX) */
#define USCOPE_EVENTS_MAX 48 /* a join-point pattern with its NUL */

struct uscope_request {
	uint32_t mode;   /* 1-4: own code's last frame, own code, last frame, all */
	uint32_t budget; /* frames kept in modes 2 and 4 (0: 1), at most TRACE_STACK_MAX */
	char events[USCOPE_EVENTS_MAX]; /* the events with stacks, NUL-terminated ("*": all) */
};
struct uscope_info {
	char name[USCOPE_NAME_MAX];
	uint32_t mode, budget;
	char events[USCOPE_EVENTS_MAX];
	uint32_t every_user; /* 1: every user's processes; 0: owner's only */
	uint32_t owner;      /* the user whose entry it is (every_user 0) */
};

#endif
