/*
 * Pathname expansion: a word holding an unquoted *, ? or [...] becomes
 * the sorted paths it matches.  The pattern is matched one path component
 * at a time, reading each directory a wildcard component needs (every
 * program in /bin, or a wildcard before a slash: across directories); a
 * component without wildcards is taken as it is.  A name starting with `.` matches only a pattern whose component
 * starts with one; `.` and `..` never match.  A directory that cannot be
 * read adds nothing, and a word that matches nothing stays as typed
 * (expand.c), as POSIX asks.  newlib as built here has no fnmatch, so the
 * matcher is this file's: `*`, `?`, `[abc]`, `[a-z]`, `[!a]` and `[^a]`,
 * with a literal mask saying which bytes were quoted and match only
 * themselves.  Names compare byte by byte (the C locale).
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sh.h"

#define PATH_BYTES 1024
#define NAME_BYTES 256

static int is_wildcard(char ch)
{
	return ch == '*' || ch == '?' || ch == '[';
}

int glob_has_wildcard(const char *pattern, const char *literal)
{
	for (size_t i = 0; pattern[i]; i++)
		if (!literal[i] && is_wildcard(pattern[i]))
			return 1;
	return 0;
}

/* Whether ch matches the bracket expression opening at p; *next is set
 * past its ].  -1 when p opens none (no closing ]): the [ is a plain byte. */
static int bracket_match(const char *p, char ch, const char **next)
{
	const char *q = p + 1;
	int negate = *q == '!' || *q == '^';
	int matched = 0;
	q += negate;
	const char *first = q;
	while (*q && (*q != ']' || q == first)) {
		unsigned char low = (unsigned char)*q, high = low;
		if (q[1] == '-' && q[2] && q[2] != ']') {
			high = (unsigned char)q[2];
			q += 3;
		} else {
			q++;
		}
		if (low <= (unsigned char)ch && (unsigned char)ch <= high)
			matched = 1;
	}
	if (*q != ']')
		return -1;
	*next = q + 1;
	return matched != negate;
}

int glob_match(const char *pattern, const char *literal, const char *name)
{
	while (*pattern) {
		if (!*literal && *pattern == '*') {
			while (*pattern == '*' && !*literal) {
				pattern++;
				literal++;
			}
			for (;; name++) {
				if (glob_match(pattern, literal, name))
					return 1;
				if (!*name)
					return 0;
			}
		}
		if (!*name)
			return 0;
		const char *next = pattern + 1;
		int matched = *pattern == *name;
		if (!*literal && *pattern == '?')
			matched = 1;
		else if (!*literal && *pattern == '[') {
			int in_bracket = bracket_match(pattern, *name, &next);
			matched = in_bracket < 0 ? *pattern == *name : in_bracket;
			if (in_bracket < 0)
				next = pattern + 1;
		}
		if (!matched)
			return 0;
		literal += next - pattern;
		pattern = next;
		name++;
	}
	return !*name;
}

/* The paths found so far. */
struct found {
	char **paths;
	int count, size, max;
	int overflow;
};

static void add_found(struct found *f, const char *path)
{
	if (f->count == f->max) {
		f->overflow = 1;
		return;
	}
	if (f->count == f->size) {
		int size = f->size ? 2 * f->size : 16;
		char **paths = realloc(f->paths, (size_t)size * sizeof *paths);
		if (!paths) {
			f->overflow = 1;
			return;
		}
		f->paths = paths;
		f->size = size;
	}
	char *copy = strdup(path);
	if (!copy) {
		f->overflow = 1;
		return;
	}
	f->paths[f->count++] = copy;
}

static void walk(char *path, size_t length, const char *pattern, const char *literal,
		 struct found *f);

/* The path so far (length bytes) is complete: it counts when it exists
 * (and is a directory when the pattern ended with a /). */
static void found_path(char *path, size_t length, int directory, struct found *f)
{
	struct stat st;
	path[length] = '\0';
	if (length > 0 && stat(path, &st) == 0 && (!directory || S_ISDIR(st.st_mode)))
		add_found(f, path);
}

/* Appends name to the path and goes on with the rest of the pattern. */
static void walk_into(char *path, size_t length, const char *name, size_t name_length,
		      const char *rest, const char *literal, struct found *f)
{
	if (length + name_length + 2 > PATH_BYTES)
		return;
	memcpy(path + length, name, name_length);
	walk(path, length + name_length, rest, literal, f);
}

/* Matches the wildcard component (pattern, literal: NUL-terminated) against
 * each name of the directory the path names. */
static void walk_directory(char *path, size_t length, const char *component,
			   const char *component_literal, const char *rest,
			   const char *rest_literal, struct found *f)
{
	path[length] = '\0';
	DIR *dir = opendir(length ? path : ".");
	if (!dir)
		return; /* unreadable or no directory: nothing matches here */
	for (struct dirent *entry; !f->overflow && (entry = readdir(dir));) {
		const char *name = entry->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (name[0] == '.' && component[0] != '.')
			continue; /* a leading . is matched only explicitly */
		if (glob_match(component, component_literal, name))
			walk_into(path, length, name, strlen(name), rest, rest_literal, f);
	}
	closedir(dir);
}

/* Expands the rest of the pattern after the path so far (length bytes). */
static void walk(char *path, size_t length, const char *pattern, const char *literal,
		 struct found *f)
{
	int slashed = 0;
	while (*pattern == '/' && length + 1 < PATH_BYTES) {
		path[length++] = '/';
		pattern++;
		literal++;
		slashed = 1;
	}
	if (!*pattern) {
		found_path(path, length, slashed, f);
		return;
	}
	size_t size = strcspn(pattern, "/");
	char component[NAME_BYTES], component_literal[NAME_BYTES];
	if (size >= NAME_BYTES)
		return;
	memcpy(component, pattern, size);
	memcpy(component_literal, literal, size);
	component[size] = '\0';
	component_literal[size] = 1;
	if (glob_has_wildcard(component, component_literal))
		walk_directory(path, length, component, component_literal, pattern + size,
			       literal + size, f);
	else
		walk_into(path, length, component, size, pattern + size, literal + size, f);
}

static int compare_paths(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int glob_paths(const char *pattern, const char *literal, char **words, int *count, int max)
{
	char path[PATH_BYTES];
	struct found f = {NULL, 0, 0, max - *count, 0};
	walk(path, 0, pattern, literal, &f);
	if (f.overflow) {
		for (int i = 0; i < f.count; i++)
			free(f.paths[i]);
		free(f.paths);
		return -1;
	}
	if (f.count > 1)
		qsort(f.paths, (size_t)f.count, sizeof *f.paths, compare_paths);
	for (int i = 0; i < f.count; i++)
		words[(*count)++] = f.paths[i];
	free(f.paths);
	return f.count;
}
