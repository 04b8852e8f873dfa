#!/usr/bin/env python3
"""Host tests of tools/mscope: capture from a fake guest, control lines, and
conversion of a synthetic CTF trace with the kernel's layout.

Why here and shaped so: tests/run.py runs each case of CASES in its host
group (host/mscope/<case>); `mscope_test.py [CASE...]` runs them alone.  Each
case returns nothing or raises Failure; mscope runs as its own program (its
interpreter has python3-bt2), the cases need only the standard library.
"""
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MSCOPE = os.path.join(ROOT, "tools", "mscope")
sys.path.insert(0, HERE)

import chrome_check  # noqa: E402
import ctf_fixture  # noqa: E402
import fake_guest  # noqa: E402
from fake_guest import FRAME_METADATA, FRAME_PACKET, frame  # noqa: E402

TIMEOUT = 120  # seconds: only against hangs


class Failure(Exception):
    pass


def expect(condition, message):
    if not condition:
        raise Failure(message)


def mscope(*args):
    """Runs tools/mscope; returns (status, stdout, stderr)."""
    try:
        proc = subprocess.run([MSCOPE, *args], capture_output=True, text=True, timeout=TIMEOUT,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise Failure(f"mscope {' '.join(args)} hung")
    return proc.returncode, proc.stdout, proc.stderr


def shown(status, out, err):
    return f"status {status}\n--- stdout\n{out}--- stderr\n{err}"


# ---------------------------------------------------------------- record


def trace_frames():
    """The fixture trace as the OS sends it: metadata, then the packets of
    both CPUs interleaved."""
    data = frame(FRAME_METADATA, ctf_fixture.tsdl().encode())
    per_cpu = ctf_fixture.packets()
    for i in range(max(len(p) for p in per_cpu.values())):
        for cpu, plist in sorted(per_cpu.items()):
            if i < len(plist):
                data += frame(FRAME_PACKET, plist[i], stream=cpu)
    return data


def capture_script(end_counts, after_start=None):
    """A guest that answers `trace start`, streams the trace (or after_start
    bytes), then answers `trace stop` with END end_counts (None: hangs up)."""
    def script(conn):
        line = conn.read_line()
        expect(line.startswith("trace start"), f"first line {line!r}")
        conn.send(fake_guest.text("tracing\n"))
        conn.send(trace_frames() if after_start is None else after_start)
        if end_counts is None:
            return
        expect(conn.read_line() == "trace stop", "no trace stop")
        conn.send(fake_guest.text("stopped\n"))
        conn.send(fake_guest.end(*end_counts))
    return script


def record(script, *extra):
    """mscope record against a fake guest; returns (status, out, err,
    directory, lines the guest read)."""
    guest = fake_guest.FakeGuest(script)
    tmp = tempfile.mkdtemp(prefix="mscope-test-")
    out_dir = os.path.join(tmp, "trace")
    status, out, err = mscope("record", "--attach", guest.path, "-d", "0", "-o", out_dir, *extra)
    lines = guest.finish()
    if guest.error and status == 0:
        raise Failure(f"fake guest: {guest.error}\n" + shown(status, out, err))
    return status, out, err, out_dir, lines


DROPPED = 3
END_OK = (ctf_fixture.EVENT_COUNT + DROPPED, ctf_fixture.EVENT_COUNT, DROPPED)


def record_writes_a_ctf_directory():
    """The files are the packets, byte for byte; END's counts are printed and
    the trace is complete; the patterns went out in `trace start`."""
    status, out, err, out_dir, lines = record(capture_script(END_OK), "-p", "vfs.*", "-p", "net.tx")
    expect(status == 0, "record failed\n" + shown(status, out, err))
    expect(lines == ["trace start vfs.* net.tx", "trace stop"], f"control lines {lines}")
    with open(os.path.join(out_dir, "metadata")) as f:
        expect(f.read() == ctf_fixture.tsdl(), "metadata differs from what was sent")
    for cpu, plist in ctf_fixture.packets().items():
        with open(os.path.join(out_dir, f"stream_{cpu}"), "rb") as f:
            expect(f.read() == b"".join(plist), f"stream_{cpu} differs from its packets")
    expect(sorted(os.listdir(out_dir)) == ["metadata", "stream_0", "stream_1"],
           f"unexpected files {os.listdir(out_dir)}")
    expect(f"recorded {END_OK[0]}, delivered {END_OK[1]}, dropped {END_OK[2]}" in out,
           "counts not printed\n" + out)
    expect("trace complete" in out, "not reported complete\n" + out)


def record_reports_counts_that_do_not_add_up():
    """recorded != delivered + dropped: incomplete, status 1."""
    counts = (END_OK[0] + 1, END_OK[1], END_OK[2])
    status, out, err, _, _ = record(capture_script(counts))
    expect(status == 1 and "INCOMPLETE" in out and "!= delivered" in out,
           "a lost record went unnoticed\n" + shown(status, out, err))


def record_reports_delivered_events_missing_from_the_files():
    """END says one event more was delivered than the files hold."""
    counts = (END_OK[0] + 1, END_OK[1] + 1, END_OK[2])
    status, out, err, _, _ = record(capture_script(counts))
    expect(status == 1 and f"the files hold {ctf_fixture.EVENT_COUNT} events" in out,
           "a missing event went unnoticed\n" + shown(status, out, err))


def record_refuses_a_bad_magic():
    bad = frame(FRAME_PACKET, b"\0" * 64, magic=0xDEADBEEF)
    status, out, err, _, _ = record(capture_script(END_OK, after_start=bad))
    expect(status == 2 and "bad magic 0xdeadbeef" in err,
           "a bad magic was not refused clearly\n" + shown(status, out, err))


def record_refuses_a_truncated_frame():
    """The guest hangs up in the middle of a packet."""
    cut = frame(FRAME_METADATA, ctf_fixture.tsdl().encode()) + \
        frame(FRAME_PACKET, b"\0" * 100)[:40]
    status, out, err, _, _ = record(capture_script(None, after_start=cut))
    expect(status == 2 and "truncated frame" in err and "announces 100 bytes" in err,
           "a truncated frame was not refused clearly\n" + shown(status, out, err))


def record_refuses_a_malformed_end():
    bad_end = frame(fake_guest.FRAME_END, b"\0" * 8)
    status, out, err, _, _ = record(capture_script(None, after_start=bad_end))
    expect(status == 2 and "END carries 8 bytes" in err,
           "a short END was not refused\n" + shown(status, out, err))


def record_without_end_is_incomplete():
    status, out, err, _, _ = record(capture_script(None))
    expect(status == 1 and "without END" in out,
           "a capture cut short was called complete\n" + shown(status, out, err))


def record_stops_on_ctrl_c():
    """Without -d, SIGINT sends `trace stop` and the capture still ends
    complete with END's counts."""
    streamed = threading.Event()

    def script(conn):
        capture_script(None)(conn)
        streamed.set()
        expect(conn.read_line() == "trace stop", "no trace stop")
        conn.send(fake_guest.end(*END_OK))

    guest = fake_guest.FakeGuest(script)
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([MSCOPE, "record", "--attach", guest.path, "-o",
                                 os.path.join(tmp, "trace")], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
        try:
            expect(streamed.wait(TIMEOUT), "the guest never streamed")
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=TIMEOUT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        lines = guest.finish()
    expect(guest.error is None, f"fake guest: {guest.error}")
    expect(proc.returncode == 0 and "trace complete" in out and lines[-1] == "trace stop",
           "Ctrl-C did not stop the capture cleanly\n" + shown(proc.returncode, out, err))


# ---------------------------------------------------------------- stack references

A, B, C = 0x401234, 0x402345, 0x403456
# The OS's records: CPU 0 defines stack 7 and refers to it three ways (a
# reference, a syscall_stack, another thread's reference), then to 99, which
# it never sent (its packet lost); CPU 1 refers to 7, which its own stream
# never defined (ids are a stream's own).
REFERENCE_RECORDS = {
    0: [[(1000, "thread_name", dict(pid=2, tid=2, name="httpd")),
         (2000, "syscall_entry", dict(number=0, arg0=3)),
         (2100, "user_stack_def", dict(tid=2, count=3, flags=1, id=7, reserved=0,
                                       frames=[A, B, C])),
         (3000, "syscall_entry", dict(number=1, arg0=4))],
        [(3100, "user_stack_ref", dict(tid=2, id=7)),
         (4000, "syscall_stack", dict(number=0, arg0=5, tid=2, id=7)),
         (5000, "syscall_stack", dict(number=3, arg0=6, tid=4, id=7)),
         (6000, "user_stack_ref", dict(tid=2, id=99))]],
    1: [[(1500, "user_stack_ref", dict(tid=3, id=7))]],
}
# What they stand for: every stack whole, as if no memo had been used.
WHOLE = dict(count=3, flags=1, frames=[A, B, C])
LOST = dict(count=0, flags=2 | 4, frames=[])
RESOLVED = {
    0: [("thread_name", dict(pid=2, tid=2, name="httpd")),
        ("syscall_entry", dict(number=0, arg0=3)), ("user_stack", dict(tid=2, **WHOLE)),
        ("syscall_entry", dict(number=1, arg0=4)), ("user_stack", dict(tid=2, **WHOLE)),
        ("syscall_entry", dict(number=0, arg0=5)), ("user_stack", dict(tid=2, **WHOLE)),
        ("syscall_entry", dict(number=3, arg0=6)), ("user_stack", dict(tid=4, **WHOLE)),
        ("user_stack", dict(tid=2, **LOST))],
    1: [("user_stack", dict(tid=3, **LOST))],
}
REFERENCE_COUNT = sum(len(p) for packets in REFERENCE_RECORDS.values() for p in packets)


def reference_packets():
    return {cpu: [ctf_fixture.packet_bytes(cpu, events, 0) for events in plist]
            for cpu, plist in REFERENCE_RECORDS.items()}


def records_of(stream):
    """(event name, fields) of each record in a stream file's packets, read
    by the layout (ctf_fixture's): what a CTF reader finds there."""
    names = {eid: (name, fields) for eid, name, fields in ctf_fixture.EVENTS}
    out, packet = [], 0
    while packet + 72 <= len(stream):
        content, size = struct.unpack_from("<QQ", stream, packet + 40)
        at, end = packet + 72, packet + content // 8
        while at + 8 <= end:
            eid, words, kind = struct.unpack_from("<HBB", stream, at)
            body = at + (16 if kind else 8)
            name, fields = names[eid]
            values = {}
            for fname, ftype in fields:
                if ftype == "frames":
                    values[fname] = list(struct.unpack_from(f"<{values['count']}Q", stream, body))
                    body += 8 * values["count"]
                elif ftype == "name16":
                    values[fname] = stream[body:body + 16].split(b"\0")[0].decode()
                    body += 16
                else:
                    fmt = ctf_fixture.INT_TYPES[ftype][1]
                    values[fname] = struct.unpack_from(fmt, stream, body)[0]
                    body += struct.calcsize(fmt)
            out.append((name, values))
            at += words * 8
        packet += size // 8
    return out


def reference_script(end_counts):
    def script(conn):
        line = conn.read_line()
        expect(line.startswith("trace start"), f"first line {line!r}")
        conn.send(fake_guest.text("tracing\n"))
        data = frame(FRAME_METADATA, ctf_fixture.tsdl().encode())
        for cpu, plist in reference_packets().items():
            for packet in plist:
                data += frame(FRAME_PACKET, packet, stream=cpu)
        conn.send(data)
        expect(conn.read_line() == "trace stop", "no trace stop")
        conn.send(fake_guest.text("stopped\n"))
        conn.send(fake_guest.end(*end_counts))
    return script


def record_resolves_stack_references():
    """The files mscope writes hold every stack whole: a definition as the
    user_stack it is, a reference and a syscall_stack as the user_stack they
    name (with their own tid), the syscall_stack's entry before it; a
    reference to a stack the stream never held has no frame and is marked
    unreadable and lost.  babeltrace2 counts the events (two for each
    syscall_stack) and the capture is complete."""
    end = (REFERENCE_COUNT, REFERENCE_COUNT, 0)
    status, out, err, out_dir, _ = record(reference_script(end), "--stacks")
    expect(status == 0 and "trace complete" in out, "record failed\n" + shown(status, out, err))
    expect("2 user stacks lost" in out, "the lost references were not reported\n" + out)
    for cpu, want in RESOLVED.items():
        with open(os.path.join(out_dir, f"stream_{cpu}"), "rb") as f:
            got = records_of(f.read())
        expect(got == want, f"stream_{cpu} holds\n{got}\nnot\n{want}")
    proc = subprocess.run(["babeltrace2", out_dir], capture_output=True, text=True,
                          timeout=TIMEOUT)
    events = proc.stdout.splitlines()
    expect(proc.returncode == 0 and len(events) == sum(len(w) for w in RESOLVED.values()),
           f"babeltrace2 read {len(events)} events\n" + proc.stdout + proc.stderr)
    expect(not [e for e in events if "stack_def" in e or "stack_ref" in e or "syscall_stack" in e],
           "a reference reached the files\n" + proc.stdout)


def record_refuses_a_stack_record_too_short_for_its_fields():
    """A user_stack_def that is only a header, inside the packet's content:
    exit 2 with the stream named, not a Python traceback."""
    packet = bytearray(ctf_fixture.packet_bytes(0, [(1000, "user_stack", dict(
        tid=3, count=0, flags=0, frames=[]))], 0))
    content_bits = struct.unpack_from("<Q", packet, 40)[0]
    at = content_bits // 8
    struct.pack_into("<HBBI", packet, at, 16, 1, 0, 1000)  # id 16 (user_stack_def), 8 bytes
    struct.pack_into("<Q", packet, 40, (at + 8) * 8)
    data = frame(FRAME_METADATA, ctf_fixture.tsdl().encode()) + frame(FRAME_PACKET, bytes(packet))
    status, out, err, _, _ = record(capture_script(None, after_start=data), "--stacks")
    expect(status == 2 and "malformed packet on stream 0" in err and "Traceback" not in err,
           "a short stack record was not refused clearly\n" + shown(status, out, err))


def record_keeps_a_marks_padding_out_of_the_content():
    """A packet whose stack references mscope rewrites, ending in a user mark
    whose data stops short of its last word: the packet it writes still ends
    its content where the mark's data does (the padding after it is no
    event), so the Python bindings count the capture complete, babeltrace2
    reads it without a complaint, and convert and repair read the same."""
    lengths = (5, 3, 8)
    packets = [ctf_fixture.packet_bytes(0, [
        (t + 1000, "thread_name", dict(pid=2, tid=2, name="httpd")),
        (t + 2100, "user_stack_def", dict(tid=2, count=1, flags=0, id=7, reserved=0,
                                          frames=[A])),
        (t + 3100, "user_stack_ref", dict(tid=2, id=7)),
        (t + 3200, "user_mark", dict(type=1, length=length, data=b"x" * length))], 0)
        for t, length in zip((0, 10000, 20000), lengths)]
    count = 4 * len(packets)

    def script(conn):
        expect(conn.read_line().startswith("trace start"), "no trace start")
        conn.send(fake_guest.text("tracing\n"))
        conn.send(frame(FRAME_METADATA, ctf_fixture.tsdl().encode()) +
                  b"".join(frame(FRAME_PACKET, p) for p in packets))
        expect(conn.read_line() == "trace stop", "no trace stop")
        conn.send(fake_guest.end(count, count, 0))
    status, out, err, out_dir, _ = record(script, "--stacks")
    expect(status == 0 and "trace complete" in out, "record failed\n" + shown(status, out, err))
    with open(os.path.join(out_dir, "stream_0"), "rb") as f:
        stream = f.read()
    at, ends = 0, []  # where each packet's content ends inside its last word
    while at < len(stream):
        content, size = struct.unpack_from("<QQ", stream, at + 40)
        ends.append(content // 8 % 8)
        at += size // 8
    expect(at == len(stream) and ends == [n % 8 for n in lengths],
           f"contents end {ends} bytes into their last words, not {[n % 8 for n in lengths]}")
    proc = subprocess.run(["babeltrace2", out_dir], capture_output=True, text=True,
                          timeout=TIMEOUT)
    complaints = [line for line in proc.stderr.splitlines()
                  if "WARN-MEANINGLESS-HEADER-FIELDS" not in line]
    expect(proc.returncode == 0 and not complaints and len(proc.stdout.splitlines()) == count,
           "babeltrace2 complained\n" + proc.stdout + proc.stderr)
    status, text, err = mscope("convert", out_dir, "--text")
    expect(status == 0 and len(text.splitlines()) == count,
           "convert read otherwise\n" + shown(status, text, err))
    repaired = out_dir + ".repaired"
    status, rout, err = mscope("repair", out_dir, "-o", repaired)
    expect(status == 0 and f"{count}" in rout, "repair read otherwise\n" + shown(status, rout, err))


def record_reports_a_refused_start():
    """The OS answers `trace start` with an error: mscope says so and why,
    exit 1, without waiting for a trace that never comes."""
    def script(conn):
        expect(conn.read_line().startswith("trace start"), "no trace start")
        conn.send(fake_guest.text("trace start: error -2\n"))
    status, out, err, _, lines = record(script, "-p", "no.such.jp")
    expect(status == 1 and "refused `trace start`" in err and "no join point matches" in err,
           "a refused start was not reported\n" + shown(status, out, err))
    expect(lines == ["trace start no.such.jp"], f"control lines {lines}")


def references_read_as_the_stacks_they_name():
    """A directory that holds the records as the OS wrote them (its file
    sink's) reads, in every output, as the one mscope record makes of them:
    the text, and the folded stacks and their table."""
    with tempfile.TemporaryDirectory() as tmp:
        raw = os.path.join(tmp, "raw")
        os.makedirs(raw)
        with open(os.path.join(raw, "metadata"), "w") as f:
            f.write(ctf_fixture.tsdl())
        for cpu, plist in reference_packets().items():
            with open(os.path.join(raw, f"stream_{cpu}"), "wb") as f:
                f.write(b"".join(plist))
        end = (REFERENCE_COUNT, REFERENCE_COUNT, 0)
        status, out, err, whole, _ = record(reference_script(end), "--stacks")
        expect(status == 0, "record failed\n" + shown(status, out, err))
        outputs = {}
        for name, directory in (("raw", raw), ("whole", whole)):
            folded = os.path.join(tmp, f"{name}.folded")
            _, text, _ = mscope("convert", directory, "--text")
            _, table, _ = mscope("stacks", directory, "--folded", folded, "--elf-dir", tmp)
            with open(folded) as f:
                outputs[name] = (text, table, f.read())
    expect(outputs["raw"] == outputs["whole"],
           f"the raw records read differently:\n{outputs['raw']}\n{outputs['whole']}")
    text, table, folded = outputs["whole"]
    expect(text.count("user_stack:") == 6 and "stack_ref" not in text,
           "the text does not hold six whole stacks\n" + text)
    expect(f"httpd;{C:#x};{B:#x};{A:#x};read 2" in folded, "folded stacks\n" + folded)


# ---------------------------------------------------------------- control


def answering(expected, answers, uploads=None):
    """A guest that expects these control lines in order and answers each;
    uploads: {line: bytes that follow it} (put)."""
    uploads = uploads or {}
    received = {}

    def script(conn):
        for line, answer in zip(expected, answers):
            got = conn.read_line()
            expect(got == line, f"expected {line!r}, got {got!r}")
            if line in uploads:
                received[line] = conn.read_bytes(len(uploads[line]))
            conn.send(fake_guest.text(answer))
    return script, received


def control(expected, answers, args, uploads=None):
    script, received = answering(expected, answers, uploads)
    guest = fake_guest.FakeGuest(script)
    status, out, err = mscope(*args, "--attach", guest.path)
    lines = guest.finish()
    expect(guest.error is None, f"fake guest: {guest.error}\n" + shown(status, out, err))
    expect(lines == expected, f"control lines {lines}, expected {expected}")
    return status, out, err, received


def aspect_link_uploads_loads_and_links():
    """put the object, load it from /tmp, link it under the name the linker
    answered, with the binding asked for."""
    data = bytes(range(256)) * 3
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.o")
        with open(path, "wb") as f:
            f.write(data)
        put = f"put probe.o {len(data)}"
        status, out, err, received = control(
            [put, "aspect load /tmp/probe.o", "aspect link tracer shm"],
            ["stored /tmp/probe.o\n", "aspect tracer loaded (2 advice)\n",
             "aspect tracer linked shm\n"],
            ["aspect", "link", path, "--binding", "shm"], uploads={put: data})
    expect(status == 0, shown(status, out, err))
    expect(received.get(put) == data, "the object's bytes differ after put")
    expect(out.splitlines() == ["stored /tmp/probe.o", "aspect tracer loaded (2 advice)",
                                "aspect tracer linked shm"], "answers not printed\n" + out)


def aspect_link_stops_when_the_load_fails():
    data = b"\x7fELF not really"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bad.o")
        with open(path, "wb") as f:
            f.write(data)
        put = f"put bad.o {len(data)}"
        status, out, err, _ = control(
            [put, "aspect load /tmp/bad.o"],
            ["stored /tmp/bad.o\n", "aspect: /tmp/bad.o: not an ELF relocatable object\n"],
            ["aspect", "link", path, "--binding", "msg"], uploads={put: data})
    expect(status == 1 and "not an ELF" in out, "a failed load was not reported\n" +
           shown(status, out, err))


def aspect_link_says_when_the_os_hangs_up_during_the_upload():
    """The OS reads `put NAME LENGTH` and closes the channel before the
    object's bytes are through (more than the socket buffers hold): a line
    that says so and status 1, not a silent exit."""
    data = bytes(3 << 20)

    def script(conn):
        conn.read_line()
        conn.sock.close()  # unread bytes: mscope's writes fail

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.o")
        with open(path, "wb") as f:
            f.write(data)
        guest = fake_guest.FakeGuest(script)
        status, out, err = mscope("aspect", "link", path, "--binding", "shm",
                                  "--attach", guest.path)
        guest.finish()
    expect(status == 1 and f"closed the channel before answering `put big.o {len(data)}`" in err
           and "Traceback" not in err,
           "a hang-up during the upload was not said\n" + shown(status, out, err))


def aspect_commands_the_os_refuses_exit_1():
    """The kernel shell's refusals (the aspect command's complaint, the
    shell's error line, its usage line) give status 1, for link's last
    step too, so that a script can tell; the answer is still printed."""
    no_such = "aspect: no aspect 'tracer' loaded\naspect: no such entry (-2)\n"
    cases = [(["aspect", "unlink", "tracer"], "aspect unlink tracer", no_such),
             (["aspect", "relink", "tracer", "--binding", "msg"], "aspect relink tracer msg",
              "aspect: busy (-16)\n"),
             (["aspect", "stats", "tracer"], "aspect stats tracer", no_such)]
    for args, line, answer in cases:
        status, out, err, _ = control([line], [answer], args)
        expect(status == 1 and out == answer, f"mscope {' '.join(args)} refused\n" +
               shown(status, out, err))
    data = b"\x7fELF"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.o")
        with open(path, "wb") as f:
            f.write(data)
        put = f"put probe.o {len(data)}"
        status, out, err, _ = control(
            [put, "aspect load /tmp/probe.o", "aspect link tracer shm"],
            ["stored /tmp/probe.o\n", "aspect tracer loaded (2 advice)\n",
             "aspect: busy (-16)\n"],
            ["aspect", "link", path, "--binding", "shm"], uploads={put: data})
    expect(status == 1 and "busy" in out, "a refused link exited 0\n" + shown(status, out, err))


def aspect_unlink_relink_stats_and_send():
    """Each is one kernel shell line in the `aspect` command's syntax."""
    cases = [(["aspect", "unlink", "tracer"], "aspect unlink tracer"),
             (["aspect", "relink", "tracer", "--binding", "msg"], "aspect relink tracer msg"),
             (["aspect", "stats"], "aspect stats"),
             (["send", "ps"], "ps")]
    for args, line in cases:
        status, out, err, _ = control([line], [f"answer to {line}\n"], args)
        expect(status == 0 and out == f"answer to {line}\n",
               f"mscope {' '.join(args)}\n" + shown(status, out, err))


def control_lines_too_long_are_refused_plainly():
    """A line longer than the OS reads (255 bytes): `send` says so in one
    line, status 1, no traceback, nothing sent; `record` with patterns that
    long says so before it attaches or writes anything."""
    long_word = "x" * 300
    guest = fake_guest.FakeGuest(lambda conn: None)
    status, out, err = mscope("send", "--attach", guest.path, long_word)
    lines = guest.finish()
    expect(status == 1 and "at most 255" in err and "Traceback" not in err and
           len(err.strip().splitlines()) == 1 and not lines,
           f"a 300-byte line (the guest read {lines})\n" + shown(status, out, err))
    with tempfile.TemporaryDirectory() as tmp:
        out_dir = os.path.join(tmp, "trace")
        status, out, err = mscope("record", "--attach", os.path.join(tmp, "none.sock"), "-p",
                                  long_word, "-o", out_dir)
        expect(status == 1 and "at most 255" in err and not os.path.exists(out_dir),
               "a trace start too long\n" + shown(status, out, err))


def control_commands_need_attach_or_boot():
    """send, aspect, lattrack and uscope reach a running OS: without --attach
    (or MSCOPE_SOCKET) and without --boot, a usage error and status 2, not a
    boot of its own (the kernel named here does not exist, so that a boot
    would end at once)."""
    env = {k: v for k, v in os.environ.items() if k != "MSCOPE_SOCKET"}
    with tempfile.TemporaryDirectory() as tmp:
        reach = ["--kernel", os.path.join(tmp, "none.elf"),
                 "--serial-log", os.path.join(tmp, "serial.log")]
        for args in (["send", "ps"], ["aspect", "stats"], ["lattrack", "slow"],
                     ["uscope", "list"], ["uscope", "trace", "httpd"]):
            proc = subprocess.run([MSCOPE, *args, *reach], capture_output=True, text=True,
                                  timeout=TIMEOUT, stdin=subprocess.DEVNULL, env=env)
            expect(proc.returncode == 2 and "give --attach" in proc.stderr and
                   "booting" not in proc.stderr,
                   f"mscope {' '.join(args)} without --attach\n" +
                   shown(proc.returncode, proc.stdout, proc.stderr))


def lattrack_names_user_frames_from_the_elf():
    """`mscope lattrack NAME` asks `lattrack show NAME` and names each user
    frame from the reporting program's ELF (a return address is looked up
    one byte back); kernel frames, which come named, and the frames of a
    kernel thread's report stay as they are."""
    with tempfile.TemporaryDirectory() as tmp:
        source, program = os.path.join(tmp, "slow.c"), os.path.join(tmp, "slowprog")
        with open(source, "w") as f:
            f.write("void sleep_here(void) {}\nvoid caller(void) { sleep_here(); }\n"
                    "int main(void) { caller(); return 0; }\n")
        subprocess.run(["gcc", "-O0", "-o", program, source], check=True, timeout=TIMEOUT)
        nm = subprocess.run(["nm", "--defined-only", program], capture_output=True, text=True,
                            timeout=TIMEOUT).stdout
        address = {parts[2]: int(parts[0], 16) for parts in map(str.split, nm.splitlines())
                   if len(parts) == 3}
        caller, main = address["caller"], address["main"]
        answer = (f"slow: 2 recent reports\n"
                  f"report normal 5012 us id 35 cpu 0 tid 7 program=slowprog\n"
                  f"    #0 0x{caller + 9:016x}\n"
                  f"    #1 0x{main + 14:016x}\n"
                  f"report normal 2990 us id 0 cpu 1 tid 0 program=-\n"
                  f"    woken by tid 6 (sh) on cpu 0\n"
                  f"    #0 0xffffffff801338f5 waitq_wake_all+0x25\n"
                  f"    #1 0x{caller + 9:016x}\n")
        status, out, err, _ = control(["lattrack show slow"], [answer],
                                      ["lattrack", "slow", "--elf-dir", tmp])
    lines = out.splitlines()
    expect(status == 0 and len(lines) == 8, "lattrack failed\n" + shown(status, out, err))
    expect(lines[2].endswith(f"0x{caller + 9:016x} caller+0x9"), "frame #0 not named: " + lines[2])
    expect(lines[3].endswith(f"0x{main + 14:016x} main+0xe"), "frame #1 not named: " + lines[3])
    expect(lines[6].endswith("waitq_wake_all+0x25") and lines[7].endswith(f"{caller + 9:016x}"),
           "a kernel thread's frames changed:\n" + out)
    status, out, err, _ = control(["lattrack show none"], ["lattrack: no such thing (-2)\n"],
                                  ["lattrack", "none"])
    expect(status == 1, "no such tracker was not status 1\n" + shown(status, out, err))


# ---------------------------------------------------------------- convert


def fixture_trace(tmp):
    return ctf_fixture.write(os.path.join(tmp, "trace"))


def babeltrace2_reads_the_synthetic_trace():
    """Debian's babeltrace2 reads the layout with no error, every event, and
    reports the discarded ones."""
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(["babeltrace2", fixture_trace(tmp)], capture_output=True, text=True,
                              timeout=TIMEOUT)
    lines = proc.stdout.splitlines()
    errors = [l for l in proc.stderr.splitlines() if " E " in l or " F " in l or "ERROR" in l]
    expect(proc.returncode == 0 and not errors, "babeltrace2 failed\n" + proc.stdout + proc.stderr)
    expect(len(lines) == ctf_fixture.EVENT_COUNT,
           f"{len(lines)} events printed, {ctf_fixture.EVENT_COUNT} in the trace\n" + proc.stdout)
    expect("discarded 3 events" in proc.stderr, "the discarded events were not reported")


def convert(tmp, *how):
    status, out, err = mscope("convert", fixture_trace(tmp), *how)
    expect(status == 0, "convert failed\n" + shown(status, out, err))
    return out


def chrome(tmp):
    path = os.path.join(tmp, "trace.json")
    convert(tmp, "--chrome", path)
    with open(path) as f:
        return json.load(f)


def find(events, **want):
    found = [e for e in events if all(e.get(k) == v for k, v in want.items())]
    expect(len(found) == 1, f"{len(found)} events match {want}")
    return found[0]


def close(a, b):
    return abs(a - b) < 1e-6


def convert_chrome_passes_the_structural_check():
    with tempfile.TemporaryDirectory() as tmp:
        doc = chrome(tmp)
    problems = chrome_check.check_chrome_trace(doc)
    expect(not problems, "\n".join(problems))


def convert_chrome_spans_threads_and_names():
    """Ticks of a 2.5 GHz clock become µs; the entry/exit pair, the system
    call and the folded call become X events on the thread that ran them;
    names come from thread_name and process_exec; the rest are instants."""
    with tempfile.TemporaryDirectory() as tmp:
        events = chrome(tmp)["traceEvents"]
    read = find(events, ph="X", name="vfs.read")
    expect((read["pid"], read["tid"]) == (2, 2), f"vfs.read on {read['pid']}/{read['tid']}")
    expect(close(read["ts"], 2.0) and close(read["dur"], 1.2), f"vfs.read at {read}")
    lookup = find(events, ph="X", name="vfs.lookup")
    expect(close(lookup["ts"], 2.3) and close(lookup["dur"], 0.1), f"vfs.lookup at {lookup}")
    syscall = find(events, ph="X", name="read")
    expect(close(syscall["ts"], 2.2) and close(syscall["dur"], 0.6), f"read at {syscall}")
    irq = find(events, ph="X", name="irq 32")
    expect(irq["tid"] == 3, f"the interrupt ran on thread {irq['tid']}, netd is 3")
    expect(find(events, ph="M", name="thread_name", tid=2)["args"]["name"] == "httpd",
           "thread 2 is not named httpd")
    expect(find(events, ph="M", name="process_name", pid=3)["args"]["name"] == "netd",
           "process 3 is not named netd")
    mark = find(events, ph="i", name="user_mark")
    expect(mark["tid"] == 2 and mark["args"]["data"] == "hello", f"user_mark {mark}")
    expect(find(events, ph="i", name="events_discarded")["args"]["count"] == 3,
           "the discarded events are not in the trace")
    expect(not [e for e in events if e["name"].endswith((":entry", ":exit"))],
           "a matched entry or exit was left as an instant")


def convert_text_resolves_names():
    with tempfile.TemporaryDirectory() as tmp:
        out = convert(tmp, "--text")
    lines = out.splitlines()
    expect(len(lines) == ctf_fixture.EVENT_COUNT + 1, f"{len(lines)} lines\n" + out)
    for want in ("cpu 0 tid 2 (httpd) vfs.read:entry: { arg0 = 3 }",
                 "syscall_entry: { number = 0 (read), arg0 = 3 }",
                 "prev_tid = 1 (init), next_tid = 2 (httpd)",
                 "events_discarded: { count = 3"):
        expect(any(want in line for line in lines), f"no line with {want!r}\n" + out)


def convert_refuses_metadata_it_cannot_read():
    """Metadata cut short or not TSDL at all, and an output it cannot write:
    a line that says so and status 1, never an abort or a traceback."""
    with tempfile.TemporaryDirectory() as tmp:
        ctf_fixture.write(tmp)
        with open(os.path.join(tmp, "metadata")) as f:
            text = f.read()
        for bad in (text[:3000], "this is not TSDL\n"):
            with open(os.path.join(tmp, "metadata"), "w") as f:
                f.write(bad)
            status, out, err = mscope("convert", tmp, "--text")
            expect(status == 1 and "Traceback" not in err,
                   "unreadable metadata was not refused clearly\n" + shown(status, out, err))
        with open(os.path.join(tmp, "metadata"), "w") as f:
            f.write(text)
        status, out, err = mscope("convert", tmp, "--chrome", os.path.join(tmp, "no", "o.json"))
        expect(status == 1 and "Traceback" not in err and "No such file" in err,
               "an output it cannot write was not refused clearly\n" + shown(status, out, err))


def convert_says_in_one_line_why_a_stream_is_unreadable():
    """A record of an event id the metadata does not declare, and a packet
    whose magic is wrong: status 1 and one line that names the stream and
    the fault, not a Python traceback."""
    with tempfile.TemporaryDirectory() as tmp:
        ctf_fixture.write(tmp)
        stream = os.path.join(tmp, "stream_0")
        with open(stream, "rb") as f:
            whole = f.read()
        unknown = bytearray(whole)
        struct.pack_into("<H", unknown, 72, 999)  # the first record's event id
        bad_magic = bytearray(whole)
        struct.pack_into("<I", bad_magic, 0, 0xDEADBEEF)
        for data, want in ((bytes(unknown), "event id 999"), (bytes(bad_magic), "0xdeadbeef")):
            with open(stream, "wb") as f:
                f.write(data)
            status, out, err = mscope("convert", tmp, "--text")
            lines = err.strip().splitlines()
            expect(status == 1 and len(lines) == 1 and want in lines[0] and
                   "stream_0" in lines[0] and "Traceback" not in err,
                   f"an unreadable stream ({want}) was not said in one line\n" +
                   shown(status, out, err))


# ---------------------------------------------------------------- a stream cut mid-packet

def last_packet_records(cpu):
    """(offset of the last packet of cpu's stream in its file, [(end of each
    record's payload in the packet, its ticks)]): where a cut leaves each
    record whole."""
    plist = ctf_fixture.packets()[cpu]
    offset = sum(len(p) for p in plist[:-1])
    events, at, clock, ends = ctf_fixture.CPUS[cpu][-1], 72, ctf_fixture.CPUS[cpu][-1][0][0], []
    for ticks, name, values in events:
        data, clock, size = ctf_fixture.event_bytes(clock, ticks, name, values)
        ends.append((at + size, ticks))
        at += len(data)
    return offset, ends


def cut_fixture(tmp, cut):
    """The fixture trace in tmp/cut with stream_0 cut after cut bytes."""
    directory = fixture_trace(tmp)
    with open(os.path.join(directory, "stream_0"), "rb") as f:
        whole = f.read()
    with open(os.path.join(directory, "stream_0"), "wb") as f:
        f.write(whole[:cut])
    return directory


def cuts():
    """(cut, records of the last packet left whole) at places that matter:
    inside its header, right after its context, inside each record and at
    its end, in the padding after the content."""
    offset, ends = last_packet_records(0)
    points = [(offset + 30, 0), (offset + 70, 0), (offset + 72, 0)]
    for i, (end, _) in enumerate(ends):
        points += [(offset + end - 1, i), (offset + end, i + 1)]
    size = len(ctf_fixture.packets()[0][-1])
    points.append((offset + size - 1, len(ends)))
    return points


def babeltrace2_events(directory):
    proc = subprocess.run(["babeltrace2", directory], capture_output=True, text=True,
                          timeout=TIMEOUT)
    return proc.returncode, [l for l in proc.stdout.splitlines() if l.startswith("[")]


def convert_reads_a_cut_stream_up_to_the_cut():
    """stream_0 cut inside its last packet (where babeltrace2 refuses the
    whole trace): convert reads every record before the cut, both outputs,
    status 0, with one warning that names the stream and the cut."""
    whole_events = ctf_fixture.EVENT_COUNT + 1  # and the discarded events' line
    last = len(ctf_fixture.CPUS[0][-1])
    for cut, kept in cuts():
        with tempfile.TemporaryDirectory() as tmp:
            directory = cut_fixture(tmp, cut)
            status, out, err = mscope("convert", directory, "--text")
            lines = out.splitlines()
            want = whole_events - last + kept
            expect(status == 0 and len(lines) == want,
                   f"a cut at byte {cut}: {len(lines)} lines, {want} before it\n" +
                   shown(status, out, err))
            warnings = err.strip().splitlines()
            expect(len(warnings) == 1 and "warning" in warnings[0] and "stream_0" in warnings[0]
                   and f"cut at byte {cut}" in warnings[0] and "mscope repair" in warnings[0],
                   f"a cut at byte {cut} was not said in one warning\n{err}")
            path = os.path.join(tmp, "t.json")
            status, out, err = mscope("convert", directory, "--chrome", path)
            with open(path) as f:
                problems = chrome_check.check_chrome_trace(json.load(f))
            expect(status == 0 and not problems,
                   f"a cut at byte {cut}: chrome\n" + "\n".join(problems) + shown(status, out, err))


def repair_makes_a_cut_stream_readable_by_babeltrace2():
    """babeltrace2 refuses a trace whose stream is cut inside a packet;
    mscope repair writes a copy it reads: every record before the cut, the
    cut packet's context saying where its records end (content size, end
    time, the discarded count unchanged), and convert reads the copy as it
    read the cut trace.  A trace cut at a packet's end needs no repair."""
    offset, ends = last_packet_records(0)
    last = len(ends)
    for cut, kept in cuts():
        with tempfile.TemporaryDirectory() as tmp:
            directory = cut_fixture(tmp, cut)
            status, _ = babeltrace2_events(directory)
            expect(status != 0, f"babeltrace2 read a stream cut at byte {cut}: the test is void")
            copy = os.path.join(tmp, "copy")
            status, out, err = mscope("repair", directory, "-o", copy)
            expect(status == 0 and "stream_0: cut at byte" in out and "Traceback" not in err,
                   f"repair of a cut at byte {cut}\n" + shown(status, out, err))
            status, events = babeltrace2_events(copy)
            want = ctf_fixture.EVENT_COUNT - last + kept
            expect(status == 0 and len(events) == want,
                   f"babeltrace2 reads {len(events)} events of the copy (status {status}), "
                   f"{want} were before the cut at byte {cut}")
            with open(os.path.join(copy, "stream_0"), "rb") as f:
                repaired = f.read()
            if cut - offset >= 68:  # the cut packet's header stayed: its context says so
                begin, end, content, size, discarded = struct.unpack_from(
                    "<QQQQQ", repaired, offset + 24)
                want_end = ends[kept - 1][1] if kept else begin
                want_content = ends[kept - 1][0] if kept else 68
                expect((end, content, size, discarded) ==
                       (want_end, want_content * 8, len(repaired[offset:]) * 8, 0) and
                       size >= content and size % 64 == 0,
                       f"the cut packet's context: end {end}, content {content}, size {size}, "
                       f"discarded {discarded}; want end {want_end}, content {want_content * 8}")
            else:
                expect(len(repaired) == offset, f"a cut header was kept: {len(repaired)} bytes")
            _, cut_text, _ = mscope("convert", directory, "--text")
            _, copy_text, _ = mscope("convert", copy, "--text")
            strip = [l.split(", until")[0] for l in cut_text.splitlines()]
            expect(strip == [l.split(", until")[0] for l in copy_text.splitlines()],
                   f"convert reads the copy otherwise than the cut trace (cut {cut})")
    with tempfile.TemporaryDirectory() as tmp:
        status, out, err = mscope("repair", fixture_trace(tmp), "-o", os.path.join(tmp, "copy"))
        expect(status == 0 and "0 stream(s) repaired" in out,
               "a whole trace was repaired\n" + shown(status, out, err))


# ---------------------------------------------------------------- convert in bounded memory

RUN_EVENTS = 2000  # MSCOPE_RUN_EVENTS: the events convert --chrome holds before a sorted run


def synthetic_trace(directory, n):
    """bench_mscope's trace of n records (2 CPUs, packets of 1024)."""
    import bench_mscope
    return bench_mscope.write_trace(directory, n)


def peak_rss_kib(args, environment):
    """The peak resident set of mscope ARGS, in KiB: measured by a child
    Python of its own, whose only child it is (getrusage of the children
    is the largest one's)."""
    measure = ("import resource, subprocess, sys\n"
               "status = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
               "print(status, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    proc = subprocess.run([sys.executable, "-c", measure, MSCOPE, *args], capture_output=True,
                          text=True, timeout=TIMEOUT * 4, env=dict(os.environ, **environment))
    status, peak = proc.stdout.split()
    expect(status == "0", f"mscope {' '.join(args)} failed\n{proc.stderr}")
    return int(peak)


def convert_memory_does_not_grow_with_the_records():
    """convert --chrome and --text of N and of 4N records: the peak resident
    set of the larger is within a quarter of the smaller's (holding every
    record, as convert once did, took about 1.2 KiB more per record: three
    times as much); the Chrome JSON written through sorted runs on disk is
    the one written from memory."""
    n = 30000
    small_runs = {"MSCOPE_RUN_EVENTS": str(RUN_EVENTS)}
    with tempfile.TemporaryDirectory() as tmp:
        peaks = {}
        for records in (n, 4 * n):
            directory = synthetic_trace(os.path.join(tmp, f"t{records}"), records)
            out = os.path.join(tmp, f"t{records}.json")
            peaks[records] = (peak_rss_kib(["convert", directory, "--chrome", out], small_runs),
                              peak_rss_kib(["convert", directory, "--text"], small_runs))
        for i, how in enumerate(("--chrome", "--text")):
            expect(peaks[4 * n][i] < peaks[n][i] * 1.25,
                   f"convert {how}: {peaks[n][i]} KiB for {n} records, {peaks[4 * n][i]} KiB "
                   f"for {4 * n}: memory grows with the records")
        in_memory = os.path.join(tmp, "in-memory.json")
        peak_rss_kib(["convert", os.path.join(tmp, f"t{n}"), "--chrome", in_memory],
                     {"MSCOPE_RUN_EVENTS": str(10 * n)})
        with open(in_memory) as a, open(os.path.join(tmp, f"t{n}.json")) as b:
            expect(a.read() == b.read(), "the JSON sorted through runs on disk differs")


def chrome_check_finds_faults():
    """The checker itself fails on each kind of fault it is meant to find."""
    good = {"traceEvents": [
        {"ph": "M", "name": "thread_name", "ts": 0, "pid": 1, "tid": 1, "args": {"name": "a"}},
        {"ph": "M", "name": "process_name", "ts": 0, "pid": 1, "tid": 1, "args": {"name": "a"}},
        {"ph": "X", "name": "f", "ts": 1.0, "dur": 2.0, "pid": 1, "tid": 1},
        {"ph": "i", "name": "g", "ts": 1.5, "pid": 1, "tid": 1, "s": "t"}]}
    expect(chrome_check.check_chrome_trace(good) == [], "a good trace was refused")
    faults = {
        "has no dur": lambda evs: evs[2].pop("dur"),
        "has no tid": lambda evs: evs[3].pop("tid"),
        "goes back": lambda evs: evs[3].update(ts=0.5),
        "no thread_name": lambda evs: evs.pop(0),
        "not a time": lambda evs: evs[3].update(ts="1.5"),
    }
    for fault, breaks in faults.items():
        doc = json.loads(json.dumps(good))
        breaks(doc["traceEvents"])
        problems = chrome_check.check_chrome_trace(doc)
        expect(any(fault in p for p in problems), f"fault '{fault}' not found: {problems}")


CASES = [record_writes_a_ctf_directory, record_reports_counts_that_do_not_add_up,
         record_reports_delivered_events_missing_from_the_files, record_refuses_a_bad_magic,
         record_refuses_a_truncated_frame, record_refuses_a_malformed_end,
         record_without_end_is_incomplete, record_stops_on_ctrl_c,
         record_resolves_stack_references, record_refuses_a_stack_record_too_short_for_its_fields,
         record_keeps_a_marks_padding_out_of_the_content, record_reports_a_refused_start,
         references_read_as_the_stacks_they_name,
         aspect_link_uploads_loads_and_links,
         aspect_link_stops_when_the_load_fails,
         aspect_link_says_when_the_os_hangs_up_during_the_upload,
         aspect_unlink_relink_stats_and_send, aspect_commands_the_os_refuses_exit_1,
         lattrack_names_user_frames_from_the_elf, control_commands_need_attach_or_boot,
         control_lines_too_long_are_refused_plainly,
         babeltrace2_reads_the_synthetic_trace, convert_chrome_passes_the_structural_check,
         convert_refuses_metadata_it_cannot_read,
         convert_says_in_one_line_why_a_stream_is_unreadable,
         convert_reads_a_cut_stream_up_to_the_cut,
         repair_makes_a_cut_stream_readable_by_babeltrace2,
         convert_memory_does_not_grow_with_the_records,
         convert_chrome_spans_threads_and_names, convert_text_resolves_names,
         chrome_check_finds_faults]


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
    except Exception as e:  # a crash of the case is a failure with its traceback
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
