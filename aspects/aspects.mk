# Aspects: every aspects/*.c is compiled once, with the flags docs/ASPECTS.md
# explains, to a relocatable object $(BUILD)/aspects/<name>.o.  The objects go
# into the initrd under /aspects/ (tools/mkinitrd.sh copies
# $(BUILD)/aspects/*.o) and are embedded in the kernel too, so the linker's
# in-kernel tests have real objects without an initrd (linker_builtin_aspects).

ASPECT_CFLAGS := -std=gnu11 -O2 -ffreestanding -fno-pic -mcmodel=large -mno-red-zone \
	-fno-stack-protector -mgeneral-regs-only -fno-asynchronous-unwind-tables -fno-common \
	-Wall -Wextra -Werror -Wno-unused-parameter -Iaspects/include
ASPECT_SRCS := $(sort $(wildcard aspects/*.c))
ASPECT_OBJS := $(patsubst aspects/%.c,$(BUILD)/aspects/%.o,$(ASPECT_SRCS))
ASPECT_EMBED := $(BUILD)/aspects-embedded.o

.PHONY: aspects
aspects: $(ASPECT_OBJS)

$(BUILD)/aspects/%.o: aspects/%.c aspects/include/microscope/aspect.h $(CC)
	$(say) ASPECT $<
	$(Q)mkdir -p $(dir $@)
	$(Q)$(CC) $(ASPECT_CFLAGS) -c $< -o $@

# A table of { name, start, end } for every object, then the objects' bytes.
$(BUILD)/aspects-embedded.S: $(ASPECT_OBJS) aspects/aspects.mk
	$(Q){ printf '\t.section .rodata.aspects, "a"\n\t.balign 8\n'; \
	  printf '\t.global linker_builtin_aspects\nlinker_builtin_aspects:\n'; \
	  for o in $(notdir $(basename $(ASPECT_OBJS))); do \
	    printf '\t.quad name_%s, start_%s, end_%s\n' $$o $$o $$o; done; \
	  printf '\t.quad 0, 0, 0\n'; \
	  for o in $(notdir $(basename $(ASPECT_OBJS))); do \
	    printf 'name_%s: .asciz "%s"\n\t.balign 16\nstart_%s: .incbin "%s"\nend_%s:\n\t.balign 8\n' \
	      $$o $$o $$o $(BUILD)/aspects/$$o.o $$o; done; \
	  printf '\t.section .note.GNU-stack, "", @progbits\n'; } > $@

$(ASPECT_EMBED): $(BUILD)/aspects-embedded.S $(CC)
	$(Q)$(CC) $(KERNEL_ASFLAGS) -c $< -o $@

KERNEL_SHARED_OBJS += $(ASPECT_EMBED)
$(INITRD): $(ASPECT_OBJS)
