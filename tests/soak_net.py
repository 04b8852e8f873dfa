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

With --tap (root) the NIC is a host TAP device in a network namespace of the
run's own (tests/net/tapnet.py) and wrk runs in it, against the guest's own
address: no QEMU user network, whose listen backlog of 1 makes connects wait
for SYN-ACK retransmissions (wrk's 2 s timeouts); figures to soak-tap.md.
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
from tapnet import TapNet  # noqa: E402


def run_slice(url, seconds, close, wrap):
    """url: the server's http://address:port; wrap: runs a command where the
    server is reachable (the TAP namespace, or as it is)."""
    cmd = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--timeout", "2s", "--latency"]
    if close:
        cmd += ["-H", "Connection: close"]
    cmd.append(f"{url}/small.txt")
    proc = subprocess.run(wrap(cmd), capture_output=True, text=True, timeout=seconds + 60)
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
    p.add_argument("--tap", action="store_true",
                   help="a host TAP device instead of QEMU's user network (root)")
    args = p.parse_args()
    os.chdir(ROOT)
    os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
    net, wrap, options = None, (lambda cmd: cmd), {}
    if args.tap:
        net, reason = TapNet.create(count=1)
        if not net:
            print(f"soak: --tap: {reason}")
            return 1
        wrap = net.wrap
        options = {"tap": net.tap(0), "wrap": net.wrap, "append": net.microscope_append(0)}
        forwards, url = {}, f"http://{net.guest_address(0)}"
    else:
        port = httpcheck.free_port()
        forwards, url = {port: 80}, f"http://127.0.0.1:{port}"
    name = "soak-tap" if args.tap else "soak"
    log = os.path.join(args.build, "bench", name + ".log")
    guest = Guest(args.build, args.nic, forwards, log, smp=args.smp,
                  timeout=args.slices * (args.seconds + 30) + 300, **options)
    lines = [f"wrk -t2 -c16, slices of {args.seconds} s, {args.nic}, {args.smp} CPUs, "
             "QEMU TCG q35, 256 MiB, no -icount, "
             + ("a host TAP device" if args.tap else "QEMU's user network"), "",
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
            r = run_slice(url, args.seconds, close, wrap)
            fmt = lambda v: "-" if v is None else f"{v:.2f}"
            lines.append(f"| {number} | {'new each' if close else 'keep-alive'} | {r['rps']:.0f} | "
                         f"{fmt(r.get('p50'))} | {fmt(r.get('p99'))} | {r['errors']} | "
                         f"{r['timeouts']} |")
            print(lines[-1], flush=True)
        print(guest.run("kcmd net"), flush=True)
    finally:
        guest.stop()
        if net:
            net.destroy()
    print("\n".join([""] + lines))
    with open(os.path.join(args.build, "bench", name + ".md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
