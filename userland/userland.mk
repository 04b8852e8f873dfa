# User space: newlib, the syscall glue (userland/libc), the programs (one
# directory each under userland/) and the initial RAM disk.  Included by the
# top-level Makefile; uses its BUILD, Q, say and WARNINGS.
#
#   $(BUILD)/newlib/                 newlib for the target (built once, kept)
#   $(BUILD)/user/libc/              crt0.o and libmicroscope.a (the glue)
#   $(BUILD)/user/bin/<program>      linked programs, with debug information
#   $(BUILD)/initrd.cpio             newc archive: /sbin/init, /bin/*, /etc, ...

NEWLIB := $(BUILD)/newlib
NEWLIB_STAMP := $(NEWLIB)/x86_64-elf/lib/libc.a
USER_CC := $(NEWLIB)/bin/x86_64-elf-gcc
USER_DIR := $(BUILD)/user
USER_CFLAGS := -std=gnu11 -O2 -g $(WARNINGS) -isystem userland/include \
	-isystem $(NEWLIB)/x86_64-elf/include -Ikernel -Iuserland -mno-omit-leaf-frame-pointer -fasynchronous-unwind-tables \
	-D_POSIX_TIMERS=1 -D_POSIX_MONOTONIC_CLOCK=200112L -MMD -MP
# -u _user_strerror: the glue's messages for errnos newlib's strerror lacks
# (userland/libc/strerror.c), taken before newlib's empty hook can be.
USER_LDFLAGS := -Wl,--build-id=none -Wl,-z,noexecstack -Wl,--eh-frame-hdr -L$(NEWLIB)/x86_64-elf/lib \
	-Wl,-T,userland/own-code.ld -Wl,--undefined=_user_strerror

# librscfl (per-activity accounting) goes into the same archive: every program may use it.
USER_LIBC_C := $(sort $(wildcard userland/libc/*.c userland/librscfl/*.c))
USER_LIBC_OBJS := $(patsubst %,$(USER_DIR)/obj/%.o,$(USER_LIBC_C))
USER_CRT0 := $(USER_DIR)/libc/crt0.o
USER_LIBC := $(USER_DIR)/libc/libmicroscope.a

# Every directory under userland/ with a .c file, except the libraries, is a program.
USER_PROGRAMS := $(filter-out libc librscfl include rootfs,$(notdir $(patsubst %/,%,$(sort \
	$(dir $(wildcard userland/*/*.c))))))
USER_BINS := $(patsubst %,$(USER_DIR)/bin/%,$(USER_PROGRAMS))
INITRD := $(BUILD)/initrd.cpio
INITRD_FILES := $(shell find userland/rootfs tests/fuzz/corpus -type f 2>/dev/null)

.PHONY: newlib userland initrd
newlib: $(NEWLIB_STAMP)
userland: $(USER_BINS)
initrd: $(INITRD)

# Built only when missing: the tarball is a fixed Debian package.
$(NEWLIB_STAMP): | $(STAMP_DEPS)
	$(say) NEWLIB $(NEWLIB)
	$(Q)sh tools/mknewlib.sh $(NEWLIB)

$(USER_DIR)/obj/%.c.o: %.c | $(NEWLIB_STAMP)
	$(say) UCC $<
	$(Q)mkdir -p $(dir $@)
	$(Q)$(USER_CC) $(USER_CFLAGS) -c $< -o $@

$(USER_CRT0): userland/libc/crt0.S | $(NEWLIB_STAMP)
	$(say) UAS $<
	$(Q)mkdir -p $(dir $@)
	$(Q)$(USER_CC) -c $< -o $@

$(USER_LIBC): $(USER_LIBC_OBJS)
	$(say) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

# $(1) = program name: its objects and its link.
define user-program
$(USER_DIR)/bin/$(1): $(patsubst %,$(USER_DIR)/obj/%.o,$(sort $(wildcard userland/$(1)/*.c))) \
		$(USER_CRT0) $(USER_LIBC) userland/own-code.ld
	$$(say) ULD $$@
	$$(Q)mkdir -p $$(dir $$@)
	$$(Q)$$(USER_CC) $$(USER_LDFLAGS) -o $$@ $$(USER_CRT0) \
		$$(filter %.c.o,$$^) -Wl,--start-group $$(USER_PROGRAM_LIBS) $$(USER_LIBC) -lc -lm -lgcc \
		-Wl,--end-group
endef
$(foreach p,$(USER_PROGRAMS),$(eval $(call user-program,$(p))))

# httpd-slow: httpd built deliberately broken (HTTPD_BROKEN_REFILL: it reads a
# file 16 bytes per system call), the anomaly docs/USCOPE.md's case study finds.
HTTPD_SLOW_OBJS := $(patsubst %,$(USER_DIR)/obj/userland/httpd-slow/%.o,$(notdir \
	$(sort $(wildcard userland/httpd/*.c))))
USER_BINS += $(USER_DIR)/bin/httpd-slow
$(USER_DIR)/obj/userland/httpd-slow/%.c.o: userland/httpd/%.c | $(NEWLIB_STAMP)
	$(say) UCC $<
	$(Q)mkdir -p $(dir $@)
	$(Q)$(USER_CC) $(USER_CFLAGS) -DHTTPD_BROKEN_REFILL -c $< -o $@
$(USER_DIR)/bin/httpd-slow: $(HTTPD_SLOW_OBJS) $(USER_CRT0) $(USER_LIBC) userland/own-code.ld
	$(say) ULD $@
	$(Q)mkdir -p $(dir $@)
	$(Q)$(USER_CC) $(USER_LDFLAGS) -o $@ $(USER_CRT0) $(filter %.c.o,$^) -Wl,--start-group \
		$(USER_LIBC) -lc -lm -lgcc -Wl,--end-group

# The monitor links aspects with the kernel's own portable object library
# (linker/object/object.h), built for user space as $(LINKER_OBJECT_LIB).
include linker/object/object.mk
$(USER_DIR)/bin/monitor: $(LINKER_OBJECT_LIB)
$(USER_DIR)/bin/monitor: USER_PROGRAM_LIBS := $(LINKER_OBJECT_LIB)
$(LINKER_OBJECT_USER_OBJS) $(USER_DIR)/obj/userland/monitor/%: USER_CFLAGS += -I. -Iaspects/include

# A program without frame pointers: the trace map unwinds it by its CFI.
$(USER_DIR)/obj/userland/unwind/%: USER_CFLAGS += -fomit-frame-pointer -momit-leaf-frame-pointer

# Aspect objects built on the host go into /aspects too: make run ASPECTS="my.o ...".
# The list is kept in a file that changes only when the list does, so the
# initrd is rebuilt when objects are added or dropped.
EXTRA_ASPECTS_LIST := $(BUILD)/extra-aspects.list
$(shell mkdir -p $(BUILD) && (echo "$(ASPECTS)" | cmp -s - $(EXTRA_ASPECTS_LIST) || \
	echo "$(ASPECTS)" > $(EXTRA_ASPECTS_LIST)))

$(INITRD): $(USER_BINS) $(INITRD_FILES) tools/mkinitrd.sh $(EXTRA_ASPECTS_LIST) $(ASPECTS)
	$(say) CPIO $@
	$(Q)EXTRA_ASPECTS="$(ASPECTS)" EXPLORER_WWW="$(EXPLORER_WWW)" FUZZ_CORPUS=tests/fuzz/corpus \
		sh tools/mkinitrd.sh $@ $(USER_DIR)/root userland/rootfs \
		$(USER_BINS)

-include $(shell find $(USER_DIR)/obj -name '*.d' 2>/dev/null)
