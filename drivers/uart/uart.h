/*
 * 16550 UART on the legacy COM ports: COM1 is the console, COM2 carries the
 * framed telemetry stream to the host.  Output is polled: it must work
 * before interrupts, during panics and from any context.  Input on COM1 is
 * interrupt-driven once uart_rx_start ran: bytes go into a ring that readers
 * drain (blocking or not), or to one handler that takes them all (a line
 * discipline, e.g. the console device's).
 *
 *     uart_init(UART_COM1);
 *     uart_write(UART_COM1, "hello\n", 6);
 *     uart_rx_start(); n = uart_rx_read(buffer, sizeof buffer, UART_RX_BLOCK);
 */
#ifndef DRIVERS_UART_UART_H
#define DRIVERS_UART_UART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UART_COM1 0x3f8
#define UART_COM2 0x2f8

/* Programs 115200 8N1 and returns whether a UART answered (loopback check). */
bool uart_init(uint16_t port);
/* Writes length bytes, turning "\n" into "\r\n". */
void uart_write(uint16_t port, const char *text, size_t length);
/* Returns the next received byte, or -1 when none is waiting. */
int uart_read_byte(uint16_t port);
/* Registers COM1 as a console sink. */
void uart_console_init(void);

/* ---- COM1 input ---------------------------------------------------------- */

#define UART_RX_RING_SIZE 1024 /* bytes buffered for readers; more are dropped and counted */

/* Whether uart_rx_read waits for a byte.  Compatible with true/false. */
enum uart_rx_wait { UART_RX_NONBLOCK = 0, UART_RX_BLOCK = 1 };

/* Called in interrupt context for every received byte while installed. */
typedef void (*uart_rx_handler_fn)(char byte, void *ctx);

/* Turns on COM1 receive interrupts (IOAPIC, ISA IRQ 4) into the ring.  Thread
 * context, after apic_init and sched_init; idempotent.  Returns 0; -ENODEV
 * (no COM1, or no IOAPIC serves IRQ 4: reads then poll the chip); -ENOSPC (no
 * free vector). */
int uart_rx_start(void);
/* Copies up to length received bytes into buffer.  With UART_RX_BLOCK waits
 * (sleeping) until at least one byte is there.  Returns the number of bytes
 * (0 only for length 0 or nothing waiting without UART_RX_BLOCK); -EINVAL
 * (NULL buffer); -ENODEV (no COM1); -EINTR (uart_rx_interrupt_readers woke a
 * blocked reader before any byte came). */
int uart_rx_read(char *buffer, size_t length, enum uart_rx_wait wait);
/* Wakes every reader blocked in uart_rx_read, which returns -EINTR if it has
 * no byte yet (how a reader is told to stop reading). */
void uart_rx_interrupt_readers(void);
/* Installs handler (NULL: back to the ring) for every byte from now on; bytes
 * already in the ring stay there for uart_rx_read.  Returns 0. */
int uart_set_rx_handler(uart_rx_handler_fn handler, void *ctx);
/* Feeds bytes to the receive path as if they had arrived on the wire (tests,
 * and a console that forwards input).  Safe in any context. */
void uart_rx_inject(const char *bytes, size_t length);
/* Bytes received so far, and bytes dropped because the ring was full. */
struct uart_rx_stats {
	unsigned long received;
	unsigned long dropped;
	unsigned long interrupts;
};
void uart_rx_get_stats(struct uart_rx_stats *stats);

#endif
