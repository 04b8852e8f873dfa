/*
 * The 16550 driver.  Initialisation runs the chip's loopback self-test so a
 * machine without the port (many laptops) is detected rather than written into
 * forever: writes to an absent UART are dropped.
 */
#include "uart/uart.h"

#include "arch/x86_64/cpu.h"
#include "console/console.h"
#include "uart/internal.h"

#define REG_DATA       0
#define REG_IER        1
#define REG_FCR        2
#define REG_LCR        3
#define REG_MCR        4
#define REG_LSR        5
#define LSR_DATA_READY 0x01
#define LSR_THR_EMPTY  0x20
#define SPIN_LIMIT     100000

static bool present[2];

static bool *presence(uint16_t port)
{
	return &present[port == UART_COM1 ? 0 : 1];
}

bool uart_init(uint16_t port)
{
	outb(port + REG_IER, 0x00);
	outb(port + REG_LCR, 0x80);  /* divisor latch */
	outb(port + REG_DATA, 0x01); /* 115200 baud */
	outb(port + REG_IER, 0x00);
	outb(port + REG_LCR, 0x03); /* 8N1 */
	outb(port + REG_FCR, 0xc7); /* FIFOs on, cleared */
	outb(port + REG_MCR, 0x1e); /* loopback for the self-test */
	outb(port + REG_DATA, 0xae);
	bool ok = inb(port + REG_DATA) == 0xae;
	outb(port + REG_MCR, 0x0f); /* normal operation, OUT2 for interrupts */
	*presence(port) = ok;
	return ok;
}

bool uart_port_present(uint16_t port)
{
	return *presence(port);
}

static void put_byte(uint16_t port, char c)
{
	for (int spins = 0; !(inb(port + REG_LSR) & LSR_THR_EMPTY) && spins < SPIN_LIMIT; spins++)
		cpu_relax();
	outb(port + REG_DATA, (uint8_t)c);
}

void uart_write(uint16_t port, const char *text, size_t length)
{
	if (!*presence(port))
		return;
	for (size_t i = 0; i < length; i++) {
		if (text[i] == '\n')
			put_byte(port, '\r');
		put_byte(port, text[i]);
	}
}

int uart_read_byte(uint16_t port)
{
	if (!*presence(port) || !(inb(port + REG_LSR) & LSR_DATA_READY))
		return -1;
	return inb(port + REG_DATA);
}

static void com1_write(const char *text, size_t length)
{
	uart_write(UART_COM1, text, length);
}

static struct console_sink com1_sink = {.name = "com1", .write = com1_write};

void uart_console_init(void)
{
	if (uart_init(UART_COM1))
		console_register(&com1_sink);
}
