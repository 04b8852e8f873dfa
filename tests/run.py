#!/usr/bin/env python3
"""Runs every microScope test and ends with one line: `N passed, M failed`.

Groups (each can run alone with --only):
  host   tests/host/*_test.c: real kernel sources compiled for the host with
         AddressSanitizer and UndefinedBehaviorSanitizer; every KTAP case counts.
  ktest  the in-kernel suites (ktest=all exit=qemu, QEMU -kernel); every case counts.
  crash  crashtest=X must panic (exit status 37) naming the faulting function.
  boot   the self-test ISO under SeaBIOS and OVMF, pc and q35, small and large
         memory, and the -kernel path: each boot must end with exit status 33.
  shell  a session typed at the kernel shell over the serial console: each
         command's answer must match, and `exit` must stop QEMU (status 39).

Every QEMU run has a timeout (a hang fails).  Logs go to <build>/test-logs/.
One line per test as it finishes; a failure shows the tail of its log.
The exit status is 1 when anything failed.
"""
import argparse
import concurrent.futures
import glob
import os
import re
import select
import shlex
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QEMU_PY = os.path.join(ROOT, "tools", "qemu.py")
JOBS = 2  # the machines that run this have two cores
TAIL_LINES = 30
EXIT_PASSED, EXIT_FAILED, EXIT_PANIC, EXIT_HANG = 33, 35, 37, 124
BIOS_TIMEOUT, UEFI_TIMEOUT = 60, 120

HOST_CFLAGS = ["-std=gnu11", "-O1", "-g", "-fsanitize=address,undefined",
               "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-Wall", "-Wextra",
               "-Werror", "-Wno-unused-parameter", "-Ikernel", "-Idrivers", "-Imodules",
               "-Ilinker", "-Itests/host/shim", "-DHOST_TEST"]
HOST_TEST_TIMEOUT = 120

# crashtest=<value> → a regular expression the panic report must match (the
# function that faulted).  Values the kernel does not know yet are skipped.
CRASH_TESTS = [
    ("page_fault", r"crashtest_fault_page"),
    ("divide_error", r"crashtest_divide_by_zero"),
    ("invalid_opcode", r"crashtest_invalid_opcode"),
    ("stack_overflow", r"crashtest_overflow_stack"),
    ("assert", r"crashtest_assert_fails"),
    ("general_protection", r"crashtest_general_protection"),
    ("breakpoint", r"crashtest_breakpoint"),
]

# (firmware, machine, memory).  Debian 12's OVMF boots the ISO in 64 MiB (at
# 32 MiB it finds no boot device), so UEFI uses the same small size as BIOS.
BOOT_MATRIX = [
    ("bios", "pc", "64M"), ("bios", "pc", "2G"), ("bios", "q35", "64M"), ("bios", "q35", "2G"),
    ("uefi", "pc", "64M"), ("uefi", "pc", "2G"), ("uefi", "q35", "64M"), ("uefi", "q35", "2G"),
]
KERNEL_BOOT_MEMORY = ["64M", "2G"]


class Result:
    def __init__(self, name, status, seconds=0.0, log=None, note=""):
        self.name, self.status, self.seconds = name, status, seconds
        self.log, self.note = log, note  # log: text whose tail shows on failure


class Reporter:
    """Prints one line per result, thread-safe, and keeps the counts."""

    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {"ok": 0, "FAIL": 0, "skip": 0}

    def report(self, result):
        with self.lock:
            self.counts[result.status] += 1
            label = {"ok": "ok  ", "FAIL": "FAIL", "skip": "skip"}[result.status]
            note = f"  ({result.note})" if result.note else ""
            print(f"{label} {result.name} {result.seconds:.1f}s{note}", flush=True)
            if result.status == "FAIL" and result.log:
                lines = result.log.rstrip("\n").splitlines()[-TAIL_LINES:]
                for line in lines:
                    print(f"     | {line}")
                sys.stdout.flush()

    def summary(self):
        line = f"{self.counts['ok']} passed, {self.counts['FAIL']} failed"
        if self.counts["skip"]:
            line += f", {self.counts['skip']} skipped"
        return line


def read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode(errors="replace")
    except OSError:
        return ""


# ---------------------------------------------------------------- KTAP


KTAP_RESULT = re.compile(r"^(\s*)(ok|not ok)\s+(\d+)\s+([^#]*?)\s*(#\s*(.*))?$")
KTAP_PLAN = re.compile(r"^\s*1\.\.(\d+)\s*$")


def parse_ktap(text):
    """Returns (plan, top, cases): the top-level plan (or None), the number of
    top-level results, and (suite or None, name, status, detail lines) for
    every case.  A nested result line is a case of the suite whose top-level
    line follows it; a top-level line with no nested results is a case itself."""
    plan, top, cases, pending, detail = None, 0, [], [], []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        m = KTAP_PLAN.match(line)
        if m and not line.startswith(" ") and plan is None:
            plan = int(m.group(1))
            continue
        m = KTAP_RESULT.match(line)
        if not m:
            if line.strip().startswith("#"):
                detail.append(line.strip())
            continue
        indent, verdict, name, directive = m.group(1), m.group(2), m.group(4), m.group(6) or ""
        status = "ok" if verdict == "ok" else "FAIL"
        if directive.upper().startswith("SKIP"):
            status = "skip"
        if indent:
            pending.append((name, status, detail))
            detail = []
            continue
        top += 1
        if pending:
            cases += [(name, case, st, d) for case, st, d in pending]
        else:
            cases.append((None, name, status, detail))
        pending, detail = [], []
    cases += [(None, case, st, d) for case, st, d in pending]
    return plan, top, cases


def qemu_run(name, log, args, timeout):
    """Runs tools/qemu.py in batch mode; returns (exit status, serial log +
    qemu.py's own output, seconds)."""
    cmd = [sys.executable, QEMU_PY, "--log", log, "--timeout", str(timeout)] + args
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, timeout=timeout + 30)
    seconds = time.monotonic() - start
    output = proc.stdout.decode(errors="replace")
    text = read_text(log)
    with open(log, "a") as f:
        f.write("\n--- " + " ".join(shlex.quote(c) for c in cmd) + "\n" + output)
    return proc.returncode, text + "\n" + output, seconds


# ---------------------------------------------------------------- host tests


def host_test_header(path, key):
    """Words after `key:` in the first 10 lines of a test source."""
    words = []
    with open(path) as f:
        for _, line in zip(range(10), f):
            m = re.search(re.escape(key) + r":\s*(.*?)\s*(\*/)?$", line)
            if m:
                words += m.group(1).split()
    return words


def generic_shims():
    """tests/host/shim/*.c that no test names in its host-test-sources: those
    are linked into every test; a named one only into the tests naming it."""
    named = set()
    for test in glob.glob(os.path.join(ROOT, "tests/host/*_test.c")):
        named |= {os.path.normpath(s) for s in host_test_header(test, "host-test-sources")}
    shims = sorted(glob.glob(os.path.join(ROOT, "tests/host/shim/*.c")))
    return [s for s in (os.path.relpath(s, ROOT) for s in shims) if s not in named]


def compile_host_test(source, out_dir):
    """Compiles one host test; returns (binary or None, compiler output)."""
    name = os.path.splitext(os.path.basename(source))[0]
    binary = os.path.join(out_dir, name)
    objects = []
    sources = host_test_header(source, "host-test-sources")
    renames = host_test_header(source, "host-test-rename")
    for kernel_source in sources:
        if os.path.normpath(kernel_source) == os.path.normpath("kernel/lib/string.c"):
            return None, (f"{source}: kernel/lib/string.c must not be linked into host tests "
                          "(it would replace libc's memcpy under the sanitizers)")
        obj = os.path.join(out_dir, name + "-" + kernel_source.replace("/", "_") + ".o")
        cmd = ["gcc"] + HOST_CFLAGS + ["-c", kernel_source, "-o", obj]
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if proc.returncode:
            return None, " ".join(cmd) + "\n" + proc.stdout + proc.stderr
        if renames:
            rename = ["objcopy"] + [f"--redefine-sym={r}" for r in renames] + [obj]
            proc = subprocess.run(rename, cwd=ROOT, capture_output=True, text=True)
            if proc.returncode:
                return None, " ".join(rename) + "\n" + proc.stdout + proc.stderr
        objects.append(obj)
    shims = [s for s in generic_shims() if s not in sources]
    cmd = ["gcc"] + HOST_CFLAGS + [source] + shims + objects + ["-o", binary]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        return None, " ".join(cmd) + "\n" + proc.stdout + proc.stderr
    return binary, ""


def run_host_test(source, build, reporter):
    name = "host/" + os.path.basename(source)[: -len("_test.c")]
    out_dir = os.path.join(ROOT, build, "host-tests")
    os.makedirs(out_dir, exist_ok=True)
    start = time.monotonic()
    binary, errors = compile_host_test(os.path.relpath(source, ROOT), out_dir)
    if not binary:
        reporter.report(Result(name + " (build)", "FAIL", time.monotonic() - start, errors))
        return
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    try:
        proc = subprocess.run([binary], cwd=ROOT, capture_output=True, env=env,
                              timeout=HOST_TEST_TIMEOUT, stdin=subprocess.DEVNULL)
        code, output = proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        code, output = EXIT_HANG, (e.stdout or b"").decode(errors="replace") + "\n(timed out)"
    seconds = time.monotonic() - start
    log = os.path.join(ROOT, build, "test-logs", os.path.basename(binary) + ".log")
    with open(log, "w") as f:
        f.write(output)
    plan, top, cases = parse_ktap(output)
    for suite, case, status, detail in cases:
        reporter.report(Result(f"{name}/{case}", status, 0.0, "\n".join(detail)))
    problem = None
    if code != 0 and plan is not None and top < plan:
        problem = f"stopped after {top} of {plan} cases, exit status {code}"
    elif code != 0 and not any(st == "FAIL" for _, _, st, _ in cases):
        problem = f"exit status {code}"
    elif plan is None:
        problem = "no KTAP plan"
    elif plan != top:
        problem = f"plan says {plan} results, {top} reported"
    if problem:
        reporter.report(Result(name, "FAIL", seconds, output, problem))


def host_jobs(args, reporter):
    sources = sorted(glob.glob(os.path.join(ROOT, "tests/host/*_test.c")))
    return [lambda s=s: run_host_test(s, args.build, reporter) for s in sources]


# ---------------------------------------------------------------- in-kernel suites


def kernel_elf(build):
    return os.path.join(build, "microscope.elf")


def missing(path, reporter, name, hint):
    if os.path.exists(os.path.join(ROOT, path)):
        return False
    reporter.report(Result(name, "FAIL", 0.0, None, f"{path} missing: {hint}"))
    return True


def run_ktest(args, reporter):
    name = "ktest"
    if missing(kernel_elf(args.build), reporter, name, "run make kernel"):
        return
    log = os.path.join(args.build, "test-logs", "ktest.log")
    code, text, seconds = qemu_run(name, log, ["--kernel", kernel_elf(args.build), "--append",
                                               "ktest=all exit=qemu"], BIOS_TIMEOUT)
    plan, top, cases = parse_ktap(text)
    for suite, case, status, detail in cases:
        full = f"ktest/{suite}/{case}" if suite else f"ktest/{case}"
        reporter.report(Result(full, status, 0.0, "\n".join(detail)))
    problem = None
    if code == EXIT_HANG:
        problem = "timed out (hang)"
    elif code == EXIT_PANIC:
        problem = "kernel panic"
    elif code != EXIT_PASSED and not any(st == "FAIL" for _, _, st, _ in cases):
        problem = f"exit status {code}"
    elif plan is None:
        problem = "no KTAP plan"
    elif plan != top:
        problem = f"plan says {plan} suites, {top} reported"
    if problem:
        reporter.report(Result("ktest (run)", "FAIL", seconds, text, problem))
    else:
        reporter.report(Result("ktest (run)", "ok", seconds, None, f"exit status {code}"))


def ktest_jobs(args, reporter):
    return [lambda: run_ktest(args, reporter)]


# ---------------------------------------------------------------- crash tests


def known_crashtests():
    """The crashtest= values the kernel's source defines (a quoted name in the
    file that declares KERNEL_PARAM(crashtest, ...))."""
    known = set()
    for directory in ("kernel", "drivers", "modules", "linker"):
        for path in glob.glob(os.path.join(ROOT, directory, "**", "*.c"), recursive=True):
            text = read_text(path)
            if re.search(r"KERNEL_PARAM\(\s*crashtest\b", text):
                known |= set(re.findall(r'"(\w+)"', text))
    return known


def run_crash(args, reporter, value, pattern):
    name = f"crash/{value}"
    log = os.path.join(args.build, "test-logs", f"crash-{value}.log")
    code, text, seconds = qemu_run(name, log, ["--kernel", kernel_elf(args.build), "--append",
                                               f"crashtest={value} exit=qemu"], BIOS_TIMEOUT)
    report = text[text.find("KERNEL PANIC"):] if "KERNEL PANIC" in text else ""
    if code != EXIT_PANIC:
        verdict = "timed out (hang)" if code == EXIT_HANG else f"exit status {code}, expected 37"
        reporter.report(Result(name, "FAIL", seconds, text, verdict))
    elif not re.search(pattern, report):
        reporter.report(Result(name, "FAIL", seconds, text,
                               f"panic report does not name /{pattern}/"))
    else:
        reporter.report(Result(name, "ok", seconds))


def crash_jobs(args, reporter):
    if missing(kernel_elf(args.build), reporter, "crash", "run make kernel"):
        return []
    known, jobs = known_crashtests(), []
    for value, pattern in CRASH_TESTS:
        if value not in known:
            reporter.report(Result(f"crash/{value}", "skip", 0.0, None,
                                   "the kernel has no such crashtest yet"))
            continue
        jobs.append(lambda v=value, p=pattern: run_crash(args, reporter, v, p))
    return jobs


# ---------------------------------------------------------------- boot tests


def run_boot(args, reporter, name, qemu_args, timeout):
    log = os.path.join(args.build, "test-logs", name.replace("/", "-") + ".log")
    code, text, seconds = qemu_run(name, log, qemu_args, timeout)
    if code == EXIT_PASSED:
        reporter.report(Result(name, "ok", seconds))
        return
    verdict = {EXIT_HANG: "timed out (hang)", EXIT_PANIC: "kernel panic",
               EXIT_FAILED: "self-tests failed"}.get(code, f"exit status {code}")
    reporter.report(Result(name, "FAIL", seconds, text, verdict))


def boot_jobs(args, reporter):
    runs = []  # (name, qemu.py arguments, timeout)
    iso = os.path.join(args.build, "microscope-selftest.iso")
    if not missing(iso, reporter, "boot/iso", "run make iso"):
        for firmware, machine, memory in BOOT_MATRIX:
            name = f"boot/{firmware}-{machine}-{memory}"
            qemu_args = ["--iso", iso, "--machine", machine, "--memory", memory]
            timeout = BIOS_TIMEOUT
            if firmware == "uefi":
                qemu_args.append("--uefi")
                timeout = UEFI_TIMEOUT
            runs.append((name, qemu_args, timeout))
    if not missing(kernel_elf(args.build), reporter, "boot/kernel", "run make kernel"):
        for memory in KERNEL_BOOT_MEMORY:
            name = f"boot/kernel-{memory}"
            qemu_args = ["--kernel", kernel_elf(args.build), "--memory", memory, "--append",
                         "ktest=all exit=qemu"]
            runs.append((name, qemu_args, BIOS_TIMEOUT))
    # The slow runs (UEFI) first, so the two workers finish together.
    runs.sort(key=lambda run: -run[2])
    return [lambda r=r: run_boot(args, reporter, *r) for r in runs]


# ---------------------------------------------------------------- kernel shell


EXIT_REQUESTED = 39
SHELL_TIMEOUT = 60
SHELL_PROMPT = b"kshell> "
# (test name, what is typed, a regular expression the answer up to the next
# prompt must match).  \x7f is backspace, \x15 ^U.
SHELL_SESSION = [
    ("help", "help", r"ktest <suite.*\n.*mem .*memory"),
    ("mem", "mem", r"frames free"),
    ("threads", "threads", r"kshell .*running"),
    ("irqs", "irqs", r"com1\r?\n.*com1 input: \d+ byte"),
    ("unknown-command", "nonsense", r"unknown command 'nonsense'"),
    ("wrong-arguments", "loglevel 9", r"usage: loglevel"),
    ("backspace-and-quotes", "echo ab\x7fc \"d  e\"", r"\nac d  e\r?\n"),
    ("ctrl-u", "mem\x15echo cleared", r"\ncleared\r?\n"),
    ("uptime", "uptime", r"up \d+\.\d{6} s"),
    ("unterminated-quote", "echo \"open", r"unterminated quote"),
]


class Console:
    """The serial console of a QEMU run, read with a deadline."""

    def __init__(self, proc, deadline):
        self.proc, self.deadline, self.pending, self.transcript = proc, deadline, b"", b""

    def read_until(self, marker):
        """Returns the text up to and including marker, or None at the deadline or EOF."""
        fd = self.proc.stdout.fileno()
        while marker not in self.pending:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return None
            if not select.select([fd], [], [], min(left, 1.0))[0]:
                continue
            data = os.read(fd, 4096)
            if not data:
                return None
            self.pending += data
            self.transcript += data
        end = self.pending.index(marker) + len(marker)
        text, self.pending = self.pending[:end], self.pending[end:]
        return text.decode(errors="replace")

    def type(self, line):
        self.proc.stdin.write(line.encode() + b"\r")
        self.proc.stdin.flush()


def shell_session(args, reporter, console):
    """Types each line of SHELL_SESSION; one result per line.  Returns False
    when the shell stopped answering (the rest would only time out)."""
    if console.read_until(SHELL_PROMPT) is None:
        reporter.report(Result("shell/prompt", "FAIL", 0.0, None, "no kshell> prompt"))
        return False
    for step, line, pattern in SHELL_SESSION:
        name = "shell/" + step
        start = time.monotonic()
        console.type(line)
        answer = console.read_until(SHELL_PROMPT)
        seconds = time.monotonic() - start
        if answer is None:
            reporter.report(Result(name, "FAIL", seconds, None, f"no answer to {line!r}"))
            return False
        ok = re.search(pattern, answer, re.S)
        reporter.report(Result(name, "ok" if ok else "FAIL", seconds, answer,
                               "" if ok else f"answer to {line!r} does not match /{pattern}/"))
    return True


def run_shell(args, reporter):
    log = os.path.join(args.build, "test-logs", "shell.log")
    cmd = [sys.executable, QEMU_PY, "--kernel", kernel_elf(args.build), "--append", "exit=qemu",
           "--console-stdio", "--timeout", str(SHELL_TIMEOUT)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    console = Console(proc, start + SHELL_TIMEOUT)
    try:
        answering = shell_session(args, reporter, console)
        if answering:
            console.type("exit")
        code = proc.wait(timeout=max(1.0, console.deadline - time.monotonic()) + 10)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    console.read_until(b"\0")  # the rest of the output, until EOF
    text = console.transcript.decode(errors="replace")
    with open(log, "w") as f:
        f.write(text)
    seconds = time.monotonic() - start
    status = "ok" if code == EXIT_REQUESTED else "FAIL"
    reporter.report(Result("shell/exit", status, seconds, text,
                           f"exit status {code}" + ("" if status == "ok" else ", expected 39")))


def shell_jobs(args, reporter):
    if missing(kernel_elf(args.build), reporter, "shell", "run make kernel"):
        return []
    return [lambda: run_shell(args, reporter)]


# ---------------------------------------------------------------- main


GROUPS = {"host": host_jobs, "ktest": ktest_jobs, "crash": crash_jobs, "boot": boot_jobs,
          "shell": shell_jobs}


def list_tests(args):
    for source in sorted(glob.glob(os.path.join(ROOT, "tests/host/*_test.c"))):
        print("host  host/" + os.path.basename(source)[: -len("_test.c")] + "  (one per KTAP case)")
    print("ktest ktest/<suite>/<case>  (every case of ktest=all)")
    known = known_crashtests()
    for value, pattern in CRASH_TESTS:
        print(f"crash crash/{value}  /{pattern}/" + ("" if value in known else "  (skipped: unknown)"))
    for firmware, machine, memory in BOOT_MATRIX:
        print(f"boot  boot/{firmware}-{machine}-{memory}")
    for memory in KERNEL_BOOT_MEMORY:
        print(f"boot  boot/kernel-{memory}")
    for step, line, _ in SHELL_SESSION:
        print(f"shell shell/{step}  (types {line!r})")
    print("shell shell/exit  (exit stops QEMU with status 39)")


def run_group(jobs):
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        for future in [pool.submit(job) for job in jobs]:
            future.result()


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="build directory (default: build)")
    p.add_argument("--only", choices=sorted(GROUPS), action="append",
                   help="run one group (may be repeated)")
    p.add_argument("--list", action="store_true", help="list the tests and exit")
    args = p.parse_args()
    os.chdir(ROOT)
    if args.list:
        list_tests(args)
        return 0
    os.makedirs(os.path.join(args.build, "test-logs"), exist_ok=True)
    reporter = Reporter()
    start = time.monotonic()
    for group in ["host", "ktest", "crash", "boot", "shell"]:
        if args.only and group not in args.only:
            continue
        run_group(GROUPS[group](args, reporter))
    print(f"# {time.monotonic() - start:.0f}s, logs in {args.build}/test-logs/")
    print(reporter.summary())
    return 1 if reporter.counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
