/*
 * Weaving the accounting: the rscfl aspect (aspects/rscfl.c, embedded in the
 * kernel) is loaded once and linked `direct` while some thread has a started
 * or pending token, unlinked when none has, so that accounting off costs the
 * join points' NOPs.  It stays loaded, so `aspect stats rscfl` and `scopectl
 * stats` show it and its counts across links.  While it is linked,
 * acct_woven is set: owners with no current token charge `unattributed`.
 * weave_lock serialises linking and unlinking, which sleep.  The control
 * calls skip all of this while acct_woven is set and their owner still needs
 * the aspect (acct.c's fast path): so the decision to unlink and the clearing
 * of acct_woven are made in one acct_lock section, before the unlink.
 */
#include "linker/weave/weave.h"
#include "acct/internal.h"
#include "console/console.h"
#include "lib/string.h"
#include "sched/sched.h"
#include "time/time.h"

#define ACCT_ASPECT "rscfl"

static struct mutex weave_lock = MUTEX_INIT(weave_lock, "acct.weave");

/* Whether some owner needs the aspect; when none does (and not forced),
 * clears acct_woven in the same section, so that no control call's fast path
 * can start a token between the test and the unlink. */
static bool weave_wanted(bool force)
{
	bool wanted = force;
	uint64_t flags = acct_lock_irqsave();
	for (unsigned i = 0; i < ACCT_MAX_OWNERS && !wanted; i++) {
		struct acct_owner *owner = &acct_owners[i];
		acct_owner_lock(owner); /* interrupts are off already */
		wanted = owner->thread_id && acct_owner_wants_weave(owner);
		acct_owner_unlock(owner, 0);
	}
	if (!wanted)
		acct_set_woven(false, clock_ns());
	acct_unlock_irqrestore(flags);
	return wanted;
}

/* The thread unlinking the aspect on accounting's behalf (under weave_lock);
 * an unlink by any other (scopectl unlink rscfl, a fault) severs every
 * owner that accounts. */
static const struct thread *unlinking_thread;

static void aspect_unlinked(const char *name)
{
	if (strcmp(name, ACCT_ASPECT) == 0 &&
	    __atomic_load_n(&unlinking_thread, __ATOMIC_RELAXED) != thread_current())
		acct_sever_owners();
}

/* The loaded aspect, loading the embedded object if need be, referenced
 * (aspect_put); NULL when it cannot be loaded (reported). */
static struct aspect *accounting_aspect(void)
{
	int err = acct_native_register();
	if (err) {
		pr_warn("acct: cannot prepare the native advice: %d\n", err);
		return NULL;
	}
	aspect_set_unlink_observer(aspect_unlinked);
	struct aspect *aspect = aspect_find(ACCT_ASPECT);
	if (aspect)
		return aspect;
	char error[LINKER_ERROR_MAX];
	err = linker_load_builtin(ACCT_ASPECT, &aspect, error, sizeof error);
	if (err) {
		pr_warn("acct: cannot load the %s aspect: %s (%d)\n", ACCT_ASPECT, error, err);
		return NULL;
	}
	return aspect;
}

static bool is_live(struct aspect *aspect)
{
	struct aspect_stats stats;
	return aspect && aspect_get_stats(aspect, &stats) == 0 && stats.state == ASPECT_LIVE;
}

/* The aspect is live: accounting is woven, as of now. */
static void set_woven(void)
{
	uint64_t flags = acct_lock_irqsave();
	uint64_t now = clock_ns();
	acct_set_woven(true, now);
	acct_linked_at_ns = now;
	acct_unlock_irqrestore(flags);
}

/* Links when forced or wanted, unlinks when neither.  Decides under
 * weave_lock, so that two threads' updates cannot cross. */
static void weave(bool force)
{
	mutex_lock(&weave_lock);
	bool wanted = weave_wanted(force);
	struct aspect *aspect = wanted ? accounting_aspect() : aspect_find(ACCT_ASPECT);
	bool live = is_live(aspect);
	if (wanted && aspect && !live) {
		int err = aspect_link(aspect, ASPECT_BINDING_DIRECT);
		if (err)
			pr_warn("acct: cannot link the %s aspect: %d\n", ACCT_ASPECT, err);
		live = err == 0;
	}
	if (wanted && live) {
		set_woven(); /* also when it was linked by hand before */
	} else if (!wanted && live) {
		__atomic_store_n(&unlinking_thread, thread_current(), __ATOMIC_RELAXED);
		aspect_unlink(aspect); /* acct_woven was cleared by weave_wanted */
		__atomic_store_n(&unlinking_thread, NULL, __ATOMIC_RELAXED);
	}
	mutex_unlock(&weave_lock);
	aspect_put(aspect);
}

void acct_weave_update(void)
{
	weave(false);
}

void acct_weave_attach(void)
{
	weave(true);
}
