/*
 * The stacks a CPU has sent, remembered so that the same stack goes again as
 * a reference (uapi/trace.h's user_stack_ref) instead of a walk and its
 * frames.  A walk is a function of the registers it starts from (rip, rsp,
 * rbp), the program's unwind tables (the rules' identity), what the mode
 * keeps, and the user words it read on the way (return addresses, saved rbp
 * values): the tables do not change while the program runs (the rule cache
 * holds the same), so when those registers are the same and every word the
 * walk read still holds its value, the walk would find the same stack.  The
 * memo keeps, per stack, where each word was read (its physmap address),
 * under the address space's stamp then (mm's vm_space_stamp, new whenever a
 * page of the space is unmapped or reprotected, and a space holds one
 * program: it stands for the tables too): while the stamp is the same,
 * those physmap addresses are still where the words are.  A check is two
 * loads, a xor and an or per word, where the walk costs some 160
 * instructions a step.  A caller that changed at the same depth leaves a
 * different return address in a slot the walk read: no match, a walk.  A
 * saved rbp that no later step of the walk used is left out of the check
 * (the walk says which): its value changes no frame and no address read.
 * The key holds the thread walked too, whose id goes with the references.
 *
 * A CPU's memo names stacks in its own stream (ids are the CPU's count), so
 * a reference never points into another CPU's packets; keys carry the
 * stream's epoch in their config (a new trace, or a packet the sink refused,
 * starts a new one) so no reference names a stack the reader may not have.
 * Used with interrupts off: the memo is its CPU's alone meanwhile.
 */
#include "trace/stack_memo.h"

/* The entry to fill for key: the way holding key, an empty or stale one, or
 * the set's next in turn. */
static struct stack_memo_entry *victim(struct stack_memo *memo, const struct stack_memo_key *key)
{
	unsigned set = stack_memo_set(key);
	struct stack_memo_entry *ways = &memo->entries[set * STACK_MEMO_WAYS];
	uint32_t epoch = stack_memo_epoch(key->config);
	for (unsigned way = 0; way < STACK_MEMO_WAYS; way++)
		if (stack_memo_epoch(ways[way].key.config) != epoch ||
		    stack_memo_same_key(&ways[way].key, key))
			return &ways[way];
	return &ways[memo->turn[set]++ % STACK_MEMO_WAYS];
}

void stack_memo_begin(struct stack_memo *memo, const struct stack_memo_key *key)
{
	struct stack_memo_entry *e = victim(memo, key);
	e->key.config = 0;
	e->words = 0;
	memo->filling = e;
	memo->unusable = !key->space; /* the kernel's */
}

/* Leaves out of e's check the words whose bit unused is set (usually the
 * last step's rbp alone: the loop starts at the first). */
static void drop_words(struct stack_memo_entry *e, uint32_t unused)
{
	unused &= (1u << e->words) - 1;
	if (!unused)
		return;
	unsigned kept = (unsigned)__builtin_ctz(unused);
	for (unsigned i = kept; i < e->words; i++)
		if (!(unused & 1u << i))
			e->word[kept++] = e->word[i];
	e->words = kept;
}

void stack_memo_keep(struct stack_memo *memo, const struct stack_memo_key *key,
		     struct trace_user_stack_ref ref, uint32_t unused)
{
	struct stack_memo_entry *e = memo->filling;
	if (memo->unusable)
		return;
	drop_words(e, unused);
	e->key = *key;
	e->ref = ref;
}
