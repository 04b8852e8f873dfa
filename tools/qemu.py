#!/usr/bin/env python3
"""Runs microScope in QEMU (TCG only: never KVM) for people and for tests.

Interactive: the serial console is the terminal (Ctrl-A X leaves).
Batch (tests): serial goes to a log file and stdout, the run has a hard
timeout, and the result is the isa-debug-exit code the kernel chose.
Console (--console-stdio): batch, but the serial console is stdin/stdout, for
tests that type commands at the kernel shell.
A batch or console run that times out first reports what each CPU was doing
(tools/qemu_dump.py); a batch run with --dump-on TEXT does the same once TEXT
is in its serial log.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time

import qemu_dump

OVMF = ["/usr/share/ovmf/OVMF.fd", "/usr/share/OVMF/OVMF_CODE.fd"]
# QEMU's minimal firmware (Debian's qemu-system-data): it starts a -kernel
# guest sooner than SeaBIOS and gives PCI BARs no addresses (the kernel does).
QBOOT = "/usr/share/qemu/qboot.rom"
EXIT_NAMES = {33: "tests passed", 35: "tests failed", 37: "kernel panic", 39: "requested"}


def qemu_command(args):
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-machine", args.machine,
           "-m", args.memory, "-smp", str(args.smp), "-cpu", args.cpu,
           "-no-reboot", "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
    if args.uefi:
        firmware = next((f for f in OVMF if os.path.exists(f)), None)
        if not firmware:
            sys.exit("qemu.py: no OVMF firmware found (make deps installs ovmf)")
        cmd += ["-bios", firmware]
    elif args.qboot:
        if not os.path.exists(QBOOT):
            sys.exit(f"qemu.py: no {QBOOT} (make deps installs qemu-system-data)")
        cmd += ["-bios", QBOOT]
    if args.kernel and not args.iso:
        cmd += ["-kernel", args.kernel, "-append", args.append or ""]
        if args.initrd:
            cmd += ["-initrd", args.initrd]
    elif args.iso:
        cmd += ["-cdrom", args.iso, "-boot", "d"]
    if args.icount:
        cmd += ["-icount", "shift=0"]
    if args.gdb:
        cmd += ["-s", "-S"]
    cmd += network_options(args)
    cmd += console_port_options(args)
    cmd += disk_options(args)
    cmd += args.extra
    return cmd


# QEMU's names for the NICs the OS drives.
NIC_DEVICES = {"e1000": "e1000", "virtio": "virtio-net-pci"}
RUN_HOSTFWD = "tcp:127.0.0.1:8080-:80"  # make run: http://127.0.0.1:8080/ reaches httpd


def network_options(args):
    """One NIC on QEMU's user network (slirp: the OS is 10.0.2.15, the host
    10.0.2.2), with host ports forwarded on 127.0.0.1 only.  Interactive runs
    get an e1000 with port 8080 forwarded to the OS's port 80 unless told
    otherwise; --nic none leaves QEMU's defaults alone."""
    nic = args.nic or ("e1000" if args.interactive else "none")
    if nic == "none":
        return []
    if args.tap:
        # A host TAP device instead (bench-net --tap): the host's own TCP/IP
        # stack talks to the OS, with no user-mode network between them.
        netdev = f"tap,id=n0,ifname={args.tap},script=no,downscript=no"
        return ["-netdev", netdev, "-device", f"{NIC_DEVICES.get(nic, nic)},netdev=n0"]
    hostfwd = args.hostfwd if args.hostfwd is not None else (
        [RUN_HOSTFWD] if args.interactive else [])
    netdev = "user,id=n0" + "".join(f",hostfwd={h}" for h in hostfwd)
    return ["-netdev", netdev, "-device", f"{NIC_DEVICES.get(nic, nic)},netdev=n0"]


# The virtio console port the OS streams on (drivers/virtio/console.h): port 1
# of a virtio-serial device, a virtserialport (QEMU holds the guest's buffers
# while the host side does not take the bytes, where a virtconsole would drop
# them), found by its name.
CONSOLE_PORT_NAME = "org.microscope.trace"


def console_port_device_args(chardev, serial_options=""):
    """QEMU arguments for the console port on the character device spec
    chardev; serial_options go to the virtio-serial-pci device."""
    return ["-device", f"virtio-serial-pci,max_ports=2{serial_options}",
            "-chardev", f"{chardev},id=vcon0",
            "-device", f"virtserialport,chardev=vcon0,nr=1,name={CONSOLE_PORT_NAME}"]


def console_port_options(args):
    """The console port on the QEMU character device SPEC (--console-port)."""
    if not args.console_port:
        return []
    return console_port_device_args(args.console_port)


def disk_options(args):
    """A raw disk image as a virtio-blk device (the OS's vda) or an NVMe one
    (nvme0n1), optionally
    behind a blkdebug rule file that injects device errors."""
    if not args.disk:
        return []
    image = f"blkdebug:{args.blkdebug}:{args.disk}" if args.blkdebug else args.disk
    device = "nvme,serial=microscope0" if args.disk_device == "nvme" else "virtio-blk-pci"
    return ["-drive", f"file={image},if=none,id=disk0,format=raw",
            "-device", f"{device},drive=disk0"]


def run_interactive(cmd):
    cmd += ["-display", "none", "-serial", "mon:stdio"]
    print("microScope in QEMU: serial console below, Ctrl-A X to leave.", flush=True)
    return subprocess.call(cmd)


POLL_SECONDS = 0.1  # how often a --dump-on run reads its serial log


def dump_requested(args):
    """Whether the serial log holds --dump-on's text yet (never without one)."""
    if not args.dump_on:
        return False
    try:
        with open(args.log, "rb") as f:
            return args.dump_on.encode() in f.read()
    except OSError:
        return False


def wait_for_end(proc, reader, args):
    """Waits for QEMU to exit; returns None then, "timeout" when it outlives
    --timeout (a hang guard), or "dump-on" once --dump-on's text is in the
    serial log (a run stopped where it was, on purpose, to be described)."""
    deadline = time.monotonic() + args.timeout
    while True:
        left = deadline - time.monotonic()
        reader.join(min(left, POLL_SECONDS) if args.dump_on else left)
        if not reader.is_alive():
            return None
        if dump_requested(args):
            return "dump-on"
        if time.monotonic() >= deadline:
            return "timeout"


def run_until_timeout(cmd, args, **popen):
    """Runs QEMU with a private QMP socket; returns (exit status, or None when
    it was stopped: timed out, or --dump-on's text came; its output; why it
    was stopped: None, "timeout" or "dump-on").  A stopped run first has its
    CPUs described (tools/qemu_dump.py): in the serial log, or on stderr when
    the console is stdio."""
    with tempfile.TemporaryDirectory(prefix="qemu-") as tmp:
        qmp_path = os.path.join(tmp, "qmp.sock")
        proc = subprocess.Popen(cmd + ["-qmp", f"unix:{qmp_path},server=on,wait=off"], **popen)
        result = {}
        # QEMU's output is read on a thread, so that waiting can also watch the log.
        reader = threading.Thread(target=lambda: result.update(output=proc.communicate()[0]),
                                  daemon=True)
        reader.start()
        stopped = wait_for_end(proc, reader, args)
        if stopped is None:
            return proc.returncode, result.get("output"), None
        report = qemu_dump.dump_cpus(qmp_path, args.kernel, args.hang_symbols)
        proc.kill()
        reader.join()
        if args.console_stdio:
            sys.stderr.write(report)
        else:
            with open(args.log, "a") as f:
                f.write("\n" + report)
        return None, result.get("output"), stopped


def run_batch(cmd, args):
    cmd += ["-display", "none", "-serial", f"file:{args.log}", "-monitor", "none"]
    if args.dump_on:
        open(args.log, "w").close()  # an earlier run's text must not trigger this one's dump
    start = time.monotonic()
    code, output, stopped = run_until_timeout(cmd, args, stdin=subprocess.DEVNULL,
                                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    qemu_output = (output or b"").decode(errors="replace")
    elapsed = time.monotonic() - start
    if qemu_output.strip():
        sys.stderr.write(qemu_output)
    verdict = {"timeout": "timed out (hang)",
               "dump-on": f"stopped and described at {args.dump_on!r} (--dump-on)"}.get(
                   stopped) or EXIT_NAMES.get(code, f"exit status {code}")
    print(f"qemu.py: {verdict} after {elapsed:.1f}s, serial log in {args.log}", file=sys.stderr)
    return 124 if stopped else code


def run_console(cmd, args):
    """Batch run whose serial console is this process's stdin and stdout, so a
    test can talk to the kernel shell through pipes; same timeout and exit
    status as batch mode."""
    cmd += ["-display", "none", "-serial", "stdio", "-monitor", "none"]
    code, _, stopped = run_until_timeout(cmd, args)
    if stopped:
        print(f"qemu.py: timed out (hang) after {args.timeout:.0f}s", file=sys.stderr)
        return 124
    return code


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--kernel", help="kernel ELF, booted with -kernel (multiboot1)")
    p.add_argument("--iso", help="ISO image (GRUB, multiboot2)")
    p.add_argument("--initrd")
    p.add_argument("--append", default="")
    p.add_argument("--machine", default="q35")
    p.add_argument("--memory", default="256M")
    p.add_argument("--smp", type=int, default=1)
    p.add_argument("--cpu", default="max")
    p.add_argument("--uefi", action="store_true")
    p.add_argument("--qboot", action="store_true",
                   help="QEMU's qboot firmware instead of SeaBIOS (with --kernel: a faster start)")
    p.add_argument("--icount", action="store_true", help="-icount shift=0: time counts instructions")
    p.add_argument("--gdb", action="store_true")
    p.add_argument("--interactive", action="store_true")
    p.add_argument("--console-stdio", action="store_true",
                   help="batch run with the serial console on stdin/stdout (for scripted sessions)")
    p.add_argument("--nic", help="e1000, virtio (virtio-net-pci), another QEMU NIC model, or "
                   "none (default: e1000 when interactive, else QEMU's defaults)")
    p.add_argument("--hostfwd", action="append",
                   help="forward a host port to the OS, e.g. tcp:127.0.0.1:8080-:80 (repeatable; "
                   "interactive default: " + RUN_HOSTFWD + ")")
    p.add_argument("--tap", metavar="IFNAME",
                   help="attach the NIC to the host TAP device IFNAME (which must exist) instead of "
                   "the user network; --hostfwd does not apply")
    p.add_argument("--console-port", metavar="SPEC",
                   help="attach a virtio console port to the QEMU character device SPEC, e.g. "
                   "file,path=out.bin or socket,path=/tmp/x.sock,server=on,wait=off")
    p.add_argument("--disk", help="raw disk image attached as virtio-blk (make disk builds one)")
    p.add_argument("--disk-device", choices=["virtio", "nvme"], default="virtio",
                   help="how --disk is attached (default virtio-blk)")
    p.add_argument("--blkdebug", help="a QEMU blkdebug rule file put in front of --disk")
    p.add_argument("--log", default="build/serial.log")
    p.add_argument("--timeout", type=float, default=120)
    p.add_argument("--hang-symbols", type=lambda v: [x for x in v.split(",") if x], default=[],
                   help="kernel variables (comma-separated) whose first words a timed-out run "
                   "reports beside each CPU's backtrace")
    p.add_argument("--dump-on", metavar="TEXT",
                   help="batch: once TEXT is in the serial log, stop the run and describe each "
                   "CPU as at a timeout (exit status 124), e.g. at a prompt, where the OS idles")
    p.add_argument("extra", nargs="*", help="more QEMU arguments, after --")
    args = p.parse_args()
    if not args.kernel and not args.iso:
        p.error("give --kernel or --iso")
    if args.dump_on and (args.console_stdio or args.interactive):
        p.error("--dump-on reads the serial log: batch runs only")
    cmd = qemu_command(args)
    if args.interactive:
        sys.exit(run_interactive(cmd))
    sys.exit(run_console(cmd, args) if args.console_stdio else run_batch(cmd, args))


if __name__ == "__main__":
    main()
