#!/usr/bin/env python3
"""Writes docs/SYSCALLS.md, the table of system calls, from the sources.

The kernel's table is the .syscalls section: every SYSCALL_DEFINEn(name, type,
arg, ...) in the kernel's sources (kernel/, drivers/, modules/, linker/) puts
one entry there, numbered by __NR_<name> from the header that defines the
numbers (found by its `#define __NR_` lines, wherever it lives).  This reads
both and writes one table: number, name, arguments, file.

A number whose line in the numbers header carries the marker `-ENOSYS` in its
comment is listed on purpose with no handler (Linux's numbering, kept whole
for user programs; the kernel answers -ENOSYS).  Every other number must have
a handler, every handler a number, and no two the same.

    tools/mksyscalls.py            write docs/SYSCALLS.md
    tools/mksyscalls.py --check    fail when it is stale or the table is inconsistent

Exit status: 0, or 1 with one line per problem on stderr.
"""
import argparse
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join("docs", "SYSCALLS.md")
KERNEL_DIRS = ["kernel", "drivers", "modules", "linker"]  # the Makefile's KERNEL_DIRS
SKIP_DIRS = {".git", "build"}
UNIMPLEMENTED_MARK = "-ENOSYS"

NUMBER_LINE = re.compile(r"^\s*#\s*define\s+__NR_(\w+)\s+(\d+)\s*(?:/\*(.*?)\*/)?")
DEFINE_START = re.compile(r"\bSYSCALL_DEFINE([0-6])\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def source_files(suffix, directories):
    """Paths (relative to ROOT, '/'-separated, sorted) of the files ending
    in suffix under directories."""
    found = []
    for directory in directories:
        for parent, subdirs, files in os.walk(os.path.join(ROOT, directory)):
            subdirs[:] = [d for d in subdirs if d not in SKIP_DIRS]
            for name in files:
                if name.endswith(suffix):
                    path = os.path.relpath(os.path.join(parent, name), ROOT)
                    found.append(path.replace(os.sep, "/"))
    return sorted(found)


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        return f.read()


def find_numbers_header():
    """The one header that defines __NR_ numbers; exits when there is not
    exactly one."""
    headers = [path for path in source_files(".h", ["."])
               if re.search(r"^\s*#\s*define\s+__NR_\w+\s+\d+", read(path), re.M)]
    if len(headers) != 1:
        sys.exit(f"mksyscalls: expected one header defining __NR_ numbers, found {headers}")
    return headers[0]


def parse_numbers(path):
    """[(number, name, unimplemented)] in the header's order."""
    numbers = []
    for line in read(path).splitlines():
        m = NUMBER_LINE.match(line)
        if m:
            comment = m.group(3) or ""
            numbers.append((int(m.group(2)), m.group(1), UNIMPLEMENTED_MARK in comment))
    return numbers


def macro_arguments(text, start):
    """The comma-separated arguments of the call whose '(' is at text[start]."""
    depth, words, word = 0, [], ""
    for c in text[start:]:
        if c == "(":
            depth += 1
            if depth == 1:
                continue
        elif c == ")":
            depth -= 1
            if depth == 0:
                return words + [word.strip()]
        elif c == "," and depth == 1:
            words.append(word.strip())
            word = ""
            continue
        word += c
    return None


def parameter(type_text, name):
    type_text = " ".join(type_text.split())
    return f"{type_text}{name}" if type_text.endswith("*") else f"{type_text} {name}"


def parse_handlers():
    """[(name, arguments text, file)] of every SYSCALL_DEFINEn, and problems."""
    handlers, problems = [], []
    for path in source_files(".c", KERNEL_DIRS):
        if "/tests/" in "/" + path:
            continue  # not in the kernel (the Makefile leaves tests/ out)
        text = COMMENT.sub(" ", read(path))
        for m in DEFINE_START.finditer(text):
            words = macro_arguments(text, m.end() - 1)
            count = int(m.group(1))
            if not words or len(words) != 1 + 2 * count:
                problems.append(f"{path}: cannot read SYSCALL_DEFINE{count} at offset {m.start()}")
                continue
            arguments = [parameter(words[1 + 2 * i], words[2 + 2 * i]) for i in range(count)]
            handlers.append((words[0], ", ".join(arguments) or "void", path))
    return handlers, problems


def check_table(numbers, handlers, numbers_path):
    """The problems of the table itself: each a line of text."""
    problems = []
    by_name, by_number = {}, {}
    for number, name, _ in numbers:
        if name in by_name:
            problems.append(f"{numbers_path}: __NR_{name} is defined twice")
        if number in by_number:
            problems.append(f"{numbers_path}: __NR_{name} and __NR_{by_number[number]} "
                            f"are both {number}")
        by_name[name], by_number[number] = number, name
    defined = {}
    for name, _, path in handlers:
        if name in defined:
            problems.append(f"{path}: {name} has a handler in {defined[name]} already")
        defined[name] = path
        if name not in by_name:
            problems.append(f"{path}: {name} has a handler but no __NR_{name} in {numbers_path}")
    for number, name, unimplemented in numbers:
        if unimplemented and name in defined:
            problems.append(f"{numbers_path}: __NR_{name} is marked {UNIMPLEMENTED_MARK} "
                            f"but {defined[name]} defines it: drop the mark")
        elif not unimplemented and name not in defined:
            problems.append(f"{numbers_path}: __NR_{name} ({number}) has no handler: define it "
                            f"or mark it /* {UNIMPLEMENTED_MARK} */")
    return problems


def render(numbers, handlers, numbers_path):
    number_of = {name: number for number, name, _ in numbers}
    rows = sorted((number_of.get(name, -1), name, arguments, path)
                  for name, arguments, path in handlers)
    missing = sorted((number, name) for number, name, unimplemented in numbers if unimplemented)
    out = [
        "# System calls",
        "",
        "<!-- Written by tools/mksyscalls.py: do not edit; run it again after changing a",
        "system call.  `make test` (the host group) fails while this file is stale. -->",
        "",
        "The kernel's table of system calls, one row per `SYSCALL_DEFINEn` handler, by number.",
        f"Numbers come from `{numbers_path}` (Linux x86_64's, and microScope's own from 512);",
        "each handler `sys_<name>` is also the join point `sys.<name>`.  Arguments arrive in",
        "rdi, rsi, rdx, r10, r8, r9; pointers are user addresses.  The running kernel prints",
        "the same table with the console command `syscalls`.",
        "",
        f"{len(rows)} system calls.",
        "",
        "| number | name | arguments | file |",
        "|-------:|------|-----------|------|",
    ]
    for number, name, arguments, path in rows:
        shown = str(number) if number >= 0 else "?"
        out.append(f"| {shown} | `{name}` | `{arguments}` | [{path}](../{path}) |")
    out += [
        "",
        "## Numbers with no handler",
        "",
        f"`{numbers_path}` names these numbers too, on purpose: they are Linux's, kept so that",
        "the numbering stays whole for user programs (newlib's glue may call them); the kernel",
        f"answers `-ENOSYS`.  Each is marked `{UNIMPLEMENTED_MARK}` there; any other number",
        "without a handler fails the check.",
        "",
        "| number | name |",
        "|-------:|------|",
    ]
    out += [f"| {number} | `{name}` |" for number, name in missing]
    return "\n".join(out) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true",
                   help=f"write nothing; fail when {DOC} is stale or the table is inconsistent")
    args = p.parse_args()
    numbers_path = find_numbers_header()
    numbers = parse_numbers(numbers_path)
    handlers, problems = parse_handlers()
    problems += check_table(numbers, handlers, numbers_path)
    text = render(numbers, handlers, numbers_path)
    doc = os.path.join(ROOT, DOC)
    if args.check:
        current = read(DOC) if os.path.exists(doc) else None
        if current != text:
            problems.append(f"{DOC} is stale: run tools/mksyscalls.py")
    else:
        with open(doc, "w") as f:
            f.write(text)
    for problem in problems:
        print(f"mksyscalls: {problem}", file=sys.stderr)
    if not problems and args.check:
        print(f"mksyscalls: {DOC} is current ({len(handlers)} system calls)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
