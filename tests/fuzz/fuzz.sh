#!/bin/sh
# Builds the linker fuzzer with clang's libFuzzer (Debian: clang,
# libclang-rt-14-dev) and runs it for the given number of seconds, seeded with
# the build's aspect objects and tests/fuzz/corpus/elf/ (inputs that once
# crashed it).  Crashes land in <build>/fuzz/ as crash-*; the corpus grows in
# <build>/fuzz/corpus and is kept between runs.
# Usage: tests/fuzz/fuzz.sh <build dir> <seconds>
set -eu
build=$1
seconds=$2
out=$build/fuzz
mkdir -p "$out/corpus" "$out/seeds"
sources="tests/fuzz/linker_fuzz.c $(echo linker/object/*.c)"
clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Wall -Wextra -Werror -Wno-unused-parameter -I. -Ikernel -Iaspects/include \
	$sources -o "$out/linker_fuzz"
cp "$build"/aspects/*.o tests/fuzz/corpus/elf/* "$out/seeds/"
cd "$out"
exec ./linker_fuzz -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 \
	-print_final_stats=1 corpus seeds
