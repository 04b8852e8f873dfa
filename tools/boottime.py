#!/usr/bin/env python3
"""Measures boot time as a person sees it: wall-clock seconds from starting QEMU
to the first byte on the serial console and to the banner line, for the fast
`-kernel` path and the GRUB ISO (SeaBIOS), median of several runs.

These are host wall-clock figures under TCG emulation: they compare boot paths
on one machine, they are not claims about real hardware.
"""
import argparse
import os
import select
import statistics
import subprocess
import time

BANNER = b"microScope "


def one_boot(media, timeout):
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-machine", "q35", "-m", "256M", "-cpu", "max",
           "-display", "none", "-monitor", "none", "-serial", "stdio", "-no-reboot",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"] + media
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    first = banner = None
    seen = b""
    try:
        while time.monotonic() - start < timeout and banner is None:
            ready, _, _ = select.select([proc.stdout], [], [], 0.05)
            if not ready:
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            now = time.monotonic() - start
            first = first if first is not None else now
            seen += chunk
            if BANNER in seen:
                banner = now
    finally:
        proc.kill()
        proc.wait()
    return first, banner


def measure(name, media, runs, timeout):
    firsts, banners = [], []
    for _ in range(runs):
        first, banner = one_boot(media, timeout)
        if first is None or banner is None:
            print(f"{name}: no banner within {timeout}s")
            return None
        firsts.append(first)
        banners.append(banner)
    result = (statistics.median(firsts), statistics.median(banners))
    print(f"{name:<24} first line {result[0] * 1000:7.1f} ms   banner {result[1] * 1000:7.1f} ms"
          f"   (median of {runs})")
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default="build")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--timeout", type=float, default=30)
    args = p.parse_args()
    kernel = os.path.join(args.build, "microscope.elf")
    iso = os.path.join(args.build, "microscope.iso")
    measure("qemu -kernel (multiboot1)", ["-kernel", kernel, "-append", "exit=qemu"], args.runs,
            args.timeout)
    measure("ISO, SeaBIOS + GRUB", ["-cdrom", iso], args.runs, args.timeout)


if __name__ == "__main__":
    main()
