#!/usr/bin/env python3
"""Host tests of the analyzer's requests (build/host/analyze --requests): the
per-request breakdown by subsystem, the slowest, filters and folds, in text,
CSV and JSON, against exact values on generated data.

Why here and shaped so: tests/run.py runs each case of CASES in its host
group (host/analyze/<case>); `analyze_test.py [CASE...]` runs them alone.
The trace is written with ctf_fixture's layout (the kernel's), with join
points of the net and vfs modules; the accounting results are /rscfl's JSON
as httpd writes it, made up here with numbers whose folds are known.
"""
import csv
import io
import json
import os
import random
import re
import importlib.util
import shutil
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

# A copy of the CTF fixture of its own: write_trace changes its events and
# packets for a while, and the host tests run in threads, some of them
# reading the shared module's (tests/trace/mscope_test.py).  The lock keeps
# these tests' own writes one at a time.
_spec = importlib.util.spec_from_file_location("analyze_ctf_fixture",
                                               os.path.join(HERE, "ctf_fixture.py"))
ctf_fixture = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ctf_fixture)
FIXTURE_LOCK = threading.Lock()

TIMEOUT = 60  # seconds: only against hangs


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


def analyzer():
    path = os.path.join(ROOT, "build", "host", "analyze")
    expect(os.path.exists(path), f"no {path}: run make")
    return path


def analyze(*args, status=0):
    proc = subprocess.run([analyzer(), *args], capture_output=True, text=True, timeout=TIMEOUT)
    expect(proc.returncode == status,
           f"analyze {' '.join(args)}: status {proc.returncode}\n{proc.stdout}{proc.stderr}")
    return proc.stdout


# ---------------------------------------------------------------- a trace

NET = {"net.recv": 20, "net.send": 21, "net.close": 22, "net.shutdown": 23}
JOINPOINT_EVENTS = [(1024 + 3 * j + kind, f"{name}:{suffix}", fields)
                    for name, j in NET.items()
                    for kind, suffix, fields in [(0, "entry", [("arg0", "u64")]),
                                                 (1, "exit", [("result", "i64")])]]
RECVFROM, SENDTO, CLOSE, READ, SHUTDOWN = 45, 44, 3, 0, 48


def syscall(ticks, number, inner, exit_ticks, fd=0):
    return [(ticks, "syscall_entry", dict(number=number, arg0=fd))] + inner + \
        [(exit_ticks, "syscall_exit", dict(number=number, result=0))]


def call(name, entry, exit_ticks, arg0, result=0):
    return [(entry, f"{name}:entry", dict(arg0=arg0)),
            (exit_ticks, f"{name}:exit", dict(result=result))]


def request_events():
    """Connections served one after the other by httpd (pid 2): two closed
    with net.close, a third never closed, a fourth ended by close(fd).
    Clock 2.5 GHz: 5 ticks are 2 ns."""
    a, b, c, d = 0xA0, 0xB0, 0xC0, 0xD0
    events = [(10000, "sched_switch", dict(prev_tid=1, next_tid=2, prev_state=0, next_pid=2))]
    events += syscall(20000, RECVFROM, call("net.recv", 21000, 26000, a, 100), 27000)
    events += syscall(30000, READ, [(31000, "vfs.read:entry", dict(arg0=3)),
                                    (33000, "vfs.lookup:call", dict(arg0=7, result=0,
                                                                    duration=1000)),
                                    (36000, "vfs.read:exit", dict(result=10))], 37000)
    events += syscall(40000, SENDTO, call("net.send", 41000, 51000, a, 4096), 52000)
    events += syscall(60000, CLOSE, call("net.close", 61000, 63000, a), 64000)
    events += syscall(69000, RECVFROM, call("net.recv", 70000, 71000, b, 50), 72000)
    events += syscall(79000, SENDTO, call("net.send", 80000, 100000, b, 1000), 101000)
    events += syscall(109000, CLOSE, call("net.close", 110000, 110500, b), 111000)
    events += syscall(119000, RECVFROM, call("net.recv", 120000, 121000, c, 10), 122000)
    # d: no net.close recorded (the socket's file is closed): close(9) ends it
    events += syscall(129000, RECVFROM, call("net.recv", 130000, 131000, d, 20), 132000, fd=9)
    events += syscall(139000, SENDTO, call("net.send", 140000, 142000, d, 500), 143000, fd=9)
    events += syscall(149000, CLOSE, [], 150000, fd=9)
    return events


# (id, pid, start_ns, latency_ns, bytes, status, path, syscall, net, vfs)
TRACE_EXPECTED = [
    ["1", "2", "4400", "16800", "4096", "0", "", "2400", "6800", "2000"],
    ["2", "2", "24000", "16200", "1000", "0", "", "1600", "8600", "0"],
    ["3", "2", "48000", "8000", "500", "0", "", "2000", "1200", "0"],
]


def answered_events():
    """httpd's Connection: close: it answers, shuts its side down, reads on
    until the client has closed (a recv of 0), then closes."""
    e = 0xE0
    events = [(10000, "sched_switch", dict(prev_tid=1, next_tid=2, prev_state=0, next_pid=2))]
    events += syscall(20000, RECVFROM, call("net.recv", 21000, 26000, e, 100), 27000)
    events += syscall(40000, SENDTO, call("net.send", 41000, 51000, e, 4096), 52000)
    events += syscall(60000, SHUTDOWN, call("net.shutdown", 61000, 63000, e), 64000)
    events += syscall(69000, RECVFROM, call("net.recv", 70000, 90000, e, 0), 91000)
    events += syscall(109000, CLOSE, call("net.close", 110000, 110500, e), 111000)
    return events


def write_trace(directory, events=None):
    with FIXTURE_LOCK:
        saved = ctf_fixture.EVENTS, ctf_fixture.BY_NAME, ctf_fixture.CPUS, ctf_fixture.DISCARDED
        ctf_fixture.EVENTS = saved[0] + JOINPOINT_EVENTS
        ctf_fixture.BY_NAME = {name: (eid, fields) for eid, name, fields in ctf_fixture.EVENTS}
        ctf_fixture.CPUS = {0: [events or request_events()]}
        ctf_fixture.DISCARDED = {}
        try:
            return ctf_fixture.write(directory)
        finally:
            (ctf_fixture.EVENTS, ctf_fixture.BY_NAME, ctf_fixture.CPUS,
             ctf_fixture.DISCARDED) = saved


def csv_rows(text):
    return list(csv.reader(io.StringIO(text)))


def trace_requests_break_down_by_subsystem():
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_trace(os.path.join(tmp, "trace"))
        rows = csv_rows(analyze("--requests", "--csv", trace))
        expect(rows[0] == ["id", "pid", "start_ns", "latency_ns", "bytes", "status", "path",
                           "syscall_ns", "net_ns", "vfs_ns"], f"header {rows[0]}")
        expect(rows[1:] == TRACE_EXPECTED, f"rows {rows[1:]}, expected {TRACE_EXPECTED}")


def trace_request_ends_when_the_server_shuts_down():
    """The request is over at net.shutdown: the lingering recv and the close
    after it are the connection's, charged to no request, starting none."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_trace(os.path.join(tmp, "trace"), answered_events())
        rows = csv_rows(analyze("--requests", "--csv", trace))
        expect(len(rows) == 2, f"rows {rows[1:]}, expected one request")
        # start at the first recv (21000 ticks, 4400 ns after the trace's first event);
        # end at the shutdown's entry (61000 ticks): 40000 ticks at 2.5 GHz
        expect(rows[1][2:5] == ["4400", "16000", "4096"], f"row {rows[1]}")


def trace_requests_fold_filter_and_window():
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_trace(os.path.join(tmp, "trace"))
        out = analyze("--requests", "--fold", "sum(net) where latency>=p50",
                      "--fold", "sum(net) where latency>p50", "--fold", "max(latency)",
                      "--fold", "count(id) where vfs>0", trace)
        expected = ["sum(net) where latency>=p50 = 15.4us (15400 ns)",
                    "sum(net) where latency>p50 = 6800ns (6800 ns)",
                    "max(latency) = 16.8us (16800 ns)",
                    "count(id) where vfs>0 = 1"]
        expect(out.splitlines() == expected, f"folds:\n{out}")
        rows = csv_rows(analyze("--requests", "--csv", "--from", "10us", trace))
        expect([r[0] for r in rows[1:]] == ["2", "3"], f"--from 10us kept {rows[1:]}")
        rows = csv_rows(analyze("--requests", "--csv", "--to", "10us", trace))
        expect([r[0] for r in rows[1:]] == ["1"], f"--to 10us kept {rows[1:]}")
        rows = csv_rows(analyze("--requests", "--csv", "--match", "vfs.lookup", trace))
        expect([r[0] for r in rows[1:]] == ["1"], f"--match vfs.lookup kept {rows[1:]}")
        rows = csv_rows(analyze("--requests", "--csv", "--pid", "3", trace))
        expect(rows[1:] == [], f"--pid 3 kept {rows[1:]}")


def trace_requests_json_carries_events():
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_trace(os.path.join(tmp, "trace"))
        data = json.loads(analyze("--requests", "--json", "--events", trace))
        expect(data["subsystems"] == ["syscall", "net", "vfs"], f"{data['subsystems']}")
        first = data["requests"][0]
        expect(first["subsystem_ns"] == [2400, 6800, 2000] and first["latency_ns"] == 16800,
               f"first request {first}")
        names = [e["name"] for e in first["events"]]
        expect(names == ["net.recv", "syscall recvfrom", "vfs.lookup", "vfs.read", "syscall read",
                         "net.send", "syscall sendto", "net.close"], f"events {names}")
        lookup = first["events"][2]
        expect(lookup["start_ns"] == (32000 - 21000) * 2 // 5 and lookup["duration_ns"] == 400,
               f"vfs.lookup {lookup}")


def trace_requests_text_lists_the_slowest():
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_trace(os.path.join(tmp, "trace"))
        out = analyze("--requests", "--top", "1", "--where", "id<=2", trace)
        lines = out.splitlines()
        expect(lines[0] == "2 requests (trace): latency p50 16.2us p90 16.8us p99 16.8us "
                           "max 16.8us", f"summary {lines[0]}")
        expect(lines[2].split() == ["syscall", "4000ns", "18.6%", "2000ns"], f"{lines[2]}")
        expect(lines[3].split() == ["net", "15.4us", "71.9%", "7700ns"], f"{lines[3]}")
        expect(lines[-1].split()[:3] == ["1", "4400ns", "16.8us"] and
               lines[-1].endswith("net 6800ns, syscall 2400ns, vfs 2000ns"), f"{lines[-1]}")


# ---------------------------------------------------------------- accounting results

SUBSYSTEMS = ["net", "vfs", "pipe", "mm"]


def rscfl_requests(count, seed=7):
    """Requests as /rscfl has them, with made-up but exact numbers."""
    rng = random.Random(seed)
    out = []
    for i in range(1, count + 1):
        subs = {name: rng.randrange(0, 2_000_000) for name in SUBSYSTEMS}
        latency_us = rng.randrange(100, 20_000)
        out.append({"id": i, "peer": "10.0.2.2", "method": "GET", "path": f"/f{i % 7}.html",
                    "status": rng.choice([200, 200, 200, 404]), "bytes": rng.randrange(0, 1 << 20),
                    "latency_us": latency_us, "note": "", "accounted": True,
                    "kernel": {"wall_ns": latency_us * 1000, "cpu_ns": 5,
                               "subsystems": [{"name": n, "calls": 3, "inclusive_ns": v * 2,
                                               "exclusive_ns": v} for n, v in subs.items()]},
                    "metrics": {"status": 200}})
    return out


def write_rscfl(path, requests):
    doc = {"accounting": True, "capacity": 64, "units": {"wall_ns": "ns"},
           "subsystem_units": {"exclusive_ns": "ns"},
           "unattributed": {"wall_ns": 1, "subsystems": [{"name": "sched", "exclusive_ns": 9}]},
           "requests": requests}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def nearest_rank(values, percent):
    ordered = sorted(values)
    rank = -(-len(ordered) * int(percent * 10) // 1000)
    return ordered[max(rank, 1) - 1]


def rscfl_folds_are_exact():
    requests = rscfl_requests(500)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_rscfl(os.path.join(tmp, "rscfl.json"), requests)
        latencies = [r["latency_us"] * 1000 for r in requests]
        p99 = nearest_rank(latencies, 99)
        net = {r["id"]: r["kernel"]["subsystems"][0]["exclusive_ns"] for r in requests}
        slow = [r for r in requests if r["latency_us"] * 1000 >= p99]
        want_sum = sum(net[r["id"]] for r in slow)
        out = analyze("--rscfl", path, "--fold", "sum(net) where latency>=p99",
                      "--fold", "count(id) where status=404", "--fold", "p90(vfs)",
                      "--fold", "mean(bytes) where status!=404 and latency<5ms")
        vfs = [r["kernel"]["subsystems"][1]["exclusive_ns"] for r in requests]
        ok = [r["bytes"] for r in requests if r["status"] != 404 and r["latency_us"] < 5000]
        values = [int(re.search(r"= (?:\S+ \()?(\d+)(?: ns\))?$", line).group(1))
                  for line in out.splitlines()]
        expected = [want_sum, sum(r["status"] == 404 for r in requests),
                    nearest_rank(vfs, 90), sum(ok) // len(ok)]
        expect(values == expected, f"folds {values}, expected {expected}\n{out}")


def rscfl_top_and_csv_are_exact():
    requests = rscfl_requests(300, seed=11)
    with tempfile.TemporaryDirectory() as tmp:
        path = write_rscfl(os.path.join(tmp, "rscfl.json"), requests)
        rows = csv_rows(analyze("--rscfl", path, "--csv", "--top", "5",
                                "--where", "status=200"))
        ok = [r for r in requests if r["status"] == 200]
        slowest = sorted(ok, key=lambda r: (-r["latency_us"], r["id"]))[:5]
        want = [[str(r["id"]), "0", "0", str(r["latency_us"] * 1000), str(r["bytes"]), "200",
                 r["path"]] + [str(s["exclusive_ns"]) for s in r["kernel"]["subsystems"]]
                for r in slowest]
        expect(rows[0][7:] == [f"{n}_ns" for n in SUBSYSTEMS], f"header {rows[0]}")
        expect(rows[1:] == want, f"rows {rows[1:]}\nexpected {want}")
        text = analyze("--rscfl", path, "--top", "3")
        lines = text.splitlines()
        expect(lines[0].startswith("300 requests (rscfl): latency p50 "), lines[0])
        top_ids = [line.split()[0] for line in lines[-3:]]
        all_slowest = sorted(requests, key=lambda r: (-r["latency_us"], r["id"]))[:3]
        expect(top_ids == [str(r["id"]) for r in all_slowest], f"top {top_ids}")


def rscfl_refuses_bad_input():
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.json")
        for text in ['{"requests": [{"id": 1,', '{"requests": [' * 40, 'nope', '']:
            with open(bad, "w") as f:
                f.write(text)
            analyze("--rscfl", bad, status=1)
        good = write_rscfl(os.path.join(tmp, "rscfl.json"), rscfl_requests(3))
        analyze("--rscfl", good, "--where", "nosuch>1", status=1)
        analyze("--rscfl", good, "--fold", "avg(net)", status=1)
        analyze("--rscfl", good, "--where", "latency>fast", status=1)
        analyze("--rscfl", os.path.join(tmp, "missing.json"), status=1)


def rscfl_too_large_is_said_so():
    """A file past the 64 MiB the reader takes (here JSON with its requests
    after 65 MiB of spaces): refused as too large, not as JSON cut short at
    the byte where reading stopped."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rscfl.json")
        with open(path, "w") as f:
            f.write("{" + " " * (65 << 20) + '"requests": []}')
        status, out, err = analyze_run("--rscfl", path)
        expect(status == 1 and "larger than 64 MiB" in err and "at byte" not in err,
               f"a 65 MiB file: status {status}\n{out}{err}")


def analyze_run(*args):
    """(status, stdout, stderr) of the analyzer."""
    proc = subprocess.run([analyzer(), *args], capture_output=True, text=True, timeout=TIMEOUT)
    return proc.returncode, proc.stdout, proc.stderr


def write_fixture(directory, cpus):
    """ctf_fixture's trace with cpus ({cpu: [packet events, ...]}) instead of its own."""
    with FIXTURE_LOCK:
        saved = ctf_fixture.CPUS, ctf_fixture.DISCARDED
        ctf_fixture.CPUS, ctf_fixture.DISCARDED = cpus, {}
        try:
            return ctf_fixture.write(directory)
        finally:
            ctf_fixture.CPUS, ctf_fixture.DISCARDED = saved


def padded_packets_are_read_whole():
    """Packets whose padding follows their content (packet_size past
    content_size, legal CTF): every event of every packet is read."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_fixture(os.path.join(tmp, "t"), ctf_fixture.CPUS)
        doc = json.loads(analyze(trace, "--json"))
        expect(doc["events"] == ctf_fixture.EVENT_COUNT,
               f"{doc['events']} events read of {ctf_fixture.EVENT_COUNT}")


def cut_or_corrupt_traces_are_said_so():
    """A stream cut short, or a record whose size is 0: the figures of what
    was read, a line naming the stream and the byte, and status 1."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_trace(os.path.join(tmp, "t"))
        stream = os.path.join(trace, "stream_0")
        with open(stream, "rb") as f:
            whole = f.read()
        with open(stream, "wb") as f:
            f.write(whole[:-5])
        for args in ([trace], [trace, "--requests"]):
            status, out, err = analyze_run(*args)
            expect(status == 1 and "stream_0:" in err and "at byte" in err,
                   f"a cut stream (analyze {' '.join(args)}): status {status}\n{out}{err}")
        corrupt = bytearray(whole)
        corrupt[72 + 2] = 0  # the first record's size in words
        with open(stream, "wb") as f:
            f.write(bytes(corrupt))
        status, out, err = analyze_run(trace)
        expect(status == 1 and "does not fit" in err,
               f"a record of size 0: status {status}\n{out}{err}")


def an_empty_packet_is_read_as_none():
    """A packet with no record between two others, its content ending where
    the metadata's packet context does (before the header's reserved word,
    as the kernel seals one): analyze reads every event of the others, and
    so does babeltrace2."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_fixture(os.path.join(tmp, "t"), ctf_fixture.CPUS)
        stream = os.path.join(trace, "stream_0")
        with open(stream, "rb") as f:
            whole = f.read()
        first = struct.unpack_from("<Q", whole, 48)[0] // 8  # the first packet's size
        end = struct.unpack_from("<Q", whole, 32)[0]  # its timestamp_end
        empty = struct.pack("<I16sI", ctf_fixture.PACKET_MAGIC, ctf_fixture.UUID, 0)
        empty += struct.pack("<QQQQQII", end, end, 68 * 8, 72 * 8, 0, 0, 0)
        with open(stream, "wb") as f:
            f.write(whole[:first] + empty + whole[first:])
        doc = json.loads(analyze(trace, "--json"))
        expect(doc["events"] == ctf_fixture.EVENT_COUNT,
               f"{doc['events']} events read of {ctf_fixture.EVENT_COUNT} past an empty packet")
        if shutil.which("babeltrace2"):
            run = subprocess.run(["babeltrace2", trace], capture_output=True, text=True)
            lines = [line for line in run.stdout.splitlines() if line.startswith("[")]
            expect(run.returncode == 0 and len(lines) == ctf_fixture.EVENT_COUNT,
                   f"babeltrace2 past an empty packet: status {run.returncode}, "
                   f"{len(lines)} events\n{run.stderr[-2000:]}")


def compact_times_start_from_the_packet_begin():
    """A packet whose first record is compact, more than 2^32 ticks after the
    last record the file holds before it (the packet between them was
    refused by the sink): its time comes from the packet's timestamp_begin,
    as babeltrace2 reads it, not from the record before."""
    wrap = ctf_fixture.WRAP
    cpus = {0: [[(1000, "syscall_entry", dict(number=READ, arg0=3))],
                [(wrap + 5000, "syscall_exit", dict(number=READ, result=1))]]}
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_fixture(os.path.join(tmp, "t"), cpus)
        doc = json.loads(analyze(trace, "--json"))
    ticks = wrap + 4000
    want = ticks * 10**9 // ctf_fixture.CLOCK_FREQ
    got = [k["max"] for k in doc["latency_ns"] if k["name"] == "syscall read"]
    expect(got == [want], f"read took {got} ns, the trace says {want}")


def prometheus_buckets_count_exactly():
    """A read of 1002 ns and a write of 1000 ns (a 2.5 GHz clock: 2505 and
    2500 ticks): le="1e-06" holds the write and not the read, though both
    lie in the histogram's bucket [1000, 1003] ns; every family's buckets are
    cumulative and end at +Inf = _count."""
    events = syscall(1000, READ, [], 3505) + syscall(5000, 1, [], 7500)
    with tempfile.TemporaryDirectory() as tmp:
        text = analyze("--prometheus", write_trace(os.path.join(tmp, "t"), events))
    buckets = {}
    for event, le, count in re.findall(
            r'^microscope_latency_seconds_bucket\{event="([^"]+)",le="([^"]+)"\} (\d+)$', text,
            re.MULTILINE):
        buckets.setdefault(event, []).append((le, int(count)))
    read, write = dict(buckets["syscall read"]), dict(buckets["syscall write"])
    expect((read["1e-06"], read["2e-06"], write["1e-06"]) == (0, 1, 1),
           f"le 1 us: read {read['1e-06']}, write {write['1e-06']}; le 2 us: read {read['2e-06']}")
    for event, pairs in buckets.items():
        counts = [c for _, c in pairs]
        expect(counts == sorted(counts) and pairs[-1][0] == "+Inf" and
               f'microscope_latency_seconds_count{{event="{event}"}} {counts[-1]}' in text,
               f"{event}: buckets {pairs}")


def thousands_of_open_connections_are_each_a_request():
    """1100 connections open at once (a load test's clients), each received
    from, then each closed: 1100 requests (the table of open connections once
    held 1024, and the rest were left out without a word)."""
    count = 1100
    events = [(10000, "sched_switch", dict(prev_tid=1, next_tid=2, prev_state=0, next_pid=2))]
    ticks = 20000
    for i in range(count):
        events += call("net.recv", ticks, ticks + 100, 0x1000 + i, 10)
        ticks += 200
    for i in range(count):
        events += call("net.close", ticks, ticks + 100, 0x1000 + i)
        ticks += 200
    with tempfile.TemporaryDirectory() as tmp:
        doc = json.loads(analyze("--requests", "--json", write_trace(os.path.join(tmp, "t"),
                                                                     events)))
    expect(len(doc["requests"]) == count, f"{len(doc['requests'])} requests of {count}")


def many_threads_share_a_slot_and_say_so():
    """More threads than the analyzer keeps apart (256): no crash, and a
    line that says their latencies may mix."""
    switches = [(1000 + 10 * i, "sched_switch",
                 dict(prev_tid=i, next_tid=i + 1, prev_state=0, next_pid=i + 1))
                for i in range(300)]
    other_cpu = [(9000, "syscall_entry", dict(number=0, arg0=3))]
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_fixture(os.path.join(tmp, "t"), {0: [switches], 1: [other_cpu]})
        status, out, err = analyze_run(trace)
        expect(status == 0 and "more than 256 threads" in err,
               f"300 threads: status {status}\n{out}{err}")


def values_that_are_no_numbers_are_refused():
    """--where with NaN, infinity or a value past 2^64 ns: refused."""
    with tempfile.TemporaryDirectory() as tmp:
        good = write_rscfl(os.path.join(tmp, "rscfl.json"), rscfl_requests(3))
        for value in ("nan", "inf", "1e30", "-1"):
            analyze("--rscfl", good, "--where", f"latency<{value}", status=1)


def options_it_cannot_use_are_refused():
    """A count that is no number (--top abc, --pid x: once taken for 0, all),
    two formats at once, and --to or --events without requests (once
    ignored): status 2 and the usage, nothing printed on stdout."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = write_trace(os.path.join(tmp, "t"))
        for args in (["--top", "abc"], ["--top", "-1"], ["--pid", "x"], ["--pid", "2x"],
                     ["--json", "--prometheus"], ["--requests", "--json", "--csv"],
                     ["--to", "1s"], ["--events"]):
            status, out, err = analyze_run(*args, trace)
            expect(status == 2 and "usage:" in err and not out,
                   f"analyze {' '.join(args)}: status {status}\n{out}{err}")
        for args in (["--top", "2"], ["--pid", "2"], ["--requests", "--to", "1s"]):
            status, out, err = analyze_run(*args, trace)
            expect(status == 0, f"analyze {' '.join(args)}: status {status}\n{out}{err}")


CASES = [trace_requests_break_down_by_subsystem, trace_request_ends_when_the_server_shuts_down,
         trace_requests_fold_filter_and_window,
         trace_requests_json_carries_events, trace_requests_text_lists_the_slowest,
         rscfl_folds_are_exact, rscfl_top_and_csv_are_exact, rscfl_refuses_bad_input,
         rscfl_too_large_is_said_so,
         padded_packets_are_read_whole, cut_or_corrupt_traces_are_said_so,
         compact_times_start_from_the_packet_begin, an_empty_packet_is_read_as_none,
         prometheus_buckets_count_exactly,
         thousands_of_open_connections_are_each_a_request,
         many_threads_share_a_slot_and_say_so, values_that_are_no_numbers_are_refused,
         options_it_cannot_use_are_refused]


def case_names():
    return [c.__name__ for c in CASES]


def run_case(name):
    """(problem or None, log) of one case."""
    case = {c.__name__: c for c in CASES}[name]
    try:
        case()
        return None, ""
    except Failure as e:
        return str(e).splitlines()[0] if str(e) else "failed", str(e)
    except Exception as e:
        import traceback
        return f"{type(e).__name__}: {e}", traceback.format_exc()


def main():
    names = sys.argv[1:] or case_names()
    failed = 0
    for i, name in enumerate(names, 1):
        problem, log = run_case(name)
        print(f"{'not ok' if problem else 'ok'} {i} {name}" + (f" # {problem}" if problem else ""))
        if problem:
            failed += 1
            print("\n".join("    " + l for l in log.splitlines()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
