/*
 * rscfl: per-activity accounting (Resourceful).  The kernel links it `direct`
 * when the first activity starts and unlinks it when the last one stops
 * (kernel/acct/weave.c), so accounting off costs the join points' NOPs.
 *
 * The measuring is the kernel's own: kernel/acct/native.c gives the linker a
 * native advice for this reserved name, which the direct binding weaves on
 * every join point ("*") while the aspect is linked, called by the join point
 * without the guard or the aspect ABI (an event cost about 560 instructions
 * as advice in this object; see docs/ACCOUNTING.md).  So this object is the
 * name the accounting is linked, listed and counted by, and what makes it
 * link direct only; its policy (what each join point means) is in native.c.
 *
 *     ms_acct via librscfl links it; `aspect stats rscfl` shows its events.
 */
#include <microscope/aspect.h>

MS_ASPECT("rscfl", "per-activity accounting: time, interrupts, memory per subsystem");
