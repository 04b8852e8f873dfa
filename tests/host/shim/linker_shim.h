/* The object linker's environment on the host (tests/host/shim/linker_shim.c):
 * regions from a static arena inside the test binary, so 32-bit PC-relative
 * relocations to the fake ABI (also in the binary) fit; and real aspect
 * objects compiled on the fly from aspects/NAME.c with the documented flags. */
#ifndef TESTS_HOST_SHIM_LINKER_SHIM_H
#define TESTS_HOST_SHIM_LINKER_SHIM_H

#include <stddef.h>
#include <stdint.h>

#include "linker/object/object.h"

/* The environment; every region handed out is freed by linker_shim_reset. */
extern const struct linker_env linker_shim_env;
/* Forgets every region (the arena is reused). */
void linker_shim_reset(void);
/* Bytes of arena still handed out (0 when everything was freed). */
size_t linker_shim_regions_in_use(void);
/* The address the fake ABI gives name, or 0. */
uint64_t linker_shim_abi_address(const char *name);

/* Compiles aspects/<name>.c with the aspect flags plus extra_flags into a
 * malloc'd, 8-byte-aligned image.  Returns it (size in *size) or NULL. */
uint8_t *linker_shim_build_aspect(const char *name, const char *extra_flags, size_t *size);

#endif
