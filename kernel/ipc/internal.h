/*
 * The IPC module's own declarations: the endpoint, its message queue and the
 * calls waiting for a reply.  Nothing outside kernel/ipc/ includes this file.
 *
 * Everything in an endpoint changes under its lock (irqsave: one-way sends
 * come from any context).  The endpoint keeps its own waiters instead of
 * wait queues, so that a call can hand the CPU to the very receiver it
 * wakes: receivers blocked in receive are on `receivers` (records on their
 * stacks), a caller blocked for its reply is named by its struct ipc_call.
 * A waiter marks itself about to block (sched_prepare_block) under the lock;
 * a waker changes the state and wakes it under the lock too, so the waiter's
 * thread is still there and no wake-up is lost.
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
 * a queue slot or a pending entry until it is done or withdrawn.  Its state
 * is set where it is queued or delivered, and its waiter on every path
 * before the endpoint lock is first dropped after that. */
struct ipc_call {
	struct ipc_message *reply; /* where the reply goes (kernel memory) */
	volatile int state;        /* enum ipc_call_state */
	int result;
	struct thread *waiter; /* blocked for the reply; NULL: it spins */
};

/* A thread blocked (or polling) in receive, on its stack, while on
 * `receivers`.  A call that finds the queue empty and a receiver waiting
 * delivers itself straight into the receiver's buffer (no queue slot) and
 * takes it off the list. */
struct ipc_receiver {
	struct ipc_receiver *next;
	struct thread *thread;
	struct ipc_message *buffer; /* where a delivered call goes (kernel memory) */
	struct thread *wake;        /* woken or handed the CPU by a delivery; NULL: it polls */
	volatile int delivered;     /* 1 once a call is in buffer (written last) */
};

struct ipc_slot {
	struct ipc_call *call; /* NULL: one-way (or a call withdrawn at its deadline) */
	struct ipc_message message;
};

struct ipc_endpoint {
	struct spinlock lock; /* first: the lock is the endpoint's address */
	int refs;             /* atomic; at IPC_OFFSET_REFS (ipc.h takes and drops them in line) */
	volatile bool closed;
	unsigned capacity;
	unsigned head;              /* oldest queued slot */
	volatile unsigned count;    /* queued messages */
	unsigned calls_outstanding; /* queued calls + pending ones (at most IPC_QUEUE_MAX) */
	uint64_t next_token;
	struct ipc_call *pending[IPC_QUEUE_MAX];
	uint64_t pending_token[IPC_QUEUE_MAX];
	struct ipc_receiver *receivers; /* blocked in receive, most recent first */
	uint64_t receiver_cpus;         /* where the last receiver may run (0: none yet) */
	int last_caller_cpu;            /* where the last call was queued from (-1: none) */
	struct ipc_stats stats;
	char name[IPC_NAME_MAX];
	uint32_t charged_uid;   /* the user its memory is charged to (proc_user_memory_charge) */
	uint64_t charged_bytes; /* 0: charged to nobody (the kernel's, root's) */
	struct ipc_slot slots[];
};

/* file.c: descriptor glue, used by the system calls.  The endpoint behind
 * the calling process's descriptor fd, kept alive by the open file in *file
 * (a reference: vfs_file_put it), or NULL with *error -EBADF. */
struct ipc_endpoint *ipc_file_endpoint(int fd, struct vfs_file **file, int *error);

#endif
