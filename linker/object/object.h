/*
 * The object linker: the half of the runtime linker that turns the bytes of an
 * aspect object (ELF64 ET_REL, x86_64) into code that can run, without knowing
 * where it runs.  The kernel links aspects for the `direct` binding with it,
 * and the monitor process links the same object in user space with the same
 * sources; so these files use nothing but this header, lib/errno.h (plain
 * Linux error numbers) and compiler builtins, and reach memory and symbols only
 * through the callbacks in struct linker_env.  It is also what the host tests
 * and the fuzzer exercise.
 *
 *     struct linker_object object;
 *     int err = linker_validate_object(&object, image, size, errbuf, sizeof errbuf);
 *     if (!err) err = linker_link_object(&object, &env);  // layout, symbols, relocations, metadata
 *
 * Phases, each its own function, each checking before it acts:
 *   validate  every header, offset and size against the file length (no memory)
 *   layout    place allocated sections in a text (RX) and a data (RW) region
 *   symbols   resolve undefined symbols against the aspect ABI only
 *   relocate  apply R_X86_64_64, PC32, PLT32, 32 and 32S with overflow checks
 *   metadata  read .ms_aspect / .ms_advice / .ms_init / .ms_exit, checking
 *             that every pointer lands inside the object
 * Errors are negative Linux error numbers with a message in the caller's
 * buffer naming the problem ("section 5 extends past end of file").
 */
#ifndef LINKER_OBJECT_H
#define LINKER_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "microscope/aspect.h"

/* ---- ELF64 as the linker reads it ---------------------------------------- */

struct linker_ehdr {
	uint8_t e_ident[16];
	uint16_t e_type;
	uint16_t e_machine;
	uint32_t e_version;
	uint64_t e_entry;
	uint64_t e_phoff;
	uint64_t e_shoff;
	uint32_t e_flags;
	uint16_t e_ehsize;
	uint16_t e_phentsize;
	uint16_t e_phnum;
	uint16_t e_shentsize;
	uint16_t e_shnum;
	uint16_t e_shstrndx;
};

struct linker_shdr {
	uint32_t sh_name;
	uint32_t sh_type;
	uint64_t sh_flags;
	uint64_t sh_addr;
	uint64_t sh_offset;
	uint64_t sh_size;
	uint32_t sh_link;
	uint32_t sh_info;
	uint64_t sh_addralign;
	uint64_t sh_entsize;
};

struct linker_sym {
	uint32_t st_name;
	uint8_t st_info;
	uint8_t st_other;
	uint16_t st_shndx;
	uint64_t st_value;
	uint64_t st_size;
};

struct linker_rela {
	uint64_t r_offset;
	uint64_t r_info; /* symbol << 32 | type */
	int64_t r_addend;
};

#define LINKER_SHT_NULL     0
#define LINKER_SHT_PROGBITS 1
#define LINKER_SHT_SYMTAB   2
#define LINKER_SHT_STRTAB   3
#define LINKER_SHT_RELA     4
#define LINKER_SHT_NOTE     7
#define LINKER_SHT_NOBITS   8
#define LINKER_SHT_REL      9
#define LINKER_SHT_GROUP    17

#define LINKER_SHF_WRITE     0x1u
#define LINKER_SHF_ALLOC     0x2u
#define LINKER_SHF_EXECINSTR 0x4u
#define LINKER_SHF_TLS       0x400u

#define LINKER_SHN_UNDEF     0
#define LINKER_SHN_LORESERVE 0xff00
#define LINKER_SHN_ABS       0xfff1
#define LINKER_SHN_COMMON    0xfff2

#define LINKER_STB_LOCAL  0
#define LINKER_STB_GLOBAL 1
#define LINKER_STB_WEAK   2

#define LINKER_R_X86_64_NONE  0
#define LINKER_R_X86_64_64    1
#define LINKER_R_X86_64_PC32  2
#define LINKER_R_X86_64_PLT32 4
#define LINKER_R_X86_64_32    10
#define LINKER_R_X86_64_32S   11

/* ---- Limits: anything larger is refused as hostile or broken ------------- */

#define LINKER_MAX_SECTIONS     256
#define LINKER_MAX_SYMBOLS      8192
#define LINKER_MAX_SECTION_SIZE (4UL << 20) /* one section */
#define LINKER_MAX_REGION_SIZE  (4UL << 20) /* text or data, all sections together */
#define LINKER_MAX_ALIGN        4096
#define LINKER_MAX_ADVICE       32
#define LINKER_NAME_MAX         32  /* aspect name with its NUL */
#define LINKER_TEXT_MAX         128 /* pattern or description with its NUL */

/* ---- Counters and histograms: the per-aspect store behind ms_counter_add and
 * ms_hist_record.  The kernel keeps one per aspect across relinks; a monitor
 * keeps its own and the kernel merges it back (linker_counters_merge). ----- */

/* linker_counter.state and linker_histogram.state */
#define LINKER_SLOT_FREE     0
#define LINKER_SLOT_CLAIMING 1 /* its name is being written */
#define LINKER_SLOT_USED     2

struct linker_counter {
	char name[MS_NAME_MAX];
	int64_t value;
	uint32_t state; /* LINKER_SLOT_* */
	uint32_t reserved;
};

struct linker_histogram {
	char name[MS_NAME_MAX];
	uint64_t buckets[MS_HIST_BUCKETS];
	uint64_t count;
	uint64_t sum;
	uint32_t state;
	uint32_t reserved;
};

struct linker_counters {
	struct linker_counter counters[MS_MAX_COUNTERS];
	struct linker_histogram histograms[MS_MAX_HISTOGRAMS];
};

/* Adds delta to counter name, creating it.  Lock-free and SMP-safe.  Returns
 * 0, -EINVAL (empty name), -ENOSPC (table full). */
int linker_counter_add(struct linker_counters *store, const char *name, int64_t delta);
/* Records value in histogram name (log2 buckets), creating it.  Returns 0,
 * -EINVAL, -ENOSPC. */
int linker_hist_record(struct linker_counters *store, const char *name, uint64_t value);
/* Returns counter name's value, or 0 when it does not exist. */
int64_t linker_counter_get(const struct linker_counters *store, const char *name);
/* Returns histogram name, or NULL. */
const struct linker_histogram *linker_hist_find(const struct linker_counters *store,
						const char *name);
/* Adds every counter and histogram of from into into.  Returns 0, or -ENOSPC
 * when into ran out of room (what fit was merged). */
int linker_counters_merge(struct linker_counters *into, const struct linker_counters *from);
/* The log2 bucket of value: 0 for 0, else 1 + the index of its highest bit. */
unsigned linker_hist_bucket(uint64_t value);

/* ---- The object ------------------------------------------------------------ */

enum linker_region {
	LINKER_REGION_TEXT, /* executable sections: RW while linking, then RX */
	LINKER_REGION_DATA, /* everything else allocated: RW, never executable */
	LINKER_REGION_COUNT,
};

/* What the environment provides.  alloc_region returns a zeroed, page-aligned
 * region of size bytes (size > 0) that can be written now, or NULL; the
 * object's code will run at the returned address.  resolve looks up an
 * undefined symbol in the ABI: 0 and *address, or -ENOENT. */
struct linker_env {
	void *(*alloc_region)(void *env, enum linker_region region, size_t size);
	void (*free_region)(void *env, enum linker_region region, void *base, size_t size);
	void *(*alloc)(void *env, size_t size); /* scratch memory, zeroed */
	void (*free)(void *env, void *pointer);
	int (*resolve)(void *env, const char *name, uint64_t *address);
	void *env;
};

/* The aspect ABI: every function an aspect may call in every binding.  The
 * kernel (direct) and the monitor process (shm, msg) each implement all of
 * them and build their symbol tables from this one list, so the two cannot
 * offer different ABIs. */
/* The ABI: the C string functions a compiler may emit calls to (the kernel
 * gives `direct` advice guarded copies of them), then the aspect calls. */
#define LINKER_ABI_STRINGS(X) X(memcpy) X(memmove) X(memset) X(memcmp)

/* (One entry a line; clang-format does not settle on a layout of its own.) */
// clang-format off
#define LINKER_ABI_FUNCTIONS(X) LINKER_ABI_STRINGS(X) LINKER_ABI_CALLS(X)
#define LINKER_ABI_CALLS(X) \
	X(ms_argc) \
	X(ms_arg) \
	X(ms_retval) \
	X(ms_entry_ns) \
	X(ms_exit_ns) \
	X(ms_cpu) \
	X(ms_pid) \
	X(ms_tid) \
	X(ms_program_name) \
	X(ms_joinpoint_name) \
	X(ms_activity) \
	X(ms_now_ns) \
	X(ms_counter_add) \
	X(ms_hist_record) \
	X(ms_emit) \
	X(ms_device_counter) \
	X(ms_reply) \
	X(ms_log) \
	X(ms_lattrack_create) \
	X(ms_lattrack_event_in) \
	X(ms_lattrack_event_out) \
	X(ms_lattrack_destroy)
// clang-format on

/* The part of the ABI only the kernel offers: the accounting calls write
 * results synchronously into their owners' pages, so an aspect that imports
 * one of them links `direct` only (linker_bind refuses shm and msg). */
#define LINKER_ABI_DIRECT_ONLY(X) \
	X(ms_acct_enter) X(ms_acct_exit) X(ms_acct_innermost) X(ms_acct_charge) X(ms_acct_switch)

/* The name of one entry: LINKER_ABI_DIRECT_ONLY(LINKER_ABI_NAME). */
#define LINKER_ABI_NAME(fn) #fn,

struct linker_abi_symbol {
	const char *name;
	uint64_t address;
};

/* An initializer for one entry: LINKER_ABI_FUNCTIONS(LINKER_ABI_SYMBOL). */
#define LINKER_ABI_SYMBOL(fn) {#fn, (uint64_t)(fn)},

/* Finds name in table[0..count): 0 and *address, or -ENOENT. */
int linker_abi_lookup(const struct linker_abi_symbol *table, size_t count, const char *name,
		      uint64_t *address);

/* One piece of advice as read from .ms_advice, pointers checked. */
struct linker_advice {
	char pattern[LINKER_TEXT_MAX];
	ms_advice_fn function; /* inside the text region */
	int kind;              /* enum ms_advice_kind */
	int priority;
	unsigned flags;
};

struct linker_object {
	/* Set by validate. */
	const uint8_t *image;
	size_t size;
	const struct linker_ehdr *header;
	const struct linker_shdr *sections;
	unsigned section_count;
	const char *section_names;
	size_t section_names_size;
	unsigned symtab_index;
	const struct linker_sym *symbols;
	unsigned symbol_count;
	const char *strings;
	size_t strings_size;
	int aspect_section, advice_section, init_section, exit_section; /* -1: none */
	/* Set by layout. */
	uint8_t *region[LINKER_REGION_COUNT];
	size_t region_size[LINKER_REGION_COUNT];
	uint64_t section_address[LINKER_MAX_SECTIONS]; /* 0: not loaded */
	/* Set by symbols: the address of every symbol (0 for the null symbol). */
	uint64_t *symbol_address;
	/* Set by metadata. */
	char name[LINKER_NAME_MAX];
	char description[LINKER_TEXT_MAX];
	struct linker_advice advice[LINKER_MAX_ADVICE];
	unsigned advice_count;
	ms_init_fn init; /* NULL: none */
	ms_exit_fn exit;
	/* Where messages go. */
	char *error;
	size_t error_size;
};

/* Phase 1: checks image (size bytes) and fills object's view of it; nothing is
 * allocated.  error receives a message on failure.  Returns 0 or -ENOEXEC
 * (not an x86_64 ET_REL object, or a header, offset or size is wrong). */
int linker_validate_object(struct linker_object *object, const void *image, size_t size,
			   char *error, size_t error_size);
/* Phase 2: allocates the regions and copies (or zeroes) every allocated
 * section into place.  Returns 0 or -ENOMEM. */
int linker_layout_object(struct linker_object *object, const struct linker_env *env);
/* Phase 3: gives every symbol an address; undefined ones through env->resolve.
 * Returns 0, -ENOENT ("undefined symbol 'kmalloc' (not in the aspect ABI)"),
 * -ENOEXEC (a symbol in a section that was not loaded) or -ENOMEM. */
int linker_resolve_symbols(struct linker_object *object, const struct linker_env *env);
/* Phase 4: applies every relocation of every loaded section.  Returns 0 or
 * -ERANGE (a value does not fit its field: built without -mcmodel=large?). */
int linker_apply_relocations(struct linker_object *object);
/* Phase 5: reads the aspect's metadata from the relocated image.  Returns 0,
 * -ENOEXEC (missing or malformed; a pointer outside the object). */
int linker_read_metadata(struct linker_object *object);
/* Phases 2-5 in order, undoing on failure.  Returns the first error. */
int linker_link_object(struct linker_object *object, const struct linker_env *env);
/* Frees what layout and symbols allocated (the regions too unless keep_regions). */
void linker_release_object(struct linker_object *object, const struct linker_env *env,
			   bool keep_regions);

/* "R_X86_64_PC64" for 24; "unknown" past the table. */
const char *linker_relocation_name(unsigned type);
/* The section's name, "?" when out of range. */
const char *linker_section_name(const struct linker_object *object, unsigned index);
/* True when address lies in [base, base + size) of region. */
bool linker_object_contains(const struct linker_object *object, enum linker_region region,
			    uint64_t address, uint64_t size);

#endif
