/*
 * The `lspci` listing: one line per function (address, class, ids, driver),
 * and with -v its BARs, capabilities and interrupt.  Reads only what
 * enumeration stored plus the capability list, so it is safe at any time
 * after pci_init.
 */
#include "pci/internal.h"

#include "console/console.h"
#include "kshell/kshell.h"
#include "lib/string.h"

struct pci_class_entry {
	uint8_t class_code, subclass;
	const char *name;
};

static const struct pci_class_entry pci_classes[] = {
    {0x01, 0x01, "IDE interface"},
    {0x01, 0x06, "SATA controller"},
    {0x01, 0x08, "NVMe controller"},
    {0x01, 0xff, "Storage controller"},
    {0x02, 0x00, "Ethernet controller"},
    {0x02, 0xff, "Network controller"},
    {0x03, 0x00, "VGA controller"},
    {0x03, 0xff, "Display controller"},
    {0x04, 0xff, "Multimedia device"},
    {0x05, 0xff, "Memory controller"},
    {0x06, 0x00, "Host bridge"},
    {0x06, 0x01, "ISA bridge"},
    {0x06, 0x04, "PCI bridge"},
    {0x06, 0xff, "Bridge"},
    {0x07, 0xff, "Communication controller"},
    {0x08, 0xff, "System peripheral"},
    {0x0c, 0x03, "USB controller"},
    {0x0c, 0x05, "SMBus"},
    {0x0c, 0xff, "Serial bus controller"},
};

const char *pci_class_name(uint8_t class_code, uint8_t subclass)
{
	const char *fallback = "Unclassified device";
	for (unsigned i = 0; i < sizeof(pci_classes) / sizeof(pci_classes[0]); i++) {
		if (pci_classes[i].class_code != class_code)
			continue;
		if (pci_classes[i].subclass == subclass)
			return pci_classes[i].name;
		if (pci_classes[i].subclass == 0xff)
			fallback = pci_classes[i].name;
	}
	return fallback;
}

static const char *pci_irq_kind_name(enum pci_irq_kind kind)
{
	static const char *const names[] = {"none", "INTx", "MSI", "MSI-X"};
	return kind <= PCI_IRQ_MSIX ? names[kind] : "?";
}

static void pci_print_bars(const struct pci_device *dev)
{
	static const char *const kinds[] = {"", "I/O ports", "memory (32-bit)", "memory (64-bit)"};
	for (unsigned i = 0; i < PCI_BAR_COUNT; i++) {
		const struct pci_bar *bar = &dev->bars[i];
		if (bar->kind == PCI_BAR_NONE)
			continue;
		printk(LOG_INFO, "        BAR%u: %s at %#lx, size %#lx%s\n", i, kinds[bar->kind],
		       bar->base, bar->size, bar->prefetchable ? ", prefetchable" : "");
	}
}

static void pci_print_capabilities(const struct pci_device *dev)
{
	if (!(pci_read_config16(dev, PCI_STATUS) & PCI_STATUS_CAPABILITIES))
		return;
	unsigned offset = pci_read_config8(dev, PCI_CAPABILITIES) & 0xfc;
	for (unsigned steps = 0; steps < 48 && offset >= 0x40; steps++) {
		printk(LOG_INFO, "        capability %#04x at %#x\n", pci_read_config8(dev, offset),
		       offset);
		offset = pci_read_config8(dev, offset + 1) & 0xfc;
	}
}

static void pci_print_one(const struct pci_device *dev, bool verbose)
{
	printk(LOG_INFO, "%02x:%02x.%u %s [%02x%02x]: %04x:%04x rev %02x%s%s\n", dev->bus,
	       dev->device, dev->function, pci_class_name(dev->class_code, dev->subclass),
	       dev->class_code, dev->subclass, dev->vendor_id, dev->device_id, dev->revision,
	       dev->driver ? ", driver " : "", dev->driver ? dev->driver->name : "");
	if (!verbose)
		return;
	pci_print_bars(dev);
	pci_print_capabilities(dev);
	if (dev->interrupt_pin)
		printk(LOG_INFO, "        INT%c#, line %u, GSI %d\n", 'A' + dev->interrupt_pin - 1,
		       dev->interrupt_line, pci_intx_gsi(dev));
	if (dev->irq_kind != PCI_IRQ_NONE)
		printk(LOG_INFO, "        interrupt: %s, vector %d\n",
		       pci_irq_kind_name(dev->irq_kind), dev->irq_vector);
}

void pci_print_devices(bool verbose)
{
	for (const struct pci_device *dev = pci_device_list; dev; dev = dev->next)
		pci_print_one(dev, verbose);
}

static int cmd_lspci(int argc, char **argv)
{
	bool verbose = argc > 1 && strcmp(argv[1], "-v") == 0;
	if (argc > 2 || (argc == 2 && !verbose))
		return KSHELL_USAGE;
	kshell_print("PCI via %s, %u functions\n", pci_access_name(), pci_device_count());
	pci_print_devices(verbose);
	return 0;
}
KSHELL_COMMAND(lspci, cmd_lspci, "lspci [-v]", "list PCI functions (-v: BARs, capabilities, IRQ)");
