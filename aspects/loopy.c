/*
 * loopy: never returns from its advice on vfs.stat, to prove the time budget.
 * Linked `direct`, the tick finds the CPU in loopy's text past its budget
 * (10 ms unless aspect_budget_us= says otherwise), aborts the advice, unlinks
 * the aspect and reports it; the vfs_stat call then completes.
 */
#include <microscope/aspect.h>

MS_ASPECT("loopy", "loops forever in its advice on vfs.stat (for the tests)");

static volatile uint64_t spins;

static void spin(struct ms_ctx *ctx)
{
	ms_counter_add("entered", 1);
	for (;;)
		spins++;
}

MS_BEFORE("vfs.stat", spin, 0);
