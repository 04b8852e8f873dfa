#!/usr/bin/env python3
"""Network benchmark (`make bench-net`): HTTP requests per second and
p50 / p90 / p99 latency, measured from the host with wrk through QEMU's user
network (hostfwd on 127.0.0.1), microScope against a Linux guest.

With --tap (root; `make bench-net-tap`) each guest's NIC is a host TAP
device in a network namespace of the run's own (tests/net/tapnet.py) and wrk
talks to the guests' addresses through the host kernel's TCP/IP stack: no
user-mode network in QEMU, whose per-connection work and listen backlog of 1
otherwise set the new-connection figures, and virtio-net gets the checksum
and segmentation offloads QEMU offers on a TAP device.  The script runs
itself again inside the namespace and removes it at the end.

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
go to stdout and <build>/bench/net.md (net-tap.md with --tap).

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
from tapnet import TapNet  # noqa: E402

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


def run_wrk(url, case, seconds, connections):
    """url: the server's http://address:port."""
    path, extra = CASES[case]
    cmd = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s", "--latency"]
    cmd += extra + [url + path]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    output = proc.stdout + proc.stderr
    r = httpcheck.parse_wrk(output)
    r.update(parse_latency(output))
    return r


def network(args, index, append, guest_port):
    """Guest arguments for system index (0 microScope, 1 Linux) and the URL
    that reaches guest_port on it: a TAP device and the guest's address with
    --tap, else a forwarded port on 127.0.0.1."""
    if args.tap_net:
        net = args.tap_net
        tap_append = net.microscope_append(index) if index == 0 else net.linux_append(index)
        return ({"tap": net.tap(index), "append": f"{append} {tap_append}".strip()},
                f"http://{net.guest_address(index)}:{guest_port}")
    port = httpcheck.free_port()
    return {"forwards": {port: guest_port}, "append": append}, f"http://127.0.0.1:{port}"


def boot_microscope(args, nic):
    options, url = network(args, 0, "", BENCH_PORT)
    forwards = options.pop("forwards", {})
    if forwards:
        forwards[httpcheck.free_port()] = 80  # the logging httpd, for the shell's checks
    log = os.path.join(args.build, "bench", f"net-microscope-{nic}.log")
    guest = Guest(args.build, nic, forwards, log,
                  timeout=args.seconds * 40 * args.rounds + 600, memory=args.memory,
                  smp=args.smp, **options)
    httpd = guest.boot()
    if not httpd or not httpd.startswith("serving"):
        print(f"microScope/{nic}: no web server ({httpd}); see {log}")
        guest.stop()
        return None, None
    guest.run(f"httpd -q -p {BENCH_PORT} &")
    return guest, url


def boot_linux(args, nic):
    guest_dir = os.path.join(args.build, "linux-guest")
    options, url = network(args, 1, LINUX_APPEND, 80)
    log = os.path.join(args.build, "bench", f"net-linux-{nic}.log")
    guest = Guest(args.build, nic, options.pop("forwards", {}), log,
                  timeout=args.seconds * 40 * args.rounds + 600, memory=args.memory,
                  smp=args.smp, kernel=os.path.join(guest_dir, "vmlinuz"),
                  initrd=os.path.join(guest_dir, "initramfs.cpio.gz"), **options)
    if not guest.wait_for(LINUX_READY, 180):
        print(f"linux/{nic}: did not come up; see {log}")
        guest.stop()
        return None, None
    return guest, url


def bench_nic(args, nic, results):
    """Both systems up at once, the cases interleaved round by round."""
    systems = {}
    try:
        for name, boot in (("microScope", boot_microscope), ("Linux", boot_linux)):
            guest, url = boot(args, nic)
            if guest:
                systems[name] = (guest, url)
        for system, (_, url) in systems.items():  # warm-up: ARP, caches, first accept
            for case in args.case:
                run_wrk(url, case, 2, args.connections)
        for round_number in range(1, args.rounds + 1):
            for case in args.case:
                for system, (_, url) in systems.items():
                    r = run_wrk(url, case, args.seconds, args.connections)
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
             f"(medians), QEMU TCG q35, {args.memory}, {args.smp} CPU(s), -cpu max, no -icount, "
             + ("host TAP devices" if args.tap_net else "QEMU's user network"),
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
    ("virtio-net, segmented by the driver, or by the device where offered (a TAP device)",
     "virtio", ""),
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
    options, url = network(args, 0, append, 80)
    httpcheck.HOST, port = url[len("http://"):].rsplit(":", 1)
    port = int(port)
    log = os.path.join(args.build, "bench", f"net-icount-{nic}.log")
    guest = Guest(args.build, nic, options.pop("forwards", {}), log, timeout=900, icount=True,
                  **options)
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
             f"access log; " + ("host TAP devices" if args.tap_net else "QEMU's user network") +
             f"): per 1 MiB response over {args.downloads} sequential downloads, per "
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


def run_in_namespace():
    """--tap: makes the namespace and its TAP devices, runs this script again
    inside it, and removes it."""
    net, reason = TapNet.create(count=2)
    if not net:
        print(f"bench_net.py --tap: {reason}")
        return 1
    try:
        cmd = [sys.executable, os.path.abspath(__file__)] + sys.argv[1:] + ["--in-netns", net.name]
        return subprocess.run(net.wrap(cmd)).returncode
    finally:
        net.destroy()


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
    p.add_argument("--tap", action="store_true",
                   help="host TAP devices in a namespace of the run's own instead of QEMU's user "
                   "network (root)")
    p.add_argument("--in-netns", help=argparse.SUPPRESS)  # --tap's second run, inside
    args = p.parse_args()
    if args.tap and not args.in_netns:
        return run_in_namespace()
    args.tap_net = TapNet(args.in_netns, 2) if args.in_netns else None
    if args.instructions:
        os.chdir(ROOT)
        os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
        lines = instruction_table(args)
        name = "net-instructions-tap.md" if args.tap_net else "net-instructions.md"
        with open(os.path.join(args.build, "bench", name), "w") as f:
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
    with open(os.path.join(args.build, "bench", "net-tap.md" if args.tap_net else "net.md"),
              "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
