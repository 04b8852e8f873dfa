/*
 * kernel_entry: from the boot assembly to a running system.  The order is the
 * dependency order: per-CPU area (locks need it) → serial console (so every
 * later step can report) → loader information → command line → memory → CPU
 * tables → interrupts and time → threads.  Each step reports what it found,
 * so the boot log alone says what machine this is.
 */
#include <stdint.h>

#include "acct/acct.h"
#include "acpi/acpi.h"
#include "arch/x86_64/apic.h"
#include "arch/x86_64/cpu.h"
#include "arch/x86_64/gdt.h"
#include "arch/x86_64/layout.h"
#include "arch/x86_64/smp.h"
#include "boot/bootinfo.h"
#include "boot/cmdline.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "crashtest/crashtest.h"
#include "ext2/ext2.h"
#include "fb/fbcon.h"
#include "initrd/initrd.h"
#include "joinpoint/joinpoint.h"
#include "kshell/kshell.h"
#include "ktest/ktest.h"
#include "lattrack/lattrack.h"
#include "lib/string.h"
#include "mm/mm.h"
#include "net/net.h"
#include "panic/panic.h"
#include "pci/pci.h"
#include "power/power.h"
#include "proc/proc.h"
#include "sched/sched.h"
#include "smp/smp.h"
#include "syscall/syscall.h"
#include "time/time.h"
#include "trace/trace.h"
#include "uart/uart.h"
#include "version.h"
#include "vfs/vfs.h"
#include "virtio/trace_port.h"

/* The boot page tables map the first 4 GiB at PHYSMAP_BASE. */
static const void *early_phys_to_ptr(uint64_t phys, uint64_t length)
{
	if (phys + length < phys || phys + length > (4ULL << 30))
		return NULL;
	return (const void *)(PHYSMAP_BASE + phys);
}

static int set_loglevel(const char *value)
{
	static const char *const names[] = {"emerg", "alert",  "crit", "err",
					    "warn",  "notice", "info", "debug"};
	if (!value)
		return -1;
	if (value[0] >= '0' && value[0] <= '7' && value[1] == '\0') {
		console_set_level((enum log_level)(value[0] - '0'));
		return 0;
	}
	for (int i = 0; i < 8; i++) {
		if (!strcmp(value, names[i])) {
			console_set_level((enum log_level)i);
			return 0;
		}
	}
	return -1;
}
KERNEL_PARAM(loglevel, set_loglevel, "0-7 or emerg..debug: console verbosity");

static void read_boot_info(uint32_t magic, uint64_t info_phys)
{
	static struct boot_info parsed;
	if (bootinfo_parse(magic, info_phys, early_phys_to_ptr, &parsed) < 0)
		panic("boot: unusable loader information (magic %#x at %#lx)", magic, info_phys);
	bootinfo_set(&parsed);
}

static void print_banner(void)
{
	const struct boot_info *boot = bootinfo();
	pr_info("microScope %s (x86_64) - monitoring as a first-class primitive\n",
		MICROSCOPE_VERSION);
	pr_info("boot: %s via %s%s, command line '%s'\n",
		boot->protocol == BOOT_MULTIBOOT2 ? "multiboot2" : "multiboot1",
		boot->loader_name[0] ? boot->loader_name : "unknown loader",
		boot->efi ? " (UEFI)" : "", boot->cmdline);
}

static int run_selftests(void *arg)
{
	(void)arg;
	return ktest_run_selected();
}

/* The suites run in a thread of their own, so they may block and be preempted. */
static void run_selftests_and_stop(void)
{
	int failed = -1;
	struct thread *tests = thread_create(run_selftests, NULL, "ktest", SCHED_PRIORITY_NORMAL);
	if (!tests || thread_join(tests, &failed) < 0)
		panic("ktest: cannot run the tests in a thread");
	pr_info("ktest: %d case(s) failed\n", failed);
	jp_boot_report();
	power_stop(failed ? POWER_TESTS_FAILED : POWER_TESTS_PASSED);
}

/* Called once, from boot.S, on the boot CPU with interrupts off. */
void kernel_entry(uint32_t magic, uint64_t info_phys);
void kernel_entry(uint32_t magic, uint64_t info_phys)
{
	percpu_install(0, 0);
	uart_console_init();
	arch_cpu_tables_init(0);
	read_boot_info(magic, info_phys);
	cmdline_apply(bootinfo()->cmdline);
	print_banner();
	clock_init();
	mm_init();
	fbcon_init(); /* the screen, now that it can be mapped */
	acpi_init();
	apic_init();
	timer_init();
	smp_init();
	sched_init();
	syscall_init_cpu();
	proc_init();
	vfs_init();
	initrd_load_boot_module(); /* "no initrd" is not an error */
	irq_enable();
	jp_boot_init();
	acct_boot_init(); /* the accounting's native advice, for the rscfl aspect */
	arch_smp_start_cpus();
	sched_apply_monitor_cpus();
	pci_init();        /* and the drivers of what it finds (NICs start their workers) */
	ext2_mount_boot(); /* the first disk at /disk when it holds ext2 */
	net_init();        /* lwIP and an interface per NIC; addresses come in the background */
	smp_bench_run_if_requested();
	lattrack_bench_run_if_requested();
	trace_set_line_runner(kshell_execute_captured); /* for a host's control lines */
	if (!ktest_requested())    /* the suites may want the console port for themselves */
		trace_port_init(); /* the trace stream's console sink, if there is a console device */
	trace_boot_init();
	ext2_bench_run_if_requested();

	crashtest_run();
	if (ktest_requested())
		run_selftests_and_stop();
	pr_info("microScope is up.\n");
	/* the console monitor, unless init owns the console (the kshell param overrides) */
	kshell_start_at_boot(proc_start_init() >= 0 ? KSHELL_CONSOLE_IN_USER : KSHELL_CONSOLE_FREE);
	thread_exit(0); /* the idle thread takes over when nothing else runs */
}
