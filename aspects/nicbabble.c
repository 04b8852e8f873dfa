/*
 * nicbabble: answers every nic.sample with something that is not a mode
 * (for the tests: a monitor that talks nonsense must leave the NIC in
 * interrupt mode).  Alternates a negative value and one past the last mode.
 */
#include <microscope/aspect.h>

MS_ASPECT("nicbabble", "answers nic.sample with values that name no mode (for the tests)");

static int64_t next_answer = -1;

static void babble(struct ms_ctx *ctx)
{
	ms_reply(ctx, next_answer);
	next_answer = next_answer < 0 ? 3 : -1;
	ms_counter_add("answers", 1);
}

MS_BEFORE("nic.sample", babble, 0);
