/*
 * Message passing: the OS's primitive for talking to another thread or
 * process.  An endpoint is a bounded queue of fixed-size messages with one
 * owner who receives from it; anybody holding it may send one-way (a full
 * queue drops the message and counts it: a sender never blocks) or call
 * (send, then wait for the owner's reply until a deadline; a caller that
 * may sleep hands its CPU straight to a receiver blocked in receive, and the
 * receiver's ipc_reply_receive hands it back).  The kernel uses
 * endpoints directly; a process reaches one through a file descriptor
 * (ms_ipc_* system calls), and when the last descriptor of an endpoint is
 * closed (the owner exits or crashes) the endpoint closes: queued and pending
 * calls fail with -EPIPE at once, so nothing waits on a dead peer.
 *
 *     struct ipc_endpoint *e = ipc_endpoint_create("monitor", 16);
 *     struct ipc_message m = {.label = 1}, r;
 *     int error = ipc_call(e, &m, &r, 5 * NSEC_PER_MSEC);   // 0, -ETIMEDOUT, -EPIPE
 *
 * The message layout, the limits and the system call contract, which user
 * space shares, are in uapi/ipc.h.
 */
#ifndef KERNEL_IPC_IPC_H
#define KERNEL_IPC_IPC_H

#include <stdint.h>

#include "uapi/ipc.h"

/* ---- Kernel API ------------------------------------------------------------ */

struct ipc_endpoint;
struct vfs_file;

/* ---- Endpoints ------------------------------------------------------------ */

/* Returns a new open endpoint holding one reference (the creator's) that
 * queues up to capacity messages (0: IPC_QUEUE_DEFAULT), or NULL when
 * capacity exceeds IPC_QUEUE_MAX or memory ran out.  name is copied. */
struct ipc_endpoint *ipc_endpoint_create(const char *name, unsigned capacity);
/* ipc_endpoint_create for a user's process: its bytes count against uid's
 * USER_KMEM_BYTES_MAX (proc_user_memory_charge) until it is freed.  Returns it, or NULL with *error
 * -EINVAL (capacity) or -ENOMEM (past the budget, or no memory). */
struct ipc_endpoint *ipc_endpoint_create_charged(const char *name, unsigned capacity, uint32_t uid,
						 int *error);
/* Where an endpoint's reference count lies (endpoint.c lays it out so and
 * checks it): every msg event and every monitor receive takes one and drops
 * it, in line. */
#define IPC_OFFSET_REFS 24
/* Takes a reference; returns endpoint. */
static inline struct ipc_endpoint *ipc_endpoint_get(struct ipc_endpoint *endpoint)
{
	__atomic_fetch_add((int *)((char *)endpoint + IPC_OFFSET_REFS), 1, __ATOMIC_RELAXED);
	return endpoint;
}
/* The last reference dropped: closes the endpoint and frees it. */
void ipc_endpoint_release(struct ipc_endpoint *endpoint);
/* Drops a reference (none for NULL); the last one frees the endpoint
 * (closing it first). */
static inline void ipc_endpoint_put(struct ipc_endpoint *endpoint)
{
	if (endpoint && __atomic_sub_fetch((int *)((char *)endpoint + IPC_OFFSET_REFS), 1,
					   __ATOMIC_ACQ_REL) == 0)
		ipc_endpoint_release(endpoint);
}
/* Closes the endpoint: queued one-way messages are dropped (counted as
 * peer_gone), queued and pending calls and waiting receivers return -EPIPE,
 * later sends and calls fail with -EPIPE.  Idempotent. */
void ipc_endpoint_close(struct ipc_endpoint *endpoint);
/* True once the endpoint was closed. */
int ipc_endpoint_is_closed(const struct ipc_endpoint *endpoint);
/* Copies the endpoint's counts into *stats. */
void ipc_get_stats(const struct ipc_endpoint *endpoint, struct ipc_stats *stats);

/* ---- Messages (join points ipc.send, ipc.call, ipc.receive, ipc.reply) ---- */

/* Queues a one-way message; never blocks (any context, interrupts too).
 * Returns 0, -EINVAL (length > IPC_PAYLOAD_MAX), -EAGAIN (queue full: dropped
 * and counted) or -EPIPE (closed). */
int ipc_send(struct ipc_endpoint *endpoint, const struct ipc_message *message);
/* Queues message and waits until the owner replies into *reply or
 * timeout_ns (IPC_FOREVER: no deadline) has passed.  A caller that may sleep
 * blocks, switching straight to a receiver blocked in receive; one that may
 * not (advice, a lock held, preemption off) spins, which only ends well when
 * the receiver runs on another CPU.  Returns 0, -EINVAL, -EAGAIN (queue
 * full), -EPIPE (closed, before or during the wait), -ETIMEDOUT (the call is
 * withdrawn: a late reply finds nothing), -EINTR (the calling process was
 * told to end) or -EDEADLK (the caller may not sleep and the endpoint's
 * receiver may only run on this CPU: nothing queued, counted in unserved). */
int ipc_call(struct ipc_endpoint *endpoint, const struct ipc_message *message,
	     struct ipc_message *reply, uint64_t timeout_ns);
/* Takes the oldest message into *message (token non-zero for a call, which
 * now waits for ipc_reply), waiting up to timeout_ns (0: do not wait) when
 * the queue is empty.  Returns 0, -ETIMEDOUT (nothing came; -EAGAIN for a
 * timeout of 0), -EPIPE (closed) or -EINTR. */
int ipc_receive(struct ipc_endpoint *endpoint, struct ipc_message *message, uint64_t timeout_ns);
/* Hands *message to the caller waiting on token and wakes it.  Returns 0,
 * -EINVAL (length too long) or -ENOENT (no such call: it timed out, its
 * endpoint closed, or the token was never issued). */
int ipc_reply(struct ipc_endpoint *endpoint, uint64_t token, const struct ipc_message *message);
/* A server's loop in one step: replies *reply to the call token names (none
 * when token is 0; a reply that finds no call is counted in late_replies and
 * otherwise ignored: that caller has its -ETIMEDOUT), then receives as
 * ipc_receive.  When it blocks, the CPU goes straight to the caller it just
 * answered.  Returns what ipc_receive returns, or -EINVAL (reply too long,
 * NULL arguments) with nothing done. */
int ipc_reply_receive(struct ipc_endpoint *endpoint, uint64_t token,
		      const struct ipc_message *reply, struct ipc_message *message,
		      uint64_t timeout_ns);
/* ipc_reply_receive (join point ipc.reply_words_receive) whose reply is
 * two words (label 0, words[0] = word0, words[1] = word1, the other words
 * 0, no payload), written straight into the caller's reply (seL4's answer
 * in registers: no message to copy).
 * Returns what ipc_reply_receive returns, or -EINVAL (NULL arguments).
 * The endpoint comes last: the monitor's system call (ms_scope_reply_receive)
 * passes its other arguments on in the registers they arrived in. */
int ipc_reply_words_receive(uint64_t token, uint64_t word0, uint64_t word1,
			    struct ipc_message *message, uint64_t timeout_ns,
			    struct ipc_endpoint *endpoint);

/* ---- Descriptors --------------------------------------------------------- */

/* The endpoint behind an open file, or NULL when file is not an endpoint. */
struct ipc_endpoint *ipc_endpoint_of_file(struct vfs_file *file);
/* The endpoint behind the calling process's descriptor fd, referenced (put
 * it), or NULL (-EBADF: no such descriptor, or not an endpoint). */
struct ipc_endpoint *ipc_endpoint_from_fd(int fd);
/* Installs a new descriptor for endpoint in the calling process (taking a
 * reference for it).  Returns the descriptor, -EMFILE, -ENOMEM or -ESRCH
 * (a kernel thread). */
int ipc_endpoint_install_fd(struct ipc_endpoint *endpoint);

#endif
