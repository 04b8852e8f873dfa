/*
 * From the kernel's initial stack to main: find argc, argv, envp and the
 * auxiliary vector, set environ, run constructors, call main and exit with
 * its result (exit flushes stdio and runs atexit handlers and destructors).
 */
#include <stdlib.h>

extern char **environ;
extern int main(int argc, char **argv, char **envp);
extern void __libc_init_array(void);
extern void __libc_fini_array(void);

void start_program(long *stack) __attribute__((noreturn, used));
unsigned long getauxval(unsigned long type);

static unsigned long *auxiliary_vector;

/* Returns the auxiliary vector's value for type (AT_PAGESZ = 6, ...), or 0. */
unsigned long getauxval(unsigned long type)
{
	for (unsigned long *entry = auxiliary_vector; entry && entry[0]; entry += 2)
		if (entry[0] == type)
			return entry[1];
	return 0;
}

void start_program(long *stack)
{
	int argc = (int)stack[0];
	char **argv = (char **)(stack + 1);
	char **envp = argv + argc + 1;
	char **end = envp;
	while (*end)
		end++;
	auxiliary_vector = (unsigned long *)(end + 1);
	environ = envp;
	__libc_init_array();
	atexit(__libc_fini_array);
	exit(main(argc, argv, envp));
}
