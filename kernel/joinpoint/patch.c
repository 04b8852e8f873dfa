/*
 * Weaving: flipping a join point's sites between the 5-byte NOP that
 * JOINPOINT_DEFINE emits (0f 1f 44 00 00) and "jmp rel32" to the site's
 * dispatching path (e9 + target - (site + 5)), or to the same behind a check
 * of the threads its advice is for (scoped_target: joinpoint.h, "Advice for
 * some threads").
 *
 * Kernel text is mapped read-only and executable; it is written through its
 * physmap alias instead, which mm maps read-write: the image sits at
 * KERNEL_VMA + its physical address (kernel.ld), so the alias of code is
 * PHYSMAP_BASE + (code - KERNEL_VMA).  A site is checked to hold one of the
 * two expected forms before it is written; anything else is a panic.
 *
 * Other CPUs may run a site while it changes, so the five bytes never change
 * at once (a CPU could decode a torn instruction).  The int3 protocol, for
 * all sites of one join point together:
 *   1. write int3 (cc) over byte 0;            sync every CPU
 *   2. write bytes 1-4 of the new instruction; sync
 *   3. write byte 0 of the new instruction;    sync
 * A sync is a waiting cross-CPU call that runs a serialising instruction
 * (CPUID) on every online CPU, so none still executes bytes fetched before
 * the write.  Between steps 1 and 3 a CPU reaching a site traps on the int3;
 * the breakpoint handler sees that the site belongs to the join point being
 * patched and resumes at the new instruction's effect: the jump's target, or
 * the byte after the NOP.  Both the old and the new behaviour are correct at
 * that moment (attach publishes the list before enabling, detach disables
 * before unpublishing).  The handler stays armed until the last sync has
 * returned, which every CPU answers only after leaving the handler.
 *
 * Writers are serialised by the caller (the writer lock), which must not be
 * a lock other CPUs spin on with interrupts off: they could not answer the
 * syncs.
 */
#include "joinpoint/internal.h"

#include "arch/x86_64/cpu.h"
#include "arch/x86_64/layout.h"
#include "arch/x86_64/traps.h"
#include "lib/string.h"
#include "panic/panic.h"
#include "smp/smp.h"

#define SITE_BYTES       5
#define OPCODE_JMP_REL32 0xe9
#define OPCODE_INT3      0xcc

static const uint8_t site_nop[SITE_BYTES] = {0x0f, 0x1f, 0x44, 0x00, 0x00};

/* The join point whose sites are mid-patch (NULL: none), and what they are
 * becoming; read by the breakpoint handler. */
static const struct joinpoint *patching;
static enum jp_site_state patching_form;
/* See site_breakpoint; read in a hang report (tools/qemu.py --hang-symbols)
 * or with a debugger: stale, the site was whole in memory; orphaned, it held
 * int3 while no patch of its join point was in progress (which the protocol
 * rules out: one would mean a patch left unfinished). */
static uint64_t stale_breakpoints, orphaned_breakpoints;

static void jump_bytes(const struct jp_site *site, uint64_t target, uint8_t out[SITE_BYTES])
{
	int64_t displacement = (int64_t)(target - (site->code + SITE_BYTES));
	ASSERT(displacement >= INT32_MIN && displacement <= INT32_MAX);
	int32_t rel32 = (int32_t)displacement;
	out[0] = OPCODE_JMP_REL32;
	memcpy(out + 1, &rel32, sizeof rel32);
}

enum jp_site_state jp_site_read(const struct jp_site *site)
{
	const uint8_t *code = (const uint8_t *)site->code;
	uint8_t jump[SITE_BYTES], scoped[SITE_BYTES];
	jump_bytes(site, site->target, jump);
	jump_bytes(site, site->scoped_target, scoped);
	if (!memcmp(code, site_nop, SITE_BYTES))
		return JP_SITE_NOP;
	if (!memcmp(code, jump, SITE_BYTES))
		return JP_SITE_JUMP;
	if (!memcmp(code, scoped, SITE_BYTES))
		return JP_SITE_SCOPED;
	return JP_SITE_CORRUPT;
}

static volatile uint8_t *writable_alias(uint64_t code)
{
	ASSERT(code >= KERNEL_VMA);
	return (volatile uint8_t *)(PHYSMAP_BASE + (code - KERNEL_VMA));
}

static void serialize_here(void *arg)
{
	uint32_t regs[4];
	(void)arg;
	cpuid(0, 0, regs);
}

/* Where a CPU at site goes when the site holds form. */
static uint64_t resume_at(const struct jp_site *site, enum jp_site_state form)
{
	return form == JP_SITE_JUMP     ? site->target
	       : form == JP_SITE_SCOPED ? site->scoped_target
					: site->code + SITE_BYTES;
}

static void sync_all_cpus(void)
{
	if (smp_call_all(serialize_here, NULL))
		panic("joinpoint: patching text from an interrupt handler");
}

/* The site whose first byte is at address, or NULL. */
static const struct jp_site *site_at(uint64_t address)
{
	const struct jp_site *first, *last;
	jp_site_bounds(&first, &last);
	for (const struct jp_site *site = first; site < last; site++)
		if (site->code == address)
			return site;
	return NULL;
}

/* A breakpoint in kernel mode at a site.  While the site's join point is
 * being patched: resume as the new instruction would.  Otherwise the CPU ran
 * bytes fetched before a sync (an emulator's stale translation can do that):
 * resume as the instruction now in memory would, without running the site
 * again (a stale translation may be served again, and the CPU would loop on
 * it).  The order of the reads matters: int3 is in memory only while its
 * join point is being patched, so a handler that finds int3 still there and
 * then does not find the patch in progress saw the patch end in between, and
 * the site is whole again. */
static bool site_breakpoint(struct trap_frame *frame)
{
	const struct jp_site *site = site_at(frame->rip - 1);
	if (!site)
		return false;
	for (int look = 0; look < 2; look++) {
		if (site->joinpoint == __atomic_load_n(&patching, __ATOMIC_ACQUIRE)) {
			frame->rip = resume_at(site, patching_form);
			return true;
		}
		if (__atomic_load_n((const uint8_t *)site->code, __ATOMIC_ACQUIRE) != OPCODE_INT3)
			break;
	}
	__atomic_fetch_add(&stale_breakpoints, 1, __ATOMIC_RELAXED);
	enum jp_site_state now = jp_site_read(site);
	if (now == JP_SITE_CORRUPT) { /* int3 with no patch in progress: look again */
		__atomic_fetch_add(&orphaned_breakpoints, 1, __ATOMIC_RELAXED);
		frame->rip = site->code;
	} else {
		frame->rip = resume_at(site, now);
	}
	return true;
}

/* Does site belong to jp and need changing?  Panics on a corrupt site. */
static bool needs_patch(const struct joinpoint *jp, const struct jp_site *site,
			enum jp_site_state form)
{
	if (site->joinpoint != jp)
		return false;
	enum jp_site_state state = jp_site_read(site);
	if (state == JP_SITE_CORRUPT)
		panic("joinpoint %s: site %#lx holds neither NOP nor jump", jp->name, site->code);
	return state != form;
}

enum patch_step { STEP_INT3, STEP_TAIL, STEP_HEAD };

static void write_step(const struct joinpoint *jp, enum jp_site_state form, enum patch_step step)
{
	const struct jp_site *first, *last;
	jp_site_bounds(&first, &last);
	for (const struct jp_site *site = first; site < last; site++) {
		if (site->joinpoint != jp)
			continue;
		uint8_t bytes[SITE_BYTES];
		if (form == JP_SITE_NOP)
			memcpy(bytes, site_nop, SITE_BYTES);
		else
			jump_bytes(site, resume_at(site, form), bytes);
		volatile uint8_t *alias = writable_alias(site->code);
		if (step == STEP_INT3)
			alias[0] = OPCODE_INT3;
		else if (step == STEP_TAIL)
			for (int i = 1; i < SITE_BYTES; i++)
				alias[i] = bytes[i];
		else
			alias[0] = bytes[0];
	}
}

void jp_patch_sites(const struct joinpoint *jp, enum jp_site_state form)
{
	static bool handler_installed;
	const struct jp_site *first, *last;
	unsigned changing = 0;

	jp_site_bounds(&first, &last);
	for (const struct jp_site *site = first; site < last; site++)
		changing += needs_patch(jp, site, form);
	if (!changing)
		return;
	if (!handler_installed) {
		trap_set_kernel_breakpoint_handler(site_breakpoint);
		handler_installed = true;
	}
	ASSERT(form != JP_SITE_CORRUPT);
	patching_form = form;
	__atomic_store_n(&patching, jp, __ATOMIC_SEQ_CST);
	write_step(jp, form, STEP_INT3);
	sync_all_cpus();
	write_step(jp, form, STEP_TAIL);
	sync_all_cpus();
	write_step(jp, form, STEP_HEAD);
	sync_all_cpus();
	__atomic_store_n(&patching, NULL, __ATOMIC_SEQ_CST);
}

unsigned long jp_site_count(void)
{
	const struct jp_site *first, *last;
	jp_site_bounds(&first, &last);
	return (unsigned long)(last - first);
}
