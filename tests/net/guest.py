"""microScope in QEMU with a NIC on the user network, driven through its
serial console (the user shell) by a test on the host.

    guest = Guest(build, "e1000", {8080: 80}, log)
    if guest.boot():                       # waits for httpd and the shell prompt
        text = guest.run("kcmd mem")       # what the command printed
    guest.stop()
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
QEMU_PY = os.path.join(ROOT, "tools", "qemu.py")
NET_READY = re.compile(r"net: \S+ \d+\.\d+\.\d+\.\d+/\d+ gateway")
PROMPT = re.compile(r"\n/[^\n]*\$ $|\n/[^\n]*\$ (?=\S)")
HTTPD_READY = re.compile(r"httpd: (serving .*|no network.*|port \d+: .*)")
FRAMES_FREE = re.compile(r"mm: (\d+) of (\d+) frames free")
HOSTFWD_FAILED = re.compile(r"Could not set up host forwarding rule")
FORWARD_ATTEMPTS = 5


class Guest:
    def __init__(self, build, nic, forwards, log, timeout=170, memory="256M", smp=1,
                 kernel=None, initrd=None, append="", console_port=None, icount=False,
                 disk=None, qboot=False, tap=None, wrap=None):
        """kernel, initrd: another system to boot (bench-net's Linux guest);
        console_port: a QEMU chardev spec for a virtio console port (the trace
        stream's), e.g. "socket,path=/tmp/x.sock,server=on,wait=off"; icount:
        QEMU -icount shift=0 (guest time counts instructions); disk: an image
        attached as a virtio-blk disk (mounted at /disk when ext2); qboot:
        QEMU's qboot firmware, which leaves the PCI BARs to the kernel; tap: a
        host TAP device for the NIC instead of the user network (forwards then
        do not apply: the host reaches the guest's own address); wrap: a
        function that wraps QEMU's command (tapnet.TapNet.wrap: QEMU runs in
        the namespace that holds the TAP device)."""
        self.log, self.text, self.lock = log, "", threading.Condition()
        self.forwards = dict(forwards)  # host port: guest port
        kernel = kernel or os.path.join(build, "microscope.elf")
        initrd = initrd or os.path.join(build, "initrd.cpio")
        cmd = [sys.executable, QEMU_PY, "--kernel", kernel, "--initrd", initrd,
               "--append", append, "--console-stdio",
               "--timeout", str(timeout), "--nic", nic, "--memory", memory, "--smp", str(smp)]
        for host_port, guest_port in forwards.items():
            cmd += ["--hostfwd", f"tcp:127.0.0.1:{host_port}-:{guest_port}"]
        if tap:
            cmd += ["--tap", tap]
        if wrap:
            cmd = wrap(cmd)
        if console_port:
            cmd += ["--console-port", console_port]
        if icount:
            cmd.append("--icount")
        if disk:
            cmd += ["--disk", disk]
        if qboot:
            cmd.append("--qboot")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        """Keeps the console drained (a full pipe would stall the guest)."""
        fd = self.proc.stdout.fileno()
        while True:
            data = os.read(fd, 65536)
            with self.lock:
                if data:
                    self.text += data.decode(errors="replace").replace("\r", "")
                self.lock.notify_all()
            if not data:
                return

    def wait_for(self, pattern, timeout, start=0):
        """The first match of pattern in the console text from start, or None."""
        deadline = time.monotonic() + timeout
        with self.lock:
            while True:
                m = pattern.search(self.text, start)
                if m or self.proc.poll() is not None:
                    return m
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.lock.wait(min(left, 0.5))

    def boot(self, timeout=90):
        """Waits for httpd's start-up line and the shell's prompt.  Returns
        httpd's line ("serving ...", "no network ...") or None."""
        m = self.wait_for(HTTPD_READY, timeout)
        if not m:
            return None
        # Listening is not enough: the NIC serves on the fallback address until
        # DHCP's lease comes, and a lease with another address would end the
        # connections made before it; the checks start once it is in.
        if m.group(1).startswith("serving") and not self.wait_for(NET_READY, timeout):
            return "serving, but the NIC never got an address"
        self.run("", timeout=30)  # a fresh prompt: the console is ours
        return m.group(1)

    def forwarding_failed(self):
        """Whether QEMU gave up because it could not bind a forwarded host
        port (one taken between picking it and QEMU's start)."""
        with self.lock:
            return bool(HOSTFWD_FAILED.search(self.text))

    def type(self, line):
        self.proc.stdin.write(line.encode() + b"\r")
        self.proc.stdin.flush()

    def run(self, command, timeout=30):
        """Types command at the shell; returns what appeared up to the next
        prompt (access-log lines of httpd may be mixed in), or None."""
        with self.lock:
            mark = len(self.text)
        self.type(command)
        m = self.wait_for(PROMPT, timeout, mark + len(command))
        with self.lock:
            return self.text[mark:m.start() + 1] if m else None

    def frames_free(self):
        """Free frames from the kernel's `mem` (through kcmd), or None."""
        text = self.run("kcmd mem")
        m = FRAMES_FREE.search(text or "")
        return int(m.group(1)) if m else None

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.reader.join(5)
        with open(self.log, "w") as f:
            f.write(self.text)


def boot_forwarded(count, make, boot=Guest.boot):
    """Picks count host ports (httpcheck.pick_ports), makes a Guest with
    make(ports) and boots it (boot(guest), Guest.boot by default).  A port is
    free when picked but bound by QEMU only later: where QEMU could not set
    up the forwarding, the guest is stopped and made again with new ports.
    Returns (guest, ports, what boot returned); the caller stops the guest."""
    import httpcheck
    for attempt in range(FORWARD_ATTEMPTS):
        ports = httpcheck.pick_ports(count)
        guest = make(ports)
        try:
            booted = boot(guest)
        except BaseException:
            guest.stop()
            raise
        if booted or not guest.forwarding_failed() or attempt == FORWARD_ATTEMPTS - 1:
            return guest, ports, booted
        guest.stop()
