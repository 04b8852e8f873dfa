/*
 * librscfl: per-activity accounting for applications, in the shape of
 * Resourceful's API.  A thread gets a handle, allocates tokens (one per
 * activity: a request, a query), marks where each starts and stops, and reads
 * what the kernel spent on it per subsystem straight from a page the kernel
 * maps read-only into the process (no system call; see acct/acct.h for every
 * field and its unit).  Application metrics are kept beside the kernel's.
 *
 *     rscfl_handle h = rscfl_init();  int token = rscfl_get_token(h);
 *     rscfl_acct(h, token, ACCT_START); serve(request); rscfl_acct(h, token, ACCT_STOP);
 *     struct rscfl_acct a; rscfl_read_acct(h, token, &a);   // a.kernel.cpu_ns ...
 *
 * Errors are negative Linux errno values (the kernel's: -22 EINVAL, -28
 * ENOSPC, -114 EALREADY, -2 ENOENT), not newlib's errno.
 */
#ifndef USERLAND_LIBRSCFL_LIBRSCFL_H
#define USERLAND_LIBRSCFL_LIBRSCFL_H

#include <stdint.h>

#define ACCT_USER_ONLY
#include "acct/acct.h"

#define RSCFL_MAX_METRICS 4 /* application metrics per token */
#define RSCFL_METRIC_NAME 16

struct rscfl_metric {
	char name[RSCFL_METRIC_NAME];
	int64_t value;
};

/* One activity's results: the kernel's, then the application's own. */
struct rscfl_acct {
	struct acct_result kernel;
	unsigned metric_count;
	struct rscfl_metric metrics[RSCFL_MAX_METRICS];
};

struct rscfl_state {
	const struct acct_page *page; /* the kernel's results, read-only */
	struct rscfl_acct_metrics {
		unsigned count;
		struct rscfl_metric metrics[RSCFL_MAX_METRICS];
	} metrics[ACCT_MAX_TOKENS];
};
typedef struct rscfl_state *rscfl_handle;

/* The calling thread's handle (the same one on every call), or NULL when the
 * kernel refuses (no memory, every accounting state in use). */
rscfl_handle rscfl_init(void);
/* Returns a new token (> 0), or -ENOSPC (all ACCT_MAX_TOKENS in use),
 * -EINVAL (h is NULL), -ENOENT (h is not this thread's). */
int rscfl_get_token(rscfl_handle h);
/* Frees token, stopping it.  Returns 0, -EINVAL (unknown token), -ENOENT. */
int rscfl_free_token(rscfl_handle h, int token);
/* ACCT_START, ACCT_STOP, ACCT_NEXT, optionally | ACCT_TK_RESET (or alone).
 * Returns 0, -EINVAL (unknown token, bad flags, STOP without START),
 * -EALREADY (START of a started token), -ENOENT. */
int rscfl_acct(rscfl_handle h, int token, unsigned flags);
/* Makes the started token current (event loops serving requests in stages);
 * the current one is suspended.  Returns 0, -EINVAL, -ENOENT. */
int rscfl_switch_token(rscfl_handle h, int token);
/* Copies token's results into *acct, consistently, without a system call.
 * Returns 0, -EINVAL (h or acct NULL, unknown token), -EAGAIN (the kernel
 * kept writing). */
int rscfl_read_acct(rscfl_handle h, int token, struct rscfl_acct *acct);
/* Stores an application metric beside token's results (same name: replaced).
 * Returns 0, -EINVAL (unknown token, name NULL), -ENOSPC (RSCFL_MAX_METRICS). */
int rscfl_store_metric(rscfl_handle h, int token, const char *name, int64_t value);

/* The subsystem named name in acct, or NULL. */
const struct acct_subsystem *rscfl_find_subsystem(const struct rscfl_acct *acct, const char *name);

#endif
