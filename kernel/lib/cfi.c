/*
 * DWARF CFI interpretation for x86_64 user stacks (.eh_frame), as GCC and
 * GNU ld write it.  Everything read is untrusted: a cursor over a bounded
 * byte range turns any read past the end into a sticky "bad" state, so the
 * parsers check once at the end of each record instead of at every field.
 * Only rsp, rbp and the return address (column 16) are followed; rules for
 * other registers are parsed and ignored.  Rules by DWARF expression are
 * kept (their bytes, CFI_EXPR_MAX at most) and evaluated at the step on a
 * bounded stack for a bounded number of operations.  Each step reads a bounded amount:
 * the search table by binary search (at most 21 probes), the FDE and its CIE
 * (at most CFI_RECORD_MAX bytes each), then the saved values.
 */
#include "lib/cfi.h"

#include "lib/errno.h"
#include "lib/string.h"
#include "lib/unaligned.h"

/* Pointer encodings (DW_EH_PE_*): the low nibble the format, the high the base. */
#define PE_ABSPTR  0x00
#define PE_UDATA2  0x02
#define PE_UDATA4  0x03
#define PE_UDATA8  0x04
#define PE_SDATA2  0x0a
#define PE_SDATA4  0x0b
#define PE_SDATA8  0x0c
#define PE_PCREL   0x10
#define PE_DATAREL 0x30
#define PE_OMIT    0xff

struct cursor {
	const uint8_t *bytes;
	size_t length, at;
	uint64_t vaddr; /* the address of bytes[0] (for pc-relative pointers) */
	int bad;
};

static const uint8_t *take(struct cursor *c, size_t n)
{
	if (c->bad || n > c->length - c->at) {
		c->bad = 1;
		return NULL;
	}
	const uint8_t *p = c->bytes + c->at;
	c->at += n;
	return p;
}

static uint8_t read_u8(struct cursor *c)
{
	const uint8_t *p = take(c, 1);
	return p ? *p : 0;
}

static uint64_t read_fixed(struct cursor *c, size_t n)
{
	const uint8_t *p = take(c, n);
	if (!p)
		return 0;
	switch (n) {
	case 2: return read_le16(p);
	case 4: return read_le32(p);
	default: return read_le64(p);
	}
}

/* LEB128, at most 10 bytes (64 bits); longer is malformed. */
static uint64_t read_leb(struct cursor *c, int is_signed)
{
	uint64_t value = 0;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		uint8_t byte = read_u8(c);
		if (c->bad)
			return 0;
		value |= shift < 64 ? (uint64_t)(byte & 0x7f) << shift : 0;
		if (!(byte & 0x80)) {
			if (is_signed && shift + 7 < 64 && (byte & 0x40))
				value |= ~(uint64_t)0 << (shift + 7);
			return value;
		}
	}
	c->bad = 1;
	return 0;
}

static uint64_t read_uleb(struct cursor *c)
{
	return read_leb(c, 0);
}

static int64_t read_sleb(struct cursor *c)
{
	return (int64_t)read_leb(c, 1);
}

/* Is encoding one read_pointer takes (absolute or pc-relative, fixed size)? */
static int encoding_known(uint8_t encoding)
{
	uint8_t base = encoding & 0x70, format = encoding & 0x0f;
	if (encoding & 0x80 || (base != 0 && base != PE_PCREL))
		return 0;
	return format == PE_ABSPTR || format == PE_UDATA2 || format == PE_UDATA4 ||
	       format == PE_UDATA8 || format == PE_SDATA2 || format == PE_SDATA4 ||
	       format == PE_SDATA8;
}

/* A pointer in encoding (known by encoding_known); apply_base 0 for FDE
 * ranges, which are sizes. */
static uint64_t read_pointer(struct cursor *c, uint8_t encoding, int apply_base)
{
	uint64_t field = c->vaddr + c->at, value;
	switch (encoding & 0x0f) {
	case PE_UDATA2: value = read_fixed(c, 2); break;
	case PE_UDATA4: value = read_fixed(c, 4); break;
	case PE_SDATA2: value = (uint64_t)(int64_t)(int16_t)read_fixed(c, 2); break;
	case PE_SDATA4: value = (uint64_t)(int64_t)(int32_t)read_fixed(c, 4); break;
	default: value = read_fixed(c, 8); break;
	}
	return apply_base && (encoding & 0x70) == PE_PCREL ? value + field : value;
}

int cfi_parse_hdr(const uint8_t *hdr, size_t length, uint64_t vaddr, struct cfi_tables *out)
{
	struct cursor c = {hdr, length, 0, vaddr, 0};
	if (!hdr || !out)
		return -EINVAL;
	uint8_t version = read_u8(&c), ptr_enc = read_u8(&c), count_enc = read_u8(&c),
		table_enc = read_u8(&c);
	if (c.bad || version != 1 || ptr_enc != (PE_PCREL | PE_SDATA4) || count_enc != PE_UDATA4 ||
	    table_enc != (PE_DATAREL | PE_SDATA4))
		return -EINVAL;
	uint64_t eh_frame = read_pointer(&c, ptr_enc, 1);
	uint64_t count = read_fixed(&c, 4);
	if (c.bad || count > CFI_FDE_COUNT_MAX || count * 8 > c.length - c.at)
		return -EINVAL;
	*out = (struct cfi_tables){.hdr = vaddr,
				   .table = vaddr + c.at,
				   .fde_count = (uint32_t)count,
				   .eh_frame_start = eh_frame};
	return 0;
}

/* ---- CIE and FDE --------------------------------------------------------- */

struct cie {
	uint64_t code_align;
	int64_t data_align;
	uint8_t fde_encoding;
	int has_augmentation_data; /* 'z': FDEs carry an augmentation length */
	struct cursor instructions;
};

/* The record's body after its length field: 0, -EINVAL, -ENOTSUP. */
static int record_body(const uint8_t *bytes, size_t length, uint64_t vaddr, struct cursor *body)
{
	if (!bytes || length < 8 || length > CFI_RECORD_MAX)
		return -EINVAL;
	uint32_t size = read_le32(bytes);
	if (size == 0xffffffffu)
		return -ENOTSUP; /* 64-bit DWARF: GCC does not write it in .eh_frame */
	if (size < 4 || size > length - 4)
		return -EINVAL;
	*body = (struct cursor){bytes + 4, size, 0, vaddr + 4, 0};
	return 0;
}

/* The augmentation string's letters, then its data: z first, then R, P, L, S. */
static int parse_augmentation(struct cursor *c, const char *augmentation, struct cie *cie)
{
	if (!*augmentation)
		return 0;
	if (*augmentation != 'z')
		return -ENOTSUP;
	cie->has_augmentation_data = 1;
	uint64_t length = read_uleb(c);
	if (c->bad || length > c->length - c->at)
		return -EINVAL;
	struct cursor data = {c->bytes + c->at, (size_t)length, 0, c->vaddr + c->at, 0};
	c->at += (size_t)length;
	for (const char *letter = augmentation + 1; *letter; letter++) {
		if (*letter == 'R') {
			cie->fde_encoding = read_u8(&data);
			if (!encoding_known(cie->fde_encoding))
				return data.bad ? -EINVAL : -ENOTSUP;
		} else if (*letter == 'P') {
			uint8_t encoding = read_u8(&data);
			if (!encoding_known(encoding))
				return data.bad ? -EINVAL : -ENOTSUP;
			read_pointer(&data, encoding, 1); /* the personality: not needed */
		} else if (*letter == 'L') {
			read_u8(&data); /* the LSDA's encoding, used by FDEs' augmentation data */
		} else if (*letter != 'S') {
			return -ENOTSUP;
		}
	}
	return data.bad ? -EINVAL : 0;
}

static int parse_cie(const uint8_t *bytes, size_t length, uint64_t vaddr, struct cie *cie)
{
	struct cursor c;
	int error = record_body(bytes, length, vaddr, &c);
	if (error)
		return error;
	if (read_fixed(&c, 4) != 0)
		return -EINVAL; /* not a CIE */
	uint8_t version = read_u8(&c);
	if (!c.bad && version != 1 && version != 3)
		return -ENOTSUP;
	const char *augmentation = (const char *)c.bytes + c.at;
	size_t room = c.length - c.at < 8 ? c.length - c.at : 8;
	size_t letters = c.bad ? room : strnlen(augmentation, room);
	if (letters == room)
		return -EINVAL; /* unterminated, or longer than "zPLRS" can be */
	c.at += letters + 1;
	*cie = (struct cie){.fde_encoding = PE_ABSPTR};
	cie->code_align = read_uleb(&c);
	cie->data_align = read_sleb(&c);
	uint64_t return_column = version == 1 ? read_u8(&c) : read_uleb(&c);
	if (c.bad)
		return -EINVAL;
	if (return_column != CFI_DWARF_RETURN_ADDRESS)
		return -ENOTSUP;
	error = parse_augmentation(&c, augmentation, cie);
	if (error)
		return error;
	cie->instructions = (struct cursor){c.bytes + c.at, c.length - c.at, 0, 0, 0};
	return 0;
}

struct fde {
	uint64_t pc_begin, pc_end;
	struct cursor instructions;
};

static int parse_fde(const uint8_t *bytes, size_t length, uint64_t vaddr, const struct cie *cie,
		     struct fde *fde)
{
	struct cursor c;
	int error = record_body(bytes, length, vaddr, &c);
	if (error)
		return error;
	if (read_fixed(&c, 4) == 0)
		return -EINVAL; /* a CIE, not an FDE */
	fde->pc_begin = read_pointer(&c, cie->fde_encoding, 1);
	uint64_t range = read_pointer(&c, cie->fde_encoding, 0);
	if (cie->has_augmentation_data) {
		uint64_t skip = read_uleb(&c);
		if (!c.bad && skip > c.length - c.at)
			return -EINVAL;
		c.at += c.bad ? 0 : (size_t)skip;
	}
	if (c.bad || range > ~fde->pc_begin)
		return -EINVAL;
	fde->pc_end = fde->pc_begin + range;
	fde->instructions = (struct cursor){c.bytes + c.at, c.length - c.at, 0, 0, 0};
	return 0;
}

/* ---- The CFA program ----------------------------------------------------- */

struct machine {
	struct cfi_rule rule, initial; /* initial: after the CIE (DW_CFA_restore) */
	struct cfi_rule saved[CFI_STATE_DEPTH];
	unsigned depth;
	uint64_t location, pc;
	const struct cie *cie;
	int done; /* the location passed pc */
};

static struct cfi_register_rule *followed(struct cfi_rule *rule, uint64_t reg)
{
	if (reg == CFI_DWARF_RBP)
		return &rule->rbp;
	if (reg == CFI_DWARF_RETURN_ADDRESS)
		return &rule->return_address;
	return NULL;
}

static void set_rule(struct machine *m, uint64_t reg, enum cfi_how how, int64_t offset)
{
	struct cfi_register_rule *r = followed(&m->rule, reg);
	if (r)
		*r = (struct cfi_register_rule){.how = how, .offset = offset};
}

static void restore_rule(struct machine *m, uint64_t reg)
{
	struct cfi_register_rule *now = followed(&m->rule, reg), *was = followed(&m->initial, reg);
	if (now)
		*now = *was;
}

static void advance(struct machine *m, uint64_t delta)
{
	uint64_t step = delta * m->cie->code_align;
	if ((m->cie->code_align && step / m->cie->code_align != delta) ||
	    step > m->pc - m->location || m->location > m->pc)
		m->done = 1; /* the next row starts past pc: the current one holds */
	else
		m->location += step;
}

static void def_cfa(struct machine *m, uint64_t reg, int64_t offset)
{
	m->rule.cfa_known = CFI_CFA_REGISTER;
	m->rule.cfa_register = (unsigned)(reg > 0xffff ? 0xffff : reg);
	m->rule.cfa_offset = offset;
}

/* DW_CFA_def_cfa_register and _offset change a CFA by register and offset;
 * after DW_CFA_def_cfa_expression they are malformed (DWARF 6.4.2.2). */
static void change_cfa(struct machine *m, struct cursor *c, uint64_t reg, int64_t offset)
{
	if (m->rule.cfa_known == CFI_CFA_EXPRESSION)
		c->bad = 1;
	else
		def_cfa(m, reg, offset);
}

/* An expression's block into expr: 0, or -ENOTSUP when it is longer than
 * CFI_EXPR_MAX (a block past the record makes the cursor bad). */
static int read_expression(struct cursor *c, struct cfi_expr *expr)
{
	uint64_t length = read_uleb(c);
	if (c->bad || length > c->length - c->at) {
		c->bad = 1;
		return 0;
	}
	const uint8_t *bytes = c->bytes + c->at;
	c->at += (size_t)length; /* skipped whatever it holds */
	if (length > CFI_EXPR_MAX)
		return -ENOTSUP;
	expr->length = (uint8_t)length;
	memcpy(expr->bytes, bytes, (size_t)length);
	return 0;
}

/* DW_CFA_expression and DW_CFA_val_expression: reg by an expression. */
static int expression_rule(struct machine *m, struct cursor *c, enum cfi_how how)
{
	uint64_t reg = read_uleb(c);
	struct cfi_expr expr = {0};
	int error = read_expression(c, &expr);
	struct cfi_register_rule *r = followed(&m->rule, reg);
	if (!error && r && !c->bad)
		*r = (struct cfi_register_rule){.how = how, .expr = expr};
	return r ? error : 0; /* other registers' expressions may be as long as they like */
}

/* The extended opcodes (high two bits 0): 0, or -ENOTSUP. */
static int run_extended(struct machine *m, struct cursor *c, uint8_t op)
{
	int64_t align = m->cie->data_align;
	uint64_t reg;
	switch (op) {
	case 0x00: return 0; /* DW_CFA_nop */
	case 0x01:           /* DW_CFA_set_loc */
		reg = read_pointer(c, m->cie->fde_encoding, 1);
		if (reg > m->pc || reg < m->location)
			m->done = 1;
		else
			m->location = reg;
		return 0;
	case 0x02: advance(m, read_u8(c)); return 0;       /* advance_loc1 */
	case 0x03: advance(m, read_fixed(c, 2)); return 0; /* advance_loc2 */
	case 0x04: advance(m, read_fixed(c, 4)); return 0; /* advance_loc4 */
	case 0x05:                                         /* DW_CFA_offset_extended */
		reg = read_uleb(c);
		set_rule(m, reg, CFI_AT_CFA, (int64_t)read_uleb(c) * align);
		return 0;
	case 0x06: restore_rule(m, read_uleb(c)); return 0; /* restore_extended */
	case 0x07: set_rule(m, read_uleb(c), CFI_UNDEFINED, 0); return 0;
	case 0x08: set_rule(m, read_uleb(c), CFI_SAME, 0); return 0;
	case 0x09: /* DW_CFA_register: in another register, which is not followed */
		reg = read_uleb(c);
		read_uleb(c);
		set_rule(m, reg, CFI_UNKNOWN, 0);
		return 0;
	case 0x0a: /* DW_CFA_remember_state */
		if (m->depth == CFI_STATE_DEPTH)
			return -ENOTSUP;
		m->saved[m->depth++] = m->rule;
		return 0;
	case 0x0b: /* DW_CFA_restore_state: the whole row, CFA included */
		if (!m->depth)
			c->bad = 1;
		else
			m->rule = m->saved[--m->depth];
		return 0;
	case 0x0c:
		reg = read_uleb(c);
		def_cfa(m, reg, (int64_t)read_uleb(c));
		return 0;
	case 0x0d: change_cfa(m, c, read_uleb(c), m->rule.cfa_offset); return 0;
	case 0x0e: change_cfa(m, c, m->rule.cfa_register, (int64_t)read_uleb(c)); return 0;
	case 0x0f: { /* DW_CFA_def_cfa_expression */
		struct cfi_expr expr = {0};
		int error = read_expression(c, &expr);
		if (!error && !c->bad)
			m->rule.cfa_known = CFI_CFA_EXPRESSION, m->rule.cfa_expr = expr;
		return error;
	}
	case 0x10: return expression_rule(m, c, CFI_AT_EXPR); /* DW_CFA_expression */
	case 0x16: return expression_rule(m, c, CFI_IS_EXPR); /* DW_CFA_val_expression */
	case 0x11:                                            /* DW_CFA_offset_extended_sf */
		reg = read_uleb(c);
		set_rule(m, reg, CFI_AT_CFA, read_sleb(c) * align);
		return 0;
	case 0x12:
		reg = read_uleb(c);
		def_cfa(m, reg, read_sleb(c) * align);
		return 0;
	case 0x13: change_cfa(m, c, m->rule.cfa_register, read_sleb(c) * align); return 0;
	case 0x14: /* DW_CFA_val_offset */
		reg = read_uleb(c);
		set_rule(m, reg, CFI_IS_CFA, (int64_t)read_uleb(c) * align);
		return 0;
	case 0x15: /* DW_CFA_val_offset_sf */
		reg = read_uleb(c);
		set_rule(m, reg, CFI_IS_CFA, read_sleb(c) * align);
		return 0;
	case 0x2e: read_uleb(c); return 0; /* DW_CFA_GNU_args_size */
	case 0x2f:                         /* DW_CFA_GNU_negative_offset_extended */
		reg = read_uleb(c);
		set_rule(m, reg, CFI_AT_CFA, -(int64_t)read_uleb(c) * align);
		return 0;
	default: return -ENOTSUP;
	}
}

/* Runs instructions until they end or the location passes pc. */
static int run(struct machine *m, struct cursor *c)
{
	while (!m->done && c->at < c->length) {
		uint8_t op = read_u8(c), low = op & 0x3f;
		int error = 0;
		switch (op >> 6) {
		case 1: advance(m, low); break; /* DW_CFA_advance_loc */
		case 2:
			set_rule(m, low, CFI_AT_CFA, (int64_t)read_uleb(c) * m->cie->data_align);
			break;
		case 3: restore_rule(m, low); break;
		default: error = run_extended(m, c, op); break;
		}
		if (error)
			return error;
		if (c->bad)
			return -EINVAL;
	}
	return 0;
}

int cfi_rule_at(const uint8_t *cie_bytes, size_t cie_length, uint64_t cie_vaddr,
		const uint8_t *fde_bytes, size_t fde_length, uint64_t fde_vaddr, uint64_t pc,
		struct cfi_rule *rule)
{
	struct cie cie;
	struct fde fde;
	int error = parse_cie(cie_bytes, cie_length, cie_vaddr, &cie);
	if (!error)
		error = parse_fde(fde_bytes, fde_length, fde_vaddr, &cie, &fde);
	if (error)
		return error;
	if (pc < fde.pc_begin || pc >= fde.pc_end)
		return -ENOENT;
	struct machine m = {.pc = pc, .location = fde.pc_begin, .cie = &cie};
	m.rule.rbp.how = CFI_SAME;
	m.rule.return_address.how = CFI_UNDEFINED;
	error = run(&m, &cie.instructions);
	if (error)
		return error;
	m.initial = m.rule;
	m.done = 0;
	m.depth = 0;
	error = run(&m, &fde.instructions);
	if (error)
		return error;
	*rule = m.rule;
	return 0;
}

/* ---- DWARF expressions ----------------------------------------------------- */

struct eval {
	uint64_t stack[CFI_EXPR_STACK];
	unsigned depth;
	int bad; /* an over- or underflow: -EINVAL */
};

static void push(struct eval *e, uint64_t value)
{
	if (e->depth == CFI_EXPR_STACK)
		e->bad = 1;
	else
		e->stack[e->depth++] = value;
}

static uint64_t pop(struct eval *e)
{
	if (!e->depth) {
		e->bad = 1;
		return 0;
	}
	return e->stack[--e->depth];
}

/* The value i places below the top (0: the top), or a bad stack. */
static uint64_t peek(struct eval *e, uint64_t i)
{
	if (i >= e->depth) {
		e->bad = 1;
		return 0;
	}
	return e->stack[e->depth - 1 - i];
}

/* The frame's registers an expression may name: rsp, rbp, rip. */
static int register_value(const struct cfi_regs *regs, uint64_t reg, uint64_t *value)
{
	if (reg == CFI_DWARF_RSP)
		*value = regs->rsp;
	else if (reg == CFI_DWARF_RBP)
		*value = regs->rbp;
	else if (reg == CFI_DWARF_RIP)
		*value = regs->rip;
	else
		return -ENOTSUP;
	return 0;
}

/* A binary operator on the two values on top (second op top); its result,
 * or a division by zero in *error. */
static uint64_t binary(uint8_t op, uint64_t second, uint64_t top, int *error)
{
	int64_t a = (int64_t)second, b = (int64_t)top;
	switch (op) {
	case 0x1a: return second & top;
	case 0x1b: /* DW_OP_div: signed */
		if (!top)
			*error = -EINVAL;
		else if (b == -1)
			return 0 - second; /* INT64_MIN / -1 wraps instead of trapping */
		return top ? (uint64_t)(a / b) : 0;
	case 0x1c: return second - top;
	case 0x1d: /* DW_OP_mod */
		if (!top)
			*error = -EINVAL;
		return top ? second % top : 0;
	case 0x1e: return second * top;
	case 0x21: return second | top;
	case 0x22: return second + top;
	case 0x24: return top >= 64 ? 0 : second << top;
	case 0x25: return top >= 64 ? 0 : second >> top;
	case 0x26: return (uint64_t)(a >> (top >= 64 ? 63 : top));
	case 0x27: return second ^ top;
	case 0x29: return a == b;
	case 0x2a: return a >= b;
	case 0x2b: return a > b;
	case 0x2c: return a <= b;
	case 0x2d: return a < b;
	default: return a != b; /* 0x2e */
	}
}

static bool is_binary(uint8_t op)
{
	return (op >= 0x1a && op <= 0x1e) || op == 0x21 || op == 0x22 ||
	       (op >= 0x24 && op <= 0x27) || (op >= 0x29 && op <= 0x2e);
}

/* DW_OP_skip and DW_OP_bra: the cursor moved by a signed 16-bit offset,
 * inside the expression (its end included). */
static void branch(struct cursor *c, int16_t offset)
{
	int64_t to = (int64_t)c->at + offset;
	if (c->bad || to < 0 || to > (int64_t)c->length)
		c->bad = 1;
	else
		c->at = (size_t)to;
}

/* Reads size bytes (1 to 8) at address, zero-extended. */
static int deref(struct eval *e, size_t size, cfi_read_fn read, void *arg)
{
	uint8_t bytes[8] = {0};
	uint64_t address = pop(e);
	if (e->bad || !size || size > 8)
		return -EINVAL;
	if (read(bytes, address, size, arg))
		return -EFAULT;
	push(e, read_le64(bytes));
	return 0;
}

/* The stack operations: 0, or -ENOTSUP when op is not one. */
static int stack_op(struct eval *e, struct cursor *c, uint8_t op)
{
	uint64_t top, second, third;
	switch (op) {
	case 0x12: push(e, peek(e, 0)); return 0;          /* DW_OP_dup */
	case 0x13: pop(e); return 0;                       /* DW_OP_drop */
	case 0x14: push(e, peek(e, 1)); return 0;          /* DW_OP_over */
	case 0x15: push(e, peek(e, read_u8(c))); return 0; /* DW_OP_pick */
	case 0x16:                                         /* DW_OP_swap */
		top = pop(e), second = pop(e);
		push(e, top), push(e, second);
		return 0;
	case 0x17: /* DW_OP_rot: the top goes below the next two */
		top = pop(e), second = pop(e), third = pop(e);
		push(e, top), push(e, third), push(e, second);
		return 0;
	case 0x19: /* DW_OP_abs */
		top = pop(e);
		push(e, (int64_t)top < 0 ? 0 - top : top);
		return 0;
	case 0x1f: push(e, 0 - pop(e)); return 0; /* DW_OP_neg */
	case 0x20: push(e, ~pop(e)); return 0;    /* DW_OP_not */
	default: return -ENOTSUP;
	}
}

/* The constants: 0, or -ENOTSUP when op is not one. */
static int constant_op(struct eval *e, struct cursor *c, uint8_t op)
{
	switch (op) {
	case 0x03: push(e, read_fixed(c, 8)); return 0; /* DW_OP_addr */
	case 0x08: push(e, read_u8(c)); return 0;
	case 0x09: push(e, (uint64_t)(int64_t)(int8_t)read_u8(c)); return 0;
	case 0x0a: push(e, read_fixed(c, 2)); return 0;
	case 0x0b: push(e, (uint64_t)(int64_t)(int16_t)read_fixed(c, 2)); return 0;
	case 0x0c: push(e, read_fixed(c, 4)); return 0;
	case 0x0d: push(e, (uint64_t)(int64_t)(int32_t)read_fixed(c, 4)); return 0;
	case 0x0e:
	case 0x0f: push(e, read_fixed(c, 8)); return 0;
	case 0x10: push(e, read_uleb(c)); return 0;
	case 0x11: push(e, (uint64_t)read_sleb(c)); return 0;
	default:
		if (op >= 0x30 && op <= 0x4f) { /* DW_OP_lit0..31 */
			push(e, op - 0x30u);
			return 0;
		}
		return -ENOTSUP;
	}
}

/* One operation: 0, -EINVAL, -ENOTSUP or -EFAULT. */
static int run_op(struct eval *e, struct cursor *c, const struct cfi_regs *regs, cfi_read_fn read,
		  void *arg)
{
	uint8_t op = read_u8(c);
	uint64_t value, reg;
	int error = 0;
	if (is_binary(op)) {
		uint64_t top = pop(e), second = pop(e);
		push(e, binary(op, second, top, &error));
		return error;
	}
	if (op >= 0x70 && op <= 0x8f) { /* DW_OP_breg0..31 */
		int64_t offset = read_sleb(c);
		error = register_value(regs, op - 0x70u, &value);
		push(e, value + (uint64_t)offset);
		return error;
	}
	switch (op) {
	case 0x06: return deref(e, 8, read, arg);                  /* DW_OP_deref */
	case 0x94: return deref(e, read_u8(c), read, arg);         /* DW_OP_deref_size */
	case 0x23: push(e, pop(e) + read_uleb(c)); return 0;       /* DW_OP_plus_uconst */
	case 0x2f: branch(c, (int16_t)read_fixed(c, 2)); return 0; /* DW_OP_skip */
	case 0x28: {                                               /* DW_OP_bra */
		int16_t offset = (int16_t)read_fixed(c, 2);
		if (pop(e))
			branch(c, offset);
		return 0;
	}
	case 0x92: /* DW_OP_bregx */
		reg = read_uleb(c);
		value = (uint64_t)read_sleb(c);
		error = register_value(regs, reg, &reg);
		push(e, reg + value);
		return error;
	case 0x96: return 0; /* DW_OP_nop */
	default:
		error = constant_op(e, c, op);
		return error == -ENOTSUP ? stack_op(e, c, op) : error;
	}
}

int cfi_eval_expression(const struct cfi_expr *expr, const struct cfi_regs *regs, bool push_cfa,
			uint64_t cfa, cfi_read_fn read, void *arg, uint64_t *result)
{
	if (!expr || !regs || !read || !result || expr->length > CFI_EXPR_MAX)
		return -EINVAL;
	struct cursor c = {expr->bytes, expr->length, 0, 0, 0};
	struct eval e = {.depth = 0};
	if (push_cfa)
		push(&e, cfa);
	for (unsigned steps = 0; c.at < c.length; steps++) {
		if (steps == CFI_EXPR_STEPS)
			return -EINVAL; /* a loop, or more work than a rule can need */
		int error = run_op(&e, &c, regs, read, arg);
		if (error)
			return error;
		if (c.bad || e.bad)
			return -EINVAL;
	}
	if (!e.depth)
		return -EINVAL;
	*result = e.stack[e.depth - 1];
	return 0;
}

/* ---- One step ------------------------------------------------------------ */

/* The FDE whose search-table entry is the last at or before pc: its address,
 * or 0 when pc is before the first. */
static int find_fde(const struct cfi_tables *t, uint64_t pc, cfi_read_fn read, void *arg,
		    uint64_t *fde)
{
	uint32_t low = 0, high = t->fde_count; /* the answer is in [low, high) */
	int32_t entry[2] = {0, 0};
	int found = 0;
	while (low < high) {
		uint32_t middle = low + (high - low) / 2;
		int32_t probe[2];
		if (read(probe, t->table + (uint64_t)middle * 8, sizeof probe, arg))
			return -EFAULT;
		if (t->hdr + (int64_t)probe[0] <= pc) {
			memcpy(entry, probe, sizeof entry);
			found = 1;
			low = middle + 1;
		} else {
			high = middle;
		}
	}
	if (!found)
		return -ENOENT;
	*fde = t->hdr + (int64_t)entry[1];
	return 0;
}

/* Reads the record at address (inside .eh_frame) into buffer: its length. */
static int read_record(const struct cfi_tables *t, uint64_t address, uint8_t *buffer,
		       cfi_read_fn read, void *arg, size_t *length)
{
	if (address < t->eh_frame_start || address >= t->eh_frame_end ||
	    t->eh_frame_end - address < 8)
		return -EINVAL;
	if (read(buffer, address, 4, arg))
		return -EFAULT;
	uint64_t size = (uint64_t)read_le32(buffer) + 4;
	if (size > CFI_RECORD_MAX)
		return read_le32(buffer) == 0xffffffffu ? -ENOTSUP : -EINVAL;
	if (size < 8 || size > t->eh_frame_end - address)
		return -EINVAL;
	if (read(buffer, address, (size_t)size, arg))
		return -EFAULT;
	*length = (size_t)size;
	return 0;
}

int cfi_find_rule(const struct cfi_tables *t, uint64_t pc, cfi_read_fn read, void *arg,
		  struct cfi_rule *rule)
{
	uint8_t fde[CFI_RECORD_MAX], cie[CFI_RECORD_MAX];
	size_t fde_length, cie_length;
	uint64_t fde_at;
	if (!t || !t->fde_count || !read || !rule)
		return -ENOENT;
	int error = find_fde(t, pc, read, arg, &fde_at);
	if (!error)
		error = read_record(t, fde_at, fde, read, arg, &fde_length);
	if (error)
		return error;
	uint32_t back = read_le32(fde + 4); /* the CIE, this far before the field */
	if (!back || back > fde_at + 4 - t->eh_frame_start)
		return -EINVAL;
	uint64_t cie_at = fde_at + 4 - back;
	error = read_record(t, cie_at, cie, read, arg, &cie_length);
	if (!error)
		error = cfi_rule_at(cie, cie_length, cie_at, fde, fde_length, fde_at, pc, rule);
	return error;
}

/* A register's value in the caller by its rule. */
static int recover(const struct cfi_register_rule *r, uint64_t cfa, uint64_t now,
		   const struct cfi_regs *regs, cfi_read_fn read, void *arg, uint64_t *value)
{
	uint64_t address;
	int error;
	switch (r->how) {
	case CFI_SAME: *value = now; return 0;
	case CFI_UNDEFINED: *value = 0; return 0;
	case CFI_IS_CFA: *value = cfa + (uint64_t)r->offset; return 0;
	case CFI_AT_CFA:
		return read(value, cfa + (uint64_t)r->offset, sizeof *value, arg) ? -EFAULT : 0;
	case CFI_IS_EXPR: return cfi_eval_expression(&r->expr, regs, true, cfa, read, arg, value);
	case CFI_AT_EXPR:
		error = cfi_eval_expression(&r->expr, regs, true, cfa, read, arg, &address);
		if (error)
			return error;
		return read(value, address, sizeof *value, arg) ? -EFAULT : 0;
	default: return -ENOTSUP;
	}
}

int cfi_step_by_rule(const struct cfi_rule *rule, struct cfi_regs *regs, cfi_read_fn read,
		     void *arg)
{
	bool by_expression = rule->cfa_known == CFI_CFA_EXPRESSION;
	if (!by_expression &&
	    (rule->cfa_known != CFI_CFA_REGISTER ||
	     (rule->cfa_register != CFI_DWARF_RSP && rule->cfa_register != CFI_DWARF_RBP)))
		return -ENOTSUP;
	if (rule->return_address.how == CFI_UNDEFINED)
		return CFI_OUTERMOST;
	uint64_t cfa, rip, rbp;
	int error = 0;
	if (by_expression)
		error = cfi_eval_expression(&rule->cfa_expr, regs, false, 0, read, arg, &cfa);
	else
		cfa = (rule->cfa_register == CFI_DWARF_RSP ? regs->rsp : regs->rbp) +
		      (uint64_t)rule->cfa_offset;
	if (error)
		return error;
	if (cfa <= regs->rsp)
		return -EINVAL; /* a caller's frame lies above its callee's */
	if (rule->rbp.how == CFI_AT_CFA && rule->return_address.how == CFI_AT_CFA &&
	    rule->rbp.offset == rule->return_address.offset - 8) {
		uint64_t pair[2]; /* a frame-pointer frame: rbp, then the return address */
		error =
		    read(pair, cfa + (uint64_t)rule->rbp.offset, sizeof pair, arg) ? -EFAULT : 0;
		rbp = pair[0], rip = pair[1];
	} else {
		error = recover(&rule->return_address, cfa, regs->rip, regs, read, arg, &rip);
		if (!error)
			error = recover(&rule->rbp, cfa, regs->rbp, regs, read, arg, &rbp);
	}
	if (error == -ENOTSUP && rule->rbp.how == CFI_UNKNOWN &&
	    rule->return_address.how != CFI_UNKNOWN)
		rbp = 0, error = 0; /* rbp lost: the CFA of frames further out may not need it */
	if (error)
		return error;
	*regs = (struct cfi_regs){.rip = rip, .rsp = cfa, .rbp = rbp};
	return 0;
}

int cfi_unwind_step(const struct cfi_tables *t, struct cfi_regs *regs, enum cfi_frame frame,
		    cfi_read_fn read, void *arg)
{
	if (!regs)
		return -ENOENT;
	struct cfi_rule rule;
	int error = cfi_find_rule(t, frame == CFI_FIRST_FRAME ? regs->rip : regs->rip - 1, read,
				  arg, &rule);
	return error ? error : cfi_step_by_rule(&rule, regs, read, arg);
}

/* ---- The cache ------------------------------------------------------------ */

/* The set of (identity, pc): the mix's top bits. */
static unsigned set_of(uint64_t identity, uint64_t pc)
{
	uint64_t mix = (pc ^ identity) * 0x9e3779b97f4a7c15ull;
	_Static_assert(CFI_CACHE_SLOTS / CFI_CACHE_WAYS == 64, "the set is the mix's top 6 bits");
	return (unsigned)(mix >> 58);
}

const struct cfi_cache_slot *cfi_cache_find(const struct cfi_cache *cache, uint64_t identity,
					    uint64_t pc)
{
	const struct cfi_cache_slot *way = &cache->slots[set_of(identity, pc) * CFI_CACHE_WAYS];
	for (unsigned i = 0; i < CFI_CACHE_WAYS; i++)
		if (way[i].pc == pc && way[i].identity == identity && identity)
			return &way[i];
	return NULL;
}

bool cfi_cache_lookup(const struct cfi_cache *cache, uint64_t identity, uint64_t pc,
		      struct cfi_rule *rule, int *error)
{
	const struct cfi_cache_slot *slot = cfi_cache_find(cache, identity, pc);
	if (!slot)
		return false;
	*rule = slot->rule;
	*error = slot->error;
	return true;
}

void cfi_cache_insert(struct cfi_cache *cache, uint64_t identity, uint64_t pc,
		      const struct cfi_rule *rule, int error)
{
	if (!identity || (error && error != -ENOENT))
		return;
	unsigned set = set_of(identity, pc);
	/* The ways of a set are filled in turn: the oldest goes first. */
	struct cfi_cache_slot *slot =
	    &cache->slots[set * CFI_CACHE_WAYS + cache->next_way[set]++ % CFI_CACHE_WAYS];
	*slot = (struct cfi_cache_slot){.identity = identity, .pc = pc, .error = error};
	if (!error)
		slot->rule = *rule;
}

uint64_t cfi_hash(uint64_t hash, const void *bytes, size_t length)
{
	const uint8_t *p = bytes;
	for (size_t i = 0; i < length; i++)
		hash = (hash ^ p[i]) * 0x100000001b3ull;
	return hash;
}
