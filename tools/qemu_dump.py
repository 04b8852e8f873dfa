"""What every virtual CPU was doing when a batch run timed out.

A hang in a test is worth little as "timed out" alone: it may be a deadlock,
a livelock or only a slow host, and it may not come back.  Before qemu.py
kills a run that outlived its timeout, it asks QEMU over QMP (QEMU's JSON
machine protocol, on a private UNIX socket) for each CPU's registers and
walks its frame-pointer chain in guest memory (the kernel is built with frame
pointers, as its own panic backtraces need), then names every address with
addr2line against the kernel ELF.  The result goes into the serial log's
report, so the next occurrence of a rare hang explains itself.
"""
import json
import re
import socket
import subprocess

MAX_FRAMES = 24
REPLY_SECONDS = 5.0


class Qmp:
    """A minimal QMP client: one command at a time, events skipped."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(REPLY_SECONDS)
        self.sock.connect(path)
        self.buffer = b""
        self.read_message()  # the greeting
        self.execute("qmp_capabilities")

    def read_message(self):
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("QMP socket closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def execute(self, command, **arguments):
        request = {"execute": command}
        if arguments:
            request["arguments"] = arguments
        self.sock.sendall(json.dumps(request).encode() + b"\n")
        while True:
            message = self.read_message()
            if "return" in message:
                return message["return"]
            if "error" in message:
                raise RuntimeError(message["error"].get("desc", "QMP error"))

    def hmp(self, line, cpu=None):
        arguments = {"command-line": line}
        if cpu is not None:
            arguments["cpu-index"] = cpu
        return self.execute("human-monitor-command", **arguments)

    def close(self):
        self.sock.close()


def register(text, name):
    m = re.search(r"\b" + re.escape(name) + r"\s*=([0-9a-f]{8,16})\b", text)
    return int(m.group(1), 16) if m else None


def read_words(qmp, cpu, address):
    """Two 64-bit words at a guest virtual address, through cpu's page tables."""
    text = qmp.hmp(f"x /2gx {address:#x}", cpu)
    m = re.search(r":\s*0x([0-9a-f]+)\s+0x([0-9a-f]+)", text)
    if not m or "Cannot access" in text:
        return None
    return int(m.group(1), 16), int(m.group(2), 16)


def frame_chain(qmp, cpu, rbp):
    """Return addresses up the frame-pointer chain from rbp."""
    addresses = []
    for _ in range(MAX_FRAMES):
        if rbp < 0xffff800000000000 or rbp % 8:
            break
        words = read_words(qmp, cpu, rbp)
        if not words:
            break
        next_rbp, return_address = words
        if return_address:
            addresses.append(return_address)
        if next_rbp <= rbp:
            break
        rbp = next_rbp
    return addresses


def symbolize(kernel, addresses):
    """'function file:line' per address (addr2line), '?' when unknown."""
    if not kernel or not addresses:
        return ["?"] * len(addresses)
    try:
        out = subprocess.run(["addr2line", "-f", "-s", "-e", kernel] +
                             [f"{a:#x}" for a in addresses],
                             capture_output=True, text=True, timeout=20).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return ["?"] * len(addresses)
    return [f"{out[2 * i]} {out[2 * i + 1]}" if 2 * i + 1 < len(out) else "?"
            for i in range(len(addresses))]


def cpu_count(qmp):
    return len(qmp.execute("query-cpus-fast"))


def interrupt_state(qmp, cpu):
    """The local APIC's in-service and requested vectors and priorities: an
    interrupt that never ends (ISR) or is never taken (IRR) shows here."""
    try:
        text = qmp.hmp("info lapic", cpu)
    except RuntimeError:
        return ""
    fields = [re.search(r"^" + name + r"\s+(.*)$", text, re.M) for name in ("ISR", "IRR")]
    priorities = re.search(r"TPR (0x[0-9a-f]+).*PPR (0x[0-9a-f]+)", text)
    parts = [f"{name} {m.group(1).strip()}" for name, m in zip(("ISR", "IRR"), fields) if m]
    if priorities:
        parts.append(f"TPR {priorities.group(1)} PPR {priorities.group(2)}")
    return "; ".join(parts)


def describe_cpu(qmp, cpu, kernel):
    registers = qmp.hmp("info registers", cpu)
    rip, rsp, rbp, rflags = (register(registers, r) for r in ("RIP", "RSP", "RBP", "RFL"))
    halted = re.search(r"HLT=(\d)", registers)
    interrupts_on = rflags is not None and rflags & 0x200
    lines = [f"CPU {cpu}: RIP={rip or 0:#018x} RSP={rsp or 0:#018x} RBP={rbp or 0:#018x}"
             f" interrupts {'on' if interrupts_on else 'off'}"
             f"{', halted' if halted and halted.group(1) == '1' else ''}",
             f"    local APIC: {interrupt_state(qmp, cpu)}"]
    chain = [rip] + frame_chain(qmp, cpu, rbp) if rip is not None and rbp is not None else []
    for address, name in zip(chain, symbolize(kernel, chain)):
        lines.append(f"    {address:#018x} {name}")
    return lines


def symbol_addresses(kernel, names):
    """{name: address} of the kernel's symbols among names (nm)."""
    try:
        out = subprocess.run(["nm", kernel], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    wanted, found = set(names), {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in wanted:
            found[parts[2]] = int(parts[0], 16)
    return found


def describe_symbols(qmp, kernel, names):
    """The first two 64-bit words of each named kernel variable."""
    lines = []
    addresses = symbol_addresses(kernel, names) if kernel else {}
    for name in names:
        words = read_words(qmp, 0, addresses[name]) if name in addresses else None
        lines.append(f"  {name} = " + (" ".join(f"{w:#018x}" for w in words) if words else "?"))
    return lines


def dump_cpus(socket_path, kernel, symbols=()):
    """The report for every CPU (and the words of the kernel variables named
    in symbols), as text; never raises."""
    try:
        qmp = Qmp(socket_path)
    except (OSError, ValueError, ConnectionError, RuntimeError) as e:
        return f"qemu.py: could not read the CPUs' state: {e}\n"
    try:
        qmp.execute("stop")
        lines = ["qemu.py: the CPUs when the run was stopped (frame-pointer backtraces):"]
        for cpu in range(cpu_count(qmp)):
            lines += describe_cpu(qmp, cpu, kernel)
        if symbols:
            lines += ["kernel variables:"] + describe_symbols(qmp, kernel, symbols)
        return "\n".join(lines) + "\n"
    except (OSError, ValueError, ConnectionError, RuntimeError) as e:
        return f"qemu.py: could not read the CPUs' state: {e}\n"
    finally:
        qmp.close()

