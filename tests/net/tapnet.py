"""Host TAP devices in a network namespace of their own, for guests whose NIC
should meet the host's own TCP/IP stack instead of QEMU's user network
(bench-net --tap, the net group's tap checks).

QEMU's user network (slirp) runs a TCP/IP stack inside QEMU's main loop, and
it sets most of the figures of a network benchmark once the guest is fast: a
scan of every socket per loop, a listen backlog of 1 for forwarded ports, and
no offloads offered to virtio-net.  A TAP device hands the frames to the host
kernel instead, and QEMU offers virtio-net's checksum and segmentation
offloads on it.

Each guest gets tap<i> with the host at 10.77.<i>.1/24 and the guest at
10.77.<i>.2.  The namespace keeps the host's own settings out of it: the
client side holds no TIME_WAIT sockets (tcp_max_tw_buckets 0) and uses every
port above 1023, since at thousands of connections a second the ports would
otherwise run out within seconds (lwIP sends no TCP timestamps, so Linux's
tcp_tw_reuse cannot help).  Needs root (CAP_NET_ADMIN) and /dev/net/tun.

    net, reason = TapNet.create(count=2)      # net None: reason says why
    cmd = net.wrap(["curl", ...])              # runs inside the namespace
    net.tap(0), net.host_address(0), net.guest_address(0)
    net.destroy()
"""
import itertools
import os
import subprocess

_serial = itertools.count()  # two checks of one process run side by side
SYSCTLS = {"net.ipv4.tcp_max_tw_buckets": "0", "net.ipv4.ip_local_port_range": "1024 65535"}


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise OSError(f"{' '.join(cmd)}: {(proc.stderr or proc.stdout).strip()}")


class TapNet:
    def __init__(self, name, count):
        self.name, self.count = name, count

    @classmethod
    def create(cls, count=1, name=None):
        """The namespace with count TAP devices up, or (None, why not)."""
        if not os.path.exists("/dev/net/tun"):
            return None, "no /dev/net/tun"
        net = cls(name or f"mscope-{os.getpid()}-{next(_serial)}", count)
        try:
            _run(["ip", "netns", "add", net.name])
        except (OSError, FileNotFoundError) as e:
            return None, f"cannot make a network namespace: {e}"
        try:
            net._setup()
        except OSError as e:
            net.destroy()
            return None, f"cannot set up TAP devices: {e}"
        return net, None

    def _setup(self):
        self._in(["ip", "link", "set", "lo", "up"])
        for key, value in SYSCTLS.items():
            self._in(["sysctl", "-q", "-w", f"{key}={value}"])
        for i in range(self.count):
            self._in(["ip", "tuntap", "add", "dev", self.tap(i), "mode", "tap"])
            self._in(["ip", "addr", "add", f"{self.host_address(i)}/24", "dev", self.tap(i)])
            self._in(["ip", "link", "set", self.tap(i), "up"])

    def _in(self, cmd):
        _run(self.wrap(cmd))

    def wrap(self, cmd):
        return ["ip", "netns", "exec", self.name] + list(cmd)

    def tap(self, i):
        return f"tap{i}"

    def host_address(self, i):
        return f"10.77.{i + 1}.1"

    def guest_address(self, i):
        return f"10.77.{i + 1}.2"

    def microscope_append(self, i):
        """The kernel command line's static address for guest i."""
        return f"ip=static:{self.guest_address(i)}/24:{self.host_address(i)}"

    def linux_append(self, i):
        """The same for the Linux guest of bench-net (tools/linux-guest/init)."""
        return f"guest_ip={self.guest_address(i)}/24 guest_gw={self.host_address(i)}"

    def destroy(self):
        subprocess.run(["ip", "netns", "delete", self.name], capture_output=True)
