#!/usr/bin/env python3
"""Network benchmark (`make bench-net`): HTTP requests per second and median /
99th-percentile latency for a small file (/small.txt, 22 bytes), measured
from the host with wrk through QEMU's user network (hostfwd on 127.0.0.1).

In the same run and the same QEMU configuration (q35, same memory, CPUs, CPU
model and NIC model) it measures:
  microScope  e1000 and virtio-net, each in interrupt and in polling mode
              (switched at run time: `kcmd nic mode <nic> irq|poll`), with
              keep-alive and with a new connection per request;
  Linux       Debian's linux-image-amd64 kernel with a busybox-static
              initramfs running `busybox httpd` (tools/linux-guest/), on each
              NIC.  busybox httpd closes every connection after one response,
              so its keep-alive figure is really one request per connection.
and prints the ratio microScope / Linux.  Plain TCG, no -icount: the packets
come from the host in real time, and -icount would tie guest time to
instructions and distort every timeout and rate.  Figures are from an
emulated machine sharing the host's cores with wrk: compare within one run.
Results go to stdout and <build>/bench/net.md.
"""
import argparse
import os
import re
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
import httpcheck  # noqa: E402
from guest import Guest  # noqa: E402

NICS = ["e1000", "virtio"]
NIC_NAMES = {"e1000": "e1000.0", "virtio": "virtio-net.0"}
BENCH_PORT = 81  # a quiet httpd (-q) beside the logging one on port 80
LINUX_APPEND = "console=ttyS0 quiet"
LINUX_READY = re.compile(r"linux-guest: httpd ready")


def measure(port, seconds, connections, close):
    """Warm-up, then one wrk run; returns the parsed figures."""
    header = ["-H", "Connection: close"] if close else []
    httpcheck.run_wrk(port, "/small.txt", 2, connections)
    output, r = run_wrk(port, seconds, connections, header)
    r["output"] = output
    return r


def run_wrk(port, seconds, connections, header):
    import subprocess
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s", "--latency"]
    cmd += header + [f"http://127.0.0.1:{port}/small.txt"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    output = proc.stdout + proc.stderr
    return output, httpcheck.parse_wrk(output)


def bench_microscope(args, nic, rows):
    port, quiet_port = httpcheck.free_port(), httpcheck.free_port()
    log = os.path.join(args.build, "bench", f"net-microscope-{nic}.log")
    guest = Guest(args.build, nic, {port: 80, quiet_port: BENCH_PORT}, log,
                  timeout=args.seconds * 12 + 240, memory=args.memory, smp=args.smp)
    try:
        httpd = guest.boot()
        if not httpd or not httpd.startswith("serving"):
            print(f"microScope/{nic}: no web server ({httpd}); see {log}")
            return
        guest.run(f"httpd -q -p {BENCH_PORT} &")
        time.sleep(1)
        for mode in ("irq", "poll"):
            answer = guest.run(f"kcmd nic mode {NIC_NAMES[nic]} {mode}") or ""
            label = mode if "kcmd:" not in answer and "unknown" not in answer else "default"
            for close in (False, True):
                r = measure(quiet_port, args.seconds, args.connections, close)
                rows.append(("microScope", nic, label, "close" if close else "keep-alive", r))
                report_row(rows[-1])
            if label == "default":
                break  # no mode switch in this kernel: one mode only
    finally:
        guest.stop()


def bench_linux(args, nic, rows):
    guest_dir = os.path.join(args.build, "linux-guest")
    port = httpcheck.free_port()
    log = os.path.join(args.build, "bench", f"net-linux-{nic}.log")
    guest = Guest(args.build, nic, {port: 80}, log, timeout=args.seconds * 6 + 240,
                  memory=args.memory, smp=args.smp, kernel=os.path.join(guest_dir, "vmlinuz"),
                  initrd=os.path.join(guest_dir, "initramfs.cpio.gz"), append=LINUX_APPEND)
    try:
        if not guest.wait_for(LINUX_READY, 120):
            print(f"linux/{nic}: did not come up; see {log}")
            return
        for close in (False, True):
            r = measure(port, args.seconds, args.connections, close)
            rows.append(("Linux", nic, "NAPI", "close" if close else "keep-alive", r))
            report_row(rows[-1])
    finally:
        guest.stop()


def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def report_row(row):
    system, nic, mode, connection, r = row
    print(f"{system:10} {nic:6} {mode:7} {connection:10} {r['rps']:9.0f} req/s  "
          f"p50 {fmt(r.get('p50'))} ms  p99 {fmt(r.get('p99'))} ms  errors {r['errors']}",
          flush=True)


def table(rows, args):
    lines = [f"wrk -t2 -c{args.connections} -d{args.seconds}s, /small.txt (22 bytes), QEMU TCG "
             f"q35, {args.memory}, {args.smp} CPU(s), -cpu max, no -icount", "",
             "| system | NIC | mode | connection | requests/s | p50 ms | p99 ms | errors |"
             " / Linux (same NIC, connection) |",
             "|---|---|---|---|---:|---:|---:|---:|---:|"]
    linux = {(nic, conn): r for system, nic, _, conn, r in rows if system == "Linux"}
    for system, nic, mode, conn, r in rows:
        base = linux.get((nic, conn))
        ratio = f"{r['rps'] / base['rps']:.2f}" if base and base["rps"] else "-"
        lines.append(f"| {system} | {nic} | {mode} | {conn} | {r['rps']:.0f} | {fmt(r.get('p50'))}"
                     f" | {fmt(r.get('p99'))} | {r['errors']} | {ratio} |")
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--memory", default="256M")
    p.add_argument("--smp", type=int, default=1)
    p.add_argument("--nic", action="append", choices=NICS, help="only this NIC (repeatable)")
    args = p.parse_args()
    os.chdir(ROOT)
    os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
    rows = []
    for nic in args.nic or NICS:
        bench_microscope(args, nic, rows)
        bench_linux(args, nic, rows)
    lines = table(rows, args)
    print("\n".join([""] + lines))
    with open(os.path.join(args.build, "bench", "net.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0 if rows else 1


if __name__ == "__main__":
    sys.exit(main())
