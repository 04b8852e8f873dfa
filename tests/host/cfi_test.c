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
	CHECK_EQ(with_frame_ops(expression, sizeof expression), 0); /* CFA = rsp, by expression */

	struct memory m;
	build(&m);
	struct cfi_tables t = tables_of(&m);
	m.tables_length = m.fde_at[1];
	add_fde(&m, m.cie_at, FRAME, 0x80, expression, sizeof expression);
	add_fde(&m, m.cie_at, OUTER, 0x10, outer_ops, sizeof outer_ops);
	struct cfi_regs regs = {.rip = FRAME + 0x10, .rsp = STACK_VA, .rbp = STACK_VA + 48};
	CHECK_EQ(cfi_unwind_step(&t, &regs, CFI_FIRST_FRAME, read_memory, &m),
		 -EINVAL); /* a CFA that does not move up the stack */

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

/* ---- Rules by DWARF expression -------------------------------------------- */

/* m built, FRAME's FDE replaced by ops; the rule at pc in *rule. */
static int rule_with_ops(struct memory *m, const uint8_t *ops, size_t length, uint64_t pc,
			 struct cfi_rule *rule)
{
	build(m);
	m->tables_length = m->fde_at[1];
	size_t fde = add_fde(m, m->cie_at, FRAME, 0x80, ops, length);
	add_fde(m, m->cie_at, OUTER, 0x10, outer_ops, sizeof outer_ops);
	return rule_of(m, fde, pc, rule);
}

/* A PLT entry's CFA, as GCC and GNU ld write it (readelf --debug-dump=frames
 * of any dynamically linked x86_64 program): rsp + 8, plus 8 more once the
 * pc is 11 bytes or more into its 16-byte entry (after the push):
 * DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15; DW_OP_and; DW_OP_lit11;
 * DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus. */
static const uint8_t plt_ops[] = {
    0x0e, 0x10, 0x46, 0x0e, 0x18, 0x4a, /* cfa rsp+16; +6: rsp+24; +16: by expression */
    0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22,
};

static void plt_cfa_by_expression(void)
{
	struct memory m;
	struct cfi_rule r;
	REQUIRE_EQ(rule_with_ops(&m, plt_ops, sizeof plt_ops, FRAME + 8, &r), 0);
	CHECK_EQ(r.cfa_known, CFI_CFA_REGISTER);
	CHECK_EQ(r.cfa_offset, 24);
	REQUIRE_EQ(rule_with_ops(&m, plt_ops, sizeof plt_ops, FRAME + 0x15, &r), 0);
	CHECK_EQ(r.cfa_known, CFI_CFA_EXPRESSION);
	CHECK_EQ(r.cfa_expr.length, 11);
	m.stack[0] = 0x401111, m.stack[1] = 0x402222;
	/* 5 bytes into a PLT entry, then 12 */
	struct cfi_regs regs = {.rip = FRAME + 0x15, .rsp = STACK_VA, .rbp = 7};
	REQUIRE_EQ(cfi_step_by_rule(&r, &regs, read_memory, &m), 0);
	CHECK_EQ(regs.rip, 0x401111);
	CHECK_EQ(regs.rsp, STACK_VA + 8);
	CHECK_EQ(regs.rbp, 7);
	REQUIRE_EQ(rule_with_ops(&m, plt_ops, sizeof plt_ops, FRAME + 0x1c, &r), 0);
	m.stack[0] = 0x401111, m.stack[1] = 0x402222;
	regs = (struct cfi_regs){.rip = FRAME + 0x1c, .rsp = STACK_VA, .rbp = 7};
	REQUIRE_EQ(cfi_step_by_rule(&r, &regs, read_memory, &m), 0);
	CHECK_EQ(regs.rip, 0x402222);
	CHECK_EQ(regs.rsp, STACK_VA + 16);
}

/* A frame GCC realigns (-O2, a local aligned to 64 and alloca: readelf
 * --debug-dump=frames of such an object): the CFA in r10 at first (not
 * followed), then DW_CFA_expression r6 (DW_OP_breg6 0), the CFA by
 * (DW_OP_breg6 -16; DW_OP_deref), r12 and rbx by DW_OP_breg6 -8, -24. */
static const uint8_t realigned_ops[] = {
    0x45, 0x0c, 0x0a, 0x00,             /* +5: cfa r10+0 */
    0x4f, 0x10, 0x06, 0x02, 0x76, 0x00, /* +0x14: rbp at (rbp + 0) */
    0x44, 0x0f, 0x03, 0x76, 0x70, 0x06, /* +0x18: cfa = *(rbp - 16) */
    0x10, 0x0c, 0x02, 0x76, 0x78,       /* r12 at (rbp - 8): not followed */
    0x45, 0x10, 0x03, 0x02, 0x76, 0x68, /* +0x1d: rbx at (rbp - 24): not followed */
};

static void realigned_frame_by_expression(void)
{
	struct memory m;
	struct cfi_rule r;
	REQUIRE_EQ(rule_with_ops(&m, realigned_ops, sizeof realigned_ops, FRAME + 0x20, &r), 0);
	CHECK_EQ(r.cfa_known, CFI_CFA_EXPRESSION);
	CHECK_EQ(r.rbp.how, CFI_AT_EXPR);
	m.stack[6] = STACK_VA + 128; /* rbp - 16: the CFA */
	m.stack[8] = 0x7777;         /* at rbp: the caller's rbp */
	m.stack[15] = 0x401234;      /* CFA - 8: the return address */
	struct cfi_regs regs = {.rip = FRAME + 0x20, .rsp = STACK_VA, .rbp = STACK_VA + 64};
	REQUIRE_EQ(cfi_step_by_rule(&r, &regs, read_memory, &m), 0);
	CHECK_EQ(regs.rip, 0x401234);
	CHECK_EQ(regs.rsp, STACK_VA + 128);
	CHECK_EQ(regs.rbp, 0x7777);
	REQUIRE_EQ(rule_with_ops(&m, realigned_ops, sizeof realigned_ops, FRAME + 8, &r), 0);
	regs = (struct cfi_regs){.rip = FRAME + 8, .rsp = STACK_VA, .rbp = STACK_VA + 64};
	CHECK_EQ(cfi_step_by_rule(&r, &regs, read_memory, &m), -ENOTSUP); /* CFA in r10 */
	m.stack[6] = STACK_VA; /* a CFA read from the stack that does not move up */
	REQUIRE_EQ(rule_with_ops(&m, realigned_ops, sizeof realigned_ops, FRAME + 0x20, &r), 0);
	m.stack[6] = STACK_VA;
	regs = (struct cfi_regs){.rip = FRAME + 0x20, .rsp = STACK_VA, .rbp = STACK_VA + 64};
	CHECK_EQ(cfi_step_by_rule(&r, &regs, read_memory, &m), -EINVAL);
	regs.rbp = 0x100; /* rbp - 16 unreadable */
	CHECK_EQ(cfi_step_by_rule(&r, &regs, read_memory, &m), -EFAULT);
}

/* A signal frame's rules (glibc's x86_64 __restore_rt: the saved context at
 * rsp): the CFA by (DW_OP_breg7 160; DW_OP_deref), the return address at
 * (DW_OP_breg7 168), rbp at (DW_OP_breg7 120); and rbp by
 * DW_CFA_val_expression. */
static void signal_frame_by_expression(void)
{
	static const uint8_t signal_ops[] = {
	    0x0f, 0x04, 0x77, 0xa0, 0x01, 0x06, /* cfa = *(rsp + 160) */
	    0x10, 0x10, 0x03, 0x77, 0xa8, 0x01, /* rip at (rsp + 168) */
	    0x10, 0x06, 0x03, 0x77, 0xf8, 0x00, /* rbp at (rsp + 120) */
	};
	/* rbp = rsp + 32 + 8, by DW_CFA_val_expression */
	static const uint8_t val_ops[] = {0x16, 0x06, 0x04, 0x77, 0x20, 0x23, 0x08};
	struct memory m;
	struct cfi_rule r;
	REQUIRE_EQ(rule_with_ops(&m, signal_ops, sizeof signal_ops, FRAME + 4, &r), 0);
	CHECK_EQ(r.return_address.how, CFI_AT_EXPR);
	m.stack[15] = 0x5555;         /* rbp */
	m.stack[20] = STACK_VA + 256; /* rsp */
	m.stack[21] = 0x402222;       /* rip */
	struct cfi_regs regs = {.rip = FRAME + 4, .rsp = STACK_VA, .rbp = 1};
	REQUIRE_EQ(cfi_step_by_rule(&r, &regs, read_memory, &m), 0);
	CHECK_EQ(regs.rip, 0x402222);
	CHECK_EQ(regs.rsp, STACK_VA + 256);
	CHECK_EQ(regs.rbp, 0x5555);
	REQUIRE_EQ(rule_with_ops(&m, val_ops, sizeof val_ops, FRAME + 4, &r), 0);
	CHECK_EQ(r.rbp.how, CFI_IS_EXPR);
	m.stack[0] = 0x403333;
	regs = (struct cfi_regs){.rip = FRAME + 4, .rsp = STACK_VA, .rbp = 1};
	REQUIRE_EQ(cfi_step_by_rule(&r, &regs, read_memory, &m), 0);
	CHECK_EQ(regs.rip, 0x403333);
	CHECK_EQ(regs.rbp, STACK_VA + 40);
}

/* expr's value (the CFA 1000 pushed first), or the error as a negative. */
static int64_t eval(const uint8_t *bytes, size_t length)
{
	struct memory m;
	build(&m);
	m.stack[1] = 0x1122334455667788ull;
	struct cfi_expr expr = {.length = (uint8_t)length};
	memcpy(expr.bytes, bytes, length);
	struct cfi_regs regs = {.rip = 0x401000, .rsp = STACK_VA, .rbp = 0x10};
	uint64_t value;
	int error = cfi_eval_expression(&expr, &regs, true, 1000, read_memory, &m, &value);
	return error ? error : (int64_t)value;
}
#define EVAL(...) eval((const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

/* Does each operation compute what DWARF 4 section 2.5 says? */
static void expression_operations_compute(void)
{
	CHECK_EQ(EVAL(0x96), 1000);               /* nop: the CFA */
	CHECK_EQ(EVAL(0x23, 0x10), 1016);         /* plus_uconst 16 */
	CHECK_EQ(EVAL(0x35, 0x3c, 0x1c), 5 - 12); /* lit5 lit12 minus */
	CHECK_EQ(EVAL(0x08, 0xff), 255);          /* const1u */
	CHECK_EQ(EVAL(0x09, 0xff), -1);           /* const1s */
	CHECK_EQ(EVAL(0x0b, 0x00, 0x80), -32768); /* const2s */
	CHECK_EQ(EVAL(0x0c, 0x78, 0x56, 0x34, 0x12), 0x12345678);
	CHECK_EQ(EVAL(0x11, 0x7f), -1);                              /* consts */
	CHECK_EQ(EVAL(0x10, 0x80, 0x01), 128);                       /* constu */
	CHECK_EQ(EVAL(0x09, 0xf9, 0x32, 0x1b), -3);                  /* -7 / 2 */
	CHECK_EQ(EVAL(0x37, 0x32, 0x1d), 1);                         /* 7 mod 2 */
	CHECK_EQ(EVAL(0x37, 0x33, 0x1e), 21);                        /* mul */
	CHECK_EQ(EVAL(0x3c, 0x3a, 0x1a), 8);                         /* and */
	CHECK_EQ(EVAL(0x3c, 0x33, 0x21), 15);                        /* or */
	CHECK_EQ(EVAL(0x3c, 0x3a, 0x27), 6);                         /* xor */
	CHECK_EQ(EVAL(0x33, 0x34, 0x24), 48);                        /* shl */
	CHECK_EQ(EVAL(0x09, 0xf0, 0x32, 0x26), -4);                  /* shra */
	CHECK_EQ(EVAL(0x09, 0xf0, 0x34, 0x25), 0xfffffffffffffffll); /* shr */
	CHECK_EQ(EVAL(0x09, 0xf0, 0x19), 16);                        /* abs */
	CHECK_EQ(EVAL(0x35, 0x1f), -5);                              /* neg */
	CHECK_EQ(EVAL(0x30, 0x20), -1);                              /* not */
	CHECK_EQ(EVAL(0x09, 0xff, 0x30, 0x2d), 1);                   /* -1 < 0: signed */
	CHECK_EQ(EVAL(0x33, 0x33, 0x29, 0x33, 0x33, 0x2e, 0x22), 1); /* eq + ne */
	CHECK_EQ(EVAL(0x33, 0x34, 0x2a, 0x34, 0x33, 0x2b, 0x22), 1); /* ge + gt */
	CHECK_EQ(EVAL(0x33, 0x34, 0x2c), 1);                         /* le */
	CHECK_EQ(EVAL(0x31, 0x32, 0x14, 0x22, 0x22), 4);             /* over: 1 2 1 */
	CHECK_EQ(EVAL(0x31, 0x32, 0x15, 0x02), 1000);                /* pick 2 */
	CHECK_EQ(EVAL(0x31, 0x32, 0x16, 0x1c), 1);                   /* swap, minus: 2 - 1 */
	CHECK_EQ(EVAL(0x31, 0x32, 0x17, 0x13, 0x13), 2);             /* rot: 1000 1 2 -> 2 1000 1 */
	CHECK_EQ(EVAL(0x12, 0x22), 2000);                            /* dup plus */
	CHECK_EQ(EVAL(0x13, 0x31), 1);                               /* drop */
	CHECK_EQ(EVAL(0x2f, 0x01, 0x00, 0x31, 0x32), 2);             /* skip over lit1 */
	CHECK_EQ(EVAL(0x31, 0x28, 0x01, 0x00, 0x33, 0x34), 4);       /* bra taken */
	CHECK_EQ(EVAL(0x30, 0x28, 0x01, 0x00, 0x33), 3);             /* bra not taken */
	CHECK_EQ(EVAL(0x77, 0x08), STACK_VA + 8);                    /* breg7 (rsp) */
	CHECK_EQ(EVAL(0x76, 0x7f), 0x10 - 1);                        /* breg6 (rbp) */
	CHECK_EQ(EVAL(0x80, 0x02), 0x401002);                        /* breg16 (rip) */
	CHECK_EQ(EVAL(0x92, 0x07, 0x10), STACK_VA + 16);             /* bregx rsp */
	CHECK_EQ(EVAL(0x77, 0x08, 0x06), 0x1122334455667788ll);      /* deref */
	CHECK_EQ(EVAL(0x77, 0x08, 0x94, 0x02), 0x7788);              /* deref_size 2 */
	CHECK_EQ(EVAL(0x03, 0x08, 0xf0, 0x7f, 0, 0, 0, 0, 0), STACK_VA + 8); /* addr */
}

/* Are hostile expressions refused with an error, never a read out of
 * bounds or a loop: stacks that over- or underflow, a division by zero,
 * operands and branches past the expression, loops, unknown operations,
 * registers not followed, unreadable memory, and in an FDE an expression
 * too long or a CFA offset changed after one? */
static void hostile_expressions_are_refused(void)
{
	CHECK_EQ(EVAL(0x31, 0x31, 0x31, 0x31, 0x31, 0x31, 0x31, 0x31), -EINVAL); /* 9 deep */
	CHECK_EQ(EVAL(0x13, 0x22), -EINVAL);             /* plus on one value */
	CHECK_EQ(EVAL(0x13, 0x16), -EINVAL);             /* swap on one */
	CHECK_EQ(EVAL(0x15, 0x01), -EINVAL);             /* pick past the stack */
	CHECK_EQ(EVAL(0x31, 0x17), -EINVAL);             /* rot on two */
	CHECK_EQ(EVAL(0x13), -EINVAL);                   /* nothing left */
	CHECK_EQ(EVAL(0x31, 0x30, 0x1b), -EINVAL);       /* div by zero */
	CHECK_EQ(EVAL(0x31, 0x30, 0x1d), -EINVAL);       /* mod by zero */
	CHECK_EQ(EVAL(0x0e, 0x01, 0x02), -EINVAL);       /* const8u cut */
	CHECK_EQ(EVAL(0x77, 0x80), -EINVAL);             /* a LEB128 cut */
	CHECK_EQ(EVAL(0x2f, 0x10, 0x00), -EINVAL);       /* skip past the end */
	CHECK_EQ(EVAL(0x2f, 0xf0, 0xff), -EINVAL);       /* skip before the start */
	CHECK_EQ(EVAL(0x2f, 0xfd, 0xff), -EINVAL);       /* skip to itself: steps run out */
	CHECK_EQ(EVAL(0x31, 0x28, 0xfc, 0xff), -EINVAL); /* bra back for ever */
	CHECK_EQ(EVAL(0x94, 0x09), -EINVAL);             /* deref_size 9 */
	CHECK_EQ(EVAL(0x94, 0x00), -EINVAL);             /* deref_size 0 */
	CHECK_EQ(EVAL(0x30, 0x06), -EFAULT);             /* deref of 0 */
	CHECK_EQ(EVAL(0x50), -ENOTSUP);                  /* DW_OP_reg0: a location */
	CHECK_EQ(EVAL(0x73, 0x00), -ENOTSUP);            /* breg3: rbx not followed */
	CHECK_EQ(EVAL(0x92, 0x0c, 0x00), -ENOTSUP);      /* bregx r12 */
	CHECK_EQ(EVAL(0xe0), -ENOTSUP);                  /* DW_OP_lo_user */
	CHECK_EQ(EVAL(0x28, 0x00), -EINVAL);             /* bra cut (and nothing to pop) */
	struct cfi_expr empty = {0}, too_long = {.length = CFI_EXPR_MAX + 1};
	struct cfi_regs regs = {0};
	uint64_t value;
	CHECK_EQ(cfi_eval_expression(&empty, &regs, false, 0, read_memory, NULL, &value), -EINVAL);
	CHECK_EQ(cfi_eval_expression(&too_long, &regs, true, 0, read_memory, NULL, &value),
		 -EINVAL);

	static const uint8_t long_cfa[] = {0x0f, 0x11, 0x96, 0x96, 0x96, 0x96, 0x96,
					   0x96, 0x96, 0x96, 0x96, 0x96, 0x96, 0x96,
					   0x96, 0x96, 0x96, 0x96, 0x96};
	static const uint8_t long_r12[] = {0x10, 0x0c, 0x11, 0x96, 0x96, 0x96, 0x96,
					   0x96, 0x96, 0x96, 0x96, 0x96, 0x96, 0x96,
					   0x96, 0x96, 0x96, 0x96, 0x96, 0x96};
	static const uint8_t long_rbp[] = {0x10, 0x06, 0x11, 0x96, 0x96, 0x96, 0x96,
					   0x96, 0x96, 0x96, 0x96, 0x96, 0x96, 0x96,
					   0x96, 0x96, 0x96, 0x96, 0x96, 0x96};
	static const uint8_t offset_after[] = {0x0f, 0x02, 0x77, 0x10, 0x0e, 0x10};
	static const uint8_t register_after[] = {0x0f, 0x02, 0x77, 0x10, 0x0d, 0x06};
	static const uint8_t cut_expression[] = {0x10, 0x06, 0x05, 0x77};
	struct memory m;
	struct cfi_rule r;
	CHECK_EQ(rule_with_ops(&m, long_cfa, sizeof long_cfa, FRAME + 4, &r), -ENOTSUP);
	CHECK_EQ(rule_with_ops(&m, long_r12, sizeof long_r12, FRAME + 4, &r), 0); /* not followed */
	CHECK_EQ(rule_with_ops(&m, long_rbp, sizeof long_rbp, FRAME + 4, &r), -ENOTSUP);
	CHECK_EQ(rule_with_ops(&m, offset_after, sizeof offset_after, FRAME + 4, &r), -EINVAL);
	CHECK_EQ(rule_with_ops(&m, register_after, sizeof register_after, FRAME + 4, &r), -EINVAL);
	CHECK_EQ(rule_with_ops(&m, cut_expression, sizeof cut_expression, FRAME + 4, &r), -EINVAL);
}

/* 50,000 random expressions: an answer for each, under the sanitizers. */
static void random_expressions_are_survived(void)
{
	struct memory m;
	build(&m);
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int answered = 0;
	for (int round = 0; round < 50000; round++) {
		struct cfi_expr expr;
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		expr.length = (uint8_t)((seed >> 33) % (CFI_EXPR_MAX + 1));
		for (unsigned i = 0; i < CFI_EXPR_MAX; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			expr.bytes[i] = (uint8_t)(seed >> 56);
		}
		struct cfi_regs regs = {.rip = FRAME, .rsp = STACK_VA, .rbp = STACK_VA + 8};
		uint64_t value;
		int error = cfi_eval_expression(&expr, &regs, round & 1, STACK_VA + 16, read_memory,
						&m, &value);
		answered += error == 0 || error == -EINVAL || error == -ENOTSUP || error == -EFAULT;
	}
	CHECK_EQ(answered, 50000);
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

HOSTTEST_MAIN(
    HOSTTEST_CASE(header_is_read), HOSTTEST_CASE(rules_follow_the_program),
    HOSTTEST_CASE(remember_and_restore_state), HOSTTEST_CASE(steps_out_to_the_outermost_frame),
    HOSTTEST_CASE(return_address_at_a_function_end), HOSTTEST_CASE(no_fde_is_enoent),
    HOSTTEST_CASE(unreadable_stack_is_efault), HOSTTEST_CASE(hostile_headers_are_refused),
    HOSTTEST_CASE(hostile_cies_are_refused), HOSTTEST_CASE(hostile_fdes_are_refused),
    HOSTTEST_CASE(random_corruption_is_survived), HOSTTEST_CASE(cache_keeps_rules_by_identity),
    HOSTTEST_CASE(cache_keeps_a_working_set), HOSTTEST_CASE(plt_cfa_by_expression),
    HOSTTEST_CASE(realigned_frame_by_expression), HOSTTEST_CASE(signal_frame_by_expression),
    HOSTTEST_CASE(expression_operations_compute), HOSTTEST_CASE(hostile_expressions_are_refused),
    HOSTTEST_CASE(random_expressions_are_survived))
