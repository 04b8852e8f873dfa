/*
 * The `irqs` command of the kernel shell: the count of every vector that has
 * fired or has a handler, then what the serial console's input interrupt
 * received.  Like every console command it sits above the modules it reads
 * (the console layer), so it may ask the UART driver for its counters.
 *
 *     irqs
 */
#include "irq/irq.h"

#include <stdint.h>

#include "kshell/kshell.h"
#include "uart/uart.h"

static int cmd_irqs(int argc, char **argv)
{
	struct uart_rx_stats rx;
	if (argc != 1)
		return KSHELL_USAGE;
	kshell_print("vector        count  handler\n");
	for (unsigned vector = IRQ_FIRST_VECTOR; vector < IRQ_VECTORS; vector++) {
		uint64_t count = irq_get_count(vector);
		const char *name = irq_get_name(vector);
		if (count || name)
			kshell_print("  %#4x %12lu  %s\n", vector, count, name ? name : "-");
	}
	uart_rx_get_stats(&rx);
	kshell_print("com1 input: %lu byte(s), %lu dropped, %lu interrupt(s)\n", rx.received,
		     rx.dropped, rx.interrupts);
	return 0;
}
KSHELL_COMMAND(irqs, cmd_irqs, "irqs", "interrupt counts per vector");
