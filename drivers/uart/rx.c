/*
 * COM1 input.  The receive interrupt (ISA IRQ 4 through the IOAPIC) drains
 * the chip's FIFO and hands each byte either to the installed rx handler or
 * to a ring that uart_rx_read empties.  Without an interrupt (no IOAPIC, or
 * before uart_rx_start) readers poll the chip themselves.
 *
 * Invariants: the ring is changed only under rx.lock (interrupts off), so the
 * interrupt handler and readers on any CPU agree on head and tail; a full ring
 * drops the new byte and counts it.  Readers sleep on rx.readers with the
 * condition "the ring has a byte, or the interrupt generation moved", so a
 * byte that arrives between the check and the sleep is never missed, and
 * uart_rx_interrupt_readers can always get a reader out.
 */
#include "uart/uart.h"

#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "cpu/spinlock.h"
#include "irq/irq.h"
#include "lib/errno.h"
#include "sched/sched.h"
#include "time/time.h"
#include "uart/internal.h"

#define POLL_INTERVAL_NS (10 * NSEC_PER_MSEC)

static struct {
	struct spinlock lock;
	char ring[UART_RX_RING_SIZE];
	volatile size_t head, tail; /* head - tail bytes waiting; indices grow forever */
	volatile uint64_t generation;
	uart_rx_handler_fn handler;
	void *handler_ctx;
	bool irq_on;
	struct uart_rx_stats stats;
} rx = {.lock = SPINLOCK_INIT("uart-rx")};

static struct waitq readers = WAITQ_INIT(readers, "uart-rx");

/* Puts one byte where it goes (handler or ring).  Returns true when it went
 * into the ring (a reader may want waking). */
static bool deliver(char byte)
{
	uint64_t flags = spin_lock_irqsave(&rx.lock);
	uart_rx_handler_fn handler = rx.handler;
	void *ctx = rx.handler_ctx;
	bool queued = false;
	rx.stats.received++;
	if (!handler) {
		if (rx.head - rx.tail < UART_RX_RING_SIZE) {
			rx.ring[rx.head % UART_RX_RING_SIZE] = byte;
			rx.head++;
			queued = true;
		} else {
			rx.stats.dropped++;
		}
	}
	spin_unlock_irqrestore(&rx.lock, flags);
	if (handler)
		handler(byte, ctx);
	return queued;
}

/* Moves every byte the chip holds to its destination; returns how many went
 * into the ring. */
static int drain_chip(void)
{
	int queued = 0;
	for (int byte; (byte = uart_read_byte(UART_COM1)) >= 0;)
		queued += deliver((char)byte);
	return queued;
}

static void rx_interrupt(struct trap_frame *frame, void *ctx)
{
	(void)frame;
	(void)ctx;
	rx.stats.interrupts++;
	if (drain_chip())
		waitq_wake_all(&readers);
}

void uart_rx_inject(const char *bytes, size_t length)
{
	int queued = 0;
	for (size_t i = 0; i < length; i++)
		queued += deliver(bytes[i]);
	if (queued)
		waitq_wake_all(&readers);
}

/* Routes IRQ 4 to a fresh vector on this CPU and unmasks it.  Returns 0 or
 * the error of the step that failed, with what came before undone. */
static int route_interrupt(void)
{
	uint32_t gsi;
	int vector = irq_alloc_vector();
	if (vector < 0)
		return vector;
	int error = irq_register((unsigned)vector, rx_interrupt, NULL, "com1");
	if (error < 0)
		goto out_free_vector;
	error = ioapic_route_isa_irq(UART_COM1_ISA_IRQ, (uint8_t)vector, lapic_id(), &gsi);
	if (error < 0)
		goto out_unregister;
	outb(UART_COM1 + UART_REG_FCR, UART_FCR_ENABLE_CLEAR_TRIGGER1);
	outb(UART_COM1 + UART_REG_IER, UART_IER_RX_AVAILABLE);
	rx.irq_on = true;
	ioapic_unmask_gsi(gsi);
	pr_info("uart: COM1 input on IRQ %u (GSI %u, vector %d)\n", UART_COM1_ISA_IRQ, gsi, vector);
	return 0;
out_unregister:
	irq_unregister((unsigned)vector, rx_interrupt);
out_free_vector:
	irq_free_vector((unsigned)vector);
	return error;
}

int uart_rx_start(void)
{
	static struct mutex start_lock = MUTEX_INIT(start_lock, "uart-rx-start");
	if (!uart_port_present(UART_COM1))
		return -ENODEV;
	mutex_lock(&start_lock);
	int error = rx.irq_on ? 0 : route_interrupt();
	mutex_unlock(&start_lock);
	if (error < 0)
		pr_warn("uart: no COM1 receive interrupt (error %d), input is polled\n", error);
	return error;
}

/* Copies what the ring holds, up to length bytes; returns how many. */
static size_t take_from_ring(char *buffer, size_t length)
{
	uint64_t flags = spin_lock_irqsave(&rx.lock);
	size_t n = 0;
	for (; n < length && rx.tail != rx.head; n++, rx.tail++)
		buffer[n] = rx.ring[rx.tail % UART_RX_RING_SIZE];
	spin_unlock_irqrestore(&rx.lock, flags);
	return n;
}

struct wait_arg {
	uint64_t generation; /* as the reader last saw it */
};

static bool byte_or_interrupted(void *arg)
{
	const struct wait_arg *wait = arg;
	return rx.head != rx.tail || rx.generation != wait->generation;
}

/* Sleeps until a byte may be there or readers were interrupted. */
static void wait_for_input(struct wait_arg *wait)
{
	if (rx.irq_on) {
		waitq_wait(&readers, byte_or_interrupted, wait);
		return;
	}
	if (!byte_or_interrupted(wait))
		sched_sleep_ns(POLL_INTERVAL_NS);
}

int uart_rx_read(char *buffer, size_t length, enum uart_rx_wait wait)
{
	if (!buffer)
		return -EINVAL;
	if (!uart_port_present(UART_COM1))
		return -ENODEV;
	struct wait_arg arg = {.generation = rx.generation};
	for (;;) {
		if (!rx.irq_on)
			drain_chip();
		size_t n = take_from_ring(buffer, length);
		if (n || length == 0 || wait == UART_RX_NONBLOCK)
			return (int)n;
		if (rx.generation != arg.generation)
			return -EINTR;
		wait_for_input(&arg);
	}
}

void uart_rx_interrupt_readers(void)
{
	uint64_t flags = spin_lock_irqsave(&rx.lock);
	rx.generation++;
	spin_unlock_irqrestore(&rx.lock, flags);
	waitq_wake_all(&readers);
}

int uart_set_rx_handler(uart_rx_handler_fn handler, void *ctx)
{
	uint64_t flags = spin_lock_irqsave(&rx.lock);
	rx.handler = handler;
	rx.handler_ctx = ctx;
	spin_unlock_irqrestore(&rx.lock, flags);
	return 0;
}

void uart_rx_get_stats(struct uart_rx_stats *stats)
{
	uint64_t flags = spin_lock_irqsave(&rx.lock);
	*stats = rx.stats;
	spin_unlock_irqrestore(&rx.lock, flags);
}
