/*
 * The scope_event a join point's shm or msg event carries, filled in line
 * where it goes (the ring record of shm, the message of msg): out of line,
 * the fill's own frame and call cost as much as a quarter of its work, on
 * every event of both bindings.  Private to linker/.
 */
#ifndef LINKER_WEAVE_EVENT_FILL_H
#define LINKER_WEAVE_EVENT_FILL_H

#include <stdbool.h>
#include <stdint.h>

#include "joinpoint/joinpoint.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "uapi/proc.h"
#include "uapi/scope.h"

/* The event's first word: aspect_id, advice_index and flags as they lie in
 * struct scope_event, so that the fill stores them at once (an advice's is
 * computed when it is woven; the producer adds the flags of the event). */
_Static_assert(__builtin_offsetof(struct scope_event, aspect_id) == 0 &&
		   __builtin_offsetof(struct scope_event, advice_index) == 4 &&
		   __builtin_offsetof(struct scope_event, flags) == 6,
	       "the event's head is one word");
static inline uint64_t monitor_event_head(uint32_t aspect_id, unsigned advice_index, unsigned flags)
{
	return aspect_id | (uint64_t)(uint16_t)advice_index << 32 | (uint64_t)(uint16_t)flags << 48;
}
/* The flags of monitor_event_head in place in its word. */
#define MONITOR_EVENT_FLAGS(flags) ((uint64_t)(flags) << 48)

/* Whether the context is the running thread's: advice runs in that thread,
 * whose process the CPU holds (one load). */
static inline __attribute__((always_inline)) bool
monitor_context_is_current(const struct jp_context *context)
{
	return __builtin_expect(context->thread == thread_current(), 1);
}

/* The process of a context that is not the running thread's, asked of the
 * scheduler (NULL: the kernel's, with no thread). */
static inline struct process *monitor_other_context_process(const struct jp_context *context)
{
	struct thread *t = context->thread;
	return t ? thread_process(t) : NULL;
}

/* The process of the context's thread. */
static inline __attribute__((always_inline)) struct process *
monitor_context_process(const struct jp_context *context)
{
	if (monitor_context_is_current(context))
		return proc_current();
	return monitor_other_context_process(context);
}

/* A TSC timestamp of the context (not 0) as clock_ns() time. */
uint64_t monitor_tsc_to_ns(uint64_t tsc);

/* The program's name into the event's field in two words: a process's name
 * is NUL-padded to the end of its field (proc_name, proc_set_name), as the
 * kernel's is, so the two words carry nothing after the name's NUL, and a
 * longer name is cut to 15 characters by the last byte's NUL. */
_Static_assert(SCOPE_PROGRAM_NAME_MAX == 16 && PROC_NAME_MAX >= SCOPE_PROGRAM_NAME_MAX,
	       "the program's name is copied in two words");
extern const char monitor_kernel_name[SCOPE_PROGRAM_NAME_MAX];

static inline __attribute__((always_inline)) void monitor_copy_program_name(char *field,
									    const char *name)
{
	uint64_t first, second; /* in registers: an array would go through the stack */
	__builtin_memcpy(&first, name, sizeof first);
	__builtin_memcpy(&second, name + 8, sizeof second);
	second &= 0x00ffffffffffffffull;
	__builtin_memcpy(field, &first, sizeof first);
	__builtin_memcpy(field + 8, &second, sizeof second);
}

/* The join point's argc arguments into the event's field, the rest zeroed:
 * the field cleared, then one jump on argc into a run of straight copies (a
 * test of each argument's index costs four instructions an argument,
 * whatever argc is). */
_Static_assert(JP_MAX_ARGS == 6, "the copy names six arguments");
static inline __attribute__((always_inline)) void
monitor_copy_args(uint64_t *field, const uint64_t *args, unsigned argc)
{
#pragma GCC unroll 6
	for (unsigned i = 0; i < JP_MAX_ARGS; i++)
		field[i] = 0;
	switch (argc) {
	default: field[5] = args[5]; __attribute__((fallthrough));
	case 5: field[4] = args[4]; __attribute__((fallthrough));
	case 4: field[3] = args[3]; __attribute__((fallthrough));
	case 3: field[2] = args[2]; __attribute__((fallthrough));
	case 2: field[1] = args[1]; __attribute__((fallthrough));
	case 1: field[0] = args[0]; __attribute__((fallthrough));
	case 0: break;
	}
}

/* Fills the event of context, whose thread has id tid and belongs to
 * process p (NULL: the kernel); head from monitor_event_head with the
 * event's flags.  Every field is written (the message goes to another
 * process: nothing left over). */
static inline __attribute__((always_inline)) void
monitor_fill_event_of(struct scope_event *event, uint64_t head, const struct jp_context *context,
		      bool after, const struct process *p, int32_t tid)
{
	const struct joinpoint *jp = context->joinpoint;
	__builtin_memcpy(event, &head, sizeof head); /* aspect_id, advice_index, flags */
	event->pid = p ? proc_pid(p) : 0;
	event->tid = tid;
	event->cpu = context->cpu;
	event->argc = jp->argc;
	monitor_copy_args(event->args, context->args, jp->argc);
	event->ret = after ? context->ret : 0;
	event->entry_ns = context->entry_tsc ? monitor_tsc_to_ns(context->entry_tsc) : 0;
	event->exit_ns = after && context->exit_tsc ? monitor_tsc_to_ns(context->exit_tsc) : 0;
	event->activity = context->activity;
	event->joinpoint = jp_index(jp); /* SCOPE_JOINPOINT_NAME names it */
	event->reserved = 0;
	monitor_copy_program_name(event->program, p ? proc_name(p) : monitor_kernel_name);
}

/* Fills the event of context, of any thread (or none). */
static inline __attribute__((always_inline)) void
monitor_fill_event(struct scope_event *event, uint64_t head, const struct jp_context *context,
		   bool after)
{
	struct thread *t = context->thread;
	monitor_fill_event_of(event, head, context, after, monitor_context_process(context),
			      t ? (int32_t)thread_id(t) : 0);
}

#endif
