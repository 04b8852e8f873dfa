/*
 * The trace stream, switched on and carried out of the OS.  A trace session
 * turns on the kernel's trace points (telemetry/tracepoint.h), records the
 * join points matching its patterns with the built-in recorder (no aspect:
 * entry and exit records, or one call record for a join point that cannot
 * sleep), writes the names of the threads that exist already, and drains
 * the per-CPU rings into CTF packets (trace/ctf.h) handed to a sink: the
 * virtio console or TCP (framed, uapi/trace.h) or a directory inside the OS.
 * Every record is delivered in a packet or counted as dropped, end to end.
 *
 *     const char *patterns[] = {"vfs.*", "net.*"};
 *     trace_start(trace_find_sink("console"), "", patterns, 2);
 *     ...
 *     struct trace_end end;
 *     trace_stop(&end);      // end.recorded == end.delivered + end.dropped
 *
 * One session at a time.  Layer: monitoring services; sinks live above
 * (drivers, modules) and register themselves.
 */
#ifndef KERNEL_TRACE_TRACE_H
#define KERNEL_TRACE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uapi/trace.h"

#define TRACE_PATTERNS_MAX 8
#define TRACE_SINKS_MAX    4
#define TRACE_LENT_PARTS   3 /* a packet's header and the ring's two stretches */

/* One piece of a frame lent to a sink. */
struct trace_part {
	const void *data;
	uint32_t length;
};

/* Where packets go.  open gets the session's argument (a directory for the
 * file sink, "" otherwise) before the first frame; frame takes one frame
 * (uapi/trace.h) and may sleep, returning 0 or a negative error (the
 * packet's records are then counted as dropped); close ends the session. */
struct trace_sink {
	const char *name;
	int (*open)(void *context, const char *argument);
	int (*frame)(void *context, uint16_t kind, uint16_t stream, const void *data,
		     uint32_t length);
	void (*close)(void *context);
	/* Optional: frame without a copy, its bytes the parts in order (at most
	 * TRACE_LENT_PARTS, each physically contiguous: mm_alloc_pages memory,
	 * a telemetry ring's data).  The sink reads them in place until settle
	 * says it is done: settle(wait) returns 0 once the sink no longer needs
	 * the bytes of any frame lent before it, waiting for that when wait is
	 * true, else -EAGAIN at once while it still does. */
	int (*frame_lent)(void *context, uint16_t kind, uint16_t stream,
			  const struct trace_part *parts, unsigned count);
	int (*settle)(void *context, bool wait);
	void *context;
};

/* Makes sink available by name.  Returns 0, -EEXIST or -ENOSPC. */
int trace_register_sink(const struct trace_sink *sink);
/* The sink named name, or NULL. */
const struct trace_sink *trace_find_sink(const char *name);

/* Starts a session into sink: the metadata first, then packets as the rings
 * fill.  Returns 0, or -EBUSY (one runs), -EINVAL (no sink, too many
 * patterns), -ENOENT (a pattern matches no join point), -ENOMEM, or the
 * sink's open error; nothing runs after an error. */
int trace_start(const struct trace_sink *sink, const char *argument, const char *const *patterns,
		unsigned count);
/* Stops the session: no more records, the rings drained, END sent; fills
 * *end (may be NULL).  Returns 0 or -ENOENT (none runs). */
int trace_stop(struct trace_end *end);
bool trace_running(void);
/* True while a session runs into sink. */
bool trace_running_into(const struct trace_sink *sink);
/* trace_start in flight-recorder mode: the rings keep the newest records and
 * nothing goes to the sink until trace_snapshot, which sends what they hold
 * (each record at most once).  Records never snapshot count as dropped. */
int trace_start_flight(const struct trace_sink *sink, const char *argument,
		       const char *const *patterns, unsigned count);
/* trace_start of the trace map's user stacks alone (uscope.c): the stream
 * holds the programs' names, and for the traced processes only, each system
 * call's entry and its stack; no other kernel event, no join point.
 * Returns what trace_start does. */
int trace_start_stacks(const struct trace_sink *sink, const char *argument);
/* Sends what the flight recorder holds now, recording paused meanwhile.
 * Returns 0, -ENOENT (no trace runs) or -EINVAL (a stream trace runs). */
int trace_snapshot(void);

/* The counts of the session running (or the last one). */
void trace_get_counts(struct trace_end *counts);

/* A control line from a host (uapi/trace.h): trace start/stop/snapshot, or
 * a line for the kernel shell through the runner set below.  Answers with a
 * TEXT frame into sink.  Returns 0 or a negative error. */
int trace_control_line(const struct trace_sink *sink, const char *line);

/* The bytes a host sends on one connection: lines (each run with
 * trace_control_line when its newline comes; one longer than
 * TRACE_CONTROL_LINE_MAX is refused), and after "put NAME LENGTH" that many
 * raw bytes, stored with trace_store_file.  Zero-initialise with the sink
 * that answers; feed it in order from one thread. */
struct trace_control {
	const struct trace_sink *sink;
	char line[TRACE_CONTROL_LINE_MAX];
	size_t line_length;
	bool line_too_long;
	char put_name[TRACE_PUT_NAME_MAX + 1];
	uint8_t *put_data; /* NULL: no file coming in */
	size_t put_length, put_received, put_pages;
	uint64_t skip_left; /* bytes of a refused file still to come */
	bool lost;          /* a put without a LENGTH: nothing more is read */
};
void trace_control_bytes(struct trace_control *control, const uint8_t *data, size_t length);
/* The host went away: forgets a file half received, a half line, bytes to
 * skip; the next host starts afresh. */
void trace_control_end(struct trace_control *control);
void trace_set_line_runner(int (*run)(const char *line, char *output, size_t size));

/* A file a host sent ("put NAME LENGTH"): checks the name (letters, digits,
 * '.', '_', '-'; at most TRACE_PUT_NAME_MAX) and hands it to the store the
 * file system set.  Returns 0, -EINVAL (a bad name), -ENOSYS (no store), or
 * the store's error. */
int trace_store_file(const char *name, const void *data, size_t length);
void trace_set_file_store(int (*store)(const char *name, const void *data, size_t length));

/* ---- The trace map: user stacks of named applications (uscope.c) -------- */

struct trap_frame;
/* Traces every process of the program name (or path): its user stack goes
 * into the stream at each event events names (a join-point pattern, NULL:
 * "*"; a system call is the event sys.NAME, as its join point), system calls
 * and the join points the trace records that may sleep; mode 1 = the last
 * frame of its own code, 2 = up to budget frames of its own code, 3 = the
 * last frame, 4 = up to budget frames (at most TRACE_STACK_MAX).  Processes
 * running it now join at once, fork inherits, exec re-decides.  Returns the
 * map's slot (> 0), or -EINVAL (a bad name, mode, budget or pattern),
 * -ENOSPC (USCOPE_MAP_MAX entries).  These three are the console's and the
 * host's: an entry for every user's processes (a program's own entries go
 * through ms_uscope: uapi/trace.h). */
int uscope_trace(const char *name, unsigned mode, unsigned budget, const char *events);
/* Takes name's entry for every user out of the map (or, if there is none, a
 * user's entry of that name); its processes stop being traced.  0 or
 * -ENOENT. */
int uscope_untrace(const char *name);
/* Fills up to count entries; returns how many the map holds. */
int uscope_list(struct uscope_info *info, int count);
/* At a system call's entry, with the caller's saved registers: the user
 * stack of a traced process into the stream, if its entry names the event
 * sys.<syscall_name> (nothing for the others). */
void uscope_record_stack(const struct trap_frame *user, const char *syscall_name);
/* The same in a trace of stacks alone, which records nothing else of a
 * traced process's system call: its entry record (number, arg0) and, if its
 * entry names the event, the stack (the two as one record when the stack is
 * one this CPU sent before: uapi/trace.h's syscall_stack).  slot: the
 * caller's in the trace map (this_cpu_user_stacks, not 0).  Its usual case
 * is in line in the system call's path, first (uscope_syscall.h's
 * uscope_syscall_sent): this is called when that returned false, and does
 * not look in the memo again when the entry wants every call's stack. */
void uscope_record_syscall(const struct trap_frame *user, const char *syscall_name, int64_t number,
			   uint64_t arg0, unsigned slot);
/* At a recorded join point, right after its entry record (one that may
 * sleep) or its call record (one that may not: the stack follows the call):
 * the user stack of a traced process that reached it (from the registers it
 * entered the kernel with), if its entry names the join point.  Not in an
 * interrupt handler (the registers there are not the process's own calls);
 * never a fault, a lock or a sleep, so it may run wherever a _NOSLEEP join
 * point does.  System calls' join points (sys.*) are left out: their
 * syscall_entry has it. */
void uscope_record_joinpoint_stack(const char *joinpoint);
/* The current thread's user stack, walked as uscope_record_stack walks it
 * (by the program's CFI, else its frame pointers) from the registers the
 * thread entered the kernel with: up to max return addresses (at most
 * TRACE_STACK_MAX), innermost first, of any code; *flags gets
 * TRACE_STACK_TRUNCATED or _UNREADABLE.  Returns how many, 0 in an
 * interrupt, in a kernel thread or with interrupts off (the reads may fault
 * pages in).  Needs no trace running and no entry in the map. */
unsigned uscope_take_stack(uint64_t *frames, unsigned max, uint16_t *flags);
/* Makes the per-CPU caches of unwind rules uscope_take_stack looks in
 * (without them each walk searches the tables).  Thread context. */
void uscope_prepare_stacks(void);
/* Writes a stack taken by uscope_take_stack into the trace stream as thread
 * tid's user_stack record (when a trace runs). */
void uscope_write_stack(int tid, const uint64_t *frames, unsigned count, uint16_t flags);

/* At boot, once the drivers and their sinks are up: starts the trace= trace
 * (boot.c) or runs trace_bench. */
void trace_boot_init(void);

#endif
