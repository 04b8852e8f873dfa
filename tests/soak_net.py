#!/usr/bin/env python3
"""Connection-churn soak (`make soak`, about 11 minutes): microScope with an
e1000 on QEMU's user network, 2 CPUs, the shipped httpd on port 80 (its
access log to /tmp/httpd.log, as `make run` has it), loaded from the host by
wrk with 16 connections in alternating slices: keep-alive, then a new
connection for every request ("Connection: close"), then keep-alive, ...
Prints requests/s, p50/p99, socket errors and timeouts per slice, then the
kernel's network memory and TCP counters, so that anything growing with
closed connections (TIME_WAIT pcbs, sockets, pools) shows.  Not part of
`make test`: it runs for minutes and judges nothing by itself; the figures
go to stdout and <build>/bench/soak.md.  Plain TCG, no -icount.
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
import httpcheck  # noqa: E402
from guest import Guest  # noqa: E402


def run_slice(port, seconds, close):
    cmd = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--timeout", "2s", "--latency"]
    if close:
        cmd += ["-H", "Connection: close"]
    cmd.append(f"http://127.0.0.1:{port}/small.txt")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
    output = proc.stdout + proc.stderr
    r = httpcheck.parse_wrk(output)
    m = re.search(r"timeout (\d+)", output)
    r["timeouts"] = int(m.group(1)) if m else 0
    return r


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--slices", type=int, default=10)
    p.add_argument("--seconds", type=int, default=60, help="length of one slice")
    p.add_argument("--smp", type=int, default=2)
    p.add_argument("--nic", default="e1000", choices=["e1000", "virtio"])
    args = p.parse_args()
    os.chdir(ROOT)
    os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
    port = httpcheck.free_port()
    log = os.path.join(args.build, "bench", "soak.log")
    guest = Guest(args.build, args.nic, {port: 80}, log, smp=args.smp,
                  timeout=args.slices * (args.seconds + 30) + 300)
    lines = [f"wrk -t2 -c16, slices of {args.seconds} s, {args.nic}, {args.smp} CPUs, "
             "QEMU TCG q35, 256 MiB, no -icount", "",
             "| slice | connections | requests/s | p50 ms | p99 ms | socket errors | timeouts |",
             "|---:|---|---:|---:|---:|---:|---:|"]
    try:
        httpd = guest.boot()
        if not httpd or not httpd.startswith("serving"):
            print(f"soak: no web server ({httpd}); see {log}")
            return 1
        print(guest.run("kcmd net"), flush=True)
        for number in range(1, args.slices + 1):
            close = number % 2 == 0
            r = run_slice(port, args.seconds, close)
            fmt = lambda v: "-" if v is None else f"{v:.2f}"
            lines.append(f"| {number} | {'new each' if close else 'keep-alive'} | {r['rps']:.0f} | "
                         f"{fmt(r.get('p50'))} | {fmt(r.get('p99'))} | {r['errors']} | "
                         f"{r['timeouts']} |")
            print(lines[-1], flush=True)
        print(guest.run("kcmd net"), flush=True)
    finally:
        guest.stop()
    print("\n".join([""] + lines))
    with open(os.path.join(args.build, "bench", "soak.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
