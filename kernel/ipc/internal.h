/*
 * The IPC module's own declarations: the endpoint, its message queue and the
 * calls waiting for a reply.  Nothing outside kernel/ipc/ includes this file.
 *
 * Everything in an endpoint changes under its lock (irqsave: one-way sends
 * come from any context).  Waiters sleep on `receivers` or `callers` with
 * conditions that read the fields without the endpoint lock; a waker changes
 * the fields under the lock first and wakes after dropping it.
 */
#ifndef KERNEL_IPC_INTERNAL_H
#define KERNEL_IPC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu/spinlock.h"
#include "ipc/ipc.h"
#include "sched/sched.h"

enum ipc_call_state {
	IPC_CALL_QUEUED, /* in the queue, not yet received */
	IPC_CALL_TAKEN,  /* received, waiting in `pending` for the reply */
	IPC_CALL_DONE,   /* replied to (result 0) or failed (result -EPIPE) */
};

/* A call in progress, on the caller's stack; the endpoint points at it from
 * a queue slot or a pending entry until it is done or withdrawn. */
struct ipc_call {
	struct ipc_message *reply; /* where the reply goes (kernel memory) */
	volatile int state;        /* enum ipc_call_state */
	int result;
	unsigned pending_index; /* while TAKEN */
};

struct ipc_slot {
	struct ipc_call *call; /* NULL: one-way (or a call withdrawn at its deadline) */
	struct ipc_message message;
};

struct ipc_endpoint {
	struct spinlock lock;
	int refs; /* atomic */
	volatile bool closed;
	unsigned capacity;
	unsigned head;              /* oldest queued slot */
	volatile unsigned count;    /* queued messages */
	unsigned calls_outstanding; /* queued calls + pending ones (at most IPC_QUEUE_MAX) */
	uint64_t next_token;
	struct ipc_call *pending[IPC_QUEUE_MAX];
	uint64_t pending_token[IPC_QUEUE_MAX];
	struct waitq receivers;
	struct waitq callers;
	struct ipc_stats stats;
	char name[IPC_NAME_MAX];
	struct ipc_slot slots[];
};

/* file.c: descriptor glue, used by the system calls. */
struct ipc_endpoint *ipc_file_endpoint(int fd, int *error);

#endif
