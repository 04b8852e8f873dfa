/*
 * PCI: finds every function on the machine's PCI buses (configuration
 * mechanism 1 through ports 0xcf8/0xcfc, or ECAM from the ACPI MCFG table
 * where the firmware offers it, as on q35), decodes BARs and capabilities,
 * routes interrupts (legacy INTx through the IOAPIC, MSI, MSI-X) and binds
 * drivers.  Drivers are declared with PCI_DRIVER into a linker section; the
 * registry is the section, nothing registers at run time.
 *
 *     static int mydev_probe(struct pci_device *dev) { pci_enable_device(dev, PCI_ENABLE_MEMORY); ... }
 *     PCI_DRIVER(mydev, 0x8086, 0x100e, mydev_probe);
 *     void *registers = pci_map_bar(dev, 0);              // NULL for an I/O or absent BAR
 */
#ifndef DRIVERS_PCI_PCI_H
#define DRIVERS_PCI_PCI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "irq/irq.h"

#define PCI_ANY_ID     0xffff /* a PCI_DRIVER matching every vendor or device */
#define PCI_BAR_COUNT  6
#define PCI_MAX_BUSES  256
#define PCI_CONFIG_MAX 4096 /* bytes of configuration space with ECAM (256 without) */

/* Configuration space offsets (type 0 and 1 headers) used by drivers. */
#define PCI_VENDOR_ID      0x00
#define PCI_DEVICE_ID      0x02
#define PCI_COMMAND        0x04
#define PCI_STATUS         0x06
#define PCI_REVISION       0x08
#define PCI_HEADER_TYPE    0x0e
#define PCI_BAR0           0x10
#define PCI_CAPABILITIES   0x34
#define PCI_INTERRUPT_LINE 0x3c
#define PCI_INTERRUPT_PIN  0x3d

#define PCI_COMMAND_IO           0x0001
#define PCI_COMMAND_MEMORY       0x0002
#define PCI_COMMAND_BUS_MASTER   0x0004
#define PCI_COMMAND_INTX_DISABLE 0x0400
#define PCI_STATUS_CAPABILITIES  0x0010

/* Capability ids. */
#define PCI_CAP_MSI    0x05
#define PCI_CAP_VENDOR 0x09 /* virtio's structures */
#define PCI_CAP_PCIE   0x10
#define PCI_CAP_MSIX   0x11

enum pci_bar_kind { PCI_BAR_NONE, PCI_BAR_IO, PCI_BAR_MEM32, PCI_BAR_MEM64 };

struct pci_bar {
	enum pci_bar_kind kind;
	uint64_t base; /* bus address (I/O port for PCI_BAR_IO) */
	uint64_t size; /* bytes, from size probing; 0 when absent */
	bool prefetchable;
	void *mapped; /* pci_map_bar's mapping, NULL until then */
};

/* How a device's interrupt arrives (pci_attach_irq's choice). */
enum pci_irq_kind { PCI_IRQ_NONE, PCI_IRQ_INTX, PCI_IRQ_MSI, PCI_IRQ_MSIX };

struct pci_driver;

/* One function.  Filled by enumeration; drivers read it, and own driver_data. */
struct pci_device {
	uint16_t segment;
	uint8_t bus, device, function;
	uint16_t vendor_id, device_id;
	uint16_t subsystem_vendor_id, subsystem_id;
	uint8_t class_code, subclass, prog_if, revision;
	uint8_t header_type;    /* without the multi-function bit: 0 device, 1 bridge */
	uint8_t interrupt_pin;  /* 1 = INTA# .. 4 = INTD#, 0 = none */
	uint8_t interrupt_line; /* as the firmware left it */
	uint8_t secondary_bus;  /* bridges only */
	struct pci_bar bars[PCI_BAR_COUNT];
	struct pci_device *parent; /* the bridge above, NULL on bus 0 */
	const struct pci_driver *driver;
	void *driver_data;
	/* interrupt state, set by pci_attach_irq */
	enum pci_irq_kind irq_kind;
	int irq_vector;
	uint32_t irq_gsi; /* PCI_IRQ_INTX only */
	struct pci_device *next;
};

/* A driver: called once for each function whose ids match (PCI_ANY_ID matches
 * all), after enumeration.  probe returns 0 when it took the device, or a
 * negative error (printed; the device stays unbound). */
typedef int (*pci_probe_fn)(struct pci_device *dev);
struct pci_driver {
	const char *name;
	uint16_t vendor_id, device_id;
	pci_probe_fn probe;
};

#define PCI_DRIVER(drv_name, vendor, device, probe_fn)                                       \
	static const struct pci_driver pci_driver_##drv_name##_##vendor##_##device           \
	    __attribute__((section(".pci.drivers"), used, aligned(8))) = {#drv_name, vendor, \
									  device, probe_fn}

/* ---- Boot ---------------------------------------------------------------- */

/* Picks the configuration access (ECAM when ACPI has an MCFG table, else
 * mechanism 1), enumerates every bus reachable from bus 0, prints one line
 * per function and runs the matching drivers' probes.  Once, from a thread,
 * after the scheduler and the IOAPIC are up.  Returns the number of functions
 * found (0 when there is no PCI), never fails. */
unsigned pci_init(void);
/* "ECAM" or "mechanism 1" (or "none" before pci_init / without PCI). */
const char *pci_access_name(void);

/* ---- Configuration space ------------------------------------------------- */

/* Read and write configuration space at offset (naturally aligned; below 256
 * with mechanism 1, below PCI_CONFIG_MAX with ECAM).  Reads outside return all
 * ones, writes outside are ignored. */
uint8_t pci_read_config8(const struct pci_device *dev, unsigned offset);
uint16_t pci_read_config16(const struct pci_device *dev, unsigned offset);
uint32_t pci_read_config32(const struct pci_device *dev, unsigned offset);
void pci_write_config8(const struct pci_device *dev, unsigned offset, uint8_t value);
void pci_write_config16(const struct pci_device *dev, unsigned offset, uint16_t value);
void pci_write_config32(const struct pci_device *dev, unsigned offset, uint32_t value);

/* Capabilities a list is followed for at most: 192 bytes of 4-byte-aligned
 * entries past the header hold no more than 48. */
#define PCI_CAPABILITY_STEPS 48
/* Returns the offset of the first capability with id after offset start
 * (0: from the beginning), or 0 when there is none.  A looping or
 * out-of-range list ends the walk; calling it again from each result is not
 * bounded as a whole (a list that loops through id repeats forever): walk
 * every capability of an id with pci_for_each_capability. */
unsigned pci_find_capability(const struct pci_device *dev, uint8_t id, unsigned start);
/* Calls fn(offset, arg) for each capability with id in list order until it
 * returns non-zero; returns that value, or 0.  The whole walk takes at most
 * PCI_CAPABILITY_STEPS steps, so a list whose next pointers loop ends. */
int pci_for_each_capability(const struct pci_device *dev, uint8_t id,
			    int (*fn)(unsigned offset, void *arg), void *arg);

/* ---- Devices ------------------------------------------------------------- */

enum pci_enable_flags {
	PCI_ENABLE_IO = 1u << 0,
	PCI_ENABLE_MEMORY = 1u << 1,
	PCI_ENABLE_BUS_MASTER = 1u << 2,
};
/* Sets the command register bits named by flags (others unchanged).
 * Returns 0 or -EINVAL (dev NULL). */
int pci_enable_device(struct pci_device *dev, unsigned flags);
/* Clears the command register bits named by flags (others unchanged).
 * Without PCI_ENABLE_BUS_MASTER the function can no longer read or write
 * memory: what a driver does with a device that would not reset. */
void pci_disable_device(struct pci_device *dev, unsigned flags);
/* Maps memory BAR index uncached (once; later calls return the same).
 * Returns the mapping, or NULL (index out of range, not a memory BAR, a BAR
 * without an address (base 0: behind a bridge nobody programmed, or left by
 * the firmware), one that wraps or overlaps usable RAM, mapping failed):
 * the caller's probe must then fail. */
void *pci_map_bar(struct pci_device *dev, unsigned index);

/* Makes handler(frame, ctx) run for the device's interrupt on a new vector,
 * trying in order MSI-X (when prefer is PCI_IRQ_MSIX), MSI (unless prefer is
 * PCI_IRQ_INTX) and INTx (level-triggered, maybe shared with other devices:
 * the handler must tolerate calls when its device did not interrupt).  For
 * MSI-X every table entry points at the vector (entry i sends it).  The
 * interrupt is live on return.  Returns the kind used (> 0), or -EINVAL,
 * -ENODEV (no way to interrupt), -ENOSPC (no vector or no shared line slot). */
int pci_attach_irq(struct pci_device *dev, enum pci_irq_kind prefer, irq_handler_fn handler,
		   void *ctx, const char *name);
/* Number of MSI-X table entries the device has (0: no MSI-X). */
unsigned pci_msix_count(const struct pci_device *dev);
/* The GSI INTx of dev arrives on (after the routing described in irq.c), or
 * a negative error (-ENODEV: no interrupt pin). */
int pci_intx_gsi(const struct pci_device *dev);

/* ---- Finding devices ----------------------------------------------------- */

/* The index-th function (0 first) with these ids (PCI_ANY_ID: any), or NULL. */
struct pci_device *pci_find_device(uint16_t vendor_id, uint16_t device_id, unsigned index);
/* The index-th function of this class (subclass 0xff: any), or NULL. */
struct pci_device *pci_find_class(uint8_t class_code, uint8_t subclass, unsigned index);
/* Calls fn for every function in bus order until it returns non-zero;
 * returns that value, or 0. */
int pci_for_each_device(int (*fn)(struct pci_device *dev, void *arg), void *arg);
/* Functions found by pci_init. */
unsigned pci_device_count(void);
/* One line per function, `lspci`-like; verbose adds BARs, capabilities and
 * the interrupt. */
void pci_print_devices(bool verbose);
/* A short name for a class ("Ethernet controller", "Host bridge", ...). */
const char *pci_class_name(uint8_t class_code, uint8_t subclass);

#endif
