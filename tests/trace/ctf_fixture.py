"""A small CTF 1.8 trace with the kernel's layout, written byte by byte.

Why: mscope's converter and the structural checks need a trace that does not
come from a booted OS.  This one has the stream layout the kernel's recorder
uses (packet header, packet context with cpu_id and events_discarded, the
compact/extended event header whose 32-bit timestamps are deltas against the
packet's full one), the built-in event names and payloads of
kernel/uapi/trace.h and join point events (vfs.read:entry/exit, :call), on two
CPUs, with one compact timestamp that wraps and one extended header.  The
TSDL here is written from that layout, not copied from the kernel.
"""
import os
import struct

CLOCK_FREQ = 2_500_000_000  # a TSC frequency: ticks are not nanoseconds
UUID = bytes(range(0x10, 0x20))
PACKET_MAGIC = 0xC1FC1FC1

INT_TYPES = {"u8": ("uint8_t", "<B"), "u16": ("uint16_t", "<H"), "u32": ("uint32_t", "<I"),
             "i32": ("int32_t", "<i"),
             "u64": ("uint64_t", "<Q"), "i64": ("int64_t", "<q")}

# (id, name, fields): the payloads of kernel/uapi/trace.h.  "name16" is
# char[16], NUL-padded; "bytes" is uint8_t data[length].
EVENTS = [
    (1, "sched_switch", [("prev_tid", "i32"), ("next_tid", "i32"), ("prev_state", "i32"),
                         ("next_pid", "i32")]),
    (2, "sched_wakeup", [("tid", "i32"), ("target_cpu", "i32")]),
    (4, "irq_entry", [("vector", "u32"), ("reserved", "u32")]),
    (5, "irq_exit", [("vector", "u32"), ("reserved", "u32")]),
    (6, "syscall_entry", [("number", "i64"), ("arg0", "u64")]),
    (7, "syscall_exit", [("number", "i64"), ("result", "i64")]),
    (8, "page_fault", [("address", "u64"), ("ip", "u64"), ("error_code", "u32"), ("tid", "i32")]),
    (9, "process_fork", [("parent_pid", "i32"), ("child_pid", "i32"), ("child_tid", "i32"),
                         ("reserved", "i32")]),
    (10, "process_exec", [("pid", "i32"), ("tid", "i32"), ("name", "name16")]),
    (12, "thread_name", [("pid", "i32"), ("tid", "i32"), ("name", "name16")]),
    (13, "user_mark", [("type", "u32"), ("length", "u32"), ("data", "bytes")]),
    (15, "user_stack", [("tid", "i32"), ("count", "u16"), ("flags", "u16"), ("frames", "frames")]),
    (16, "user_stack_def", [("tid", "i32"), ("count", "u16"), ("flags", "u16"), ("id", "u32"),
                            ("reserved", "u32"), ("frames", "frames")]),
    (17, "user_stack_ref", [("tid", "i32"), ("id", "u32")]),
    (18, "syscall_stack", [("number", "i64"), ("arg0", "u64"), ("tid", "i32"), ("id", "u32")]),
    (1024 + 3 * 5 + 0, "vfs.read:entry", [("arg0", "u64")]),
    (1024 + 3 * 5 + 1, "vfs.read:exit", [("result", "i64")]),
    (1024 + 3 * 7 + 2, "vfs.lookup:call", [("arg0", "u64"), ("result", "i32"),
                                           ("duration", "u32")]),
]
BY_NAME = {name: (eid, fields) for eid, name, fields in EVENTS}

# The trace: per CPU, its packets, each a list of (ticks, event, fields).
# CPU 0: init forks httpd, switches to it; httpd reads (an entry/exit pair
# around a system call and a folded call), blocks; a mark 2^32 ticks later
# needs an extended header.  CPU 1: netd faults, takes an interrupt; its
# second packet reports 3 discarded events.
WRAP = 1 << 32
CPUS = {
    0: [
        [(1000, "thread_name", dict(pid=1, tid=1, name="init")),
         (2000, "process_fork", dict(parent_pid=1, child_pid=2, child_tid=2, reserved=0)),
         (3000, "sched_switch", dict(prev_tid=1, next_tid=2, prev_state=0, next_pid=2)),
         (4000, "process_exec", dict(pid=2, tid=2, name="httpd")),
         (5000, "vfs.read:entry", dict(arg0=3)),
         (5500, "syscall_entry", dict(number=0, arg0=3)),
         (6000, "vfs.lookup:call", dict(arg0=7, result=0, duration=250)),
         (7000, "syscall_exit", dict(number=0, result=10)),
         (8000, "vfs.read:exit", dict(result=10))],
        [(9000, "sched_switch", dict(prev_tid=2, next_tid=1, prev_state=1, next_pid=1)),
         (WRAP - 100, "sched_wakeup", dict(tid=2, target_cpu=0)),
         (WRAP + 200, "sched_switch", dict(prev_tid=1, next_tid=2, prev_state=0, next_pid=2)),
         (2 * WRAP + 5000, "user_mark", dict(type=7, length=5, data=b"hello"))],
    ],
    1: [
        [(1500, "thread_name", dict(pid=3, tid=3, name="netd")),
         (2500, "page_fault", dict(address=0x1000, ip=0xffffffff80001234, error_code=2, tid=3)),
         (3500, "irq_entry", dict(vector=32, reserved=0)),
         (3600, "irq_exit", dict(vector=32, reserved=0))],
        [(10000, "sched_switch", dict(prev_tid=3, next_tid=0, prev_state=1, next_pid=0))],
    ],
}
DISCARDED = {(1, 1): 3}  # (cpu, packet index) -> events discarded before that packet
EVENT_COUNT = sum(len(p) for packets in CPUS.values() for p in packets)


def tsdl():
    """The metadata: CTF 1.8 TSDL for the layout above."""
    lines = [
        "/* CTF 1.8 */",
        "",
        "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;",
        "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;",
        "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;",
        "typealias integer { size = 32; align = 8; signed = true; } := int32_t;",
        "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;",
        "typealias integer { size = 64; align = 8; signed = true; } := int64_t;",
        "",
        "trace {",
        "\tmajor = 1;",
        "\tminor = 8;",
        f"\tuuid = \"{uuid_text()}\";",
        "\tbyte_order = le;",
        "\tpacket.header := struct {",
        "\t\tuint32_t magic;",
        "\t\tuint8_t uuid[16];",
        "\t\tuint32_t stream_id;",
        "\t};",
        "};",
        "",
        "env {",
        "\tdomain = \"kernel\";",
        "\tsysname = \"microScope\";",
        "};",
        "",
        "clock {",
        "\tname = \"monotonic\";",
        "\tdescription = \"TSC\";",
        f"\tfreq = {CLOCK_FREQ};",
        "\toffset = 0;",
        "};",
        "",
        "typealias integer { size = 32; align = 8; signed = false; "
        "map = clock.monotonic.value; } := uint32_clock_monotonic_t;",
        "typealias integer { size = 64; align = 8; signed = false; "
        "map = clock.monotonic.value; } := uint64_clock_monotonic_t;",
        "",
        "stream {",
        "\tid = 0;",
        "\tpacket.context := struct {",
        "\t\tuint64_clock_monotonic_t timestamp_begin;",
        "\t\tuint64_clock_monotonic_t timestamp_end;",
        "\t\tuint64_t content_size;",
        "\t\tuint64_t packet_size;",
        "\t\tuint64_t events_discarded;",
        "\t\tuint32_t cpu_id;",
        "\t};",
        "\tevent.header := struct {",
        "\t\tinteger { size = 16; align = 64; signed = false; } id;",
        "\t\tuint8_t words;",
        "\t\tenum : uint8_t { compact = 0, extended = 1 } kind;",
        "\t\tvariant <kind> {",
        "\t\t\tstruct { uint32_clock_monotonic_t timestamp; } compact;",
        "\t\t\tstruct { uint32_t unused; uint64_clock_monotonic_t timestamp; } extended;",
        "\t\t} v;",
        "\t};",
        "};",
        "",
    ]
    for eid, name, fields in EVENTS:
        lines += ["event {", f"\tname = \"{name}\";", f"\tid = {eid};", "\tstream_id = 0;",
                  "\tfields := struct {"]
        for fname, ftype in fields:
            if ftype == "name16":
                lines.append(f"\t\tinteger {{ size = 8; align = 8; signed = false; "
                             f"encoding = UTF8; }} {fname}[16];")
            elif ftype == "bytes":
                lines.append(f"\t\tuint8_t {fname}[length];")
            elif ftype == "frames":
                lines.append(f"\t\tuint64_t {fname}[count];")
            else:
                lines.append(f"\t\t{INT_TYPES[ftype][0]} {fname};")
        lines += ["\t};", "};", ""]
    return "\n".join(lines)


def uuid_text():
    h = UUID.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def payload(name, values):
    _, fields = BY_NAME[name]
    out = b""
    for fname, ftype in fields:
        v = values[fname]
        if ftype == "name16":
            out += v.encode()[:16].ljust(16, b"\0")
        elif ftype == "bytes":
            out += v
        elif ftype == "frames":
            out += b"".join(struct.pack("<Q", f) for f in v)
        else:
            out += struct.pack(INT_TYPES[ftype][1], v)
    return out


def event_bytes(clock, ticks, name, values):
    """(bytes of one event, 8-byte aligned, the clock after it): a compact
    header when the 32-bit delta rule reaches ticks from clock, else an
    extended one."""
    eid, _ = BY_NAME[name]
    body = payload(name, values)
    if ticks - clock < WRAP:
        header = struct.pack("<HBBI", eid, 0, 0, ticks & (WRAP - 1))
    else:
        header = struct.pack("<HBBIQ", eid, 0, 1, 0, ticks)
    size = len(header) + len(body)
    words = (size + 7) // 8
    header = header[:2] + bytes([words]) + header[3:]
    return (header + body).ljust(words * 8, b"\0"), ticks, size


def packet_bytes(cpu, events, discarded):
    """One packet: header, context, events; content_size counts up to the
    last event's payload, packet_size the whole padded packet."""
    head = struct.pack("<I16sI", PACKET_MAGIC, UUID, 0)
    context_size = 8 * 5 + 4
    offset = len(head) + context_size
    offset += -offset % 8  # the first event header's id is 64-bit aligned
    body, clock, last_end = b"", events[0][0], offset
    for ticks, name, values in events:
        data, clock, size = event_bytes(clock, ticks, name, values)
        last_end = offset + len(body) + size
        body += data
    total = offset + len(body)
    total += -total % 64
    context = struct.pack("<QQQQQI", events[0][0], events[-1][0], last_end * 8, total * 8,
                          discarded, cpu)
    packet = (head + context).ljust(offset, b"\0") + body
    return packet.ljust(total, b"\0")


def packets():
    """{cpu: [packet bytes, ...]} of the whole trace."""
    out = {}
    for cpu, plist in CPUS.items():
        discarded = 0
        out[cpu] = []
        for i, events in enumerate(plist):
            discarded += DISCARDED.get((cpu, i), 0)
            out[cpu].append(packet_bytes(cpu, events, discarded))
    return out


def write(directory):
    """Writes the trace as a CTF directory: metadata and stream_<cpu>."""
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "metadata"), "w") as f:
        f.write(tsdl())
    for cpu, plist in packets().items():
        with open(os.path.join(directory, f"stream_{cpu}"), "wb") as f:
            f.write(b"".join(plist))
    return directory
