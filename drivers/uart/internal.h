/* Private to drivers/uart: what the receive path needs from the chip code. */
#ifndef DRIVERS_UART_INTERNAL_H
#define DRIVERS_UART_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#define UART_REG_DATA                  0
#define UART_REG_IER                   1
#define UART_REG_FCR                   2
#define UART_IER_RX_AVAILABLE          0x01
#define UART_FCR_ENABLE_CLEAR_TRIGGER1 0x07 /* FIFOs on and cleared, interrupt at 1 byte */
#define UART_COM1_ISA_IRQ              4

/* True when uart_init found a chip answering at port. */
bool uart_port_present(uint16_t port);

#endif
