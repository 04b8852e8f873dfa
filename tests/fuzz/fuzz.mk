# make fuzz: the runtime linker's libFuzzer target for FUZZ_SECONDS (600 by
# default; `make test` runs it for 20 s), after FUZZ_CALLS random system calls
# from unprivileged processes in the OS (fuzz-syscalls: userland/sysfuzz, 1 M
# by default; `make test` makes 30000).  See tests/fuzz/README.md.
FUZZ_SECONDS ?= 600
FUZZ_CALLS ?= 1000000

.PHONY: fuzz fuzz-syscalls
fuzz: deps aspects fuzz-syscalls
	$(Q)sh tests/fuzz/fuzz.sh $(BUILD) $(FUZZ_SECONDS)

fuzz-syscalls: deps all
	$(Q)$(PYTHON) tests/fuzz/sysfuzz.py --build $(BUILD) --calls $(FUZZ_CALLS)
