# The analyzer, one source for two builds: /bin/analyze in the OS (the
# program rules of userland.mk) and $(BUILD)/host/analyze on the host (here).
# Both include the system-call names generated from the one table of numbers.

ANALYZE_SRCS := $(sort $(wildcard userland/analyze/*.c))
ANALYZE_GENERATED := $(BUILD)/analyze/syscall_names.h
ANALYZE_HOST := $(BUILD)/host/analyze

$(ANALYZE_GENERATED): kernel/uapi/syscall_numbers.h userland/analyze/analyze.mk
	$(say) GEN $@
	$(Q)mkdir -p $(dir $@)
	$(Q){ echo '/* Generated from kernel/uapi/syscall_numbers.h: names by number. */'; \
	  echo 'static const char *const syscall_names[] = {'; \
	  awk '/^#define __NR_/ { printf "\t[%s] = \"%s\",\n", $$3, substr($$2, 6) }' $<; \
	  echo '};'; } > $@

$(patsubst %,$(USER_DIR)/obj/%.o,$(ANALYZE_SRCS)): $(ANALYZE_GENERATED)
$(patsubst %,$(USER_DIR)/obj/%.o,$(ANALYZE_SRCS)): USER_CFLAGS += -I$(BUILD)/analyze

$(ANALYZE_HOST): $(ANALYZE_SRCS) $(wildcard userland/analyze/*.h) $(ANALYZE_GENERATED)
	$(say) HOSTCC $@
	$(Q)mkdir -p $(dir $@)
	$(Q)cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -Ikernel -I$(BUILD)/analyze \
		-o $@ $(ANALYZE_SRCS)
