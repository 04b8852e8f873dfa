/*
 * The test kernel's command-line options (ktest=, crashtest=, jp_bench=,
 * smp_bench=, proc_bench=, vcon_test=) as the kernel without tests knows them: each says
 * that this kernel carries no tests or benchmarks, instead of being ignored
 * as an unknown word.  The test kernel (built with KERNEL_TESTS=1 as
 * build/microscope-test.elf) defines the real options beside the tests, so
 * this file is empty there.
 */
#ifndef KERNEL_TESTS
#include "boot/cmdline.h"
#include "console/console.h"

static int say_no_tests(const char *value)
{
	(void)value;
	pr_warn("cmdline: this kernel is built without tests and benchmarks; "
		"boot build/microscope-test.elf (make run KERNEL=test ARGS=...)\n");
	return 0;
}
KERNEL_PARAM(ktest, say_no_tests, "(test kernel only) run in-kernel tests");
KERNEL_PARAM(crashtest, say_no_tests, "(test kernel only) crash on purpose");
KERNEL_PARAM(jp_bench, say_no_tests, "(test kernel only) measure join points");
KERNEL_PARAM(smp_bench, say_no_tests, "(test kernel only) measure IPIs");
KERNEL_PARAM(proc_bench, say_no_tests, "(test kernel only) measure system calls");
KERNEL_PARAM(vcon_test, say_no_tests, "(test kernel only) the vcon suite's host-checked cases");
#endif
