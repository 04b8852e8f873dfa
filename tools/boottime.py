#!/usr/bin/env python3
"""Measures boot time as a person sees it: wall-clock time from starting QEMU
to the first byte on the serial console, to the banner line, and to the end of
boot (the kernel says it is up), for the fast `-kernel` path and the GRUB ISO
under SeaBIOS and under OVMF (UEFI), median of several runs.

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
READY = (b"microScope is up", b"kshell>")


def one_boot(media, timeout):
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-machine", "q35", "-m", "256M", "-cpu", "max",
           "-display", "none", "-monitor", "none", "-serial", "stdio", "-no-reboot",
           "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"] + media
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    first = banner = ready = None
    seen = b""
    try:
        while time.monotonic() - start < timeout and ready is None:
            readable, _, _ = select.select([proc.stdout], [], [], 0.05)
            if not readable:
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            now = time.monotonic() - start
            first = first if first is not None else now
            seen += chunk
            if banner is None and BANNER in seen:
                banner = now
            if any(marker in seen for marker in READY):
                ready = now
    finally:
        proc.kill()
        proc.wait()
    return first, banner, ready


def measure(name, media, runs, timeout):
    samples = []
    for _ in range(runs):
        sample = one_boot(media, timeout)
        if None in sample:
            print(f"| {name} | did not finish booting within {timeout} s | | |")
            return None
        samples.append(sample)
    first, banner, ready = (statistics.median(column) * 1000 for column in zip(*samples))
    print(f"| {name} | {first:.0f} | {banner:.0f} | {ready:.0f} |")
    return first, banner, ready


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default="build")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--timeout", type=float, default=30)
    args = p.parse_args()
    kernel = os.path.join(args.build, "microscope.elf")
    iso = os.path.join(args.build, "microscope.iso")
    ovmf = "/usr/share/ovmf/OVMF.fd"
    print(f"median of {args.runs} boots, host wall-clock milliseconds from starting QEMU (TCG)\n")
    print("| boot path | first serial byte | banner | boot complete |")
    print("|---|---:|---:|---:|")
    measure("QEMU -kernel (multiboot1)", ["-kernel", kernel], args.runs, args.timeout)
    measure("ISO, SeaBIOS + GRUB (multiboot2)", ["-cdrom", iso], args.runs, args.timeout)
    measure("ISO, OVMF (UEFI) + GRUB (multiboot2)", ["-bios", ovmf, "-cdrom", iso], args.runs,
            args.timeout)


if __name__ == "__main__":
    main()
