/*
 * faulty: faults on purpose, to prove fault containment.  Its advice on
 * vfs.stat counts the call, then writes through a bad pointer.  Linked
 * `direct`, the kernel catches the page fault in the aspect's text, unlinks the
 * aspect, reports it, and the vfs_stat call completes; in a monitor process
 * the monitor dies and the kernel unlinks the aspect the same way.
 */
#include <microscope/aspect.h>

MS_ASPECT("faulty", "faults in its advice on vfs.stat (for the tests)");

/* volatile: the compiler may not turn the bad write into a trap instruction. */
static int *volatile bad_pointer = (int *)0x18;

static void fault(struct ms_ctx *ctx)
{
	ms_counter_add("before_fault", 1);
	*bad_pointer = 1;
	ms_counter_add("after_fault", 1); /* never reached */
}

MS_BEFORE("vfs.stat", fault, 0);
