/*
 * The stacks each CPU has sent (stack_memo.c): a stack found the same, by
 * the registers its walk starts from and the user words it read, goes into
 * the stream as a reference.  The lookup is here, in line: it runs at every
 * system call of a traced process.
 */
#ifndef KERNEL_TRACE_STACK_MEMO_H
#define KERNEL_TRACE_STACK_MEMO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mm/mm.h"
#include "uaccess/uaccess.h"
#include "uapi/trace.h"

#define STACK_MEMO_ENTRIES 64
#define STACK_MEMO_WORDS   14 /* user words a remembered walk read, at most */
/* The address space's stamp stands for the program too: a space holds one
 * program for good (exec gives the process a new space). */
struct stack_memo_key {
	uint64_t rip, rsp, rbp; /* where the walk starts */
	uint64_t space;         /* the address space's stamp (mm's vm_space_stamp) */
	uint64_t config;        /* stack_memo_config: what the mode keeps, the stream's epoch */
	const void *thread;     /* the thread walked (its id goes with the references) */
};
/* A key's config: what the mode keeps (never 0) and the stream's epoch (0:
 * none, and then no key is looked up or kept), so that an entry of an
 * earlier stream matches no key of this one, and an empty entry (config 0)
 * none at all. */
static inline uint64_t stack_memo_config(uint32_t kept, uint32_t epoch)
{
	return kept | (uint64_t)epoch << 32;
}
static inline uint32_t stack_memo_epoch(uint64_t config)
{
	return (uint32_t)(config >> 32);
}
struct stack_memo_word {
	const uint64_t *at; /* where the walk read it (physmap) */
	uint64_t value;
};
struct stack_memo_entry {
	struct stack_memo_key key; /* config 0: empty */
	unsigned words;
	struct trace_user_stack_ref ref; /* the thread's id, the user_stack_def's */
	struct stack_memo_word word[STACK_MEMO_WORDS];
};
struct stack_memo {
	struct stack_memo_entry entries[STACK_MEMO_ENTRIES];
	uint8_t turn[STACK_MEMO_ENTRIES]; /* per set: the way to replace next */
	uint32_t next_id;
	struct stack_memo_entry *filling; /* the walk in progress notes its words here */
	bool unusable; /* it read too many words, or one across pages or unaligned */
	/* The pages the last walk found, in the space whose stamp is
	 * pages_space: the next walk in that space starts with them. */
	uint64_t pages_space;
	struct user_peek pages;
};
/* Before a walk whose reads stack_memo_note notes, for key (key->space read
 * before the walk's first read: a page unmapped while it runs gives the
 * space a new stamp, and the entry never matches); the entry it will fill
 * matches nothing meanwhile. */
void stack_memo_begin(struct stack_memo *memo, const struct stack_memo_key *key);
/* Keeps the walk just noted as key's stack, sent as ref (the thread's id
 * and the definition's) in key's epoch (unless it read too much); the words
 * whose bit unused sets (bit i: the i-th noted) are left out of its check:
 * saved rbp values that no later step of the walk used. */
void stack_memo_keep(struct stack_memo *memo, const struct stack_memo_key *key,
		     struct trace_user_stack_ref ref, uint32_t unused);
/* The walk read the word at physmap address at. */
static inline __attribute__((always_inline)) void stack_memo_note(struct stack_memo *memo,
								  const uint8_t *at)
{
	struct stack_memo_entry *e = memo->filling;
	if (e->words < STACK_MEMO_WORDS && !((uint64_t)at & 7)) {
		const uint64_t *word = (const uint64_t *)at;
		e->word[e->words++] = (struct stack_memo_word){.at = word, .value = *word};
	} else {
		memo->unusable = true;
	}
}
#define STACK_MEMO_WAYS 4
#define STACK_MEMO_SETS (STACK_MEMO_ENTRIES / STACK_MEMO_WAYS)
_Static_assert((STACK_MEMO_SETS & (STACK_MEMO_SETS - 1)) == 0, "sets: a power of two");

/* The set: the call's place (a wrapper's rip) and its depth (rsp in 16-byte
 * steps, the ABI's alignment at a call) mixed by a xor: the stacks of a
 * program's system calls differ in one or the other. */
static inline unsigned stack_memo_set(const struct stack_memo_key *key)
{
	return (unsigned)(key->rip ^ key->rsp >> 4) & (STACK_MEMO_SETS - 1);
}

static inline __attribute__((always_inline)) bool
stack_memo_same_key(const struct stack_memo_key *a, const struct stack_memo_key *b)
{
	return a->rip == b->rip && a->rsp == b->rsp && a->rbp == b->rbp && a->space == b->space &&
	       a->config == b->config && a->thread == b->thread;
}

/* Does every word the walk read still hold the value it had (the space's
 * stamp the same: each is still where it was read)?  Unrolled from the
 * count: a load, a load, a xor and an or a word, one branch at the end. */
#define STACK_MEMO_DIFF(n) (__atomic_load_n(w[n].at, __ATOMIC_RELAXED) ^ w[n].value)
static inline __attribute__((always_inline)) bool stack_memo_holds(const struct stack_memo_entry *e)
{
	_Static_assert(STACK_MEMO_WORDS == 14, "the cases below: one a word");
	const struct stack_memo_word *w = e->word;
	uint64_t diff = 0;
	switch (e->words) {
	case 14: diff |= STACK_MEMO_DIFF(13); /* fall through */
	case 13: diff |= STACK_MEMO_DIFF(12); /* fall through */
	case 12: diff |= STACK_MEMO_DIFF(11); /* fall through */
	case 11: diff |= STACK_MEMO_DIFF(10); /* fall through */
	case 10: diff |= STACK_MEMO_DIFF(9);  /* fall through */
	case 9: diff |= STACK_MEMO_DIFF(8);   /* fall through */
	case 8: diff |= STACK_MEMO_DIFF(7);   /* fall through */
	case 7: diff |= STACK_MEMO_DIFF(6);   /* fall through */
	case 6: diff |= STACK_MEMO_DIFF(5);   /* fall through */
	case 5: diff |= STACK_MEMO_DIFF(4);   /* fall through */
	case 4: diff |= STACK_MEMO_DIFF(3);   /* fall through */
	case 3: diff |= STACK_MEMO_DIFF(2);   /* fall through */
	case 2: diff |= STACK_MEMO_DIFF(1);   /* fall through */
	case 1: diff |= STACK_MEMO_DIFF(0);   /* fall through */
	case 0: break;
	default: __builtin_unreachable(); /* stack_memo_note keeps at most 14 */
	}
	return !diff;
}
#undef STACK_MEMO_DIFF

/* The entry for key (its config: the stream's epoch now), if every word its
 * walk read still holds (key.space: the stamp now; interrupts off), else
 * NULL. */
static inline __attribute__((always_inline)) const struct stack_memo_entry *
stack_memo_find(struct stack_memo *memo, const struct stack_memo_key *key)
{
	struct stack_memo_entry *set = &memo->entries[stack_memo_set(key) * STACK_MEMO_WAYS];
	for (unsigned way = 0; way < STACK_MEMO_WAYS; way++) {
		struct stack_memo_entry *e = &set[way];
		if (stack_memo_same_key(&e->key, key))
			return stack_memo_holds(e) ? e : NULL;
	}
	return NULL;
}

#endif
