#!/usr/bin/env python3
"""Counts, instruction by instruction, where one call of a kernel function goes.

Boots the test kernel under QEMU -icount with its gdb stub, stops at the Nth
call of FUNCTION on one vCPU, then single-steps that vCPU alone (scheduler
locking on: the other CPUs stand still) until the call returns, through every
switch to other threads and user space on the way.  Each instruction is
attributed to its function with `nm` (the kernel, and user programs given with
--user), and the result is the sequence of functions in the order they ran
with how many instructions each stretch took, then the totals per function.
How the msg round trip was cut (docs/LINKER.md) was measured this way:

    python3 tools/stepcount.py --initrd build/initrd.cpio --smp 2 \\
        --append "init=/bin/bindbench monitor_cpus=1 exit=qemu" \\
        --function linker_bench_call --cpu 1 --skip 200 --user build/user/bin/monitor

Interrupts are held off while stepping (QEMU's default for gdb steps), so a
path that waits for an interrupt never returns: --max-steps ends it.
"""
import argparse
import bisect
import collections
import os
import socket
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNEL_BASE = 0xFFFF800000000000

GDB_SCRIPT = r'''
import gdb
gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("target remote :%(port)d")
gdb.execute("break %(function)s if $_thread == %(thread)d")
gdb.execute("ignore 1 %(skip)d")
gdb.execute("continue")
gdb.execute("delete")
gdb.execute("set scheduler-locking on")
def reg(name):
    return int(gdb.parse_and_eval(name)) & 0xffffffffffffffff
ret, sp0 = reg("*(unsigned long *)$rsp"), reg("$rsp")
with open("%(out)s", "w") as out:
    for _ in range(%(max_steps)d):
        pc = reg("$pc")
        out.write("%%x\n" %% pc)
        if pc == ret and reg("$rsp") > sp0:
            break
        gdb.execute("stepi", to_string=True)
gdb.execute("kill")
'''


def symbols(path):
    """(addresses, names) of the text symbols of an ELF file, sorted."""
    table = []
    listing = subprocess.run(["nm", "-n", path], capture_output=True, text=True, check=True)
    for line in listing.stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[1] in "tTwW":
            table.append((int(fields[0], 16), fields[2]))
    return [a for a, _ in table], [n for _, n in table]


def name_of(pc, kernel, user):
    addresses, names = kernel if pc >= KERNEL_BASE else user
    i = bisect.bisect_right(addresses, pc) - 1
    name = names[i] if i >= 0 else "?"
    return name if pc >= KERNEL_BASE else name + " [user]"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def step(args, out):
    port = free_port()
    qemu = ["qemu-system-x86_64", "-accel", "tcg", "-machine", "q35", "-m", "256M", "-smp",
            str(args.smp), "-cpu", "max", "-no-reboot", "-display", "none",
            "-device", "isa-debug-exit,iobase=0xf4,iosize=0x04", "-serial", "null",
            "-kernel", args.kernel, "-append", args.append, "-icount", "shift=0",
            "-gdb", f"tcp:127.0.0.1:{port}", "-S"]
    if args.initrd:
        qemu += ["-initrd", args.initrd]
    script = os.path.join(os.path.dirname(out), "step.py")
    with open(script, "w") as f:
        f.write(GDB_SCRIPT % {"port": port, "function": args.function, "thread": args.cpu + 1,
                              "skip": args.skip, "out": out, "max_steps": args.max_steps})
    vm = subprocess.Popen(qemu, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        subprocess.run(["gdb", "-batch", "-nx", "-x", script, args.kernel],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=args.timeout)
    finally:
        vm.kill()
        vm.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--kernel", default=os.path.join(ROOT, "build", "microscope-test.elf"))
    p.add_argument("--initrd")
    p.add_argument("--append", default="")
    p.add_argument("--smp", type=int, default=1)
    p.add_argument("--function", required=True)
    p.add_argument("--cpu", type=int, default=0, help="the vCPU to stop and step (from 0)")
    p.add_argument("--skip", type=int, default=0, help="calls on that vCPU to let pass first")
    p.add_argument("--user", action="append", default=[], help="a user program's ELF")
    p.add_argument("--max-steps", type=int, default=200000)
    p.add_argument("--timeout", type=int, default=900)
    p.add_argument("--pcs", help="also write every stepped address here, one a line")
    args = p.parse_args()

    kernel = symbols(args.kernel)
    user = ([], [])
    for path in args.user:
        a, n = symbols(path)
        user = (user[0] + a, user[1] + n)
    order = sorted(range(len(user[0])), key=lambda i: user[0][i])
    user = ([user[0][i] for i in order], [user[1][i] for i in order])

    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "pcs")
        step(args, out)
        if not os.path.exists(out):
            sys.exit("stepcount.py: the breakpoint was never reached")
        with open(out) as f:
            pcs = [int(line, 16) for line in f if line.strip()]
    if args.pcs:
        with open(args.pcs, "w") as f:
            f.writelines("%x\n" % pc for pc in pcs)

    names = [name_of(pc, kernel, user) for pc in pcs]
    runs = []
    for i, name in enumerate(names):
        if runs and runs[-1][0] == name:
            runs[-1][1] += 1
        else:
            runs.append([name, 1, i])
    for name, count, first in runs:
        print(f"{first:6d} {count:5d}  {name}")
    print()
    for name, count in collections.Counter(names).most_common():
        print(f"{count:6d}  {name}")
    print(f"total {len(pcs)} instructions")


if __name__ == "__main__":
    main()
