/*
 * IOAPICs: each serves the GSIs [gsi_base, gsi_base + pins) and turns one into
 * an interrupt message to a CPU.  Registers are reached through a select
 * register and a data window, a two-step access, so every access holds
 * ioapic_lock.  The list of IOAPICs is filled once by ioapic_init on the boot
 * CPU (from the MADT) and only read afterwards.
 *
 * A route is written masked, high half (destination) first, so the pin never
 * fires with a half-written entry; ioapic_unmask_gsi then opens it.
 */
#include "arch/x86_64/apic.h"
#include "console/console.h"
#include "cpu/spinlock.h"
#include "lib/errno.h"
#include "mm/mm.h"

#define IOAPIC_SELECT          0x00
#define IOAPIC_WINDOW          0x10
#define IOAPIC_REG_VERSION     0x01
#define IOAPIC_REG_REDIRECTION 0x10

#define ROUTE_ACTIVE_LOW (1u << 13)
#define ROUTE_LEVEL      (1u << 15)
#define ROUTE_MASKED     (1u << 16)

struct ioapic {
	volatile uint32_t *registers;
	uint32_t id;
	uint32_t gsi_base;
	uint32_t pins;
};

static struct ioapic ioapics[ACPI_MAX_IOAPICS];
static unsigned ioapic_count;
static struct spinlock ioapic_lock = SPINLOCK_INIT("ioapic");

static uint32_t ioapic_read(const struct ioapic *io, uint32_t reg)
{
	io->registers[IOAPIC_SELECT / 4] = reg;
	return io->registers[IOAPIC_WINDOW / 4];
}

static void ioapic_write(const struct ioapic *io, uint32_t reg, uint32_t value)
{
	io->registers[IOAPIC_SELECT / 4] = reg;
	io->registers[IOAPIC_WINDOW / 4] = value;
}

/* The IOAPIC serving gsi, or NULL. */
static const struct ioapic *ioapic_for(uint32_t gsi)
{
	for (unsigned i = 0; i < ioapic_count; i++) {
		if (gsi >= ioapics[i].gsi_base && gsi - ioapics[i].gsi_base < ioapics[i].pins)
			return &ioapics[i];
	}
	return NULL;
}

static uint32_t redirection_low(const struct ioapic *io, uint32_t gsi)
{
	return IOAPIC_REG_REDIRECTION + 2 * (gsi - io->gsi_base);
}

int ioapic_route_gsi(uint32_t gsi, uint8_t vector, uint32_t apic_id, enum acpi_polarity polarity,
		     enum acpi_trigger trigger)
{
	const struct ioapic *io = ioapic_for(gsi);
	if (!io)
		return -ENODEV;
	if (vector < 32 || vector == APIC_VECTOR_SPURIOUS)
		return -EINVAL;
	uint32_t low = vector | ROUTE_MASKED |
		       (polarity == ACPI_POLARITY_LOW ? ROUTE_ACTIVE_LOW : 0) |
		       (trigger == ACPI_TRIGGER_LEVEL ? ROUTE_LEVEL : 0);
	uint64_t flags = spin_lock_irqsave(&ioapic_lock);
	ioapic_write(io, redirection_low(io, gsi), ROUTE_MASKED);
	ioapic_write(io, redirection_low(io, gsi) + 1, apic_id << 24);
	ioapic_write(io, redirection_low(io, gsi), low);
	spin_unlock_irqrestore(&ioapic_lock, flags);
	return 0;
}

int ioapic_route_isa_irq(uint8_t irq, uint8_t vector, uint32_t apic_id, uint32_t *gsi_out)
{
	struct acpi_irq_route route = acpi_route_isa_irq(acpi_get_madt(), irq);
	if (gsi_out)
		*gsi_out = route.gsi;
	return ioapic_route_gsi(route.gsi, vector, apic_id, route.polarity, route.trigger);
}

static int set_mask(uint32_t gsi, bool masked)
{
	const struct ioapic *io = ioapic_for(gsi);
	if (!io)
		return -ENODEV;
	uint64_t flags = spin_lock_irqsave(&ioapic_lock);
	uint32_t low = ioapic_read(io, redirection_low(io, gsi));
	low = masked ? low | ROUTE_MASKED : low & ~ROUTE_MASKED;
	ioapic_write(io, redirection_low(io, gsi), low);
	spin_unlock_irqrestore(&ioapic_lock, flags);
	return 0;
}

int ioapic_mask_gsi(uint32_t gsi)
{
	return set_mask(gsi, true);
}

int ioapic_unmask_gsi(uint32_t gsi)
{
	return set_mask(gsi, false);
}

static void add_ioapic(const struct acpi_ioapic *entry)
{
	struct ioapic *io = &ioapics[ioapic_count];
	io->registers = entry->address ? vm_map_mmio(entry->address, PAGE_SIZE) : NULL;
	if (!io->registers) {
		pr_warn("apic: IOAPIC %u at %#x cannot be mapped, ignored\n", entry->id,
			entry->address);
		return;
	}
	io->id = entry->id;
	io->gsi_base = entry->gsi_base;
	io->pins = ((ioapic_read(io, IOAPIC_REG_VERSION) >> 16) & 0xff) + 1;
	for (uint32_t pin = 0; pin < io->pins; pin++)
		ioapic_write(io, IOAPIC_REG_REDIRECTION + 2 * pin, ROUTE_MASKED);
	ioapic_count++;
	pr_info("apic: IOAPIC id %u at %#x: GSIs %u-%u, all masked\n", io->id, entry->address,
		io->gsi_base, io->gsi_base + io->pins - 1);
}

void ioapic_init(void)
{
	const struct acpi_madt *madt = acpi_get_madt();
	for (unsigned i = 0; madt && i < madt->ioapic_count; i++)
		add_ioapic(&madt->ioapics[i]);
	if (!ioapic_count)
		pr_warn("apic: no IOAPIC; device interrupts cannot be routed\n");
}
