#!/usr/bin/env python3
"""Latency-tracker benchmark (`make bench-lattrack`): what the syscall and
ttfb trackers cost httpd.

One microScope guest (e1000, plain TCG: the packets come from the host in
real time) runs `httpd -q -p 81`, and a keep-alive load from the host
(tests/net/httpcheck.py's paced load: 16 connections opened one at a time,
each a closed loop of requests, every body checked) loads it in turns,
--rounds times: trackers off, then on (`kcmd lattrack create lt-sys syscall
2000` and `kcmd lattrack create lt-ttfb ttfb 2000`: every system call and
every accepted connection timed, reports over 2 ms), then on-off in the next
round (a drift of the host's load favours neither).  The trackers are
created before an `on` turn and removed after it, so the `off` turns run
without their advice.  Medians over the rounds of requests/s, p50 and p99,
and the median of each round's ratio on / off (the turns of a round are
seconds apart: a busy host disturbs both alike), compared with the target
(throughput 0.98x or better).  The trackers' counts after the last `on`
turn show that they saw the load.

The second part counts instead of timing: the same under QEMU -icount
shift=0 (guest time counts instructions), --icount-requests requests one
after the other on one keep-alive connection per turn, --icount-turns turns
off-on-on-off-..., after a warm-up (requests, one create/remove of the
trackers), with cpu 0's busy time (`kcmd cpus`, in us: a thousand
instructions) read before and after each turn, less what a turn without
requests costs (the two readings themselves): guest instructions per
request, their medians per setting and ratio, and the ratio of each pair of
neighbouring turns, free of the host's load.  The turns of one setting still
differ by about 0.5%: when the host's packets arrive is real time, and a
turn whose packets meet the guest apart more often takes more interrupts and
switches (printed per turn).  --trackers syscall or ttfb measures one alone.

Targets are reported, never asserted.  Results go to stdout and
<build>/bench/lattrack.md.
"""
import argparse
import os
import re
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
import httpcheck  # noqa: E402
from guest import Guest  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "tests"))
from bench_acct_events import IcountGuest, requests  # noqa: E402

PORT = 81
TARGET_RPS = 0.98
TRACKERS = (("lt-sys", "syscall"), ("lt-ttfb", "ttfb"))
ACTIVE_TRACKERS = TRACKERS  # --trackers
THRESHOLD_US = 2000  # --threshold-us


def run_load(port, seconds, connections, small):
    """One turn; returns requests/s, p50 and p99 in ms, errors."""
    tally = httpcheck.run_paced_load(port, "/small.txt", small, seconds, connections)
    latencies = sorted(tally["latencies"])
    return {"rps": len(latencies) / seconds, "errors": tally["errors"] + tally["bad"],
            "p50": httpcheck.percentile(latencies, 0.5) * 1000 if latencies else None,
            "p99": httpcheck.percentile(latencies, 0.99) * 1000 if latencies else None}


def trackers(guest, on):
    """Creates (on) or removes the trackers; returns None or what went wrong."""
    for name, kind in ACTIVE_TRACKERS:
        line = f"kcmd lattrack create {name} {kind} {THRESHOLD_US}" if on else \
            f"kcmd lattrack remove {name}"
        answer = guest.run(line) or ""
        if "error" in answer or "usage" in answer:
            return f"{line}: {answer.strip()}"
    return None


def bench_http(args):
    """Returns ({"off": [results], "on": [results]}, the last list of trackers)."""
    host_port = httpcheck.free_port()
    log = os.path.join(args.build, "bench", "lattrack-http.log")
    guest = Guest(args.build, "e1000", {host_port: PORT}, log,
                  timeout=args.rounds * 2 * (args.seconds + 15) + 300, smp=args.smp)
    runs, listing = {"off": [], "on": []}, ""
    try:
        httpd = guest.boot()
        if not httpd or not httpd.startswith("serving"):
            sys.exit(f"bench_lattrack.py: no web server ({httpd}); see {log}")
        guest.run(f"httpd -q -p {PORT} &")
        time.sleep(1)
        small = open(os.path.join(args.build, "user", "root", "www", "small.txt"), "rb").read()
        run_load(host_port, 2, args.connections, small)  # warm-up
        for round_number in range(args.rounds):
            turns = ("off", "on") if round_number % 2 == 0 else ("on", "off")
            for mode in turns:
                if mode == "on":
                    problem = trackers(guest, True)
                    if problem:
                        sys.exit(f"bench_lattrack.py: {problem}; see {log}")
                r = run_load(host_port, args.seconds, args.connections, small)
                runs[mode].append(r)
                if mode == "on":
                    listing = guest.run("kcmd lattrack") or ""
                    trackers(guest, False)
                print(f"round {round_number + 1} trackers {mode:3}: {r['rps']:8.0f} req/s  "
                      f"p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms  errors {r['errors']}",
                      flush=True)
    finally:
        guest.stop()
    return runs, listing


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def round_ratios(runs, key):
    return [on[key] / off[key] for off, on in zip(runs["off"], runs["on"])
            if on.get(key) is not None and off.get(key)]


CPU0 = re.compile(r"cpu 0: .*?(\d+) switches, (\d+) interrupts.*busy (\d+) us")


def cpu_sample(guest):
    """cpu 0's (busy instructions, context switches, interrupts) from `kcmd
    cpus` (busy us: a thousand instructions under -icount shift=0)."""
    m = CPU0.search(guest.run("kcmd cpus", timeout=60) or "")
    if not m:
        sys.exit("bench_lattrack.py: no kcmd cpus output")
    return int(m.group(3)) * 1000, int(m.group(1)), int(m.group(2))


TRACKER_ROW = re.compile(r"^(lt-\S+)\s+\S+\s+\d+\s+(\d+)\s+\d+\s+(\d+)", re.M)


def tracker_counts(guest):
    """", NAME in I over O, ..." from `kcmd lattrack` (after a turn's last
    sample: not counted in it)."""
    rows = TRACKER_ROW.findall(guest.run("kcmd lattrack", timeout=60) or "")
    return "".join(f", {name} in {count_in} over {over}" for name, count_in, over in rows)


def icount_turn(guest, port, count):
    """One turn: count requests between two samples; (busy instructions,
    switches, interrupts) spent in it."""
    before = cpu_sample(guest)
    if count:
        requests(port, count)
    after = cpu_sample(guest)
    return tuple(a - b for a, b in zip(after, before))


def icount_order(turns):
    """off, on, on, off, off, on, ...: each setting as often first as second
    in a pair of turns, so that a drift favours neither."""
    return [("off", "on", "on", "off")[i % 4] for i in range(turns)]


def bench_instructions(args):
    """Guest instructions per request, trackers off and on, in turns:
    [(mode, busy, switches, interrupts)] and the busy time of a turn
    without requests."""
    host_port = httpcheck.free_port()
    log = os.path.join(args.build, "bench", "lattrack-icount.log")
    guest = IcountGuest(args.build, {host_port: PORT}, log, timeout=3600)
    turns = []
    try:
        if not guest.boot(timeout=600):
            sys.exit(f"bench_lattrack.py: the -icount guest did not boot; see {log}")
        guest.run(f"httpd -q -p {PORT} &")
        time.sleep(2)
        # warm-up: the server's first requests and one create/remove of the
        # trackers (first allocations, caches) stay out of the turns
        requests(host_port, args.icount_warm_up)
        if trackers(guest, True) or trackers(guest, False):
            sys.exit(f"bench_lattrack.py: cannot create the trackers; see {log}")
        requests(host_port, args.icount_warm_up)
        # the two samples alone: what a turn costs besides its requests
        fixed = statistics.median(icount_turn(guest, host_port, 0)[0] for _ in range(3))
        for number, mode in enumerate(icount_order(args.icount_turns)):
            if mode == "on" and trackers(guest, True):
                sys.exit(f"bench_lattrack.py: cannot create the trackers; see {log}")
            busy, switches, interrupts = icount_turn(guest, host_port, args.icount_requests)
            counted = ""
            if mode == "on":
                counted = tracker_counts(guest)
                trackers(guest, False)
            turns.append((mode, busy - fixed, switches, interrupts))
            print(f"icount turn {number + 1:2} trackers {mode:3}: "
                  f"{(busy - fixed) / args.icount_requests:9,.1f} instructions/request, "
                  f"{switches} switches, {interrupts} interrupts{counted}", flush=True)
    finally:
        guest.stop()
    return icount_report(args, turns, fixed)


def icount_report(args, turns, fixed):
    n = args.icount_requests
    per_request = {m: [t[1] / n for t in turns if t[0] == m] for m in ("off", "on")}
    off, on = (statistics.median(per_request[m]) for m in ("off", "on"))
    ratio = on / off
    # turns 1-2, 3-4, ...: one of each setting, next to each other
    pairs = [(a, b) if a[0] == "off" else (b, a) for a, b in zip(turns[::2], turns[1::2])]
    pair_ratios = sorted(on_turn[1] / off_turn[1] for off_turn, on_turn in pairs)
    verdict = "met" if 1 / ratio >= TARGET_RPS else "NOT met"
    events = {m: [(t[2] / n, t[3] / n) for t in turns if t[0] == m] for m in ("off", "on")}
    return ["QEMU -icount shift=0 (a guest ns is an instruction), "
            f"{n} requests per turn on one keep-alive connection, {len(turns)} turns "
            f"(off-on-on-off, ...) after {args.icount_warm_up} requests, a create/remove "
            f"of the trackers ({', '.join(k for _, k in ACTIVE_TRACKERS)}, threshold "
            f"{THRESHOLD_US} us) and "
            f"{args.icount_warm_up} requests more; per turn cpu 0's busy time (`kcmd cpus`, us) "
            f"less that of a turn with no requests ({fixed:,.0f} instructions, median of 3), "
            "per request; medians of the turns:", "",
            "| per request | off | on | on / off | throughput on / off | target |",
            "|---|---:|---:|---:|---:|---|",
            f"| guest instructions | {off:,.1f} | {on:,.1f} | {ratio:.4f}x | {1 / ratio:.4f}x | "
            f"≥ {TARGET_RPS:.2f}x ({verdict}) |", "",
            f"On / off of the {len(pairs)} pairs of neighbouring turns: "
            + ", ".join(f"{r:.4f}" for r in pair_ratios)
            + f" (median {statistics.median(pair_ratios):.4f}x).  "
            "Turns, instructions per request: "
            + "; ".join(f"{m} " + ", ".join(f"{v:,.0f}" for v in per_request[m])
                        for m in ("off", "on"))
            + ".  Context switches and interrupts per request: "
            + "; ".join(f"{m} " + ", ".join(f"{s:.2f}/{i:.2f}" for s, i in events[m])
                        for m in ("off", "on"))
            + " (a turn's extra instructions come with extra switches and interrupts: real "
            "time, not the guest's instructions, decides when the host's packets arrive).", ""]


def report(args, runs, listing, load):
    lines = ["## Latency trackers in httpd (`make bench-lattrack`)", "",
             f"`python3 tests/bench_lattrack.py --rounds {args.rounds} --seconds {args.seconds}`: "
             f"{args.connections} keep-alive connections opened one at a time, {args.seconds} s per "
             f"turn, /small.txt, e1000, QEMU TCG, {args.smp} CPU(s), no -icount; `httpd -q`, "
             "with the `syscall` and `ttfb` trackers (threshold 2 ms) off and on in turns "
             f"(off-on, on-off, ...), {args.rounds} round(s), one run; host load average "
             f"{load[0]:.1f} before, {load[1]:.1f} after:", "",
             "| figure | off (median) | on (median) | on / off, median of the rounds | target |",
             "|---|---:|---:|---:|---|"]
    for key, label in (("rps", "requests/s"), ("p50", "median latency, ms"),
                       ("p99", "p99 latency, ms")):
        off = median_of([r.get(key) for r in runs["off"]])
        on = median_of([r.get(key) for r in runs["on"]])
        ratio = median_of(round_ratios(runs, key))
        target = f"≥ {TARGET_RPS:.2f}x ({'met' if ratio and ratio >= TARGET_RPS else 'NOT met'})" \
            if key == "rps" else "—"
        cells = " | ".join("-" if v is None else f"{v:.2f}" for v in (off, on))
        lines.append(f"| {label} | {cells} | {'-' if ratio is None else f'{ratio:.3f}x'} | "
                     f"{target} |")
    errors = {mode: sum(r["errors"] for r in runs[mode]) for mode in runs}
    lines += ["", f"Socket errors: {errors['off']} off, {errors['on']} on.  Per round (off / on):",
              ""]
    for i, (off, on) in enumerate(zip(runs["off"], runs["on"])):
        lines.append(f"- round {i + 1}: {off['rps']:.0f} / {on['rps']:.0f} requests/s, p50 "
                     f"{off['p50']:.2f} / {on['p50']:.2f} ms, p99 {off['p99']:.2f} / "
                     f"{on['p99']:.2f} ms")
    rows = [line for line in listing.splitlines() if line.startswith(("name", "lt-"))]
    if rows:
        lines += ["", "The trackers after the last `on` turn (`kcmd lattrack`):", ""]
        lines += ["    " + row for row in rows]
    return lines + [""]


def main():
    global ACTIVE_TRACKERS, THRESHOLD_US
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--smp", type=int, default=1)
    p.add_argument("--icount-requests", type=int, default=2000)
    p.add_argument("--icount-turns", type=int, default=12,
                   help="turns under -icount, both settings (even)")
    p.add_argument("--icount-warm-up", type=int, default=500, help="requests before the turns")
    p.add_argument("--trackers", default="syscall,ttfb",
                   help="which of the trackers the on turns create (syscall, ttfb)")
    p.add_argument("--threshold-us", type=int, default=THRESHOLD_US,
                   help="the trackers' threshold (a large one: no reports)")
    p.add_argument("--skip-http", action="store_true", help="instructions only")
    args = p.parse_args()
    THRESHOLD_US = args.threshold_us
    ACTIVE_TRACKERS = [t for t in TRACKERS if t[1] in args.trackers.split(",")]
    if not ACTIVE_TRACKERS:
        sys.exit(f"bench_lattrack.py: --trackers names none of {[t[1] for t in TRACKERS]}")
    os.chdir(ROOT)
    os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
    lines = []
    if not args.skip_http:
        before = os.getloadavg()[0]
        runs, listing = bench_http(args)
        lines = report(args, runs, listing, (before, os.getloadavg()[0]))
    lines += bench_instructions(args)
    text = "\n".join(lines) + "\n"
    print("\n" + text, end="")
    with open(os.path.join(args.build, "bench", "lattrack.md"), "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
