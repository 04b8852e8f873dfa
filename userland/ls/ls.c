/*
 * ls: lists directories (the working directory when none is named), one
 * entry per line, sorted by name; -l adds the type, size and link count.
 * A file operand is listed as itself.  Exit status 1 when any operand failed.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int long_format;

static char type_letter(mode_t mode)
{
	if (S_ISDIR(mode))
		return 'd';
	if (S_ISCHR(mode))
		return 'c';
	if (S_ISFIFO(mode))
		return 'p';
	return '-';
}

static void print_entry(const char *directory, const char *name)
{
	if (!long_format) {
		puts(name);
		return;
	}
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/%s", directory, name);
	if (stat(path, &st) < 0) {
		printf("?          ? %s\n", name);
		return;
	}
	printf("%c %3u %8ld %s%s\n", type_letter(st.st_mode), (unsigned)st.st_nlink,
	       (long)st.st_size, name, S_ISDIR(st.st_mode) ? "/" : "");
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads every name of a directory; returns how many, or -1 with errno. */
static int read_names(const char *path, char ***names)
{
	DIR *dir = opendir(path);
	if (!dir)
		return -1;
	int count = 0, capacity = 0;
	*names = NULL;
	for (struct dirent *entry; (entry = readdir(dir));) {
		if (entry->d_name[0] == '.')
			continue;
		if (count == capacity) {
			capacity = capacity ? capacity * 2 : 32;
			*names = realloc(*names, (size_t)capacity * sizeof(char *));
			if (!*names) {
				closedir(dir);
				errno = ENOMEM;
				return -1;
			}
		}
		(*names)[count++] = strdup(entry->d_name);
	}
	closedir(dir);
	return count;
}

static int list(const char *path, int with_heading)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		fprintf(stderr, "ls: %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		print_entry(".", path);
		return 0;
	}
	char **names;
	int count = read_names(path, &names);
	if (count < 0) {
		fprintf(stderr, "ls: %s: %s\n", path, strerror(errno));
		return 1;
	}
	qsort(names, (size_t)count, sizeof(char *), compare_names);
	if (with_heading)
		printf("%s:\n", path);
	for (int i = 0; i < count; i++) {
		print_entry(path, names[i]);
		free(names[i]);
	}
	free(names);
	return 0;
}

int main(int argc, char **argv)
{
	int first = 1, status = 0;
	if (argc > 1 && strcmp(argv[1], "-l") == 0) {
		long_format = 1;
		first = 2;
	}
	if (first >= argc)
		return list(".", 0);
	for (int i = first; i < argc; i++)
		status |= list(argv[i], argc - first > 1);
	return status;
}
