/*
 * Host shims for kernel/mm's unit tests: the kernel services mm uses (locks,
 * panic, printk) and the environments of the page-table walker and the heap.
 * A test can catch the next panic instead of aborting:
 *
 *     EXPECT(MM_SHIM_PANICS(pmm_free_frame(frame)));   // a double free
 *     printf("%s\n", mm_shim_last_panic);
 */
#ifndef TESTS_HOST_SHIM_MM_SHIM_H
#define TESTS_HOST_SHIM_MM_SHIM_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

extern jmp_buf *mm_shim_panic_catcher;
extern char mm_shim_last_panic[256];

/* Evaluates to true when stmt panicked (locks it held are released). */
#define MM_SHIM_PANICS(stmt)                       \
	({                                         \
		jmp_buf catcher_;                  \
		volatile bool panicked_ = false;   \
		mm_shim_panic_catcher = &catcher_; \
		if (setjmp(catcher_) == 0) {       \
			stmt;                      \
		} else {                           \
			panicked_ = true;          \
		}                                  \
		mm_shim_panic_catcher = NULL;      \
		panicked_;                         \
	})

/* Page-table environment (mm_pt_shim.c): tables are aligned heap pages. */
size_t mm_shim_tables_live(void);
/* Makes the allocation after the next `allowed` ones fail; -1 never fails. */
void mm_shim_fail_tables_after(long allowed);

/* Heap page environment (mm_pages_shim.c). */
size_t mm_shim_pages_live(void);

/* A tiny KTAP reporter shared by the mm host tests. */
struct mm_test_case {
	const char *name;
	void (*run)(void);
};
extern int mm_test_failures;
#define EXPECT(cond)                                                                 \
	do {                                                                         \
		if (!(cond)) {                                                       \
			printf("# %s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
			mm_test_failures++;                                          \
		}                                                                    \
	} while (0)
/* Runs the cases, prints KTAP; returns the process exit status. */
int mm_test_main(const struct mm_test_case *cases, size_t count);

#endif
