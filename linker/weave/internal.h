/*
 * Inside the runtime linker: the aspect record, the binding interface and the
 * guarded call.  Only linker/ includes this (bind_shm.c and bind_msg.c are
 * bindings written against struct binding_ops below).
 */
#ifndef LINKER_INTERNAL_H
#define LINKER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "joinpoint/joinpoint.h"
#include "linker/object/object.h"
#include "linker/weave/weave.h"

/* Aspect code and data live in their own kernel virtual area, in slots of
 * LINKER_SLOT_SIZE (one region each, an unmapped gap after it), so a fault
 * address finds its aspect with one division.  Above the kernel stacks
 * (mm/mm.h: VM_KSTACK_BASE + 16384 slots of 256 KiB ends at 0xffffc801...). */
#define LINKER_VM_BASE   0xffffd00000000000UL
#define LINKER_SLOT_SIZE (8UL << 20)
#define LINKER_SLOTS     (2 * ASPECT_MAX)

/* Time an advice may run under `direct` before the tick aborts it (the
 * kernel parameter aspect_budget_us= changes it).  10 ms: long enough that
 * an emulated CPU translating the advice's code for the first time, or
 * descheduled by a loaded host, is not taken for advice that spins; short
 * enough that a spinning one is gone within a few ticks. */
#define LINKER_DEFAULT_BUDGET_NS 10000000ULL

#define ASPECT_MAX_WEAVES 64 /* jp_attach handles one aspect may hold */

/* One jp_attach made for an aspect: the dependency edge that keeps the
 * aspect's code alive while any join point may call into it. */
struct aspect_weave {
	int handle; /* from jp_attach, > 0 */
	enum aspect_binding binding;
	unsigned advice_index;
};

struct aspect {
	char name[LINKER_NAME_MAX];
	char description[LINKER_TEXT_MAX];
	enum aspect_state state;     /* changed under the control mutex */
	enum aspect_binding active;  /* whose advice runs; atomic, NONE when none */
	enum aspect_binding binding; /* the binding it is linked with (LIVE) */
	bool initialized;            /* ms_init ran */
	bool woven[ASPECT_BINDING_COUNT];
	void *binding_state[ASPECT_BINDING_COUNT]; /* each binding's own */

	uint8_t *image; /* a copy of the object file (monitors link it again) */
	size_t image_size;
	struct linker_object object; /* regions, metadata; object.image == image */
	int slot[LINKER_REGION_COUNT];

	struct aspect_weave weaves[ASPECT_MAX_WEAVES];
	unsigned weave_count;

	struct linker_counters *counters;                  /* kept across relinks */
	uint64_t events, drops, time_tsc, time_ns, faults; /* atomics */
	uint64_t emitted;
	uint64_t budget_ns;
	int failure_pending; /* atomic: the reaper unlinks it */
	char last_failure[128];
	unsigned refs; /* atomic: the table's, and one per aspect_find or load caller */
};

/* ---- Bindings ---------------------------------------------------------------
 * A binding weaves an aspect's advice into join points in its own way.  attach
 * is called with the aspect LOADED or LIVE under another binding and must
 * weave every advice through aspect_weave_advice (so the weave is recorded);
 * its advice must run only while aspect_is_active(aspect, its binding).
 * detach is called after another binding became active (or none): it unweaves
 * (aspect_unweave_binding waits for the grace period) and merges counts it
 * kept elsewhere into aspect->counters.  collect, when not NULL, merges counts
 * for stats while live.  All three run in thread context under the control
 * mutex and may sleep. */
struct binding_ops {
	enum aspect_binding binding;
	const char *name;
	int (*attach)(struct aspect *aspect);
	void (*detach)(struct aspect *aspect);
	void (*collect)(struct aspect *aspect);
};

extern const struct binding_ops binding_direct_ops;
/* Weak: present when the shm and msg bindings are built in. */
extern const struct binding_ops binding_shm_ops __attribute__((weak));
extern const struct binding_ops binding_msg_ops __attribute__((weak));

/* True while binding is the one whose advice runs.  Any context. */
static inline bool aspect_is_active(const struct aspect *aspect, enum aspect_binding binding)
{
	return __atomic_load_n(&aspect->active, __ATOMIC_ACQUIRE) == binding;
}

/* jp_attach(advice->pattern-from-index, jp) recorded as a weave of binding.
 * jp must stay valid until aspect_unweave_binding.  Returns jp_attach's
 * errors, or -ENOSPC (ASPECT_MAX_WEAVES). */
int aspect_weave_advice(struct aspect *aspect, enum aspect_binding binding, unsigned advice_index,
			const struct jp_advice *jp);
/* jp_attach(pattern, jp) recorded the same way, for native advice (weave.h):
 * advice_index is the object's advice count, past its own. */
int aspect_weave_native(struct aspect *aspect, enum aspect_binding binding, const char *pattern,
			const struct jp_advice *jp);
/* The native advice registered for an aspect called name, or NULL. */
const struct linker_native_advice *linker_native_for(const char *name);
/* Detaches every weave of binding; a grace period has passed on return. */
void aspect_unweave_binding(struct aspect *aspect, enum aspect_binding binding);

/* Counting, from any context.  In line: it is on every event of every
 * binding. */
static inline void aspect_count_event(struct aspect *aspect, uint64_t tsc_spent)
{
	__atomic_fetch_add(&aspect->events, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&aspect->time_tsc, tsc_spent, __ATOMIC_RELAXED);
}
void aspect_count_drop(struct aspect *aspect);
/* Stops the aspect's advice at once and has the linker's thread unlink it
 * soon; reason is printed and kept in last_failure.  Any context, including
 * advice and interrupts.  Only the first report of a failure counts. */
void aspect_report_failure(struct aspect *aspect, const char *reason);
/* For an ABI function about to write length bytes at address on behalf of
 * the advice running on this CPU, called by that function itself (its frame
 * is found from the caller's frame pointer): true when the range lies in the
 * aspect's data or in the advice's frames on this stack (above the ABI
 * function's), or when no advice runs on
 * this CPU (the kernel calls the function for a monitor's system call).  Otherwise (the kernel would
 * write where the aspect may not) the aspect is reported, and so unlinked,
 * and the caller must refuse. */
bool linker_may_write_for_aspect(const void *address, size_t length, const char *what);

/* The aspect ABI's string functions as `direct` advice gets them: the
 * destination checked as above, the bytes moved by guard.S's loops, whose
 * faults abort the advice like a fault in its own text.  Same results as
 * the C library's (a refused write writes nothing). */
void *linker_aspect_memcpy(void *dst, const void *src, size_t n);
void *linker_aspect_memmove(void *dst, const void *src, size_t n);
void *linker_aspect_memset(void *dst, int c, size_t n);
int linker_aspect_memcmp(const void *a, const void *b, size_t n);
/* guard.S: the loops, and the bounds of their code. */
void linker_string_copy(void *dst, const void *src, size_t n);
void linker_string_copy_back(void *dst, const void *src, size_t n);
void linker_string_fill(void *dst, int c, size_t n);
int linker_string_compare(const void *a, const void *b, size_t n);
extern const char linker_string_start[], linker_string_end[];

/* The binding table: ops for binding, or NULL when not built in. */
const struct binding_ops *linker_binding_ops(enum aspect_binding binding);
/* Weaves binding, inactive.  Returns 0, -EINVAL, -ENOSYS, -EBUSY (woven
 * already) or the binding's attach error. */
int linker_bind(struct aspect *aspect, enum aspect_binding binding);
/* Unweaves a binding that is not the active one. */
void linker_unbind(struct aspect *aspect, enum aspect_binding binding);
/* Makes `to` (woven) the active binding, then unbinds `from` (unless NONE). */
void linker_switch_binding(struct aspect *aspect, enum aspect_binding from, enum aspect_binding to);
/* One reference more, for a caller who knows the aspect is alive meanwhile:
 * under the control mutex (the table holds one), or through a structure
 * cleared under its own lock before the aspect can be unloaded (a monitor's
 * id).  NULL stays NULL. */
struct aspect *aspect_get(struct aspect *aspect);

/* Lets every woven binding merge what it counted elsewhere (control mutex
 * held). */
void linker_collect(struct aspect *aspect);

/* ---- Kernel memory for aspects (memory.c) --------------------------------- */

/* The linker_env the kernel links with (regions in aspect slots). */
const struct linker_env *linker_kernel_env(void);
/* After relocation: text becomes read-only and executable. */
int linker_protect_text(struct aspect *aspect);
/* Frees the aspect's regions (its code must be unreachable: grace period). */
void linker_free_regions(struct aspect *aspect);
/* The aspect whose text region holds address, or NULL.  Any context. */
struct aspect *linker_text_owner(uint64_t address);
/* Records that aspect owns the slots its regions sit in. */
void linker_claim_slots(struct aspect *aspect);

/* ---- The guarded call (guard.c, guard.S) ---------------------------------- */

/* The per-CPU record of the advice running now; ABI calls find it here, and
 * it is what the advice receives as its struct ms_ctx. */
struct linker_jmpbuf {
	uint64_t rbx, r12, r13, r14, r15, rsp;
};

struct linker_run {
	struct linker_advice_frame frame; /* first: what ms_ctx points to */
	struct linker_jmpbuf jmp;
	struct aspect *aspect; /* NULL when no advice runs on this CPU */
	bool after;            /* ret and exit_tsc are valid */
	uint64_t deadline_tsc;
	unsigned overrun_interrupts; /* seen in aspect text past the deadline */
};

/* abi_lattrack.c: destroys the trackers aspect made (ms_lattrack_create)
 * once it is unloaded.  Thread context. */
void linker_lattrack_release(struct aspect *aspect);

/* Calls fn(ctx) so that a fault in aspect text or an overrun of the budget
 * returns here.  Preemption must be off.  Returns 0, or -EFAULT when the call
 * was aborted (the failure is reported).  context may be NULL (init/exit). */
int linker_run_advice(struct aspect *aspect, ms_advice_fn fn, struct jp_context *context,
		      bool after);
/* The same for the aspect's init; returns its result or -EFAULT. */
int linker_run_init(struct aspect *aspect, ms_init_fn fn);
/* The same for the aspect's exit (its result is lost if aborted). */
void linker_run_exit(struct aspect *aspect, ms_exit_fn fn);
/* Unlinks every aspect whose failure was reported (the linker's thread does
 * it every 20 ms).  Returns how many.  Thread context. */
int linker_reap_failed(void);
/* The run in progress on this CPU, or NULL. */
struct linker_run *linker_current_run(void);
/* The budget new aspects get (aspect_budget_us=). */
uint64_t linker_default_budget_ns(void);
/* Installs the fault and tick hooks (once). */
void linker_guard_init(void);

/* In guard.S: saves callee-saved registers in jmp, calls fn(arg) and returns
 * 0; linker_guard_abort(jmp) makes that call return 1 instead. */
int linker_guard_call(struct linker_jmpbuf *jmp, void (*fn)(void *), void *arg);
void linker_guard_abort(struct linker_jmpbuf *jmp) __attribute__((noreturn));

/* ---- Objects built into the kernel (builtin.c) ---------------------------- */

/* The embedded object of aspects/<name>.c, or NULL; its size in *size.  The
 * bytes are 8-byte aligned. */
const void *linker_builtin_image(const char *name, size_t *size);
/* The name of embedded object index (0, 1, ...), NULL past the last. */
const char *linker_builtin_name(unsigned index);

/* ---- ABI (abi_kernel.c) ---------------------------------------------------- */

/* ms_emit under `direct`: records one telemetry record for aspect.  Returns
 * 0 or -ENOBUFS (dropped and counted). */
int linker_emit_record(struct aspect *aspect, uint32_t type, const void *payload, size_t length);
/* Creates the "aspects" telemetry channel ms_emit writes (once; thread context). */
void linker_emit_init(void);
/* linker_env.resolve: the kernel's implementation of the aspect ABI. */
int linker_abi_resolve(void *env, const char *name, uint64_t *address);

#endif
