/*
 * The pci suite: enumeration found the host bridge, chose the access method
 * the machine offers, sized every BAR sanely, bound the NIC when there is
 * one, refused to map a BAR without device memory behind it; and the pure
 * pieces (BAR decoding, the MCFG parser, INTx routing) give the values the
 * specifications and QEMU's wiring say.
 */
#include "ktest/ktest.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "pci/internal.h"

static void host_bridge_is_found(struct ktest *t)
{
	ASSERT_TRUE(t, pci_device_count() > 0);
	struct pci_device *host = pci_find_class(0x06, 0x00, 0);
	ASSERT_TRUE(t, host != NULL);
	EXPECT_EQ(t, host->bus, 0);
	EXPECT_EQ(t, host->device, 0);
	EXPECT_EQ(t, pci_read_config16(host, PCI_VENDOR_ID), host->vendor_id);
}

static void access_method_matches_the_machine(struct ktest *t)
{
	enum pci_chipset chipset = pci_detect_chipset();
	if (chipset == PCI_CHIPSET_Q35) {
		EXPECT_EQ(t, strcmp(pci_access_name(), "ECAM"), 0);
		EXPECT_EQ(t, pci_config_limit(), PCI_CONFIG_MAX);
	} else if (chipset == PCI_CHIPSET_I440FX) {
		EXPECT_EQ(t, strcmp(pci_access_name(), "mechanism 1"), 0);
	}
	struct pci_device *host = pci_find_device(PCI_ANY_ID, PCI_ANY_ID, 0);
	ASSERT_TRUE(t, host != NULL);
	EXPECT_EQ(t, pci_read_config32(host, 0x1000), 0xffffffffu); /* beyond any space */
}

static int check_bars(struct pci_device *dev, void *arg)
{
	struct ktest *t = arg;
	for (unsigned i = 0; i < PCI_BAR_COUNT; i++) {
		const struct pci_bar *bar = &dev->bars[i];
		if (bar->kind == PCI_BAR_NONE) {
			EXPECT_EQ(t, bar->size, 0);
			continue;
		}
		EXPECT_TRUE(t, bar->size != 0 && (bar->size & (bar->size - 1)) == 0);
		EXPECT_EQ(t, bar->base & (bar->size - 1), 0);
		if (bar->kind == PCI_BAR_MEM64) {
			EXPECT_TRUE(t, i + 1 < PCI_BAR_COUNT);
			EXPECT_EQ(t, dev->bars[i + 1].kind, PCI_BAR_NONE);
		}
		if (bar->kind == PCI_BAR_IO)
			EXPECT_TRUE(t, bar->base + bar->size <= 0x10000);
	}
	return 0;
}

static void bar_sizes_are_sane(struct ktest *t)
{
	pci_for_each_device(check_bars, t);
}

static int check_capabilities(struct pci_device *dev, void *arg)
{
	struct ktest *t = arg;
	/* 0x00 is no capability id: the walk must end, not loop */
	EXPECT_EQ(t, pci_find_capability(dev, 0x00, 0), 0);
	unsigned msix = pci_find_capability(dev, PCI_CAP_MSIX, 0);
	if (msix)
		EXPECT_TRUE(t, pci_msix_count(dev) >= 1);
	return 0;
}

static void capability_walks_end(struct ktest *t)
{
	pci_for_each_device(check_capabilities, t);
}

static int count_capability(unsigned offset, void *arg)
{
	(void)offset;
	(*(unsigned *)arg)++;
	return 0;
}

/* A function on a bus nobody answers on reads all ones: its status says it
 * has capabilities, and the list at 0xfc names itself as next, id 0xff, for
 * ever.  Walking every capability of that id ends within the budget. */
static void a_looping_capability_list_ends(struct ktest *t)
{
	struct pci_device absent = {.bus = 0xff, .device = 31, .function = 7};
	ASSERT_EQ(t, pci_read_config16(&absent, PCI_VENDOR_ID), 0xffff);
	EXPECT_EQ(t, pci_find_capability(&absent, 0xff, 0), 0xfc);
	EXPECT_EQ(t, pci_find_capability(&absent, 0xff, 0xfc), 0xfc); /* loops */
	unsigned visits = 0;
	EXPECT_EQ(t, pci_for_each_capability(&absent, 0xff, count_capability, &visits), 0);
	EXPECT_EQ(t, visits, PCI_CAPABILITY_STEPS);
}

static void nic_is_bound_when_present(struct ktest *t)
{
	struct pci_device *nic = pci_find_class(0x02, 0x00, 0);
	if (!nic) {
		ktest_skip(t, "no Ethernet controller");
		return;
	}
	bool known =
	    (nic->vendor_id == 0x8086 && nic->device_id == 0x100e) ||
	    (nic->vendor_id == 0x1af4 && (nic->device_id == 0x1000 || nic->device_id == 0x1041));
	if (!known) {
		ktest_skip(t, "an Ethernet controller without a driver here");
		return;
	}
	EXPECT_TRUE(t, nic->driver != NULL);
	EXPECT_TRUE(t, nic->irq_kind != PCI_IRQ_NONE);
	EXPECT_TRUE(t, nic->irq_vector >= IRQ_DEVICE_FIRST);
	EXPECT_TRUE(t, pci_read_config16(nic, PCI_COMMAND) & PCI_COMMAND_BUS_MASTER);
}

static void bar_decoding_follows_the_spec(struct ktest *t)
{
	EXPECT_EQ(t, pci_bar_decode_kind(0xc001), PCI_BAR_IO);
	EXPECT_EQ(t, pci_bar_decode_kind(0xfebf0000), PCI_BAR_MEM32);
	EXPECT_EQ(t, pci_bar_decode_kind(0xfe00000c), PCI_BAR_MEM64);
	EXPECT_EQ(t, pci_bar_decode_size(0xffffffc1, 0, PCI_BAR_IO), 64);
	EXPECT_EQ(t, pci_bar_decode_size(0x0000ffc1, 0, PCI_BAR_IO), 64); /* 16-bit decoder */
	EXPECT_EQ(t, pci_bar_decode_size(0xfffe0000, 0, PCI_BAR_MEM32), 128 * 1024);
	EXPECT_EQ(t, pci_bar_decode_size(0xffffc00c, 0xffffffff, PCI_BAR_MEM64), 16 * 1024);
	EXPECT_EQ(t, pci_bar_decode_size(0x0000000c, 0xfffffffe, PCI_BAR_MEM64), 1ull << 33);
	EXPECT_EQ(t, pci_bar_decode_size(0, 0, PCI_BAR_MEM32), 0); /* unimplemented */
	EXPECT_EQ(t, pci_bar_decode_base(0xfe00000c, 0x1, PCI_BAR_MEM64), 0x1fe000000ull);
	EXPECT_EQ(t, pci_bar_decode_base(0xc041, 0, PCI_BAR_IO), 0xc040);
}

/* A BAR nobody placed (base 0), one that wraps and one over RAM are never
 * mapped: a device's registers there would be RAM the kernel uses. */
static void bars_without_device_memory_are_not_mapped(struct ktest *t)
{
	struct pci_device fake = {.bus = 0xff};
	fake.bars[0] = (struct pci_bar){.kind = PCI_BAR_MEM32, .base = 0, .size = 4096};
	fake.bars[1] = (struct pci_bar){.kind = PCI_BAR_MEM64, .base = ~0ull - 4095, .size = 8192};
	EXPECT_TRUE(t, pci_map_bar(&fake, 0) == NULL);
	EXPECT_TRUE(t, pci_map_bar(&fake, 1) == NULL);
	const struct boot_info *boot = bootinfo();
	for (unsigned i = 0; i < boot->region_count; i++) {
		const struct boot_region *r = &boot->regions[i];
		if (r->type != BOOT_REGION_USABLE || r->length < 8192 || r->base == 0)
			continue;
		fake.bars[2] =
		    (struct pci_bar){.kind = PCI_BAR_MEM32, .base = r->base, .size = 4096};
		EXPECT_TRUE(t, pci_map_bar(&fake, 2) == NULL);
		break;
	}
	struct boot_region ram = {.base = 0x100000, .length = 0x100000, .type = BOOT_REGION_USABLE};
	EXPECT_FALSE(t, pci_bar_range_is_device_memory(0x1ff000, 0x2000, &ram, 1));
	EXPECT_TRUE(t, pci_bar_range_is_device_memory(0x200000, 0x1000, &ram, 1));
	EXPECT_FALSE(t, pci_bar_range_is_device_memory(0, 0x1000, &ram, 0));
	EXPECT_FALSE(t, pci_bar_range_is_device_memory(~0ull - 0xfff, 0x2000, &ram, 0));
}

static void mcfg_parser_refuses_bad_lengths(struct ktest *t)
{
	uint8_t table[44 + 16 * 2] = {0};
	struct pci_ecam_region regions[4];
	EXPECT_EQ(t, pci_parse_mcfg(table, 43, regions, 4), -EBADMSG);
	EXPECT_EQ(t, pci_parse_mcfg(table, 44 + 15, regions, 4), -EBADMSG);
	EXPECT_EQ(t, pci_parse_mcfg(table, 44, regions, 4), 0);
	table[44 + 3] = 0xb0;  /* base 0xb0000000, little-endian */
	table[44 + 11] = 0xff; /* buses 0-255 */
	table[60 + 3] = 0xc0;
	table[60 + 10] = 9; /* start 9 > end 0: skipped */
	EXPECT_EQ(t, pci_parse_mcfg(table, sizeof(table), regions, 4), 1);
	EXPECT_EQ(t, regions[0].base, 0xb0000000ull);
	EXPECT_EQ(t, regions[0].end_bus, 255);
}

static void intx_routes_follow_the_chipset(struct ktest *t)
{
	EXPECT_EQ(t, pci_route_intx(PCI_CHIPSET_Q35, 2, 1, 11), 22);  /* PIRQG */
	EXPECT_EQ(t, pci_route_intx(PCI_CHIPSET_Q35, 3, 4, 10), 22);  /* (3 + 3) % 4 + 4 */
	EXPECT_EQ(t, pci_route_intx(PCI_CHIPSET_Q35, 31, 2, 10), 17); /* PIRQB */
	EXPECT_EQ(t, pci_route_intx(PCI_CHIPSET_I440FX, 3, 1, 11), 11);
	EXPECT_EQ(t, pci_route_intx(PCI_CHIPSET_UNKNOWN, 3, 1, 0), -ENODEV);
	EXPECT_EQ(t, pci_route_intx(PCI_CHIPSET_Q35, 3, 0, 11), -ENODEV);
	EXPECT_EQ(t, pci_route_intx(PCI_CHIPSET_Q35, 3, 5, 11), -ENODEV);
}

KTEST_SUITE(pci, KTEST_CASE(host_bridge_is_found), KTEST_CASE(access_method_matches_the_machine),
	    KTEST_CASE(bar_sizes_are_sane), KTEST_CASE(capability_walks_end),
	    KTEST_CASE(a_looping_capability_list_ends), KTEST_CASE(nic_is_bound_when_present),
	    KTEST_CASE(bar_decoding_follows_the_spec),
	    KTEST_CASE(bars_without_device_memory_are_not_mapped),
	    KTEST_CASE(mcfg_parser_refuses_bad_lengths),
	    KTEST_CASE(intx_routes_follow_the_chipset));
