/*
 * System call numbers: Linux x86_64's, so that programs built for the usual
 * ABI (rax = number; rdi, rsi, rdx, r10, r8, r9 = arguments; rax = result or
 * -errno) call the same services by the same numbers.  Numbers from 512 on are
 * microScope's own.  Shared by the kernel and userland's syscall glue: plain
 * constants only.  A number marked -ENOSYS has no handler, on purpose: it is
 * Linux's, listed so that the numbering stays whole, and the kernel answers
 * -ENOSYS; every other number has one (tools/mksyscalls.py checks both, and
 * writes the table, docs/SYSCALLS.md).
 *
 *     #include "uapi/syscall_numbers.h"
 *     mov $__NR_getpid, %eax
 *     syscall
 */
#ifndef UAPI_SYSCALL_NUMBERS_H
#define UAPI_SYSCALL_NUMBERS_H

#define __NR_read              0
#define __NR_write             1
#define __NR_open              2
#define __NR_close             3
#define __NR_stat              4
#define __NR_fstat             5
#define __NR_lstat             6
#define __NR_poll              7
#define __NR_lseek             8
#define __NR_mmap              9
#define __NR_mprotect          10
#define __NR_munmap            11
#define __NR_brk               12
#define __NR_rt_sigaction      13
#define __NR_rt_sigprocmask    14
#define __NR_rt_sigreturn      15
#define __NR_ioctl             16
#define __NR_pread64           17
#define __NR_pwrite64          18
#define __NR_readv             19 /* -ENOSYS */
#define __NR_writev            20 /* -ENOSYS */
#define __NR_access            21
#define __NR_pipe              22
#define __NR_select            23
#define __NR_sched_yield       24
#define __NR_msync             26
#define __NR_dup               32
#define __NR_dup2              33
#define __NR_pause             34 /* -ENOSYS */
#define __NR_nanosleep         35
#define __NR_getpid            39
#define __NR_sendfile          40
#define __NR_socket            41
#define __NR_connect           42
#define __NR_accept            43
#define __NR_sendto            44
#define __NR_recvfrom          45
#define __NR_shutdown          48
#define __NR_bind              49
#define __NR_listen            50
#define __NR_getsockname       51
#define __NR_getpeername       52
#define __NR_setsockopt        54
#define __NR_getsockopt        55
#define __NR_fork              57
#define __NR_vfork             58
#define __NR_execve            59
#define __NR_exit              60
#define __NR_wait4             61
#define __NR_kill              62
#define __NR_uname             63 /* -ENOSYS */
#define __NR_fcntl             72
#define __NR_fsync             74
#define __NR_fdatasync         75
#define __NR_ftruncate         77
#define __NR_getdents          78
#define __NR_getcwd            79
#define __NR_chdir             80
#define __NR_fchdir            81 /* -ENOSYS */
#define __NR_rename            82
#define __NR_mkdir             83
#define __NR_rmdir             84
#define __NR_creat             85
#define __NR_link              86
#define __NR_unlink            87
#define __NR_symlink           88
#define __NR_readlink          89
#define __NR_chmod             90
#define __NR_fchmod            91
#define __NR_chown             92
#define __NR_fchown            93
#define __NR_lchown            94
#define __NR_umask             95
#define __NR_gettimeofday      96
#define __NR_getrlimit         97
#define __NR_times             100
#define __NR_getuid            102
#define __NR_getgid            104
#define __NR_setuid            105
#define __NR_setgid            106
#define __NR_geteuid           107
#define __NR_getegid           108
#define __NR_setpgid           109
#define __NR_getppid           110
#define __NR_getpgrp           111
#define __NR_setsid            112
#define __NR_setreuid          113
#define __NR_setregid          114
#define __NR_setresuid         117
#define __NR_getresuid         118
#define __NR_setresgid         119
#define __NR_getresgid         120
#define __NR_getpgid           121
#define __NR_getsid            124
#define __NR_rt_sigpending     127
#define __NR_rt_sigsuspend     130
#define __NR_sigaltstack       131
#define __NR_arch_prctl        158 /* -ENOSYS */
#define __NR_setrlimit         160
#define __NR_sync              162
#define __NR_mount             165
#define __NR_umount2           166
#define __NR_gettid            186
#define __NR_time              201 /* -ENOSYS */
#define __NR_sched_setaffinity 203
#define __NR_sched_getaffinity 204
#define __NR_getdents64        217
#define __NR_set_tid_address   218 /* -ENOSYS */
#define __NR_clock_gettime     228
#define __NR_clock_getres      229
#define __NR_clock_nanosleep   230 /* -ENOSYS */
#define __NR_exit_group        231
#define __NR_tgkill            234 /* -ENOSYS */
#define __NR_openat            257
#define __NR_accept4           288
#define __NR_pipe2             293
#define __NR_getcpu            309

/* microScope's own. */
#define __NR_ms_getprocs             512 /* process list for ps: see proc/proc.h */
#define __NR_ms_kshell               540 /* run one kernel-shell line (kcmd): see kshell/kshell.h */
#define __NR_ms_ipc_create           513 /* message passing: see ipc/ipc.h */
#define __NR_ms_ipc_send             514
#define __NR_ms_ipc_call             515
#define __NR_ms_ipc_receive          516
#define __NR_ms_ipc_reply            517
#define __NR_ms_ipc_stats            518
#define __NR_ms_ipc_reply_receive    526 /* reply, then receive: one call per event */
#define __NR_ms_tel_read             519 /* telemetry rings: see telemetry/telemetry.h */
#define __NR_ms_tel_stats            520
#define __NR_ms_tel_map              525 /* map a shared channel into its consumer */
#define __NR_ms_scope_ctl            521 /* aspects, monitors: see uapi/scope.h */
#define __NR_ms_scope_attach         522
#define __NR_ms_scope_image          523
#define __NR_ms_scope_report         524
#define __NR_ms_scope_device_counter 527 /* the monitor's ms_device_counter */
#define __NR_ms_scope_emit           528 /* the monitor's ms_emit */
#define __NR_ms_scope_reply          590 /* the monitor's ms_reply when no call waits */
#define __NR_ms_scope_reply_receive  591 /* the monitor's loop: answer a call, take the next */
#define __NR_ms_getcpus              530 /* per-CPU statistics for top: see proc/proc.h */
#define __NR_ms_setmonitor           531 /* make a process a monitor (may use monitor CPUs) */
#define __NR_ms_acct_init            550 /* per-activity accounting: see acct/acct.h */
#define __NR_ms_acct_get_token       551
#define __NR_ms_acct_free_token      552
#define __NR_ms_acct                 553
#define __NR_ms_acct_switch_token    554
#define __NR_ms_lattrack_create      570 /* latency trackers: see uapi/lattrack.h */
#define __NR_ms_lattrack_open        571
#define __NR_ms_lattrack_event       572
#define __NR_ms_trace_mark           620 /* a user mark into the trace stream: see uapi/trace.h */
#define __NR_ms_uscope               621 /* the trace map (uscope): see uapi/trace.h */
#define __NR_ms_priv                 560 /* drop privileges, read them: see uapi/cred.h */

/* One past the highest number the kernel's table holds. */
#define SYSCALL_TABLE_SIZE 640

#endif
