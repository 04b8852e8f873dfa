/*
 * The VGA text-mode console: 80x25 characters at 0xB8000, for machines whose
 * loader left the display in text mode (multiboot1 without a framebuffer, or
 * a multiboot2 framebuffer of type EGA text).  Light grey on black, scrolling,
 * with the hardware cursor following the output.
 *
 *     mm_init();                     // the screen is mapped with vm_map_mmio()
 *     if (vga_console_init() == 0)   // a console sink from now on
 *             pr_info("hello, screen\n");
 */
#ifndef DRIVERS_VGA_VGA_H
#define DRIVERS_VGA_VGA_H

/* Registers the text screen as a console sink when the loader left text mode.
 * Returns 0, -ENODEV when the display is not in text mode, or -ENOMEM when
 * the screen could not be mapped. */
int vga_console_init(void);

#endif
