/*
 * sysfuzz's own declarations: a batch of random calls in a worker, and the
 * crash corpus replayed before them (corpus.c).
 */
#ifndef USERLAND_SYSFUZZ_H
#define USERLAND_SYSFUZZ_H

#include <stdint.h>

#define BATCH 2000 /* calls per worker */

/* Runs count calls from seed in an unprivileged worker; returns the calls
 * made, or -1 for a hang (the worker did not end after SIGKILL). */
long sysfuzz_run_batch(uint64_t seed, int count, int progress[2]);
/* Loads every object of /fuzz/elf as root: 1 when each was refused with a
 * reason (or loaded and unloaded), 0 otherwise. */
int corpus_replay_objects(void);
/* Runs the batches /fuzz/syscalls.seeds lists: 1 when none hung. */
int corpus_replay_seeds(int progress[2]);

#endif
