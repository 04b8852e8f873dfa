/*
 * nicbabble: answers every nic.sample with something that is not a mode
 * (for the tests: a monitor that talks nonsense must leave the NIC in
 * interrupt mode).  Goes round four answers: a negative value, one past the
 * last mode, polling with a hold (a hold goes with interrupts only), and
 * interrupts with a hold above the driver's limit (NIC_HOLD_MAX_FRAMES).
 */
#include <microscope/aspect.h>

MS_ASPECT("nicbabble", "answers nic.sample with values that name no mode (for the tests)");

#define HOLD_SHIFT 8 /* NIC_REPLY_HOLD_SHIFT */

static const int64_t answers[] = {
    -1,
    3,
    1 | (int64_t)16 << HOLD_SHIFT,    /* polling, held */
    0 | (int64_t)4097 << HOLD_SHIFT, /* interrupts, held too long */
};
static unsigned next_answer;

static void babble(struct ms_ctx *ctx)
{
	ms_reply(ctx, answers[next_answer]);
	next_answer = (next_answer + 1) % (sizeof answers / sizeof answers[0]);
	ms_counter_add("answers", 1);
}

MS_BEFORE("nic.sample", babble, 0);
