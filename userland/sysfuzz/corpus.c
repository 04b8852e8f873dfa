/*
 * The crash corpus (tests/fuzz/corpus/, in the initrd under /fuzz/): inputs
 * that once crashed the system or that walk its hostile paths, replayed on
 * every `make test` by sysfuzz as init before its random calls.
 *   /fuzz/elf/           hostile aspect objects: each loaded as root through
 *                        ms_scope_ctl must be refused with a reason (or, if
 *                        a mutation left it valid, load and unload cleanly)
 *   /fuzz/syscalls.seeds one batch per line, "SEED CALLS  # why": the seeds
 *                        that once hung or were killed at their time limit
 * A panic stops the machine (the harness reports it); a refusal without a
 * reason, or a batch that hangs, fails the case.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microscope/syscall.h>

#include "sysfuzz.h"
#include "uapi/scope.h"

#define ELF_DIR    "/fuzz/elf"
#define SEEDS_FILE "/fuzz/syscalls.seeds"

static long scope(uint32_t op, const char *name, char *error, size_t error_size)
{
	static struct scope_ctl c;
	memset(&c, 0, sizeof c);
	c.op = op;
	strncpy(c.name, name, sizeof c.name - 1);
	long result = ms_syscall3(__NR_ms_scope_ctl, (long)&c, 0, 0);
	if (error)
		snprintf(error, error_size, "%s", c.error);
	if (result == 0 && op == SCOPE_LOAD)
		scope(SCOPE_UNLOAD, c.name, NULL, 0); /* c.name: what was loaded */
	return result;
}

int corpus_replay_objects(void)
{
	DIR *dir = opendir(ELF_DIR);
	if (!dir) {
		printf("# corpus: no %s\n", ELF_DIR);
		return 0;
	}
	int failed = 0, count = 0;
	struct dirent *entry;
	while ((entry = readdir(dir))) {
		if (entry->d_name[0] == '.')
			continue;
		char path[300], error[160];
		snprintf(path, sizeof path, "%s/%s", ELF_DIR, entry->d_name);
		long result = scope(SCOPE_LOAD, path, error, sizeof error);
		count++;
		if (result < 0 && !error[0]) {
			printf("# corpus: %s refused (error %ld) without a reason\n", path,
			       -result);
			failed = 1;
		} else {
			printf("# corpus: %s: %s%s\n", path,
			       result < 0 ? "refused: " : "loaded, unloaded",
			       result < 0 ? error : "");
		}
	}
	closedir(dir);
	printf("# corpus: %d objects replayed\n", count);
	return !failed && count > 0;
}

int corpus_replay_seeds(int progress[2])
{
	FILE *f = fopen(SEEDS_FILE, "r");
	if (!f) {
		printf("# corpus: no %s\n", SEEDS_FILE);
		return 0;
	}
	char line[256];
	int ok = 1, batches = 0;
	while (fgets(line, sizeof line, f)) {
		unsigned long long seed;
		int calls;
		if (line[0] == '#' || sscanf(line, "%llu %d", &seed, &calls) != 2 || calls <= 0)
			continue;
		long made = sysfuzz_run_batch(seed, calls > BATCH ? BATCH : calls, progress);
		batches++;
		printf("# corpus: seed %llu: %s\n", seed, made < 0 ? "a hang" : "no hang");
		if (made < 0)
			ok = 0;
	}
	fclose(f);
	printf("# corpus: %d seeds replayed\n", batches);
	return ok && batches > 0;
}
