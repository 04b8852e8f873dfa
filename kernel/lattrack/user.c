/*
 * Owned trackers: the ones user space (ms_lattrack_create) and aspects
 * (ms_lattrack_create in the aspect ABI) make.  Each belongs to a user id
 * and may have several owners at once (an aspect's kernel image and its
 * monitor image both create "theirs": the second opens the first's), each
 * holding a reference; the last release destroys the tracker.  A user
 * without privilege owns at most LATTRACK_USER_OWN trackers, so one user
 * cannot take the LATTRACK_TRACKERS_MAX slots.  Everything the caller gives
 * (struct lattrack_config) is checked here before anything is made.
 */
#include "lattrack/internal.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "sched/sched.h"

#define USER_DEFAULT_KEY_SIZE   8
#define USER_DEFAULT_MAX_EVENTS 256

static bool valid_name(const char name[LATTRACK_UAPI_NAME_MAX])
{
	size_t length = strnlen(name, LATTRACK_UAPI_NAME_MAX);
	if (length == 0 || length >= LATTRACK_UAPI_NAME_MAX)
		return false;
	for (size_t i = 0; i < length; i++) {
		char c = name[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
		if (!ok)
			return false;
	}
	return true;
}

int lattrack_check_config(const struct lattrack_config *config)
{
	if (!valid_name(config->name) || config->reserved ||
	    (config->flags & ~LATTRACK_CREATE_OR_OPEN) ||
	    config->key_size > LATTRACK_UAPI_KEY_MAX ||
	    config->max_events > LATTRACK_UAPI_EVENTS_MAX)
		return -EINVAL;
	return 0;
}

struct owned_count {
	uint32_t uid;
	unsigned count;
};

static int count_owned(struct lattrack *tracker, void *arg)
{
	struct owned_count *c = arg;
	if (tracker->owned && tracker->owner_uid == c->uid)
		c->count++;
	return 0;
}

/* Opens tracker (an owned one of uid) for one more owner.  Returns 0 or
 * -EEXIST (a kernel tracker, another user's, or one being destroyed). */
static int share(struct lattrack *tracker, uint32_t uid)
{
	uint64_t flags = spin_lock_irqsave(&lattrack_registry_lock);
	int error = -EEXIST;
	if (tracker->owned && tracker->owner_uid == uid && tracker->owners > 0) {
		tracker->owners++;
		tracker->references++;
		error = 0;
	}
	spin_unlock_irqrestore(&lattrack_registry_lock, flags);
	return error;
}

static int configure(struct lattrack *tracker, const struct lattrack_config *config, uint32_t uid)
{
	tracker->kind = "user";
	tracker->owned = true;
	tracker->owner_uid = uid;
	tracker->owners = 1;
	int error = lattrack_set_threshold_ns(tracker, config->threshold_ns);
	if (!error)
		error = lattrack_set_timeout_ns(tracker, config->timeout_ns);
	if (!error && config->timeout_ns)
		error = lattrack_set_gc_age_ns(tracker, lattrack_gc_age_for(config->timeout_ns));
	if (!error)
		error = lattrack_set_key_size(tracker, config->key_size ? config->key_size
									: USER_DEFAULT_KEY_SIZE);
	if (!error)
		error = lattrack_set_max_events(
		    tracker, config->max_events ? config->max_events : USER_DEFAULT_MAX_EVENTS);
	if (!error)
		error = lattrack_enable(tracker);
	return error;
}

static int create_counted(const struct lattrack_config *config, uint32_t uid, bool privileged,
			  struct lattrack **out)
{
	struct owned_count owned = {.uid = uid};
	lattrack_for_each(count_owned, &owned);
	if (!privileged && owned.count >= LATTRACK_USER_OWN)
		return -EMFILE;
	struct lattrack *tracker;
	int error = lattrack_create(config->name, &tracker);
	if (error)
		return error;
	error = configure(tracker, config, uid);
	if (error) {
		lattrack_destroy(tracker);
		return error;
	}
	lattrack_get_reference(tracker); /* the owner's; destroy drops the creator's */
	*out = tracker;
	return 0;
}

/* Creators without privilege one at a time: a tracker counts as its user's
 * only once configured, so counting and creating must be one step, or users
 * racing on several CPUs would pass LATTRACK_USER_OWN.  (The privileged are
 * not counted; the aspect ABI creates as such, from an aspect's init.) */
static struct mutex unprivileged_create = MUTEX_INIT(unprivileged_create, "lattrack.create");

static int create(const struct lattrack_config *config, uint32_t uid, bool privileged,
		  struct lattrack **out)
{
	if (privileged)
		return create_counted(config, uid, privileged, out);
	mutex_lock(&unprivileged_create);
	int error = create_counted(config, uid, privileged, out);
	mutex_unlock(&unprivileged_create);
	return error;
}

int lattrack_open_owned(const struct lattrack_config *config, uint32_t uid, bool privileged,
			struct lattrack **out)
{
	int error = lattrack_check_config(config);
	if (error)
		return error;
	for (int attempt = 0; attempt < 2; attempt++) {
		struct lattrack *existing = lattrack_get(config->name);
		if (existing) {
			error = (config->flags & LATTRACK_CREATE_OR_OPEN) ? share(existing, uid)
									  : -EEXIST;
			lattrack_put(existing);
			if (!error)
				*out = existing;
			return error;
		}
		error = create(config, uid, privileged, out);
		if (error != -EEXIST) /* else another made it meanwhile: open it */
			return error;
	}
	return error;
}

void lattrack_release_owned(struct lattrack *tracker)
{
	uint64_t flags = spin_lock_irqsave(&lattrack_registry_lock);
	bool last = --tracker->owners == 0;
	spin_unlock_irqrestore(&lattrack_registry_lock, flags);
	if (last)
		lattrack_destroy(tracker);
	lattrack_put(tracker);
}

bool lattrack_is_owned(const struct lattrack *tracker)
{
	return tracker->owned;
}

uint32_t lattrack_owner_uid(const struct lattrack *tracker)
{
	return tracker->owner_uid;
}
