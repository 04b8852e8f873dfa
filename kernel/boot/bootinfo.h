/*
 * What the boot loader told us, copied out of its own structures before any
 * of that memory is reused: protocol, command line, memory map, modules (the
 * initrd), framebuffer, and the ACPI RSDP when the loader found one.
 * Multiboot1 (QEMU -kernel) and multiboot2 (GRUB, BIOS and UEFI) both land here.
 *
 *     const struct boot_info *boot = bootinfo();
 *     for (unsigned i = 0; i < boot->region_count; i++) ...
 */
#ifndef KERNEL_BOOT_BOOTINFO_H
#define KERNEL_BOOT_BOOTINFO_H

#include <stdbool.h>
#include <stdint.h>

#define MULTIBOOT1_LOADER_MAGIC 0x2badb002
#define MULTIBOOT2_LOADER_MAGIC 0x36d76289

#define BOOT_MAX_REGIONS 128
#define BOOT_MAX_MODULES 8
#define BOOT_CMDLINE_MAX 1024

enum boot_region_type {
	BOOT_REGION_USABLE = 1,
	BOOT_REGION_RESERVED = 2,
	BOOT_REGION_ACPI_RECLAIMABLE = 3,
	BOOT_REGION_ACPI_NVS = 4,
	BOOT_REGION_BAD = 5,
};

struct boot_region {
	uint64_t base;
	uint64_t length;
	uint32_t type; /* enum boot_region_type; anything else counts as reserved */
};

struct boot_module {
	uint64_t start; /* physical, [start, end) */
	uint64_t end;
	char name[64];
};

struct boot_framebuffer {
	uint64_t address; /* physical */
	uint32_t pitch;   /* bytes per row */
	uint32_t width;
	uint32_t height;
	uint8_t bpp;
	uint8_t type; /* 0 indexed, 1 RGB, 2 EGA text */
	uint8_t red_shift, green_shift, blue_shift;
};

enum boot_protocol { BOOT_MULTIBOOT1 = 1, BOOT_MULTIBOOT2 = 2 };

struct boot_info {
	enum boot_protocol protocol;
	char loader_name[64];
	char cmdline[BOOT_CMDLINE_MAX];
	struct boot_region regions[BOOT_MAX_REGIONS];
	unsigned region_count;
	unsigned regions_dropped; /* entries past BOOT_MAX_REGIONS after merging */
	struct boot_module modules[BOOT_MAX_MODULES];
	unsigned module_count;
	bool has_framebuffer;
	struct boot_framebuffer framebuffer;
	bool has_rsdp;
	uint8_t rsdp[36]; /* a copy: v1 uses 20 bytes, v2 36 */
	bool efi;         /* booted by UEFI firmware (EFI system table tag seen) */
};

/* Maps a physical address of loader data to a pointer the parser may read. */
typedef const void *(*bootinfo_phys_to_ptr)(uint64_t phys, uint64_t length);

/* Fills out from the loader's information block.  Returns 0, or -1 for an
 * unknown magic or a block that is inconsistent (sizes past its end). */
int bootinfo_parse(uint32_t magic, uint64_t info_phys, bootinfo_phys_to_ptr map,
		   struct boot_info *out);

/* The parsed information of this boot (valid after kernel_entry's first steps). */
const struct boot_info *bootinfo(void);
void bootinfo_set(const struct boot_info *info);

#endif
