/*
 * The runtime linker: loads aspects (relocatable objects built against
 * aspects/include/microscope/aspect.h) while the system runs, binds them to
 * join points and unbinds them.  How an aspect is bound is chosen when it is
 * linked and may be changed while it runs: `direct` (advice called in the
 * kernel), `shm` (a monitor process fed by per-CPU rings) or `msg` (a monitor
 * process reached by kernel IPC).  Counters survive relinks.
 *
 *     struct aspect *a;  char error[LINKER_ERROR_MAX];
 *     int err = linker_load(image, size, &a, error, sizeof error);   // LOADED
 *     if (!err) err = aspect_link(a, ASPECT_BINDING_DIRECT);          // LIVE
 *     ...
 *     aspect_put(a);      // the caller's reference; the table keeps its own
 *
 * States: LOADING -> LOADED -> LIVE -> UNLINKING -> GONE.  A LOADED aspect is
 * linked in the kernel but has no advice woven; LIVE has.  aspect_unlink takes
 * a LIVE aspect back to LOADED, waiting for a grace period; aspect_unload frees
 * a LOADED one (GONE).  A faulting or overrunning `direct` advice, and a
 * monitor that dies or misses a deadline, unlink the aspect by themselves
 * (reported on the console; aspect_get_stats says why).
 *
 * Every control function may sleep (kernel thread context only) and is
 * serialised by one mutex.  A pointer from a lookup or a load is a reference
 * (aspect_put gives it back): its memory stays valid while held, so a caller
 * racing another's aspect_unload gets an error, never freed memory.
 */
#ifndef LINKER_LINKER_H
#define LINKER_LINKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jp_advice;

#define LINKER_ERROR_MAX 160 /* a message buffer that always fits */
#define ASPECT_MAX       32  /* aspects loaded at once */

struct aspect;

enum aspect_binding {
	ASPECT_BINDING_NONE = 0,
	ASPECT_BINDING_DIRECT,
	ASPECT_BINDING_SHM,
	ASPECT_BINDING_MSG,
	ASPECT_BINDING_COUNT,
};

enum aspect_state {
	ASPECT_LOADING,
	ASPECT_LOADED,
	ASPECT_LIVE,
	ASPECT_UNLINKING,
	ASPECT_GONE,
};

struct aspect_stats {
	char name[32];
	char description[128];
	enum aspect_state state;
	enum aspect_binding binding; /* NONE unless LIVE */
	uint64_t events;             /* advice runs, every binding */
	uint64_t drops;              /* events lost (ring full, send failed) */
	uint64_t time_ns;            /* spent in advice (direct) or delivering (shm/msg) */
	uint64_t faults;             /* times unlinked for a fault, overrun or dead monitor */
	unsigned advice;             /* pieces of advice in the object */
	unsigned weaves;             /* join points woven right now */
	char last_failure[128];      /* "" when none */
};

/* A kernel service's own advice for the built-in aspect of a reserved name
 * (rscfl: kernel/acct's accounting).  While that aspect is linked `direct`,
 * advice is woven on pattern as well as the object's own advice, and the
 * join point calls it without the guard (it is kernel code, trusted as the
 * rest is, and never unloaded); events() is added to the aspect's event
 * count.  An aspect with native advice links direct only.  Any context
 * that may sleep. */
struct linker_native_advice {
	const char *aspect;             /* a reserved name */
	const char *pattern;            /* join points, as an advice's pattern */
	const struct jp_advice *advice; /* lives for ever */
	uint64_t (*events)(void);       /* events its advice handled so far */
};
/* Registers native (kept by pointer).  Returns 0, -EINVAL (a field NULL, the
 * name not reserved) or -EEXIST (that aspect has one already). */
int linker_set_native_advice(const struct linker_native_advice *native);

/* Validates and links image (an ET_REL object of size bytes; copied) in the
 * kernel and runs nothing yet.  On success *aspect is LOADED and referenced
 * for the caller (aspect_put).  Returns 0, or
 * with a message in error (error_size bytes, may be NULL):
 *   -ENOEXEC  not a valid aspect object (the message names the problem)
 *   -ENOENT   an undefined symbol outside the aspect ABI
 *   -ERANGE   a relocation overflowed
 *   -EEXIST   an aspect with that name is loaded
 *   -ENOSPC   ASPECT_MAX aspects are loaded
 *   -ENOMEM */
int linker_load(const void *image, size_t size, struct aspect **aspect, char *error,
		size_t error_size);
/* Reads path from the VFS and linker_load()s it.  Same returns, plus the VFS's
 * errors (-ENOENT: no such file), -EFBIG (larger than 4 MiB) and -EPERM (the
 * object's name is reserved for a kernel aspect: rscfl). */
int linker_load_file(const char *path, struct aspect **aspect, char *error, size_t error_size);
/* linker_load()s the object the kernel embeds for aspects/<name>.c.  Same
 * returns, plus -ENOENT (no such object). */
int linker_load_builtin(const char *name, struct aspect **aspect, char *error, size_t error_size);
/* Runs the aspect's init (first link only) and weaves its advice with binding.
 * Returns 0, -EINVAL (not LOADED, or binding invalid), -ENOSYS (binding not
 * built in), -ECANCELED (init returned non-zero or faulted), the weaving
 * error (-ENOENT: a pattern matches no join point), -EPERM (shm or msg for an
 * aspect that calls the accounting ABI, which links direct only), or the
 * binding's. */
int aspect_link(struct aspect *aspect, enum aspect_binding binding);
/* How long aspect's advice may run in one call before the guard contains it
 * (wall-clock nanoseconds; the default is aspect_budget_us's).  Tests of
 * correct advice on a loaded host give it seconds.  Returns 0, or -EINVAL
 * for 0. */
int aspect_set_budget(struct aspect *aspect, uint64_t budget_ns);
/* Switches a LIVE aspect to another binding without reloading it: the new
 * binding is woven first, then one store makes it the active one, then the old
 * one is unwoven, so every event runs exactly one binding.  Returns 0 (also
 * when binding is the current one), -EINVAL, -ENOSYS, or the new binding's
 * error with the old binding kept. */
int aspect_relink(struct aspect *aspect, enum aspect_binding binding);
/* Unweaves a LIVE aspect and waits for a grace period: when it returns no
 * advice of it runs anywhere.  It is LOADED again (counters kept).  Returns 0
 * or -EINVAL (not LIVE). */
int aspect_unlink(struct aspect *aspect);
/* Unlinks if needed, runs the aspect's exit and takes it out of the table
 * (GONE); it is freed when the last reference goes (aspect_put).  Returns 0,
 * -EBUSY (a binding still uses it) or -ENOENT (already unloaded). */
int aspect_unload(struct aspect *aspect);
/* Registers the one function told, under the linker's lock, each time an
 * aspect is unlinked (by hand, by unload, or after a fault): accounting
 * hears that its aspect went.  The observer may not call the linker. */
void aspect_set_unlink_observer(void (*observer)(const char *name));
/* Returns the aspect called name with a reference the caller gives back with
 * aspect_put, or NULL.  The reference keeps the memory, not the aspect: once
 * it is unloaded (maybe by another thread) every call on it fails or reads
 * its last state. */
struct aspect *aspect_find(const char *name);
/* Gives back a reference from aspect_find or linker_load*; the last one frees
 * an unloaded aspect.  NULL is ignored. */
void aspect_put(struct aspect *aspect);
/* Calls fn for every loaded aspect, in load order, until it returns non-zero;
 * returns that value or 0.  Each aspect is referenced while fn runs. */
int aspect_for_each(int (*fn)(struct aspect *aspect, void *arg), void *arg);
/* Fills *stats.  Returns 0 or -EINVAL (NULL). */
int aspect_get_stats(struct aspect *aspect, struct aspect_stats *stats);
/* Returns the counter called name in the aspect's store (0 when absent);
 * counts from monitor processes are merged in first. */
int64_t aspect_counter_value(struct aspect *aspect, const char *name);
/* True when the aspect has a counter or a histogram called name. */
bool aspect_has_counter(struct aspect *aspect, const char *name);
/* Returns the number of values recorded in histogram name, 0 when absent. */
uint64_t aspect_histogram_count(struct aspect *aspect, const char *name);
/* Whose counters aspect_copy_counters copied: a loaded aspect's (state
 * LIVE with its binding, or LOADED: not linked, its last values), or an
 * unloaded one's last values (state GONE). */
struct aspect_counters_owner {
	enum aspect_state state;
	enum aspect_binding binding;
};
/* Copies the counters and histograms of the aspect called name (collected
 * from its monitor first when live), or the last ones of an unloaded aspect
 * of that name, into *out.  Returns 0 or -ENOENT. */
struct linker_counters;
int aspect_copy_counters(const char *name, struct linker_counters *out,
			 struct aspect_counters_owner *owner);
/* Forgets the values of aspect name: zeroes them when it is loaded and not
 * linked, drops the last values of an unloaded one.  Returns 0, -EBUSY
 * (linked: its advice adds to them) or -ENOENT. */
int aspect_clear_counters(const char *name);

/* "direct", "shm", "msg", "none". */
const char *aspect_binding_name(enum aspect_binding binding);
/* Parses "direct" | "shm" | "msg".  Returns the binding or ASPECT_BINDING_NONE. */
enum aspect_binding aspect_binding_parse(const char *name);
/* "loading", "loaded", "live", "unlinking", "gone". */
const char *aspect_state_name(enum aspect_state state);

/* ---- Replies to a join point's owner, and device counters ----------------- */

struct joinpoint;

/* An advice's ms_reply, kept for the join point's owner under (joinpoint,
 * key), key being the join point's first argument; a newer reply replaces
 * one not taken yet.  Any context.  Returns 0, -EINVAL (joinpoint NULL) or
 * -ENOSPC (every slot holds a reply nobody took: dropped). */
int aspect_reply_post(const struct joinpoint *joinpoint, uint64_t key, int64_t value);
/* For the owner, after calling joinpoint with first argument key: takes the
 * reply waiting there.  Returns 1 with *value, or 0 (none).  Any context. */
int aspect_reply_take(const struct joinpoint *joinpoint, uint64_t key, int64_t *value);
/* True when a reply waits under (joinpoint, key), without taking it. */
bool aspect_reply_waiting(const struct joinpoint *joinpoint, uint64_t key);

/* The pid of the monitor process attached for shm and msg, or 0 (none). */
int linker_monitor_pid(void);
/* How many times a monitor has asked for its next message
 * (ms_scope_reply_receive): each is a return to its loop in user space. */
uint64_t linker_monitor_receives(void);

/* Where ms_device_counter finds the counters of devices the linker cannot
 * see (NICs: drivers/net registers one).  fn runs in any context, also inside
 * `direct` advice: it must not sleep.  Returns 0 with *value, or -ENOENT. */
typedef int (*linker_device_source_fn)(const char *device, const char *counter, uint64_t *value);
void linker_set_device_source(linker_device_source_fn fn);
int linker_device_source_read(const char *device, const char *counter, uint64_t *value);

/* ---- The direct binding's advice context, for services implementing ABI -- */

struct jp_context;
struct ms_ctx;

/* What a `direct` advice's struct ms_ctx points to: the join point's context
 * (NULL in an aspect's init and exit) and the TSC reading the guard took as the
 * advice began.  Kernel services that implement part of the aspect ABI
 * (kernel/acct/abi.c) read it here instead of reaching into the guard. */
struct linker_advice_frame {
	struct jp_context *context;
	uint64_t start_tsc;
};

/* The frame ctx points to, or NULL when ctx is not the context of the advice
 * running on this CPU (a bad pointer an aspect passed: never dereferenced). */
const struct linker_advice_frame *linker_advice_frame(const struct ms_ctx *ctx);

#endif
