# make fuzz: the runtime linker's libFuzzer target for FUZZ_SECONDS (600 by
# default; `make test` runs it for 20 s).  See tests/fuzz/README.md.
FUZZ_SECONDS ?= 600

.PHONY: fuzz
fuzz: deps aspects
	$(Q)sh tests/fuzz/fuzz.sh $(BUILD) $(FUZZ_SECONDS)
