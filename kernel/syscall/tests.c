/*
 * The system call table as SYSCALL_DEFINEn laid it out in .syscalls: no two
 * entries share a number, every number fits the table, every entry names
 * itself, its handler and the file that defines it, and the table dispatch
 * uses holds each entry under its number.  A collision is also a panic at
 * boot (syscall_init_cpu); this suite says which entries collide.
 */
#include "syscall/internal.h"

#include "console/console.h"
#include "ktest/ktest.h"
#include "lib/string.h"

static unsigned entry_count(void)
{
	return (unsigned)(__syscalls_end - __syscalls_start);
}

static void table_is_not_empty(struct ktest *t)
{
	const struct syscall_entry *entry = syscall_find(__NR_read);
	EXPECT_TRUE(t, entry_count() > 0);
	ASSERT_TRUE(t, entry != NULL);
	EXPECT_EQ(t, strcmp(entry->name, "read"), 0);
}

static void numbers_are_unique(struct ktest *t)
{
	unsigned duplicates = 0;
	for (const struct syscall_entry *entry = __syscalls_start; entry < __syscalls_end;
	     entry++) {
		for (const struct syscall_entry *other = entry + 1; other < __syscalls_end;
		     other++) {
			if (entry->number != other->number)
				continue;
			console_print("    # %s and %s share number %u\n", entry->name, other->name,
				      entry->number);
			duplicates++;
		}
	}
	EXPECT_EQ(t, duplicates, 0);
}

static void numbers_fit_the_table(struct ktest *t)
{
	for (const struct syscall_entry *entry = __syscalls_start; entry < __syscalls_end; entry++)
		EXPECT_TRUE(t, entry->number < SYSCALL_TABLE_SIZE);
}

/* A path from the top of the tree, as the Makefile passes it: "dir/name.c". */
static bool is_source_path(const char *file)
{
	size_t length = file ? strlen(file) : 0;
	return length > 2 && file[0] != '/' && strchr(file, '/') &&
	       !strcmp(file + length - 2, ".c");
}

static void entries_name_handler_and_file(struct ktest *t)
{
	for (const struct syscall_entry *entry = __syscalls_start; entry < __syscalls_end;
	     entry++) {
		EXPECT_TRUE(t, entry->name && entry->name[0]);
		EXPECT_TRUE(t, entry->call != NULL);
		EXPECT_TRUE(t, is_source_path(entry->file));
	}
}

static void table_holds_every_entry(struct ktest *t)
{
	unsigned held = 0;
	for (const struct syscall_entry *entry = __syscalls_start; entry < __syscalls_end; entry++)
		EXPECT_TRUE(t, syscall_find(entry->number) == entry);
	for (unsigned number = 0; number < SYSCALL_TABLE_SIZE; number++)
		held += syscall_find(number) != NULL;
	EXPECT_EQ(t, held, entry_count());
}

KTEST_SUITE(syscall, KTEST_CASE(table_is_not_empty), KTEST_CASE(numbers_are_unique),
	    KTEST_CASE(numbers_fit_the_table), KTEST_CASE(entries_name_handler_and_file),
	    KTEST_CASE(table_holds_every_entry));
