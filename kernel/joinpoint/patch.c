/*
 * Weaving: flipping a join point's sites between the 5-byte NOP that
 * JOINPOINT_DEFINE emits (0f 1f 44 00 00) and "jmp rel32" to the site's
 * dispatching path (e9 + target - (site + 5)).
 *
 * Kernel text is mapped read-only and executable; it is written through its
 * physmap alias instead, which mm maps read-write: the image sits at
 * KERNEL_VMA + its physical address (kernel.ld), so the alias of code is
 * PHYSMAP_BASE + (code - KERNEL_VMA).  A site is checked to hold one of the
 * two expected forms before it is written; anything else is a panic.
 *
 * Safety against concurrent execution: the five bytes are written with
 * interrupts off, so this CPU cannot run the site half-written, and the CPU
 * is then serialised with CPUID.  FIXME: with other CPUs online this is not
 * enough: a CPU fetching the site mid-write could decode a torn instruction.
 * The upgrade is the int3 protocol (write 0xcc at byte 0, sync every CPU,
 * write bytes 1-4, sync, write byte 0, sync, with the #BP handler resuming a
 * CPU that hit the int3 at site + 5 or the target by the site's state) once
 * the interrupt code offers a cross-CPU call; until then a warning is printed
 * when patching with more than one CPU up.
 */
#include "joinpoint/internal.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/layout.h"
#include "console/console.h"
#include "lib/string.h"
#include "panic/panic.h"

#define SITE_BYTES       5
#define OPCODE_JMP_REL32 0xe9

static const uint8_t site_nop[SITE_BYTES] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

static void jump_bytes(const struct jp_site *site, uint8_t out[SITE_BYTES])
{
	int64_t displacement = (int64_t)(site->target - (site->code + SITE_BYTES));
	ASSERT(displacement >= INT32_MIN && displacement <= INT32_MAX);
	int32_t rel32 = (int32_t)displacement;
	out[0] = OPCODE_JMP_REL32;
	memcpy(out + 1, &rel32, sizeof rel32);
}

enum jp_site_state jp_site_read(const struct jp_site *site)
{
	const uint8_t *code = (const uint8_t *)site->code;
	uint8_t jump[SITE_BYTES];
	jump_bytes(site, jump);
	if (!memcmp(code, site_nop, SITE_BYTES))
		return JP_SITE_NOP;
	if (!memcmp(code, jump, SITE_BYTES))
		return JP_SITE_JUMP;
	return JP_SITE_CORRUPT;
}

static volatile uint8_t *writable_alias(uint64_t code)
{
	ASSERT(code >= KERNEL_VMA);
	return (volatile uint8_t *)(PHYSMAP_BASE + (code - KERNEL_VMA));
}

static void serialize_cpu(void)
{
	uint32_t regs[4];
	cpuid(0, 0, regs);
}

static void write_site(const struct jp_site *site, const uint8_t bytes[SITE_BYTES])
{
	static bool warned;
	if (cpu_count > 1 && !warned) {
		warned = true;
		pr_warn("joinpoint: patching text with %u CPUs up (no cross-CPU sync yet)\n",
			cpu_count);
	}
	uint64_t flags = irq_save();
	volatile uint8_t *alias = writable_alias(site->code);
	for (int i = SITE_BYTES - 1; i >= 0; i--)
		alias[i] = bytes[i];
	serialize_cpu();
	irq_restore(flags);
}

void jp_patch_sites(const struct joinpoint *jp, bool enable)
{
	const struct jp_site *first, *last;
	jp_site_bounds(&first, &last);
	for (const struct jp_site *site = first; site < last; site++) {
		if (site->joinpoint != jp)
			continue;
		enum jp_site_state state = jp_site_read(site);
		if (state == JP_SITE_CORRUPT)
			panic("joinpoint %s: site %#lx holds neither NOP nor jump", jp->name,
			      site->code);
		uint8_t jump[SITE_BYTES];
		jump_bytes(site, jump);
		write_site(site, enable ? jump : site_nop);
	}
}

unsigned long jp_site_count(void)
{
	const struct jp_site *first, *last;
	jp_site_bounds(&first, &last);
	return (unsigned long)(last - first);
}
