"""The trace stream end to end, in QEMU: the OS (e1000, a virtio console
port) serves a file while tools/mscope records the kernel's events and the
net.* and vfs.* join points over the console port; one HTTP request is made
meanwhile.  Then Debian's babeltrace2 must read the directory as it is, the
request's join points must be there in order with increasing timestamps,
the counts must add up (mscope: recorded = delivered + dropped, every
delivered event in the files), the names of the processes must travel in
the stream, and the Chrome JSON of the trace must pass the structural check.
httpd is in the trace map (uscope, mode 4): mscope stacks must fold its
user stacks from main down to the request's system calls.  The host analyzer (build/host/analyze, the OS's /bin/analyze built for the
host) must find the request's latencies, and its Prometheus output must pass
Debian's promtool with cumulative buckets; /bin/analyze in the OS and the
host's build must print the same analysis (latencies, and the requests'
breakdown as text and CSV) of a trace the OS wrote, with a request served
meanwhile; httpd's /metrics (join-point counts, telemetry, NIC counters,
aspects) must pass promtool with counters that only go up, and /explorer
must be the build's page.  Then an
aspect is woven over the
same port (mscope aspect link, relink, stats, unlink: the host's control
channel).

    run_capture(build, kernel, log, report)   # report(name, status, seconds, log, note)
"""
import json
import os
import re
import signal
import socket
import struct
import subprocess
import tempfile
import time

import httpcheck
from chrome_check import check_chrome_trace
from guest import Guest, boot_forwarded

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MSCOPE = os.path.join(ROOT, "tools", "mscope")
CHECKS = ["boot", "record-complete", "babeltrace2-reads-it", "request-in-order",
          "names-travel", "chrome-json"]
# What serving one file does, in order (tests/net: httpd's loop).
REQUEST = ["net.accept:exit", "net.recv:exit", "vfs.open:exit", "vfs.read:exit",
           "net.send:exit", "vfs.close:exit"]
LINE = re.compile(r"^\[(\d+)\] \S+ microscope (\S+): \{ cpu_id = (\d+) \}")
COUNTS = re.compile(r"recorded (\d+), delivered (\d+), dropped (\d+)")
# What /metrics must hold besides httpd's own (the scrape counts net.* calls).
METRICS_FAMILIES = ["microscope_joinpoint_calls_total{", "microscope_telemetry_produced_total{",
                    "microscope_telemetry_delivered_total{", "microscope_telemetry_dropped_total{",
                    'microscope_nic_events_total{nic="', "microscope_aspect_info{",
                    "microscope_process_cpu_seconds_total{"]


def request_in_order(lines):
    """Finds REQUEST as a subsequence of the events of one CPU with times
    that increase; returns None, or what is missing."""
    events = [(int(m.group(1)), m.group(2), m.group(3)) for m in map(LINE.match, lines) if m]
    for start, (_, name, cpu) in enumerate(events):
        if name != REQUEST[0]:
            continue
        wanted, last = 1, events[start][0]
        for time_, name_, cpu_ in events[start + 1:]:
            if wanted == len(REQUEST):
                break
            if cpu_ == cpu and name_ == REQUEST[wanted]:
                if time_ <= last:
                    return f"{name_} at {time_} does not come after {last}"
                wanted, last = wanted + 1, time_
        if wanted == len(REQUEST):
            return None
    return "no accept followed by " + " -> ".join(REQUEST[1:]) + " on one CPU"


def scrape(port):
    response = httpcheck.get(port, "/metrics")
    return response[-1].decode() if response and response[0] == 200 else None


def samples(text):
    """{series: value} of a Prometheus text (comments left out)."""
    found = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            found[series] = float(value)
    return found


def metrics_problems(port):
    """httpd's /metrics, scraped twice with requests between: promtool finds
    no fault, counters do not go down, the duration buckets are cumulative
    and end at +Inf = _count.  Returns (problem or None, the second text)."""
    first = scrape(port)
    for _ in range(3):
        httpcheck.get(port, "/small.txt")
    second = scrape(port)
    if first is None or second is None:
        return "GET /metrics failed", ""
    check = subprocess.run(["promtool", "check", "metrics"], input=second, capture_output=True,
                           text=True)
    if check.returncode:
        return "promtool: " + (check.stdout + check.stderr).strip()[:200], second
    a, b = samples(first), samples(second)
    for family in METRICS_FAMILIES:
        if not any(series.startswith(family) for series in b):
            return f"no {family} in /metrics", second
    for series, value in a.items():
        counter = series.startswith(("httpd_requests_total", "httpd_request_duration_seconds",
                                     "microscope_process_cpu_seconds_total",
                                     "microscope_joinpoint_calls_total", "microscope_telemetry_",
                                     "microscope_nic_events_total", "microscope_aspect_events_total",
                                     "microscope_request_kernel_seconds_total"))
        if counter and series in b and b[series] < value:
            return f"{series} went down: {value} -> {b[series]}", second
    buckets = [v for k, v in b.items() if k.startswith("httpd_request_duration_seconds_bucket")]
    if buckets != sorted(buckets) or \
            b.get('httpd_request_duration_seconds_bucket{le="+Inf"}') != \
            b.get("httpd_request_duration_seconds_count"):
        return "duration buckets not cumulative or not ending at +Inf = count", second
    if b.get('httpd_requests_total{code="2xx"}', 0) < a.get('httpd_requests_total{code="2xx"}', 0) + 3:
        return "the three requests between the scrapes are not counted", second
    recv = 'microscope_joinpoint_calls_total{joinpoint="net.recv"}'
    if b.get(recv, 0) < a.get(recv, 0) + 3:
        return "net.recv's count did not grow with the requests", second
    return None, second


def explorer_problems(build, port):
    """The Latency Explorer as httpd serves it live: /explorer is the build's
    page and ECharts byte for byte, and /rscfl (its data) is JSON."""
    for name in ("index.html", "explorer.js", "echarts.min.js"):
        response = httpcheck.get(port, "/explorer/" + ("" if name == "index.html" else name))
        with open(os.path.join(build, "explorer", "www", name), "rb") as f:
            if not response or response[0] != 200 or response[-1] != f.read():
                return f"/explorer/{name} is not the build's {name}"
    response = httpcheck.get(port, "/rscfl")
    try:
        json.loads(response[-1])["requests"]
    except (TypeError, ValueError, KeyError):
        return "/rscfl is not JSON with requests"
    return None


def stacks_problems(out_dir, work):
    """mscope stacks on the trace (httpd in the trace map, mode 4): folded
    stacks of httpd through main down to the system calls of the request,
    named from its ELF.  Returns (problem or None, the output)."""
    folded = os.path.join(work, "folded")
    run = subprocess.run([MSCOPE, "stacks", out_dir, "--folded", folded], capture_output=True,
                         text=True)
    lines = open(folded).read().splitlines() if os.path.exists(folded) else []
    wanted = [l for l in lines if l.startswith("httpd;") and ";main;" in l and
              re.search(r";(accept|sendto|recvfrom) \d+$", l)]
    if run.returncode or not wanted:
        return "no folded stack of httpd's request calls through main", run.stdout + "\n".join(lines)
    chrome = os.path.join(work, "stacks.json")
    subprocess.run([MSCOPE, "convert", out_dir, "--chrome", chrome], capture_output=True)
    spans = [e for e in json.load(open(chrome))["traceEvents"] if e.get("ph") == "X" and
             "main" in e.get("args", {}).get("user_stack", [])]
    if not spans:
        return "no system call span in the Chrome JSON carries a stack through main", \
            "\n".join(lines)
    return None, "\n".join(lines)


def record_around(arguments, action):
    """Runs `mscope record ARGUMENTS` until it says the trace runs, then
    action(), then stops it (SIGINT, as a user's ^C): the capture holds
    whatever action made the OS do, however slow the host.  Returns (exit
    status, mscope's output, action's result)."""
    mscope = subprocess.Popen([MSCOPE, "record"] + arguments, cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env=dict(os.environ, PYTHONUNBUFFERED="1"))
    lines = []
    for line in mscope.stdout:  # "os: trace started" comes once the OS records
        lines.append(line)
        if "trace started" in line:
            break
    result = action()
    mscope.send_signal(signal.SIGINT)
    try:
        output, _ = mscope.communicate(timeout=180)  # only against a hang
    except subprocess.TimeoutExpired:
        mscope.kill()
        output, _ = mscope.communicate()
        output += "\n(mscope did not finish: timed out)"
    return mscope.returncode, "".join(lines) + output, result


def request_then_another(port):
    """One request, and the answer to a second one: httpd serves from one
    poll() loop, and the first connection's end (the client's FIN) reaches it
    before the second's SYN, so once the second is answered the first's send
    and close have returned and their records are written.  (The first
    answer alone can reach the host while httpd's send has yet to return:
    lwIP's thread sends it.)  Returns the first response."""
    response = httpcheck.get(port, "/small.txt")
    httpcheck.get(port, "/small.txt")
    return response


def record(sock, out_dir, port, small):
    """mscope record around a request (and the one after it); returns (exit
    status, its output, whether the request was answered right)."""
    status, output, response = record_around(
        ["--attach", sock, "-p", "net.*", "-p", "vfs.*", "-o", out_dir],
        lambda: request_then_another(port))
    ok = response and response[0] == 200 and (small is None or response[-1] == small)
    return status, output, ok


def analyze_problems(build, out_dir):
    """The host analyzer on the trace: the request's system calls and join
    points have latencies; returns (problem or None, its output)."""
    run = subprocess.run([os.path.join(build, "host", "analyze"), out_dir], capture_output=True,
                         text=True)
    missing = [k for k in ("syscall accept", "syscall recvfrom", "net.accept", "net.send",
                           "vfs.read") if k not in run.stdout]
    if run.returncode or missing:
        return f"analyze exit {run.returncode}, missing {missing}", run.stdout + run.stderr
    return None, run.stdout


def prometheus_problems(build, out_dir):
    """analyze --prometheus through Debian's promtool, and what promtool does
    not check: each histogram's buckets cumulative, ending at +Inf = _count."""
    run = subprocess.run([os.path.join(build, "host", "analyze"), "--prometheus", out_dir],
                         capture_output=True, text=True)
    check = subprocess.run(["promtool", "check", "metrics"], input=run.stdout,
                           capture_output=True, text=True)
    if run.returncode or check.returncode:
        return "promtool: " + (check.stdout + check.stderr).strip()[:200], run.stdout
    buckets, counts = {}, {}
    for line in run.stdout.splitlines():
        m = re.match(r'microscope_latency_seconds_bucket\{event="(.*)",le="(.*)"\} (\d+)$', line)
        if m:
            buckets.setdefault(m.group(1), []).append((m.group(2), int(m.group(3))))
        m = re.match(r'microscope_latency_seconds_count\{event="(.*)"\} (\d+)$', line)
        if m:
            counts[m.group(1)] = int(m.group(2))
    for event, series in buckets.items():
        values = [v for _, v in series]
        if values != sorted(values) or series[-1][0] != "+Inf" or values[-1] != counts.get(event):
            return f"{event}: buckets not cumulative or not ending at +Inf = count", run.stdout
    return (None if buckets else "no histogram"), run.stdout


def get_until_closed(port, path):
    """One GET with Connection: close, read until the server closes: its
    close has run (and been traced) when this returns.  Returns the status
    line, or None."""
    with httpcheck.connect(port, httpcheck.TIMEOUT) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n", 1)[0].decode(errors="replace") if data else None


def same_analysis_in_the_os(guest, build, port, work):
    """A trace the OS writes into httpd's document root with the file sink,
    analyzed in the OS by /bin/analyze and, fetched over HTTP, by the host's
    build: the two outputs must be the same text.  The sink keeps its files
    to their owner (root); httpd runs as www, so root first lets others read
    them, and a fetch before that must be refused.  Returns (problem, log)."""
    guest.run("kcmd trace start -o file:/www/ostrace net.* vfs.*")
    guest.run("ls /bin")
    get_until_closed(port, "/small.txt")  # the whole request, its close included, is traced
    guest.run("kcmd trace stop")
    refused = httpcheck.get(port, "/ostrace/metadata")
    if not refused or refused[0] == 200:
        return f"GET /ostrace/metadata of a 0600 trace: {refused and refused[0]}", ""
    guest.run("chmod 755 /www/ostrace && chmod 644 /www/ostrace/metadata /www/ostrace/stream_0")
    in_os = guest.run("analyze /www/ostrace", timeout=60) or ""
    os_requests = guest.run("analyze --requests /www/ostrace", timeout=60) or ""
    os_csv = guest.run("analyze --requests --csv /www/ostrace", timeout=60) or ""
    local = os.path.join(work, "ostrace")
    os.makedirs(local)
    for name in ("metadata", "stream_0"):
        response = httpcheck.get(port, f"/ostrace/{name}")
        if not response or response[0] != 200:
            return f"GET /ostrace/{name}: {response and response[0]}", in_os
        with open(os.path.join(local, name), "wb") as f:
            f.write(response[-1])
    host = subprocess.run([os.path.join(build, "host", "analyze"), local], capture_output=True,
                          text=True).stdout
    os_lines = [l.rstrip() for l in in_os.splitlines() if l.strip()]
    host_lines = [l.rstrip() for l in host.splitlines() if l.strip()]
    # in_os starts with the command line typed; the analysis is what follows
    if "latency of" not in host or os_lines[-len(host_lines):] != host_lines:
        return "the OS's and the host's analysis differ", f"OS:\n{in_os}\nhost:\n{host}"
    for options, os_text in ((["--requests"], os_requests), (["--requests", "--csv"], os_csv)):
        host_text = subprocess.run([os.path.join(build, "host", "analyze")] + options + [local],
                                   capture_output=True, text=True).stdout
        os_lines = [l.rstrip() for l in os_text.splitlines() if l.strip()]
        host_lines = [l.rstrip() for l in host_text.splitlines() if l.strip()]
        if not host_lines or os_lines[-len(host_lines):] != host_lines:
            return f"analyze {' '.join(options)} differs", f"OS:\n{os_text}\nhost:\n{host_text}"
        host += host_text
    if "1 requests (trace)" not in host:
        return "the request made while the OS traced is not found", host
    return None, host


def same_rscfl_analysis_in_the_os(guest, build, port):
    """A second httpd with accounting (-a, port 8081) serves three requests
    over the loopback; its /rscfl is saved into the document root and
    analyzed by /bin/analyze --rscfl in the OS and, fetched over HTTP, by the
    host's build: the same text and CSV, holding those requests."""
    guest.run("httpd -a -q -b -p 8081")
    for _ in range(3):
        guest.run("httpget -o /dev/null http://127.0.0.1:8081/small.txt")
    guest.run("httpget -o /www/rscfl.json http://127.0.0.1:8081/rscfl")
    outputs = {}
    for options in (["--rscfl"], ["--csv", "--rscfl"]):
        outputs[" ".join(options)] = guest.run(f"analyze {' '.join(options)} /www/rscfl.json",
                                               timeout=60) or ""
    response = httpcheck.get(port, "/rscfl.json")
    if not response or response[0] != 200:
        return "GET /rscfl.json failed", ""
    with tempfile.NamedTemporaryFile(suffix=".json") as saved:
        saved.write(response[-1])
        saved.flush()
        log = ""
        for options, os_text in outputs.items():
            host = subprocess.run([os.path.join(build, "host", "analyze")] + options.split() +
                                  [saved.name], capture_output=True, text=True).stdout
            log += host
            os_lines = [l.rstrip() for l in os_text.splitlines() if l.strip()]
            host_lines = [l.rstrip() for l in host.splitlines() if l.strip()]
            if not host_lines or os_lines[-len(host_lines):] != host_lines:
                return f"analyze {options} differs", f"OS:\n{os_text}\nhost:\n{host}"
    if "3 requests (rscfl)" not in log or log.count("/small.txt") < 3:
        return "the three accounted requests are not found", log
    return None, log


def explorer_live(accounted_port):
    """The Latency Explorer of the accounted httpd (8081) in headless
    Chromium: it loads the OS's /rscfl live and passes explorer_check.js's
    checks on what it loaded.  Returns (status, note, log)."""
    import explorer_test
    try:
        found = explorer_test.check_page(f"http://127.0.0.1:{accounted_port}/explorer/", "-",
                                         "os-live")
    except explorer_test.Skip as e:
        return "skip", str(e), ""
    except explorer_test.Failure as e:
        return "FAIL", str(e).splitlines()[0], str(e)
    return "ok", f"{found['requests']} requests drawn", ""


def weave_over_the_port(build, sock):
    """mscope aspect link (put + load + link), relink, stats and unlink over
    the console port; returns (problem or None, the transcript)."""
    aspect = os.path.join(build, "aspects", "latency.o")
    steps = [(["link", aspect, "--binding", "shm"], "aspect latency linked shm"),
             (["relink", "latency", "--binding", "msg"], "aspect latency relinked msg"),
             (["stats"], "latency"),
             (["unlink", "latency"], "ok")]
    transcript = ""
    for arguments, expected in steps:
        run = subprocess.run([MSCOPE, "aspect"] + arguments + ["--attach", sock], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        transcript += f"$ mscope aspect {' '.join(arguments)}\n{run.stdout}{run.stderr}"
        if run.returncode or expected not in run.stdout:
            return f"mscope aspect {arguments[0]}: no '{expected}'", transcript
    return None, transcript


def run_capture(build, kernel, log, report):
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="trace-test-")
    sock, out_dir = os.path.join(work, "console.sock"), os.path.join(work, "trace")
    guest, (port, accounted_port), httpd = boot_forwarded(
        2, lambda ports: Guest(build, "e1000", {ports[0]: 80, ports[1]: 8081}, log,
                               kernel=kernel,
                               console_port=f"socket,path={sock},server=on,wait=off"))

    def result(check, problem, text=None):
        report(f"trace/{check}", "FAIL" if problem else "ok", time.monotonic() - started,
               text, problem or "")

    try:
        if not httpd or not httpd.startswith("serving"):
            for check in CHECKS:
                result(check, f"no web server ({httpd})", guest.text[-3000:])
            return
        result("boot", None)
        small = open(os.path.join(build, "user", "root", "www", "small.txt"), "rb").read()
        uscope = subprocess.run([MSCOPE, "send", "--attach", sock,
                                 "uscope trace httpd --mode 4 --budget 8"],
                                cwd=ROOT, capture_output=True, text=True, timeout=120)
        status, output, served = record(sock, out_dir, port, small)
        output = uscope.stdout + output
        woven, transcript = weave_over_the_port(build, sock)
        same, same_log = same_analysis_in_the_os(guest, build, port, work)
        same_rscfl, same_rscfl_log = same_rscfl_analysis_in_the_os(guest, build, port)
        guest.run("kcmd jp attach net.* count")
        scraped, scraped_text = metrics_problems(port)
        explorer = explorer_problems(build, port)
        live = explorer_live(accounted_port)
    finally:
        guest.stop()
    result("aspect-over-the-port", woven, transcript)
    result("analyze-same-in-the-os", same, same_log)
    result("analyze-rscfl-same-in-the-os", same_rscfl, same_rscfl_log)
    result("metrics", scraped, scraped_text)
    result("explorer-served", explorer)
    report("trace/explorer-live-in-chromium", live[0], time.monotonic() - started, live[2], live[1])
    counts = COUNTS.search(output)
    result("record-complete", None if status == 0 and counts and served else
           f"mscope exit {status}, request served: {served}", output)
    bt = subprocess.run(["babeltrace2", "--clock-cycles", out_dir], capture_output=True, text=True)
    lines = bt.stdout.splitlines()
    delivered = int(counts.group(2)) if counts else -1
    result("babeltrace2-reads-it", None if bt.returncode == 0 and len(lines) == delivered else
           f"babeltrace2 exit {bt.returncode}, {len(lines)} events, {delivered} delivered",
           bt.stderr[-3000:])
    result("request-in-order", request_in_order(lines), "\n".join(lines[-200:]))
    named = any(" thread_name: " in l and '"httpd"' in l for l in lines) or \
        any(" process_exec: " in l and '"httpd"' in l for l in lines)
    result("names-travel", None if named else "no thread_name or process_exec names httpd")
    chrome = os.path.join(work, "trace.json")
    conv = subprocess.run([MSCOPE, "convert", out_dir, "--chrome", chrome], capture_output=True,
                          text=True)
    problems = ["mscope convert: exit %d" % conv.returncode] if conv.returncode else \
        check_chrome_trace(json.load(open(chrome)))
    result("chrome-json", "; ".join(problems[:3]) if problems else None,
           conv.stdout + conv.stderr + "\n".join(problems))
    result("analyze", *analyze_problems(build, out_dir))
    result("user-stacks", *stacks_problems(out_dir, work))
    result("prometheus", *prometheus_problems(build, out_dir))


TCP_CHECKS = ["tcp-record-complete"]
TCP_PORT = 7700


def silent_host_let_go(sock):
    """Whether the OS closed a connection that never said anything: recv
    gives b'' (the bound only guards against a hang)."""
    sock.settimeout(120)
    try:
        return sock.recv(1) == b""
    except OSError:
        return False
    finally:
        sock.close()


def run_tcp_capture(build, kernel, log, report):
    """The same stream over TCP (trace_tcp=PORT, for machines without a
    virtio console): a host that connects first and says nothing is let go
    after trace_tcp_idle seconds; then mscope record --attach HOST:PORT, queued
    behind it, must get a complete trace that babeltrace2 reads."""
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="trace-tcp-")
    out_dir = os.path.join(work, "trace")
    guest, (port, http), booted = boot_forwarded(
        2, lambda ports: Guest(build, "e1000", {ports[0]: TCP_PORT, ports[1]: 80}, log,
                               kernel=kernel, append=f"trace_tcp={TCP_PORT} trace_tcp_idle=2"))
    try:
        problem, text = None, ""
        if not booted:
            problem, text = "no boot", guest.text[-3000:]
        else:
            silent = socket.create_connection(("127.0.0.1", port))
            status, text, served = record(f"127.0.0.1:{port}", out_dir, http, None)
            bt = subprocess.run(["babeltrace2", out_dir], capture_output=True, text=True)
            counts = COUNTS.search(text)
            delivered = int(counts.group(2)) if counts else -1
            if not silent_host_let_go(silent):
                problem = "the silent host was never let go"
            elif status or bt.returncode or len(bt.stdout.splitlines()) != delivered:
                problem = (f"mscope exit {status}, babeltrace2 exit {bt.returncode}, "
                           f"{len(bt.stdout.splitlines())} events of {delivered}")
    finally:
        guest.stop()
    report("trace/tcp-record-complete", "FAIL" if problem else "ok", time.monotonic() - started,
           text, problem or "")


FLIGHT_CHECKS = ["flight-recorder"]


def run_flight_capture(build, kernel, log, report):
    """A flight-recorder capture (mscope record --flight): only the newest
    records come, at the end, and the counts still add up (the others are
    dropped, counted): mscope says complete and babeltrace2 reads it."""
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="trace-flight-")
    sock, out_dir = os.path.join(work, "console.sock"), os.path.join(work, "trace")
    guest = Guest(build, "e1000", {}, log, kernel=kernel,
                  console_port=f"socket,path={sock},server=on,wait=off")
    problem, text = None, ""
    try:
        if not guest.boot():
            problem, text = "no boot", guest.text[-3000:]
        else:
            run = subprocess.run([MSCOPE, "record", "--attach", sock, "--flight", "-p", "sched.*",
                                  "-d", "3", "-o", out_dir], cwd=ROOT, capture_output=True,
                                 text=True, timeout=180)
            text = run.stdout + run.stderr
            counts = COUNTS.search(text)
            bt = subprocess.run(["babeltrace2", out_dir], capture_output=True, text=True)
            events = len(bt.stdout.splitlines())
            if run.returncode or not counts or bt.returncode or events != int(counts.group(2)):
                problem = f"mscope exit {run.returncode}, babeltrace2 {bt.returncode}, {events} events"
            elif not events:
                problem = "the snapshot sent nothing"
    finally:
        guest.stop()
    report("trace/flight-recorder", "FAIL" if problem else "ok", time.monotonic() - started,
           text, problem or "")


MARK_CHECKS = ["marks-end-packets"]
# Mark texts whose data stops short of a word (the record's padding follows).
MARK_TEXTS = ["abcde", "abc", "abcdefg"]
# Rounds of marks until packets end in them: a bound against a drain that
# never catches one, not a time.
MARK_ROUNDS_MAX, MARKS_PER_ROUND, PACKETS_WANTED = 12, 1500, 2


def packets_ending_in_short_marks(out_dir):
    """How many packets of the capture end in a user mark whose data stops
    short of its record's last word, found by walking the records (the
    content size alone says nothing when it counts the padding)."""
    if not os.path.isfile(os.path.join(out_dir, "metadata")):
        return 0
    with open(os.path.join(out_dir, "metadata")) as f:
        ids = dict(re.findall(r'name = "([^"]+)";\s*id = (\d+);', f.read()))
    mark_id, found = int(ids["user_mark"]), 0
    for name in os.listdir(out_dir):
        if not name.startswith("stream_"):
            continue
        data = open(os.path.join(out_dir, name), "rb").read()
        packet = 0
        while packet + 72 <= len(data):  # (a capture still running: up to its last whole packet)
            size = struct.unpack_from("<Q", data, packet + 48)[0] // 8
            if packet + size > len(data):
                break
            at, last = packet + 72, None
            while at + 8 <= packet + size:
                ident, words, kind = struct.unpack_from("<HBB", data, at)
                if not words:
                    break
                last, at = (ident, kind, at), at + words * 8
            if last and last[0] == mark_id:
                length = struct.unpack_from("<I", data, last[2] + (16 if last[1] else 8) + 4)[0]
                found += length % 8 != 0
            packet += max(size, 72)
    return found


def run_marks_capture(build, kernel, log, report):
    """Marks whose data stops short of a word, written as fast as a program
    can on one CPU while the drain reads on the other, until packets end in
    them (the drain takes a ring up to its head, between a mark and the
    system call's exit record that follows it): every such packet's content
    ends where the mark's data does, so mscope's count through the Python
    bindings says complete and babeltrace2 reads every event without a
    complaint."""
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="trace-marks-")
    sock, out_dir = os.path.join(work, "console.sock"), os.path.join(work, "trace")
    guest = Guest(build, "e1000", {}, log, kernel=kernel, smp=2,
                  console_port=f"socket,path={sock},server=on,wait=off")
    problem, text = None, ""
    try:
        if not guest.boot():
            problem, text = "no boot", guest.text[-3000:]
        else:
            def write_marks():
                for i in range(MARK_ROUNDS_MAX):
                    guest.run(f"mark {MARK_TEXTS[i % len(MARK_TEXTS)]} {MARKS_PER_ROUND}",
                              timeout=120)
                    if i >= 2 and packets_ending_in_short_marks(out_dir) >= PACKETS_WANTED:
                        return
            status, text, _ = record_around(["--attach", sock, "-o", out_dir], write_marks)
            counts = COUNTS.search(text)
            delivered = int(counts.group(2)) if counts else -1
            bt = subprocess.run(["babeltrace2", out_dir], capture_output=True, text=True)
            complaints = [line for line in bt.stderr.splitlines()
                          if "WARN-MEANINGLESS-HEADER-FIELDS" not in line and
                          "Tracer discarded" not in line]
            events = len(bt.stdout.splitlines())
            ending = packets_ending_in_short_marks(out_dir)
            text += f"\n{ending} packets end in a mark\n" + "\n".join(complaints[:20])
            if status or bt.returncode or events != delivered or complaints:
                problem = (f"mscope exit {status}, babeltrace2 exit {bt.returncode}, "
                           f"{events} events of {delivered}, {len(complaints)} complaints")
            elif not ending:
                problem = "no packet ended in a mark: nothing was tested"
    finally:
        guest.stop()
    report("trace/marks-end-packets", "FAIL" if problem else "ok", time.monotonic() - started,
           text, problem or "")


BROKEN_CHECKS = ["broken-httpd-found"]
BROKEN_PORT = 81
SERVING_HANG_GUARD = 60  # seconds for httpd-slow to listen: a hang guard only


def broken_httpd_problems(folded_text, table_text):
    """The broken build's anomaly where Uscope shows it: folded stacks of
    httpd-slow whose read comes from read_piecewise (under refill) more than
    once per request, and the dual-space table's row read / read_piecewise."""
    reads = [line for line in folded_text.splitlines()
             if line.startswith("httpd-slow;") and re.search(r";read_piecewise;read \d+$", line)]
    count = sum(int(line.rsplit(" ", 1)[1]) for line in reads)
    row = re.search(r"^read\s+read_piecewise\s+(\d+)$", table_text, re.M)
    if not reads or count < 2 or not row:
        return f"{count} reads from read_piecewise in the folded stacks, table row: {bool(row)}"
    return None


def run_broken_httpd_capture(build, kernel, log, report):
    """The deliberately broken httpd (/bin/httpd-slow: a file read 16 bytes
    per system call) traced by name from the host (mscope uscope trace,
    mode 2, budget 3) in a stacks-only capture (mscope record --stacks) while
    /index.html is fetched: mscope stacks must show read_piecewise making
    the reads (docs/USCOPE.md's case study)."""
    started = time.monotonic()
    work = tempfile.mkdtemp(prefix="trace-broken-")
    sock, out_dir = os.path.join(work, "console.sock"), os.path.join(work, "trace")
    guest, (port,), booted = boot_forwarded(
        1, lambda ports: Guest(build, "e1000", {ports[0]: BROKEN_PORT}, log, kernel=kernel,
                               console_port=f"socket,path={sock},server=on,wait=off"))
    problem, text = None, ""
    try:
        if not booted:
            problem, text = "no boot", guest.text[-3000:]
        else:
            with guest.lock:
                mark = len(guest.text)
            guest.run(f"httpd-slow -q -p {BROKEN_PORT} &")
            # It says so once it listens; the bound only guards against a hang.
            serving = re.compile(rf"httpd: serving \S+ on port {BROKEN_PORT}\b")
            if not guest.wait_for(serving, SERVING_HANG_GUARD, mark):
                problem, text = "httpd-slow never said it serves", guest.text[-3000:]
            else:
                subprocess.run([MSCOPE, "uscope", "trace", "httpd-slow", "--mode", "2",
                                "--budget", "3", "--attach", sock], cwd=ROOT,
                               capture_output=True, timeout=120)
                status, output, response = record_around(
                    ["--attach", sock, "--stacks", "-o", out_dir],
                    lambda: httpcheck.get(port, "/index.html"))
                folded = os.path.join(work, "folded")
                stacks = subprocess.run([MSCOPE, "stacks", out_dir, "--folded", folded],
                                        capture_output=True, text=True)
                folded_text = open(folded).read() if os.path.exists(folded) else ""
                text = output + stacks.stdout + folded_text
                if status or not response or response[0] != 200:
                    problem = f"mscope record exit {status}, response {response and response[0]}"
                else:
                    problem = broken_httpd_problems(folded_text, stacks.stdout)
    finally:
        guest.stop()
    report("trace/broken-httpd-found", "FAIL" if problem else "ok", time.monotonic() - started,
           text, problem or "")
