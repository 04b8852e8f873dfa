"""HTTP checks against a microScope httpd, from the host: the same checks run
against httpd on the Linux host (the `user` group: the programs use Linux's
ABI) and in the OS over QEMU's user network (the `net` group).

Every check takes the server's port on 127.0.0.1 and returns (ok, detail).
Nothing here knows about QEMU.
"""
import os
import random
import re
import socket
import subprocess
import tempfile
import threading
import time

HOST = "127.0.0.1"
# A bound that only guards against a hang: a busy host may take seconds to
# answer, which says nothing about the server; an answer decides.
HANG_GUARD = 60.0
TIMEOUT = HANG_GUARD  # sockets' and curl's bound


# Host ports for QEMU's forwards and the host's own servers are picked below
# the kernel's ephemeral range, where no outgoing connection (of this run or
# of anything else on the host) is given one meanwhile; randomly, so that two
# runs at once rarely try the same; and never twice in one process.
PORT_FLOOR, PORT_CEILING = 10000, 65535
_handed_out, _handed_out_lock = set(), threading.Lock()


def ephemeral_range():
    """The kernel's range for ports it gives out by itself (bind(0), connect)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low, high = (int(x) for x in f.read().split())
        return low, high
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def candidate_ports():
    """Every port in [PORT_FLOOR, PORT_CEILING] outside the ephemeral range, shuffled."""
    low, high = ephemeral_range()
    ports = [p for p in range(PORT_FLOOR, PORT_CEILING + 1) if not low <= p <= high]
    random.SystemRandom().shuffle(ports)
    return ports


def reserve_ports(count):
    """count distinct ports outside the ephemeral range, each held by a socket
    bound to it on 127.0.0.1 (not listening: a connect to it is refused).
    Why held: while one is held nobody can bind it, so the ports picked for a
    run are all distinct and each was free when the last was found.  Returns
    the sockets; close them (release_ports) just before the ports are used."""
    sockets = []
    with _handed_out_lock:
        for port in candidate_ports():
            if len(sockets) == count:
                break
            if port in _handed_out:
                continue
            s = socket.socket()
            try:
                s.bind((HOST, port))
            except OSError:
                s.close()
                continue
            _handed_out.add(port)
            sockets.append(s)
    if len(sockets) < count:
        release_ports(sockets)
        raise RuntimeError(f"no {count} free ports outside the ephemeral range")
    return sockets


def release_ports(sockets):
    for s in sockets:
        s.close()


def pick_ports(count):
    """count distinct TCP ports on 127.0.0.1, outside the ephemeral range, that
    nobody held when the last of them was picked; released for the caller
    (QEMU's hostfwd, a server) to bind.  Where that bind fails anyway (some
    other program took one meanwhile), pick again (guest.boot_forwarded)."""
    sockets = reserve_ports(count)
    ports = [s.getsockname()[1] for s in sockets]
    release_ports(sockets)
    return ports


def free_port():
    """One port as pick_ports picks them."""
    return pick_ports(1)[0]


def connect(port, timeout=TIMEOUT):
    s = socket.create_connection((HOST, port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Reader:
    """A socket's bytes with what was received beyond the last response kept
    for the next one (pipelined responses arrive together)."""

    def __init__(self, sock):
        self.sock, self.data, self.ended = sock, b"", False

    def more(self, size=65536):
        chunk = self.sock.recv(size)
        self.data += chunk
        self.ended = not chunk
        return bool(chunk)


def read_response(sock, head_only=False):
    """Reads one response from a socket or a Reader; returns (status, headers
    dict, body) or None when the connection closed before a status line."""
    reader = sock if isinstance(sock, Reader) else Reader(sock)
    while b"\r\n\r\n" not in reader.data:
        if not reader.more():
            return None
    head, reader.data = reader.data.split(b"\r\n\r\n", 1)
    lines = head.decode(errors="replace").split("\r\n")
    m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0])
    if not m:
        return None
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = 0 if head_only else int(headers.get("content-length", "0"))
    while len(reader.data) < length:
        if not reader.more(max(65536, length - len(reader.data))):
            break
    body, reader.data = reader.data[:length], reader.data[length:]
    return int(m.group(1)), headers, body


def get(port, path, keep_alive=False, timeout=TIMEOUT):
    """One GET on a new connection; returns (status, headers, body) or None."""
    with connect(port, timeout) as s:
        connection = "keep-alive" if keep_alive else "close"
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: {connection}\r\n\r\n".encode())
        return read_response(s)


def check_files(port, files):
    """files: {url path: expected bytes}.  Each is fetched with curl (a
    separate client, as a person would) and must be byte-identical."""
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        for path, expected in files.items():
            out = os.path.join(tmp, "body")
            proc = subprocess.run(["curl", "-s", "-S", "-f", "--max-time", str(int(TIMEOUT)),
                                   "-o", out, f"http://{HOST}:{port}{path}"],
                                  capture_output=True, text=True)
            got = open(out, "rb").read() if os.path.exists(out) else b""
            if proc.returncode != 0:
                problems.append(f"{path}: curl status {proc.returncode}: {proc.stderr.strip()}")
            elif got != expected:
                problems.append(f"{path}: {len(got)} bytes, expected {len(expected)} "
                                f"(first difference at {first_difference(got, expected)})")
    return not problems, "; ".join(problems) or f"{len(files)} files identical"


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def check_keep_alive(port, path, expected, count=5):
    """count requests on one connection, the last three pipelined."""
    with connect(port) as sock:
        s = Reader(sock)
        request = f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        for i in range(count - 3):
            sock.sendall(request)
            r = read_response(s)
            if not r or r[0] != 200 or r[2] != expected:
                return False, f"request {i + 1} on the connection: {r and r[0]}"
        sock.sendall(request * 3)
        for i in range(3):
            r = read_response(s)
            if not r or r[0] != 200 or r[2] != expected:
                return False, f"pipelined request {i + 1}: {r and r[0]}"
    return True, f"{count} requests on one connection (3 pipelined)"


def check_errors(port):
    """404, 405, 400 (a path that climbs out of the docroot) and HEAD."""
    problems = []
    cases = [("GET /no-such-file HTTP/1.1", 404), ("DELETE / HTTP/1.1", 405),
             ("GET /../etc/rc HTTP/1.1", 400), ("GET / HTTP/9.9", 400)]
    for line, status in cases:
        with connect(port) as s:
            s.sendall(f"{line}\r\nHost: x\r\n\r\n".encode())
            r = read_response(s)
        if not r or r[0] != status:
            problems.append(f"{line!r}: {r and r[0]}, expected {status}")
    with connect(port) as s:
        s.sendall(b"HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
        r = read_response(s, head_only=True)
        if not r or r[0] != 200 or "content-length" not in r[1]:
            problems.append(f"HEAD /: {r and r[0]}")
    return not problems, "; ".join(problems) or "404, 405, 400, 400, HEAD as expected"


def answered_or_closed(sock, timeout):
    """Waits for a status line or the end of the connection: returns the
    status, 0 (closed or reset without one), or None (still silent after
    timeout, a hang guard: a server that neither answers nor closes hangs)."""
    sock.settimeout(timeout)
    try:
        data = sock.recv(4096)
    except socket.timeout:
        return None
    except OSError:
        return 0
    m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
    return int(m.group(1)) if m else 0


def serves(port, path, expected):
    """Whether one GET of path answers 200 with expected: whether the server
    still serves others (the bound only guards against a hang)."""
    r = get(port, path, timeout=HANG_GUARD)
    return bool(r) and r[0] == 200 and r[2] == expected


def check_hostile(port, path, expected):
    """Garbage, a 1 MiB header, a half-open connection and a client that
    resets mid-response: each is answered or closed, and the server keeps
    serving others throughout."""
    problems = []
    # garbage
    with connect(port) as s:
        s.sendall(b"\x16\x03\x01\x02\x00\x01garbage \xff\xfe\r\n\r\n")
        status = answered_or_closed(s, HANG_GUARD)
        if status not in (0, 400):
            problems.append(f"garbage: {status}")
    # a 1 MiB header: 413 (or a reset once the server stops reading)
    with connect(port) as s:
        try:
            s.sendall(b"GET / HTTP/1.1\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
        except OSError:
            pass
        status = answered_or_closed(s, HANG_GUARD)
        if status not in (0, 413):
            problems.append(f"1 MiB header: {status}")
    # half-open: a request that never ends; others must not wait for it.  What
    # counts is that the request is served while the half-open connection is
    # still there (it is closed only below), however long a busy host takes.
    half = connect(port)
    half.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
    if not serves(port, path, expected):
        problems.append("not serving while a request is half-sent")
    # a client that resets mid-response
    with connect(port) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /1mib.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(4096)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    half.close()
    if not serves(port, path, expected):
        problems.append("not serving after the hostile clients")
    return not problems, "; ".join(problems) or "garbage, 1 MiB header, half-open, reset: survived"


WRK_SCRIPT = """
-- Counts responses that are not 200 with the expected body.
local expected = os.getenv("WRK_EXPECTED_BODY")
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0; good = 0 end
function response(status, headers, body)
  if status == 200 and body == expected then good = good + 1 else bad = bad + 1 end
end
function done(summary, latency, requests)
  local g, b = 0, 0
  for _, t in ipairs(threads) do g = g + t:get("good"); b = b + t:get("bad") end
  io.write(string.format("checked: %d good, %d bad\\n", g, b))
end
"""


def run_wrk(port, path, seconds, connections, expected=None, threads=2):
    """wrk with keep-alive; returns (output, parsed dict).  With expected, a
    Lua script checks every response's status and body."""
    # wrk counts a response later than --timeout as an error: a hang guard here.
    cmd = ["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout",
           f"{int(HANG_GUARD)}s", "--latency"]
    env = dict(os.environ)
    script = None
    if expected is not None:
        script = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
        script.write(WRK_SCRIPT)
        script.close()
        cmd += ["-s", script.name]
        env["WRK_EXPECTED_BODY"] = expected.decode()
    cmd.append(f"http://{HOST}:{port}{path}")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=seconds + HANG_GUARD + 30)
        output = proc.stdout + proc.stderr
    finally:
        if script:
            os.unlink(script.name)
    return output, parse_wrk(output)


def parse_wrk(output):
    """requests, rps, errors (socket + non-2xx), good/bad (checked), p50/p99 in ms."""
    result = {"requests": 0, "rps": 0.0, "errors": 0, "good": None, "bad": None}
    m = re.search(r"(\d+) requests in", output)
    if m:
        result["requests"] = int(m.group(1))
    m = re.search(r"Requests/sec:\s+([\d.]+)", output)
    if m:
        result["rps"] = float(m.group(1))
    m = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output)
    if m:
        result["errors"] += sum(int(x) for x in m.groups())
    m = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    if m:
        result["errors"] += int(m.group(1))
    m = re.search(r"checked: (\d+) good, (\d+) bad", output)
    if m:
        result["good"], result["bad"] = int(m.group(1)), int(m.group(2))
    for label, key in (("50%", "p50"), ("99%", "p99")):
        m = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\s*$", output, re.M)
        if m:
            scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]
            result[key] = float(m.group(1)) * scale
    return result


def check_load(port, path, expected, seconds=10, connections=32):
    """A bounded wrk run: no socket errors, every response 200 with the right body."""
    output, r = run_wrk(port, path, seconds, connections, expected)
    ok = r["requests"] > 0 and r["errors"] == 0 and r["bad"] == 0 and r["good"] == r["requests"]
    detail = (f"{r['requests']} requests, {r['rps']:.0f}/s, {r['errors']} errors, "
              f"{r['bad']} bad bodies, {connections} connections, {seconds}s")
    return ok, detail if ok else detail + "\n" + output


class Downloads:
    """Fetches path again and again on new connections until stopped: the
    traffic a NIC mode switch must happen under.  Why a loop rather than a
    fixed number: a fixed number may all be done before the switches come."""

    def __init__(self, port, path, expected):
        self.port, self.path, self.expected = port, path, expected
        self.done, self.problems, self.stopping = 0, [], False
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        """Downloads until stop(); one problem string per bad download."""
        while True:
            with self.cond:
                if self.stopping:
                    return
                number = self.done + 1
            try:
                r = get(self.port, self.path, timeout=HANG_GUARD)
                problem = None
                if not r or r[0] != 200 or r[2] != self.expected:
                    problem = f"download {number}: {r and r[0]}, {len(r[2]) if r else None} bytes"
            except OSError as e:
                problem = f"download {number}: {e}"
            with self.cond:
                self.done += 1
                if problem:
                    self.problems.append(problem)
                self.cond.notify_all()

    def wait_past(self, count, timeout=HANG_GUARD):
        """Waits until more than count downloads have ended (timeout only
        guards against a hang); returns how many have."""
        with self.cond:
            self.cond.wait_for(lambda: self.done > count, timeout)
            return self.done

    def stop(self, timeout=HANG_GUARD):
        """Lets the download under way end and stops; returns whether the
        loop ended (False: a download hangs)."""
        with self.cond:
            self.stopping = True
        self.thread.join(timeout)
        return not self.thread.is_alive()


# ---- paced keep-alive load (for the OS behind QEMU's port forward) ----------

# A hang guard only, never a result: a response on a busy host may take
# seconds (QEMU's TCG shares two cores with everything else); one that has not
# come in a minute means the connection hangs.  Latency is reported, not judged.
REQUEST_TIMEOUT = HANG_GUARD
CONNECT_SPACING = 0.03


def open_paced(port, path, expected, connections):
    """Opens the connections one at a time, each proven by one untimed request.
    QEMU's hostfwd listens with a backlog of 1: a burst of connects overflows
    the host's accept queue (TcpExtListenOverflows) and those connections wait
    for the host's SYN-ACK retransmissions, 1 s then 3 s, which says nothing
    about the guest.  Returns the open Readers, or raises."""
    readers = []
    for _ in range(connections):
        sock = connect(port)
        reader = Reader(sock)
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        response = read_response(reader)
        if not response or response[0] != 200 or response[2] != expected:
            raise RuntimeError("a warm-up request on a new connection failed")
        sock.settimeout(REQUEST_TIMEOUT)
        readers.append(reader)
        time.sleep(CONNECT_SPACING)
    return readers


def keep_alive_worker(reader, path, expected, deadline, tally, lock):
    """Requests on one connection until the deadline; records each latency
    (for information) and what ended the connection early (an error)."""
    request = f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    latencies, errors, bad, ends = [], 0, 0, []
    while time.monotonic() < deadline:
        start = time.monotonic()
        try:
            reader.sock.sendall(request)
            response = read_response(reader)
        except OSError as e:  # a reset, or socket.timeout: hung past REQUEST_TIMEOUT
            errors += 1
            ends.append(type(e).__name__)
            break
        if response is None:  # the peer's end of stream, or bytes that are no response
            errors += 1
            ends.append("EOF" if reader.ended else "not a response")
            break
        latencies.append(time.monotonic() - start)
        bad += response[0] != 200 or response[2] != expected
    with lock:
        tally["latencies"] += latencies
        tally["errors"] += errors
        tally["bad"] += bad
        tally["ends"] += ends


def run_paced_load(port, path, expected, seconds, connections, while_open=None):
    """connections keep-alive clients for seconds; returns the tally.
    while_open(stage), if given, is called with "opened" once every connection
    is open and with "ending" after the load, before they close."""
    tally = {"latencies": [], "errors": 0, "bad": 0, "ends": []}
    readers = open_paced(port, path, expected, connections)
    if while_open:
        while_open("opened")
    lock = threading.Lock()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=keep_alive_worker,
                                args=(r, path, expected, deadline, tally, lock)) for r in readers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if while_open:
        while_open("ending")
    for r in readers:
        r.sock.close()
    return tally


def percentile(sorted_values, fraction):
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def check_paced_load(port, path, expected, seconds=10, connections=32, while_open=None):
    """A bounded keep-alive load with connections opened gradually: no errors
    (resets, ends, hangs past REQUEST_TIMEOUT), every response 200 with the
    right body.  The latencies are information only: a busy host stretches
    them without anything being wrong in the guest."""
    tally = run_paced_load(port, path, expected, seconds, connections, while_open)
    latencies = sorted(tally["latencies"])
    requests = len(latencies)
    ok = requests > 0 and tally["errors"] == 0 and tally["bad"] == 0
    detail = (f"{requests} requests, {requests / seconds:.0f}/s, {tally['errors']} errors, "
              f"{tally['bad']} bad, p50 {percentile(latencies, 0.5) * 1000:.1f} ms, "
              f"p99 {percentile(latencies, 0.99) * 1000:.1f} ms, "
              f"max {(latencies[-1] if latencies else 0) * 1000:.1f} ms, "
              f"{connections} connections, {seconds}s")
    if tally["ends"]:
        detail += " (connections ended by: " + ", ".join(sorted(tally["ends"])) + ")"
    return ok, detail
