/*
 * librscfl: the calls that change what is accounted are system calls
 * (ms_acct*); reading is a copy from the page the kernel maps at
 * ACCT_USER_ADDRESS, retried while a result's sequence count is odd or moved
 * under the copy.  Application metrics live in the handle, in the process's
 * own memory: the page is the kernel's and read-only.  One handle per
 * process (its one thread), made on first rscfl_init, and made again in a
 * child after fork (microscope/process.h tells a parent's from its own).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <microscope/process.h>
#include <microscope/syscall.h>

#include "librscfl/librscfl.h"

#define READ_RETRIES 1000
#define E_INVAL      22
#define E_NOSPC      28
#define E_AGAIN      11
#define E_NOENT      2

static struct rscfl_state *self;

/* 0 when h is this process's handle; -EINVAL for none, -ENOENT for the one
 * a parent made before fork (the child has no such page mapped). */
static int check_handle(rscfl_handle h)
{
	if (!h)
		return -E_INVAL;
	return h->fork_depth == ms_fork_depth ? 0 : -E_NOENT;
}

rscfl_handle rscfl_init(void)
{
	if (self && self->fork_depth == ms_fork_depth)
		return self;
	long address = ms_syscall3(__NR_ms_acct_init, 0, 0, 0);
	if (address < 0 && address > -4096)
		return NULL;
	/* A parent's handle, copied by fork, becomes the child's: the pointer
	 * the program kept is then this process's too. */
	struct rscfl_state *h = self ? self : calloc(1, sizeof *h);
	if (!h)
		return NULL;
	memset(h, 0, sizeof *h);
	h->page = (const struct acct_page *)address;
	h->fork_depth = ms_fork_depth;
	self = h;
	return h;
}

static int valid_token(int token)
{
	return token >= 1 && token <= ACCT_MAX_TOKENS;
}

int rscfl_get_token(rscfl_handle h)
{
	int bad = check_handle(h);
	if (bad)
		return bad;
	long token = ms_syscall3(__NR_ms_acct_get_token, 0, 0, 0);
	if (token > 0)
		h->metrics[token - 1].count = 0;
	return (int)token;
}

int rscfl_free_token(rscfl_handle h, int token)
{
	int bad = check_handle(h);
	if (bad)
		return bad;
	return (int)ms_syscall3(__NR_ms_acct_free_token, token, 0, 0);
}

int rscfl_acct(rscfl_handle h, int token, unsigned flags)
{
	int bad = check_handle(h);
	if (bad)
		return bad;
	int result = (int)ms_syscall3(__NR_ms_acct, token, flags, 0);
	if (result == 0 && (flags & ACCT_TK_RESET))
		h->metrics[token - 1].count = 0;
	return result;
}

int rscfl_switch_token(rscfl_handle h, int token)
{
	int bad = check_handle(h);
	if (bad)
		return bad;
	return (int)ms_syscall3(__NR_ms_acct_switch_token, token, 0, 0);
}

/* The bytes of r a reader wants: all of it, or (used_only) the fields
 * before the subsystems and as many slots as its subsystem_count says,
 * bounded. */
static void copy_once(const struct acct_result *r, struct acct_result *out, bool used_only)
{
	if (!used_only) {
		memcpy(out, (const void *)r, sizeof *out);
		return;
	}
	memcpy(out, (const void *)r, offsetof(struct acct_result, subsystems));
	unsigned used = out->subsystem_count;
	if (used > ACCT_MAX_SUBSYSTEMS)
		used = ACCT_MAX_SUBSYSTEMS;
	memcpy(out->subsystems, r->subsystems, used * sizeof r->subsystems[0]);
}

/* Copies r, retried while its sequence count is odd or moved under the
 * copy.  Returns 0 or -EAGAIN. */
static int copy_result(const struct acct_result *r, struct acct_result *out, bool used_only)
{
	for (int i = 0; i < READ_RETRIES; i++) {
		uint32_t before = __atomic_load_n(&r->sequence, __ATOMIC_ACQUIRE);
		if (before & 1)
			continue;
		copy_once(r, out, used_only);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&r->sequence, __ATOMIC_RELAXED) == before)
			return 0;
	}
	return -E_AGAIN;
}

/* A token's result and metrics into acct: all of them, or (used_only) the
 * subsystems and metrics in use, the slots past them left as they were. */
static int read_token(rscfl_handle h, int token, struct rscfl_acct *acct, bool used_only)
{
	if (!acct || !valid_token(token))
		return -E_INVAL;
	int bad = check_handle(h);
	if (bad)
		return bad;
	const struct acct_result *r = &h->page->results[token - 1];
	if (r->state == ACCT_TOKEN_FREE)
		return -E_INVAL;
	int result = copy_result(r, &acct->kernel, used_only);
	if (result < 0)
		return result;
	const struct rscfl_acct_metrics *m = &h->metrics[token - 1];
	acct->metric_count = m->count;
	unsigned metrics = used_only ? m->count : RSCFL_MAX_METRICS;
	for (unsigned i = 0; i < metrics && i < RSCFL_MAX_METRICS; i++)
		acct->metrics[i] = m->metrics[i];
	return 0;
}

int rscfl_read_acct(rscfl_handle h, int token, struct rscfl_acct *acct)
{
	return read_token(h, token, acct, false);
}

int rscfl_read_acct_used(rscfl_handle h, int token, struct rscfl_acct *acct)
{
	return read_token(h, token, acct, true);
}

int rscfl_read_unattributed(rscfl_handle h, struct rscfl_acct *acct)
{
	if (!acct)
		return -E_INVAL;
	int bad = check_handle(h);
	if (bad)
		return bad;
	int result = copy_result(&h->page->unattributed, &acct->kernel, false);
	acct->metric_count = 0;
	return result;
}

int rscfl_store_metric(rscfl_handle h, int token, const char *name, int64_t value)
{
	int bad = check_handle(h);
	if (bad)
		return bad;
	if (!name || !valid_token(token) || h->page->results[token - 1].state == ACCT_TOKEN_FREE)
		return -E_INVAL;
	struct rscfl_acct_metrics *m = &h->metrics[token - 1];
	unsigned i;
	for (i = 0; i < m->count; i++)
		if (strncmp(m->metrics[i].name, name, RSCFL_METRIC_NAME - 1) == 0)
			break;
	if (i == RSCFL_MAX_METRICS)
		return -E_NOSPC;
	if (i == m->count) {
		/* strncpy's copy, without its padding loop: zeroed first */
		memset(&m->metrics[i], 0, sizeof m->metrics[i]);
		for (unsigned c = 0; c < RSCFL_METRIC_NAME - 1 && name[c]; c++)
			m->metrics[i].name[c] = name[c];
		m->count++;
	}
	m->metrics[i].value = value;
	return 0;
}

int rscfl_store_metrics(rscfl_handle h, int token, const struct rscfl_metric *metrics,
			unsigned count)
{
	int bad = check_handle(h);
	if (bad)
		return bad;
	if ((!metrics && count) || !valid_token(token) ||
	    h->page->results[token - 1].state == ACCT_TOKEN_FREE)
		return -E_INVAL;
	if (count > RSCFL_MAX_METRICS)
		return -E_NOSPC;
	struct rscfl_acct_metrics *m = &h->metrics[token - 1];
	for (unsigned i = 0; i < count; i++) {
		m->metrics[i] = metrics[i];
		m->metrics[i].name[RSCFL_METRIC_NAME - 1] = 0;
	}
	m->count = count;
	return 0;
}
