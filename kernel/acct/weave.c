/*
 * Weaving the accounting advice: attached to every join point ("*") while
 * some thread has a current or pending token, detached when none has, so
 * that accounting off costs the join points' NOPs.  The advice is built in
 * and linked direct through jp_attach; the aspect-object form (linker/) is
 * the next step.  weave_lock serialises attach and detach, which sleep.
 */
#include "acct/internal.h"
#include "console/console.h"
#include "joinpoint/joinpoint.h"
#include "sched/sched.h"

static struct mutex weave_lock = MUTEX_INIT(weave_lock, "acct.weave");
static int weave_handle; /* > 0 while attached */

static bool weave_wanted(void)
{
	bool wanted = false;
	uint64_t flags = spin_lock_irqsave(&acct_lock);
	for (unsigned i = 0; i < ACCT_MAX_OWNERS; i++) {
		const struct acct_owner *o = &acct_owners[i];
		if (o->thread_id && (o->current >= 0 || o->next >= 0))
			wanted = true;
	}
	spin_unlock_irqrestore(&acct_lock, flags);
	return wanted;
}

/* Attaches when forced or wanted, detaches when neither.  Decides under
 * weave_lock, so that two threads' updates cannot cross. */
static void weave(bool force)
{
	mutex_lock(&weave_lock);
	bool wanted = force || weave_wanted();
	if (wanted && weave_handle <= 0) {
		weave_handle = jp_attach("*", &acct_advice);
		if (weave_handle < 0)
			pr_warn("acct: cannot attach the accounting advice: %d\n", weave_handle);
	} else if (!wanted && weave_handle > 0) {
		jp_detach(weave_handle);
		weave_handle = 0;
	}
	mutex_unlock(&weave_lock);
}

void acct_weave_update(void)
{
	weave(false);
}

void acct_weave_attach(void)
{
	weave(true);
}
