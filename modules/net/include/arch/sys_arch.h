/*
 * lwIP's operating-system port types (NO_SYS=0): semaphores, mutexes,
 * mailboxes and threads are the kernel's, behind opaque pointers that
 * modules/net/sys_arch.c allocates.  NULL means "invalid", as lwIP expects.
 *
 *     sys_sem_t sem;
 *     sys_sem_new(&sem, 0); sys_sem_signal(&sem);
 *     sys_arch_sem_wait(&sem, 100);    // ms waited, or SYS_ARCH_TIMEOUT
 */
#ifndef MODULES_NET_INCLUDE_ARCH_SYS_ARCH_H
#define MODULES_NET_INCLUDE_ARCH_SYS_ARCH_H

#include <stdint.h>

struct net_sys_sem;
struct net_sys_mbox;
struct mutex;
struct thread;

typedef struct net_sys_sem *sys_sem_t;
typedef struct mutex *sys_mutex_t;
typedef struct net_sys_mbox *sys_mbox_t;
typedef struct thread *sys_thread_t;
typedef uint64_t sys_prot_t;

#define SYS_MBOX_NULL NULL
#define SYS_SEM_NULL  NULL

#define sys_sem_valid(sem)             (*(sem) != NULL)
#define sys_sem_set_invalid(sem)       (*(sem) = NULL)
#define sys_mutex_valid(mutex)         (*(mutex) != NULL)
#define sys_mutex_set_invalid(mutex)   (*(mutex) = NULL)
#define sys_mbox_valid(mbox)           (*(mbox) != NULL)
#define sys_mbox_set_invalid(mbox)     (*(mbox) = NULL)
#define sys_sem_valid_val(sem)         ((sem) != NULL)
#define sys_sem_set_invalid_val(sem)   ((sem) = NULL)
#define sys_mbox_valid_val(mbox)       ((mbox) != NULL)
#define sys_mbox_set_invalid_val(mbox) ((mbox) = NULL)

#endif
