"""httpd's per-request accounting, checked from the host (group `net`).

check_rscfl(guest): starts an accounted server (`httpd -a -p 82`) beside
rc's, fetches /small.txt from it, then GET /rscfl, and asks:
  - is /rscfl valid JSON whose last request is that GET, with every field the
    kernel's result has (named by the document's own "units") and every
    subsystem field?
  - does that request show kernel work that makes sense: at least one
    system call, wall time at or above its CPU time, its status and body
    bytes stored beside as metrics?  Is the server's own work (unattributed)
    there too?  Does it say whether steal time is measured or not reported?
  - did the access log on the console get the request's line with the
    breakdown (wall, cpu, sched_out, syscalls, top subsystems, TCP bytes)?
The guest's port ACCT_PORT must be forwarded (Guest(..., {host: ACCT_PORT})).
"""
import json
import re

import httpcheck

ACCT_PORT = 82
READY = re.compile(r"httpd: (accounting every request on port 82|no accounting.*)")
LOG_LINE = (r"httpd: \d+\.\d+\.\d+\.\d+ GET /small\.txt 200 {bytes} \d+us wall=\d+us cpu=\d+us "
            r"sched_out=\d+us syscalls=[1-9]\d* top(_inclusive)?=\S+ tcp_in=\d+B tcp_out=\d+B")


def host_port(guest):
    """The host port forwarded to ACCT_PORT, or None."""
    for host, guest_port in guest.forwards.items():
        if guest_port == ACCT_PORT:
            return host
    return None


def missing_fields(document, request):
    """Names of result and subsystem fields the request lacks."""
    kernel = request.get("kernel", {})
    missing = [name for name in document["units"] if name not in kernel]
    for subsystem in kernel.get("subsystems", []):
        missing += [f"{subsystem.get('name')}.{name}" for name in document["subsystem_units"]
                    if name not in subsystem]
    if not kernel.get("subsystems"):
        missing.append("subsystems")
    return missing


def judge(document, small):
    """(ok, detail) for the last request in a parsed /rscfl document."""
    requests = document.get("requests") or []
    if not document.get("accounting") or not requests:
        return False, f"accounting {document.get('accounting')}, {len(requests)} requests"
    last = requests[-1]
    if (last.get("method"), last.get("path"), last.get("status")) != ("GET", "/small.txt", 200):
        return False, f"the last request is {last.get('method')} {last.get('path')}"
    if not last.get("accounted"):
        return False, "the last request was not accounted"
    missing = missing_fields(document, last)
    if missing:
        return False, "missing fields: " + ", ".join(missing)
    kernel, metrics = last["kernel"], last.get("metrics", {})
    if kernel["syscalls"] <= 0 or kernel["wall_ns"] < kernel["cpu_ns"]:
        return False, (f"syscalls {kernel['syscalls']}, wall {kernel['wall_ns']} ns, "
                       f"cpu {kernel['cpu_ns']} ns")
    if metrics.get("status") != 200 or metrics.get("body_bytes") != len(small):
        return False, f"metrics {metrics}"
    if "syscalls" not in document.get("unattributed", {}):
        return False, "no unattributed result (the server's own work)"
    if document.get("steal_time") not in ("measured", "not reported"):
        return False, f"steal_time {document.get('steal_time')!r}: neither measured nor not reported"
    names = ",".join(s["name"] for s in kernel["subsystems"])
    return True, (f"{kernel['syscalls']} system calls, wall {kernel['wall_ns']} ns >= cpu "
                  f"{kernel['cpu_ns']} ns, subsystems {names}")


def check_rscfl(guest, small):
    port = host_port(guest)
    if port is None:
        return False, f"guest port {ACCT_PORT} is not forwarded"
    mark = len(guest.text)
    guest.run(f"httpd -a -p {ACCT_PORT} &")
    ready = guest.wait_for(READY, 30, mark)
    if not ready or not ready.group(1).startswith("accounting"):
        return False, "the accounted httpd: " + (ready.group(0) if ready else "no answer")
    fetched = httpcheck.get(port, "/small.txt")
    if not fetched or fetched[0] != 200 or fetched[2] != small:
        return False, f"GET /small.txt: {fetched and fetched[:2]}"
    answer = httpcheck.get(port, "/rscfl")
    if not answer or answer[0] != 200 or answer[1].get("content-type") != "application/json":
        return False, f"GET /rscfl: {answer and answer[:2]}"
    try:
        document = json.loads(answer[2].decode())
    except ValueError as e:
        return False, f"/rscfl is not JSON: {e}\n{answer[2][:2000]!r}"
    ok, detail = judge(document, small)
    line = guest.wait_for(re.compile(LOG_LINE.format(bytes=len(small))), 10, mark)
    if not line:
        return False, detail + "; no access-log line with the breakdown on the console\n" + \
            guest.text[mark:][-3000:]
    return ok, detail + "; log: " + line.group(0)
