/*
 * Copies between kernel and user memory that cannot take the kernel down.
 *
 * Every copy first checks the user range (lower half, below USER_SPACE_END, no
 * wrap-around), so a kernel or non-canonical address is refused before any
 * access.  The copy itself is "rep movsq" then "rep movsb" (or stosq/stosb, or
 * a byte load), each listed in the exception table: a #PF on a user page
 * resumes at the fix-up with RCX = what was not copied.  The faulting byte is then offered to the
 * process code (proc_resolve_fault): a copy-on-write page gets its own frame,
 * a page of a region not yet touched gets one, and the copy goes on from
 * there; anything else is -EFAULT.  Each resolution makes progress (the page
 * is now mapped as needed), so the retry loop ends.
 *
 * The kernel does not run with SMAP, so no STAC/CLAC is needed; the range
 * check is what keeps a user pointer from naming kernel memory.  A kernel
 * thread's copies are refused: it may run on the last process's tables.
 *
 * uaccess_writable_prefix makes pages writable the same way without changing
 * them: a locked add of zero to one byte of each page is the write access.
 *
 * copy_from_user_nofault and user_peek_read read without any of that: mm's
 * vm_user_peek reads the page tables (no lock) and the bytes are copied
 * through the physmap, so no fault is ever taken and nothing sleeps: a page
 * that is not present is -EFAULT.  For code that may not fault or sleep
 * (the trace map's stack walk at a _NOSLEEP join point).
 */
#include "uaccess/uaccess.h"

#include "arch/x86_64/traps.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "proc/proc.h"

enum access { ACCESS_READ, ACCESS_WRITE };

/* A kernel thread has no user memory: the tables it runs on may be the last
 * process's (the scheduler leaves them loaded), so its accesses to user
 * addresses are refused instead of reaching that process. */
static bool user_memory_is_ours(void)
{
	return proc_current() != NULL;
}

/* Copies length bytes, eight at a time and then the rest one at a time;
 * returns the number NOT copied (0 on success).  A fault in the eight-byte
 * part leaves RCX/RSI/RDI at the first uncopied quad (a faulting movsq stores
 * nothing); the byte part then copies up to the exact faulting byte, so the
 * address the caller resolves is the one that faulted even when a quad
 * straddles a mapped and an unmapped page. */
static size_t copy_bytes(void *dst, const void *src, size_t length)
{
	size_t quads = length / 8, left;
	__asm__ volatile("1: rep movsq\n"
			 "2:\n" EX_TABLE_USER_ENTRY(1b, 2b)
			 : "+D"(dst), "+S"(src), "+c"(quads)
			 :
			 : "memory");
	left = quads * 8 + length % 8;
	__asm__ volatile("1: rep movsb\n"
			 "2:\n" EX_TABLE_USER_ENTRY(1b, 2b)
			 : "+D"(dst), "+S"(src), "+c"(left)
			 :
			 : "memory");
	return left;
}

/* Zeroes length bytes the same way; returns the number NOT zeroed. */
static size_t clear_bytes(void *dst, size_t length)
{
	size_t quads = length / 8, left;
	__asm__ volatile("1: rep stosq\n"
			 "2:\n" EX_TABLE_USER_ENTRY(1b, 2b)
			 : "+D"(dst), "+c"(quads)
			 : "a"(0UL)
			 : "memory");
	left = quads * 8 + length % 8;
	__asm__ volatile("1: rep stosb\n"
			 "2:\n" EX_TABLE_USER_ENTRY(1b, 2b)
			 : "+D"(dst), "+c"(left)
			 : "a"(0)
			 : "memory");
	return left;
}

/* Reads one byte; returns 0 or -EFAULT. */
static int load_byte(const char *src, char *value)
{
	int error = -EFAULT;
	char byte = 0;
	__asm__ volatile("1: movb (%[src]), %[byte]\n\t"
			 "xorl %[error], %[error]\n"
			 "2:\n" EX_TABLE_USER_ENTRY(1b, 2b)
			 : [byte] "+q"(byte), [error] "+r"(error)
			 : [src] "r"(src)
			 : "memory");
	*value = byte;
	return error;
}

static unsigned fault_error_of(enum access access)
{
	return PF_ERROR_USER | (access == ACCESS_WRITE ? PF_ERROR_WRITE : 0);
}

/* The copy stopped at a fault at user_base + done (done < length): resolves
 * it and copies on, as often as it takes.  Out of line: copy_user tries once
 * in line first, and most copies never fault. */
static __attribute__((noinline)) int copy_with_faults(void *dst, const void *src, size_t length,
						      uint64_t user_base, enum access access,
						      size_t done)
{
	while (done < length) {
		if (proc_resolve_fault(user_base + done, fault_error_of(access)) < 0)
			return -EFAULT;
		size_t left =
		    copy_bytes((char *)dst + done, (const char *)src + done, length - done);
		done = length - left;
	}
	return 0;
}

/* The copy of copy_from_user and copy_to_user: once in line, then the
 * fault-resolving loop from where it stopped. */
static inline __attribute__((always_inline)) int
copy_user(void *dst, const void *src, size_t length, uint64_t user_base, enum access access)
{
	if (!length)
		return 0;
	if (!user_memory_is_ours())
		return -EFAULT;
	size_t left = copy_bytes(dst, src, length);
	if (!left)
		return 0;
	return copy_with_faults(dst, src, length, user_base, access, length - left);
}

int copy_from_user(void *dst, const void __user *src, size_t length)
{
	if (!uaccess_range_ok((uint64_t)src, length))
		return -EFAULT;
	return copy_user(dst, src, length, (uint64_t)src, ACCESS_READ);
}

int copy_from_user_nofault(void *dst, const void __user *src, size_t length)
{
	struct user_peek peek = {0};
	return user_peek_fill(&peek, dst, (uint64_t)src, length);
}

/* The physmap address of src's page, from peek or found and kept there. */
static const uint8_t *peek_page(struct user_peek *peek, uint64_t src)
{
	uint64_t page = (src & ~(uint64_t)0xfff) + 1;
	for (unsigned i = 0; i < USER_PEEK_PAGES; i++)
		if (peek->page[i] == page)
			return peek->at[i];
	const uint8_t *at = vm_user_peek(src & ~(uint64_t)0xfff);
	if (at) {
		unsigned slot = peek->next++ % USER_PEEK_PAGES;
		peek->page[slot] = page;
		peek->at[slot] = at;
	}
	return at;
}

const uint8_t *user_peek_find(struct user_peek *peek, uint64_t src, size_t length)
{
	if (!uaccess_range_ok(src, length) || (src & 0xfff) + length > 0x1000)
		return NULL;
	const uint8_t *at = peek_page(peek, src);
	return at ? at + (src & 0xfff) : NULL;
}

int user_peek_fill(struct user_peek *peek, void *dst, uint64_t src, size_t length)
{
	if (!uaccess_range_ok(src, length))
		return -EFAULT;
	while (length) {
		size_t in_page = 0x1000 - (src & 0xfff), now = length < in_page ? length : in_page;
		const uint8_t *at = peek_page(peek, src);
		if (!at)
			return -EFAULT;
		memcpy(dst, at + (src & 0xfff), now);
		dst = (uint8_t *)dst + now;
		src += now;
		length -= now;
	}
	return 0;
}

int copy_to_user(void __user *dst, const void *src, size_t length)
{
	if (!uaccess_range_ok((uint64_t)dst, length))
		return -EFAULT;
	return copy_user(dst, src, length, (uint64_t)dst, ACCESS_WRITE);
}

int clear_user(void __user *dst, size_t length)
{
	if (!uaccess_range_ok((uint64_t)dst, length) || (length && !user_memory_is_ours()))
		return -EFAULT;
	size_t done = 0;
	while (done < length) {
		done = length - clear_bytes((char *)dst + done, length - done);
		if (done < length &&
		    proc_resolve_fault((uint64_t)dst + done, fault_error_of(ACCESS_WRITE)) < 0)
			return -EFAULT;
	}
	return 0;
}

/* Adds zero to the user byte at dst with a locked instruction: a write
 * access that changes nothing, even with another writer of the byte at the
 * same time.  Returns 0 or -EFAULT. */
static int add_zero_byte(char *dst)
{
	int error = -EFAULT;
	__asm__ volatile("1: lock addb $0, (%[dst])\n\t"
			 "xorl %[error], %[error]\n"
			 "2:\n" EX_TABLE_USER_ENTRY(1b, 2b)
			 : [error] "+r"(error)
			 : [dst] "r"(dst)
			 : "memory", "cc");
	return error;
}

/* Makes the page holding user address dst writable as a write there would
 * (resolving a fault once).  Returns 0 or -EFAULT. */
static int make_page_writable(char *dst)
{
	if (!add_zero_byte(dst))
		return 0;
	if (proc_resolve_fault((uint64_t)dst, fault_error_of(ACCESS_WRITE)) < 0)
		return -EFAULT;
	return add_zero_byte(dst);
}

size_t uaccess_writable_prefix(void __user *dst, size_t length)
{
	uint64_t start = (uint64_t)dst, at = start;
	if (!length || !uaccess_range_ok(start, length) || !user_memory_is_ours())
		return 0;
	while (at - start < length && !make_page_writable((char *)at))
		at = (at & ~(uint64_t)(PAGE_SIZE - 1)) + PAGE_SIZE;
	return at - start < length ? at - start : length;
}

/* Reads the byte at user address src, resolving a fault once. */
static int read_user_byte(const char *src, char *value)
{
	if (!uaccess_range_ok((uint64_t)src, 1) || !user_memory_is_ours())
		return -EFAULT;
	if (load_byte(src, value) == 0)
		return 0;
	if (proc_resolve_fault((uint64_t)src, fault_error_of(ACCESS_READ)) < 0)
		return -EFAULT;
	return load_byte(src, value);
}

long strncpy_from_user(char *dst, const char __user *src, size_t size)
{
	if (size == 0)
		return -ENAMETOOLONG;
	for (size_t i = 0; i < size; i++) {
		if (read_user_byte(src + i, &dst[i]) < 0) {
			dst[i] = '\0';
			return -EFAULT;
		}
		if (dst[i] == '\0')
			return (long)i;
	}
	dst[size - 1] = '\0';
	return -ENAMETOOLONG;
}

int get_user_u64(uint64_t *value, const uint64_t __user *src)
{
	return copy_from_user(value, src, sizeof *value);
}

int put_user_u64(uint64_t __user *dst, uint64_t value)
{
	return copy_to_user(dst, &value, sizeof value);
}
