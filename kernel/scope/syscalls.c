/*
 * ms_scope_ctl: scopectl's one system call, a thin layer over the runtime
 * linker's public API (linker/linker.h).  The request is copied in whole,
 * the answer is a status, a value, or text copied out to the caller's buffer
 * (join points with their signatures; one line of statistics per aspect; the
 * counted join points' calls; the NICs' counters, for httpd's /metrics),
 * and an error comes with the linker's message.
 */
#include <stdarg.h>

#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/format.h"
#include "lib/string.h"
#include "linker/object/object.h"
#include "linker/weave/weave.h"
#include "mm/mm.h"
#include "net/nic.h"
#include "proc/proc.h"
#include "syscall/syscall.h"
#include "uaccess/uaccess.h"
#include "uapi/scope.h"

#define TEXT_MAX (32 * 1024)

struct text {
	char *data;
	size_t used, size;
};

static void append(struct text *t, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void append(struct text *t, const char *format, ...)
{
	va_list args;
	va_start(args, format);
	if (t->used < t->size) {
		int n = vsnprintf(t->data + t->used, t->size - t->used, format, args);
		t->used += n > 0 ? (size_t)n : 0;
		if (t->used > t->size)
			t->used = t->size;
	}
	va_end(args);
}

static int list_one(const struct joinpoint *jp, void *arg)
{
	struct text *t = arg;
	append(t, "%s(", jp->name);
	for (unsigned i = 0; i < jp->argc; i++)
		append(t, "%s%s %s", i ? ", " : "", jp->arg_types[i], jp->arg_names[i]);
	append(t, ") -> %s\n", jp->return_type);
	return 0;
}

struct name_walk {
	uint64_t index; /* counts down to the join point wanted */
	struct scope_ctl *ctl;
};

static int name_one(const struct joinpoint *jp, void *arg)
{
	struct name_walk *w = arg;
	if (w->index--)
		return 0;
	strlcpy(w->ctl->name, jp->name, sizeof w->ctl->name);
	return 1;
}

/* The name of the join point at index (section order, as events number
 * them) into c->name.  Returns 0 or -ENOENT. */
static long joinpoint_name(struct scope_ctl *c)
{
	struct name_walk walk = {(uint64_t)c->value, c};
	return c->value >= 0 && jp_for_each(name_one, &walk) ? 0 : -ENOENT;
}

/* A join point the built-in advice counted: its calls, timed calls and time. */
static int joinpoint_stats_line(const struct joinpoint *jp, void *arg)
{
	struct jp_stats s;
	jp_get_stats(jp, &s);
	if (s.calls || s.timed_calls)
		append(arg, "%s %lu %lu %lu\n", jp->name, s.calls, s.timed_calls, s.total_ns);
	return 0;
}

struct counter_walk {
	struct text *text;
	const char *nic;
};

static void counter_line(const char *name, uint64_t value, void *arg)
{
	struct counter_walk *w = arg;
	append(w->text, "%s %s %lu\n", w->nic, name, value);
}

static int nic_counter_lines(struct nic *nic, void *arg)
{
	struct counter_walk walk = {arg, nic->name};
	nic_list_counters(nic, counter_line, &walk);
	return 0;
}

struct stats_walk {
	struct text *text;
	const char *only;      /* "" for every aspect */
	bool kernel_addresses; /* the reader may see them (PRIV_MONITOR) */
};

static int hex_digit(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* Rewrites text in place with every number written 0x... that is no user
 * address (a kernel one, or past the user half) shown as "<kernel>": a
 * failure's reason names where the advice wrote or faulted (its ms_ctx, a
 * kernel stack), and statistics are anyone's to read, kernel addresses not. */
static void hide_kernel_addresses(char *text)
{
	static const char hidden[] = "<kernel>";
	char *out = text;
	for (const char *in = text; *in;) {
		if (in[0] != '0' || (in[1] != 'x' && in[1] != 'X') || hex_digit(in[2]) < 0) {
			*out++ = *in++;
			continue;
		}
		const char *digits = in + 2, *end = digits;
		uint64_t value = 0;
		bool large = false;
		for (; hex_digit(*end) >= 0; end++) {
			large |= value >> 60 != 0;
			value = value << 4 | (uint64_t)hex_digit(*end);
		}
		if (large || value >= USER_SPACE_END) {
			memcpy(out, hidden, sizeof hidden - 1); /* shorter than 0x and 16 digits */
			out += sizeof hidden - 1;
		} else {
			memmove(out, in, (size_t)(end - in));
			out += end - in;
		}
		in = end;
	}
	*out = '\0';
}

/* aspect_for_each calls this without the linker's lock held, so
 * aspect_get_stats may take it. */
static int stats_line(struct aspect *aspect, void *arg)
{
	struct stats_walk *w = arg;
	struct aspect_stats s;
	if (aspect_get_stats(aspect, &s) || (w->only[0] && strcmp(w->only, s.name)))
		return 0;
	if (!w->kernel_addresses)
		hide_kernel_addresses(s.last_failure);
	append(w->text, "%s state=%s binding=%s events=%lu drops=%lu time_ns=%lu faults=%lu%s%s\n",
	       s.name, aspect_state_name(s.state), aspect_binding_name(s.binding), s.events,
	       s.drops, s.time_ns, s.faults, s.last_failure[0] ? " last_failure=" : "",
	       s.last_failure);
	return 0;
}

/* ---- Counters and histograms, with units and percentiles ------------------ */

static bool ends_with(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);
	return n > s && strcmp(name + n - s, suffix) == 0;
}

/* The unit named by a histogram's suffix, "" for none. */
static const char *unit_of(const char *name)
{
	static const char *const units[] = {"ns", "us", "ms", "s", "bytes", "cycles", "pages"};
	char suffix[16];
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		snprintf(suffix, sizeof suffix, "_%s", units[i]);
		if (ends_with(name, suffix))
			return units[i];
	}
	return "";
}

/* value in unit, as text: times scaled to the largest unit that keeps it
 * at 1 or more (one decimal), others as they are. */
static void format_value(char *out, size_t size, uint64_t value, const char *unit)
{
	static const char *const scale[] = {"ns", "us", "ms", "s"};
	unsigned step = 0;
	while (step < 4 && strcmp(unit, scale[step]))
		step++;
	if (step == 4) {
		snprintf(out, size, "%lu%s%s", (unsigned long)value, unit[0] ? " " : "", unit);
		return;
	}
	uint64_t tenths = value * 10; /* values past 2^60 lose their tenths: no matter */
	if (value > UINT64_MAX / 10)
		tenths = value;
	while (step < 3 && tenths >= 10000) {
		tenths /= 1000;
		step++;
	}
	if (value > UINT64_MAX / 10)
		snprintf(out, size, "%lu %s", (unsigned long)tenths, scale[step]);
	else
		snprintf(out, size, "%lu.%lu %s", (unsigned long)(tenths / 10),
			 (unsigned long)(tenths % 10), scale[step]);
}

static uint64_t bucket_top(unsigned bucket)
{
	return bucket == 0 ? 0 : bucket >= 64 ? UINT64_MAX : (1UL << bucket) - 1;
}

/* The upper bound of the bucket holding the value at percent of h. */
static uint64_t percentile(const struct linker_histogram *h, unsigned percent)
{
	uint64_t rank = (h->count * percent + 99) / 100, seen = 0;
	if (rank == 0)
		rank = 1;
	for (unsigned b = 0; b < MS_HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank)
			return bucket_top(b);
	}
	return bucket_top(MS_HIST_BUCKETS - 1);
}

static uint64_t histogram_max(const struct linker_histogram *h)
{
	for (unsigned b = MS_HIST_BUCKETS; b-- > 0;)
		if (h->buckets[b])
			return bucket_top(b);
	return 0;
}

static void histogram_line(struct text *t, const struct linker_histogram *h)
{
	const char *unit = unit_of(h->name);
	char mean[32], p50[32], p90[32], p99[32], max[32];
	format_value(mean, sizeof mean, h->count ? h->sum / h->count : 0, unit);
	format_value(p50, sizeof p50, percentile(h, 50), unit);
	format_value(p90, sizeof p90, percentile(h, 90), unit);
	format_value(p99, sizeof p99, percentile(h, 99), unit);
	format_value(max, sizeof max, histogram_max(h), unit);
	append(t, "histogram %-24s count %lu mean %s p50<=%s p90<=%s p99<=%s max<=%s\n", h->name,
	       (unsigned long)h->count, mean, p50, p90, p99, max);
}

static const char *owner_words(const struct aspect_counters_owner *owner)
{
	switch (owner->state) {
	case ASPECT_LIVE: return "live";
	case ASPECT_GONE: return "unloaded; its last values";
	default: return "unlinked; its last values";
	}
}

static long show(struct scope_ctl *c, struct text *t)
{
	struct linker_counters *store = kmalloc(sizeof *store);
	struct aspect_counters_owner owner;
	if (!store)
		return -ENOMEM;
	long error = aspect_copy_counters(c->name, store, &owner);
	if (error) {
		snprintf(c->error, sizeof c->error, "no aspect called '%s', nor values kept of one",
			 c->name);
		kfree(store);
		return error;
	}
	append(t, "aspect %s: %s%s%s\n", c->name, owner_words(&owner),
	       owner.state == ASPECT_LIVE ? " " : "",
	       owner.state == ASPECT_LIVE ? aspect_binding_name(owner.binding) : "");
	for (unsigned i = 0; i < MS_MAX_COUNTERS; i++)
		if (store->counters[i].state == LINKER_SLOT_USED)
			append(t, "counter   %-24s %ld\n", store->counters[i].name,
			       (long)store->counters[i].value);
	for (unsigned i = 0; i < MS_MAX_HISTOGRAMS; i++)
		if (store->histograms[i].state == LINKER_SLOT_USED)
			histogram_line(t, &store->histograms[i]);
	kfree(store);
	return 0;
}

/* One counter's value, or a histogram's count and its line of text. */
static long counter(struct scope_ctl *c, struct text *t)
{
	struct linker_counters *store = kmalloc(sizeof *store);
	struct aspect_counters_owner owner;
	if (!store)
		return -ENOMEM;
	long error = aspect_copy_counters(c->name, store, &owner);
	if (error)
		snprintf(c->error, sizeof c->error, "no aspect called '%s'", c->name);
	bool found = false;
	for (unsigned i = 0; !error && i < MS_MAX_COUNTERS; i++) {
		const struct linker_counter *k = &store->counters[i];
		if (k->state == LINKER_SLOT_USED && strcmp(k->name, c->counter) == 0) {
			c->value = (found ? c->value : 0) + k->value;
			found = true;
		}
	}
	const struct linker_histogram *h =
	    error || found ? NULL : linker_hist_find(store, c->counter);
	if (h) {
		c->value = (int64_t)h->count;
		histogram_line(t, h);
	}
	if (!error && !found && !h) {
		snprintf(c->error, sizeof c->error, "aspect '%s' has no counter '%s'", c->name,
			 c->counter);
		error = -ENOENT;
	}
	kfree(store);
	return error;
}

/* Reading (join points, statistics, counters) is everyone's; changing what
 * is woven, or forgetting values, is PRIV_WEAVE's. */
static bool changes_weaving(uint32_t op)
{
	return op == SCOPE_LOAD || op == SCOPE_SET_MSG_MODE || op == SCOPE_LINK ||
	       op == SCOPE_RELINK || op == SCOPE_UNLINK || op == SCOPE_UNLOAD || op == SCOPE_CLEAR;
}

static long on_aspect(const struct scope_ctl *c, struct aspect *a)
{
	switch (c->op) {
	case SCOPE_LINK: return aspect_link(a, (enum aspect_binding)c->binding);
	case SCOPE_RELINK: return aspect_relink(a, (enum aspect_binding)c->binding);
	case SCOPE_UNLINK: return aspect_unlink(a);
	case SCOPE_UNLOAD: return aspect_unload(a);
	default: return -EINVAL;
	}
}

static long control(struct scope_ctl *c, struct text *t)
{
	c->name[sizeof c->name - 1] = c->counter[sizeof c->counter - 1] = '\0';
	if (changes_weaving(c->op) && !proc_has_privilege(PRIV_WEAVE)) {
		snprintf(c->error, sizeof c->error, "changing what is woven needs privilege");
		return -EPERM;
	}
	if (c->op == SCOPE_LIST_JOINPOINTS) {
		jp_for_each(list_one, t);
		return 0;
	}
	if (c->op == SCOPE_JOINPOINT_NAME)
		return joinpoint_name(c);
	if (c->op == SCOPE_JOINPOINT_STATS) {
		jp_for_each(joinpoint_stats_line, t);
		return 0;
	}
	if (c->op == SCOPE_DEVICE_COUNTERS) {
		nic_for_each(nic_counter_lines, t);
		return 0;
	}
	if (c->op == SCOPE_STATS) {
		struct stats_walk walk = {t, c->name, proc_has_privilege(PRIV_MONITOR)};
		aspect_for_each(stats_line, &walk);
		return 0;
	}
	if (c->op == SCOPE_LOAD) {
		struct aspect *a;
		int error = linker_load_file(c->name, &a, c->error, sizeof c->error);
		struct aspect_stats stats;
		if (!error &&
		    aspect_get_stats(a, &stats) == 0) /* the answer names what was loaded */
			strlcpy(c->name, stats.name, sizeof c->name);
		if (!error)
			aspect_put(a);
		return error;
	}
	if (c->op == SCOPE_SET_MSG_MODE) {
		scope_set_msg_mode(c->binding != 0, (uint64_t)c->value);
		return 0;
	}
	if (c->op == SCOPE_SHOW)
		return show(c, t);
	if (c->op == SCOPE_COUNTER)
		return counter(c, t);
	if (c->op == SCOPE_CLEAR) {
		long error = aspect_clear_counters(c->name);
		if (error == -EBUSY)
			snprintf(c->error, sizeof c->error, "'%s' is linked: unlink it first",
				 c->name);
		else if (error)
			snprintf(c->error, sizeof c->error,
				 "no aspect called '%s', nor values kept of one", c->name);
		return error;
	}
	struct aspect *a = aspect_find(c->name);
	if (!a) {
		snprintf(c->error, sizeof c->error, "no aspect called '%s'", c->name);
		return -ENOENT;
	}
	long result = on_aspect(c, a);
	aspect_put(a);
	return result;
}

/* ---- The linker's own words reach the caller ----------------------------- */

#define MESSAGES_MAX 4096

struct control_call {
	struct scope_ctl *c;
	struct text *t;
};

static int run_control(void *arg)
{
	struct control_call *call = arg;
	return (int)control(call->c, call->t);
}

/* Copies messages (console lines) without their "[    1.234567] " prefixes. */
static size_t strip_prefixes(char *messages, size_t length)
{
	size_t out = 0;
	for (size_t i = 0; i < length;) {
		if (messages[i] == '[' && (i == 0 || messages[i - 1] == '\n')) {
			size_t close = i;
			while (close < length && messages[close] != ']' && messages[close] != '\n')
				close++;
			if (close + 1 < length && messages[close] == ']' &&
			    messages[close + 1] == ' ') {
				i = close + 2;
				continue;
			}
		}
		messages[out++] = messages[i++];
	}
	return out;
}

/* The last line of messages that says something, as the error's text. */
static void last_line_as_error(struct scope_ctl *c, const char *messages, size_t length)
{
	while (length && messages[length - 1] == '\n')
		length--;
	size_t start = length;
	while (start && messages[start - 1] != '\n')
		start--;
	size_t n = length - start < sizeof c->error - 1 ? length - start : sizeof c->error - 1;
	memcpy(c->error, messages + start, n);
	c->error[n] = '\0';
}

/* Load, link, relink, unlink and unload run with the calling thread's
 * console output captured: on failure the last message is the error the
 * caller gets (why: "no join point matches"); every message is printed on
 * the console as well, as it would have been.  The result stays the
 * operation's (0 on success: no text). */
static long control_with_messages(struct scope_ctl *c, struct text *t)
{
	char *messages = kmalloc(MESSAGES_MAX);
	if (!messages)
		return -ENOMEM;
	struct control_call call = {c, t};
	size_t length = 0;
	long result = kshell_capture(run_control, &call, messages, MESSAGES_MAX, &length);
	console_write(messages, length);
	length = strip_prefixes(messages, length);
	if (result < 0 && !c->error[0])
		last_line_as_error(c, messages, length);
	kfree(messages);
	return result;
}

static bool changes_an_aspect(enum scope_op op)
{
	return op == SCOPE_LOAD || op == SCOPE_LINK || op == SCOPE_RELINK || op == SCOPE_UNLINK ||
	       op == SCOPE_UNLOAD;
}

SYSCALL_DEFINE1(ms_scope_ctl, struct scope_ctl *, user_ctl)
{
	struct scope_ctl *c = kzalloc(sizeof *c);
	struct text t = {.data = kmalloc(TEXT_MAX), .size = TEXT_MAX};
	long result = -ENOMEM;
	if (!c || !t.data)
		goto out;
	result = -EFAULT;
	if (copy_from_user(c, user_ctl, sizeof *c))
		goto out;
	c->error[0] = '\0';
	result = changes_an_aspect(c->op) ? control_with_messages(c, &t) : control(c, &t);
	if (result == 0 && t.used) {
		size_t n = t.used < c->length ? t.used : c->length;
		result = copy_to_user(c->buffer, t.data, n) ? -EFAULT : (long)n;
	}
	if (copy_to_user(user_ctl, c, sizeof *c))
		result = -EFAULT;
out:
	kfree(t.data);
	kfree(c);
	return result;
}
