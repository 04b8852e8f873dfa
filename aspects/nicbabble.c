/*
 * nicbabble: answers every nic.sample with something that is not a mode
 * (for the tests: a monitor that talks nonsense must leave the NIC in
 * interrupt mode).  Goes round five answers: a negative value, one past the
 * last mode, and modes whose holds are above the driver's bounds (more than
 * NIC_HOLD_MAX_FRAMES frames or NIC_HOLD_MAX_SAMPLES samples) or have bits
 * beyond the reply's fields.
 */
#include <microscope/aspect.h>

MS_ASPECT("nicbabble", "answers nic.sample with values that name no mode (for the tests)");

#define FRAMES_SHIFT  8  /* NIC_REPLY_FRAMES_SHIFT */
#define SAMPLES_SHIFT 24 /* NIC_REPLY_SAMPLES_SHIFT */

static const int64_t answers[] = {
    -1,
    3,
    0 | (int64_t)4097 << FRAMES_SHIFT | (int64_t)1 << SAMPLES_SHIFT, /* frames: too many */
    1 | (int64_t)64 << FRAMES_SHIFT | (int64_t)17 << SAMPLES_SHIFT,  /* samples: too many */
    2 | (int64_t)1 << 40,                                            /* beyond the fields */
};
static unsigned next_answer;

static void babble(struct ms_ctx *ctx)
{
	ms_reply(ctx, answers[next_answer]);
	next_answer = (next_answer + 1) % (sizeof answers / sizeof answers[0]);
	ms_counter_add("answers", 1);
}

MS_BEFORE("nic.sample", babble, 0);
