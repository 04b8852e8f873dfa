"""The network tests (tests/run.py groups `net` and `user`).

run_guest(build, nic, report): microScope in QEMU with one NIC (e1000 or
virtio) on the user network, httpd's port 80 forwarded to a free port on
127.0.0.1, checked from the host: files byte-identical (curl), keep-alive and
pipelining, error statuses, hostile clients, a bounded wrk load with every
body checked and the kernel's free frames back where they were, a NIC mode
switch (interrupt <-> polling) during downloads, ICMP, httpget in the OS
fetching from a server on the host, rscflnet's accounting of a transfer to
the host, and an accounted httpd's /rscfl and access log (acctcheck.py).
An ext2 disk holding a copy of /www is attached too, and a second httpd
(user www) serves it from /disk/www through the page cache: the same files,
byte-identical.  Then the same NIC on a host TAP device (tapnet.py), where
the host kernel's TCP/IP talks to the OS's and virtio-net is offered the
device's segmentation: the files and a 16 MiB file byte-identical again.

run_host(build, report): the same httpd (and httpget, ping) on the Linux host:
the programs use Linux's ABI, so this checks the libc socket glue and the
server's logic in every run, with or without a network stack in the OS.

report(name, status, seconds, log, note) with status "ok", "FAIL" or "skip".
"""
import http.server
import os
import re
import socket
import subprocess
import tempfile
import threading
import time

import acctcheck
import httpcheck
from guest import Guest, boot_forwarded
from tapnet import TapNet

NIC_NAMES = {"e1000": "e1000.0", "virtio": "virtio-net.0"}  # the NIC module's names
LOAD_SECONDS, LOAD_CONNECTIONS = 10, 32
# Free frames may differ by this much after the load (4 KiB each): the
# kernel's object caches keep a partly used slab or two.
FRAME_SLACK = 16
SWITCHES = 6


def www_files(build):
    """{url path: bytes} of the documents in the RAM disk, as staged by mkinitrd.sh."""
    root = os.path.join(build, "user", "root", "www")
    read = lambda name: open(os.path.join(root, name), "rb").read()
    return {"/": read("index.html"), "/small.txt": read("small.txt"),
            "/1mib.txt": read("1mib.txt")}


def timed(report, name, check, *args):
    start = time.monotonic()
    try:
        ok, detail = check(*args)
    except Exception as e:  # a check that raises failed
        ok, detail = False, f"{type(e).__name__}: {e}"
    first = detail.split("\n", 1)[0]
    status = {True: "ok", False: "FAIL", None: "skip"}[ok]
    report(name, status, time.monotonic() - start, detail, first)
    return ok


# ---------------------------------------------------------------- in the OS


def empty_access_logs(guest):
    """rc's httpd logs to /tmp/httpd.log (rotated to .1): memory the load
    uses on purpose, emptied so that the frame counts show only leaks."""
    guest.run("echo -n > /tmp/httpd.log; echo -n > /tmp/httpd.log.1")


CLOSED = re.compile(r'^httpd_connections_closed_total\{reason="(\w+)"\} (\d+)$', re.M)
LAST_ERRNO = re.compile(r'^httpd_connection_last_errno\{reason="(\w+)"\} (\d+)$', re.M)
TCP_RESETS = re.compile(r"outrsts (\d+)")


def closes_and_resets(guest, port):
    """httpd's closes by reason ({reason: count}), the errno of the last
    failed call per reason, and the resets lwIP sent, or None.  The /metrics
    request closes its own connection after its figures are taken."""
    response = httpcheck.get(port, "/metrics")
    stats = guest.run("kcmd net stats", timeout=60) or ""
    resets = TCP_RESETS.search(stats)
    if not response or response[0] != 200 or not resets:
        return None
    text = response[2].decode(errors="replace")
    return ({r: int(n) for r, n in CLOSED.findall(text)},
            {r: int(n) for r, n in LAST_ERRNO.findall(text)}, int(resets.group(1)))


def closed_during_load(before, after):
    """What ended connections while the load's were all open: httpd's closes
    (but the first snapshot's own) and lwIP's resets, as text; "" when none."""
    if not before or not after:
        return "no /metrics or `kcmd net stats` figures"
    closes = {r: after[0].get(r, 0) - before[0].get(r, 0) for r in after[0]}
    closes["done"] = closes.get("done", 0) - 1  # the first /metrics request's own
    problems = [f"httpd closed {n} ({reason}, last errno {after[1].get(reason, 0)})"
                for reason, n in sorted(closes.items()) if n]
    if after[2] != before[2]:
        problems.append(f"lwIP sent {after[2] - before[2]} resets")
    return "; ".join(problems)


FRAMES_HANG_GUARD = 60  # seconds: a hang guard only, the last value is judged
FRAMES_STABLE_READS = 3


def settled_frames_free(guest, target=None):
    """Free frames once the kernel has let go of what a load used: read
    until within FRAME_SLACK of target (when given) or the same number
    FRAMES_STABLE_READS times in a row.  Why not a fixed pause: on a busy
    host httpd's last connections and lwIP's timers may close late.  Returns
    the last value read (None when `kcmd mem` gives none)."""
    deadline = time.monotonic() + FRAMES_HANG_GUARD
    values = []
    while True:
        empty_access_logs(guest)
        value = guest.frames_free()
        if value is None:
            return None
        values.append(value)
        if target is not None and value >= target - FRAME_SLACK:
            return value
        if len(values) >= FRAMES_STABLE_READS and len(set(values[-FRAMES_STABLE_READS:])) == 1:
            return value
        if time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def check_load_memory(guest, port, files):
    """Warm-up, free frames, the load, free frames again.  The load opens its
    connections one at a time (httpcheck.open_paced says why: QEMU's port
    forward, not the guest, stalls a burst of connects).  While the load's
    connections are open neither httpd (by its close counters in /metrics)
    nor the stack (by lwIP's count of resets sent) may end one: if a client
    still sees its connection end, that says where."""
    httpcheck.run_paced_load(port, "/small.txt", files["/small.txt"], 2, LOAD_CONNECTIONS)
    lingering = warm_up_ended(guest)
    if lingering:
        return False, "the warm-up's connections did not end: " + lingering
    before = settled_frames_free(guest)
    snapshots = {}
    ok, detail = httpcheck.check_paced_load(
        port, "/small.txt", files["/small.txt"], LOAD_SECONDS, LOAD_CONNECTIONS,
        lambda stage: snapshots.__setitem__(stage, closes_and_resets(guest, port)))
    ended = closed_during_load(snapshots.get("opened"), snapshots.get("ending"))
    if ended:
        ok, detail = False, detail + "; during the load " + ended
    after = settled_frames_free(guest, before)
    if before is None or after is None:
        return False, detail + "; `kcmd mem` gave no frame count"
    memory = f"; free frames {before} before, {after} after"
    if after < before - FRAME_SLACK:
        return False, detail + memory + f" (more than {FRAME_SLACK} lost)"
    return ok, detail + memory


PCB_STATES = re.compile(r"^pcbs by state: (.*)$", re.M)
# Where a connection is over for lwIP: nothing more of it is sent but an ACK.
ENDED_STATES = {"CLOSED", "LISTEN", "TIME_WAIT"}


def warm_up_ended(guest):
    """Waits until lwIP holds no connection that is not over (`kcmd net
    stats`: pcbs by state).  Why: the warm-up's closing connections may
    still exchange their last segments, a reset among them, and those must
    count before the load's baseline, not in it.  60 s only guards against
    a hang.  Returns "" once they ended, else the last states read."""
    deadline = time.monotonic() + FRAMES_HANG_GUARD
    while True:
        m = PCB_STATES.search(guest.run("kcmd net stats", timeout=60) or "")
        states = dict(re.findall(r"(\w+) (\d+)", m.group(1))) if m else {}
        open_states = {k: v for k, v in states.items() if k not in ENDED_STATES and v != "0"}
        if m and not open_states:
            return ""
        if time.monotonic() > deadline:
            return str(open_states) if m else "no `pcbs by state` line in `kcmd net stats`"
        time.sleep(0.2)


HISTORY_NOW = re.compile(r" now (\d+)\.(\d{6}), mode (\w+);")
HISTORY_CHANGE = re.compile(r"^\s+(\d+)\.(\d{6}) (\w+)$", re.M)


def mode_history(guest, name):
    """The NIC's clock now and its remembered mode changes, in microseconds
    since boot, from `kcmd nic history`: (now, [(us, mode), ...]), or (None, [])."""
    text = guest.run(f"kcmd nic history {name}") or ""
    now = HISTORY_NOW.search(text)
    if not now:
        return None, []
    changes = [(int(s) * 1000000 + int(us), mode) for s, us, mode in HISTORY_CHANGE.findall(text)]
    return int(now.group(1)) * 1000000 + int(now.group(2)), changes


def check_mode_switch(guest, port, files, nic):
    """Downloads of 1 MiB go on, one after another, while the NIC flips
    between interrupt and polling SWITCHES times; after each switch another
    download must end (traffic crossed each mode), every download must be
    byte-identical, and the NIC's mode history must show the switches."""
    name = NIC_NAMES[nic]
    since, _ = mode_history(guest, name)
    downloads = httpcheck.Downloads(port, "/1mib.txt", files["/1mib.txt"])
    answers = []
    try:
        for i in range(SWITCHES):
            ended = downloads.done
            answers.append(guest.run(f"kcmd nic mode {name} {'poll' if i % 2 == 0 else 'irq'}")
                           or "")
            if downloads.wait_past(ended) <= ended:
                break  # a download hangs: reported below
    finally:
        stopped = downloads.stop()
    _, changes = mode_history(guest, name)
    guest.run(f"kcmd nic mode {name} irq")
    if any("unknown command" in a for a in answers):
        return None, "the kernel has no `nic` shell command"
    failed = [a.strip() for a in answers if "kcmd:" in a]
    if failed or downloads.problems or not stopped or len(answers) < SWITCHES:
        return False, "; ".join(failed + downloads.problems) or "a download did not finish"
    if since is None:
        return False, "`kcmd nic history` gave no clock"
    made = [mode for at, mode in changes if at > since]
    if len(made) < SWITCHES or not {"polling", "interrupt"} <= set(made):
        return False, f"{len(made)} mode changes in the NIC's history ({made}), {SWITCHES} made"
    return True, (f"{downloads.done} downloads of 1 MiB identical across {SWITCHES} mode "
                  f"switches (history: {' '.join(made)})")


BULK_COPIES = 16  # of /www/1mib.txt: a 16 MiB file
BULK_TIMEOUT = 600  # seconds: a hang guard only, nothing is timed


def check_bulk_download(guest, port, files, nic):
    """A 16 MiB file, made in the OS from 16 copies of /www/1mib.txt (whose
    lines are numbered, so a segment lost, repeated or reordered shows),
    downloaded by curl must arrive byte-exact: the bulk path (large windows,
    full rings, checksums of every segment) end to end.  The NIC's TCP
    segmentation (the e1000's device, the virtio-net driver) must have carried
    it (NETWORK.md)."""
    expected, error = make_bulk_file(guest, files)
    if error:
        return False, error
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "body")
        proc = subprocess.run(["curl", "-s", "-S", "-f", "--max-time", str(BULK_TIMEOUT), "-o", out,
                               f"http://{httpcheck.HOST}:{port}/16mib.txt"],
                              capture_output=True, text=True, timeout=BULK_TIMEOUT + 30)
        got = open(out, "rb").read() if os.path.exists(out) else b""
    if proc.returncode != 0:
        return False, f"curl status {proc.returncode}: {proc.stderr.strip()} ({len(got)} bytes)"
    if got != expected:
        return False, (f"{len(got)} bytes, expected {len(expected)} (first difference at "
                       f"{httpcheck.first_difference(got, expected)})")
    # The e1000's device, or the virtio-net driver, segments: the transfer must have used it.
    segmented = nic_counter(guest, nic, "tx_segmented")
    if not segmented:
        return False, f"16 MiB identical, but the {nic} segmented no frame (tx_segmented 0)"
    return True, f"16 MiB identical, {segmented} frames segmented by the {nic} so far"


def make_bulk_file(guest, files):
    """Makes /www/16mib.txt in the OS.  Returns (its expected bytes, None) or
    (None, what went wrong)."""
    sources = " ".join(["/www/1mib.txt"] * BULK_COPIES)
    made = guest.run(f"cat {sources} > /www/16mib.txt; ls -l /www/16mib.txt", timeout=180)
    expected = files["/1mib.txt"] * BULK_COPIES
    if made is None or str(len(expected)) not in made:
        return None, f"the OS did not make /www/16mib.txt: {made!r}"
    return expected, None


def nic_counter(guest, nic, name):
    """A counter of `kcmd nic stats` for the NIC, or None."""
    m = re.search(rf"\b{name}\s+(\d+)", guest.run(f"kcmd nic stats {NIC_NAMES[nic]}") or "")
    return int(m.group(1)) if m else None


# What carries large frames over a TAP device: the e1000's own segmentation;
# virtio-net's device (CSUM and HOST_TSO4, which QEMU offers on a TAP device).
TAP_LARGE_FRAMES = {"e1000": "tx_segmented", "virtio": "tx_offloaded"}


def check_tap(build, nic, log, kernel):
    """The NIC on a host TAP device in a namespace of its own instead of
    QEMU's user network: the host kernel's TCP/IP against the OS's.  Every
    file and a 16 MiB one arrive byte-exact (curl in the namespace), and the
    large frames went whole to the device (TAP_LARGE_FRAMES).  Skipped where
    no namespace or TAP device can be made (root and /dev/net/tun needed)."""
    net, reason = TapNet.create(count=1)
    if not net:
        return None, f"no TAP device here: {reason}"
    guest = Guest(build, nic, {}, log, kernel=kernel, tap=net.tap(0), wrap=net.wrap,
                  append=net.microscope_append(0))
    try:
        httpd = guest.boot()
        if not httpd or not httpd.startswith("serving"):
            return False, f"httpd: {httpd} (log {log})"
        files = www_files(build)
        files["/16mib.txt"], error = make_bulk_file(guest, files)
        if error:
            return False, error
        for path, expected in files.items():
            got = curl_in(net, f"http://{net.guest_address(0)}{path}")
            if got != expected:
                return False, (f"{path}: {len(got)} bytes, expected {len(expected)} (first "
                               f"difference at {httpcheck.first_difference(got, expected)})")
        own, error = fetch_own_address(guest, net.guest_address(0), files)
        if error:
            return False, error
        large = nic_counter(guest, nic, TAP_LARGE_FRAMES[nic])
        if not large:
            return False, f"every file identical, but {TAP_LARGE_FRAMES[nic]} is {large}"
        return True, (f"{len(files)} files identical over {net.tap(0)}, {large} large frames "
                      f"({TAP_LARGE_FRAMES[nic]}); {own}")
    finally:
        guest.stop()
        net.destroy()


def check_own_address(guest, files):
    """httpget in the OS from its own address on the NIC (10.0.2.15): where
    the NIC makes the TCP checksums (the e1000; virtio-net where offered),
    such packets take the loopback interface (NETWORK.md)."""
    note, error = fetch_own_address(guest, "10.0.2.15", files)
    return (True, note) if note else (False, error)


def fetch_own_address(guest, address, files):
    """httpget in the OS from its own address on the TAP link: on virtio-net
    such packets take the loopback interface, where lwIP makes the TCP
    checksums the NIC would (NETWORK.md).  Returns (note, None) or (None,
    what went wrong)."""
    small = guest.run(f"httpget http://{address}/small.txt", timeout=60) or ""
    if files["/small.txt"].decode().strip() not in small:
        return None, f"httpget of its own address printed:\n{small}"
    listing = guest.run(f"httpget -o /tmp/own.txt http://{address}/1mib.txt; ls -l /tmp/own.txt",
                        timeout=120) or ""
    if str(len(files["/1mib.txt"])) not in listing:
        return None, f"httpget of 1 MiB from its own address:\n{listing}"
    return "its own address answered", None


def curl_in(net, url):
    """The body curl gets for url from inside the namespace (b"" on an error)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "body")
        subprocess.run(net.wrap(["curl", "-s", "-S", "-f", "--max-time", str(BULK_TIMEOUT),
                                 "-o", out, url]),
                       capture_output=True, timeout=BULK_TIMEOUT + 30)
        return open(out, "rb").read() if os.path.exists(out) else b""


def check_ping(guest, target):
    text = guest.run(f"ping -c 3 -i 200 {target}", timeout=30) or ""
    m = re.search(r"(\d+) packets transmitted, (\d+) received", text)
    ok = bool(m) and int(m.group(2)) > 0
    return ok, (m.group(0) if m else "no summary from ping") + ("" if ok else "\n" + text)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def check_httpget(guest, build):
    """httpget in the OS fetches a file from a server on the host (10.0.2.2
    is the host's 127.0.0.1 under slirp)."""
    root = os.path.join(build, "user", "root", "www")
    handler = lambda *a, **k: QuietHandler(*a, directory=root, **k)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        text = guest.run(f"httpget http://10.0.2.2:{port}/small.txt", timeout=30) or ""
    finally:
        server.shutdown()
        server.server_close()
    expected = open(os.path.join(root, "small.txt")).read().strip()
    ok = expected in text
    return ok, "fetched small.txt from the host" if ok else "httpget printed:\n" + text


def check_rscflnet(guest):
    """rscflnet in the OS sends 1 MiB inside an activity to a sink on the
    host, through the NIC: its result counts the bytes, segments both ways
    and NIC packets both ways (besides its loopback cases)."""
    sink = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sink.bind(("127.0.0.1", 0))
    sink.listen(1)
    sink.settimeout(60)
    received = []

    def drain():
        try:
            conn, _ = sink.accept()
            with conn:
                total = 0
                while True:
                    data = conn.recv(65536)
                    if not data:
                        break
                    total += len(data)
                received.append(total)
        except OSError:
            pass

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    try:
        port = sink.getsockname()[1]
        text = guest.run(f"rscflnet 10.0.2.2:{port}", timeout=90) or ""
    finally:
        thread.join(5)
        sink.close()
    ok = "ok 5 nic_send_is_charged" in text and "ALL TESTS PASSED" in text \
        and received == [1 << 20]
    return ok, f"the sink received {received} bytes\n" + text


DISK_PORT = 8080  # the guest port of the httpd serving /disk/www


def make_www_disk(build, log):
    """An ext2 image (the host's mke2fs -d) holding www/ as the initrd stages
    it; returns its path, or None when mke2fs failed."""
    root = os.path.splitext(log)[0] + "-disk-root"
    image = os.path.splitext(log)[0] + "-disk.img"
    subprocess.run(["rm", "-rf", root, image])
    os.makedirs(root)
    subprocess.run(["cp", "-R", os.path.join(build, "user", "root", "www"), root], check=True)
    made = subprocess.run(["/sbin/mke2fs", "-q", "-F", "-t", "ext2", "-b", "4096", "-I", "128",
                           "-O", "^dir_index", "-d", root, image, "16M"], capture_output=True)
    return image if made.returncode == 0 else None


def check_served_from_disk(guest, port, files):
    """httpd -r /disk/www as user www: every file byte-identical, twice (the
    second time from the page cache)."""
    started = guest.run(f"httpd -b -q -p {DISK_PORT} -r /disk/www -u www") or ""
    if "serving" not in started:
        return False, started
    first, detail = httpcheck.check_files(port, files)
    second, again = httpcheck.check_files(port, files)
    return first and second, f"{detail}; again from the page cache: {again}\n{started}"


def run_guest(build, nic, report, log, kernel=None):
    """kernel: the image to boot (Guest's default when None)."""
    prefix = f"net/{nic}"
    start = time.monotonic()
    disk = make_www_disk(build, log)

    def make(ports):
        forwards = {ports[0]: 80, ports[1]: acctcheck.ACCT_PORT}
        if disk:
            forwards[ports[2]] = DISK_PORT
        return Guest(build, nic, forwards, log, kernel=kernel, disk=disk)

    guest, (port, _, disk_port), httpd = boot_forwarded(3, make)
    try:
        seconds = time.monotonic() - start
        if httpd is None or not httpd.startswith("serving"):
            if httpd and httpd.startswith("no network"):
                report(prefix, "skip", seconds, None, "no network stack in this kernel yet")
            else:
                report(prefix + "/boot", "FAIL", seconds, guest.text, f"httpd: {httpd}")
            return
        report(prefix + "/boot", "ok", seconds, None, "httpd " + httpd)
        run_guest_checks(guest, build, nic, port, report, prefix)
        if disk:
            timed(report, prefix + "/httpd-from-disk", check_served_from_disk, guest, disk_port,
                  www_files(build))
        else:
            report(prefix + "/httpd-from-disk", "FAIL", 0.0, None, "mke2fs failed")
    finally:
        guest.stop()
    timed(report, prefix + "/qboot", check_qboot, build, nic, log + ".qboot", kernel)
    timed(report, prefix + "/tap", check_tap, build, nic, log + ".tap", kernel)


PLACED_BAR = re.compile(r"pci: 00:(\w\w)\.(\d) BAR(\d) placed at (0x[0-9a-f]+)")


def check_qboot(build, nic, log, kernel):
    """Under QEMU's qboot firmware, which gives no PCI BAR an address, the
    kernel places them and the NIC works: every file served byte-exact."""
    guest, (port,), httpd = boot_forwarded(
        1, lambda ports: Guest(build, nic, {ports[0]: 80}, log, kernel=kernel, qboot=True))
    try:
        if not httpd or not httpd.startswith("serving"):
            return False, f"httpd: {httpd} (log {log})"
        placed = PLACED_BAR.findall(guest.text)
        if not placed:
            return False, "the kernel placed no BAR: did qboot run?"
        ok, note = httpcheck.check_files(port, www_files(build))
        return ok, f"{len(placed)} BARs placed by the kernel; {note}"
    finally:
        guest.stop()


def run_guest_checks(guest, build, nic, port, report, prefix):
    files = www_files(build)
    small = files["/small.txt"]
    if not timed(report, prefix + "/files", httpcheck.check_files, port, files):
        return  # nothing else can pass
    timed(report, prefix + "/keep-alive", httpcheck.check_keep_alive, port, "/small.txt", small)
    timed(report, prefix + "/errors", httpcheck.check_errors, port)
    timed(report, prefix + "/hostile", httpcheck.check_hostile, port, "/small.txt", small)
    timed(report, prefix + "/load", check_load_memory, guest, port, files)
    timed(report, prefix + "/mode-switch", check_mode_switch, guest, port, files, nic)
    timed(report, prefix + "/ping-gateway", check_ping, guest, "10.0.2.2")
    timed(report, prefix + "/ping-self", check_ping, guest, "10.0.2.15")
    timed(report, prefix + "/httpget", check_httpget, guest, build)
    timed(report, prefix + "/own-address", check_own_address, guest, files)
    timed(report, prefix + "/rscfl", acctcheck.check_rscfl, guest, small)
    timed(report, prefix + "/rscflnet", check_rscflnet, guest)
    timed(report, prefix + "/bulk-16mib", check_bulk_download, guest, port, files, nic)


# ---------------------------------------------------------------- on the host


def run_host(build, report):
    """httpd, httpget and ping built for microScope, run on the Linux host."""
    bin_dir = os.path.join(build, "user", "bin")
    root = os.path.join(build, "user", "root", "www")
    files = www_files(build)
    log_path = os.path.join(build, "test-logs", "httpd-host.log")
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    server, port = start_host_httpd(bin_dir, root, log_path)
    try:
        if not port:
            report("user/host/httpd", "FAIL", 0.0, None, "httpd does not listen")
            return
        small = files["/small.txt"]
        timed(report, "user/host/httpd-files", httpcheck.check_files, port, files)
        timed(report, "user/host/httpd-keep-alive", httpcheck.check_keep_alive, port,
              "/small.txt", small)
        timed(report, "user/host/httpd-errors", httpcheck.check_errors, port)
        timed(report, "user/host/httpd-hostile", httpcheck.check_hostile, port, "/small.txt",
              small)
        timed(report, "user/host/httpd-load", httpcheck.check_load, port, "/small.txt", small,
              2, 16)
        timed(report, "user/host/httpget", check_host_httpget, bin_dir, port, files)
    finally:
        server.kill()
        server.wait()
    with open(log_path, errors="replace") as f:
        log = f.read()
    lines = [l for l in log.splitlines() if re.match(r"httpd: 127\.0\.0\.1 \S+ \S+ \d{3} \d+ \d+us", l)]
    report("user/host/httpd-access-log", "ok" if lines else "FAIL", 0.0, log[-3000:],
           f"{len(lines)} access-log lines")
    timed(report, "user/host/ping", check_host_ping, bin_dir)


HOST_HTTPD_ATTEMPTS = 5
LISTEN_HANG_GUARD = 60  # seconds for httpd to listen: a hang guard only


def start_host_httpd(bin_dir, root, log_path):
    """httpd on the host on a picked port; where it exits (the port taken
    after it was picked), again on another.  Returns (the process, its port),
    the port None when it never listened."""
    for _ in range(HOST_HTTPD_ATTEMPTS):
        port = httpcheck.free_port()
        with open(log_path, "w") as log_file:  # a file: a pipe nobody reads would stall httpd
            server = subprocess.Popen([os.path.join(bin_dir, "httpd"), "-p", str(port), "-r",
                                       root], stdout=log_file, stderr=subprocess.STDOUT)
        if wait_listening(port, LISTEN_HANG_GUARD, server):
            return server, port
        if server.poll() is None:
            return server, None  # running but not listening: no point in another port
    return server, None


def wait_listening(port, seconds, server=None):
    """Whether something accepts on port before seconds pass (a hang guard)
    or server, if given, exits."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and (server is None or server.poll() is None):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def check_host_httpget(bin_dir, port, files):
    httpget = os.path.join(bin_dir, "httpget")
    proc = subprocess.run([httpget, f"http://127.0.0.1:{port}/1mib.txt"], capture_output=True,
                          timeout=30)
    if proc.returncode != 0 or proc.stdout != files["/1mib.txt"]:
        return False, f"1mib.txt: status {proc.returncode}, {len(proc.stdout)} bytes"
    proc = subprocess.run([httpget, f"http://127.0.0.1:{port}/missing"], capture_output=True,
                          timeout=30)
    if proc.returncode != 1 or b"status 404" not in proc.stderr:
        return False, f"missing: status {proc.returncode}, {proc.stderr!r}"
    # A port held bound but not listening: a connect to it is refused for sure.
    held = httpcheck.reserve_ports(1)
    try:
        closed = held[0].getsockname()[1]
        proc = subprocess.run([httpget, f"http://127.0.0.1:{closed}/"], capture_output=True,
                              timeout=30)
    finally:
        httpcheck.release_ports(held)
    if proc.returncode != 1 or b"Connection refused" not in proc.stderr:
        return False, f"closed port: {proc.stderr!r} (ECONNREFUSED must map to newlib's errno)"
    return True, "1 MiB identical, 404 and ECONNREFUSED reported"


def check_host_ping(bin_dir):
    proc = subprocess.run([os.path.join(bin_dir, "ping"), "-c", "2", "-i", "100", "127.0.0.1"],
                          capture_output=True, text=True, timeout=30)
    if "ping: socket:" in proc.stderr:
        return None, "this host allows no ICMP socket: " + proc.stderr.strip()
    ok = proc.returncode == 0 and "2 received" in proc.stdout
    return ok, proc.stdout.strip().splitlines()[-1] if ok else proc.stdout + proc.stderr
