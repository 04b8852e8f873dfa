/*
 * The telemetry module's own declarations, for its system calls.  Nothing
 * outside kernel/telemetry/ includes this file.
 */
#ifndef KERNEL_TELEMETRY_INTERNAL_H
#define KERNEL_TELEMETRY_INTERNAL_H

#include "telemetry/telemetry.h"

/* The channel with ms_tel_read's id, or NULL. */
struct tel_channel *tel_channel_by_id(int id);

#endif
