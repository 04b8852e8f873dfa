/*
 * The kernel console's `aspect` command: the linker's control API for people
 * and for early debugging (scopectl offers the same from user space).
 *   aspect list | load FILE|NAME | link NAME BINDING | relink NAME BINDING |
 *   unlink NAME | unload NAME | stats [NAME] | counters NAME | reap
 * A FILE starts with '/'; a bare NAME loads the object embedded in the kernel.
 */
#include "kshell/kshell.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/internal.h"
#include "mm/mm.h"

static int list_one(struct aspect *aspect, void *arg)
{
	struct aspect_stats s;
	if (aspect_get_stats(aspect, &s) == 0)
		kshell_print("%-16s %-9s %-7s %2u advice  %s\n", s.name, aspect_state_name(s.state),
			     aspect_binding_name(s.binding), s.advice, s.description);
	return 0;
}

static int stats_one(struct aspect *aspect, void *arg)
{
	struct aspect_stats s;
	if (aspect_get_stats(aspect, &s))
		return 0;
	kshell_print("%-16s %-9s %-7s events %lu drops %lu time %lu us faults %lu weaves %u\n",
		     s.name, aspect_state_name(s.state), aspect_binding_name(s.binding),
		     (unsigned long)s.events, (unsigned long)s.drops,
		     (unsigned long)(s.time_ns / 1000), (unsigned long)s.faults, s.weaves);
	if (s.last_failure[0])
		kshell_print("%-16s last failure: %s\n", "", s.last_failure);
	return 0;
}

static int do_load(const char *what)
{
	char error[LINKER_ERROR_MAX];
	struct aspect *aspect;
	int err;
	if (what[0] == '/') {
		err = linker_load_file(what, &aspect, error, sizeof error);
	} else {
		size_t size;
		const void *image = linker_builtin_image(what, &size);
		if (!image) {
			kshell_print("aspect: no built-in aspect '%s'\n", what);
			return -ENOENT;
		}
		err = linker_load(image, size, &aspect, error, sizeof error);
	}
	if (err) {
		kshell_print("aspect: %s: %s\n", what, error[0] ? error : "cannot load");
		return err;
	}
	kshell_print("aspect %s loaded (%u advice)\n", aspect->name, aspect->object.advice_count);
	aspect_put(aspect);
	return 0;
}

static struct aspect *named(const char *name)
{
	struct aspect *aspect = aspect_find(name);
	if (!aspect)
		kshell_print("aspect: no aspect '%s' loaded\n", name);
	return aspect;
}

static int do_bind(struct aspect *aspect, const char *verb, const char *binding_name)
{
	enum aspect_binding binding = aspect_binding_parse(binding_name);
	if (binding == ASPECT_BINDING_NONE)
		return KSHELL_USAGE;
	int err = strcmp(verb, "link") == 0 ? aspect_link(aspect, binding)
					    : aspect_relink(aspect, binding);
	if (!err)
		kshell_print("aspect %s %sed %s\n", aspect->name, verb, binding_name);
	return err;
}

/* Prints a copy taken under the linker's lock: the counters of a live
 * aspect move to the retained table when another thread unloads it. */
static void print_store(const struct linker_counters *store)
{
	for (unsigned i = 0; i < MS_MAX_COUNTERS; i++)
		if (store->counters[i].state == LINKER_SLOT_USED)
			kshell_print("counter   %-32s %ld\n", store->counters[i].name,
				     (long)store->counters[i].value);
	for (unsigned i = 0; i < MS_MAX_HISTOGRAMS; i++) {
		const struct linker_histogram *h = &store->histograms[i];
		if (h->state != LINKER_SLOT_USED)
			continue;
		kshell_print("histogram %-32s count %lu mean %lu\n", h->name,
			     (unsigned long)h->count,
			     (unsigned long)(h->count ? h->sum / h->count : 0));
		for (unsigned b = 0; b < MS_HIST_BUCKETS; b++)
			if (h->buckets[b])
				kshell_print("  [%lu, %lu) %lu\n", b ? 1UL << (b - 1) : 0UL,
					     b ? (b < 64 ? 1UL << b : ~0UL) : 1UL,
					     (unsigned long)h->buckets[b]);
	}
}

static int print_counters(const char *name)
{
	struct linker_counters *store = kmalloc(sizeof *store);
	if (!store)
		return -ENOMEM;
	struct aspect_counters_owner owner;
	int err = aspect_copy_counters(name, store, &owner);
	if (err)
		kshell_print("aspect: no aspect '%s' loaded, nor values kept of one\n", name);
	else
		print_store(store);
	kfree(store);
	return err;
}

static int on_aspect(struct aspect *aspect, int argc, char **argv)
{
	const char *verb = argv[1];
	if ((strcmp(verb, "link") == 0 || strcmp(verb, "relink") == 0) && argc == 4)
		return do_bind(aspect, verb, argv[3]);
	if (argc != 3)
		return KSHELL_USAGE;
	if (strcmp(verb, "unlink") == 0)
		return aspect_unlink(aspect);
	if (strcmp(verb, "unload") == 0)
		return aspect_unload(aspect);
	if (strcmp(verb, "stats") == 0)
		return stats_one(aspect, NULL);
	return KSHELL_USAGE;
}

static int with_aspect(int argc, char **argv)
{
	if (strcmp(argv[1], "counters") == 0)
		return argc == 3 ? print_counters(argv[2]) : KSHELL_USAGE;
	struct aspect *aspect = named(argv[2]);
	if (!aspect)
		return -ENOENT;
	int result = on_aspect(aspect, argc, argv);
	aspect_put(aspect);
	return result;
}

static int cmd_aspect(int argc, char **argv)
{
	if (argc < 2)
		return KSHELL_USAGE;
	if (strcmp(argv[1], "list") == 0 && argc == 2) {
		for (unsigned i = 0; linker_builtin_name(i); i++)
			kshell_print("built in: %s\n", linker_builtin_name(i));
		return aspect_for_each(list_one, NULL);
	}
	if (strcmp(argv[1], "stats") == 0 && argc == 2)
		return aspect_for_each(stats_one, NULL);
	if (strcmp(argv[1], "reap") == 0 && argc == 2) {
		kshell_print("%d aspect(s) unlinked\n", linker_reap_failed());
		return 0;
	}
	if (strcmp(argv[1], "load") == 0 && argc == 3)
		return do_load(argv[2]);
	return argc >= 3 ? with_aspect(argc, argv) : KSHELL_USAGE;
}
KSHELL_COMMAND(aspect, cmd_aspect,
	       "aspect list|stats|reap|load FILE|NAME|link NAME BINDING|relink NAME BINDING|"
	       "unlink NAME|unload NAME|stats NAME|counters NAME",
	       "load, link (direct|shm|msg), relink and unlink aspects");
