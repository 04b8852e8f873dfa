#!/usr/bin/env python3
"""Turns `nm -n -S --defined-only` output of the first kernel link into the
assembly for the .ksyms section of the second link (see kernel/panic/ksyms.h).
With no input it writes an empty table, which the first link uses."""
import sys


def functions(lines):
    for line in lines:
        parts = line.split()
        if len(parts) == 4:
            address, size, kind, name = parts
        elif len(parts) == 3:
            address, kind, name = parts
            size = "0"
        else:
            continue
        if kind in "tTwW":
            yield int(address, 16), int(size, 16), name


def main():
    symbols = sorted(set(functions(sys.stdin))) if len(sys.argv) < 2 else []
    out = ['\t.section .ksyms, "a"', "\t.balign 8", "\t.global ksym_table", "ksym_table:",
           f"\t.quad {len(symbols)}"]
    strings, offset = [], 0
    for address, size, name in symbols:
        out.append(f"\t.quad {address:#x}\n\t.long {offset}, {min(size, 0xffffffff)}")
        strings.append(name)
        offset += len(name) + 1
    out += [f'\t.asciz "{name}"' for name in strings]
    print("\n".join(out))


if __name__ == "__main__":
    main()
