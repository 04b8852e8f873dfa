/*
 * Users and privileges as user space sees them: the privileges a process
 * may hold (ms_priv), in the spirit of Linux capabilities.  Root (uid 0)
 * starts with all of them; a process can drop any, never regain one, and
 * loses them all when none of its user ids is 0 any more.  They count only
 * while its effective user id is 0.  kernel/proc/proc.h is the kernel side.
 */
#ifndef UAPI_CRED_H
#define UAPI_CRED_H

/* weave and unweave aspects, change bindings (ms_scope_ctl's load, link,
 * relink, unlink, unload, message mode) */
#define PRIV_WEAVE 0x01u
/* receive every process's events (ms_scope_attach), read any telemetry
 * channel, reserve the monitor CPUs (ms_setmonitor) */
#define PRIV_MONITOR 0x02u
#define PRIV_SIGNAL  0x04u /* signal processes of other users */
#define PRIV_KSHELL  0x08u /* run kernel console lines (ms_kshell) */
#define PRIV_POWER   0x10u /* power off or reboot (the console's poweroff, exit, reboot) */
#define PRIV_DEVICE  0x20u /* device control: raw sockets, mount and umount */
/* files: read, write and search whatever the permission bits say, change
 * any file's mode and owner (Linux's CAP_DAC_OVERRIDE and CAP_FOWNER, CAP_CHOWN) */
#define PRIV_FILES 0x40u
/* bind a TCP or UDP port below 1024 (Linux's CAP_NET_BIND_SERVICE) */
#define PRIV_NET_BIND 0x80u
#define PRIV_ALL      0xffu

#define ROOT_UID 0
#define ROOT_GID 0

#endif
