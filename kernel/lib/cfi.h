/*
 * DWARF call frame information (.eh_frame, found through .eh_frame_hdr's
 * search table): one step out of a user stack frame without frame pointers,
 * the CFA rules GCC emits for x86_64 (psABI 3.7; DWARF 4 section 6.4).  The
 * tables are untrusted (a program's own bytes, read through a callback that
 * may fail): every record is bounded and checked before it is interpreted,
 * and the work of one step is bounded (a binary search, two records of at
 * most CFI_RECORD_MAX bytes, three reads).
 *
 *     struct cfi_regs regs = {.rip = frame->rip, .rsp = frame->rsp, .rbp = frame->rbp};
 *     while (cfi_unwind_step(&tables, &regs, CFI_FIRST_FRAME, read_user, NULL) == 0)
 *             note(regs.rip);     (CFI_RETURN_ADDRESS after the first step)
 */
#ifndef KERNEL_LIB_CFI_H
#define KERNEL_LIB_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a program's tables are (from its ELF at exec; all 0: it has none). */
struct cfi_tables {
	uint64_t hdr;       /* .eh_frame_hdr: search-table entries are relative to it */
	uint64_t table;     /* the search table: fde_count pairs of int32 (pc, fde) */
	uint32_t fde_count; /* sorted by pc */
	uint64_t eh_frame_start, eh_frame_end; /* every CIE and FDE lies inside */
	uint64_t identity; /* a hash of the tables' bytes and places: rules are cached under it */
};

/* The registers an unwind step needs and gives back. */
struct cfi_regs {
	uint64_t rip, rsp, rbp;
};

/* A DWARF expression of a rule (DW_CFA_def_cfa_expression, DW_CFA_expression,
 * DW_CFA_val_expression), its bytes copied out of the FDE: GCC's for x86_64
 * are a few bytes (a PLT entry's CFA: 11; a realigned frame's: 3). */
#define CFI_EXPR_MAX 16
struct cfi_expr {
	uint8_t length;
	uint8_t bytes[CFI_EXPR_MAX];
};

/* How a register of the caller is found (DWARF's register rules). */
enum cfi_how {
	CFI_SAME,      /* unchanged (callee-saved and not saved yet) */
	CFI_UNDEFINED, /* no value: for the return address, the outermost frame */
	CFI_AT_CFA,    /* saved at CFA + offset */
	CFI_IS_CFA,    /* is CFA + offset */
	CFI_UNKNOWN,   /* a rule this interpreter does not follow (other registers) */
	CFI_AT_EXPR,   /* saved at the address expr gives, the CFA pushed first */
	CFI_IS_EXPR,   /* is what expr gives, the CFA pushed first */
};

struct cfi_register_rule {
	enum cfi_how how;
	int64_t offset;
	struct cfi_expr expr; /* CFI_AT_EXPR, CFI_IS_EXPR */
};

/* How the CFA is found. */
enum cfi_cfa { CFI_CFA_UNKNOWN, CFI_CFA_REGISTER, CFI_CFA_EXPRESSION };

/* The frame at one pc: CFA = cfa_register + cfa_offset (or what cfa_expr
 * gives), then rbp and the return address by their rules. */
struct cfi_rule {
	int cfa_known;         /* enum cfi_cfa */
	unsigned cfa_register; /* DWARF number: 6 rbp, 7 rsp */
	int64_t cfa_offset;
	struct cfi_expr cfa_expr; /* CFI_CFA_EXPRESSION */
	struct cfi_register_rule rbp, return_address;
};

#define CFI_DWARF_RBP            6
#define CFI_DWARF_RSP            7
#define CFI_DWARF_RETURN_ADDRESS 16
#define CFI_RECORD_MAX           512 /* bytes of one CIE or FDE, length field included */
#define CFI_FDE_COUNT_MAX        (1u << 20)
#define CFI_STATE_DEPTH          4  /* DW_CFA_remember_state nesting */
#define CFI_OUTERMOST            1  /* cfi_unwind_step: the return address is undefined */
#define CFI_DWARF_RIP            16 /* DW_OP_breg16: the frame's pc */
#define CFI_EXPR_STACK           8  /* an expression's evaluation stack, in values */
#define CFI_EXPR_STEPS           64 /* operations one evaluation may run (branches loop) */

/* The first frame's rip is where the code stopped (a system call's next
 * instruction); the others' are return addresses, looked up at rip - 1 (the
 * call may be the last instruction of its function). */
enum cfi_frame { CFI_FIRST_FRAME, CFI_RETURN_ADDRESS };

/* Reads length bytes at address into to: 0, or -EFAULT. */
typedef int (*cfi_read_fn)(void *to, uint64_t address, size_t length, void *arg);

/* Checks an .eh_frame_hdr (length bytes, at vaddr in memory): version 1,
 * the encodings GNU ld writes (eh_frame_ptr pcrel sdata4, fde_count udata4,
 * table datarel sdata4), at most CFI_FDE_COUNT_MAX entries, the table inside
 * the section.  Fills out's hdr, table, fde_count and eh_frame_start (the
 * caller sets eh_frame_end from the .eh_frame section).  Returns 0 or
 * -EINVAL. */
int cfi_parse_hdr(const uint8_t *hdr, size_t length, uint64_t vaddr, struct cfi_tables *out);

/* The rule at pc from one CIE and one FDE (their bytes, length fields
 * included, and their addresses).  Returns 0; -ENOENT when pc is outside the
 * FDE; -EINVAL when a record is malformed or runs past its bytes; -ENOTSUP
 * for what the interpreter does not take (a 64-bit length, a CIE version
 * other than 1 or 3, an unknown augmentation or pointer encoding, a return
 * address column other than 16, deeper remember_state nesting). */
int cfi_rule_at(const uint8_t *cie, size_t cie_length, uint64_t cie_vaddr, const uint8_t *fde,
		size_t fde_length, uint64_t fde_vaddr, uint64_t pc, struct cfi_rule *rule);

/* The rule at pc, found through the tables by read.  Returns 0; -ENOENT (no
 * FDE covers pc), -EFAULT, -EINVAL, -ENOTSUP as cfi_rule_at and the reads
 * say. */
int cfi_find_rule(const struct cfi_tables *tables, uint64_t pc, cfi_read_fn read, void *arg,
		  struct cfi_rule *rule);

/* Evaluates expr (a DWARF expression of CFI: the operations GCC writes for
 * x86_64 and the arithmetic around them: DW_OP_lit*, const*, addr, breg* and
 * bregx of rsp, rbp and rip (regs: the frame's values), deref, deref_size,
 * dup, drop, over, pick, swap, rot, the arithmetic, logic, shift and
 * comparison operators, skip, bra, nop), with cfa pushed first when
 * push_cfa.  At most CFI_EXPR_STACK values and CFI_EXPR_STEPS operations;
 * reads through read.  Returns 0 and *result (the top of the stack), -EINVAL
 * (an operand past the end, a stack that over- or underflows, a division by
 * zero, a branch out of the expression, too many steps, an empty stack at
 * the end), -ENOTSUP (an operation not taken, a register not followed),
 * -EFAULT (a read failed). */
int cfi_eval_expression(const struct cfi_expr *expr, const struct cfi_regs *regs, bool push_cfa,
			uint64_t cfa, cfi_read_fn read, void *arg, uint64_t *result);

/* Steps regs out of its frame by rule (cfi_find_rule's at regs->rip, or
 * rip - 1 after the first frame).  Returns what cfi_unwind_step does, but
 * for -ENOENT. */
int cfi_step_by_rule(const struct cfi_rule *rule, struct cfi_regs *regs, cfi_read_fn read,
		     void *arg);

/* Steps regs out of its frame into its caller's.  Returns 0 (regs is the
 * caller's), CFI_OUTERMOST (no caller: regs unchanged), -ENOENT (no FDE
 * covers the pc: the caller may try frame pointers), -EFAULT (a read
 * failed), -EINVAL (malformed tables, or a CFA that does not move up the
 * stack), -ENOTSUP (a rule not interpreted: see cfi_rule_at). */
int cfi_unwind_step(const struct cfi_tables *tables, struct cfi_regs *regs, enum cfi_frame frame,
		    cfi_read_fn read, void *arg);

/* A cache of found rules (and of pcs no FDE covers), by tables identity and
 * pc, four ways to a set (the few pcs a program's stacks pass through again
 * and again must not evict each other, as they did one way to a set): the
 * walk's cost is in finding rules.  Not locked: the caller keeps one per CPU
 * and runs each lookup and insert with interrupts off. */
#define CFI_CACHE_SLOTS 256
#define CFI_CACHE_WAYS  4
struct cfi_cache_slot {
	uint64_t identity, pc;
	int error; /* cfi_find_rule's answer: 0 (rule holds), -ENOENT */
	struct cfi_rule rule;
};
struct cfi_cache {
	struct cfi_cache_slot slots[CFI_CACHE_SLOTS];
	uint8_t next_way[CFI_CACHE_SLOTS / CFI_CACHE_WAYS]; /* per set: the way to fill next */
};

/* The cached answer for (identity, pc), or NULL (identity 0 never hits);
 * valid until the next insert. */
const struct cfi_cache_slot *cfi_cache_find(const struct cfi_cache *cache, uint64_t identity,
					    uint64_t pc);
/* Copies the cached answer for (identity, pc) into rule and *error: true on
 * a hit. */
bool cfi_cache_lookup(const struct cfi_cache *cache, uint64_t identity, uint64_t pc,
		      struct cfi_rule *rule, int *error);
/* Keeps the answer error (0 or -ENOENT; others are not kept) for (identity, pc). */
void cfi_cache_insert(struct cfi_cache *cache, uint64_t identity, uint64_t pc,
		      const struct cfi_rule *rule, int error);

/* FNV-1a of length bytes, on from hash (start with CFI_HASH_SEED): the
 * tables' identity at exec. */
#define CFI_HASH_SEED 0xcbf29ce484222325ull
uint64_t cfi_hash(uint64_t hash, const void *bytes, size_t length);

#endif
