/* The framebuffer console's check of the loader's geometry, shared by
 * fbcon.c and its suite (tests.c). */
#ifndef DRIVERS_FB_INTERNAL_H
#define DRIVERS_FB_INTERNAL_H

#include <stdbool.h>

#include "boot/bootinfo.h"
#include "fb/fbcon.h"

#define FBCON_MAX_PIXELS 16384 /* per side: past 8K with room to spare */

/* Whether fbcon can draw on info: 24 or 32 bpp, width and height from 1 to
 * FBCON_MAX_PIXELS, and a pitch of at least one row of pixels rounded up to
 * 8 bytes. */
bool fbcon_geometry_usable(const struct boot_framebuffer *info);

#endif
