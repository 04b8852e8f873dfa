# microScope: one entry point for building, running and testing.
#   make deps   install missing Debian packages      make run    boot the ISO in QEMU
#   make        kernel + ISO                          make test   every test, one summary line
#   make bench  benchmarks (-icount)                  make debug  QEMU waiting for gdb on :1234
#   make bench-net  HTTP against a Linux guest        (make run: http://127.0.0.1:8080/)
#   make bench-net-tap  the same over host TAP devices (root)
#   make bench-acct  httpd's accounting, off vs on
#   make bench-lattrack  httpd with latency trackers, off vs on
#   make bench-trace  httpd recorded and streamed to the host, off vs on
# V=1 shows the commands.

BUILD := build
TOOLCHAIN := $(BUILD)/toolchain
CC := $(TOOLCHAIN)/x86_64-elf-gcc
LD := $(TOOLCHAIN)/x86_64-elf-ld
NM := $(TOOLCHAIN)/x86_64-elf-nm
PYTHON := python3

ifeq ($(V),1)
Q :=
say := @true
else
Q := @
say := @printf '  %-6s %s\n'
endif

KERNEL_DIRS := kernel drivers modules linker
INCLUDES := -Ikernel -Idrivers -Imodules -Ilinker -Iaspects/include -I.
WARNINGS := -Wall -Wextra -Werror -Wno-unused-parameter -Wstrict-prototypes -Wmissing-prototypes
KERNEL_CFLAGS := -std=gnu11 -O2 -g $(WARNINGS) $(INCLUDES) -mcmodel=kernel -mno-red-zone \
	-mgeneral-regs-only -fno-pic -fno-stack-protector -fno-omit-frame-pointer \
	-mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -fno-asynchronous-unwind-tables \
	-fno-strict-aliasing -fno-common -MMD -MP
KERNEL_ASFLAGS := $(INCLUDES) -g -MMD -MP -D__ASSEMBLY__

# Every .c and .S under the kernel's directories is built; tests and
# benchmarks (named by KERNEL_TEST_PATTERNS) only into the test kernel, built
# with -DKERNEL_TESTS=1 into $(BUILD)/obj-test/.  The kernel that `make run`
# and the ISO boot carries none of them; `make test` and `make bench` boot the
# test kernel.
KERNEL_SRCS := $(shell find $(KERNEL_DIRS) \( -name '*.c' -o -name '*.S' \) 2>/dev/null | sort)
KERNEL_TEST_PATTERNS := %/tests.c %_test.c %/bench.c %/bench_target.c %/testprog.S \
	kernel/ktest/% kernel/crashtest/%
KERNEL_OBJS := $(patsubst %,$(BUILD)/obj/%.o,$(filter-out $(KERNEL_TEST_PATTERNS),$(KERNEL_SRCS)))
KERNEL_TEST_OBJS := $(patsubst %,$(BUILD)/obj-test/%.o,$(KERNEL_SRCS))
# Objects both kernels link (the font here; lwIP and the aspects in their .mk).
# The screen console's font, converted at build time from a Debian console
# font (package console-setup-linux); never committed.
FONT_PSF := /usr/share/consolefonts/Uni2-VGA16.psf.gz
KERNEL_SHARED_OBJS := $(BUILD)/font.o
KERNEL_LDS := kernel/arch/x86_64/kernel.ld
KERNEL_ELF := $(BUILD)/microscope.elf
KERNEL_TEST_ELF := $(BUILD)/microscope-test.elf
ISO := $(BUILD)/microscope.iso
TEST_ISO := $(BUILD)/microscope-selftest.iso
STAMP_DEPS := $(BUILD)/.deps-ok

.PHONY: all deps kernel test-kernel iso run test test-host test-qemu test-net bench bench-net bench-net-tap bench-storage bench-acct bench-lattrack bench-trace soak debug clean format check-format check-layering disk
all: kernel iso initrd

# User space (newlib, programs, initrd): defines INITRD, used by the ISO rules.
include userland/userland.mk
# The analyzer's host build and its generated names (the OS build is a program of userland.mk).
include userland/analyze/analyze.mk
all: $(ANALYZE_HOST)
# The Latency Explorer's page and its charting library (npm, at build time).
include tools/explorer/explorer.mk
# Aspects (aspects/*.c -> $(BUILD)/aspects/*.o, into the initrd and the kernel's test table).
include aspects/aspects.mk
# make fuzz: the linker's libFuzzer target.
include tests/fuzz/fuzz.mk
# lwIP (fetched into $(BUILD)/lwip) and the network module's flags: adds to KERNEL_SHARED_OBJS.
include modules/net/net.mk

deps: $(STAMP_DEPS)
$(STAMP_DEPS): tools/deps.sh
	$(Q)sh tools/deps.sh
	$(Q)mkdir -p $(BUILD) && touch $@

$(TOOLCHAIN)/x86_64-elf-gcc: tools/mktoolchain.sh | $(STAMP_DEPS)
	$(say) TOOLS $(TOOLCHAIN)
	$(Q)sh tools/mktoolchain.sh $(TOOLCHAIN)

$(BUILD)/obj/%.c.o: %.c $(CC)
	$(say) CC $<
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(KERNEL_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.S.o: %.S $(CC)
	$(say) AS $<
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(KERNEL_ASFLAGS) -c $< -o $@

$(BUILD)/obj-test/%.c.o: %.c $(CC)
	$(say) CC-T $<
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(KERNEL_CFLAGS) -DKERNEL_TESTS=1 -c $< -o $@

$(BUILD)/obj-test/%.S.o: %.S $(CC)
	$(say) AS-T $<
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(KERNEL_ASFLAGS) -DKERNEL_TESTS=1 -c $< -o $@

# Two links: the first gives every function its final address, the second
# embeds those as the symbol table.  The table sits after all code and data,
# so the check below proves that nothing moved between the links.
$(BUILD)/ksyms-empty.S: tools/mkksyms.py | $(STAMP_DEPS)
	$(Q)mkdir -p $(BUILD) && $(PYTHON) tools/mkksyms.py --empty > $@

$(BUILD)/font.S: tools/mkfont.py | $(STAMP_DEPS)
	$(say) FONT $(FONT_PSF)
	$(Q)mkdir -p $(BUILD) && $(PYTHON) tools/mkfont.py $(FONT_PSF) > $@.tmp && mv $@.tmp $@

$(BUILD)/%.o: $(BUILD)/%.S $(CC)
	$(Q)$(CC) $(KERNEL_ASFLAGS) -c $< -o $@

# $(1) = the ELF, $(2) = its objects.
define kernel-link
$(1:.elf=-pass1.elf): $(2) $(KERNEL_SHARED_OBJS) $(BUILD)/ksyms-empty.o $(KERNEL_LDS)
	$$(say) LD $$@
	$$(Q)$$(LD) -T $$(KERNEL_LDS) -o $$@ $(2) $$(KERNEL_SHARED_OBJS) $$(BUILD)/ksyms-empty.o

$(1:.elf=-ksyms.S): $(1:.elf=-pass1.elf) tools/mkksyms.py
	$$(Q)$$(NM) -n -S --defined-only $$< | $$(PYTHON) tools/mkksyms.py > $$@

$(1): $(1:.elf=-pass1.elf) $(1:.elf=-ksyms.o)
	$$(say) LD $$@
	$$(Q)$$(LD) -T $$(KERNEL_LDS) -o $$@ $(2) $$(KERNEL_SHARED_OBJS) $(1:.elf=-ksyms.o)
	$$(Q)$$(NM) -n $(1:.elf=-pass1.elf) | grep -i ' t ' > $(1:.elf=-syms1.txt)
	$$(Q)$$(NM) -n $$@ | grep -i ' t ' > $(1:.elf=-syms2.txt)
	$$(Q)cmp -s $(1:.elf=-syms1.txt) $(1:.elf=-syms2.txt) || \
		{ echo "error: code moved between the two kernel links"; rm -f $$@; exit 1; }
endef
$(eval $(call kernel-link,$(KERNEL_ELF),$(KERNEL_OBJS)))
$(eval $(call kernel-link,$(KERNEL_TEST_ELF),$(KERNEL_TEST_OBJS)))

kernel: check-layering $(KERNEL_ELF)
test-kernel: check-layering $(KERNEL_TEST_ELF)

# Includes point down the layers of tools/layers.conf only, and a module's
# internal header is its own: anything else fails the build.
check-layering:
	$(Q)$(PYTHON) tools/check-layering.py

# The EFI image probes every partition map at start; list them so it finds them.
GRUB_MODULES := normal multiboot2 all_video part_msdos part_gpt part_acorn part_amiga part_apple \
	part_bsd part_dfly part_dvh part_plan part_sun part_sunpc
# $(1) = kernel, $(2) = command line, $(3) = image, $(4) = its name.
define make-iso
	$(say) ISO $(3)
	$(Q)rm -rf $(BUILD)/iso-$(4) && mkdir -p $(BUILD)/iso-$(4)/boot/grub
	$(Q)cp $(1) $(BUILD)/iso-$(4)/boot/microscope.elf
	$(Q)cp $(INITRD) $(BUILD)/iso-$(4)/boot/initrd.cpio
	$(Q)sed 's|@CMDLINE@|$(2)|' tools/grub.cfg.in > $(BUILD)/iso-$(4)/boot/grub/grub.cfg
	$(Q)grub-mkrescue -o $(3) $(BUILD)/iso-$(4) --install-modules="$(GRUB_MODULES)" \
		--modules="$(GRUB_MODULES)" --locales= --fonts= --themes= --compress=xz \
		>$(BUILD)/grub-mkrescue-$(4).log 2>&1 || { cat $(BUILD)/grub-mkrescue-$(4).log; exit 1; }
endef

iso: $(ISO)
$(ISO): $(KERNEL_ELF) $(INITRD) tools/grub.cfg.in Makefile
	$(call make-iso,$(KERNEL_ELF),$(CMDLINE),$@,run)
# The self-test image boots the test kernel, runs every suite and leaves QEMU
# with the result.
$(TEST_ISO): $(KERNEL_TEST_ELF) $(INITRD) tools/grub.cfg.in Makefile
	$(call make-iso,$(KERNEL_TEST_ELF),ktest=all exit=qemu,$@,selftest)

# make run ARGS="ktest=all exit=qemu" boots with a command line (QEMU -kernel).
# SMP=n sets the number of CPUs (two by default, so the boot shows SMP at work).
# KERNEL=test boots the test kernel (in-kernel suites and benchmarks: ktest=,
# crashtest=, jp_bench=, ...) through -kernel.
SMP ?= 2
RUN_KERNEL := $(if $(filter test,$(KERNEL)),$(KERNEL_TEST_ELF),$(KERNEL_ELF))
# The trace stream's console port is a unix socket: tools/mscope record
# --attach $(BUILD)/console.sock captures from the running system.
run: deps all $(DISK) $(if $(filter test,$(KERNEL)),$(KERNEL_TEST_ELF))
	$(Q)rm -f $(BUILD)/console.sock
	$(Q)$(PYTHON) tools/qemu.py --interactive --smp $(SMP) --disk $(DISK) \
		--console-port socket,path=$(BUILD)/console.sock,server=on,wait=off \
		$(if $(ARGS)$(KERNEL),--kernel $(RUN_KERNEL) --initrd $(INITRD) --append "$(ARGS)",--iso $(ISO))

# make disk: an ext2 image (host mke2fs, 4 KiB blocks) that make run attaches
# as a virtio-blk disk and the OS mounts at /disk.  Made once and kept, so what
# the OS writes survives; delete it (or make disk DISK_NEW=1) for a fresh one.
DISK := $(BUILD)/disk.img
DISK_MIB := 64
disk: deps $(if $(DISK_NEW),disk-new,$(DISK))
disk-new:
	$(Q)rm -f $(DISK)
	$(Q)$(MAKE) --no-print-directory $(DISK)
$(DISK): | $(STAMP_DEPS)
	$(say) MKE2FS $@
	$(Q)rm -rf $(BUILD)/disk-root && mkdir -p $(BUILD)/disk-root
	$(Q)echo "This file came from the host's mke2fs -d." > $(BUILD)/disk-root/README
	$(Q)/sbin/mke2fs -q -F -t ext2 -b 4096 -I 128 -O ^dir_index -L microscope \
		-d $(BUILD)/disk-root $@ $(DISK_MIB)M >$(BUILD)/mke2fs.log 2>&1 || { cat $(BUILD)/mke2fs.log; exit 1; }

debug: deps all $(TEST_IMAGES)
	$(Q)$(PYTHON) tools/qemu.py --kernel $(KERNEL_TEST_ELF) --initrd $(INITRD) --interactive --gdb \
		--append "$(ARGS)"

# The test and bench targets build the test kernel (KERNEL_TESTS=1) and its
# self-test ISO as well.
TEST_IMAGES := $(KERNEL_TEST_ELF) $(TEST_ISO)
test: deps all $(TEST_IMAGES)
	$(Q)$(PYTHON) tests/run.py --build $(BUILD)

# Only the network tests from the host (both NICs), a part of `make test`.
test-net: deps all $(TEST_IMAGES)
	$(Q)$(PYTHON) tests/run.py --build $(BUILD) --only net

bench: deps all $(TEST_IMAGES)
	$(Q)$(PYTHON) tests/bench.py --build $(BUILD)

# HTTP over e1000 and virtio-net against a Linux guest (Debian's kernel and
# nginx) in the same QEMU configuration: keep-alive, new connections, 1 MiB;
# then the phased workload (idle, bursts, steady, idle): the NIC decision loop
# against fixed interrupt and fixed polling mode.
# ext2 reads (sequential and random 4 KiB, cold and cached) against the Linux
# guest reading the same image on the same QEMU disk; then storage_bench's
# instructions per read and per page-cache hit.
bench-storage: deps all $(TEST_IMAGES)
	$(say) GUEST $(BUILD)/linux-guest
	$(Q)sh tools/linux-guest/build.sh $(BUILD)/linux-guest userland/rootfs/www/small.txt \
		$(BUILD)/user/root/www/1mib.txt
	$(Q)$(PYTHON) tests/bench_storage.py --build $(BUILD)

# The same three cases with each guest's NIC on a host TAP device (root): the
# host kernel's TCP/IP instead of QEMU's user network, virtio-net offloads.
bench-net-tap: deps all
	$(say) GUEST $(BUILD)/linux-guest
	$(Q)sh tools/linux-guest/build.sh $(BUILD)/linux-guest userland/rootfs/www/small.txt \
		$(BUILD)/user/root/www/1mib.txt
	$(Q)$(PYTHON) tests/bench_net.py --build $(BUILD) --tap

bench-net: deps all
	$(say) GUEST $(BUILD)/linux-guest
	$(Q)sh tools/linux-guest/build.sh $(BUILD)/linux-guest userland/rootfs/www/small.txt \
		$(BUILD)/user/root/www/1mib.txt
	$(Q)$(PYTHON) tests/bench_net.py --build $(BUILD)
	$(Q)$(PYTHON) tests/bench_net_phased.py --build $(BUILD) --rounds 3

# Connection churn: 10 one-minute slices of wrk, keep-alive and a new
# connection per request in turn, e1000, 2 CPUs; req/s per slice (not in test).
soak: deps all
	$(Q)$(PYTHON) tests/soak_net.py --build $(BUILD)

# httpd with per-request accounting off and on under the same HTTP load, and
# librscfl's calls in instructions (-icount).
bench-acct: deps all $(TEST_IMAGES)
	$(Q)$(PYTHON) tests/bench_acct.py --build $(BUILD)

# httpd with the syscall and ttfb latency trackers off and on under the same
# HTTP load.
bench-lattrack: deps all
	$(Q)$(PYTHON) tests/bench_lattrack.py --build $(BUILD)

# httpd with every join point on the request path recorded and streamed to
# the host over the virtio console (tools/mscope), off vs on.
bench-trace: deps all
	$(Q)$(PYTHON) tests/bench_trace.py --build $(BUILD)
	$(Q)$(PYTHON) tests/bench_trace.py --build $(BUILD) --uscope
	$(Q)$(PYTHON) tests/bench_trace.py --build $(BUILD) --uscope --stacks
	$(Q)$(PYTHON) tests/bench_trace.py --build $(BUILD) --icount-only

format:
	$(Q)find $(KERNEL_DIRS) userland aspects tests -name '*.[ch]' | xargs clang-format -i

check-format:
	$(Q)find $(KERNEL_DIRS) userland aspects tests -name '*.[ch]' | xargs clang-format --dry-run -Werror

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj $(BUILD)/obj-test -name '*.d' 2>/dev/null)
