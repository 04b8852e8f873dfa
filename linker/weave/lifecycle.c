/*
 * The aspect lifecycle: load (validate, lay out, resolve, relocate, read the
 * metadata, protect the text) -> LOADED; link (run init once, weave with a
 * binding) -> LIVE; relink; unlink (unweave, grace period) -> LOADED; unload
 * (exit, free) -> GONE.  Each control operation is a straight list of phases
 * under one mutex, unwinding through labels named for what they undo.
 *
 * Invariants: an aspect's code is freed only when it has no weave (the
 * dependency edges in aspect->weaves) and a grace period has passed since the
 * last one went; an aspect in the table is never freed without the mutex.
 * Failures reported from advice or interrupts (aspect_report_failure) only
 * set flags: the linker's thread, which may sleep, does the unlinking.
 */
#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/internal.h"
#include "mm/mm.h"
#include "panic/panic.h"
#include "sched/sched.h"
#include "time/time.h"
#include "vfs/vfs.h"

#define LINKER_MAX_FILE  (16UL << 20)
#define REAPER_PERIOD_NS (20 * NSEC_PER_MSEC)

static struct mutex control = MUTEX_INIT(control, "linker");
static struct aspect *table[ASPECT_MAX]; /* load order, no holes */
static unsigned table_count;
static struct thread *reaper;

const char *aspect_state_name(enum aspect_state state)
{
	static const char *const names[] = {"loading", "loaded", "live", "unlinking", "gone"};
	return state <= ASPECT_GONE ? names[state] : "?";
}

static void set_error(char *error, size_t size, const char *text)
{
	if (error && size)
		strlcpy(error, text, size);
}

static struct aspect *find_locked(const char *name)
{
	for (unsigned i = 0; i < table_count; i++)
		if (strcmp(table[i]->name, name) == 0)
			return table[i];
	return NULL;
}

static void remove_locked(struct aspect *aspect)
{
	unsigned i = 0;
	while (i < table_count && table[i] != aspect)
		i++;
	ASSERT(i < table_count);
	memmove(&table[i], &table[i + 1], (table_count - i - 1) * sizeof table[0]);
	table[--table_count] = NULL;
}

/* The counters of unloaded aspects, so that their last values stay readable
 * (scopectl show, counter) until cleared or an aspect of the same name is
 * loaded again; the oldest goes first when the table is full.  Under
 * control. */
#define RETAINED_MAX 8
static struct retained {
	char name[LINKER_NAME_MAX];
	struct linker_counters *counters; /* NULL: a free entry */
	uint64_t order;
} retained[RETAINED_MAX];
static uint64_t retained_order;

static struct retained *find_retained_locked(const char *name)
{
	for (unsigned i = 0; i < RETAINED_MAX; i++)
		if (retained[i].counters && strcmp(retained[i].name, name) == 0)
			return &retained[i];
	return NULL;
}

static void drop_retained_locked(const char *name)
{
	struct retained *r = find_retained_locked(name);
	if (r) {
		kfree(r->counters);
		r->counters = NULL;
	}
}

/* Keeps an unloading aspect's counters (taking them from it). */
static void retain_locked(struct aspect *aspect)
{
	drop_retained_locked(aspect->name);
	struct retained *slot = &retained[0];
	for (unsigned i = 0; i < RETAINED_MAX && slot->counters; i++)
		if (!retained[i].counters || retained[i].order < slot->order)
			slot = &retained[i];
	kfree(slot->counters);
	strlcpy(slot->name, aspect->name, sizeof slot->name);
	slot->counters = aspect->counters;
	slot->order = ++retained_order;
	aspect->counters = NULL;
}

static void free_aspect(struct aspect *aspect)
{
	kfree(aspect->counters);
	kfree(aspect->image);
	kfree(aspect);
}

static struct aspect *new_aspect(const void *image, size_t size)
{
	struct aspect *aspect = kzalloc(sizeof *aspect);
	if (!aspect)
		return NULL;
	aspect->image = kmalloc(size ? size : 1);
	aspect->counters = kzalloc(sizeof *aspect->counters);
	if (!aspect->image || !aspect->counters) {
		free_aspect(aspect);
		return NULL;
	}
	memcpy(aspect->image, image, size);
	aspect->image_size = size;
	aspect->state = ASPECT_LOADING;
	aspect->refs = 1; /* the table's, once it is in it */
	aspect->slot[0] = aspect->slot[1] = -1;
	aspect->budget_ns = linker_default_budget_ns();
	return aspect;
}

/* Validate and link the object in kernel memory; text ends read-only. */
static int link_in_kernel(struct aspect *aspect, char *error, size_t error_size)
{
	int err = linker_validate_object(&aspect->object, aspect->image, aspect->image_size, error,
					 error_size);
	if (err)
		return err;
	err = linker_link_object(&aspect->object, linker_kernel_env());
	if (err)
		return err;
	linker_claim_slots(aspect);
	err = linker_protect_text(aspect);
	if (err) {
		set_error(error, error_size, "cannot protect the aspect's text");
		linker_free_regions(aspect);
		return err;
	}
	strlcpy(aspect->name, aspect->object.name, sizeof aspect->name);
	strlcpy(aspect->description, aspect->object.description, sizeof aspect->description);
	return 0;
}

static void start_reaper(void);

/* The names of the kernel's own monitoring aspects, woven from the kernel
 * image: an object from a file may not take one (an impostor `rscfl` would
 * take over every process's accounting). */
static const char *const reserved_names[] = {"rscfl"};

#define RESERVED_NAMES (sizeof reserved_names / sizeof reserved_names[0])

static int reserved_index(const char *name)
{
	for (size_t i = 0; i < RESERVED_NAMES; i++)
		if (strcmp(reserved_names[i], name) == 0)
			return (int)i;
	return -1;
}

static bool name_is_reserved(const char *name)
{
	return reserved_index(name) >= 0;
}

/* The native advice of each reserved name (weave.h), set once. */
static const struct linker_native_advice *natives[RESERVED_NAMES];

int linker_set_native_advice(const struct linker_native_advice *native)
{
	if (!native || !native->aspect || !native->pattern || !native->advice || !native->events)
		return -EINVAL;
	int i = reserved_index(native->aspect);
	if (i < 0)
		return -EINVAL;
	const struct linker_native_advice *expected = NULL;
	if (!__atomic_compare_exchange_n(&natives[i], &expected, native, false, __ATOMIC_RELEASE,
					 __ATOMIC_ACQUIRE))
		return expected == native ? 0 : -EEXIST;
	return 0;
}

const struct linker_native_advice *linker_native_for(const char *name)
{
	int i = reserved_index(name);
	return i < 0 ? NULL : __atomic_load_n(&natives[i], __ATOMIC_ACQUIRE);
}

static int load(const void *image, size_t size, struct aspect **result, char *error,
		size_t error_size, bool from_file);

int linker_load(const void *image, size_t size, struct aspect **result, char *error,
		size_t error_size)
{
	return load(image, size, result, error, error_size, false);
}

static int load(const void *image, size_t size, struct aspect **result, char *error,
		size_t error_size, bool from_file)
{
	set_error(error, error_size, "");
	if (!image || !result)
		return -EINVAL;
	if (size > LINKER_MAX_FILE) {
		set_error(error, error_size, "object larger than 16 MiB");
		return -EFBIG;
	}
	struct aspect *aspect = new_aspect(image, size);
	if (!aspect) {
		set_error(error, error_size, "out of memory");
		return -ENOMEM;
	}
	int err = link_in_kernel(aspect, error, error_size);
	if (err)
		goto out_free;
	if (from_file && name_is_reserved(aspect->name)) {
		err = -EPERM;
		set_error(error, error_size, "that name is reserved for the kernel's own aspect");
		goto out_free_regions;
	}
	mutex_lock(&control);
	if (find_locked(aspect->name)) {
		err = -EEXIST;
		set_error(error, error_size, "an aspect with that name is loaded");
	} else if (table_count == ASPECT_MAX) {
		err = -ENOSPC;
		set_error(error, error_size, "too many aspects loaded");
	} else {
		aspect->state = ASPECT_LOADED;
		table[table_count++] = aspect;
		drop_retained_locked(aspect->name); /* a new life: the old values go */
		*result = aspect_get(aspect);
	}
	mutex_unlock(&control);
	if (err)
		goto out_free_regions;
	linker_guard_init();
	linker_emit_init();
	start_reaper();
	return 0;

out_free_regions:
	linker_free_regions(aspect);
out_free:
	free_aspect(aspect);
	return err;
}

int linker_load_file(const char *path, struct aspect **aspect, char *error, size_t error_size)
{
	void *buffer;
	size_t length;
	int err = vfs_read_whole_file(path, &buffer, &length);
	if (err) {
		set_error(error, error_size, "cannot read the file");
		return err;
	}
	err = load(buffer, length, aspect, error, error_size, true);
	kfree(buffer);
	return err;
}

static int run_init_once(struct aspect *aspect)
{
	if (aspect->initialized || !aspect->object.init)
		return 0;
	int result = linker_run_init(aspect, aspect->object.init);
	if (result)
		return -ECANCELED;
	aspect->initialized = true;
	return 0;
}

int aspect_link(struct aspect *aspect, enum aspect_binding binding)
{
	if (!aspect)
		return -EINVAL;
	mutex_lock(&control);
	int err = -EINVAL;
	if (aspect->state != ASPECT_LOADED)
		goto out;
	if ((err = run_init_once(aspect)))
		goto out;
	__atomic_store_n(&aspect->failure_pending, 0, __ATOMIC_RELEASE);
	if ((err = linker_bind(aspect, binding)))
		goto out;
	aspect->binding = binding;
	aspect->state = ASPECT_LIVE;
	linker_switch_binding(aspect, ASPECT_BINDING_NONE, binding);
out:
	mutex_unlock(&control);
	return err;
}

int aspect_relink(struct aspect *aspect, enum aspect_binding binding)
{
	if (!aspect)
		return -EINVAL;
	mutex_lock(&control);
	int err = -EINVAL;
	if (aspect->state != ASPECT_LIVE ||
	    __atomic_load_n(&aspect->failure_pending, __ATOMIC_ACQUIRE))
		goto out;
	err = 0;
	if (binding == aspect->binding)
		goto out;
	if ((err = linker_bind(aspect, binding)))
		goto out;
	enum aspect_binding from = aspect->binding;
	aspect->binding = binding;
	linker_switch_binding(aspect, from, binding);
out:
	mutex_unlock(&control);
	return err;
}

static void (*unlink_observer)(const char *name);

void aspect_set_unlink_observer(void (*observer)(const char *name))
{
	__atomic_store_n(&unlink_observer, observer, __ATOMIC_RELEASE);
}

static void unlink_locked(struct aspect *aspect)
{
	ASSERT(aspect->state == ASPECT_LIVE);
	aspect->state = ASPECT_UNLINKING;
	__atomic_store_n(&aspect->active, ASPECT_BINDING_NONE, __ATOMIC_RELEASE);
	for (int b = ASPECT_BINDING_DIRECT; b < ASPECT_BINDING_COUNT; b++)
		linker_unbind(aspect, (enum aspect_binding)b);
	ASSERT(aspect->weave_count == 0);
	aspect->binding = ASPECT_BINDING_NONE;
	aspect->state = ASPECT_LOADED;
	void (*observer)(const char *) = __atomic_load_n(&unlink_observer, __ATOMIC_ACQUIRE);
	if (observer)
		observer(aspect->name);
}

int aspect_unlink(struct aspect *aspect)
{
	if (!aspect)
		return -EINVAL;
	mutex_lock(&control);
	int err = aspect->state == ASPECT_LIVE ? 0 : -EINVAL;
	if (!err)
		unlink_locked(aspect);
	mutex_unlock(&control);
	return err;
}

static void run_exit(struct aspect *aspect)
{
	if (aspect->initialized && aspect->object.exit)
		linker_run_exit(aspect, aspect->object.exit);
}

int aspect_unload(struct aspect *aspect)
{
	if (!aspect)
		return -EINVAL;
	mutex_lock(&control);
	if (aspect->state == ASPECT_GONE) { /* another caller unloaded it */
		mutex_unlock(&control);
		return -ENOENT;
	}
	if (aspect->state == ASPECT_LIVE)
		unlink_locked(aspect);
	if (aspect->weave_count) {
		mutex_unlock(&control);
		return -EBUSY;
	}
	run_exit(aspect);
	linker_lattrack_release(aspect);
	remove_locked(aspect);
	aspect->state = ASPECT_GONE;
	retain_locked(aspect);
	mutex_unlock(&control);
	aspect_put(aspect); /* the table's reference */
	return 0;
}

struct aspect *aspect_find(const char *name)
{
	if (!name)
		return NULL;
	mutex_lock(&control);
	struct aspect *aspect = aspect_get(find_locked(name));
	mutex_unlock(&control);
	return aspect;
}

struct aspect *aspect_get(struct aspect *aspect)
{
	if (aspect)
		__atomic_fetch_add(&aspect->refs, 1, __ATOMIC_RELAXED);
	return aspect;
}

void aspect_put(struct aspect *aspect)
{
	if (!aspect || __atomic_sub_fetch(&aspect->refs, 1, __ATOMIC_ACQ_REL) != 0)
		return;
	ASSERT(aspect->state == ASPECT_GONE);
	linker_free_regions(aspect);
	free_aspect(aspect);
}

int aspect_for_each(int (*fn)(struct aspect *aspect, void *arg), void *arg)
{
	struct aspect *snapshot[ASPECT_MAX];
	mutex_lock(&control);
	unsigned count = table_count;
	for (unsigned i = 0; i < count; i++)
		snapshot[i] = aspect_get(table[i]);
	mutex_unlock(&control);
	int result = 0;
	for (unsigned i = 0; i < count; i++) {
		if (!result)
			result = fn(snapshot[i], arg);
		aspect_put(snapshot[i]);
	}
	return result;
}

int aspect_get_stats(struct aspect *aspect, struct aspect_stats *stats)
{
	if (!aspect || !stats)
		return -EINVAL;
	mutex_lock(&control);
	if (aspect->state == ASPECT_LIVE)
		linker_collect(aspect);
	memset(stats, 0, sizeof *stats);
	strlcpy(stats->name, aspect->name, sizeof stats->name);
	strlcpy(stats->description, aspect->description, sizeof stats->description);
	stats->state = aspect->state;
	stats->binding = aspect->state == ASPECT_LIVE ? aspect->binding : ASPECT_BINDING_NONE;
	stats->events = __atomic_load_n(&aspect->events, __ATOMIC_RELAXED);
	stats->drops = __atomic_load_n(&aspect->drops, __ATOMIC_RELAXED);
	stats->time_ns = clock_tsc_to_ns(__atomic_load_n(&aspect->time_tsc, __ATOMIC_RELAXED)) +
			 __atomic_load_n(&aspect->time_ns, __ATOMIC_RELAXED);
	stats->faults = __atomic_load_n(&aspect->faults, __ATOMIC_RELAXED);
	stats->advice = aspect->object.advice_count;
	stats->weaves = aspect->weave_count;
	if (__atomic_load_n(&aspect->faults, __ATOMIC_ACQUIRE))
		strlcpy(stats->last_failure, aspect->last_failure, sizeof stats->last_failure);
	mutex_unlock(&control);
	return 0;
}

int64_t aspect_counter_value(struct aspect *aspect, const char *name)
{
	mutex_lock(&control);
	if (aspect->state == ASPECT_LIVE)
		linker_collect(aspect);
	int64_t value = aspect->counters ? linker_counter_get(aspect->counters, name) : 0;
	mutex_unlock(&control);
	return value;
}

bool aspect_has_counter(struct aspect *aspect, const char *name)
{
	bool found = false;
	mutex_lock(&control);
	if (aspect->state == ASPECT_LIVE)
		linker_collect(aspect);
	for (unsigned i = 0; aspect->counters && i < MS_MAX_COUNTERS && !found; i++) {
		const struct linker_counter *c = &aspect->counters->counters[i];
		found = __atomic_load_n(&c->state, __ATOMIC_ACQUIRE) == LINKER_SLOT_USED &&
			strcmp(c->name, name) == 0;
	}
	mutex_unlock(&control);
	return found || aspect_histogram_count(aspect, name) > 0;
}

uint64_t aspect_histogram_count(struct aspect *aspect, const char *name)
{
	mutex_lock(&control);
	if (aspect->state == ASPECT_LIVE)
		linker_collect(aspect);
	const struct linker_histogram *h =
	    aspect->counters ? linker_hist_find(aspect->counters, name) : NULL;
	uint64_t count = h ? __atomic_load_n(&h->count, __ATOMIC_RELAXED) : 0;
	mutex_unlock(&control);
	return count;
}

int aspect_copy_counters(const char *name, struct linker_counters *out,
			 struct aspect_counters_owner *owner)
{
	mutex_lock(&control);
	struct aspect *aspect = find_locked(name);
	struct retained *r = aspect ? NULL : find_retained_locked(name);
	if (aspect) {
		if (aspect->state == ASPECT_LIVE)
			linker_collect(aspect);
		memcpy(out, aspect->counters, sizeof *out);
		owner->state = aspect->state;
		owner->binding = aspect->binding;
	} else if (r) {
		memcpy(out, r->counters, sizeof *out);
		owner->state = ASPECT_GONE;
		owner->binding = ASPECT_BINDING_NONE;
	}
	mutex_unlock(&control);
	return aspect || r ? 0 : -ENOENT;
}

int aspect_clear_counters(const char *name)
{
	mutex_lock(&control);
	struct aspect *aspect = find_locked(name);
	struct retained *r = aspect ? NULL : find_retained_locked(name);
	int result = 0;
	if (aspect && aspect->state != ASPECT_LOADED)
		result = -EBUSY; /* advice may be adding to them */
	else if (aspect)
		memset(aspect->counters, 0, sizeof *aspect->counters);
	else if (r)
		drop_retained_locked(name);
	else
		result = -ENOENT;
	mutex_unlock(&control);
	return result;
}

void aspect_count_drop(struct aspect *aspect)
{
	__atomic_fetch_add(&aspect->drops, 1, __ATOMIC_RELAXED);
}

void aspect_report_failure(struct aspect *aspect, const char *reason)
{
	int expected = 0;
	if (!__atomic_compare_exchange_n(&aspect->failure_pending, &expected, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&aspect->active, ASPECT_BINDING_NONE, __ATOMIC_RELEASE);
	strlcpy(aspect->last_failure, reason, sizeof aspect->last_failure);
	__atomic_fetch_add(&aspect->faults, 1, __ATOMIC_RELEASE);
	pr_err("linker: aspect '%s' %s: unlinking it\n", aspect->name, reason);
}

/* Unlinks every aspect whose failure was reported.  Returns how many. */
int linker_reap_failed(void)
{
	int reaped = 0;
	mutex_lock(&control);
	for (unsigned i = 0; i < table_count; i++) {
		struct aspect *aspect = table[i];
		if (!__atomic_load_n(&aspect->failure_pending, __ATOMIC_ACQUIRE))
			continue;
		if (aspect->state == ASPECT_LIVE) {
			unlink_locked(aspect);
			pr_warn("linker: aspect '%s' unlinked (%s)\n", aspect->name,
				aspect->last_failure);
			reaped++;
		}
		__atomic_store_n(&aspect->failure_pending, 0, __ATOMIC_RELEASE);
	}
	mutex_unlock(&control);
	return reaped;
}

static int reaper_main(void *arg)
{
	for (;;) {
		sched_sleep_ns(REAPER_PERIOD_NS);
		linker_reap_failed();
	}
	return 0;
}

static void start_reaper(void)
{
	mutex_lock(&control);
	if (!reaper) {
		reaper = thread_create(reaper_main, NULL, "linker", SCHED_PRIORITY_HIGH);
		if (reaper)
			thread_detach(reaper);
		else
			pr_warn(
			    "linker: no thread to unlink failed aspects: `aspect reap` does it\n");
	}
	mutex_unlock(&control);
}
