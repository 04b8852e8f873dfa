#!/usr/bin/env python3
"""Trace-stream benchmark (`make bench-trace`): what recording every join
point on httpd's request path, streamed to the host, costs httpd.

One microScope guest (e1000, plain TCG: the packets come from the host in
real time; 1 CPU) with a virtio console port serves /small.txt with a quiet
httpd, and tests/net/httpcheck.py's paced keep-alive load (16 connections,
each a closed loop of requests, every body checked) runs in turns, --rounds
times: recording off, then recording on (tools/mscope record --attach on the
console port with -p 'net.*' -p 'vfs.*' -p 'sched.*': the kernel's events and
those join points, drained to the host while the load runs), then on, then
off (a drift of the host's load favours neither).  Reported: requests/s
off and on (medians), the median of each round's ratio on / off against the
target 0.97x (goal 0.99x), and the records per second the host received with
what was dropped (every record delivered or counted: mscope checks
recorded = delivered + dropped).  A second part runs under QEMU -icount shift=0 (guest time counts guest
instructions, so the figure does not move with the host's load): in one
guest, `httpget -n REQUESTS` makes requests to httpd over the loopback
interface (client, server, lwIP and the drain thread all on the one CPU) with
recording off, then on for each recorded set (the kernel's events alone;
with net.* and vfs.*; with sched.* as well; httpd's user stacks), and reports
the CPU's busy microseconds (thousands of instructions; `kcmd cpus` before
and after, idle left out) per request: off / on is what recording costs the
CPU, the throughput a CPU-bound server keeps.

Targets are reported, never asserted.
With --uscope, "on" records the kernel's events and httpd's user stacks at
every system call (the trace map, mode 2, budget 5) instead of join points,
and with --uscope --stacks, httpd's stacks alone (mscope record --stacks: its
system calls and their stacks, nothing else): target 0.98x.  Results go to
stdout and <build>/bench/trace.md (uscope.md).
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
import httpcheck  # noqa: E402
from guest import Guest  # noqa: E402

PORT = 81
PATTERNS = ["net.*", "vfs.*", "sched.*"]
USCOPE_LINE = "uscope trace httpd --mode 2 --budget 5"
TARGET, GOAL = 0.97, 0.99


def run_load(port, seconds, connections, small):
    tally = httpcheck.run_paced_load(port, "/small.txt", small, seconds, connections)
    return {"rps": len(tally["latencies"]) / seconds, "errors": tally["errors"] + tally["bad"]}


def record_while(socket_path, seconds, out_dir, load, patterns, stacks_only=False):
    """Runs mscope record on the console port for about `seconds` while load()
    runs; returns (load's result, mscope's counts line, exit status)."""
    mscope = subprocess.Popen(
        [os.path.join(ROOT, "tools", "mscope"), "record", "--attach", socket_path,
         "-d", str(seconds), "-o", out_dir] + [a for p in patterns for a in ("-p", p)]
        + (["--stacks"] if stacks_only else []),
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1)  # the OS has answered: the trace runs
    result = load()
    output, _ = mscope.communicate(timeout=seconds + 120)
    counts = [line for line in output.splitlines() if line.startswith("recorded ")]
    return result, (counts[-1] if counts else output.strip()[-300:]), mscope.returncode


def parse_counts(line):
    """"recorded R, delivered D, dropped X" -> (R, D, X), or None."""
    try:
        parts = [int(p.split()[-1]) for p in line.split(",")]
        return tuple(parts) if len(parts) == 3 else None
    except ValueError:
        return None


def bench(args):
    port = httpcheck.free_port()
    log = os.path.join(args.build, "bench", "trace-http.log")
    sock = os.path.join(tempfile.mkdtemp(prefix="mscope-"), "console.sock")
    guest = Guest(args.build, "e1000", {port: PORT}, log,
                  timeout=args.rounds * 2 * (args.seconds + 30) + 300,
                  console_port=f"socket,path={sock},server=on,wait=off")
    runs, streamed = {"off": [], "on": []}, []
    try:
        httpd = guest.boot()
        if not httpd or not httpd.startswith("serving"):
            sys.exit(f"bench_trace.py: no web server ({httpd}); see {log}")
        guest.run(f"httpd -q -p {PORT} &")
        time.sleep(1)
        if args.uscope:  # httpd's user stacks at each system call, in the stream
            subprocess.run([os.path.join(ROOT, "tools", "mscope"), "send", "--attach", sock,
                            USCOPE_LINE], cwd=ROOT, capture_output=True, timeout=120)
        small = open(os.path.join(args.build, "user", "root", "www", "small.txt"), "rb").read()
        run_load(port, 2, args.connections, small)  # warm-up
        for round_number in range(args.rounds):
            for mode in ("off", "on") if round_number % 2 == 0 else ("on", "off"):
                load = lambda: run_load(port, args.seconds, args.connections, small)  # noqa
                if mode == "off":
                    r = load()
                else:
                    out = tempfile.mkdtemp(prefix="trace-")
                    os.rmdir(out)
                    r, counts, status = record_while(sock, args.seconds, out, load,
                                                     [] if args.uscope else PATTERNS,
                                                     args.uscope and args.stacks)
                    streamed.append((counts, status))
                runs[mode].append(r)
                print(f"round {round_number + 1} recording {mode:3}: {r['rps']:8.0f} req/s  "
                      f"errors {r['errors']}" + (f"  {streamed[-1][0]}" if mode == "on" else ""),
                      flush=True)
    finally:
        guest.stop()
    return runs, streamed


ICOUNT_SETS = [("the kernel's events", [], None, False),
               ("the kernel's events, net.*, vfs.*", ["net.*", "vfs.*"], None, False),
               ("the kernel's events, net.*, vfs.*, sched.*", PATTERNS, None, False),
               ("the kernel's events and httpd's user stacks", [], USCOPE_LINE, False),
               ("httpd's user stacks alone (a stacks-only trace)", [], USCOPE_LINE, True)]


BUSY_US = re.compile(r"cpu 0: .*; busy (\d+) us")


def busy_us(guest):
    """CPU 0's busy time so far (kcmd cpus), microseconds, or None."""
    m = BUSY_US.search(guest.run("kcmd cpus", timeout=120) or "")
    return int(m.group(1)) if m else None


def reading_cost(guest):
    """The busy microseconds that reading busy_us itself adds to a turn (the
    median of three empty turns), subtracted from every measured turn."""
    costs = []
    for _ in range(3):
        before, after = busy_us(guest), busy_us(guest)
        if before is not None and after is not None:
            costs.append(after - before)
    return statistics.median(costs) if costs else 0


def timed_requests(guest, count, overhead=0):
    """The CPU's busy microseconds per request while httpget -n made them
    (idle time left out: under -icount an idle guest's clock follows the
    host's, so it would carry the host's load into the figure; overhead, the
    readings' own cost, taken out), or None."""
    before = busy_us(guest)
    text = guest.run(f"httpget -n {count} -o /dev/null http://127.0.0.1:{PORT}/small.txt",
                     timeout=600) or ""
    after = busy_us(guest)
    done = [line.split() for line in text.splitlines()  # "httpget: N requests in T us, E us each"
            if line.startswith("httpget:") and " us each" in line]
    if before is None or after is None or not done or int(done[-1][1]) != count:
        return None
    return (after - before - overhead) / count


def timed_while_recording(guest, sock, count, patterns, stacks_only, overhead, log_path):
    """timed_requests while mscope records; returns (us, mscope's counts line).
    mscope writes into log_path, read back while waiting for "trace started"."""
    out = tempfile.mkdtemp(prefix="trace-")
    os.rmdir(out)
    with open(log_path, "w+") as log:
        mscope = subprocess.Popen(
            [os.path.join(ROOT, "tools", "mscope"), "record", "--attach", sock, "-o", out] +
            [a for p in patterns for a in ("-p", p)] + (["--stacks"] if stacks_only else []),
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True,
            env=dict(os.environ, PYTHONUNBUFFERED="1"))  # "trace started" as it comes

        def text():
            log.seek(0)
            return log.read()
        deadline = time.monotonic() + 600  # a hang guard
        while "trace started" not in text() and mscope.poll() is None and \
                time.monotonic() < deadline:
            time.sleep(0.1)
        us = timed_requests(guest, count, overhead) if "trace started" in text() else None
        mscope.send_signal(signal.SIGINT)
        mscope.wait(timeout=300)
        lines = text().splitlines()
    counts = [line.strip() for line in lines if line.startswith("recorded ")]
    return us, (counts[-1] if counts else "\n".join(lines)[-300:])


def bench_icount(args):
    log = os.path.join(args.build, "bench", "trace-icount.log")
    sock = os.path.join(tempfile.mkdtemp(prefix="mscope-"), "console.sock")
    guest = Guest(args.build, "e1000", {}, log, timeout=3600, icount=True,
                  console_port=f"socket,path={sock},server=on,wait=off")
    results = []
    try:
        if not guest.boot(timeout=600):
            sys.exit(f"bench_trace.py: the -icount guest did not come up; see {log}")
        guest.run(f"httpd -q -p {PORT} &")
        time.sleep(1)
        timed_requests(guest, 20)  # warm-up
        overhead = reading_cost(guest)
        for number, (label, patterns, line, stacks_only) in enumerate(ICOUNT_SETS, 1):
            if (args.row and number not in args.row) or \
                    (args.only_set and args.only_set not in label):
                continue
            if line:
                subprocess.run([os.path.join(ROOT, "tools", "mscope"), "send", "--attach", sock,
                                line], cwd=ROOT, capture_output=True, timeout=120)
            off = timed_requests(guest, args.requests, overhead)
            on, counts = timed_while_recording(
                guest, sock, args.requests, patterns, stacks_only, overhead,
                os.path.join(args.build, "bench", f"trace-icount-mscope-{number}.log"))
            results.append((label, off, on, counts))
            print(f"-icount: {label}: off {off or 0:.1f} us, on {on or 0:.1f} us per request  "
                  f"{counts}", flush=True)
    finally:
        guest.stop()
    return results


def report_icount(args, results):
    lines = ["", "### Under -icount: guest instructions per request", "",
             f"QEMU -icount shift=0, 1 CPU, e1000; `httpget -n {args.requests}` to `httpd -q` over "
             "the loopback interface (client, server, lwIP and the trace's drain thread on the one "
             "CPU); the CPU's busy time per request (`kcmd cpus` before and after; a microsecond is 1,000 guest instructions).  Streamed to the host over the "
             "virtio console.", "",
             "| recorded | off (us per request) | on | off / on | target |", "|---|---:|---:|---:|---|"]
    for label, off, on, counts in results:
        ratio = f"{off / on:.3f}x" if off and on else "—"
        target = f"≥ {TARGET}x" if "stacks" not in label else "≥ 0.98x"
        lines.append(f"| {label} | {off or 0:.1f} | {on or 0:.1f} | {ratio} | {target} |")
    return lines


def report(args, runs, streamed):
    ratios = [on["rps"] / off["rps"] for off, on in zip(runs["off"], runs["on"]) if off["rps"]]
    ratio = statistics.median(ratios) if ratios else 0
    counts = [parse_counts(c) for c, _ in streamed]
    delivered = [c[1] for c in counts if c]
    dropped = sum(c[2] for c in counts if c)
    what = (f"httpd's system calls and user stacks alone (`{USCOPE_LINE}`, `mscope record "
            "--stacks`)" if args.uscope and args.stacks
            else f"the kernel's events and httpd's user stacks (`{USCOPE_LINE}`)" if args.uscope
            else f"the kernel's events and {', '.join(PATTERNS)}")
    title = ("httpd's user stacks alone (uscope, stacks-only)" if args.uscope and args.stacks
             else "httpd's user stacks (uscope)" if args.uscope else "httpd recorded")
    lines = [f"## Trace stream: {title} and streamed (`make bench-trace`)", "",
             f"e1000, 1 CPU, plain TCG, {args.connections} keep-alive connections, "
             f"{args.seconds} s turns, {args.rounds} round(s); recorded: {what}, to the host over "
             "the virtio console.", "",
             "| figure | value | target |", "|---|---:|---|",
             f"| requests/s, recording off (median) | "
             f"{statistics.median(r['rps'] for r in runs['off']):.0f} | |",
             f"| requests/s, recording on (median) | "
             f"{statistics.median(r['rps'] for r in runs['on']):.0f} | |",
             f"| on / off (median of the rounds) | {ratio:.3f}x | "
             f"{'≥ 0.98x' if args.uscope else f'≥ {TARGET}x (goal {GOAL}x)'} |",
             f"| records streamed to the host per second (median) | "
             f"{statistics.median(delivered) / args.seconds if delivered else 0:.0f} | |",
             f"| records dropped, all rounds | {dropped} | 0 silent (all counted) |",
             f"| captures complete (mscope exit 0) | "
             f"{sum(1 for _, s in streamed if s == 0)} of {len(streamed)} | all |"]
    return lines


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--seconds", type=int, default=10)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--uscope", action="store_true",
                   help="record httpd's user stacks (mode 2, budget 5) instead of join points")
    p.add_argument("--requests", type=int, default=2000,
                   help="requests per -icount measurement (default 2000)")
    p.add_argument("--icount-only", action="store_true",
                   help="only the -icount part (every recorded set, uscope included)")
    p.add_argument("--row", type=int, action="append", default=[],
                   help="with --icount-only: only this row of the table (1-5; repeatable)")
    p.add_argument("--only-set", metavar="TEXT",
                   help="with --icount-only: only the recorded sets whose label holds TEXT "
                   "(e.g. 'stacks alone')")
    p.add_argument("--stacks", action="store_true",
                   help="with --uscope: a stacks-only trace (no other kernel event)")
    args = p.parse_args()
    args.build = os.path.join(ROOT, args.build)
    os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
    if args.icount_only:
        text = "\n".join(report_icount(args, bench_icount(args))) + "\n"
        print(text, end="")
        with open(os.path.join(args.build, "bench", "trace-icount.md"), "w") as f:
            f.write(text)
        return
    runs, streamed = bench(args)
    text = "\n".join(report(args, runs, streamed)) + "\n"
    print(text, end="")
    name = "uscope-stacks.md" if args.uscope and args.stacks else \
        "uscope.md" if args.uscope else "trace.md"
    with open(os.path.join(args.build, "bench", name), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
