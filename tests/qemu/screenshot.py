#!/usr/bin/env python3
"""Boots microScope in QEMU (TCG), waits until the serial log shows a line,
then saves what the screen shows as a PNG (QEMU monitor `screendump`).

    tests/qemu/screenshot.py --iso build/microscope.iso --uefi --out build/screen.png
    tests/qemu/screenshot.py --kernel build/microscope.elf --append "loglevel=7" --out vga.png

Used to check the framebuffer and VGA consoles by eye; exits 1 if the text
never appeared on serial before the timeout.
"""
import argparse
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

OVMF = ["/usr/share/ovmf/OVMF.fd", "/usr/share/OVMF/OVMF_CODE.fd"]


def ppm_to_png(ppm, png):
    with open(ppm, "rb") as f:
        data = f.read()
    magic, size, maxval, pixels = data.split(b"\n", 3)
    if magic != b"P6" or maxval != b"255":
        raise SystemExit(f"screenshot.py: unexpected PPM header {magic!r} {maxval!r}")
    width, height = map(int, size.split())
    rows = b"".join(b"\0" + pixels[y * width * 3:(y + 1) * width * 3] for y in range(height))

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body +
                struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff))

    with open(png, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" +
                chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def monitor(path, command):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        s.settimeout(5)
        time.sleep(0.3)
        s.recv(65536)
        s.sendall(command.encode() + b"\n")
        time.sleep(1)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--iso")
    p.add_argument("--kernel")
    p.add_argument("--append", default="")
    p.add_argument("--uefi", action="store_true")
    p.add_argument("--machine", default="q35")
    p.add_argument("--memory", default="256M")
    p.add_argument("--wait-for", default="microScope is up", help="serial text to wait for")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--out", default="build/screen.png")
    args = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="microscope-screen-")
    sock, log, ppm = (os.path.join(tmp, n) for n in ("monitor.sock", "serial.log", "screen.ppm"))
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-machine", args.machine, "-m", args.memory,
           "-cpu", "max", "-no-reboot", "-display", "none", "-serial", f"file:{log}",
           "-monitor", f"unix:{sock},server,nowait"]
    if args.uefi:
        cmd += ["-bios", next(f for f in OVMF if os.path.exists(f))]
    if args.iso:
        cmd += ["-cdrom", args.iso, "-boot", "d"]
    else:
        cmd += ["-kernel", args.kernel, "-append", args.append]
    qemu = subprocess.Popen(cmd, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + args.timeout
        while args.wait_for not in open(log, errors="replace").read() if os.path.exists(log) else True:
            if time.monotonic() > deadline or qemu.poll() is not None:
                print(f"screenshot.py: '{args.wait_for}' never appeared; serial log: {log}")
                return 1
            time.sleep(0.5)
        time.sleep(1)
        monitor(sock, f"screendump {ppm}")
        ppm_to_png(ppm, args.out)
        print(f"screenshot.py: {args.out}")
        return 0
    finally:
        qemu.kill()
        qemu.wait()


if __name__ == "__main__":
    sys.exit(main())
