#!/usr/bin/env python3
"""Where httpd's per-request accounting goes, in guest instructions: one
microScope guest under QEMU -icount shift=0 (guest time counts instructions,
so busy time is instructions) runs `httpd -q -a -p 82` (accounting on) and
`httpd -q -p 81` (off); --requests requests one after the other on one
keep-alive connection to each (the accounted server first; then, once the
kernel has unlinked the accounting aspect, the other), reading `kcmd cpus`
(busy ms) and `kcmd aspect stats rscfl` (events: the join point events its
native advice saw, every thread's) in the guest's shell before and after
each.  Per request: instructions busy off and on, join point events, and the
instructions added per event.

With --disk, the files come from an ext2 disk instead of the initrd: the
host's mke2fs makes an image holding www/, attached as virtio-blk, and both
servers run with -r /disk/www, so each request reads /small.txt through the
page cache (a hit, after the warm-up).

With --counts, a second boot attaches the built-in count advice to the join
points of the request's path and prints how often each ran per request on the
accounted server (every thread; the kcmd processes that attach and read the
counts add about one kmalloc and kfree per request at 1000 requests).

    python3 tests/bench_acct_events.py --build build --requests 3000 --counts
    python3 tests/bench_acct_events.py --build build --requests 1000 --disk

Figures, never assertions; docs/PERFORMANCE.md has them.
"""
import argparse
import os
import re
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
import guest as guest_module  # noqa: E402
import httpcheck  # noqa: E402
import netsuite  # noqa: E402

OFF_PORT, ON_PORT = 81, 82
WARM_UP = 20
BUSY = re.compile(r"cpu 0: busy (\d+) ms")
ASPECT = re.compile(r"rscfl\s+(\S+)\s+\S+\s+events (\d+) drops \d+ time (\d+) us")
COUNTED = re.compile(r"^\s+(\S+\.\S+)\s+(\d+)\s", re.M)
COUNT_PATTERNS = ["mm.*", "vfs.*", "net.*", "nic.*", "irq.*", "sched.*", "pipe.*", "trap.*",
                  "sys.clock_gettime", "sys.poll", "sys.recvfrom", "sys.sendto", "sys.open",
                  "sys.read", "sys.close"]


class IcountGuest(guest_module.Guest):
    """guest.Guest with QEMU under -icount shift=0."""

    def __init__(self, build, forwards, log, timeout, disk=None):
        self.log, self.text, self.lock = log, "", threading.Condition()
        self.forwards = dict(forwards)
        cmd = [sys.executable, guest_module.QEMU_PY, "--kernel",
               os.path.join(build, "microscope.elf"), "--initrd",
               os.path.join(build, "initrd.cpio"), "--append", "", "--console-stdio",
               "--timeout", str(timeout), "--nic", "e1000", "--memory", "256M", "--icount"]
        for host_port, guest_port in forwards.items():
            cmd += ["--hostfwd", f"tcp:127.0.0.1:{host_port}-:{guest_port}"]
        if disk:
            cmd += ["--disk", disk]
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()


def requests(port, count):
    """count GETs of /small.txt on one keep-alive connection, each checked."""
    with httpcheck.connect(port, 60) as s:
        reader = httpcheck.Reader(s)
        for _ in range(count):
            s.sendall(b"GET /small.txt HTTP/1.1\r\nHost: x\r\n\r\n")
            response = httpcheck.read_response(reader)
            if not response or response[0] != 200:
                sys.exit(f"bench_acct_events.py: bad response {response}")


def sample(guest):
    """(busy ms, aspect state, join point events, us inside advice)."""
    busy = BUSY.search(guest.run("kcmd cpus", timeout=60) or "")
    aspect = ASPECT.search(guest.run("kcmd aspect stats rscfl", timeout=60) or "")
    if not busy or not aspect:
        sys.exit("bench_acct_events.py: no kcmd cpus or aspect stats output")
    return int(busy.group(1)), aspect.group(1), int(aspect.group(2)), int(aspect.group(3))


def wait_unlinked(guest):
    for _ in range(30):
        if sample(guest)[1] != "live":
            return
        time.sleep(1)
    sys.exit("bench_acct_events.py: the accounting aspect stayed linked")


def boot(args, name):
    off, on = httpcheck.free_port(), httpcheck.free_port()
    os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
    log = os.path.join(args.build, "bench", name)
    disk = netsuite.make_www_disk(args.build, log) if args.disk else None
    if args.disk and not disk:
        sys.exit("bench_acct_events.py: mke2fs failed")
    guest = IcountGuest(args.build, {off: OFF_PORT, on: ON_PORT}, log, timeout=1800, disk=disk)
    if not guest.boot(timeout=600):
        guest.stop()
        sys.exit(f"bench_acct_events.py: the guest did not boot; see {guest.log}")
    root = " -r /disk/www" if disk else ""
    guest.run(f"httpd -q -p {OFF_PORT}{root} &")
    guest.run(f"httpd -q -a -p {ON_PORT}{root} &")
    time.sleep(2)
    return guest, off, on


def measure_costs(args):
    guest, off, on = boot(args, "acct-events-disk.log" if args.disk else "acct-events.log")
    try:
        result = {}
        for mode, port in (("on", on), ("off", off)):
            if mode == "off":
                wait_unlinked(guest)
            requests(port, WARM_UP)  # the accounted one links the aspect here
            before = sample(guest)
            requests(port, args.requests)
            after = sample(guest)
            result[mode] = [(a - b) / args.requests for a, b in
                            ((after[0], before[0]), (after[2], before[2]), (after[3], before[3]))]
    finally:
        guest.stop()
    (off_ms, _, _), (on_ms, events, _) = result["off"], result["on"]
    source = "an ext2 disk (page cache)" if args.disk else "the initrd"
    print(f"per request, {args.requests} requests of /small.txt from {source}, "
          "guest instructions (QEMU -icount shift=0):")
    print(f"  busy, accounting off      {off_ms * 1e6:10.0f}")
    print(f"  busy, accounting on       {on_ms * 1e6:10.0f}")
    print(f"  added                     {(on_ms - off_ms) * 1e6:10.0f}  ({on_ms / off_ms:.3f}x)")
    print(f"  join point events         {events:10.1f}")
    print(f"  added per event           {(on_ms - off_ms) * 1e6 / events:10.0f}")


def measure_counts(args):
    guest, off, on = boot(args, "acct-counts.log")
    try:
        requests(on, WARM_UP)
        for pattern in COUNT_PATTERNS:
            guest.run(f"kcmd jp attach {pattern} count", timeout=60)
        requests(on, args.count_requests)
        text = guest.run("kcmd jp stats", timeout=120) or ""
    finally:
        guest.stop()
    print(f"join point events per request on the accounted server, all threads "
          f"({args.count_requests} requests):")
    for name, count in COUNTED.findall(text):
        if int(count):
            print(f"  {name:24} {int(count) / args.count_requests:6.2f}")


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--requests", type=int, default=3000)
    p.add_argument("--counts", action="store_true", help="also count events per join point")
    p.add_argument("--disk", action="store_true",
                   help="serve the files from an ext2 disk through the page cache")
    p.add_argument("--count-requests", type=int, default=1000)
    args = p.parse_args()
    measure_costs(args)
    if args.counts:
        measure_counts(args)


if __name__ == "__main__":
    main()
