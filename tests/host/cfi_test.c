// host-test-sources: kernel/lib/cfi.c
/*
 * Does the CFI interpreter step out of frames as GCC's x86_64 tables
 * describe them (a leaf without frame pointer, a function with one, an
 * epilogue between remember_state and restore_state, an outermost frame)?
 * And does it refuse every truncated, corrupted or hostile table, header,
 * CIE or FDE, and an unreadable stack, with an error and no read out of
 * bounds (the sanitizers watch), also under deterministic random corruption?
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hosttest.h"
#include "lib/cfi.h"
#include "lib/errno.h"

#define TABLES_VA   0x500000 /* .eh_frame_hdr, then .eh_frame at +EH_FRAME_AT */
#define EH_FRAME_AT 0x40
#define STACK_VA    0x7ff000

#define LEAF  0x401000 /* no frame pointer: push rbx; sub $16, rsp; ...; epilogue at +0x18 */
#define FRAME 0x401100 /* push rbp; mov rsp, rbp; ...; leave at +0x74 */
#define OUTER 0x401200 /* the return address is undefined: the outermost frame */

struct memory {
	uint8_t tables[0x200];
	size_t tables_length;
	uint64_t stack[64];
	size_t cie_at, fde_at[3]; /* offsets in tables */
};

static int read_memory(void *to, uint64_t address, size_t length, void *arg)
{
	struct memory *m = arg;
	if (address >= TABLES_VA && address - TABLES_VA <= sizeof m->tables &&
	    length <= sizeof m->tables - (address - TABLES_VA)) {
		memcpy(to, m->tables + (address - TABLES_VA), length);
		return 0;
	}
	if (address >= STACK_VA && address - STACK_VA <= sizeof m->stack &&
	    length <= sizeof m->stack - (address - STACK_VA)) {
		memcpy(to, (uint8_t *)m->stack + (address - STACK_VA), length);
		return 0;
	}
	return -EFAULT;
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

/* Appends a record (length field, then body padded to 4 with DW_CFA_nop). */
static size_t add_record(struct memory *m, const uint8_t *body, size_t length)
{
	size_t at = m->tables_length, padded = (length + 3) & ~(size_t)3;
	put32(m->tables + at, (uint32_t)padded);
	memcpy(m->tables + at + 4, body, length);
	memset(m->tables + at + 4 + length, 0, padded - length);
	m->tables_length += 4 + padded;
	return at;
}

static size_t add_cie(struct memory *m)
{
	static const uint8_t body[] = {
	    0,    0,    0,    0,    1,    'z',  'R',
	    0,    0x01, 0x78, 0x10, 0x01, 0x1b, /* id, v1, "zR", 1, -8, 16, pcrel sdata4 */
	    0x0c, 0x07, 0x08,                   /* DW_CFA_def_cfa rsp+8 */
	    0x90, 0x01,                         /* DW_CFA_offset r16 at cfa-8 */
	};
	return add_record(m, body, sizeof body);
}

static size_t add_fde(struct memory *m, size_t cie, uint64_t pc, uint32_t range, const uint8_t *ops,
		      size_t length)
{
	uint8_t body[64];
	size_t at = m->tables_length;
	put32(body, (uint32_t)(at + 4 - cie));
	put32(body + 4, (uint32_t)(pc - (TABLES_VA + at + 8)));
	put32(body + 8, range);
	body[12] = 0; /* no augmentation data */
	memcpy(body + 13, ops, length);
	return add_record(m, body, 13 + length);
}

static const uint8_t leaf_ops[] = {
    0x41, 0x0e, 0x10, 0x83, 0x02, /* +1: cfa rsp+16, rbx at cfa-16 */
    0x44, 0x0e, 0x20,             /* +5: cfa rsp+32 */
    0x53, 0x0a, 0x0e, 0x08,       /* +0x18: remember; cfa rsp+8 (the epilogue) */
    0x41, 0x0b,                   /* +0x19: restore_state: rsp+32 again */
};
static const uint8_t frame_ops[] = {
    0x41, 0x0e, 0x10, 0x86, 0x02, /* +1: cfa rsp+16, rbp at cfa-16 */
    0x43, 0x0d, 0x06,             /* +4: cfa rbp+16 */
    0x02, 0x70, 0x0c, 0x07, 0x08, /* +0x74 (advance_loc1): cfa rsp+8 */
};
static const uint8_t outer_ops[] = {0x07, 0x10}; /* DW_CFA_undefined r16 */

/* The header (version 1, pcrel sdata4, udata4, datarel sdata4), then the
 * records and the search table. */
static void build(struct memory *m)
{
	memset(m, 0, sizeof *m);
	uint8_t *h = m->tables;
	h[0] = 1, h[1] = 0x1b, h[2] = 0x03, h[3] = 0x3b;
	put32(h + 4, EH_FRAME_AT - 4);
	put32(h + 8, 3);
	m->tables_length = EH_FRAME_AT;
	m->cie_at = add_cie(m);
	m->fde_at[0] = add_fde(m, m->cie_at, LEAF, 0x20, leaf_ops, sizeof leaf_ops);
	m->fde_at[1] = add_fde(m, m->cie_at, FRAME, 0x80, frame_ops, sizeof frame_ops);
	m->fde_at[2] = add_fde(m, m->cie_at, OUTER, 0x10, outer_ops, sizeof outer_ops);
	const uint64_t pcs[3] = {LEAF, FRAME, OUTER};
	for (int i = 0; i < 3; i++) {
		put32(h + 12 + i * 8, (uint32_t)(pcs[i] - TABLES_VA));
		put32(h + 16 + i * 8, (uint32_t)m->fde_at[i]);
	}
}

static struct cfi_tables tables_of(struct memory *m)
{
	struct cfi_tables t = {0};
	if (cfi_parse_hdr(m->tables, EH_FRAME_AT, TABLES_VA, &t) == 0)
		t.eh_frame_end = TABLES_VA + m->tables_length;
	return t;
}

/* leaf (at LEAF+0x10, 32 bytes of frame) called from FRAME+0x50, called
 * from OUTER+8; FRAME's rbp points at stack[6]. */
static struct cfi_regs build_stack(struct memory *m)
{
	m->stack[2] = 0x1234;       /* leaf's saved rbx */
	m->stack[3] = FRAME + 0x50; /* leaf's return address */
	m->stack[6] = 0;            /* FRAME's saved rbp */
	m->stack[7] = OUTER + 8;    /* FRAME's return address */
	return (struct cfi_regs){.rip = LEAF + 0x10, .rsp = STACK_VA, .rbp = STACK_VA + 48};
}

static int rule_of(struct memory *m, size_t fde, uint64_t pc, struct cfi_rule *rule)
{
	return cfi_rule_at(m->tables + m->cie_at, m->tables_length - m->cie_at,
			   TABLES_VA + m->cie_at, m->tables + fde, m->tables_length - fde,
			   TABLES_VA + fde, pc, rule);
}

static void header_is_read(void)
{
	struct memory m;
	build(&m);
	struct cfi_tables t;
	REQUIRE_EQ(cfi_parse_hdr(m.tables, EH_FRAME_AT, TABLES_VA, &t), 0);
	CHECK_EQ(t.hdr, TABLES_VA);
	CHECK_EQ(t.table, TABLES_VA + 12);
	CHECK_EQ(t.fde_count, 3);
	CHECK_EQ(t.eh_frame_start, TABLES_VA + EH_FRAME_AT);
}

static void rules_follow_the_program(void)
{
	struct memory m;
	build(&m);
	struct cfi_rule r;
	REQUIRE_EQ(rule_of(&m, m.fde_at[1], FRAME, &r), 0);
	CHECK_EQ(r.cfa_register, CFI_DWARF_RSP);
	CHECK_EQ(r.cfa_offset, 8);
	CHECK_EQ(r.return_address.how, CFI_AT_CFA);
	CHECK_EQ(r.return_address.offset, -8);
	CHECK_EQ(r.rbp.how, CFI_SAME);
	REQUIRE_EQ(rule_of(&m, m.fde_at[1], FRAME + 1, &r), 0);
	CHECK_EQ(r.cfa_offset, 16);
	CHECK_EQ(r.rbp.how, CFI_AT_CFA);
	CHECK_EQ(r.rbp.offset, -16);
	REQUIRE_EQ(rule_of(&m, m.fde_at[1], FRAME + 0x73, &r), 0);
	CHECK_EQ(r.cfa_register, CFI_DWARF_RBP);
	CHECK_EQ(r.cfa_offset, 16);
	REQUIRE_EQ(rule_of(&m, m.fde_at[1], FRAME + 0x74, &r), 0);
	CHECK_EQ(r.cfa_register, CFI_DWARF_RSP);
	CHECK_EQ(r.cfa_offset, 8);
	CHECK_EQ(rule_of(&m, m.fde_at[1], FRAME + 0x80, &r), -ENOENT);
	CHECK_EQ(rule_of(&m, m.fde_at[1], FRAME - 1, &r), -ENOENT);
}

static void remember_and_restore_state(void)
{
	struct memory m;
	build(&m);
	struct cfi_rule r;
	REQUIRE_EQ(rule_of(&m, m.fde_at[0], LEAF + 0x17, &r), 0);
	CHECK_EQ(r.cfa_offset, 32);
	REQUIRE_EQ(rule_of(&m, m.fde_at[0], LEAF + 0x18, &r), 0);
	CHECK_EQ(r.cfa_offset, 8);
	REQUIRE_EQ(rule_of(&m, m.fde_at[0], LEAF + 0x19, &r), 0);
	CHECK_EQ(r.cfa_offset, 32);
	CHECK_EQ(r.cfa_register, CFI_DWARF_RSP);
}

static void steps_out_to_the_outermost_frame(void)
{
	struct memory m;
	build(&m);
	struct cfi_tables t = tables_of(&m);
	struct cfi_regs regs = build_stack(&m);
	REQUIRE_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), 0);
	CHECK_EQ(regs.rip, FRAME + 0x50);
	CHECK_EQ(regs.rsp, STACK_VA + 32);
	CHECK_EQ(regs.rbp, STACK_VA + 48); /* the leaf keeps rbp */
	REQUIRE_EQ(cfi_unwind_step(&t, &regs, CFI_RETURN_ADDRESS, read_memory, &m), 0);
	CHECK_EQ(regs.rip, OUTER + 8);
	CHECK_EQ(regs.rsp, STACK_VA + 64);
	CHECK_EQ(regs.rbp, 0);
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_RETURN_ADDRESS, read_memory, &m), CFI_OUTERMOST);
	CHECK_EQ(regs.rip, OUTER + 8);
}

/* A return address just past a function's end belongs to it (rip - 1). */
static void return_address_at_a_function_end(void)
{
	struct memory m;
	build(&m);
	struct cfi_tables t = tables_of(&m);
	struct cfi_regs regs = {.rip = FRAME + 0x80, .rsp = STACK_VA + 16, .rbp = STACK_VA + 48};
	m.stack[2] = OUTER + 8; /* after leave: the return address at rsp */
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_RETURN_ADDRESS, read_memory, &m), 0);
	CHECK_EQ(regs.rip, OUTER + 8);
	regs = (struct cfi_regs){.rip = FRAME + 0x80, .rsp = STACK_VA};
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -ENOENT);
}

static void no_fde_is_enoent(void)
{
	struct memory m;
	build(&m);
	struct cfi_tables t = tables_of(&m);
	struct cfi_regs regs = {.rip = 0x400000, .rsp = STACK_VA};
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -ENOENT);
	regs.rip = LEAF + 0x40; /* between LEAF's end and FRAME */
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -ENOENT);
	struct cfi_tables none = {0};
	CHECK_EQ(cfi_unwind_step(&none, &regs, CFI_FIRST_FRAME, read_memory, &m), -ENOENT);
}

static void unreadable_stack_is_efault(void)
{
	struct memory m;
	build(&m);
	struct cfi_tables t = tables_of(&m);
	struct cfi_regs regs = {.rip = LEAF + 0x10, .rsp = 0xdead0000, .rbp = 0x10};
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -EFAULT);
	CHECK_EQ(regs.rsp, 0xdead0000); /* unchanged */
	regs = (struct cfi_regs){.rip = FRAME + 0x10, .rsp = STACK_VA, .rbp = 0x10};
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -EINVAL);
	t.table = 0x10; /* the search table unreadable */
	regs = build_stack(&m);
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -EFAULT);
}

static void hostile_headers_are_refused(void)
{
	struct memory m;
	struct cfi_tables t;
	const struct {
		size_t at;
		uint8_t value;
	} changes[] = {{0, 2}, {1, 0x9b}, {2, 0x04}, {3, 0x1b}, {11, 0x7f}, {9, 0x10}};
	for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++) {
		build(&m);
		m.tables[changes[i].at] = changes[i].value;
		CHECK_EQ(cfi_parse_hdr(m.tables, EH_FRAME_AT, TABLES_VA, &t), -EINVAL);
	}
	build(&m);
	CHECK_EQ(cfi_parse_hdr(m.tables, 12 + 3 * 8 - 1, TABLES_VA, &t), -EINVAL); /* table cut */
	CHECK_EQ(cfi_parse_hdr(m.tables, 7, TABLES_VA, &t), -EINVAL);
	CHECK_EQ(cfi_parse_hdr(NULL, 64, TABLES_VA, &t), -EINVAL);
}

/* One byte of the CIE (at offset, from its start) set to value: the error. */
static int with_cie_byte(size_t offset, uint8_t value)
{
	struct memory m;
	struct cfi_rule r;
	build(&m);
	m.tables[m.cie_at + offset] = value;
	return rule_of(&m, m.fde_at[1], FRAME + 1, &r);
}

static void hostile_cies_are_refused(void)
{
	CHECK_EQ(with_cie_byte(4, 1), -EINVAL);      /* id not 0: not a CIE */
	CHECK_EQ(with_cie_byte(8, 4), -ENOTSUP);     /* version 4 */
	CHECK_EQ(with_cie_byte(9, 'e'), -ENOTSUP);   /* augmentation "eR" */
	CHECK_EQ(with_cie_byte(10, 'Q'), -ENOTSUP);  /* augmentation "zQ" */
	CHECK_EQ(with_cie_byte(14, 0x05), -ENOTSUP); /* return address in column 5 */
	CHECK_EQ(with_cie_byte(16, 0x9b), -ENOTSUP); /* an indirect pointer encoding */
	CHECK_EQ(with_cie_byte(15, 0x7f), -EINVAL);  /* augmentation data past the CIE */
	CHECK_EQ(with_cie_byte(17, 0x3f), -ENOTSUP); /* an opcode nobody defined */
	CHECK_EQ(with_cie_byte(0, 0xff), -EINVAL);   /* longer than its bytes */
	CHECK_EQ(with_cie_byte(0, 2), -EINVAL);      /* shorter than its id */
	struct memory m;
	struct cfi_rule r;
	build(&m);
	memset(m.tables + m.cie_at, 0xff, 4); /* 64-bit DWARF */
	CHECK_EQ(rule_of(&m, m.fde_at[1], FRAME, &r), -ENOTSUP);
	build(&m);
	memset(m.tables + m.cie_at + 9, 'z', 11); /* an unterminated augmentation */
	CHECK_EQ(rule_of(&m, m.fde_at[1], FRAME, &r), -EINVAL);
	build(&m);
	memset(m.tables + m.cie_at + 12, 0x80, 12); /* a LEB128 longer than 64 bits */
	CHECK_EQ(rule_of(&m, m.fde_at[1], FRAME, &r), -EINVAL);
}

/* FDE ops replaced by ops: what rule_at says at FRAME + 0x10. */
static int with_frame_ops(const uint8_t *ops, size_t length)
{
	struct memory m;
	struct cfi_rule r;
	build(&m);
	m.tables_length = m.fde_at[1];
	size_t fde = add_fde(&m, m.cie_at, FRAME, 0x80, ops, length);
	return rule_of(&m, fde, FRAME + 0x10, &r);
}

static void hostile_fdes_are_refused(void)
{
	static const uint8_t too_deep[] = {0x0a, 0x0a, 0x0a, 0x0a, 0x0a};
	static const uint8_t restore_nothing[] = {0x0b};
	static const uint8_t cut_operand[] = {0x0c, 0x07, 0x80}; /* ends the record */
	static const uint8_t cut_block[] = {0x0f, 0x40, 0x00};
	static const uint8_t nested_fine[] = {0x0a, 0x0a, 0x0b, 0x0b, 0x0e, 0x20};
	static const uint8_t expression[] = {0x0f, 0x02, 0x77, 0x00, 0x41};
	CHECK_EQ(with_frame_ops(too_deep, sizeof too_deep), -ENOTSUP);
	CHECK_EQ(with_frame_ops(restore_nothing, sizeof restore_nothing), -EINVAL);
	CHECK_EQ(with_frame_ops(cut_operand, sizeof cut_operand), -EINVAL);
	CHECK_EQ(with_frame_ops(cut_block, sizeof cut_block), -EINVAL);
	CHECK_EQ(with_frame_ops(nested_fine, sizeof nested_fine), 0);
	CHECK_EQ(with_frame_ops(expression, sizeof expression), 0); /* parsed; its CFA unknown */

	struct memory m;
	build(&m);
	struct cfi_tables t = tables_of(&m);
	m.tables_length = m.fde_at[1];
	add_fde(&m, m.cie_at, FRAME, 0x80, expression, sizeof expression);
	add_fde(&m, m.cie_at, OUTER, 0x10, outer_ops, sizeof outer_ops);
	struct cfi_regs regs = {.rip = FRAME + 0x10, .rsp = STACK_VA, .rbp = STACK_VA + 48};
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -ENOTSUP);

	build(&m);
	t = tables_of(&m);
	put32(m.tables + m.fde_at[1] + 4, 0x100000); /* the CIE before .eh_frame */
	regs = build_stack(&m);
	regs.rip = FRAME + 0x10;
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -EINVAL);
	build(&m);
	put32(m.tables + m.fde_at[1] + 12, 0xffffffff); /* a range of -1: wraps */
	struct cfi_rule r;
	CHECK_EQ(rule_of(&m, m.fde_at[1], FRAME, &r), -EINVAL);
	build(&m);
	put32(m.tables + 16 + 8, 0x7fffff00); /* the table points outside .eh_frame */
	t = tables_of(&m);
	regs = build_stack(&m);
	regs.rip = FRAME + 0x10;
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -EINVAL);
	build(&m);
	put32(m.tables + m.fde_at[1], CFI_RECORD_MAX); /* longer than any the step reads */
	t = tables_of(&m);
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m), -EINVAL);
}

/* Deterministic random corruption of the header and records: any answer,
 * never a read out of bounds or a loop (the sanitizers and the bound). */
static void random_corruption_is_survived(void)
{
	srand(20);
	int stepped = 0, refused = 0;
	for (int round = 0; round < 20000; round++) {
		struct memory m;
		build(&m);
		struct cfi_regs regs = build_stack(&m);
		int flips = 1 + rand() % 4;
		for (int i = 0; i < flips; i++)
			m.tables[rand() % m.tables_length] ^= (uint8_t)(1 + rand() % 255);
		struct cfi_tables t = {0};
		if (cfi_parse_hdr(m.tables, EH_FRAME_AT, TABLES_VA, &t)) {
			refused++;
			continue;
		}
		t.eh_frame_end = TABLES_VA + m.tables_length;
		regs.rip = LEAF + (uint64_t)(rand() % 0x210);
		for (int step = 0; step < 4; step++) {
			int error =
			    cfi_unwind_step(&t, &regs, step ? CFI_RETURN_ADDRESS : CFI_FIRST_FRAME,
					    read_memory, &m);
			if (error)
				break;
			stepped++;
		}
	}
	CHECK(stepped > 0);
	CHECK(refused > 0);
}

/* Does the rule cache give back what was kept, for that identity and pc
 * only, keep "no FDE" too, and never keep a failure that a retry may undo? */
static void cache_keeps_rules_by_identity(void)
{
	static struct cfi_cache cache;
	struct cfi_rule rule = {.cfa_known = 1, .cfa_register = CFI_DWARF_RSP, .cfa_offset = 24},
			out;
	int error = 1;
	CHECK(!cfi_cache_lookup(&cache, 7, LEAF, &out, &error));
	cfi_cache_insert(&cache, 7, LEAF, &rule, 0);
	REQUIRE(cfi_cache_lookup(&cache, 7, LEAF, &out, &error));
	CHECK_EQ(error, 0);
	CHECK_EQ(out.cfa_offset, 24);
	CHECK(!cfi_cache_lookup(&cache, 8, LEAF, &out, &error));
	CHECK(!cfi_cache_lookup(&cache, 7, LEAF + 1, &out, &error));
	cfi_cache_insert(&cache, 7, FRAME, &rule, -ENOENT);
	REQUIRE(cfi_cache_lookup(&cache, 7, FRAME, &out, &error));
	CHECK_EQ(error, -ENOENT);
	cfi_cache_insert(&cache, 7, OUTER, &rule, -EFAULT);
	CHECK(!cfi_cache_lookup(&cache, 7, OUTER, &out, &error));
	cfi_cache_insert(&cache, 0, OUTER, &rule, 0);
	CHECK(!cfi_cache_lookup(&cache, 0, OUTER, &out, &error));
	CHECK(cfi_hash(CFI_HASH_SEED, "a", 1) != cfi_hash(CFI_HASH_SEED, "b", 1));
}

/* Do the pcs a program's stacks pass through stay cached together: 40
 * return addresses close to each other, kept one after the other, are all
 * found afterwards (one way to a set lost some to collisions), and a set
 * filled past its ways gives up its oldest? */
static void cache_keeps_a_working_set(void)
{
	static struct cfi_cache cache;
	struct cfi_rule rule = {.cfa_known = 1, .cfa_register = CFI_DWARF_RSP, .cfa_offset = 8},
			out;
	int error, found = 0;
	for (uint64_t i = 0; i < 40; i++) {
		rule.cfa_offset = (int64_t)(8 + i);
		cfi_cache_insert(&cache, 0x1234, 0x401000 + 37 * i, &rule, 0);
	}
	for (uint64_t i = 0; i < 40; i++)
		found += cfi_cache_lookup(&cache, 0x1234, 0x401000 + 37 * i, &out, &error) &&
			 out.cfa_offset == (int64_t)(8 + i);
	CHECK_EQ(found, 40);
	const struct cfi_cache_slot *first = cfi_cache_find(&cache, 0x1234, 0x401000);
	REQUIRE(first);
	unsigned set = (unsigned)(first - cache.slots) / CFI_CACHE_WAYS, in_set = 0;
	for (uint64_t pc = 0x500000; in_set < CFI_CACHE_WAYS; pc++) {
		cfi_cache_insert(&cache, 0x1234, pc, &rule, 0);
		const struct cfi_cache_slot *slot = cfi_cache_find(&cache, 0x1234, pc);
		in_set += slot && (unsigned)(slot - cache.slots) / CFI_CACHE_WAYS == set;
	}
	CHECK(!cfi_cache_find(&cache, 0x1234, 0x401000));
}

HOSTTEST_MAIN(HOSTTEST_CASE(header_is_read), HOSTTEST_CASE(rules_follow_the_program),
	      HOSTTEST_CASE(remember_and_restore_state),
	      HOSTTEST_CASE(steps_out_to_the_outermost_frame),
	      HOSTTEST_CASE(return_address_at_a_function_end), HOSTTEST_CASE(no_fde_is_enoent),
	      HOSTTEST_CASE(unreadable_stack_is_efault), HOSTTEST_CASE(hostile_headers_are_refused),
	      HOSTTEST_CASE(hostile_cies_are_refused), HOSTTEST_CASE(hostile_fdes_are_refused),
	      HOSTTEST_CASE(random_corruption_is_survived),
	      HOSTTEST_CASE(cache_keeps_rules_by_identity), HOSTTEST_CASE(cache_keeps_a_working_set))
