/* What the files of kernel/trace share: the recorder's advice. */
#ifndef KERNEL_TRACE_INTERNAL_H
#define KERNEL_TRACE_INTERNAL_H

#include "trace/trace.h"

struct jp_advice;
extern const struct jp_advice trace_recorder;

#endif
