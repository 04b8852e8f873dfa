/*
 * What the C library knows of the process that a library keeping state per
 * process needs: after fork the child has a copy of its parent's memory,
 * pointers into kernel-given mappings it does not have included, and can
 * tell so only by asking.  ms_fork_depth is that answer without a system
 * call: the forks between this process and its program's start (exec begins
 * at 0).  librscfl compares it with the one its handle was made at.
 *
 *     struct state { unsigned made_at; ... };
 *     if (s->made_at != ms_fork_depth) ... // a parent's: not this process's
 */
#ifndef MICROSCOPE_PROCESS_H
#define MICROSCOPE_PROCESS_H

extern unsigned ms_fork_depth;

#endif
