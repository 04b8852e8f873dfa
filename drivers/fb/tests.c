/*
 * The fbcon suite: the loader's framebuffer geometry is checked before a
 * pixel is drawn.  A width whose row bytes wrap in 32 bits (0x40000001 *
 * 4 = 4) must not slip past the pitch, nor may absurd sizes.
 */
#include "fb/internal.h"
#include "ktest/ktest.h"

static struct boot_framebuffer framebuffer(uint32_t width, uint32_t height, uint32_t pitch,
					   uint8_t bpp)
{
	return (struct boot_framebuffer){
	    .width = width, .height = height, .pitch = pitch, .bpp = bpp, .type = 1};
}

static void geometry_is_checked_without_wrapping(struct ktest *t)
{
	struct boot_framebuffer fb = framebuffer(1024, 768, 4096, 32);
	EXPECT_TRUE(t, fbcon_geometry_usable(&fb));
	fb = framebuffer(1024, 768, 3072, 24);
	EXPECT_TRUE(t, fbcon_geometry_usable(&fb));
	fb = framebuffer(1024, 768, 4095, 32); /* a pitch short of a row */
	EXPECT_FALSE(t, fbcon_geometry_usable(&fb));
	fb = framebuffer(0x40000001u, 768, 8, 32); /* 32-bit row bytes wrap to 4 */
	EXPECT_FALSE(t, fbcon_geometry_usable(&fb));
	fb = framebuffer(1024, 0x80000000u, 4096, 32);
	EXPECT_FALSE(t, fbcon_geometry_usable(&fb));
	fb = framebuffer(FBCON_MAX_PIXELS + 1, 768, 0xffffffffu, 32);
	EXPECT_FALSE(t, fbcon_geometry_usable(&fb));
	fb = framebuffer(1024, 768, 4096, 16);
	EXPECT_FALSE(t, fbcon_geometry_usable(&fb));
}

KTEST_SUITE(fbcon, KTEST_CASE(geometry_is_checked_without_wrapping));
