#!/usr/bin/env python3
"""How fast tools/mscope takes a trace in and converts it, on this host.

Why: the OS's sustained records/s to the host is bounded by the host's end as
well as by the virtio console; this measures the host's end alone.  A fake
guest streams a synthetic trace of N events (the kernel's layout, 2 CPUs,
packets of 1024 events) as fast as the socket takes it; `mscope record`
captures it, `mscope convert --chrome` converts it.  Prints events per CPU
second of each (mscope's own user + system time: steadier than wall-clock
time on a shared host) and the wall-clock time.  Never asserts on time.

    python3 tests/trace/bench_mscope.py [N]
    python3 tests/trace/bench_mscope.py N --write DIR   # only the trace, into DIR
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import ctf_fixture  # noqa: E402
import fake_guest  # noqa: E402
from fake_guest import FRAME_METADATA, FRAME_PACKET, frame  # noqa: E402

MSCOPE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tools", "mscope")
PACKET_EVENTS = 1024


def synthetic_packets(n):
    """n events, half per CPU: threads switching, each reading a file."""
    per_cpu = {}
    for cpu in (0, 1):
        events, ticks = [], 1000
        for i in range(n // 2):
            tid = 10 + cpu * 100 + (i // 64) % 4
            kind = i % 4
            if kind == 0:
                ev = ("sched_switch", dict(prev_tid=tid - 1, next_tid=tid, prev_state=0,
                                           next_pid=tid))
            elif kind == 1:
                ev = ("vfs.read:entry", dict(arg0=i))
            elif kind == 2:
                ev = ("vfs.lookup:call", dict(arg0=i, result=0, duration=50))
            else:
                ev = ("vfs.read:exit", dict(result=i))
            ticks += 250
            events.append((ticks, *ev))
        per_cpu[cpu] = [ctf_fixture.packet_bytes(cpu, events[i:i + PACKET_EVENTS], 0)
                        for i in range(0, len(events), PACKET_EVENTS)]
    return per_cpu


def timed(cmd):
    """(completed process, wall seconds, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return proc, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def write_trace(directory, n):
    """The synthetic trace of n events as a CTF directory (for measuring
    `mscope convert` alone, with /usr/bin/time -v say)."""
    os.makedirs(directory)
    with open(os.path.join(directory, "metadata"), "w") as f:
        f.write(ctf_fixture.tsdl())
    for cpu, plist in synthetic_packets(n).items():
        with open(os.path.join(directory, f"stream_{cpu}"), "wb") as f:
            f.write(b"".join(plist))
    return directory


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    n -= n % 8
    if len(sys.argv) == 4 and sys.argv[2] == "--write":
        print(write_trace(sys.argv[3], n))
        return
    packets = synthetic_packets(n)
    stream = frame(FRAME_METADATA, ctf_fixture.tsdl().encode()) + b"".join(
        frame(FRAME_PACKET, p, stream=cpu) for cpu, plist in packets.items() for p in plist)

    def script(conn):
        conn.read_line()
        conn.send(fake_guest.text("tracing\n") + stream)
        conn.read_line()
        conn.send(fake_guest.end(n, n, 0))

    with tempfile.TemporaryDirectory() as tmp:
        guest = fake_guest.FakeGuest(script, timeout=600)
        out_dir = os.path.join(tmp, "trace")
        rec, record_wall, record_cpu = timed(
            [MSCOPE, "record", "--attach", guest.path, "-d", "0", "-o", out_dir])
        guest.finish()
        conv, convert_wall, convert_cpu = timed(
            [MSCOPE, "convert", out_dir, "--chrome", os.path.join(tmp, "t.json")])
    if rec.returncode or conv.returncode:
        sys.exit(rec.stdout + rec.stderr + conv.stderr)
    print(f"{n} events, {len(stream) / 1048576:.1f} MiB streamed")
    print(f"mscope record (frames to files, then counted by babeltrace2): {record_cpu:.2f} CPU s "
          f"({record_wall:.2f} s wall), {n / record_cpu:,.0f} events per CPU second")
    print(f"mscope convert --chrome: {convert_cpu:.2f} CPU s ({convert_wall:.2f} s wall), "
          f"{n / convert_cpu:,.0f} events per CPU second")


if __name__ == "__main__":
    main()
