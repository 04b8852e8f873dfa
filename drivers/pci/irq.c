/*
 * PCI interrupts: MSI-X, MSI and legacy INTx.
 *
 * MSI and MSI-X messages go to the local APIC of the CPU that attached the
 * interrupt (address 0xfee00000 | apic id << 12, data = the vector, fixed
 * delivery, edge): one vector per device, every MSI-X entry pointing at it.
 *
 * INTx has no answer in the hardware alone: which IOAPIC pin a slot's INTA#
 * reaches is written in the DSDT's _PRT, AML this kernel does not interpret.
 * What is done instead, per host bridge:
 *   - i440FX ("pc"): the PIIX3 routes PIRQ A-D to ISA IRQs (its PIRQRC
 *     registers, 0x60-0x63 of 00:01.0), and the firmware writes that IRQ into
 *     each function's interrupt line register.  The line register is used;
 *     when the firmware left none, the PIRQ is computed as QEMU wires it
 *     ((slot - 1 + pin - 1) mod 4) and looked up in PIRQRC (else 10,10,11,11,
 *     SeaBIOS's choice).  The ISA IRQ becomes a GSI through the MADT's
 *     overrides (QEMU declares 5, 9, 10, 11 level-triggered).
 *   - Q35: the ICH9 drives PIRQ A-H onto IOAPIC pins 16-23 in APIC mode,
 *     whatever the line register (which holds the 8259 IRQ) says.  Slots
 *     0-24 use PIRQ E-H ((slot + pin - 1) mod 4 + 4), slots 25-31 PIRQ A-D by
 *     pin, the chipset's reset routing that QEMU's _PRT also describes.
 *   - Anything else: the line register, if it holds an IRQ.
 * Behind bridges the pin is swizzled ((pin - 1 + device) mod 4) up to bus 0.
 * INTx lines are level-triggered and shareable: one vector per GSI, whose
 * handler calls every device handler on that line.  Registration happens at
 * boot; an entry is filled before the count that publishes it.
 */
#include "pci/internal.h"

#include "acpi/acpi.h"
#include "arch/x86_64/apic.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "cpu/spinlock.h"
#include "joinpoint/joinpoint.h"
#include "lib/errno.h"

#define PCI_INTX_LINES     16
#define PCI_INTX_SHARE_MAX 8
#define MSI_ADDRESS_BASE   0xfee00000u

#define MSI_CONTROL_ENABLE   0x0001
#define MSI_CONTROL_MME      0x0070
#define MSI_CONTROL_64BIT    0x0080
#define MSI_CONTROL_MASKABLE 0x0100
#define MSIX_CONTROL_SIZE    0x07ff
#define MSIX_CONTROL_MASK    0x4000
#define MSIX_CONTROL_ENABLE  0x8000
#define MSIX_ENTRY_SIZE      16

struct pci_intx_handler {
	irq_handler_fn handler;
	void *ctx;
};

struct pci_intx_line {
	uint32_t gsi;
	int vector;
	volatile unsigned count;
	struct pci_intx_handler handlers[PCI_INTX_SHARE_MAX];
};

static struct spinlock pci_intx_lock = SPINLOCK_INIT("pci.intx");
static struct pci_intx_line pci_intx_lines[PCI_INTX_LINES];
static unsigned pci_intx_line_count;

/* ---- INTx routing -------------------------------------------------------- */

enum pci_chipset pci_detect_chipset(void)
{
	uint32_t ids = pci_config_read(0, 0, 0, PCI_VENDOR_ID, 4);
	if (ids == 0x12378086)
		return PCI_CHIPSET_I440FX;
	if (ids == 0x29c08086)
		return PCI_CHIPSET_Q35;
	return PCI_CHIPSET_UNKNOWN;
}

static int pci_piix_pirq_irq(unsigned pirq)
{
	static const uint8_t defaults[4] = {10, 10, 11, 11};
	uint8_t route = (uint8_t)pci_config_read(0, 1, 0, 0x60 + pirq, 1);
	if (route == 0xff || (route & 0x80) || (route & 0x0f) < 3)
		return defaults[pirq];
	return route & 0x0f;
}

int pci_route_intx(enum pci_chipset chipset, unsigned slot, unsigned pin, uint8_t line)
{
	if (pin < 1 || pin > 4 || slot > 31)
		return -ENODEV;
	bool line_valid = line > 0 && line < 16;
	switch (chipset) {
	case PCI_CHIPSET_Q35:
		if (slot <= 24)
			return 16 + 4 + (int)((slot + pin - 1) % 4);
		return 16 + (int)(pin - 1);
	case PCI_CHIPSET_I440FX:
		if (line_valid)
			return line;
		return pci_piix_pirq_irq((slot - 1 + pin - 1) & 3);
	default: return line_valid ? line : -ENODEV;
	}
}

int pci_intx_gsi(const struct pci_device *dev)
{
	if (!dev || !dev->interrupt_pin)
		return -ENODEV;
	unsigned pin = dev->interrupt_pin;
	const struct pci_device *at = dev;
	while (at->parent) {
		pin = (pin - 1 + at->device) % 4 + 1;
		at = at->parent;
	}
	/* Behind a bridge the firmware's line register still names the IRQ. */
	return pci_route_intx(pci_detect_chipset(), at->device, pin, dev->interrupt_line);
}

/* The MADT's override for an ISA IRQ, else PCI's default (level, active low);
 * GSIs above 15 are level, active high as QEMU's DSDT declares them. */
static void pci_intx_polarity(uint32_t gsi, enum acpi_polarity *polarity,
			      enum acpi_trigger *trigger)
{
	*polarity = gsi < 16 ? ACPI_POLARITY_LOW : ACPI_POLARITY_HIGH;
	*trigger = ACPI_TRIGGER_LEVEL;
	const struct acpi_madt *madt = acpi_get_madt();
	for (unsigned i = 0; madt && i < madt->override_count; i++) {
		if (madt->overrides[i].gsi == gsi) {
			*polarity = madt->overrides[i].polarity;
			*trigger = madt->overrides[i].trigger;
		}
	}
}

/* ---- INTx lines ---------------------------------------------------------- */

static void pci_intx_dispatch(struct trap_frame *frame, void *ctx)
{
	struct pci_intx_line *line = ctx;
	unsigned count = __atomic_load_n(&line->count, __ATOMIC_ACQUIRE);
	for (unsigned i = 0; i < count; i++)
		line->handlers[i].handler(frame, line->handlers[i].ctx);
}

/* The line for gsi, set up on first use.  Called with pci_intx_lock held. */
static struct pci_intx_line *pci_intx_line_get(uint32_t gsi, int *error)
{
	for (unsigned i = 0; i < pci_intx_line_count; i++)
		if (pci_intx_lines[i].gsi == gsi)
			return &pci_intx_lines[i];
	*error = -ENOSPC;
	if (pci_intx_line_count == PCI_INTX_LINES)
		return NULL;
	int vector = irq_alloc_vector();
	if (vector < 0)
		return NULL;
	struct pci_intx_line *line = &pci_intx_lines[pci_intx_line_count];
	line->gsi = gsi;
	line->vector = vector;
	line->count = 0;
	enum acpi_polarity polarity;
	enum acpi_trigger trigger;
	pci_intx_polarity(gsi, &polarity, &trigger);
	*error = ioapic_route_gsi(gsi, (uint8_t)vector, lapic_id(), polarity, trigger);
	if (*error == 0)
		*error = irq_register((unsigned)vector, pci_intx_dispatch, line, "pci-intx");
	if (*error) {
		irq_free_vector((unsigned)vector);
		return NULL;
	}
	pci_intx_line_count++;
	return line;
}

static int pci_attach_intx(struct pci_device *dev, irq_handler_fn handler, void *ctx)
{
	int gsi = pci_intx_gsi(dev);
	if (gsi < 0)
		return gsi;
	int error = 0;
	uint64_t flags = spin_lock_irqsave(&pci_intx_lock);
	struct pci_intx_line *line = pci_intx_line_get((uint32_t)gsi, &error);
	if (line && line->count == PCI_INTX_SHARE_MAX) {
		line = NULL;
		error = -ENOSPC;
	}
	if (line) {
		line->handlers[line->count] = (struct pci_intx_handler){handler, ctx};
		__atomic_store_n(&line->count, line->count + 1, __ATOMIC_RELEASE);
	}
	spin_unlock_irqrestore(&pci_intx_lock, flags);
	if (!line)
		return error;
	uint16_t command = pci_read_config16(dev, PCI_COMMAND);
	pci_write_config16(dev, PCI_COMMAND, command & ~PCI_COMMAND_INTX_DISABLE);
	dev->irq_vector = line->vector;
	dev->irq_gsi = (uint32_t)gsi;
	ioapic_unmask_gsi((uint32_t)gsi);
	return PCI_IRQ_INTX;
}

/* ---- MSI and MSI-X ------------------------------------------------------- */

static void pci_disable_intx(struct pci_device *dev)
{
	uint16_t command = pci_read_config16(dev, PCI_COMMAND);
	pci_write_config16(dev, PCI_COMMAND, command | PCI_COMMAND_INTX_DISABLE);
}

static void pci_program_msi(struct pci_device *dev, unsigned cap, int vector)
{
	uint16_t control = pci_read_config16(dev, cap + 2);
	unsigned data = cap + ((control & MSI_CONTROL_64BIT) ? 12 : 8);
	pci_write_config32(dev, cap + 4, MSI_ADDRESS_BASE | lapic_id() << 12);
	if (control & MSI_CONTROL_64BIT)
		pci_write_config32(dev, cap + 8, 0);
	pci_write_config16(dev, data, (uint16_t)vector);
	if (control & MSI_CONTROL_MASKABLE)
		pci_write_config32(dev, data + 4, 0); /* unmask vector 0 */
	control &= ~MSI_CONTROL_MME;                  /* one message */
	pci_write_config16(dev, cap + 2, control | MSI_CONTROL_ENABLE);
}

unsigned pci_msix_count(const struct pci_device *dev)
{
	unsigned cap = pci_find_capability(dev, PCI_CAP_MSIX, 0);
	return cap ? (pci_read_config16(dev, cap + 2) & MSIX_CONTROL_SIZE) + 1u : 0;
}

/* The MSI-X table, mapped, or NULL when its BAR or bounds are wrong. */
static volatile uint32_t *pci_msix_table(struct pci_device *dev, unsigned cap, unsigned count)
{
	uint32_t where = pci_read_config32(dev, cap + 4);
	unsigned bir = where & 7;
	uint64_t offset = where & ~7u;
	if (bir >= PCI_BAR_COUNT ||
	    offset + (uint64_t)count * MSIX_ENTRY_SIZE > dev->bars[bir].size)
		return NULL;
	pci_enable_device(dev, PCI_ENABLE_MEMORY);
	uint8_t *base = pci_map_bar(dev, bir);
	return base ? (volatile uint32_t *)(base + offset) : NULL;
}

static int pci_program_msix(struct pci_device *dev, unsigned cap, int vector)
{
	unsigned count = pci_msix_count(dev);
	volatile uint32_t *table = pci_msix_table(dev, cap, count);
	if (!table)
		return -ENODEV;
	uint16_t control = pci_read_config16(dev, cap + 2);
	pci_write_config16(dev, cap + 2, control | MSIX_CONTROL_ENABLE | MSIX_CONTROL_MASK);
	for (unsigned i = 0; i < count; i++) {
		volatile uint32_t *entry = table + i * (MSIX_ENTRY_SIZE / 4);
		entry[0] = MSI_ADDRESS_BASE | lapic_id() << 12;
		entry[1] = 0;
		entry[2] = (uint32_t)vector;
		entry[3] = 0; /* unmasked */
	}
	pci_write_config16(dev, cap + 2, (control | MSIX_CONTROL_ENABLE) & ~MSIX_CONTROL_MASK);
	return 0;
}

/* MSI or MSI-X (kind) on a new vector.  Returns kind or a negative error. */
static int pci_attach_message(struct pci_device *dev, enum pci_irq_kind kind,
			      irq_handler_fn handler, void *ctx, const char *name)
{
	unsigned cap =
	    pci_find_capability(dev, kind == PCI_IRQ_MSIX ? PCI_CAP_MSIX : PCI_CAP_MSI, 0);
	if (!cap)
		return -ENODEV;
	int vector = irq_alloc_vector();
	if (vector < 0)
		return vector;
	int error = irq_register((unsigned)vector, handler, ctx, name);
	if (error == 0 && kind == PCI_IRQ_MSIX)
		error = pci_program_msix(dev, cap, vector);
	else if (error == 0)
		pci_program_msi(dev, cap, vector);
	if (error) {
		irq_unregister((unsigned)vector, handler);
		irq_free_vector((unsigned)vector);
		return error;
	}
	pci_disable_intx(dev);
	dev->irq_vector = vector;
	return kind;
}

/* pci_intx=VVVV:DDDD: the function with these ids gets INTx even where it
 * offers MSI-X or MSI, so a test can drive a driver's INTx path. */
static struct {
	bool set;
	uint16_t vendor_id, device_id;
} forced_intx;

/* Four hexadecimal digits at text into *value.  Returns false otherwise. */
static bool parse_hex16(const char *text, uint16_t *value)
{
	unsigned result = 0;
	for (unsigned i = 0; i < 4; i++) {
		char c = text[i];
		unsigned digit = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
				 : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
				 : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
							: 16u;
		if (digit == 16)
			return false;
		result = result << 4 | digit;
	}
	*value = (uint16_t)result;
	return true;
}

static int set_forced_intx(const char *value)
{
	if (!value || !parse_hex16(value, &forced_intx.vendor_id) || value[4] != ':' ||
	    !parse_hex16(value + 5, &forced_intx.device_id) || value[9] != '\0')
		return -1;
	forced_intx.set = true;
	return 0;
}
KERNEL_PARAM(pci_intx, set_forced_intx,
	     "VVVV:DDDD (hex ids): that device interrupts through INTx, never MSI-X or MSI");

static bool intx_forced_for(const struct pci_device *dev)
{
	return forced_intx.set && dev->vendor_id == forced_intx.vendor_id &&
	       dev->device_id == forced_intx.device_id;
}

JOINPOINT_DEFINE(pci, attach_irq, int, struct pci_device *, dev, enum pci_irq_kind, prefer,
		 irq_handler_fn, handler, void *, ctx, const char *, name)
{
	if (!dev || !handler || dev->irq_kind != PCI_IRQ_NONE)
		return -EINVAL;
	int kind = -ENODEV;
	if (intx_forced_for(dev)) {
		pr_info("pci: %02x:%02x.%u: INTx only (pci_intx=)\n", dev->bus, dev->device,
			dev->function);
		prefer = PCI_IRQ_INTX;
	}
	if (prefer == PCI_IRQ_MSIX)
		kind = pci_attach_message(dev, PCI_IRQ_MSIX, handler, ctx, name);
	if (kind < 0 && prefer != PCI_IRQ_INTX)
		kind = pci_attach_message(dev, PCI_IRQ_MSI, handler, ctx, name);
	if (kind < 0)
		kind = pci_attach_intx(dev, handler, ctx);
	if (kind > 0)
		dev->irq_kind = (enum pci_irq_kind)kind;
	return kind;
}
