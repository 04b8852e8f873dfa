/*
 * echo: prints its arguments separated by spaces, then a newline (-n: none).
 */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	int first = 1, newline = 1;
	if (argc > 1 && strcmp(argv[1], "-n") == 0) {
		newline = 0;
		first = 2;
	}
	for (int i = first; i < argc; i++)
		printf("%s%s", i > first ? " " : "", argv[i]);
	if (newline)
		putchar('\n');
	return 0;
}
