#!/usr/bin/env python3
"""Checks every #include of the tree against the layer table (tools/layers.conf).

Three rules, each failure printed as `file:line: why`:
  1. kernel sources (kernel/ drivers/ modules/ linker/) include headers of
     their own layer or lower ones only, except the listed `allow` lines;
  2. a module's internal header (internal.h, *_internal.h) is included only
     from its own directory;
  3. user space (userland/) includes the kernel only through kernel/uapi/ (and
     the monitor the portable object library, linker/object/object.h), and
     aspects (aspects/) include nothing but the aspect SDK.
Usage: check-layering.py [--root DIR] [--config FILE]; exit status 1 on any
failure.  tests/run.py plants an upward include in a copy of the tree to show
that it fails.
"""
import argparse
import fnmatch
import os
import re
import sys

KERNEL_DIRS = ["kernel", "drivers", "modules", "linker"]
KERNEL_INCLUDE_PATH = ["kernel", "drivers", "modules", "linker", "aspects/include", "."]
USER_ALLOWED = ["userland/", "kernel/uapi/", "aspects/include/"]
MONITOR_ALLOWED = ["linker/object/object.h"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


class Layers:
    def __init__(self, path):
        self.names, self.paths, self.glue, self.tests, self.allowed = [], [], [], [], {}
        with open(path) as f:
            for number, line in enumerate(f, 1):
                words = line.split("#", 1)[0].split() if not line.startswith("allow") else line.split()
                if not words:
                    continue
                if words[0] == "allow":
                    if len(words) < 4:
                        sys.exit(f"{path}:{number}: `allow FILE HEADER REASON`, the reason is missing")
                    self.allowed[(words[1], words[2])] = " ".join(words[3:])
                elif words[0] == "glue":
                    self.glue += words[1:]
                elif words[0] == "tests":
                    self.tests += words[1:]
                else:
                    self.names.append(words[0])
                    self.paths += [(p, len(self.names) - 1) for p in words[1:]]

    def of(self, path):
        """The layer index of a repository path, or None outside the kernel."""
        if any(fnmatch.fnmatch(path, g) for g in self.glue):
            return self.names.index("syscall")
        best = None
        for prefix, layer in self.paths:
            if path == prefix or path.startswith(prefix + "/"):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), layer)
        return best[1] if best else None


def resolve(root, source, header, search):
    for directory in [os.path.dirname(source)] + search:
        candidate = os.path.normpath(os.path.join(directory, header))
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def includes(root, source):
    with open(os.path.join(root, source), errors="replace") as f:
        for number, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield number, m.group(1)


def sources_under(root, directories):
    for top in directories:
        for directory, _, files in os.walk(os.path.join(root, top)):
            for name in sorted(files):
                if name.endswith((".c", ".h", ".S")):
                    yield os.path.relpath(os.path.join(directory, name), root)


def check_internal(source, target):
    if os.path.basename(target) == "internal.h" or target.endswith("_internal.h"):
        if os.path.dirname(target) != os.path.dirname(source):
            return f"includes {target}, another module's internal header"
    return None


def check_kernel(layers, source, target):
    if any(fnmatch.fnmatch(source, t) for t in layers.tests):
        return None
    mine, theirs = layers.of(source), layers.of(target)
    if mine is None or theirs is None or theirs <= mine:
        return None
    if (source, target) in layers.allowed:
        return None
    return (f"includes {target} ({layers.names[theirs]}) from the {layers.names[mine]} "
            "layer below it: call up through a join point or a registered callback, "
            "or list it in tools/layers.conf with the reason")


def check_user(source, target):
    if any(target.startswith(p) for p in USER_ALLOWED):
        return None
    if source.startswith("userland/monitor/") and target in MONITOR_ALLOWED:
        return None
    return f"includes {target}: user space sees the kernel only through kernel/uapi/"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--root", default=here)
    parser.add_argument("--config", default=None)
    args = parser.parse_args()
    layers = Layers(args.config or os.path.join(args.root, "tools", "layers.conf"))
    failures = []
    for source in sources_under(args.root, KERNEL_DIRS):
        for number, header in includes(args.root, source):
            target = resolve(args.root, source, header, KERNEL_INCLUDE_PATH)
            if target:
                why = check_internal(source, target) or check_kernel(layers, source, target)
                if why:
                    failures.append(f"{source}:{number}: {why}")
    for source in sources_under(args.root, ["userland"]):
        for number, header in includes(args.root, source):
            target = resolve(args.root, source, header,
                             ["userland/include", "userland", "kernel", "aspects/include", "."])
            if target and (why := check_user(source, target)):
                failures.append(f"{source}:{number}: {why}")
    for source in sources_under(args.root, ["aspects"]):
        for number, header in includes(args.root, source):
            target = resolve(args.root, source, header, ["aspects/include"])
            if not target or not target.startswith("aspects/include/"):
                failures.append(f"{source}:{number}: includes {header}: an aspect sees only "
                                "the aspect SDK (aspects/include)")
    for failure in failures:
        print(failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
