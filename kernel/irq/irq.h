/*
 * Interrupt dispatch: which handler runs for each vector from 32 up, how many
 * times each vector fired, and the two hooks around a handler (the interrupt
 * controller's end-of-interrupt, and the scheduler's exit hook, which may
 * preempt).  Exceptions (0-31) are not handlers here: see arch/x86_64/traps.h.
 *
 *     int vector = irq_alloc_vector();                     // or -ENOSPC
 *     if (vector >= 0) irq_register(vector, uart_irq, port, "uart");
 *     ... irq_unregister(vector, uart_irq); irq_free_vector(vector);
 */
#ifndef KERNEL_IRQ_IRQ_H
#define KERNEL_IRQ_IRQ_H

#include <stdint.h>

#include "arch/x86_64/idt.h"
#include "arch/x86_64/trapframe.h"

#define IRQ_VECTORS         256
#define IRQ_FIRST_VECTOR    32 /* below: CPU exceptions, never registrable */
#define IRQ_DEVICE_FIRST    32 /* irq_alloc_vector hands out 32..239 but 0x80 */
#define IRQ_DEVICE_LAST     239
#define IRQ_SYSTEM_FIRST    240                /* 240..254: fixed vectors (timer, IPIs) */
#define IRQ_SPURIOUS_VECTOR 0xff               /* counted, never handled, never EOI'd */
#define IRQ_SYSCALL_VECTOR  IDT_SYSCALL_VECTOR /* int $0x80 system calls: never a device's */

/* Runs with interrupts off on the interrupted CPU's stack (or its kernel
 * stack, from user mode); may change the frame, which is restored on return. */
typedef void (*irq_handler_fn)(struct trap_frame *frame, void *ctx);
typedef void (*irq_eoi_fn)(unsigned vector);
typedef void (*irq_exit_hook_fn)(struct trap_frame *frame);

/* Makes handler(frame, ctx) run for every interrupt on vector.  Returns 0;
 * -EINVAL when vector >= IRQ_VECTORS or handler is NULL; -EPERM for a reserved
 * vector (an exception, 0-31, the system-call gate 0x80, or the spurious
 * vector); -EBUSY when the vector
 * already has a handler. */
int irq_register(unsigned vector, irq_handler_fn handler, void *ctx, const char *name);

/* Removes handler from vector and waits until no CPU is still running it (so
 * never call it from that handler).  Returns 0; -EINVAL for a vector out of
 * range; -ENOENT when handler is not the one registered there. */
int irq_unregister(unsigned vector, irq_handler_fn handler);

/* Reserves a free device vector (32..239, no handler, not reserved before).
 * Returns the vector, or -ENOSPC when none is left. */
int irq_alloc_vector(void);

/* Gives back a vector from irq_alloc_vector.  Returns 0; -EINVAL when vector
 * was not allocated; -EBUSY while a handler is still registered on it. */
int irq_free_vector(unsigned vector);

/* Sets the end-of-interrupt function (the interrupt controller driver's),
 * called after the handler of every vector 32..254; returns the previous. */
irq_eoi_fn irq_set_eoi(irq_eoi_fn eoi);

/* Sets the hook called after EOI when the outermost interrupt returns
 * (irq_depth back to 0), where the scheduler may switch; returns the previous. */
irq_exit_hook_fn irq_set_exit_hook(irq_exit_hook_fn hook);

/* Returns how many times vector fired on all CPUs (0 when out of range). */
uint64_t irq_get_count(unsigned vector);
/* Returns the registered handler's name, or NULL when the vector has none. */
const char *irq_get_name(unsigned vector);

/* The architecture's entry code calls this for every vector >= 32. */
void irq_dispatch(struct trap_frame *frame);

#endif
