#!/usr/bin/env python3
"""The Latency Explorer in headless Chromium: the site `mscope explore --out`
writes (the page, ECharts from the build, the analyzer's data) is served on
127.0.0.1 and driven by explorer_check.js (puppeteer-core): no console
errors, nothing fetched from elsewhere, bars that match the data, a brush on
the latency axis that selects exactly the requests in its range in both
views, a click that shows a request's breakdown; a screenshot of each case is
kept in build/test-logs/.

Why here and shaped so: tests/run.py runs each case of CASES in its host
group (host/explorer/<case>); `explorer_test.py [CASE...]` runs them alone.
A case skips, saying why, only when Chromium cannot start here.
"""
import functools
import http.server
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import analyze_test  # noqa: E402

MSCOPE = os.path.join(ROOT, "tools", "mscope")
CHECK = os.path.join(HERE, "explorer_check.js")
LOGS = os.path.join(ROOT, "build", "test-logs")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
TIMEOUT = 300  # seconds: only against hangs (10,000 lines under TCG-busy hosts)


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


def chromium_problem():
    """Why Chromium cannot run here, or None."""
    if not os.path.exists(CHROMIUM):
        return f"no {CHROMIUM} (make deps installs Debian's chromium)"
    try:
        proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                               "--dump-dom", "about:blank"], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{CHROMIUM} does not start: {e}"
    return None if proc.returncode == 0 else \
        f"{CHROMIUM} exits {proc.returncode}: {proc.stderr.strip()[-200:]}"


def make_site(site, *source):
    proc = subprocess.run([MSCOPE, "explore", "--out", site, *source], capture_output=True,
                          text=True, timeout=TIMEOUT)
    expect(proc.returncode == 0, f"mscope explore: {proc.stderr}")
    return os.path.join(site, "explorer", "data.json")


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def check_page(url, data, name):
    """Runs explorer_check.js on the page at url (data: the data file, or "-"
    for what the page loads); returns its findings, raises Failure or Skip."""
    problem = chromium_problem()
    if problem:
        raise Skip(f"chromium cannot run: {problem}")
    expect(os.path.exists(os.path.join(ROOT, "build", "explorer", "npm", "node_modules",
                                       "puppeteer-core")), "no puppeteer-core: run make")
    os.makedirs(LOGS, exist_ok=True)
    shot = os.path.join(LOGS, f"explorer-{name}.png")
    proc = subprocess.run(["node", CHECK, url, data, shot], capture_output=True, text=True,
                          timeout=TIMEOUT)
    try:
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise Failure(f"explorer_check.js: status {proc.returncode}\n{proc.stdout}{proc.stderr}")
    expect(not found["errors"], "; ".join(found["errors"])[:300])
    expect(not found["problems"], "; ".join(found["problems"])[:300])
    expect(os.path.getsize(shot) > 10000, f"screenshot {shot} is empty")
    return found


def check_site(site, data, name):
    """Serves site on 127.0.0.1 and checks its page (check_page)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(Quiet, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/explorer/?data=/explorer/data.json"
    try:
        return check_page(url, data, name)
    finally:
        server.shutdown()
        server.server_close()


def explorer_draws_accounting_results():
    with tempfile.TemporaryDirectory() as tmp:
        rscfl = analyze_test.write_rscfl(os.path.join(tmp, "rscfl.json"),
                                         analyze_test.rscfl_requests(500))
        site = os.path.join(tmp, "site")
        check_site(site, make_site(site, "--rscfl", rscfl), "rscfl")


def explorer_shows_a_traced_requests_calls():
    with tempfile.TemporaryDirectory() as tmp:
        trace = analyze_test.write_trace(os.path.join(tmp, "trace"))
        site = os.path.join(tmp, "site")
        data = make_site(site, trace)
        with open(data) as f:
            expect(json.load(f)["requests"][0]["events"], "no calls in the trace's data")
        check_site(site, data, "trace")


def explorer_draws_ten_thousand_requests():
    with tempfile.TemporaryDirectory() as tmp:
        rscfl = analyze_test.write_rscfl(os.path.join(tmp, "rscfl.json"),
                                         analyze_test.rscfl_requests(10000, seed=3))
        site = os.path.join(tmp, "site")
        found = check_site(site, make_site(site, "--rscfl", rscfl), "10000")
        expect(found["requests"] == 10000, f"{found['requests']} requests drawn")
        return f"first draw after {found['firstDrawMs']:.0f} ms"


def explore_says_when_its_port_is_taken():
    """mscope explore on a port another server holds: one line that names
    the address and what to do, status 1, and the site it wrote to serve
    is gone (in a TMPDIR of the test's own)."""
    with tempfile.TemporaryDirectory() as tmp:
        trace = analyze_test.write_trace(os.path.join(tmp, "trace"))
        private = os.path.join(tmp, "tmpdir")
        os.mkdir(private)
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            proc = subprocess.run([MSCOPE, "explore", trace, "--port", str(port)],
                                  capture_output=True, text=True, timeout=TIMEOUT,
                                  stdin=subprocess.DEVNULL, env=dict(os.environ, TMPDIR=private))
        left = os.listdir(private)
    lines = proc.stderr.strip().splitlines()
    expect(proc.returncode == 1 and len(lines) == 1 and f"127.0.0.1:{port}" in lines[0] and
           "--port" in lines[0], f"status {proc.returncode}\n{proc.stderr}")
    expect(not left, f"explore left {left} behind")


def explorer_bins_two_hundred_thousand_requests():
    """More requests than a browser takes as the arguments of one call (a
    spread such as Math.min(...latencies) throws past about 120,000, and the
    page then says "no data"): the page's own code, run in node with
    stand-ins for the page and ECharts (explorer_bins.js), bins every one of
    them.  Drawing that many lines in Chromium takes minutes; the binning is
    what broke."""
    count = 200000
    rng = random.Random(5)
    doc = {"source": "trace", "subsystems": ["net", "vfs"],
           "requests": [{"id": i, "pid": 0, "start_ns": 0,
                         "latency_ns": rng.randrange(100, 20000) * 1000, "bytes": i % 4096,
                         "status": 200, "path": "/",
                         "subsystem_ns": [rng.randrange(0, 2000000) for _ in range(2)]}
                        for i in range(1, count + 1)]}
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "data.json")
        with open(data, "w") as f:
            json.dump(doc, f, separators=(",", ":"))
        proc = subprocess.run(["node", os.path.join(HERE, "explorer_bins.js"), data],
                              capture_output=True, text=True, timeout=TIMEOUT)
    try:
        found = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise Failure(f"explorer_bins.js: status {proc.returncode}\n{proc.stdout}{proc.stderr}")
    expect(found["status"].startswith(f"{count} requests") and found["binned"] == count and
           found["edges"] == 41 and found["inRange"], f"{count} requests: {found}")


CASES = [explorer_draws_accounting_results, explorer_shows_a_traced_requests_calls,
         explorer_draws_ten_thousand_requests, explorer_bins_two_hundred_thousand_requests,
         explore_says_when_its_port_is_taken]


def case_names():
    return [c.__name__ for c in CASES]


def run_case(name):
    """(problem or None, log) of one case; a problem "SKIP why" is a skip."""
    case = {c.__name__: c for c in CASES}[name]
    try:
        note = case()
        return None, note or ""
    except Skip as e:
        return f"SKIP {e}", str(e)
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
        print(f"{'not ok' if problem else 'ok'} {i} {name}" + (f" # {problem}" if problem else "")
              + (f"  ({log})" if log and not problem else ""))
        if problem and not problem.startswith("SKIP"):
            failed += 1
            print("\n".join("    " + l for l in log.splitlines()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
