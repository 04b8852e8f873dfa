#!/usr/bin/env python3
"""Storage reads, microScope against a Linux guest (`make bench-storage`).

One ext2 image from the host's mke2fs holding a 6 MiB file, attached the same
way to both (tools/qemu.py --disk: a raw image on virtio-blk-pci or NVMe,
same CPU model and memory), read by the same program, readbench
(userland/readbench/readbench.c): 4 KiB read()s in order and at 512
pseudo-random pages, cold (nothing cached) and cached, three passes a boot.

  microScope  the shipped kernel with readbench as init, the disk at /disk
  Linux       Debian's linux-image-amd64 (tools/linux-guest/), the disk
              mounted read-only with ext4's ext2 driver, timed by the HPET
              (clocksource=hpet: its TSC calibration under a busy TCG host
              is not to be trusted); as it boots, and again with
              mitigations=off

The boots are interleaved round by round (microScope, Linux, Linux without
mitigations on virtio-blk, then the same on NVMe, then again), each on a
fresh copy of the image, and the figures are medians over the rounds: plain
TCG times follow the host, which is busy, so only ratios from one run mean
much; each round's ratios are printed too (their spread is the host's), and
every pass goes to <build>/bench/storage-tcg.json.  These MiB/s are the
throughput measure (the cold targets are judged on them).  Then storage_bench
(bench.py) gives microScope's instructions per read and per page-cache hit
under -icount.
Under -icount shift=0 both are also booted once more, which gives
instructions per read (see icount_table).
Results go to stdout and <build>/bench/storage.md.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402

ROOT = bench.ROOT
FILE_BYTES = 6 << 20
CASES = ("seq-cold", "seq-cached", "random-cold", "random-cached")
TARGETS = {"seq-cold": 1.0, "random-cold": 1.0, "seq-cached": 2.0, "random-cached": 2.0}
READS = re.compile(r"readbench: (\S+) reads (\d+) bytes (\d+) ns (\d+)")
MEMORY = "512M"
TIMEOUT = 600


def make_image(out_dir):
    """A 64 MiB ext2 image holding /bench.bin, made once per run."""
    root = os.path.join(out_dir, "storage-root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    with open(os.path.join(root, "bench.bin"), "wb") as f:
        f.write(bytes((i * 7 + i // 4096) & 0xff for i in range(FILE_BYTES)))
    image = os.path.join(out_dir, "storage.img")
    subprocess.run(["/sbin/mke2fs", "-q", "-F", "-t", "ext2", "-b", "4096", "-I", "128", "-O",
                    "^dir_index", "-d", root, image, "64M"], check=True, capture_output=True)
    return image


def boot(system, build, image, log, icount=False, disk_device="virtio"):
    """One boot of system on a fresh copy of image, attached as disk_device
    (virtio or nvme): {case: [MiB/s per pass]}, or with icount {case:
    [instructions per read per pass]}."""
    disk = log + ".img"
    shutil.copyfile(image, disk)
    if system == "microScope":
        kernel = ["--kernel", os.path.join(build, "microscope.elf"),
                  "--initrd", os.path.join(build, "initrd.cpio"),
                  "--append", "init=/bin/readbench exit=qemu"]
    else:
        guest = os.path.join(build, "linux-guest")
        append = "console=ttyS0 quiet readbench clocksource=hpet" + (
            " mitigations=off" if "off" in system else "") + (
            " nvme" if disk_device == "nvme" else "")
        kernel = ["--kernel", os.path.join(guest, "vmlinuz"),
                  "--initrd", os.path.join(guest, "initramfs.cpio.gz"), "--append", append]
    cmd = [sys.executable, bench.QEMU_PY] + kernel + [
        "--memory", MEMORY, "--disk", disk, "--disk-device", disk_device, "--log", log,
        "--timeout", str(TIMEOUT)] + (["--icount"] if icount else [])
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.remove(disk)
    with open(log, errors="replace") as f:
        text = f.read()
    figures = {}
    for m in READS.finditer(text):
        reads, size, ns = int(m.group(2)), int(m.group(3)), int(m.group(4))
        figures.setdefault(m.group(1), []).append(ns / reads if icount else
                                                  size / (1 << 20) / (ns / 1e9))
    if "readbench: done" not in text or set(figures) != set(CASES):
        sys.exit(f"bench_storage.py: {system} did not finish readbench, see {log}")
    return figures


def icount_table(build, out_dir, image, systems, disk_device="virtio"):
    """One boot of each under -icount shift=0: the guests' clocks count
    instructions, so a cached read's time is the instructions it took (a
    rep-string instruction counts once per iteration: a 4 KiB copy is 512 or
    4096 of them); a cold one's also holds the disk's wait."""
    lines = ["", f"Under QEMU -icount shift=0, the disk on {disk_device} (one boot each, median of "
             "its three passes): instructions (guest ns) per 4 KiB read; ratio = Linux / "
             "microScope:", "",
             "| reads | microScope | Linux | ratio | Linux mitigations=off | ratio |",
             "|---|---:|---:|---:|---:|---:|"]
    per_read = {}
    for system in systems:
        log = os.path.join(out_dir, f"storage-{system_name(system)}-{disk_device}-icount.log")
        figures = boot(system, build, image, log, icount=True, disk_device=disk_device)
        per_read[system] = {case: statistics.median(figures[case]) for case in CASES}
    for case in CASES:
        ms, linux, off = (per_read[s][case] for s in systems)
        lines.append(f"| {case} | {ms:.0f} | {linux:.0f} | {linux / ms:.2f} | {off:.0f} | "
                     f"{off / ms:.2f} |")
    lines.append("")
    return lines


def system_name(system):
    return system.split()[0].lower() + ("-nomitigations" if " " in system else "")


def realtime_rounds(build, out_dir, image, systems, disks, rounds):
    """Plain TCG boots, interleaved: each round boots every system on every
    disk in turn.  Returns {disk: {system: [per round: {case: [MiB/s per
    pass]}]}} and the host's 1-minute load average before each boot
    ({disk: {system: [per round]}}); both also go to storage-tcg.json
    after every round."""
    results = {d: {s: [] for s in systems} for d in disks}
    load = {d: {s: [] for s in systems} for d in disks}
    for round_number in range(rounds):
        for disk in disks:
            for system in systems:
                log = os.path.join(out_dir,
                                   f"storage-{system_name(system)}-{disk}-{round_number}.log")
                load[disk][system].append(os.getloadavg()[0])
                results[disk][system].append(boot(system, build, image, log, disk_device=disk))
            print(f"bench_storage.py: round {round_number + 1}/{rounds} on {disk} done",
                  file=sys.stderr, flush=True)
        with open(os.path.join(out_dir, "storage-tcg.json"), "w") as f:
            json.dump({"rounds": round_number + 1, "results": results, "load": load}, f, indent=1)
    return results, load


def realtime_table(results, load, systems, disk, rounds):
    """Medians over every pass of every round, then each round's ratio (the
    median of a boot's three passes against the other's) so the spread of
    the ratio is on the page, not only its median."""
    ms_name, linux, off = systems
    passes = {s: {c: [r for boot in results[s] for r in boot[c]] for c in CASES} for s in systems}
    median = {s: {c: statistics.median(passes[s][c]) for c in CASES} for s in systems}
    lines = ["", f"readbench, 4 KiB read()s of a 6 MiB ext2 file on {disk}, plain TCG, medians of "
             f"{rounds} interleaved rounds of three passes each (MiB/s); ratio = microScope / "
             "Linux:", "",
             "| reads | microScope | Linux | ratio | Linux mitigations=off | ratio | target |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for case in CASES:
        ms, lx, lo = (median[s][case] for s in systems)
        target = TARGETS[case]
        met = "met" if ms / lx >= target else "NOT met"
        lines.append(f"| {case} | {ms:.1f} | {lx:.1f} | {ms / lx:.2f} | {lo:.1f} | "
                     f"{ms / lo:.2f} | >= {target:.1f}x ({met}) |")
    lines += ["", f"Per round on {disk} (each boot's median of its passes; ratio = microScope / "
              "Linux, in brackets / Linux mitigations=off; load = the host's 1-minute load "
              "average before microScope's boot):", "",
              "| round | load | " + " | ".join(CASES) + " |",
              "|---:|---:|" + "---:|" * len(CASES)]
    ratios = {c: ([], []) for c in CASES}
    for r in range(rounds):
        cells = []
        for case in CASES:
            ms, lx, lo = (statistics.median(results[s][r][case]) for s in systems)
            ratios[case][0].append(ms / lx)
            ratios[case][1].append(ms / lo)
            cells.append(f"{ms / lx:.2f} ({ms / lo:.2f})")
        lines.append(f"| {r + 1} | {load[disk][ms_name][r]:.1f} | " + " | ".join(cells) + " |")
    cells = []
    for case in CASES:
        against_linux, against_off = ratios[case]
        median_linux, median_off = (statistics.median(r) for r in (against_linux, against_off))
        cells.append(f"{median_linux:.2f} ({median_off:.2f}), "
                     f"{min(against_linux):.2f}-{max(against_linux):.2f}")
    lines.append("| median, range | | " + " | ".join(cells) + " |")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=12,
                   help="interleaved plain TCG rounds (each boots the three guests on every disk)")
    p.add_argument("--disks", default="virtio,nvme",
                   help="comma-separated disks for the plain TCG rounds (virtio, nvme)")
    p.add_argument("--icount-only", action="store_true",
                   help="only the -icount boots (virtio-blk and NVMe), no plain TCG rounds")
    p.add_argument("--no-icount", action="store_true",
                   help="only the plain TCG rounds: no -icount boots, no storage_bench")
    args = p.parse_args()
    disks = [d for d in args.disks.split(",") if d]
    if not disks or any(d not in ("virtio", "nvme") for d in disks):
        p.error("--disks takes virtio and/or nvme")
    build = os.path.join(ROOT, args.build)
    out_dir = os.path.join(build, "bench")
    os.makedirs(out_dir, exist_ok=True)
    image = make_image(out_dir)
    systems = ("microScope", "Linux", "Linux mitigations=off")
    if args.icount_only:
        lines = ["## Storage under -icount (`tests/bench_storage.py --icount-only`)"]
        for device in ("virtio", "nvme"):
            lines += icount_table(build, out_dir, image, systems, device)
        print("\n".join(lines))
        return
    results, load = realtime_rounds(build, out_dir, image, systems, disks, args.rounds)
    lines = ["## Storage: microScope against Linux (`make bench-storage`)"]
    for disk in disks:
        lines += realtime_table(results[disk], load, systems, disk, args.rounds)
    if not args.no_icount:
        lines += icount_table(build, out_dir, image, systems, "virtio")
        lines += icount_table(build, out_dir, image, systems, "nvme")
        lines += bench.bench_storage(build, out_dir)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    with open(os.path.join(out_dir, "storage.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
