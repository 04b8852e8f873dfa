/*
 * The screen console.  On a linear framebuffer (32 bpp RGB, as GRUB sets up
 * under UEFI and VBE) text is drawn with a PSF font that the build converts
 * from a Debian console font; when the loader left VGA text mode the text
 * console (vga/vga.h) is used instead.  "console=serial" on the command line
 * keeps the screen out of it, "console=all" (the default) lets it in.
 *
 *     mm_init();            // the framebuffer is mapped with vm_map_mmio()
 *     fbcon_init();         // after cmdline_apply(): honours console=
 *     pr_info("on serial and on screen\n");
 */
#ifndef DRIVERS_FB_FBCON_H
#define DRIVERS_FB_FBCON_H

/* Registers the screen console that fits the loader's display.  Returns 0,
 * -ENODEV when console=serial or there is no usable display, -ENOTSUP for a
 * framebuffer that is not 32 bpp RGB (and not text mode), or -ENOMEM when
 * the framebuffer could not be mapped. */
int fbcon_init(void);

#endif
