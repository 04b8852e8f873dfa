/*
 * VGA text console.  The screen is an array of 16-bit cells (character in the
 * low byte, attribute in the high byte) written only through vga_write, which
 * the console calls under its lock (or alone, in a panic), so the cursor
 * position needs no lock of its own.  Invariant: 0 <= column < columns and
 * 0 <= row < rows between calls; a full screen scrolls by one line.
 */
#include "vga/vga.h"

#include <stdint.h>

#include "arch/x86_64/cpu.h"
#include "boot/bootinfo.h"
#include "console/console.h"
#include "lib/errno.h"
#include "mm/mm.h"

#define VGA_TEXT_PHYS 0xb8000
#define VGA_COLUMNS   80
#define VGA_ROWS      25
#define VGA_ATTRIBUTE 0x07 /* light grey on black */
#define CRTC_INDEX    0x3d4
#define CRTC_DATA     0x3d5
#define TAB_WIDTH     8

static volatile uint16_t *screen;
static unsigned columns = VGA_COLUMNS, rows = VGA_ROWS;
static unsigned column, row;

static uint16_t cell(char c)
{
	return (uint16_t)(VGA_ATTRIBUTE << 8 | (uint8_t)c);
}

static void clear_row(unsigned target)
{
	for (unsigned x = 0; x < columns; x++)
		screen[target * columns + x] = cell(' ');
}

static void scroll(void)
{
	for (unsigned i = 0; i < (rows - 1) * columns; i++)
		screen[i] = screen[i + columns];
	clear_row(rows - 1);
}

static void new_line(void)
{
	column = 0;
	if (++row == rows) {
		scroll();
		row = rows - 1;
	}
}

static void move_cursor(void)
{
	uint16_t position = (uint16_t)(row * columns + column);
	outb(CRTC_INDEX, 0x0f);
	outb(CRTC_DATA, (uint8_t)position);
	outb(CRTC_INDEX, 0x0e);
	outb(CRTC_DATA, (uint8_t)(position >> 8));
}

static void put_char(char c)
{
	switch (c) {
	case '\n': new_line(); return;
	case '\r': column = 0; return;
	case '\b':
		if (column)
			column--;
		return;
	case '\t':
		do
			put_char(' ');
		while (column % TAB_WIDTH);
		return;
	}
	screen[row * columns + column] = cell(c);
	if (++column == columns)
		new_line();
}

static void vga_write(const char *text, size_t length)
{
	for (size_t i = 0; i < length; i++)
		put_char(text[i]);
	move_cursor();
}

static struct console_sink vga_sink = {.name = "vga", .write = vga_write};

/* Text mode is what a multiboot1 loader leaves unless it reports a
 * framebuffer, and what a type-2 (EGA text) framebuffer means. */
static bool loader_left_text_mode(const struct boot_info *boot, uint64_t *phys)
{
	*phys = VGA_TEXT_PHYS;
	if (!boot->has_framebuffer)
		return boot->protocol == BOOT_MULTIBOOT1;
	if (boot->framebuffer.type != 2)
		return false;
	*phys = boot->framebuffer.address;
	if (boot->framebuffer.width && boot->framebuffer.height) {
		columns = boot->framebuffer.width;
		rows = boot->framebuffer.height;
	}
	return true;
}

int vga_console_init(void)
{
	uint64_t phys;
	if (!loader_left_text_mode(bootinfo(), &phys))
		return -ENODEV;
	screen = vm_map_mmio(phys, (uint64_t)columns * rows * 2);
	if (!screen)
		return -ENOMEM;
	for (unsigned y = 0; y < rows; y++)
		clear_row(y);
	column = row = 0;
	console_register(&vga_sink);
	pr_info("vga: %ux%u text console\n", columns, rows);
	return 0;
}
