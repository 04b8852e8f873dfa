/*
 * User memory access: the only way kernel code reads or writes memory a
 * system call's caller named.  Every pointer from user space is checked (lower
 * half, canonical, no wrap-around) and then copied by instructions listed in
 * the exception table, so an unmapped page, a kernel address or a write to a
 * read-only page gives -EFAULT instead of a kernel fault.  A write that hits a
 * copy-on-write page breaks the sharing first and then succeeds, as the same
 * write from user mode would.
 *
 *     char path[PATH_MAX];
 *     long length = strncpy_from_user(path, user_path, sizeof path);   // < 0: error
 *     if (copy_to_user(user_stat, &st, sizeof st)) return -EFAULT;
 */
#ifndef KERNEL_UACCESS_UACCESS_H
#define KERNEL_UACCESS_UACCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* User space is the lower half, up to (not including) USER_SPACE_END.  The
 * last page below the canonical hole is never mapped, so that a user access
 * running off the end faults instead of reaching non-canonical addresses. */
#define USER_SPACE_END 0x00007ffffffff000UL

/* Marks a pointer that holds a user-space address (documentation only). */
#define __user

/* True when [address, address + length) lies entirely in user space (no
 * wrap-around).  A zero length is in range for any address up to the end.
 * In line: system calls check their buffers with it before anything else. */
static inline bool uaccess_range_ok(uint64_t address, size_t length)
{
	return address <= USER_SPACE_END && length <= USER_SPACE_END - address;
}

/* Copies length bytes from user memory at src to dst.  Returns 0, or -EFAULT
 * when src is out of range or any byte of it is not readable (dst may then
 * hold a partial copy). */
int copy_from_user(void *dst, const void __user *src, size_t length);
/* Copies length bytes from user memory at src to dst like copy_from_user,
 * but without taking a fault, a lock or a sleep: the page tables are read
 * and the bytes copied through the physmap, so a page that is not present
 * now gives -EFAULT (it is not faulted in).  For code that may not sleep
 * (a _NOSLEEP join point, interrupts off, locks held); see mm's vm_user_peek
 * for when the answer holds. */
int copy_from_user_nofault(void *dst, const void __user *src, size_t length);

/* copy_from_user_nofault that remembers the last pages it found: a walk of a
 * user stack reads a few pages again and again.  Zero one per walk and
 * drop it before the thread returns to user mode.
 *
 *     struct user_peek peek = {0};
 *     if (user_peek_read(&peek, &word, address, 8)) ...unreadable... */
#define USER_PEEK_PAGES 4
struct user_peek {
	uint64_t page[USER_PEEK_PAGES]; /* user page address + 1 (0: empty) */
	const uint8_t *at[USER_PEEK_PAGES];
	unsigned next;
};
int user_peek_fill(struct user_peek *peek, void *dst, uint64_t src, size_t length);
/* Where length bytes at user address src (within one page) can be read now,
 * through the physmap; NULL when they cross a page or are not readable. */
const uint8_t *user_peek_find(struct user_peek *peek, uint64_t src, size_t length);
static inline const uint8_t *user_peek_where(struct user_peek *peek, uint64_t src, size_t length)
{
	uint64_t page = (src & ~0xfffUL) + 1;
	if ((src & 0xfff) + length <= 0x1000)
		for (unsigned i = 0; i < USER_PEEK_PAGES; i++)
			if (peek->page[i] == page)
				return peek->at[i] + (src & 0xfff);
	return user_peek_find(peek, src, length);
}

/* Reads length bytes at user address src: 0 or -EFAULT. */
static inline int user_peek_read(struct user_peek *peek, void *dst, uint64_t src, size_t length)
{
	uint64_t page = (src & ~0xfffUL) + 1;
	if (length <= 16 && (src & 0xfff) + length <= 0x1000)
		for (unsigned i = 0; i < USER_PEEK_PAGES; i++)
			if (peek->page[i] == page) {
				__builtin_memcpy(dst, peek->at[i] + (src & 0xfff), length);
				return 0;
			}
	return user_peek_fill(peek, dst, src, length);
}

/* Copies length bytes from src to user memory at dst.  Returns 0, or -EFAULT
 * when dst is out of range or any byte of it is not writable. */
int copy_to_user(void __user *dst, const void *src, size_t length);
/* Sets length bytes of user memory at dst to 0.  Returns 0 or -EFAULT. */
int clear_user(void __user *dst, size_t length);

/* How many of the length bytes from user address dst, counted from dst, can
 * be written now (whole pages, at most length; 0 for a bad range): each page
 * is made present and writable as a write would make it (copy-on-write
 * broken, a first-touched page given a frame), without changing a byte.
 * For a read that takes bytes it cannot put back (a pipe, the console):
 * it takes no more than this, then copies. */
size_t uaccess_writable_prefix(void __user *dst, size_t length);

/* Copies a NUL-terminated string of at most size - 1 characters from user
 * memory into dst (size > 0) and terminates it.  Returns its length (without
 * the NUL), -EFAULT (a byte up to the NUL is unreadable or out of range) or
 * -ENAMETOOLONG (no NUL in the first size bytes; dst is then truncated). */
long strncpy_from_user(char *dst, const char __user *src, size_t size);

/* Reads or writes one aligned-or-not 64-bit value.  Return 0 or -EFAULT. */
int get_user_u64(uint64_t *value, const uint64_t __user *src);
int put_user_u64(uint64_t __user *dst, uint64_t value);

#endif
