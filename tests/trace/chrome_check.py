#!/usr/bin/env python3
"""Structural check of a Chrome trace JSON file as `mscope convert --chrome`
writes it, for Perfetto.

Why a module of its own: the host tests check a converted synthetic trace
with it, and the QEMU test checks a trace captured from the OS with the same
rules.  check_chrome_trace(doc) returns the problems found (empty: it
passes); `chrome_check.py OUT.json` prints them and exits 1 when there are.
"""
import json
import numbers
import sys

PHASES = set("BEXiIMCbnesftPOND")  # the Trace Event Format's phases
REQUIRED = ("ph", "ts", "pid", "tid", "name")
MAX_PROBLEMS = 20


def is_number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def event_problems(i, ev):
    """What is wrong with event i on its own."""
    if not isinstance(ev, dict):
        return [f"event {i} is not an object"]
    missing = [k for k in REQUIRED if k not in ev]
    if missing:
        return [f"event {i} ({ev.get('name', '?')}) has no {', '.join(missing)}"]
    problems = []
    if ev["ph"] not in PHASES:
        problems.append(f"event {i} ({ev['name']}) has an unknown phase {ev['ph']!r}")
    if not isinstance(ev["name"], str) or not ev["name"]:
        problems.append(f"event {i} has an empty or non-string name {ev['name']!r}")
    if not is_number(ev["ts"]) or ev["ts"] < 0:
        problems.append(f"event {i} ({ev['name']}) has ts {ev['ts']!r}, not a time in µs")
    for key in ("pid", "tid"):
        if not isinstance(ev[key], int) or isinstance(ev[key], bool):
            problems.append(f"event {i} ({ev['name']}) has {key} {ev[key]!r}, not an integer")
    if ev["ph"] == "X" and "dur" not in ev:
        problems.append(f"X event {i} ({ev['name']}) has no dur")
    elif ev["ph"] == "X" and (not is_number(ev["dur"]) or ev["dur"] < 0):
        problems.append(f"X event {i} ({ev['name']}) has dur {ev.get('dur')!r}, not a duration")
    if ev["ph"] == "M" and not (isinstance(ev.get("args"), dict) and ev["args"].get("name")):
        problems.append(f"M event {i} ({ev['name']}) names nothing (args.name)")
    return problems


def order_problems(events):
    """Timestamps must not go back within a thread (in file order)."""
    last, problems = {}, []
    for i, ev in enumerate(events):
        if ev["ph"] == "M":
            continue
        thread = (ev["pid"], ev["tid"])
        if thread in last and ev["ts"] < last[thread][1]:
            problems.append(f"event {i} ({ev['name']}) at ts {ev['ts']} goes back in thread "
                            f"{thread} (event {last[thread][0]} was at {last[thread][1]})")
        last[thread] = (i, ev["ts"])
    return problems


def naming_problems(events):
    """Every thread with events has a thread_name, every process a
    process_name."""
    named_threads = {(e["pid"], e["tid"]) for e in events
                     if e["ph"] == "M" and e["name"] == "thread_name"}
    named_processes = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    problems = []
    for pid, tid in sorted({(e["pid"], e["tid"]) for e in events if e["ph"] != "M"}):
        if (pid, tid) not in named_threads:
            problems.append(f"thread {tid} of process {pid} has events but no thread_name")
        if pid not in named_processes:
            problems.append(f"process {pid} has events but no process_name")
            named_processes.add(pid)
    return problems


def check_chrome_trace(doc):
    """The problems of a parsed Chrome trace document ({"traceEvents": [...]}
    or a bare list), at most MAX_PROBLEMS of them."""
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        return ["no traceEvents list"]
    if not any(isinstance(e, dict) and e.get("ph") != "M" for e in events):
        return ["no events besides metadata"]
    problems = [p for i, ev in enumerate(events) for p in event_problems(i, ev)]
    if not problems:
        problems = order_problems(events) + naming_problems(events)
    return problems[:MAX_PROBLEMS]


def check_chrome_file(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        return [f"{path}: {e}"]
    return check_chrome_trace(doc)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: chrome_check.py OUT.json")
    problems = check_chrome_file(sys.argv[1])
    for p in problems:
        print(p)
    print(f"{sys.argv[1]}: {'ok' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
