/*
 * The HPET main counter.  hpet_init runs once on the boot CPU; afterwards the
 * register pointer and period are only read, so any CPU may read the counter.
 * Legacy replacement routing is turned off: the kernel takes no interrupt
 * from the HPET, it only reads the counter.
 */
#include "arch/x86_64/hpet.h"

#include <stdbool.h>

#include "acpi/acpi.h"
#include "lib/errno.h"
#include "mm/mm.h"

#define HPET_CAPABILITIES   0x000
#define HPET_CONFIG         0x010
#define HPET_MAIN_COUNTER   0x0f0
#define HPET_REGISTER_SPACE 0x400

#define CAP_COUNTER_64BIT   (1ULL << 13)
#define CONFIG_ENABLE       (1ULL << 0)
#define CONFIG_LEGACY_ROUTE (1ULL << 1)
#define MAX_PERIOD_FS       100000000ULL /* 100 ns: the specification's upper bound */

static volatile uint64_t *registers;
static uint64_t period_fs;
static uint64_t counter_mask;

static uint64_t hpet_read(unsigned reg)
{
	return registers[reg / 8];
}

static void hpet_write(unsigned reg, uint64_t value)
{
	registers[reg / 8] = value;
}

int hpet_init(void)
{
	const struct acpi_hpet *table = acpi_get_hpet();
	if (!table)
		return -ENODEV;
	volatile uint64_t *mapped = vm_map_mmio(table->address, HPET_REGISTER_SPACE);
	if (!mapped)
		return -ENOMEM;
	uint64_t capabilities = mapped[HPET_CAPABILITIES / 8];
	uint64_t period = capabilities >> 32;
	if (period == 0 || period > MAX_PERIOD_FS)
		return -EIO;
	registers = mapped;
	period_fs = period;
	counter_mask = capabilities & CAP_COUNTER_64BIT ? UINT64_MAX : UINT32_MAX;
	uint64_t config = hpet_read(HPET_CONFIG) & ~CONFIG_LEGACY_ROUTE;
	hpet_write(HPET_CONFIG, config | CONFIG_ENABLE);
	return 0;
}

uint64_t hpet_read_counter(void)
{
	return registers ? hpet_read(HPET_MAIN_COUNTER) & counter_mask : 0;
}

uint64_t hpet_counter_mask(void)
{
	return counter_mask;
}

uint64_t hpet_period_fs(void)
{
	return period_fs;
}
