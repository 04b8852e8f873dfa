#!/usr/bin/env python3
"""Accounting benchmark (`make bench-acct`): what per-request accounting costs
httpd, and what librscfl's calls cost.

1. HTTP: one microScope guest (e1000, plain TCG: the packets come from the
   host in real time) runs two quiet servers side by side, `httpd -q -p 81`
   (accounting off) and `httpd -q -a -p 82` (accounting on), and a keep-alive
   load from the host (tests/net/httpcheck.py's paced load: 16 connections
   opened one at a time, each a closed loop of requests, every body checked)
   loads them in turns, --rounds times (off then on, then on then off:
   a drift of the host's load favours neither), with a pause
   between turns long enough for the accounted server to stop its server
   token (the kernel then unweaves its advice, so the other server's turn
   runs unaccounted).  One request just before each turn lets the accounted
   server start its server token (the kernel weaves the advice: about 2 M
   instructions, measured below), so that the turns measure the steady state.
   Not wrk: it opens its connections in one burst, and QEMU's port forward
   (backlog 1) leaves some of them waiting for the host's SYN-ACK
   retransmissions (1 s, 3 s), which puts seconds into p99 of whichever
   server accepts more slowly and says nothing about the guest.
   Medians over the rounds of p50, p99 and requests/s,
   and the median of each round's ratio on / off (the two turns of a round
   are seconds apart: a busy host disturbs both alike), which is compared
   with the targets (p50 +4 % or less, p99 +5 % or less, throughput 0.96x or
   better), the project's goal (+1 %, +2 %, 0.97x) and what Resourceful
   measured on lighttpd (+3.9 %, +7.66 %, 0.69x).  Both servers run -q: the
   access log's formatting is not part of the comparison.
2. Instructions: userland/acctbench as init under QEMU -icount shift=0 (a
   TSC tick is a guest instruction): rscfl_acct START+STOP, httpd's
   per-request sequence, a switch pair and rscfl_read_acct, beside getpid.
3. Instructions per request (tests/bench_acct_events.py, --requests
   requests under -icount): busy instructions per request off and on, their
   ratio (target 1.04x or less), join point events per request and the
   instructions added per event.

Targets are reported, never asserted.  Results go to stdout and
<build>/bench/acct.md.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
import httpcheck  # noqa: E402
from guest import Guest  # noqa: E402

OFF_PORT, ON_PORT = 81, 82
LINGER_SECONDS = 3  # > httpd's HTTP_ACCT_LINGER_MS plus one poll turn
TARGETS = {"p50": 1.04, "p99": 1.05, "rps": 0.96}
GOALS = {"p50": "+1 %", "p99": "+2 %", "rps": "0.97x"}
RESOURCEFUL = {"p50": "+3.9 %", "p99": "+7.66 %", "rps": "0.69x"}
CASE = re.compile(r"^acct_bench: case (\S+) ops (\d+) ticks (\d+)", re.M)
CALIBRATION = re.compile(r"^acct_bench: calibration (\d+) instructions took (\d+) ticks", re.M)
CASE_LABELS = [
    ("getpid", "getpid (a system call round trip, for scale)"),
    ("start-stop", "rscfl_acct START + STOP, nothing else accounted (weave + unweave)"),
    ("request", "httpd's per request: START with TK_RESET, STOP (server token started)"),
    ("switch-pair", "rscfl_switch_token twice"),
    ("read", "rscfl_read_acct (no system call)"),
    ("file-off", "a file request without the network (open, fstat, read, close, pipe round trip), "
                 "accounting off"),
    ("file-on", "the same inside httpd's per-request sequence, accounting on"),
    ("getpid-other", "getpid in another process, not accounted, while this one is"),
]


def run_load(port, seconds, connections, small):
    """One turn of keep-alive load with the connections opened one at a time;
    returns requests/s, p50 and p99 in ms, errors (socket errors and wrong
    responses)."""
    tally = httpcheck.run_paced_load(port, "/small.txt", small, seconds, connections)
    latencies = sorted(tally["latencies"])
    return {"rps": len(latencies) / seconds, "errors": tally["errors"] + tally["bad"],
            "p50": httpcheck.percentile(latencies, 0.5) * 1000 if latencies else None,
            "p99": httpcheck.percentile(latencies, 0.99) * 1000 if latencies else None}


def start_servers(guest):
    """Starts both servers; returns None or what went wrong."""
    guest.run(f"httpd -q -p {OFF_PORT} &")
    answer = guest.run(f"httpd -q -a -p {ON_PORT} &") or ""
    time.sleep(1)
    if "no accounting" in answer or "no accounting" in guest.text:
        return "the kernel has no accounting: " + answer.strip()
    return None


def bench_http(args):
    """Returns {"off": [results], "on": [results]} or exits."""
    off, on = httpcheck.free_port(), httpcheck.free_port()
    log = os.path.join(args.build, "bench", "acct-http.log")
    guest = Guest(args.build, "e1000", {off: OFF_PORT, on: ON_PORT}, log,
                  timeout=args.rounds * 2 * (args.seconds + 10) + 300, smp=args.smp)
    runs = {"off": [], "on": []}
    try:
        httpd = guest.boot()
        if not httpd or not httpd.startswith("serving"):
            sys.exit(f"bench_acct.py: no web server ({httpd}); see {log}")
        problem = start_servers(guest)
        if problem:
            sys.exit(f"bench_acct.py: {problem}; see {log}")
        small = open(os.path.join(args.build, "user", "root", "www", "small.txt"), "rb").read()
        for port in (off, on):
            run_load(port, 2, args.connections, small)  # warm-up
        for round_number in range(args.rounds):
            turns = (("off", off), ("on", on))
            for mode, port in turns if round_number % 2 == 0 else reversed(turns):
                time.sleep(LINGER_SECONDS)
                httpcheck.get(port, "/small.txt")  # weaves now, not under wrk's connects
                r = run_load(port, args.seconds, args.connections, small)
                runs[mode].append(r)
                print(f"round {round_number + 1} accounting {mode:3}: {r['rps']:8.0f} req/s  "
                      f"p50 {r['p50']:.2f} ms  p99 {r['p99']:.2f} ms  errors {r['errors']}",
                      flush=True)
    finally:
        guest.stop()
    return runs


def median_of(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def round_ratios(runs, key):
    """on / off of each round (a round's two turns are seconds apart, so a
    busy host disturbs both alike)."""
    return [on[key] / off[key] for off, on in zip(runs["off"], runs["on"])
            if on.get(key) is not None and off.get(key)]


def shown(key, ratio):
    if ratio is None:
        return "-"
    return f"{ratio:.3f}x" if key == "rps" else f"{(ratio - 1) * 100:+.1f} %"


def http_lines(args, runs, load):
    lines = ["## Per-request accounting in httpd (`make bench-acct`)", "",
             f"{args.connections} keep-alive connections opened one at a time, {args.seconds} s "
             f"per turn, /small.txt (22 bytes), "
             f"e1000, QEMU TCG q35, {args.smp} CPU(s), no -icount; `httpd -q` (off) and "
             f"`httpd -q -a` (on) in the same guest, in turns (off-on, on-off, ...), "
             f"{args.rounds} round(s); "
             f"host load average {load[0]:.1f} before, {load[1]:.1f} after:", "",
             "| figure | off (median) | on (median) | on / off, median of the rounds | "
             "target | met | goal | Resourceful (lighttpd) |",
             "|---|---:|---:|---:|---:|---|---:|---:|"]
    for key, label in (("p50", "median latency, ms"), ("p99", "p99 latency, ms"),
                       ("rps", "requests/s")):
        off = median_of([r.get(key) for r in runs["off"]])
        on = median_of([r.get(key) for r in runs["on"]])
        ratio = median_of(round_ratios(runs, key))
        met = "-" if ratio is None else \
            ("yes" if (ratio >= TARGETS[key] if key == "rps" else ratio <= TARGETS[key]) else "no")
        target = f"{TARGETS[key]:.2f}x" if key == "rps" else f"+{(TARGETS[key] - 1) * 100:.0f} %"
        cells = " | ".join("-" if v is None else f"{v:.2f}" for v in (off, on))
        lines.append(f"| {label} | {cells} | {shown(key, ratio)} | {target} | {met} | "
                     f"{GOALS[key]} | {RESOURCEFUL[key]} |")
    errors = {mode: sum(r["errors"] for r in runs[mode]) for mode in runs}
    lines += ["", f"Socket errors: {errors['off']} off, {errors['on']} on.  Per round (off / on):",
              ""]
    for i, (off, on) in enumerate(zip(runs["off"], runs["on"])):
        lines.append(f"- round {i + 1}: {off['rps']:.0f} / {on['rps']:.0f} requests/s, p50 "
                     f"{off['p50']:.2f} / {on['p50']:.2f} ms, p99 {off['p99']:.2f} / "
                     f"{on['p99']:.2f} ms")
    return lines + [""]


def bench_instructions(args):
    log = os.path.join(args.build, "bench", "acctbench-icount.log")
    cmd = [sys.executable, os.path.join(ROOT, "tools", "qemu.py"),
           "--kernel", os.path.join(args.build, "microscope.elf"),
           "--initrd", os.path.join(args.build, "initrd.cpio"),
           "--append", "init=/bin/acctbench exit=qemu", "--log", log, "--timeout", "300",
           "--icount"]
    subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(log, errors="replace") as f:
        text = f.read()
    cases = {m.group(1): int(m.group(3)) / int(m.group(2)) for m in CASE.finditer(text)}
    calibration = CALIBRATION.search(text)
    if not cases or not calibration:
        return [f"acctbench: no figures, see {log}", ""]
    lines = ["QEMU -icount shift=0, guest instructions per operation, from user mode (calibration: "
             f"a loop of {calibration.group(1)} instructions measured {calibration.group(2)} "
             "ticks):", "", "| operation | instructions | x getpid |", "|---|---:|---:|"]
    base = cases.get("getpid")
    for key, label in CASE_LABELS:
        if key in cases:
            scale = f"{cases[key] / base:.1f}" if base else "-"
            lines.append(f"| {label} | {cases[key]:.0f} | {scale} |")
    if cases.get("file-off") and "file-on" in cases and "request" in cases:
        on, off, control = cases["file-on"], cases["file-off"], cases["request"]
        lines += ["", f"- file request on / off = {on / off:.2f}: the control calls add "
                  f"{control:.0f} instructions, the advice on the request's join points "
                  f"{on - off - control:.0f}"]
    return lines + [""]


def bench_events(args):
    """tests/bench_acct_events.py's figures, as lines."""
    cmd = [sys.executable, os.path.join(ROOT, "tests", "bench_acct_events.py"), "--build",
           args.build, "--requests", str(args.requests)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    text = (done.stdout or "") + (done.stderr or "")
    return ["Instructions per request (`tests/bench_acct_events.py`, target on / off 1.04x or "
            "less):", "", "```"] + text.rstrip().splitlines() + ["```", ""]


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--seconds", type=int, default=5)
    p.add_argument("--connections", type=int, default=16)
    p.add_argument("--rounds", type=int, default=8)
    p.add_argument("--smp", type=int, default=1)
    p.add_argument("--skip-http", action="store_true", help="instructions only")
    p.add_argument("--skip-events", action="store_true",
                   help="without the instructions per request (bench_acct_events.py)")
    p.add_argument("--requests", type=int, default=1000,
                   help="requests for the instructions per request")
    args = p.parse_args()
    os.chdir(ROOT)
    os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
    lines = []
    if not args.skip_http:
        before = os.getloadavg()[0]
        runs = bench_http(args)
        lines = http_lines(args, runs, (before, os.getloadavg()[0]))
    lines += bench_instructions(args)
    if not args.skip_events:
        lines += bench_events(args)
    text = "\n".join(lines) + "\n"
    print("\n" + text, end="")
    with open(os.path.join(args.build, "bench", "acct.md"), "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
