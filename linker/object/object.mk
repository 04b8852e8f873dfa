# The portable aspect-object library (linker/object/object.h): every .c here
# is one phase of reading an aspect object, and the whole directory is the
# library.  The kernel links it (through the Makefile's source list), the
# monitor process links it as $(LINKER_OBJECT_LIB), and the host tests and the
# fuzzer compile linker/object/*.c: one list, the directory.

LINKER_OBJECT_SRCS := $(sort $(wildcard linker/object/*.c))
LINKER_OBJECT_LIB := $(USER_DIR)/lib/libobject.a
LINKER_OBJECT_USER_OBJS := $(patsubst %,$(USER_DIR)/obj/%.o,$(LINKER_OBJECT_SRCS))

$(LINKER_OBJECT_LIB): $(LINKER_OBJECT_USER_OBJS)
	$(say) AR $@
	$(Q)mkdir -p $(dir $@) && rm -f $@ && ar rcs $@ $^
