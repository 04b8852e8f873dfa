/*
 * 16550 UART on the legacy COM ports: COM1 is the console, COM2 carries the
 * framed telemetry stream to the host.  Polled output only: it must work
 * before interrupts, during panics and from any context.
 *
 *     uart_init(UART_COM1);
 *     uart_write(UART_COM1, "hello\n", 6);
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

#endif
