#!/usr/bin/env python3
"""Network benchmark (`make bench-net`): HTTP requests per second and
p50 / p90 / p99 latency, measured from the host with wrk through QEMU's user
network (hostfwd on 127.0.0.1), microScope against a Linux guest.

Cases (wrk -t2, 16 connections, 10 s each unless told otherwise):
  keep-alive  /small.txt (22 bytes), one connection many requests
  close       /small.txt with "Connection: close": a new connection each
  1mib        /1mib.txt (1 MiB), keep-alive
Systems, in the same QEMU configuration (q35, same memory, CPUs, CPU model
and NIC model), booted side by side for one NIC at a time:
  microScope  httpd -q on port 81, the NIC in its default mode;
  Linux       Debian's linux-image-amd64 kernel with Debian's nginx in an
              initramfs (tools/linux-guest/), sendfile on, serving the same
              files.
Rounds are interleaved (round 1: every case on each system, then round 2,
...), so that a slow spell of the shared host falls on both systems; the
figures are the medians over rounds, and the ratio is microScope / Linux.
Plain TCG, no -icount: the packets come from the host in real time.  Results
go to stdout and <build>/bench/net.md.

Other scripts of `make bench-net` (the phased workload) run after this one
with the same --build argument and write their own <build>/bench/*.md.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
import httpcheck  # noqa: E402
from guest import Guest  # noqa: E402

NICS = ["e1000", "virtio"]
BENCH_PORT = 81  # a quiet httpd (-q) beside the logging one on port 80
LINUX_APPEND = "console=ttyS0 quiet"
LINUX_READY = re.compile(r"linux-guest: httpd ready")
CASES = {  # name: (path, extra wrk arguments)
    "keep-alive": ("/small.txt", []),
    "close": ("/small.txt", ["-H", "Connection: close"]),
    "1mib": ("/1mib.txt", []),
}
PERCENTILES = (("50%", "p50"), ("90%", "p90"), ("99%", "p99"))


def parse_latency(output):
    """p50/p90/p99 in ms from wrk --latency."""
    result = {}
    for label, key in PERCENTILES:
        m = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
        if m:
            result[key] = float(m.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]
    return result


def run_wrk(port, case, seconds, connections):
    path, extra = CASES[case]
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s", "--latency"]
    cmd += extra + [f"http://127.0.0.1:{port}{path}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    output = proc.stdout + proc.stderr
    r = httpcheck.parse_wrk(output)
    r.update(parse_latency(output))
    return r


def boot_microscope(args, nic):
    port, quiet_port = httpcheck.free_port(), httpcheck.free_port()
    log = os.path.join(args.build, "bench", f"net-microscope-{nic}.log")
    guest = Guest(args.build, nic, {port: 80, quiet_port: BENCH_PORT}, log,
                  timeout=args.seconds * 40 * args.rounds + 600, memory=args.memory,
                  smp=args.smp)
    httpd = guest.boot()
    if not httpd or not httpd.startswith("serving"):
        print(f"microScope/{nic}: no web server ({httpd}); see {log}")
        guest.stop()
        return None, None
    guest.run(f"httpd -q -p {BENCH_PORT} &")
    return guest, quiet_port


def boot_linux(args, nic):
    guest_dir = os.path.join(args.build, "linux-guest")
    port = httpcheck.free_port()
    log = os.path.join(args.build, "bench", f"net-linux-{nic}.log")
    guest = Guest(args.build, nic, {port: 80}, log,
                  timeout=args.seconds * 40 * args.rounds + 600, memory=args.memory,
                  smp=args.smp, kernel=os.path.join(guest_dir, "vmlinuz"),
                  initrd=os.path.join(guest_dir, "initramfs.cpio.gz"), append=LINUX_APPEND)
    if not guest.wait_for(LINUX_READY, 180):
        print(f"linux/{nic}: did not come up; see {log}")
        guest.stop()
        return None, None
    return guest, port


def bench_nic(args, nic, results):
    """Both systems up at once, the cases interleaved round by round."""
    systems = {}
    try:
        for name, boot in (("microScope", boot_microscope), ("Linux", boot_linux)):
            guest, port = boot(args, nic)
            if guest:
                systems[name] = (guest, port)
        for system, (_, port) in systems.items():  # warm-up: ARP, caches, first accept
            for case in args.case:
                run_wrk(port, case, 2, args.connections)
        for round_number in range(1, args.rounds + 1):
            for case in args.case:
                for system, (_, port) in systems.items():
                    r = run_wrk(port, case, args.seconds, args.connections)
                    results.setdefault((system, nic, case), []).append(r)
                    print(f"round {round_number}  {system:10} {nic:6} {case:10} "
                          f"{r['rps']:8.0f} req/s  p50 {fmt(r.get('p50'))}  "
                          f"p90 {fmt(r.get('p90'))}  p99 {fmt(r.get('p99'))} ms  "
                          f"errors {r['errors']}", flush=True)
    finally:
        for guest, _ in systems.values():
            guest.stop()


def fmt(value, digits=2):
    return "-" if value is None else f"{value:.{digits}f}"


def median(runs, key):
    values = [r[key] for r in runs if r.get(key) is not None]
    return statistics.median(values) if values else None


def table(results, args):
    lines = [f"wrk -t2 -c{args.connections} -d{args.seconds}s, {args.rounds} interleaved rounds "
             f"(medians), QEMU TCG q35, {args.memory}, {args.smp} CPU(s), -cpu max, no -icount",
             "",
             "| NIC | case | system | requests/s | p50 ms | p90 ms | p99 ms | errors |"
             " microScope / Linux (req/s) |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    for nic in args.nic:
        for case in args.case:
            base = median(results.get(("Linux", nic, case), []), "rps")
            for system in ("microScope", "Linux"):
                runs = results.get((system, nic, case))
                if not runs:
                    continue
                rps = median(runs, "rps")
                ratio = f"{rps / base:.2f}" if system == "microScope" and base else ""
                errors = sum(r["errors"] for r in runs)
                lines.append(f"| {nic} | {case} | {system} | {rps:.0f} | "
                             f"{fmt(median(runs, 'p50'))} | {fmt(median(runs, 'p90'))} | "
                             f"{fmt(median(runs, 'p99'))} | {errors} | {ratio} |")
    return lines


BUSY = re.compile(r"cpu 0: busy (\d+) ms")
INSTRUCTION_CONFIGS = (  # (label, NIC, kernel command line)
    ("e1000, device segmentation", "e1000", ""),
    ("e1000, net_segmentation=off", "e1000", "net_segmentation=off"),
    ("virtio-net, segmented by its driver (no offload offered)", "virtio", ""),
    ("virtio-net, net_segmentation=off", "virtio", "net_segmentation=off"),
)


def busy_ms(guest):
    m = BUSY.search(guest.run("kcmd cpus") or "")
    return int(m.group(1)) if m else None


def keep_alive_requests(port, count, expected):
    """count GETs of /small.txt on one connection; False if one went wrong."""
    with httpcheck.connect(port) as sock:
        reader = httpcheck.Reader(sock)
        for _ in range(count):
            sock.sendall(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            r = httpcheck.read_response(reader)
            if not r or r[2] != expected:
                return False
    return True


def new_connection_requests(port, count, expected):
    """count GETs of /small.txt, each on a connection of its own ("Connection:
    close"); False if one went wrong."""
    for _ in range(count):
        r = httpcheck.get(port, "/small.txt")
        if not r or r[2] != expected:
            return False
    return True


def instructions_per_request(args, nic, append):
    """Guest instructions (busy time under -icount shift=0) per 1 MiB
    response (args.downloads sequential downloads, a connection each), per
    keep-alive request for /small.txt (args.requests on one connection) and
    per request for /small.txt on a new connection (args.connects of them)."""
    port = httpcheck.free_port()
    log = os.path.join(args.build, "bench", f"net-icount-{nic}.log")
    guest = Guest(args.build, nic, {port: 80}, log, timeout=900, append=append, icount=True)
    www = os.path.join(args.build, "user", "root", "www")
    big = open(os.path.join(www, "1mib.txt"), "rb").read()
    small = open(os.path.join(www, "small.txt"), "rb").read()
    try:
        if not (guest.boot() or "").startswith("serving"):
            return None
        for _ in range(2):  # warm-up: ARP, page cache, first accept
            httpcheck.get(port, "/1mib.txt")
        before = busy_ms(guest)
        for _ in range(args.downloads):
            r = httpcheck.get(port, "/1mib.txt")
            if not r or r[2] != big:
                return None
        middle = busy_ms(guest)
        if not keep_alive_requests(port, args.requests, small):
            return None
        after = busy_ms(guest)
        if not new_connection_requests(port, args.connects, small):
            return None
        last = busy_ms(guest)
        if None in (before, middle, after, last):
            return None
        return ((middle - before) * 1e6 / args.downloads, (after - middle) * 1e6 / args.requests,
                (last - after) * 1e6 / args.connects)
    finally:
        guest.stop()


def instruction_table(args):
    lines = [f"guest instructions (busy time under -icount shift=0, the shipped httpd with its "
             f"access log): per 1 MiB response over {args.downloads} sequential downloads, per "
             f"keep-alive request for /small.txt over {args.requests} on one connection, and per "
             f"request for /small.txt on a new connection over {args.connects}", "",
             "| configuration | per 1 MiB response | per byte | per small keep-alive request | "
             "per small request, new connection |",
             "|---|---:|---:|---:|---:|"]
    for label, nic, append in INSTRUCTION_CONFIGS:
        figures = instructions_per_request(args, nic, append)
        if figures is None:
            text = "- | - | - | -"
        else:
            big, small, connect = figures
            text = (f"{big / 1e6:.1f} M | {big / 1048576:.1f} | {small / 1e3:.0f} k | "
                    f"{connect / 1e3:.0f} k")
        lines.append(f"| {label} | {text} |")
        print(lines[-1], flush=True)
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--memory", default="256M")
    p.add_argument("--smp", type=int, default=1)
    p.add_argument("--nic", action="append", choices=NICS, help="only this NIC (repeatable)")
    p.add_argument("--case", action="append", choices=list(CASES), help="only this case")
    p.add_argument("--instructions", action="store_true",
                   help="instead: guest instructions per 1 MiB response under -icount")
    p.add_argument("--downloads", type=int, default=16)
    p.add_argument("--requests", type=int, default=500)
    p.add_argument("--connects", type=int, default=200,
                   help="with --instructions: requests on new connections")
    args = p.parse_args()
    if args.instructions:
        os.chdir(ROOT)
        os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
        lines = instruction_table(args)
        with open(os.path.join(args.build, "bench", "net-instructions.md"), "w") as f:
            f.write("\n".join(lines) + "\n")
        return 0
    args.nic = args.nic or NICS
    args.case = args.case or list(CASES)
    os.chdir(ROOT)
    os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
    results = {}
    for nic in args.nic:
        bench_nic(args, nic, results)
    lines = table(results, args)
    print("\n".join([""] + lines))
    with open(os.path.join(args.build, "bench", "net.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
