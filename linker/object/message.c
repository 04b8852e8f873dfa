/*
 * Messages and small string helpers for the object linker's portable phases.
 * Errors are formatted into the caller's buffer with vsnprintf, which both the
 * kernel (lib/format.c) and the C library of the monitor and the host provide
 * under the standard name and signature.
 */
#include <stdarg.h>

#include "linker/object/internal.h"

int vsnprintf(char *buffer, size_t size, const char *format, va_list args);

int linker_fail(struct linker_object *object, int err, const char *format, ...)
{
	if (object->error && object->error_size) {
		va_list args;
		va_start(args, format);
		vsnprintf(object->error, object->error_size, format, args);
		va_end(args);
	}
	return err;
}

size_t linker_string_length(const char *s, size_t max)
{
	size_t n = 0;
	while (n < max && s[n])
		n++;
	return n;
}

void linker_copy_string(char *dst, const char *src, size_t size)
{
	if (!size)
		return;
	size_t n = linker_string_length(src, size - 1);
	__builtin_memcpy(dst, src, n);
	dst[n] = '\0';
}

static const char *const relocation_names[] = {
    "R_X86_64_NONE",
    "R_X86_64_64",
    "R_X86_64_PC32",
    "R_X86_64_GOT32",
    "R_X86_64_PLT32",
    "R_X86_64_COPY",
    "R_X86_64_GLOB_DAT",
    "R_X86_64_JUMP_SLOT",
    "R_X86_64_RELATIVE",
    "R_X86_64_GOTPCREL",
    "R_X86_64_32",
    "R_X86_64_32S",
    "R_X86_64_16",
    "R_X86_64_PC16",
    "R_X86_64_8",
    "R_X86_64_PC8",
    "R_X86_64_DTPMOD64",
    "R_X86_64_DTPOFF64",
    "R_X86_64_TPOFF64",
    "R_X86_64_TLSGD",
    "R_X86_64_TLSLD",
    "R_X86_64_DTPOFF32",
    "R_X86_64_GOTTPOFF",
    "R_X86_64_TPOFF32",
    "R_X86_64_PC64",
    "R_X86_64_GOTOFF64",
    "R_X86_64_GOTPC32",
    "R_X86_64_GOT64",
    "R_X86_64_GOTPCREL64",
    "R_X86_64_GOTPC64",
    "R_X86_64_GOTPLT64",
    "R_X86_64_PLTOFF64",
    "R_X86_64_SIZE32",
    "R_X86_64_SIZE64",
    "R_X86_64_GOTPC32_TLSDESC",
    "R_X86_64_TLSDESC_CALL",
    "R_X86_64_TLSDESC",
    "R_X86_64_IRELATIVE",
    "R_X86_64_RELATIVE64",
    "unknown",
    "unknown",
    "R_X86_64_GOTPCRELX",
    "R_X86_64_REX_GOTPCRELX",
};

const char *linker_relocation_name(unsigned type)
{
	if (type < sizeof relocation_names / sizeof relocation_names[0])
		return relocation_names[type];
	return "unknown";
}

const char *linker_section_name(const struct linker_object *object, unsigned index)
{
	if (!object->section_names || index >= object->section_count)
		return "?";
	uint32_t offset = object->sections[index].sh_name;
	if (offset >= object->section_names_size)
		return "?";
	return object->section_names + offset;
}

bool linker_object_contains(const struct linker_object *object, enum linker_region region,
			    uint64_t address, uint64_t size)
{
	uint64_t base = (uint64_t)(uintptr_t)object->region[region];
	uint64_t length = object->region_size[region];
	if (!base || address < base)
		return false;
	uint64_t offset = address - base;
	return offset <= length && size <= length - offset;
}
