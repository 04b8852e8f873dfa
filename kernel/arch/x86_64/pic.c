/*
 * The legacy 8259 pair.  The kernel uses the APICs only, but the 8259s power
 * up mapped onto the CPU exception vectors; they are reinitialised to
 * APIC_VECTOR_PIC_BASE (so a spurious IRQ 7/15 is not taken for an
 * exception) and every line masked.  Done once, on the boot CPU.
 */
#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"

#define PIC1_COMMAND     0x20
#define PIC1_DATA        0x21
#define PIC2_COMMAND     0xa0
#define PIC2_DATA        0xa1
#define ICW1_INIT_ICW4   0x11
#define ICW4_8086        0x01
#define PIC_CASCADE_LINE 2

/* A write to an unused port: gives an old 8259 time between commands. */
static void io_wait(void)
{
	outb(0x80, 0);
}

static void pic_write(uint16_t port, uint8_t value)
{
	outb(port, value);
	io_wait();
}

void pic_disable(void)
{
	pic_write(PIC1_COMMAND, ICW1_INIT_ICW4);
	pic_write(PIC2_COMMAND, ICW1_INIT_ICW4);
	pic_write(PIC1_DATA, APIC_VECTOR_PIC_BASE);
	pic_write(PIC2_DATA, APIC_VECTOR_PIC_BASE + 8);
	pic_write(PIC1_DATA, 1u << PIC_CASCADE_LINE);
	pic_write(PIC2_DATA, PIC_CASCADE_LINE);
	pic_write(PIC1_DATA, ICW4_8086);
	pic_write(PIC2_DATA, ICW4_8086);
	pic_write(PIC1_DATA, 0xff);
	pic_write(PIC2_DATA, 0xff);
}
