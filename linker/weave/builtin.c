/*
 * The aspect objects the build embeds in the kernel (aspects/aspects.mk
 * generates the table from every aspects/NAME.c): the same bytes as /aspects/<name>.o
 * in the initrd, available before any file system and without one, which is
 * what the in-kernel tests link.
 */
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/internal.h"

struct builtin_aspect {
	const char *name;
	const uint8_t *start;
	const uint8_t *end;
};

extern const struct builtin_aspect linker_builtin_aspects[];

const void *linker_builtin_image(const char *name, size_t *size)
{
	for (const struct builtin_aspect *b = linker_builtin_aspects; b->name; b++) {
		if (strcmp(b->name, name) == 0) {
			*size = (size_t)(b->end - b->start);
			return b->start;
		}
	}
	return NULL;
}

const char *linker_builtin_name(unsigned index)
{
	for (unsigned i = 0; linker_builtin_aspects[i].name; i++)
		if (i == index)
			return linker_builtin_aspects[i].name;
	return NULL;
}

int linker_load_builtin(const char *name, struct aspect **aspect, char *error, size_t error_size)
{
	size_t size;
	const void *image = name ? linker_builtin_image(name, &size) : NULL;
	if (!image) {
		if (error && error_size)
			strlcpy(error, "no such built-in aspect", error_size);
		return -ENOENT;
	}
	return linker_load(image, size, aspect, error, error_size);
}
