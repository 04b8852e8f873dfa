#!/usr/bin/env python3
"""Measures boot time as a person sees it: wall-clock time from starting QEMU
to the first byte on the serial console, to the banner line, and to the end of
boot (the kernel says it is up), for the fast `-kernel` path (under SeaBIOS
and under QEMU's minimal qboot) and the GRUB ISO under SeaBIOS and under OVMF
(UEFI), median of several runs.

With --http it measures instead, for each NIC (e1000, virtio-net), the time
from starting QEMU (-kernel with the initial RAM disk, QEMU's user network,
httpd's port 80 forwarded to 127.0.0.1) to the first good response: an HTTP
200 with /small.txt's exact body, asked for every 5 ms from the host.  Both
with a static address on the command line (ip=static:...) and with DHCP,
under SeaBIOS and under qboot (--firmware), rounds interleaved; every boot is
listed, so a delay that comes only sometimes shows.  With
--compare OTHER_BUILD the two trees' boots alternate, round by round (for a
before/after on a busy host).

These are host wall-clock figures under TCG emulation: they compare boot paths
on one machine, they are not claims about real hardware.
"""
import argparse
import os
import select
import socket
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


STATIC_IP = "ip=static:10.0.2.15/24:10.0.2.2"
NIC_DEVICES = {"e1000": "e1000", "virtio": "virtio-net-pci"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_ok(port, expected):
    """One GET of /small.txt; True when it came back 200 with the body."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
    except OSError:
        return False
    return data.startswith(b"HTTP/1.1 200") and data.endswith(b"\r\n\r\n" + expected)


# QEMU's firmwares for -kernel: SeaBIOS (the default) and qboot (minimal: it
# starts the kernel sooner and leaves the PCI BARs to it).
FIRMWARE = {"seabios": [], "qboot": ["-bios", "/usr/share/qemu/qboot.rom"]}


def first_response(build, nic, append, timeout, firmware="seabios"):
    """Milliseconds from starting QEMU to the first good response, or None."""
    port = free_port()
    expected = open(os.path.join(build, "user", "root", "www", "small.txt"), "rb").read()
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-machine", "q35", "-m", "256M", "-cpu", "max",
           "-display", "none", "-monitor", "none", "-serial", "null", "-no-reboot"] + \
        FIRMWARE[firmware] + [
           "-kernel", os.path.join(build, "microscope.elf"),
           "-initrd", os.path.join(build, "initrd.cpio"), "-append", append,
           "-netdev", f"user,id=n0,hostfwd=tcp:127.0.0.1:{port}-:80",
           "-device", f"{NIC_DEVICES[nic]},netdev=n0"]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        while time.monotonic() - start < timeout:
            if http_ok(port, expected):
                return (time.monotonic() - start) * 1000
            time.sleep(0.005)
        return None
    finally:
        proc.kill()
        proc.wait()


def measure_http(build, runs, timeout, firmwares):
    """Every (NIC, address, firmware) once a round, runs rounds: a host whose
    load changes moves them alike."""
    print(f"host wall-clock milliseconds from starting QEMU (TCG, -kernel) to the first HTTP 200 "
          f"with the right body; {runs} rounds, interleaved\n")
    cases = [(nic, label, append, firmware) for nic in NIC_DEVICES
             for label, append in (("static (" + STATIC_IP + ")", STATIC_IP), ("DHCP", ""))
             for firmware in firmwares]
    samples = {case: [] for case in cases}
    for _ in range(runs):
        for case in cases:
            nic, _, append, firmware = case
            samples[case].append(first_response(build, nic, append, timeout, firmware))
    print("| NIC | address | firmware | median | each boot |")
    print("|---|---|---|---:|---|")
    for case in cases:
        nic, label, _, firmware = case
        done = [x for x in samples[case] if x is not None]
        median = f"{statistics.median(done):.0f}" if done else "-"
        each = ", ".join("timeout" if x is None else f"{x:.0f}" for x in samples[case])
        print(f"| {nic} | {label} | {firmware} | {median} | {each} |", flush=True)


def compare_http(builds, runs, timeout):
    """The same measurement for two trees, interleaved: each round boots every
    (NIC, address) with the first tree, then with the second, so a host whose
    load changes during the run moves both alike."""
    print(f"host wall-clock milliseconds from starting QEMU to the first HTTP 200, {runs} rounds, "
          f"interleaved: {builds[0]} then {builds[1]}\n")
    samples = {}
    for _ in range(runs):
        for nic in NIC_DEVICES:
            for label, append in (("static", STATIC_IP), ("DHCP", "")):
                for build in builds:
                    samples.setdefault((nic, label, build), []).append(
                        first_response(build, nic, append, timeout))
    print(f"| NIC | address | {builds[0]}: median | {builds[1]}: median | {builds[1]}: each boot |")
    print("|---|---|---:|---:|---|")
    for nic in NIC_DEVICES:
        for label in ("static", "DHCP"):
            cells = []
            for build in builds:
                done = [x for x in samples[(nic, label, build)] if x is not None]
                cells.append(f"{statistics.median(done):.0f}" if done else "-")
            each = ", ".join("timeout" if x is None else f"{x:.0f}"
                             for x in samples[(nic, label, builds[1])])
            print(f"| {nic} | {label} | {cells[0]} | {cells[1]} | {each} |", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--build", default="build")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--timeout", type=float, default=30)
    p.add_argument("--http", action="store_true", help="launch to first HTTP 200 instead")
    p.add_argument("--firmware", choices=["seabios", "qboot", "both"], default="both",
                   help="with --http: the firmware QEMU starts the kernel with (default both)")
    p.add_argument("--compare", metavar="OTHER_BUILD",
                   help="with --http: OTHER_BUILD's tree first, then --build's, interleaved")
    args = p.parse_args()
    if args.http and args.compare:
        compare_http([args.compare, args.build], args.runs, args.timeout)
        return
    if args.http:
        firmwares = ["seabios", "qboot"] if args.firmware == "both" else [args.firmware]
        measure_http(args.build, args.runs, args.timeout, firmwares)
        return
    kernel = os.path.join(args.build, "microscope.elf")
    iso = os.path.join(args.build, "microscope.iso")
    ovmf = "/usr/share/ovmf/OVMF.fd"
    print(f"median of {args.runs} boots, host wall-clock milliseconds from starting QEMU (TCG)\n")
    print("| boot path | first serial byte | banner | boot complete |")
    print("|---|---:|---:|---:|")
    measure("QEMU -kernel (multiboot1)", ["-kernel", kernel], args.runs, args.timeout)
    measure("QEMU -kernel (multiboot1), qboot", FIRMWARE["qboot"] + ["-kernel", kernel],
            args.runs, args.timeout)
    measure("ISO, SeaBIOS + GRUB (multiboot2)", ["-cdrom", iso], args.runs, args.timeout)
    measure("ISO, OVMF (UEFI) + GRUB (multiboot2)", ["-bios", ovmf, "-cdrom", iso], args.runs,
            args.timeout)


if __name__ == "__main__":
    main()
