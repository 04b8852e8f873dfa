#!/usr/bin/env python3
"""Phased network benchmark (`make bench-net` runs it after bench_net.py):
does the NIC decision loop pick the right mode as the load changes?

One workload of four phases against httpd -q on a microScope guest (plain
TCG, q35, one CPU, e1000 unless --nic says otherwise), from the host:
  idle     one request every 200 ms on one keep-alive connection;
  bursts   cycles of 0.5 s with every connection requesting back to back,
           then 1 s of idle probes;
  steady   every connection requesting back to back;
  idle     as the first.
It runs three times in one guest, interleaved by mode: the NIC fixed in
interrupt mode (`kcmd nic mode NIC irq`), fixed in polling mode (`... poll`),
and adaptive: aspects/nicmode.o linked `msg` with synchronous calls, so a
monitor process reads the NIC's counters every 10 ms of activity and answers
with the mode (the driver follows; docs/NETWORK.md, the decision loop).
Per phase and mode: requests per second, p90 latency, the guest CPU's busy
share (`kcmd cpus` at the phase's ends, busy / (busy + idle)) and requests per
CPU-busy second (what a request costs).  Rounds (--rounds) repeat the three
modes in the same guest, each round starting with the next mode, so that a
drift in the host's load does not always favour the same one; figures sum
the rounds (p90: the median round's).

Target: adaptive within 0.95x of the best fixed mode in every phase, and better
than both over the whole run.  Which figure decides a phase: requests per
second where the load is the server's limit (bursts, steady), CPU busy share
where the load is fixed (idle: the same probes whatever the mode); over the
whole run, requests per CPU-busy second.  Plain TCG times on a shared host are
noisy: compare within one run.

With --icount the guest runs under QEMU -icount (its clock counts
instructions while it is busy), so what a request costs the guest, requests
per CPU-busy second, is a count of instructions and repeats from run to run
while the host's load moves everything timed by the host; the phases where
the server is the limit (bursts, steady) are then decided by that figure,
which is the guest's throughput at saturation, instead of the host's
requests per second.

Results: stdout, <build>/bench/net-phased.md, and an SVG of load and mode over
time for the first adaptive run (--svg, default docs/nic-adaptive.svg).
"""
import argparse
import os
import re
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
import httpcheck  # noqa: E402
from guest import Guest  # noqa: E402

NIC_NAMES = {"e1000": "e1000.0", "virtio": "virtio-net.0"}
BENCH_PORT = 81
PATH, EXPECTED = "/small.txt", None  # EXPECTED: read from the rootfs at start
PROBE_SECONDS = 0.2
BURST_ON, BURST_OFF = 0.5, 1.0
BIN_SECONDS = 0.25  # the plot's load resolution
CPU_LINE = re.compile(r"cpu 0[^:]*: busy (\d+) ms \([\d.]+%\) idle (\d+) ms")
CPU_MICROSECONDS = re.compile(r"cpu 0[^:]*: .*; busy (\d+) us idle (\d+) us")
HISTORY_NOW = re.compile(r"now (\d+)\.(\d+), mode (\S+)")
HISTORY_LINE = re.compile(r"^\s+(\d+)\.(\d+) (\S+)$", re.M)
MODES = ("interrupt", "polling", "adaptive")  # the figures the target compares
FIXED = {"interrupt": "irq", "polling": "poll", "hybrid": "hybrid"}


def phases(scale):
    return [("idle", 6 * scale), ("bursts", 12 * scale), ("steady", 10 * scale),
            ("idle2", 6 * scale)]


class Load:
    """Keep-alive clients whose activity follows the phase: every thread
    requests back to back while `full` is set; thread 0 alone sends one probe
    every PROBE_SECONDS otherwise.  Each completed request is (end time,
    latency).  in_flight counts the requests started while `full` was set
    that have not completed, so that a phase can end after them (drain)."""

    def __init__(self, readers):
        self.readers, self.full, self.stop = readers, threading.Event(), threading.Event()
        self.lock, self.done, self.errors, self.in_flight = threading.Lock(), [], 0, 0
        self.threads = [threading.Thread(target=self.worker, args=(i,), daemon=True)
                        for i in range(len(readers))]
        for t in self.threads:
            t.start()

    def request(self, reader):
        request = f"GET {PATH} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        start = time.monotonic()
        try:
            reader.sock.sendall(request)
            response = httpcheck.read_response(reader)
        except OSError:
            response = None
        end = time.monotonic()
        with self.lock:
            if response is None or response[0] != 200 or response[2] != EXPECTED:
                self.errors += 1
                return False
            self.done.append((end, end - start))
        return True

    def start_full(self):
        """True (and counted in flight) when a full load's request may start:
        tested under the lock, so that drain, after `full` is cleared, sees
        every request that started."""
        with self.lock:
            if not self.full.is_set():
                return False
            self.in_flight += 1
            return True

    def worker(self, i):
        reader, next_probe = self.readers[i], time.monotonic()
        while not self.stop.is_set():
            if self.start_full():
                ok = self.request(reader)
                with self.lock:
                    self.in_flight -= 1
                if not ok:
                    return
            elif i == 0 and time.monotonic() >= next_probe:
                next_probe = time.monotonic() + PROBE_SECONDS
                if not self.request(reader):
                    return
            else:
                self.full.wait(0.01)

    def drain(self, timeout=10):
        """Waits (against hangs only) until the requests of a full load have
        completed: they belong to the phase that started them."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.in_flight == 0:
                    return
            time.sleep(0.001)

    def close(self):
        self.stop.set()
        self.full.set()
        for t in self.threads:
            t.join(10)
        for r in self.readers:
            r.sock.close()


class Console:
    """The guest's shell, one command at a time."""

    def __init__(self, guest):
        self.guest, self.lock = guest, threading.Lock()

    def run(self, command, timeout=30):
        with self.lock:
            return self.guest.run(command, timeout) or ""

    def cpu_ms(self):
        """CPU 0's busy and idle milliseconds since boot, to the microsecond
        where the kernel says them (a quiet phase under -icount is a few
        hundred microseconds busy)."""
        text = self.run("kcmd cpus")
        m = CPU_MICROSECONDS.search(text)
        if m:
            return (int(m.group(1)) / 1000, int(m.group(2)) / 1000)
        m = CPU_LINE.search(text)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)

    def mode_timeline(self, nic, t0):
        """The NIC's mode changes (kcmd nic history) as (seconds since t0 on
        the host's clock, mode): the guest's clock is matched to the host's
        at the command's return."""
        text = self.run(f"kcmd nic history {nic}")
        returned = time.monotonic()
        m = HISTORY_NOW.search(text)
        if not m:
            return []
        now = int(m.group(1)) + int(m.group(2)) / 1e6
        changes = [(returned - t0 - (now - (int(a) + int(b) / 1e6)), mode)
                   for a, b, mode in HISTORY_LINE.findall(text[m.end():])]
        before = [c for c in changes if c[0] <= 0]
        start = before[-1][1] if before else "interrupt"
        return [(0.0, start)] + [c for c in changes if c[0] > 0]


def run_phase(load, name, seconds):
    """Drives the load through one phase; returns when it ends, once the
    requests it started have completed (a steady phase's last requests, which
    would otherwise land in the next idle phase, probes that are the same in
    every mode)."""
    end = time.monotonic() + seconds
    if name == "steady":
        load.full.set()
        time.sleep(seconds)
    elif name == "bursts":
        while time.monotonic() < end:
            load.full.set()
            time.sleep(min(BURST_ON, max(0, end - time.monotonic())))
            load.full.clear()
            time.sleep(min(BURST_OFF, max(0, end - time.monotonic())))
    else:
        time.sleep(seconds)
    load.full.clear()
    load.drain()


def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))] if values else 0.0


def set_mode(console, nic, mode):
    if mode == "adaptive":
        console.run("scopectl msg-mode sync 2000000")  # 2 s: a busy host stalls QEMU
        console.run("scopectl link nicmode --binding msg")
        return
    console.run(f"kcmd nic mode {nic} {FIXED[mode]}")


def unset_mode(console, mode):
    if mode == "adaptive":
        console.run("scopectl unlink nicmode")
        console.run("scopectl msg-mode oneway")


def run_mode(args, console, port, nic, mode, plot):
    """The four phases with the NIC in mode; returns {phase: figures}."""
    set_mode(console, nic, mode)
    readers = httpcheck.open_paced(port, PATH, EXPECTED, args.connections)
    load = Load(readers)
    time.sleep(0.5)
    t0 = time.monotonic()
    results, cpu_before, start = {}, console.cpu_ms(), time.monotonic()
    for name, seconds in phases(args.scale):
        run_phase(load, name, seconds)
        cpu_after, end = console.cpu_ms(), time.monotonic()
        with load.lock:
            done = [(e, lat) for e, lat in load.done if start <= e < end]
        busy = cpu_after[0] - cpu_before[0]
        total = busy + cpu_after[1] - cpu_before[1]
        results[name] = {"requests": len(done), "seconds": end - start,
                         "p90": percentile([lat for _, lat in done], 0.9) * 1000,
                         "busy_ms": busy, "busy_share": busy / total if total else 0.0}
        cpu_before, start = cpu_after, end
    timeline = console.mode_timeline(nic, t0)
    errors = load.errors
    with load.lock:
        ends = [e - t0 for e, _ in load.done]
    load.close()
    unset_mode(console, mode)
    if plot is not None:
        plot.update({"ends": ends, "timeline": timeline,
                     "phases": [(n, s) for n, s in phases(args.scale)]})
    results["errors"] = errors
    return results


def merge(rounds):
    """Sums the rounds of one mode, phase by phase."""
    merged = {}
    for r in rounds:
        for phase, f in r.items():
            if phase == "errors":
                merged["errors"] = merged.get("errors", 0) + f
                continue
            m = merged.setdefault(phase, {"requests": 0, "seconds": 0.0, "busy_ms": 0,
                                          "total_ms": 0, "p90s": []})
            m["requests"] += f["requests"]
            m["seconds"] += f["seconds"]
            m["busy_ms"] += f["busy_ms"]
            m["total_ms"] += f["busy_ms"] / f["busy_share"] if f["busy_share"] else 0
            m["p90s"].append(f["p90"])
    for phase, m in merged.items():
        if phase == "errors":
            continue
        m["rps"] = m["requests"] / m["seconds"] if m["seconds"] else 0.0
        m["busy_share"] = m["busy_ms"] / m["total_ms"] if m["total_ms"] else 0.0
        m["per_busy_s"] = m["requests"] / (m["busy_ms"] / 1000) if m["busy_ms"] else 0.0
        m["p90"] = sorted(m["p90s"])[len(m["p90s"]) // 2]  # the median round's
    return merged


def overall(m):
    requests = sum(f["requests"] for p, f in m.items() if p != "errors")
    busy = sum(f["busy_ms"] for p, f in m.items() if p != "errors")
    seconds = sum(f["seconds"] for p, f in m.items() if p != "errors")
    return {"rps": requests / seconds if seconds else 0.0,
            "per_busy_s": requests / (busy / 1000) if busy else 0.0}


def verdicts(figures, phase_names, icount=False):
    """(phase, deciding figure, adaptive / best fixed, met) per phase, then
    overall.  icount: the busy phases by requests per CPU-busy second."""
    rows = []
    for phase in phase_names:
        i, p, a = (figures[m][phase] for m in MODES)
        if phase in ("bursts", "steady") and icount:
            best = max(i["per_busy_s"], p["per_busy_s"])
            ratio = a["per_busy_s"] / best if best else 0.0
            rows.append((phase, "requests per CPU-busy second", ratio, ratio >= 0.95))
        elif phase in ("bursts", "steady"):
            best = max(i["rps"], p["rps"])
            ratio = a["rps"] / best if best else 0.0
            rows.append((phase, "requests/s", ratio, ratio >= 0.95))
        else:
            best = min(i["busy_share"], p["busy_share"])
            ratio = best / a["busy_share"] if a["busy_share"] else 1.0
            rows.append((phase, "CPU busy share (best / adaptive)", ratio, ratio >= 0.95))
    o = {m: overall(figures[m]) for m in MODES}
    best = max(o["interrupt"]["per_busy_s"], o["polling"]["per_busy_s"])
    ratio = o["adaptive"]["per_busy_s"] / best if best else 0.0
    rows.append(("whole run", "requests per CPU-busy second", ratio, ratio > 1.0))
    return rows, o


def table(args, figures, nic):
    names = [n for n, _ in phases(args.scale)]
    lines = [f"{nic}, {args.connections} keep-alive connections, {args.rounds} round(s) per mode, "
             f"phases {', '.join(f'{n} {s:g}s' for n, s in phases(args.scale))}; "
             f"{'TCG -icount' if args.icount else 'plain TCG'} q35, 1 CPU, 256M", "",
             "| phase | mode | requests/s | p90 ms | CPU busy | requests per busy s |",
             "|---|---|---:|---:|---:|---:|"]
    for phase in names:
        for mode in figures:
            f = figures[mode][phase]
            lines.append(f"| {phase} | {mode} | {f['rps']:.0f} | {f['p90']:.1f} | "
                         f"{f['busy_share'] * 100:.1f}% | {f['per_busy_s']:.0f} |")
    rows, o = verdicts(figures, names, args.icount)
    lines += ["", "| mode | whole run requests/s | requests per busy s | errors |",
              "|---|---:|---:|---:|"]
    for mode in MODES:
        lines.append(f"| {mode} | {o[mode]['rps']:.0f} | {o[mode]['per_busy_s']:.0f} | "
                     f"{figures[mode].get('errors', 0)} |")
    lines += ["", "| phase | deciding figure | adaptive / best fixed | target |", "|---|---|---:|---|"]
    for phase, what, ratio, met in rows:
        target = "> 1 (better than both)" if phase == "whole run" else ">= 0.95"
        lines.append(f"| {phase} | {what} | {ratio:.2f} | {target}: {'met' if met else 'not met'} |")
    return lines


MODE_Y = {"interrupt": 0, "hybrid": 1, "polling": 2}
MODE_COLOUR = {"interrupt": "#2b6cb0", "hybrid": "#d69e2e", "polling": "#c53030"}


def svg(plot, path, nic):
    """Load (requests per BIN_SECONDS, as req/s) and the NIC's mode over time."""
    ends, timeline = plot["ends"], plot["timeline"]
    length = sum(s for _, s in plot["phases"])
    bins = [0] * (int(length / BIN_SECONDS) + 1)
    for e in ends:
        if 0 <= e < length:
            bins[int(e / BIN_SECONDS)] += 1
    peak = max(max(bins) / BIN_SECONDS, 1.0)
    w, h, left, top, load_h, mode_h = 900, 360, 60, 30, 200, 60
    x = lambda t: left + (w - left - 20) * t / length  # noqa: E731
    y_load = lambda r: top + load_h - load_h * r / peak  # noqa: E731
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           'font-family="sans-serif" font-size="11">',
           f'<text x="{left}" y="16" font-size="13">{nic}: load and mode over time, '
           'adaptive (nicmode linked msg)</text>']
    at = 0.0
    for name, seconds in plot["phases"]:
        out.append(f'<line x1="{x(at):.1f}" y1="{top}" x2="{x(at):.1f}" '
                   f'y2="{top + load_h + mode_h + 20}" stroke="#ccc"/>')
        out.append(f'<text x="{x(at) + 4:.1f}" y="{top + 12}" fill="#666">{name}</text>')
        at += seconds
    points = " ".join(f"{x((i + 0.5) * BIN_SECONDS):.1f},{y_load(b / BIN_SECONDS):.1f}"
                      for i, b in enumerate(bins))
    out.append(f'<polyline fill="none" stroke="#2f855a" stroke-width="1.5" points="{points}"/>')
    out.append(f'<text x="4" y="{top + 10}">{peak:.0f} req/s</text>')
    out.append(f'<text x="4" y="{top + load_h}">0</text>')
    base = top + load_h + 20
    for mode, level in MODE_Y.items():
        yy = base + mode_h - level * mode_h / 2
        out.append(f'<text x="4" y="{yy + 4:.1f}" fill="{MODE_COLOUR[mode]}">{mode}</text>')
    for (t, mode), nxt in zip(timeline, timeline[1:] + [(length, None)]):
        if mode not in MODE_Y or t >= length:
            continue  # after the phases (the unlink's fallback)
        yy = base + mode_h - MODE_Y[mode] * mode_h / 2
        out.append(f'<line x1="{x(t):.1f}" y1="{yy:.1f}" x2="{x(min(nxt[0], length)):.1f}" '
                   f'y2="{yy:.1f}" stroke="{MODE_COLOUR[mode]}" stroke-width="4"/>')
    out.append(f'<text x="{left}" y="{h - 8}" fill="#666">time, {length:g} s; load: completed '
               f'requests per {BIN_SECONDS:g} s, as req/s; mode: `kcmd nic history`</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    global EXPECTED
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build")
    p.add_argument("--nic", default="e1000", choices=sorted(NIC_NAMES))
    p.add_argument("--connections", type=int, default=8)
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--scale", type=float, default=1.0, help="phase lengths x this")
    p.add_argument("--memory", default="256M")
    p.add_argument("--svg", default=os.path.join("docs", "nic-adaptive.svg"))
    p.add_argument("--icount", action="store_true",
                   help="QEMU -icount: busy phases decided by instructions per request")
    p.add_argument("--with-hybrid", action="store_true",
                   help="also the NIC fixed in hybrid mode (for information)")
    args = p.parse_args()
    os.chdir(ROOT)
    with open(os.path.join("userland", "rootfs", "www", "small.txt"), "rb") as f:
        EXPECTED = f.read()
    os.makedirs(os.path.join(args.build, "bench"), exist_ok=True)
    port = httpcheck.free_port()
    log = os.path.join(args.build, "bench", f"net-phased-{args.nic}.log")
    length = sum(s for _, s in phases(args.scale))
    guest = Guest(args.build, args.nic, {port: BENCH_PORT}, log,
                  timeout=int(240 + args.rounds * 3 * (length + 60)), memory=args.memory,
                  icount=args.icount)
    nic = NIC_NAMES[args.nic]
    modes = MODES[:2] + (("hybrid",) if args.with_hybrid else ()) + MODES[2:]
    rounds, plot = {m: [] for m in modes}, {}
    try:
        httpd = guest.boot()
        if not httpd or not httpd.startswith("serving"):
            print(f"bench_net_phased: no web server ({httpd}); see {log}")
            return 1
        console = Console(guest)
        console.run(f"httpd -q -p {BENCH_PORT} &")
        console.run("scopectl load /aspects/nicmode.o")
        time.sleep(1)
        for r in range(args.rounds):
            order = modes[r % len(modes):] + modes[:r % len(modes)]  # no mode always first
            for mode in order:
                want = plot if mode == "adaptive" and not plot else None
                rounds[mode].append(run_mode(args, console, port, nic, mode, want))
                f = rounds[mode][-1]
                print(f"round {r + 1} {mode:9} " + "  ".join(
                    f"{ph} {f[ph]['requests']} in {f[ph]['seconds']:.1f}s "
                    f"p90 {f[ph]['p90']:.1f}ms busy {f[ph]['busy_ms'] * 1000:.0f}us "
                    f"({f[ph]['busy_share'] * 100:.1f}%)"
                    for ph, _ in phases(args.scale)), flush=True)
        print(console.run(f"kcmd nic stats {nic}"))
        print(console.run("scopectl stats nicmode"))
    finally:
        guest.stop()
    figures = {m: merge(rounds[m]) for m in modes}
    lines = table(args, figures, args.nic)
    print("\n".join([""] + lines))
    with open(os.path.join(args.build, "bench", "net-phased.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    if plot and args.svg:
        svg(plot, args.svg, args.nic)
        print(f"plot: {args.svg}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
