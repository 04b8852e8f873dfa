#!/usr/bin/env python3
"""Where httpd's per-request instructions go, function by function: the guest
of tests/bench_acct_events.py (QEMU -icount shift=0, `httpd -q -a -p 82` and
`httpd -q -p 81`) with QEMU's execution log (-d exec,nochain) switched on
through its monitor for --requests requests to one server only, after the
warm-up.  Each translation block executed is attributed to the function it
starts in, with its size counted from the ELF's disassembly (up to the first
branch, call, return or instruction that ends a block; a `rep` string
instruction is one instruction per iteration, as -icount counts it).  The
kernel's and httpd's functions are printed as instructions per request.

    python3 tests/bench_acct_profile.py --build build --requests 300 --server on
    python3 tests/bench_acct_profile.py --build build --requests 300 --server off

The sizes are a static estimate (QEMU also ends a block at a page boundary or
an interrupt), a few per cent above the -icount busy time: use the difference
of two runs, on and off, or of two trees.  Figures, never assertions.
"""
import argparse
import bisect
import collections
import os
import re
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import bench_acct_events as events  # noqa: E402

KERNEL_BASE = 0xffff800000000000
BLOCK_ENDS = ("j", "call", "ret", "iret", "sysret", "syscall", "rdtsc", "sti", "cli", "hlt",
              "wrmsr", "popf", "lret", "int", "ud2", "rep")
PORT_IO = {"in", "out", "ins", "outs", "insb", "insw", "insl", "outsb", "outsw", "outsl"}
EXEC = re.compile(rb"/([0-9a-f]{8,16})/")


def record(args, log, monitor):
    """Boots the guest with the log off, runs the requests with it on."""
    popen = subprocess.Popen

    def with_log(cmd, **kwargs):
        cmd = cmd + ["--", "-monitor", f"unix:{monitor},server,nowait", "-d", "nochain",
                     "-dfilter", "0x0..0x700000000000,0xffff800000000000..0xffffffffffffffff",
                     "-D", log]
        return popen(cmd, **kwargs)

    events.subprocess.Popen = with_log
    try:
        guest, off, on = events.boot(args, "acct-profile.log")
    finally:
        events.subprocess.Popen = popen
    try:
        port = on if args.server == "on" else off
        control = socket.socket(socket.AF_UNIX)
        control.connect(monitor)
        time.sleep(0.3)
        control.recv(4096)
        events.requests(port, events.WARM_UP)  # right before: httpd -a stops its token when idle
        control.sendall(b"log exec,nochain\n")
        time.sleep(0.1)
        events.requests(port, args.requests)
        control.sendall(b"log nochain\n")
        time.sleep(0.5)
    finally:
        guest.stop()


class Image:
    """An ELF's functions and instructions, for block sizes and names."""

    def __init__(self, path):
        text = subprocess.run(["nm", "-n", path], capture_output=True, text=True).stdout
        self.symbols = sorted((int(p[0], 16), p[2]) for p in (line.split() for line in
                              text.splitlines()) if len(p) == 3 and p[1] in "tTwW")
        self.starts = [a for a, _ in self.symbols]
        text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                              capture_output=True, text=True).stdout
        self.insns = [(int(m.group(1), 16), m.group(2)) for m in
                      (re.match(r"^\s*([0-9a-f]+):\s+(\S+)", line) for line in text.splitlines())
                      if m]
        self.addresses = [a for a, _ in self.insns]

    def block_size(self, pc):
        i = bisect.bisect_left(self.addresses, pc)
        if i >= len(self.addresses) or self.addresses[i] != pc:
            return None
        if self.insns[i][1].startswith("rep"):
            return 1
        size = 0
        while i < len(self.insns) and size < 512:
            size += 1
            if self.insns[i][1].startswith(BLOCK_ENDS) or self.insns[i][1] in PORT_IO:
                break
            i += 1
        return size

    def function(self, pc):
        j = bisect.bisect_right(self.starts, pc) - 1
        return self.symbols[j][1] if j >= 0 else "?"


def attribute(log, kernel, user):
    blocks = collections.Counter()
    with open(log, "rb") as f:
        for line in f:
            m = EXEC.search(line) if line.startswith(b"Trace") else None
            if m:
                blocks[int(m.group(1), 16)] += 1
    totals = {"kernel": collections.Counter(), "httpd": collections.Counter()}
    for pc, count in blocks.items():
        image, side = (kernel, "kernel") if pc >= KERNEL_BASE else (user, "httpd")
        size = image.block_size(pc)
        totals[side][image.function(pc) if size else "(not in the image)"] += (size or 1) * count
    return totals


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--requests", type=int, default=300)
    p.add_argument("--server", choices=["on", "off"], default="on")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--disk", action="store_true",
                   help="serve from an ext2 disk, as bench_acct_events.py --disk")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = os.path.join(tmp, "exec.log")
        record(args, log, os.path.join(tmp, "monitor.sock"))
        totals = attribute(log, Image(os.path.join(args.build, "microscope.elf")),
                           Image(os.path.join(args.build, "user", "bin", "httpd")))
    for side, counts in totals.items():
        print(f"{side}: {sum(counts.values()) / args.requests:.0f} instructions per request "
              f"(accounting {args.server}, {args.requests} requests)")
        for name, count in counts.most_common(args.top):
            print(f"  {count / args.requests:9.1f}  {name}")


if __name__ == "__main__":
    main()
