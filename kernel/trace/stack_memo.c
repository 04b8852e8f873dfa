/*
 * The stacks a CPU has sent, remembered so that the same stack goes again as
 * a reference (uapi/trace.h's user_stack_ref) instead of a walk and its
 * frames.  A walk is a function of the registers it starts from (rip, rsp,
 * rbp), the program's unwind tables (the rules' identity), what the mode
 * keeps, and the user words it read on the way (return addresses, saved rbp
 * values): the tables do not change while the program runs (the rule cache
 * holds the same), so when those registers are the same and every word the
 * walk read still holds its value, the walk would find the same stack.  The
 * memo keeps, per stack, where each word was read (its physmap address) and
 * the page-table path that led there (mm's vm_peek_path): a check is a few
 * loads per page and one per word, where the walk costs some 160 a step.  A
 * caller that changed at the same depth leaves a different return address
 * in a slot the walk read: no match, a walk.
 *
 * A CPU's memo names stacks in its own stream (ids are the CPU's count), so
 * a reference never points into another CPU's packets; entries carry the
 * stream's epoch (a new trace, or a packet the sink refused, starts a new
 * one) so no reference names a stack the reader may not have.  Used with
 * interrupts off: the memo is its CPU's alone meanwhile.
 */
#include "trace/internal.h"

#include "lib/string.h"
#include "mm/mm.h"

#define MEMO_WAYS 4
#define MEMO_SETS (STACK_MEMO_ENTRIES / MEMO_WAYS)
_Static_assert((MEMO_SETS & (MEMO_SETS - 1)) == 0, "sets: a power of two");

static inline unsigned set_of(const struct stack_memo_key *key)
{
	uint64_t h = (key->rip ^ (key->rsp * 0x9e3779b97f4a7c15ULL)) * 0xbf58476d1ce4e5b9ULL;
	return (unsigned)(h >> 58) & (MEMO_SETS - 1);
}

static inline __attribute__((always_inline)) bool same_key(const struct stack_memo_key *a, const struct stack_memo_key *b)
{
	return a->rip == b->rip && a->rsp == b->rsp && a->rbp == b->rbp &&
	       a->identity == b->identity && a->own_start == b->own_start &&
	       a->own_end == b->own_end && a->config == b->config;
}

/* Does every page the walk read still map as then, and every word hold? */
static inline __attribute__((always_inline)) bool still_holds(const struct stack_memo_entry *e)
{
	uint64_t root = vm_peek_root();
	for (unsigned i = 0; i < e->pages; i++)
		if (!vm_peek_path_holds(&e->path[i], root))
			return false;
	for (unsigned i = 0; i < e->words; i++) {
		uint64_t now;
		__builtin_memcpy(&now, e->at[i], 8);
		if (now != e->value[i])
			return false;
	}
	return true;
}

const struct stack_memo_entry *stack_memo_find(struct stack_memo *memo,
					       const struct stack_memo_key *key, uint32_t epoch)
{
	struct stack_memo_entry *set = &memo->entries[set_of(key) * MEMO_WAYS];
	for (unsigned way = 0; way < MEMO_WAYS; way++) {
		struct stack_memo_entry *e = &set[way];
		if (e->epoch == epoch && same_key(&e->key, key))
			return still_holds(e) ? e : NULL;
	}
	return NULL;
}

void stack_memo_begin(struct stack_memo *memo, struct user_peek *peek)
{
	memo->reading.words = 0;
	memo->reading.pages_used = 0;
	memo->reading.unusable = false;
	peek->paths = memo->reading.paths;
}

void stack_memo_note(struct stack_memo *memo, const uint8_t *at, unsigned slot, size_t length)
{
	struct stack_memo_reading *r = &memo->reading;
	for (size_t done = 0; done < length; done += 8) {
		if (r->words == STACK_MEMO_WORDS || length - done < 8) {
			r->unusable = true;
			return;
		}
		r->at[r->words] = at + done;
		__builtin_memcpy(&r->value[r->words++], at + done, 8);
	}
	r->pages_used |= 1u << slot;
}

/* The entry to fill for key: the way holding key, an empty or stale one, or
 * the set's next in turn. */
static struct stack_memo_entry *victim(struct stack_memo *memo, const struct stack_memo_key *key,
				       uint32_t epoch)
{
	unsigned first = set_of(key) * MEMO_WAYS;
	struct stack_memo_entry *set = &memo->entries[first];
	for (unsigned way = 0; way < MEMO_WAYS; way++)
		if (set[way].epoch != epoch || same_key(&set[way].key, key))
			return &set[way];
	return &set[memo->turn[first / MEMO_WAYS]++ % MEMO_WAYS];
}

void stack_memo_keep(struct stack_memo *memo, const struct stack_memo_key *key, uint32_t id,
		     uint32_t epoch, const struct user_peek *peek)
{
	const struct stack_memo_reading *r = &memo->reading;
	unsigned pages = 0;
	for (unsigned slot = 0; slot < USER_PEEK_PAGES; slot++)
		pages += (r->pages_used >> slot) & 1;
	/* A walk that found more pages than the peek holds may have put another
	 * page's path in the slot of one it read words from. */
	if (r->unusable || pages > STACK_MEMO_PAGES || peek->next > USER_PEEK_PAGES)
		return;
	struct stack_memo_entry *e = victim(memo, key, epoch);
	e->epoch = 0; /* not a match while half written */
	e->key = *key;
	e->id = id;
	e->pages = (uint8_t)pages;
	e->words = (uint8_t)r->words;
	unsigned n = 0;
	for (unsigned slot = 0; slot < USER_PEEK_PAGES; slot++)
		if (r->pages_used & (1u << slot))
			e->path[n++] = r->paths[slot];
	for (unsigned i = 0; i < r->words; i++) {
		e->at[i] = r->at[i];
		e->value[i] = r->value[i];
	}
	e->epoch = epoch;
}
