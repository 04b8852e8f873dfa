/*
 * Signal numbers as the kernel (Linux's x86_64 ABI) numbers them.  newlib
 * numbers signals its own way, and the C library converts at every call; a
 * program that shows a number to people who know Linux's (a shell's $? of
 * 128 + n, "killed by signal n") asks for the kernel's here instead of
 * keeping a table of its own.
 */
#ifndef MICROSCOPE_SIGNAL_H
#define MICROSCOPE_SIGNAL_H

/* The kernel's number of newlib's signal sig (as waitpid and the signal
 * macros give it), or -1 for one the kernel does not have. */
int ms_signal_to_linux(int sig);

#endif
