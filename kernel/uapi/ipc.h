/*
 * Message passing as user space sees it: the message layout, the limits, the
 * endpoint statistics and the ms_ipc_* system-call contract (kernel/ipc/ipc.h
 * is the kernel side).  Plain declarations; user space includes this header.
 */
#ifndef UAPI_IPC_H
#define UAPI_IPC_H

#include <stdint.h>

#define IPC_WORDS         6   /* inline 64-bit words of a message */
#define IPC_PAYLOAD_MAX   256 /* optional bytes after them */
#define IPC_QUEUE_MAX     64  /* messages one endpoint may queue */
#define IPC_QUEUE_DEFAULT 16
#define IPC_NAME_MAX      24
#define IPC_FOREVER       UINT64_MAX /* a timeout that never ends */

/* One message.  label and words are the protocol's own; payload carries
 * length more bytes.  token and sender are filled in by the kernel on
 * receive: sender is the sending process's pid (0: the kernel), token is
 * non-zero for a call and goes back with ipc_reply.  Only the header and
 * length payload bytes are copied. */
struct ipc_message {
	uint64_t label;
	uint64_t words[IPC_WORDS];
	uint64_t token;
	uint32_t sender;
	uint32_t length; /* bytes of payload used, at most IPC_PAYLOAD_MAX */
	uint8_t payload[IPC_PAYLOAD_MAX];
};
#define IPC_HEADER_SIZE ((unsigned long)&((struct ipc_message *)0)->payload)

/* Counts of one endpoint since it was created. */
struct ipc_stats {
	uint64_t sent;         /* one-way messages queued */
	uint64_t calls;        /* calls queued */
	uint64_t received;     /* messages taken by the owner */
	uint64_t replies;      /* replies delivered to a waiting caller */
	uint64_t dropped;      /* one-way messages refused: queue full (-EAGAIN) */
	uint64_t timeouts;     /* calls that ended at their deadline */
	uint64_t peer_gone;    /* sends and calls refused or ended: endpoint closed */
	uint32_t queued;       /* messages waiting right now */
	uint32_t closed;       /* 1 once closed */
	uint64_t unserved;     /* calls refused (-EDEADLK): the caller may not sleep
			     * and the receiver may run on the caller's CPU only */
	uint64_t late_replies; /* replies that found no call (it timed out) */
	uint64_t delivered;    /* calls put straight into the buffer of a receiver
				* blocked in receive (the queue was empty) */
};

/* ---- System calls (microScope's numbers, uapi/syscall_numbers.h) --------------
 * ms_ipc_create(capacity)                    → fd of a new endpoint (0: default),
 *                                              -EINVAL, -EMFILE, -ENOMEM (also past
 *                                              USER_KMEM_BYTES_MAX, uapi/proc.h,
 *                                              for a user but root)
 * ms_ipc_send(fd, message)                   → 0, -EAGAIN, -EPIPE, -EFAULT, -EINVAL
 * ms_ipc_call(fd, message, reply, timeout)   → 0, -ETIMEDOUT, -EPIPE, -EINTR, ...
 * ms_ipc_receive(fd, message, timeout)       → 0, -ETIMEDOUT, -EPIPE, -EINTR, ...
 * ms_ipc_reply(fd, token, message)           → 0, -ENOENT (no such call: it timed out)
 * ms_ipc_reply_receive(fd, token, reply, message, timeout)
 *                                            → as ms_ipc_receive; replies first when
 *                                              token is not 0 (a late reply is counted)
 * ms_ipc_stats(fd, struct ipc_stats *)       → 0, -EBADF, -EFAULT
 * A descriptor that is not an endpoint gives -EBADF. */

#endif
