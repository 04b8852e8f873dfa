/*
 * kill: sends a signal (SIGTERM unless told otherwise) to processes, or to a
 * process group with a negative id; `kill -l` lists the signals by name.
 *
 *     kill 12            kill -INT 12 13      kill -9 -12 (group 12)
 *     kill -s STOP 12    kill -l
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>

/* Names and Linux's numbers: what the kernel speaks; kill() converts
 * newlib's numbers, so each name carries newlib's constant too. */
static const struct {
	const char *name;
	int linux_number;
	int value;
} signals[] = {
    {"HUP", 1, SIGHUP},    {"INT", 2, SIGINT},    {"QUIT", 3, SIGQUIT},  {"ILL", 4, SIGILL},
    {"TRAP", 5, SIGTRAP},  {"ABRT", 6, SIGABRT},  {"BUS", 7, SIGBUS},    {"FPE", 8, SIGFPE},
    {"KILL", 9, SIGKILL},  {"USR1", 10, SIGUSR1}, {"SEGV", 11, SIGSEGV}, {"USR2", 12, SIGUSR2},
    {"PIPE", 13, SIGPIPE}, {"ALRM", 14, SIGALRM}, {"TERM", 15, SIGTERM}, {"CHLD", 17, SIGCHLD},
    {"CONT", 18, SIGCONT}, {"STOP", 19, SIGSTOP}, {"TSTP", 20, SIGTSTP}, {"TTIN", 21, SIGTTIN},
    {"TTOU", 22, SIGTTOU},
};
#define SIGNAL_COUNT (sizeof signals / sizeof signals[0])

/* A name (TERM, SIGTERM) or a Linux number; -1 when unknown. */
static int parse_signal(const char *text)
{
	if (strncasecmp(text, "SIG", 3) == 0)
		text += 3;
	char *end;
	long number = strtol(text, &end, 10);
	for (unsigned i = 0; i < SIGNAL_COUNT; i++)
		if (*end ? strcasecmp(text, signals[i].name) == 0
			 : number == signals[i].linux_number)
			return signals[i].value;
	return *end == '\0' && number == 0 ? 0 : -1;
}

static int list_signals(void)
{
	for (unsigned i = 0; i < SIGNAL_COUNT; i++)
		printf("%2d %s%s", signals[i].linux_number, signals[i].name,
		       i % 6 == 5 || i + 1 == SIGNAL_COUNT ? "\n" : "\t");
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: kill [-SIGNAL | -s SIGNAL] pid|-pgid ...   kill -l\n");
	return 2;
}

int main(int argc, char **argv)
{
	int sig = SIGTERM, first = 1;
	if (argc == 2 && strcmp(argv[1], "-l") == 0)
		return list_signals();
	if (argc > 2 && strcmp(argv[1], "-s") == 0) {
		sig = parse_signal(argv[2]);
		first = 3;
	} else if (argc > 2 && argv[1][0] == '-' && strcmp(argv[1], "--") != 0) {
		sig = parse_signal(argv[1] + 1);
		first = 2;
	} else if (argc > 1 && strcmp(argv[1], "--") == 0) {
		first = 2;
	}
	if (sig < 0) {
		fprintf(stderr, "kill: %s: unknown signal (kill -l lists them)\n", argv[first - 1]);
		return 2;
	}
	if (first >= argc)
		return usage();
	int failed = 0;
	for (int i = first; i < argc; i++) {
		char *end;
		long pid = strtol(argv[i], &end, 10);
		if (*end || end == argv[i]) {
			fprintf(stderr, "kill: %s: not a process id\n", argv[i]);
			failed = 1;
		} else if (kill((pid_t)pid, sig) < 0) {
			fprintf(stderr, "kill: %ld: %s\n", pid, strerror(errno));
			failed = 1;
		}
	}
	return failed;
}
