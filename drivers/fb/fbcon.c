/*
 * Framebuffer console.  Text is kept nowhere but in the pixels: each character
 * is drawn as a font glyph into its cell, and scrolling copies the pixel rows
 * of all text lines but the first one line up, then clears the last line.
 * The framebuffer is written only from fb_write, which the console calls under
 * its lock (or alone, in a panic), so the cursor needs no lock of its own.
 * Invariant: column < columns and row < rows between calls.  The loader's
 * geometry is checked first: at most FBCON_MAX_PIXELS each way, and a pitch
 * that holds a row (computed in 64 bits, so a huge width cannot wrap past it).
 *
 * The font (fbcon_font_*) is generated at build time by tools/mkfont.py: 256
 * glyphs for code points 0-255, fbcon_font_row_bytes bytes per pixel row,
 * most significant bit leftmost.
 */
#include "fb/internal.h"

#include <stdbool.h>
#include <stdint.h>

#include "boot/bootinfo.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "vga/vga.h"

#define TAB_WIDTH  8
#define FOREGROUND 0xc0 /* light grey, per channel */

extern const uint32_t fbcon_font_width, fbcon_font_height, fbcon_font_row_bytes;
extern const uint8_t fbcon_font_glyphs[];

static bool screen_enabled = true;

static struct {
	uint8_t *pixels;
	uint32_t pitch;
	uint32_t width;       /* pixels */
	uint32_t pixel_bytes; /* 4 (32 bpp) or 3 (24 bpp) */
	uint32_t foreground, background;
	unsigned columns, rows;
	unsigned column, row;
} fb;

static int set_console(const char *value)
{
	if (value && !strcmp(value, "serial"))
		screen_enabled = false;
	else if (value && !strcmp(value, "all"))
		screen_enabled = true;
	else
		return -1;
	return 0;
}
KERNEL_PARAM(console, set_console, "serial|all: serial only, or serial and screen");

static void put_pixel(uint8_t *at, uint32_t value)
{
	if (fb.pixel_bytes == 4) {
		*(volatile uint32_t *)at = value;
		return;
	}
	volatile uint8_t *bytes = at;
	bytes[0] = (uint8_t)value;
	bytes[1] = (uint8_t)(value >> 8);
	bytes[2] = (uint8_t)(value >> 16);
}

static void draw_glyph(unsigned column, unsigned row, uint8_t c)
{
	const uint8_t *glyph =
	    fbcon_font_glyphs + (uint64_t)c * fbcon_font_height * fbcon_font_row_bytes;
	uint8_t *line = fb.pixels + (uint64_t)row * fbcon_font_height * fb.pitch +
			(uint64_t)column * fbcon_font_width * fb.pixel_bytes;
	for (uint32_t y = 0; y < fbcon_font_height; y++, line += fb.pitch) {
		const uint8_t *bits = glyph + y * fbcon_font_row_bytes;
		for (uint32_t x = 0; x < fbcon_font_width; x++) {
			bool on = bits[x / 8] & (0x80 >> (x % 8));
			put_pixel(line + x * fb.pixel_bytes, on ? fb.foreground : fb.background);
		}
	}
}

/* Fills pixel rows [first, first + count) with the background. */
static void clear_pixel_rows(uint64_t first, uint64_t count)
{
	for (uint64_t y = first; y < first + count; y++) {
		uint8_t *line = fb.pixels + y * fb.pitch;
		for (uint32_t x = 0; x < fb.width; x++)
			put_pixel(line + x * fb.pixel_bytes, fb.background);
	}
}

/* One text line up: 64-bit copies (no SSE in the kernel), a pixel row at a
 * time; the row is rounded up to whole words, which the pitch check allows. */
static void scroll(void)
{
	uint64_t line_rows = fbcon_font_height;
	uint64_t words = ((uint64_t)fb.width * fb.pixel_bytes + 7) / 8;
	for (uint64_t y = 0; y < (fb.rows - 1) * line_rows; y++) {
		volatile uint64_t *dst = (volatile uint64_t *)(fb.pixels + y * fb.pitch);
		const volatile uint64_t *src =
		    (const volatile uint64_t *)(fb.pixels + (y + line_rows) * fb.pitch);
		for (uint64_t i = 0; i < words; i++)
			dst[i] = src[i];
	}
	clear_pixel_rows((fb.rows - 1) * line_rows, line_rows);
}

static void new_line(void)
{
	fb.column = 0;
	if (++fb.row == fb.rows) {
		scroll();
		fb.row = fb.rows - 1;
	}
}

static void put_char(char c)
{
	switch (c) {
	case '\n': new_line(); return;
	case '\r': fb.column = 0; return;
	case '\b':
		if (fb.column)
			fb.column--;
		return;
	case '\t':
		do
			put_char(' ');
		while (fb.column % TAB_WIDTH);
		return;
	}
	draw_glyph(fb.column, fb.row, (uint8_t)c);
	if (++fb.column == fb.columns)
		new_line();
}

static void fb_write(const char *text, size_t length)
{
	for (size_t i = 0; i < length; i++)
		put_char(text[i]);
}

static struct console_sink fb_sink = {.name = "fb", .write = fb_write};

static uint32_t rgb(const struct boot_framebuffer *info, uint8_t level)
{
	return (uint32_t)level << info->red_shift | (uint32_t)level << info->green_shift |
	       (uint32_t)level << info->blue_shift;
}

bool fbcon_geometry_usable(const struct boot_framebuffer *info)
{
	if (info->bpp != 32 && info->bpp != 24)
		return false;
	if (!info->width || !info->height || info->width > FBCON_MAX_PIXELS ||
	    info->height > FBCON_MAX_PIXELS)
		return false;
	uint64_t row_bytes = (uint64_t)info->width * (info->bpp / 8); /* no wrap in 64 bits */
	return info->pitch >= (row_bytes + 7) / 8 * 8;
}

static int fb_console_start(const struct boot_framebuffer *info)
{
	uint32_t pixel_bytes = info->bpp / 8;
	if (!fbcon_geometry_usable(info))
		return -ENOTSUP;
	fb.columns = info->width / fbcon_font_width;
	fb.rows = info->height / fbcon_font_height;
	if (!fb.columns || !fb.rows)
		return -ENOTSUP;
	fb.pixels = vm_map_mmio(info->address, (uint64_t)info->pitch * info->height);
	if (!fb.pixels)
		return -ENOMEM;
	fb.pitch = info->pitch;
	fb.width = info->width;
	fb.pixel_bytes = pixel_bytes;
	fb.foreground = rgb(info, FOREGROUND);
	fb.background = 0;
	fb.column = fb.row = 0;
	clear_pixel_rows(0, info->height);
	console_register(&fb_sink);
	pr_info("fbcon: %ux%u, %u bpp at %#lx, %ux%u characters\n", info->width, info->height,
		info->bpp, info->address, fb.columns, fb.rows);
	return 0;
}

int fbcon_init(void)
{
	const struct boot_info *boot = bootinfo();
	if (!screen_enabled)
		return -ENODEV;
	if (boot->has_framebuffer && boot->framebuffer.type == 1) {
		int result = fb_console_start(&boot->framebuffer);
		if (result < 0)
			pr_warn("fbcon: cannot use the %ux%u %u bpp framebuffer (error %d)\n",
				boot->framebuffer.width, boot->framebuffer.height,
				boot->framebuffer.bpp, result);
		return result;
	}
	int result = vga_console_init();
	if (result == -ENODEV)
		pr_info("fbcon: no display from the loader (framebuffer %s, type %u)\n",
			boot->has_framebuffer ? "present" : "absent", boot->framebuffer.type);
	return result;
}
