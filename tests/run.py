#!/usr/bin/env python3
"""Runs every microScope test and ends with one line: `N passed, M failed`.

Why it is shaped this way: each group is declared once (@group: its name,
its docstring, the function that makes its jobs and the one that lists its
tests), so --only, --help and --list follow what runs; every boot that
yields KTAP goes through boot_and_collect_ktap; and which image a group
boots is named once (SHIPPED_KERNEL, TEST_KERNEL, SELFTEST_ISO).

Every QEMU run has a timeout: it only catches a hang, it never decides a
result.  Logs go to <build>/test-logs/.  One line per test as it finishes; a
failure shows the tail of its log.  The exit status is 1 when anything failed.
"""
import argparse
import collections
import concurrent.futures
import glob
import inspect
import os
import re
import select
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QEMU_PY = os.path.join(ROOT, "tools", "qemu.py")
JOBS = 2  # the machines that run this have two cores
TAIL_LINES = 30
EXIT_PASSED, EXIT_FAILED, EXIT_PANIC, EXIT_REQUESTED, EXIT_HANG = 33, 35, 37, 39, 124
# Hang guards, never results: a run that passes takes a fraction of them, and a
# host busy with other builds slows QEMU several times (a 2 GiB ktest=all boot
# passed in 45 s alone and ran past 60 s at a load average of 20).
BIOS_TIMEOUT, UEFI_TIMEOUT = 300, 420

# What the groups boot, in the build directory ({build}, see in_build).
# Groups that need in-kernel test code (suites, crashtest=, the kernel
# shell's ktest command) boot TEST_KERNEL; groups that only run user
# programs boot SHIPPED_KERNEL, so the kernel `make run` boots is the one
# they prove.
SHIPPED_KERNEL = "{build}/microscope.elf"
TEST_KERNEL = "{build}/microscope-test.elf"  # built with KERNEL_TESTS=1
SELFTEST_ISO = "{build}/microscope-selftest.iso"  # boots with ktest=all exit=qemu
INITRD = "{build}/initrd.cpio"


def in_build(args, image):
    """image (one of the names above) in the build directory of this run."""
    return image.format(build=args.build)


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


def missing(path, reporter, name, hint):
    if os.path.exists(os.path.join(ROOT, path)):
        return False
    reporter.report(Result(name, "FAIL", 0.0, None, f"{path} missing: {hint}"))
    return True


# ---------------------------------------------------------------- groups


Group = collections.namedtuple("Group", "name doc jobs listing")
GROUPS = {}  # name -> Group, in the order they run (the order of the file)


def group(name, listing):
    """Declares a test group.  The decorated jobs(args, reporter) returns the
    group's jobs (callables, run on JOBS workers) and its docstring is the
    group's --help text; listing(args) returns --list's lines for it, found
    without booting anything."""
    def declare(jobs):
        GROUPS[name] = Group(name, inspect.getdoc(jobs), jobs, listing)
        return jobs
    return declare


def macro_arguments(text, macro):
    """The text between the parentheses of each use of macro(...) in text."""
    found = []
    for m in re.finditer(r"\b" + re.escape(macro) + r"\s*\(", text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        found.append(text[m.end():i - 1])
    return found


def source_files(directories, pattern="*.c"):
    for directory in directories:
        yield from sorted(glob.glob(os.path.join(ROOT, directory, "**", pattern), recursive=True))


# ---------------------------------------------------------------- KTAP


KTAP_RESULT = re.compile(r"^(\s*)(ok|not ok)\s+(\d+)\s+([^#]*?)\s*(#\s*(.*))?$")
KTAP_PLAN = re.compile(r"^\s*1\.\.(\d+)\s*$")
KTAP_HEADER = "KTAP version 1"


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
            detail = detail + ["# " + directive.strip()]  # its reason, for missing_resources
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


def any_failed(cases):
    return any(status == "FAIL" for _, _, status, _ in cases)


def report_cases(reporter, prefix, cases):
    """One result per KTAP case: prefix/suite/case, or prefix/case outside a suite."""
    for suite, case, status, detail in cases:
        name = f"{prefix}/{suite}/{case}" if suite else f"{prefix}/{case}"
        reporter.report(Result(name, status, 0.0, "\n".join(detail)))


# Skip reasons (the text after "# SKIP") that say a resource is missing.  A
# run built to provide the resource fails such a case: there the skip would
# prove nothing.  Elsewhere (every suite on 1 CPU, without a NIC) the same
# skip is right.  "needs two CPUs and none reserved yet" is not here: on
# several CPUs a reserved one is a state, not a missing resource.
RESOURCE_SKIPS = {
    "cpus": re.compile(r"^(one CPU|one CPU online|needs two CPUs)$"),
    "nic": re.compile(r"^(no NIC\b|no Ethernet controller$|an Ethernet controller without a "
                      r"driver here$)"),
    "disk": re.compile(r"^no disk attached$"),
    "scratch-disk": re.compile(r"^the disk is not a scratch disk$"),
    "ext2": re.compile(r"^no ext2 file system at "),
    "initrd": re.compile(r"^no /bin/monitor\b"),
}
SKIP_REASON = re.compile(r"^# SKIP\s*(.*)$", re.I)


def missing_resources(cases, provides):
    """cases with each skip for want of a resource in provides (names of
    RESOURCE_SKIPS) turned into a failure that says so."""
    patterns = [RESOURCE_SKIPS[r] for r in provides]
    checked = []
    for suite, case, status, detail in cases:
        reason = next((m.group(1) for m in map(SKIP_REASON.match, detail) if m), "")
        if status == "skip" and any(p.search(reason) for p in patterns):
            status = "FAIL"
            detail = detail + [f"# skipped ({reason}) in a run that provides it "
                               f"({', '.join(provides)})"]
        checked.append((suite, case, status, detail))
    return checked


SMP_ONLINE = re.compile(r"smp: (\d+) CPU\(s\) online")


def cpus_problem(text, smp):
    """Whether fewer CPUs came online than the run asked for (the kernel's
    `smp: N CPU(s) online` line; none means one), as a problem or None."""
    if smp <= 1:
        return None
    m = SMP_ONLINE.search(text)
    online = int(m.group(1)) if m else 1
    return None if online >= smp else f"{online} of {smp} CPUs online"


def report_run(reporter, name, run, problem):
    """The result of a run itself: FAIL with problem and the log, or ok."""
    reporter.report(Result(name, "FAIL" if problem else "ok", run.seconds,
                           run.text if problem else None, problem or f"exit status {run.code}"))


# ---------------------------------------------------------------- booting


def qemu_run(log, args, timeout):
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


def kernel_args(kernel, initrd=None, append="", smp=1):
    """qemu.py's arguments for booting kernel with -kernel (multiboot)."""
    return ["--kernel", kernel] + (["--initrd", initrd] if initrd else []) + \
        ["--append", append, "--smp", str(smp)]


def test_log(args, name):
    return os.path.join(args.build, "test-logs", name.replace("/", "-") + ".log")


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

    def text(self):
        """Everything the run printed, once it has ended (reads until EOF)."""
        self.read_until(b"\0")
        return self.transcript.decode(errors="replace")


# Watching a run's console as it comes: stop reading at the first line that
# matches end or abort; then give the OS stop_seconds to stop by itself
# (none after abort), else QEMU is killed and the run counts as a hang.
Watch = collections.namedtuple("Watch", "end abort stop_seconds")
WATCH_READ_SLACK = 10  # reading may outlast qemu.py's own timeout by this much


def watched_run(log, qemu_args, timeout, watch):
    """Runs qemu.py with the console on a pipe, read line by line; returns
    (exit status, console text, seconds, ended, the abort line or None)."""
    cmd = [sys.executable, QEMU_PY] + qemu_args + ["--console-stdio", "--timeout", str(timeout)]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)
    console = Console(proc, start + timeout + WATCH_READ_SLACK)
    aborted, ended = None, False
    while aborted is None and not ended:
        line = console.read_until(b"\n")
        if line is None:
            break
        if watch.abort.search(line):
            aborted = line.strip()
        ended = bool(watch.end.search(line))
    try:
        code = proc.wait(timeout=0 if aborted else watch.stop_seconds)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)  # qemu.py and QEMU
        proc.wait()
        code = EXIT_HANG
    text = console.text()
    with open(log, "w") as f:
        f.write(text)
    return code, text, time.monotonic() - start, ended, aborted


# The outcome of boot_and_collect_ktap: exit status (EXIT_HANG when it timed
# out), console text, seconds; found: whether a KTAP header was printed;
# plan, top, cases: parse_ktap of the text from that header on; ended,
# aborted: what a Watch saw (False, None without one).
KtapRun = collections.namedtuple("KtapRun",
                                 "code text seconds found plan top cases ended aborted")


def boot_and_collect_ktap(log, kernel, timeout, initrd=None, append="", smp=1, qemu_args=(),
                          watch=None):
    """Boots kernel with initrd and command line append on smp CPUs (more of
    qemu.py's arguments in qemu_args, last) and collects the KTAP it prints.
    timeout only bounds a hang.  With watch (a Watch) the console is read as
    it comes (watched_run); without, qemu.py runs in batch mode until QEMU
    exits.  Returns a KtapRun."""
    boot = kernel_args(kernel, initrd, append, smp) + list(qemu_args)
    ended, aborted = False, None
    if watch:
        code, text, seconds, ended, aborted = watched_run(log, boot, timeout, watch)
    else:
        code, text, seconds = qemu_run(log, boot, timeout)
    started = text.find(KTAP_HEADER)
    plan, top, cases = parse_ktap(text[started:] if started >= 0 else "")
    return KtapRun(code, text, seconds, started >= 0, plan, top, cases, ended, aborted)


# ---------------------------------------------------------------- host tests


HOST_CFLAGS = ["-std=gnu11", "-O1", "-g", "-fsanitize=address,undefined",
               "-fno-sanitize-recover=all", "-fno-omit-frame-pointer", "-Wall", "-Wextra",
               "-Werror", "-Wno-unused-parameter", "-Ikernel", "-Idrivers", "-Imodules",
               "-Ilinker", "-I.", "-Iaspects/include", "-Itests/host/shim", "-Iuserland",
               "-DHOST_TEST"]
HOST_TEST_TIMEOUT = 120


def host_tests():
    return sorted(glob.glob(os.path.join(ROOT, "tests/host/*_test.c")))


def host_test_name(source):
    return "host/" + os.path.basename(source)[: -len("_test.c")]


def host_test_header(path, key):
    """Words after `key:` in the first 10 lines of a test source; a word with a
    `*` names every file it matches (`linker/object/*.c`: the whole library)."""
    words = []
    with open(path) as f:
        for _, line in zip(range(10), f):
            m = re.search(re.escape(key) + r":\s*(.*?)\s*(\*/)?$", line)
            if m:
                words += m.group(1).split()
    return [w for word in words for w in expand_source_pattern(word)]


def expand_source_pattern(word):
    if "*" not in word:
        return [word]
    return sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, word)))


def generic_shims():
    """tests/host/shim/*.c that no test names in its host-test-sources: those
    are linked into every test; a named one only into the tests naming it."""
    named = set()
    for test in host_tests():
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


def run_host_binary(binary):
    """Runs a host test under the sanitizers; returns (exit status, output)."""
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    try:
        proc = subprocess.run([binary], cwd=ROOT, capture_output=True, env=env,
                              timeout=HOST_TEST_TIMEOUT, stdin=subprocess.DEVNULL)
        return proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        return EXIT_HANG, (e.stdout or b"").decode(errors="replace") + "\n(timed out)"


def host_problem(code, plan, top, cases):
    if code != 0 and plan is not None and top < plan:
        return f"stopped after {top} of {plan} cases, exit status {code}"
    if code != 0 and not any_failed(cases):
        return f"exit status {code}"
    if plan is None:
        return "no KTAP plan"
    if plan != top:
        return f"plan says {plan} results, {top} reported"
    return None


def run_host_test(source, build, reporter):
    name = host_test_name(source)
    out_dir = os.path.join(ROOT, build, "host-tests")
    os.makedirs(out_dir, exist_ok=True)
    start = time.monotonic()
    binary, errors = compile_host_test(os.path.relpath(source, ROOT), out_dir)
    if not binary:
        reporter.report(Result(name + " (build)", "FAIL", time.monotonic() - start, errors))
        return
    code, output = run_host_binary(binary)
    seconds = time.monotonic() - start
    with open(os.path.join(ROOT, build, "test-logs", os.path.basename(binary) + ".log"), "w") as f:
        f.write(output)
    plan, top, cases = parse_ktap(output)
    report_cases(reporter, name, cases)
    problem = host_problem(code, plan, top, cases)
    if problem:
        reporter.report(Result(name, "FAIL", seconds, output, problem))


def run_syscall_table_check(reporter):
    """docs/SYSCALLS.md matches the sources, and every system call number has
    a handler or is marked -ENOSYS (tools/mksyscalls.py --check)."""
    start = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "mksyscalls.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True)
    reporter.report(Result("host/syscall-table", "ok" if proc.returncode == 0 else "FAIL",
                           time.monotonic() - start, proc.stdout + proc.stderr))


def run_checker(name, command, reporter, expect_failure=False, expect_text=""):
    """Runs a tree checker; it passes when its exit status is as expected and,
    for an expected failure, its report names expect_text."""
    start = time.monotonic()
    proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    failed = proc.returncode != 0
    ok = failed == expect_failure and expect_text in proc.stdout
    reporter.report(Result(name, "ok" if ok else "FAIL", time.monotonic() - start,
                           " ".join(command) + "\n" + proc.stdout + proc.stderr))


def run_layering_checks(reporter):
    """Does every #include point down the layers (tools/layers.conf)?  And does
    the checker fail when one points up?  A copy of the tree gets an include of
    the network stack planted in the scheduler, and a user program one of a
    kernel-internal header."""
    checker = [sys.executable, os.path.join(ROOT, "tools", "check-layering.py")]
    run_checker("host/layering", checker, reporter)
    with tempfile.TemporaryDirectory() as copy:
        for top in ("kernel", "drivers", "modules", "linker", "aspects", "userland", "tools"):
            shutil.copytree(os.path.join(ROOT, top), os.path.join(copy, top))
        with open(os.path.join(copy, "kernel/sched/sched.c"), "a") as f:
            f.write('\n#include "net/net.h"\n')
        run_checker("host/layering-refuses-an-upward-include", checker + ["--root", copy], reporter,
                    expect_failure=True, expect_text="kernel/sched/sched.c")
        with open(os.path.join(copy, "userland/ps/ps.c"), "a") as f:
            f.write('\n#include "sched/sched.h"\n')
        run_checker("host/layering-refuses-a-kernel-header-in-user-space",
                    checker + ["--root", copy], reporter, expect_failure=True,
                    expect_text="userland/ps/ps.c")


def run_shipped_kernel_check(kernel, reporter):
    """Is the kernel that `make run` boots free of tests and benchmarks?  No
    ktest_ or bench_ symbol may be in it (they are in the test kernel)."""
    start = time.monotonic()
    proc = subprocess.run(["nm", kernel], cwd=ROOT, capture_output=True, text=True)
    found = [line for line in proc.stdout.splitlines() if re.search(r"ktest_|bench_", line)]
    ok = proc.returncode == 0 and not found
    reporter.report(Result("host/shipped-kernel-has-no-tests", "ok" if ok else "FAIL",
                           time.monotonic() - start, proc.stderr + "\n".join(found)))


TRACE_TESTS = os.path.join(ROOT, "tests", "trace")


def run_mscope_case(case, reporter):
    """One case of tests/trace/mscope_test.py: tools/mscope against a fake
    guest and a synthetic CTF trace."""
    sys.path.insert(0, TRACE_TESTS)
    import mscope_test
    start = time.monotonic()
    problem, log = mscope_test.run_case(case)
    reporter.report(Result(f"host/mscope/{case}", "FAIL" if problem else "ok",
                           time.monotonic() - start, log, problem or ""))


def mscope_cases():
    sys.path.insert(0, TRACE_TESTS)
    import mscope_test
    return mscope_test.case_names()


def run_trace_module_case(module, prefix, case, reporter):
    """One case of a case module of tests/trace/ (analyze_test, explorer_test):
    each has run_case(name) -> (problem or None, log)."""
    sys.path.insert(0, TRACE_TESTS)
    tests = __import__(module)
    start = time.monotonic()
    problem, log = tests.run_case(case)
    skipped = problem is not None and problem.startswith("SKIP ")
    note = problem or (log if len(log) < 80 else "")
    reporter.report(Result(f"{prefix}/{case}", "skip" if skipped else "FAIL" if problem else "ok",
                           time.monotonic() - start, log, note))


def trace_module_cases(module):
    sys.path.insert(0, TRACE_TESTS)
    return __import__(module).case_names()


def host_test_cases(source):
    """The cases of a host test as its source declares them: HOSTTEST_CASE(f)
    in HOSTTEST_MAIN, or {"f", f} in a table of its own."""
    text = read_text(source)
    cases = [case for body in macro_arguments(text, "HOSTTEST_MAIN")
             for case in re.findall(r"HOSTTEST_CASE\(\s*(\w+)\s*\)", body)]
    return cases or re.findall(r'\{\s*"(\w+)"\s*,\s*\1\s*\}', text)


def host_listing(args):
    lines = []
    for source in host_tests():
        name = host_test_name(source)
        lines += [f"{name}/{case}" for case in host_test_cases(source)] or \
            [f"{name}/<case>  (cases not declared in a table)"]
    return lines + ["host/syscall-table", "host/layering",
                     "host/layering-refuses-an-upward-include",
                     "host/layering-refuses-a-kernel-header-in-user-space",
                     "host/shipped-kernel-has-no-tests"] + \
        [f"host/mscope/{case}" for case in mscope_cases()] + \
        [f"host/analyze/{case}" for case in trace_module_cases("analyze_test")] + \
        [f"host/explorer/{case}" for case in trace_module_cases("explorer_test")]


@group("host", host_listing)
def host_jobs(args, reporter):
    """tests/host/*_test.c: real kernel sources compiled for the host with
    AddressSanitizer and UndefinedBehaviorSanitizer; every KTAP case counts;
    docs/SYSCALLS.md checked against the sources (tools/mksyscalls.py); the
    layering of #includes (tools/check-layering.py, and that it fails on
    planted upward includes); no test code in the shipped kernel; tools/mscope
    against a fake guest and a synthetic CTF trace, the analyzer's requests on
    generated data, the Latency Explorer in headless Chromium (tests/trace/)."""
    return [lambda s=s: run_host_test(s, args.build, reporter) for s in host_tests()] + \
        [lambda: run_syscall_table_check(reporter), lambda: run_layering_checks(reporter),
         lambda: run_shipped_kernel_check(in_build(args, SHIPPED_KERNEL), reporter)] + \
        [lambda c=c: run_mscope_case(c, reporter) for c in mscope_cases()] + \
        [lambda c=c: run_trace_module_case("analyze_test", "host/analyze", c, reporter)
         for c in trace_module_cases("analyze_test")] + \
        [lambda c=c: run_trace_module_case("explorer_test", "host/explorer", c, reporter)
         for c in trace_module_cases("explorer_test")]


# ---------------------------------------------------------------- fuzzing


FUZZ_SECONDS = 20  # the short run; `make fuzz` runs longer


def run_fuzz(args, reporter):
    """The linker's libFuzzer target (tests/fuzz/fuzz.sh), seeded with the
    build's aspect objects: passes when no input crashed it."""
    name = "fuzz/linker"
    if missing(os.path.join(args.build, "aspects"), reporter, name, "run make aspects"):
        return
    start = time.monotonic()
    try:
        proc = subprocess.run(["sh", "tests/fuzz/fuzz.sh", args.build, str(FUZZ_SECONDS)], cwd=ROOT,
                              capture_output=True, timeout=FUZZ_SECONDS + 180,
                              stdin=subprocess.DEVNULL)
        code, output = proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        code, output = EXIT_HANG, (e.stdout or b"").decode(errors="replace") + "\n(timed out)"
    with open(os.path.join(ROOT, args.build, "test-logs", "fuzz-linker.log"), "w") as f:
        f.write(output)
    seconds = time.monotonic() - start
    if code == 0:
        reporter.report(Result(name, "ok", seconds))
    else:
        reporter.report(Result(name, "FAIL", seconds, output,
                               f"exit status {code}; the input is in {args.build}/fuzz/"))


def fuzz_listing(args):
    return [f"fuzz/linker  (the linker's libFuzzer target for {FUZZ_SECONDS} s)"]


@group("fuzz", fuzz_listing)
def fuzz_jobs(args, reporter):
    """the runtime linker's ELF validation and relocation under libFuzzer for
    a short while (tests/fuzz/fuzz.sh; `make fuzz` runs it longer)."""
    return [lambda: run_fuzz(args, reporter)]


# ---------------------------------------------------------------- in-kernel suites


# The whole ktest suite runs once per CPU count; TCG emulates each vCPU on a
# host thread, so more CPUs than host cores run slower.
KTEST_CPUS = [1, 2, 4]
KTEST_SMP_EXTRA_TIMEOUT = 60
# More hang guard for each CPU past the first in a run of suites: TCG runs a
# vCPU per host thread, so 4 CPUs on 2 busy cores took 563 s for a run that
# takes a third of that on a quiet host.
KTEST_PER_CPU_TIMEOUT = 150
# Kernel variables a timed-out ktest run reports beside the CPUs' backtraces:
# the join-point patcher's state (kernel/joinpoint/patch.c).
KTEST_HANG_SYMBOLS = "patching,stale_breakpoints,orphaned_breakpoints"
# The NIC drivers' suites and the stack's (its DHCP lease and ICMP cases need
# a NIC), once per (name, machine, QEMU devices) on QEMU's user network: INTx
# on both chipsets, behind a bridge, and MSI-X.
KTEST_NIC_SUITES = "pci,nic,e1000,virtio,net"
KTEST_NICS = [
    ("e1000-q35", "q35", ["-device", "e1000,netdev=n0"]),
    ("e1000-pc-bridge", "pc", ["-device", "pci-bridge,id=br1,chassis_nr=1",
                               "-device", "e1000,netdev=n0,bus=br1,addr=3"]),
    ("virtio-q35", "q35", ["-device", "virtio-net-pci,netdev=n0"]),
    ("virtio-intx-pc", "pc", ["-device", "virtio-net-pci,netdev=n0,vectors=0,disable-legacy=on"]),
]
KERNEL_SOURCES = ("kernel", "drivers", "modules", "linker")


def ktest_problem(run):
    """What is wrong with a ktest run beyond its failed cases, or None."""
    if run.code == EXIT_HANG:
        return "timed out (hang)"
    if run.code == EXIT_PANIC:
        return "kernel panic"
    if run.code != EXIT_PASSED and not any_failed(run.cases):
        return f"exit status {run.code}"
    if run.plan is None:
        return "no KTAP plan"
    if run.plan != run.top:
        return f"plan says {run.plan} suites, {run.top} reported"
    return None


def provided_resources(smp, qemu_args, initrd):
    """What a ktest run provides (names of RESOURCE_SKIPS), from how it boots."""
    provides = []
    if smp > 1:
        provides.append("cpus")
    if "-netdev" in qemu_args:
        provides.append("nic")
    if "--disk" in qemu_args or "-drive" in qemu_args:
        provides.append("disk")
    if initrd:
        provides.append("initrd")
    return provides


def run_ktest(args, reporter, name, suites, smp=1, qemu_args=(), options="", initrd=False,
              provides=()):
    """ktest=suites (and more command-line options) on smp CPUs, with the
    initrd when asked (programs such as /bin/monitor); its cases are
    name/suite/case.  A run fails when fewer CPUs come online than asked for,
    and a case skipped for want of what the run provides (its CPUs, NIC,
    disk, initrd; more in provides) fails.  Returns the KtapRun, or None when
    the kernel is missing."""
    kernel = in_build(args, TEST_KERNEL)
    if missing(kernel, reporter, name, "run make kernel"):
        return None
    run = boot_and_collect_ktap(test_log(args, name), kernel,
                                BIOS_TIMEOUT + KTEST_SMP_EXTRA_TIMEOUT * (smp > 1) +
                                KTEST_PER_CPU_TIMEOUT * (smp - 1),
                                initrd=in_build(args, INITRD) if initrd else None,
                                append=f"ktest={suites} exit=qemu {options}".strip(), smp=smp,
                                qemu_args=["--hang-symbols", KTEST_HANG_SYMBOLS] + list(qemu_args))
    run = run._replace(cases=missing_resources(
        run.cases, provided_resources(smp, qemu_args, initrd) + list(provides)))
    report_cases(reporter, name, run.cases)
    report_run(reporter, f"{name} (run)", run,
               ktest_problem(run) or cpus_problem(run.text, smp))
    return run


# The block suites on a virtio-blk (and an NVMe) disk: `block` on a zeroed scratch image,
# `blockerr` and `ext2err` behind QEMU blkdebug rules failing reads of sector
# 1024 (BLOCKERR_SECTOR in drivers/block/tests.c) and of a file's data block.
BLKDEBUG_RULE = '[inject-error]\nevent = "read_aio"\nerrno = "5"\nsector = "{}"\nonce = "off"\n'
SCRATCH_DISK_MIB = 16


def scratch_disk(args, name):
    """A zeroed raw image of SCRATCH_DISK_MIB in the build directory."""
    path = os.path.join(args.build, "test-logs", name + ".img")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(SCRATCH_DISK_MIB << 20)
    return path


def run_ktest_block(args, reporter, name, suites, device="virtio", options=""):
    run_ktest(args, reporter, name, suites, options=options, provides=["scratch-disk"],
              qemu_args=["--disk", scratch_disk(args, name), "--disk-device", device])


# QEMU's NVMe controller's ids: pci_intx= makes it interrupt through INTx.
NVME_PCI_IDS = "1b36:0010"


def run_ktest_blocktimeout(args, reporter, device="virtio"):
    """blocktimeout on a virtio-blk (or NVMe) disk that QEMU throttles to one
    byte a second after an 8 KiB burst: the first requests pass, the next
    would wait an hour.  The driver must end it with -ETIMEDOUT (resetting
    the device) and refuse the next with -EIO."""
    name = "ktest-blocktimeout" + ("" if device == "virtio" else "-" + device)
    image = os.path.join(args.build, "test-logs", name + ".img")
    with open(image, "wb") as f:
        f.truncate(16 << 20)
    qemu_device = "virtio-blk-pci,drive=slow0" if device == "virtio" else \
        "nvme,drive=slow0,serial=microscope0"
    run_ktest(args, reporter, name, "blocktimeout",
              qemu_args=["--", "-drive", f"file={image},if=none,id=slow0,format=raw,"
                         "throttling.bps-total=1,throttling.bps-total-max=8192",
                         "-device", qemu_device])


def run_ktest_blockerr(args, reporter, name, device="virtio"):
    """blockerr on an ext2 image holding victim.txt, whose data block (from
    debugfs) fails to read, as does sector 1024, and unwritable.txt, whose
    data block fails to be written."""
    image, code, output = make_ext2_image(args, name, {"victim.txt": "never read\n",
                                                       "unwritable.txt": "on the disk\n"})
    block = re.search(rb"^(\d+)\s*$", debugfs(image, "bmap /victim.txt 0"), re.M)
    unwritable = re.search(rb"^(\d+)\s*$", debugfs(image, "bmap /unwritable.txt 0"), re.M)
    if code != 0 or not block or not unwritable:
        reporter.report(Result(name + "/setup", "FAIL", 0.0, output, "mke2fs or debugfs failed"))
        return
    rule = os.path.join(args.build, "test-logs", name + ".blkdebug")
    with open(rule, "w") as f:
        f.write(BLKDEBUG_RULE.format(1024) + BLKDEBUG_RULE.format(int(block.group(1)) * 8) +
                BLKDEBUG_RULE.replace("read_aio", "write_aio").format(int(unwritable.group(1)) * 8))
    run_ktest(args, reporter, name, "blockerr,ext2err", provides=["ext2"],
              qemu_args=["--disk", image, "--blkdebug", rule, "--disk-device", device])


# ext2: the OS writes a tree on an image the host's mke2fs made (ktest=ext2w),
# the host checks it (e2fsck -fn, debugfs), a second boot reads it back
# (ktest=ext2r), and e2fsck checks it once more.  The bytes of the tree's
# pattern files follow pattern_byte in modules/ext2/tests.c.
EXT2_DISK_MIB = 64
EXT2_HUGE_BYTES = 4 * 1024 * 1024 + 77777


def ext2_pattern(length):
    return bytes((i * 7 + i // 4096) & 0xff for i in range(length))


def make_ext2_image(args, name, files=None):
    root = os.path.join(args.build, "test-logs", name + "-root")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    for path, text in dict(files or {}, README="made by the host's mke2fs -d\n").items():
        with open(os.path.join(root, path), "w") as f:
            f.write(text)
    image = scratch_disk(args, name)
    proc = subprocess.run(["/sbin/mke2fs", "-q", "-F", "-t", "ext2", "-b", "4096", "-I", "128",
                           "-O", "^dir_index", "-d", root, image, f"{EXT2_DISK_MIB}M"],
                          capture_output=True, text=True)
    return image, proc.returncode, proc.stdout + proc.stderr


def host_e2fsck(reporter, name, image):
    start = time.monotonic()
    proc = subprocess.run(["/sbin/e2fsck", "-fn", image], capture_output=True, text=True)
    reporter.report(Result(name, "ok" if proc.returncode == 0 else "FAIL",
                           time.monotonic() - start, proc.stdout + proc.stderr,
                           f"e2fsck -fn exit status {proc.returncode}"))


def debugfs(image, request):
    return subprocess.run(["/sbin/debugfs", "-R", request, image], capture_output=True).stdout


def host_debugfs(args, reporter, name, image):
    """What debugfs reads from the image is what the OS wrote."""
    start = time.monotonic()
    problems = []
    if debugfs(image, "cat /tree/small.txt") != b"hello from microScope\n":
        problems.append("/tree/small.txt differs")
    dump = os.path.join(args.build, "test-logs", name.replace("/", "-") + "-huge.bin")
    debugfs(image, f"dump /tree/huge.bin {dump}")
    if not os.path.exists(dump) or open(dump, "rb").read() != ext2_pattern(EXT2_HUGE_BYTES):
        problems.append("/tree/huge.bin differs")
    if b'Fast link dest: "small.txt"' not in debugfs(image, "stat /tree/link"):
        problems.append("/tree/link is not a fast link to small.txt")
    if b"0640" not in debugfs(image, "stat /tree/small.txt"):
        problems.append("/tree/small.txt has not mode 0640")
    names = debugfs(image, "ls /tree/many").split()
    if sum(1 for n in names if n.startswith(b"file-with-a-longer-name-")) != 300:
        problems.append("/tree/many does not hold 300 files")
    tree = debugfs(image, "ls /tree").split()
    for gone in (b"gone.bin", b"from.txt", b"replacer.txt", b"movedir", b"emptydir"):
        if gone in tree:
            problems.append(f"/tree/{gone.decode()} is still there")
    for present in (b"orig.txt", b"replaced.txt", b"overdir", b"deeplink", b"owned.txt"):
        if present not in tree:
            problems.append(f"/tree/{present.decode()} is missing")
    if debugfs(image, "cat /tree/sub/hardlink.txt") != b"linked\n":
        problems.append("/tree/sub/hardlink.txt is not the linked file")
    if b"Links: 2" not in debugfs(image, "stat /tree/orig.txt"):
        problems.append("/tree/orig.txt has not two links")
    if debugfs(image, "cat /tree/replaced.txt") != b"new\n":
        problems.append("/tree/replaced.txt was not replaced")
    if debugfs(image, "cat /tree/sub/movedir/inside.txt") != b"inside\n":
        problems.append("/tree/sub/movedir/inside.txt differs")
    owned = debugfs(image, "stat /tree/owned.txt")
    if not re.search(rb"User:\s+1000\s+Group:\s+1001", owned) or b"0604" not in owned:
        problems.append("/tree/owned.txt is not 1000:1001 mode 0604")
    reporter.report(Result(name, "FAIL" if problems else "ok", time.monotonic() - start,
                           "\n".join(problems), "; ".join(problems)))


# A fast symbolic link with an extended-attribute block (its block count is
# not 0): its one-byte target, read as a block pointer, names a block of the
# inode table.  ext2w reads and removes it; e2fsck then checks the image.
EXT2_XATTR_LINK = "symlink /xlink A\nea_set /xlink user.note hello\n"


def debugfs_write(args, name, image, requests):
    """Runs debugfs -w with requests (one a line) on image; its status."""
    script = os.path.join(args.build, "test-logs", name + ".debugfs")
    with open(script, "w") as f:
        f.write(requests)
    return subprocess.run(["/sbin/debugfs", "-w", "-f", script, image],
                          capture_output=True).returncode


def run_ktest_ext2(args, reporter):
    name = "ktest-ext2"
    image, code, output = make_ext2_image(args, name)
    if code == 0:
        code = debugfs_write(args, name, image, EXT2_XATTR_LINK)
    if code != 0:
        reporter.report(Result(name + "/mke2fs", "FAIL", 0.0, output, "mke2fs or debugfs failed"))
        return
    run_ktest(args, reporter, name + "-write", "ext2w,ext2wb", qemu_args=["--disk", image],
              provides=["ext2"])
    host_e2fsck(reporter, name + "/host/e2fsck-after-write", image)
    host_debugfs(args, reporter, name + "/host/debugfs", image)
    run_ktest(args, reporter, name + "-read", "ext2r,ext2ra,ext2umount",
              qemu_args=["--disk", image], provides=["ext2"])
    host_e2fsck(reporter, name + "/host/e2fsck-after-read", image)
    start = time.monotonic()
    unmounted = debugfs(image, "cat /after-unmount.txt")
    reporter.report(Result(name + "/host/written-back-by-umount",
                           "ok" if unmounted == b"written back by umount\n" else "FAIL",
                           time.monotonic() - start, unmounted.decode(errors="replace"),
                           "" if unmounted == b"written back by umount\n" else
                           "/after-unmount.txt is not what the OS wrote before umount"))


def ktest_cpu_name(smp):
    return "ktest" if smp == 1 else f"ktest-smp{smp}"


def nic_qemu_args(nic):
    """qemu.py's arguments for a KTEST_NICS entry: its machine and its NIC."""
    return ["--machine", nic[1], "--", "-netdev", "user,id=n0"] + nic[2]


def ktest_suites():
    """[(suite, [case, ...], source)] as KTEST_SUITE declares them in the kernel's sources."""
    suites = []
    for path in source_files(KERNEL_SOURCES):
        for body in macro_arguments(read_text(path), "KTEST_SUITE"):
            suite = body.split(",", 1)[0].strip()
            cases = re.findall(r"KTEST_CASE\(\s*(\w+)\s*\)", body)
            suites.append((suite, cases, os.path.relpath(path, ROOT)))
    return sorted(suites)


def ktest_listing(args):
    cpus = ", ".join(ktest_cpu_name(n) + "/" for n in KTEST_CPUS[1:])
    lines = [f"ktest/<suite>/<case>: every suite on 1 CPU; {cpus}: the same on "
             f"{', '.join(map(str, KTEST_CPUS[1:]))} CPUs"]
    for nic in KTEST_NICS:
        lines.append(f"ktest-{nic[0]}/<suite>/<case>: {KTEST_NIC_SUITES} on {nic[1]} with "
                     + " ".join(nic[2][1::2]))
    for port in VCON_PORTS:
        lines.append(f"ktest-vcon-send-{port}/<suite>/<case>, /ran, /stream: vcon with "
                     "vcon_test=send, its port's output checked byte for byte")
    for port in VCON_SOCKET_PORTS:
        lines.append(f"ktest-vcon-receive-{port}/<suite>/<case>, /ran: vcon with "
                     "vcon_test=receive, fed through a socket")
        lines.append(f"ktest-vcon-slow-{port}/<suite>/<case>, /ran, /stream, /waited: vcon with "
                     "vcon_test=send on a socket the harness reads slowly, checked byte for byte")
    lines.append("ktest-nicsteer-smp1/nicsteer/<case>, ktest-nicsteer-smp2/...: the NIC decision "
                 "loop with the initrd, so that shm and msg have /bin/monitor, on 1 and 2 CPUs")
    lines.append("ktest-block/block/<case>: the block suite on a scratch virtio-blk disk")
    lines.append("ktest-blockerr/blockerr/<case>: reads and writes failed by QEMU blkdebug rules, "
                 "raw and through ext2")
    lines.append("ktest-block-nvme/..., ktest-blockerr-nvme/...: the same on an NVMe disk")
    lines.append("ktest-block-nvme-intx/...: the block suite on an NVMe disk interrupting "
                 "through INTx (pci_intx=)")
    lines.append("ktest-blocktimeout/blocktimeout/<case>, ktest-blocktimeout-nvme/...: a virtio-blk "
                 "(an NVMe) disk that stops answering (QEMU throttling): -ETIMEDOUT and a reset, "
                 "then -EIO, no hang")
    lines.append("ktest-ext2-write/ext2w,ext2wb/<case>, ktest-ext2/host/e2fsck-after-write, "
                 "ktest-ext2/host/debugfs, ktest-ext2-read/ext2r,ext2umount/<case>, "
                 "ktest-ext2/host/e2fsck-after-read, ktest-ext2/host/written-back-by-umount: ext2 on a host-made image")
    lines.append("<run> (run): each run's exit status and KTAP plan")
    for suite, cases, source in ktest_suites():
        lines += [f"ktest/{suite}/{case}" for case in cases]
    return lines


# The virtio console's suite with a port (drivers/virtio/console_test.c, whose
# pattern and sizes these are): vcon_test=send writes the pattern, then
# records from several threads, into a file the harness checks byte for byte;
# vcon_test=receive checks the pattern the harness writes into a socket.
# vcon_test=send on a socket QEMU serves, which the harness connects to late
# and reads slowly: what the guest writes must wait for it, not be lost.
# Each with MSI-X on q35 (qemu.py --console-port) and with INTx on pc (port 1,
# a virtserialport, with MULTIPORT), and send on port 0 of a device without
# MULTIPORT (a virtconsole, on a file: lossless only there).
VCON_SEND_BYTES, VCON_RECEIVE_BYTES = 1 << 20, 512 << 10
VCON_WRITERS, VCON_RECORDS, VCON_RECORD_BYTES = 3, 50, 1000
VCON_SOCKET_PORTS = ["q35", "intx-pc"]
VCON_PORTS = VCON_SOCKET_PORTS + ["port0"]
VCON_PORT_NAME = "org.microscope.trace"  # tools/qemu.py's, drivers/virtio/console_internal.h's
VCON_RECEIVER_READY = b"vcon receiver ready\n"  # the suite's VCON_TEST_READY
VCON_SLOW_READ, VCON_SLOW_PAUSE = 4096, 0.002  # the slow reader: bytes per read, seconds between
VCON_HOST_CASES = {"send": "the_pattern_reaches_the_host",
                   "receive": "the_hosts_pattern_arrives_in_order"}


def vcon_pattern(offset, length):
    return bytes(((i * 2654435761) & 0xffffffff) >> 24 for i in range(offset, offset + length))


def vcon_records_problem(data):
    """What is wrong with the records the writer threads sent, or None: each
    whole (byte 0 'A' + writer, bytes 1-2 its number, then writer ^ n ^ i)
    and each writer's in order."""
    if len(data) != VCON_WRITERS * VCON_RECORDS * VCON_RECORD_BYTES:
        return f"{len(data)} bytes of records"
    following = [0] * VCON_WRITERS
    for start in range(0, len(data), VCON_RECORD_BYTES):
        record = data[start:start + VCON_RECORD_BYTES]
        writer, number = record[0] - ord("A"), record[1] | record[2] << 8
        if not 0 <= writer < VCON_WRITERS or number != following[writer]:
            return f"record at {start}: writer {writer} number {number} out of order"
        body = bytes((writer ^ number ^ i) & 0xff for i in range(3, VCON_RECORD_BYTES))
        if record[3:] != body:
            return f"record at {start} torn"
        following[writer] += 1
    return None


def vcon_stream_problem(data):
    """What is wrong with what vcon_test=send wrote, or None."""
    if data[:VCON_SEND_BYTES] != vcon_pattern(0, VCON_SEND_BYTES):
        same = next((i for i, (a, b) in enumerate(zip(data, vcon_pattern(0, len(data))))
                     if a != b), min(len(data), VCON_SEND_BYTES))
        return f"{len(data)} bytes; the pattern differs from byte {same}"
    return vcon_records_problem(data[VCON_SEND_BYTES:])


def vcon_port_args(port, chardev):
    """qemu.py's arguments for a console port of kind port on chardev."""
    if port == "q35":
        return ["--machine", "q35", "--console-port", chardev]
    if port == "port0":
        return ["--machine", "q35", "--", "-device", "virtio-serial-pci,max_ports=1",
                "-chardev", f"{chardev},id=vcon0", "-device", "virtconsole,chardev=vcon0"]
    return ["--machine", "pc", "--",
            "-device", "virtio-serial-pci,vectors=0,disable-legacy=on,max_ports=2",
            "-chardev", f"{chardev},id=vcon0",
            "-device", f"virtserialport,chardev=vcon0,nr=1,name={VCON_PORT_NAME}"]


def report_vcon_host_case(reporter, name, run, mode):
    """The host-checked case must have run: a skip there would prove nothing."""
    case = VCON_HOST_CASES[mode]
    status = next((st for suite, c, st, _ in (run.cases if run else []) if c == case), None)
    reporter.report(Result(f"{name}/ran", "ok" if status == "ok" else "FAIL", 0.0, None,
                           f"vcon/{case}: {status or 'not reported'}"))


def run_vcon_send(args, reporter, port):
    name = f"ktest-vcon-send-{port}"
    output = test_log(args, name) + ".bin"
    if os.path.exists(output):
        os.remove(output)
    run = run_ktest(args, reporter, name, "vcon", options="vcon_test=send",
                    qemu_args=vcon_port_args(port, f"file,path={output}"))
    report_vcon_host_case(reporter, name, run, "send")
    data = open(output, "rb").read() if os.path.exists(output) else b""
    problem = vcon_stream_problem(data)
    reporter.report(Result(f"{name}/stream", "FAIL" if problem else "ok", 0.0, None,
                           problem or f"{len(data)} bytes byte-exact"))


def run_vcon_receive(args, reporter, port):
    """QEMU connects to the harness's socket at start; the harness sends the
    pattern once the suite says its receiver is set (until then the trace
    stream's receiver has the port)."""
    name = f"ktest-vcon-receive-{port}"
    with tempfile.TemporaryDirectory(prefix="vcon-") as tmp:
        path = os.path.join(tmp, "port.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        server.settimeout(BIOS_TIMEOUT)

        def feed():
            try:
                connection, _ = server.accept()
                with connection:
                    heard = b""
                    while not heard.endswith(VCON_RECEIVER_READY):
                        chunk = connection.recv(1)
                        if not chunk:
                            return
                        heard += chunk
                    connection.sendall(vcon_pattern(0, VCON_RECEIVE_BYTES))
                    while connection.recv(65536):
                        pass
            except OSError:
                pass  # QEMU gone early: the suite's case says what went wrong

        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()
        run = run_ktest(args, reporter, name, "vcon", options="vcon_test=receive",
                        qemu_args=vcon_port_args(port, f"socket,path={path}"))
        server.close()
        feeder.join(10)
    report_vcon_host_case(reporter, name, run, "receive")


def slow_reader(path, log, received, stop):
    """Connects to QEMU's socket once the guest says it starts writing (in
    the serial log), so that its first writes find no host and wait; then
    reads slowly until QEMU closes it (or stop is set before it was ever
    reached)."""
    sock = None
    while not stop.is_set() and "# vcon: writing the pattern" not in read_text(log):
        time.sleep(0.05)
    while sock is None and not stop.is_set():
        candidate = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        candidate.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, VCON_SLOW_READ)
        try:
            candidate.connect(path)
            sock = candidate
        except OSError:
            candidate.close()
            time.sleep(0.05)
    if sock is None:
        return
    with sock:
        sock.settimeout(BIOS_TIMEOUT)
        try:
            while True:
                chunk = sock.recv(VCON_SLOW_READ)
                if not chunk:
                    return
                received.extend(chunk)
                time.sleep(VCON_SLOW_PAUSE)
        except OSError:
            pass  # QEMU gone or silent: the stream's check says what is missing


def run_vcon_slow(args, reporter, port):
    """vcon_test=send on a socket QEMU serves: the harness connects once the
    guest has started writing without it (the guest waits for it) and reads
    more slowly than the guest writes; every byte must arrive, and the guest must have waited for
    buffers (else the reader was not slow and the case proved nothing)."""
    name = f"ktest-vcon-slow-{port}"
    received, stop = bytearray(), threading.Event()
    with tempfile.TemporaryDirectory(prefix="vcon-") as tmp:
        path = os.path.join(tmp, "port.sock")
        log = test_log(args, name)
        if os.path.exists(log):
            os.remove(log)
        reader = threading.Thread(target=slow_reader, args=(path, log, received, stop),
                                  daemon=True)
        reader.start()
        run = run_ktest(args, reporter, name, "vcon", options="vcon_test=send",
                        qemu_args=vcon_port_args(port, f"socket,path={path},server=on,wait=off"))
        stop.set()
        reader.join(BIOS_TIMEOUT)
    report_vcon_host_case(reporter, name, run, "send")
    problem = vcon_stream_problem(bytes(received))
    reporter.report(Result(f"{name}/stream", "FAIL" if problem else "ok", 0.0, None,
                           problem or f"{len(received)} bytes byte-exact"))
    log = read_text(test_log(args, name)) if os.path.exists(test_log(args, name)) else ""
    waits = re.search(r"# vcon: .* tx waits (\d+), host waits (\d+)", log)
    reporter.report(Result(f"{name}/waited", "ok" if waits and int(waits[1]) > 0 else "FAIL",
                           0.0, None, f"tx waits {waits[1]}, host waits {waits[2]}" if waits
                           else "no '# vcon:' line in the serial log"))


@group("ktest", ktest_listing)
def ktest_jobs(args, reporter):
    """the in-kernel suites (the test kernel with ktest=all exit=qemu, QEMU
    -kernel) on 1, 2 and 4 CPUs, the NIC drivers' suites with each NIC, the
    NIC decision loop with the initrd (its monitor) on 1 and 2 CPUs, and
    the vcon suite with a console port (output checked byte for byte, also
    through a socket read slowly; input fed through a socket); every case
    counts."""
    return [lambda n=n: run_ktest(args, reporter, ktest_cpu_name(n), "all", smp=n)
            for n in KTEST_CPUS] + \
        [lambda nic=nic: run_ktest(args, reporter, f"ktest-{nic[0]}", KTEST_NIC_SUITES,
                                   qemu_args=nic_qemu_args(nic)) for nic in KTEST_NICS] + \
        [lambda n=n: run_ktest(args, reporter, f"ktest-nicsteer-smp{n}", "nicsteer", smp=n,
                               initrd=True) for n in (1, 2)] + \
        [lambda port=port: run_vcon_send(args, reporter, port) for port in VCON_PORTS] + \
        [lambda port=port: run_vcon_receive(args, reporter, port) for port in VCON_SOCKET_PORTS] + \
        [lambda port=port: run_vcon_slow(args, reporter, port) for port in VCON_SOCKET_PORTS] + \
        [lambda: run_ktest_block(args, reporter, "ktest-block", "block"),
         lambda: run_ktest_blockerr(args, reporter, "ktest-blockerr"),
         lambda: run_ktest_blocktimeout(args, reporter),
         lambda: run_ktest_blocktimeout(args, reporter, "nvme"),
         lambda: run_ktest_block(args, reporter, "ktest-block-nvme", "block", "nvme"),
         lambda: run_ktest_block(args, reporter, "ktest-block-nvme-intx", "block", "nvme",
                                 f"pci_intx={NVME_PCI_IDS}"),
         lambda: run_ktest_blockerr(args, reporter, "ktest-blockerr-nvme", "nvme"),
         lambda: run_ktest_ext2(args, reporter)]


# ---------------------------------------------------------------- crash tests


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
    ("kstack_stale_free", r"kstack: free of .*a stale free(.|\n)*crashtest_kstack_stale_free"),
]


def known_crashtests():
    """The crashtest= values the kernel's source defines (a quoted name in the
    file that declares KERNEL_PARAM(crashtest, ...))."""
    known = set()
    for path in source_files(KERNEL_SOURCES):
        text = read_text(path)
        if re.search(r"KERNEL_PARAM\(\s*crashtest\b", text):
            known |= set(re.findall(r'"(\w+)"', text))
    return known


def run_crash(args, reporter, value, pattern):
    name = f"crash/{value}"
    code, text, seconds = qemu_run(
        test_log(args, f"crash-{value}"),
        kernel_args(in_build(args, TEST_KERNEL), append=f"crashtest={value} exit=qemu"),
        BIOS_TIMEOUT)
    report = text[text.find("KERNEL PANIC"):] if "KERNEL PANIC" in text else ""
    if code != EXIT_PANIC:
        verdict = "timed out (hang)" if code == EXIT_HANG else f"exit status {code}, expected 37"
        reporter.report(Result(name, "FAIL", seconds, text, verdict))
    elif not re.search(pattern, report):
        reporter.report(Result(name, "FAIL", seconds, text,
                               f"panic report does not name /{pattern}/"))
    else:
        reporter.report(Result(name, "ok", seconds))


def crash_listing(args):
    known = known_crashtests()
    return [f"crash/{value}  /{pattern}/" + ("" if value in known else "  (skipped: unknown)")
            for value, pattern in CRASH_TESTS]


@group("crash", crash_listing)
def crash_jobs(args, reporter):
    """crashtest=X (the test kernel) must panic (exit status 37) naming the
    faulting function."""
    if missing(in_build(args, TEST_KERNEL), reporter, "crash", "run make kernel"):
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


# (firmware, machine, memory).  Debian 12's OVMF boots the ISO in 64 MiB (at
# 32 MiB it finds no boot device), so UEFI uses the same small size as BIOS.
BOOT_MATRIX = [
    ("bios", "pc", "64M"), ("bios", "pc", "2G"), ("bios", "q35", "64M"), ("bios", "q35", "2G"),
    ("uefi", "pc", "64M"), ("uefi", "pc", "2G"), ("uefi", "q35", "64M"), ("uefi", "q35", "2G"),
]
KERNEL_BOOT_MEMORY = ["64M", "2G"]
# Boots on several CPUs: (name, firmware, machine, CPUs, what runs).  The
# 8-CPU boot runs only the smp suite: 8 vCPUs on two host cores are slow.
SMP_BOOTS = [("bios-q35-smp4", "bios", "q35", 4, "iso"), ("uefi-q35-smp2", "uefi", "q35", 2, "iso"),
             ("kernel-smp8", None, None, 8, "ktest=smp exit=qemu")]


def run_boot(args, reporter, name, qemu_args, timeout):
    """One boot that must end with exit status 33 and, on several CPUs, with
    as many online as it asked for (a boot that brought up fewer would pass
    its SMP cases by skipping them)."""
    code, text, seconds = qemu_run(test_log(args, name), qemu_args, timeout)
    smp = int(qemu_args[qemu_args.index("--smp") + 1]) if "--smp" in qemu_args else 1
    cpus = cpus_problem(text, smp)
    if code == EXIT_PASSED and not cpus:
        reporter.report(Result(name, "ok", seconds))
        return
    verdict = cpus if code == EXIT_PASSED else \
        {EXIT_HANG: "timed out (hang)", EXIT_PANIC: "kernel panic",
         EXIT_FAILED: "self-tests failed"}.get(code, f"exit status {code}")
    reporter.report(Result(name, "FAIL", seconds, text, verdict))


def iso_boots(iso):
    """(name, qemu.py arguments, timeout) of each boot of the self-test ISO."""
    runs = []
    for firmware, machine, memory in BOOT_MATRIX:
        qemu_args = ["--iso", iso, "--machine", machine, "--memory", memory]
        if firmware == "uefi":
            qemu_args.append("--uefi")
        runs.append((f"boot/{firmware}-{machine}-{memory}", qemu_args,
                     UEFI_TIMEOUT if firmware == "uefi" else BIOS_TIMEOUT))
    for name, firmware, machine, smp, what in SMP_BOOTS:
        if what != "iso":
            continue
        qemu_args = ["--iso", iso, "--machine", machine, "--memory", "256M", "--smp", str(smp)]
        timeout = BIOS_TIMEOUT + KTEST_SMP_EXTRA_TIMEOUT + KTEST_PER_CPU_TIMEOUT * (smp - 1)
        if firmware == "uefi":
            qemu_args.append("--uefi")
            timeout = UEFI_TIMEOUT
        runs.append((f"boot/{name}", qemu_args, timeout))
    return runs


def kernel_boots(kernel):
    """(name, qemu.py arguments, timeout) of each -kernel boot that runs suites."""
    runs = [(f"boot/{name}", kernel_args(kernel, append=what, smp=smp), BIOS_TIMEOUT)
            for name, _, _, smp, what in SMP_BOOTS if what != "iso"]
    for memory in KERNEL_BOOT_MEMORY:
        runs.append((f"boot/kernel-{memory}",
                     kernel_args(kernel, append="ktest=all exit=qemu") + ["--memory", memory],
                     BIOS_TIMEOUT))
    # A machine without an HPET: the TSC is calibrated against the PIT again,
    # and the clock, the tick and the timers run on that rate.
    runs.append(("boot/kernel-no-hpet",
                 kernel_args(kernel, append="ktest=time,sched exit=qemu") +
                 ["--machine", "q35,hpet=off"], BIOS_TIMEOUT))
    return runs


def run_hang_report(args, reporter):
    """A run stopped as a hang must say where each CPU was: registers and a
    symbolized backtrace per CPU (tools/qemu_dump.py), not only "timed out".
    The run (two CPUs at the kernel shell, which never exits) is stopped by
    qemu.py --dump-on once the shell's prompt is printed, where both CPUs
    idle, whenever that is on a busy host; the timeout only guards against a
    boot that hangs, and a run that reaches it fails."""
    name = "boot/hang-report"
    prompt = SHELL_PROMPT.decode()
    code, text, seconds = qemu_run(test_log(args, name),
                                   kernel_args(in_build(args, SHIPPED_KERNEL), smp=2) +
                                   ["--dump-on", prompt], BIOS_TIMEOUT)
    wanted = [r"qemu\.py: stopped and described at " + re.escape(repr(prompt)),
              r"CPU 0: RIP=0x[0-9a-f]{16}", r"CPU 1: RIP=0x[0-9a-f]{16}",
              r"0x[0-9a-f]{16} idle_loop sched\.c:\d+"]
    absent = [w for w in wanted if not re.search(w, text)]
    if code == EXIT_HANG and not absent:
        reporter.report(Result(name, "ok", seconds))
    else:
        reporter.report(Result(name, "FAIL", seconds, text,
                               f"exit status {code}; missing: {', '.join(absent)}"))


def boot_listing(args):
    lines = [f"boot/{firmware}-{machine}-{memory}  (the self-test ISO)"
             for firmware, machine, memory in BOOT_MATRIX]
    lines += [f"boot/kernel-{memory}  (ktest=all exit=qemu)" for memory in KERNEL_BOOT_MEMORY]
    lines.append("boot/kernel-no-hpet  (q35 without an HPET: ktest=time,sched on a TSC "
                 "calibrated against the PIT)")
    for name, _, _, smp, what in SMP_BOOTS:
        lines.append(f"boot/{name}  ({smp} CPUs, {'the self-test ISO' if what == 'iso' else what})")
    lines.append("boot/hang-report  (a run stopped as a hang at the kernel shell's prompt "
                 "reports each CPU's backtrace)")
    return lines


@group("boot", boot_listing)
def boot_jobs(args, reporter):
    """the self-test ISO under SeaBIOS and OVMF, pc and q35, small and large
    memory, and the -kernel path (the test kernel with ktest=): each boot
    must end with exit status 33; and a run of the shipped kernel stopped as
    a hang at its shell's prompt must report each CPU's backtrace."""
    runs = []  # (name, qemu.py arguments, timeout)
    iso = in_build(args, SELFTEST_ISO)
    if not missing(iso, reporter, "boot/iso", "run make iso"):
        runs += iso_boots(iso)
    kernel = in_build(args, TEST_KERNEL)
    if not missing(kernel, reporter, "boot/kernel", "run make kernel"):
        runs += kernel_boots(kernel)
    # The slow runs (UEFI) first, so the two workers finish together.
    runs.sort(key=lambda run: -run[2])
    jobs = [lambda r=r: run_boot(args, reporter, *r) for r in runs]
    if os.path.exists(in_build(args, SHIPPED_KERNEL)):
        jobs.append(lambda: run_hang_report(args, reporter))
    return jobs


# ---------------------------------------------------------------- kernel shell


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
    ("syscalls", "syscalls", r"\n\s+0  read\s+modules/vfs/syscalls\.c\r?\n"),
    ("unterminated-quote", "echo \"open", r"unterminated quote"),
    ("lattrack-create", "lattrack create wk wakeup 0", r"\A(?![\s\S]*error)"),
    ("lattrack-threshold", "lattrack threshold wk 500", r"\A(?![\s\S]*error)"),
    # listed with its threshold; whether a wake-up happened in between is timing
    # (the lattrack suite's wakeup_tracker_sees_wakeups counts them for sure)
    ("lattrack-list", "lattrack", r"\nwk\s+wakeup\s+500\s+\d+"),
    # whether a wake-up came between create and threshold is timing too (input
    # may all be there before the shell waits): none, or each one listed
    ("lattrack-show", "lattrack show wk",
     r"wk: (0 recent reports|[1-4] recent reports?\s+report \w+ \d+ us)"),
    ("lattrack-show-none", "lattrack show nope", r"no such thing \(-2\)"),
    ("lattrack-usage", "lattrack create wk wakeup x", r"usage: lattrack"),
    ("lattrack-remove", "lattrack remove wk", r"\A(?![\s\S]*error)"),
    ("lattrack-removed", "lattrack remove wk", r"no such thing \(-2\)"),
    ("lattrack-syscall", "lattrack create sy syscall:read 1000", r"\A(?![\s\S]*error)"),
    ("lattrack-kinds", "lattrack create bk block 1000", r"\A(?![\s\S]*error)"),
    ("lattrack-nictx", "lattrack create nt nictx 1000", r"\A(?![\s\S]*error)"),
    ("lattrack-kinds-list", "lattrack", r"\nsy\s+syscall\s+1000\s[\s\S]*\nbk\s+block\s+1000\s"),
    ("lattrack-no-call", "lattrack create sx syscall: 1000", r"no such thing \(-2\)"),
    ("lattrack-kinds-remove", "lattrack remove sy", r"\A(?![\s\S]*error)"),
    ("lattrack-kinds-remove2", "lattrack remove bk", r"\A(?![\s\S]*error)"),
    ("lattrack-nictx-remove", "lattrack remove nt", r"\A(?![\s\S]*error)"),
]


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
    cmd = [sys.executable, QEMU_PY, "--kernel", in_build(args, TEST_KERNEL), "--append",
           "exit=qemu", "--console-stdio", "--timeout", str(SHELL_TIMEOUT)]
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
    text = console.text()
    with open(test_log(args, "shell"), "w") as f:
        f.write(text)
    seconds = time.monotonic() - start
    status = "ok" if code == EXIT_REQUESTED else "FAIL"
    reporter.report(Result("shell/exit", status, seconds, text,
                           f"exit status {code}" + ("" if status == "ok" else ", expected 39")))


def shell_listing(args):
    return [f"shell/{step}  (types {line!r})" for step, line, _ in SHELL_SESSION] + \
        ["shell/exit  (exit stops QEMU with status 39)",
         "aspects-doc/*  (tests/net/aspectloop.py: docs/ASPECTS.md's loop: its example built "
         "with its gcc line, `ASPECTS=` into an initrd, each in-OS line typed and checked)",
         "jobs/*  (tests/net/jobsuite.py: ^C, ^Z, bg, kill at the user shell; httpd and an "
         "shm monitor survive; the shell's lists, variables and redirections)"]


def run_aspect_loop(args, reporter):
    """tests/net/aspectloop.py: docs/ASPECTS.md's loop from the host to the OS."""
    import aspectloop
    start = time.monotonic()
    results = aspectloop.run(args.build, test_log(args, "aspects-doc"))
    seconds = time.monotonic() - start
    for name, ok, detail in results:
        reporter.report(Result(name, "ok" if ok else "FAIL", seconds, None, detail))


def run_user_shell(args, reporter):
    """tests/net/jobsuite.py: job control and the user shell, typed at the console."""
    import jobsuite
    start = time.monotonic()
    results = jobsuite.run(args.build, test_log(args, "jobs"))
    seconds = time.monotonic() - start
    for name, ok, detail in results:
        reporter.report(Result(name, "ok" if ok else "FAIL", seconds, None, detail))


@group("shell", shell_listing)
def shell_jobs(args, reporter):
    """a session typed at the kernel shell of the test kernel (its help
    lists the ktest command) over the serial console: each command's answer
    must match, and `exit` must stop QEMU (status 39); then the user shell of
    the shipped system (tests/net/jobsuite.py): ^C ends the foreground
    program while httpd and an shm aspect's monitor live on, ^Z stops it,
    bg continues it, kill ends a background job, and the shell's `;`, `&&`,
    `||`, `$?`, variables, redirections, comments and scripts work."""
    if missing(in_build(args, TEST_KERNEL), reporter, "shell", "run make kernel"):
        return []
    jobs = [lambda: run_shell(args, reporter)]
    if not missing(in_build(args, INITRD), reporter, "jobs", "run make initrd"):
        jobs.append(lambda: run_user_shell(args, reporter))
        jobs.append(lambda: run_aspect_loop(args, reporter))
    return jobs


# ---------------------------------------------------------------- user programs


USER_TIMEOUT = 300
USERTESTS_WATCH = Watch(end=re.compile(r"(ALL TESTS PASSED|SOME TESTS FAILED)"),
                        abort=re.compile(r"cannot start /bin/usertests"),
                        # A hang guard only: after usertests' last line the OS still
                        # writes /disk back and stops, which a busy host may stretch.
                        stop_seconds=120)
# usertests cases that are safe on the host (no exhaustion, no files of the
# OS's initrd): the glue and the tests' own logic, against Linux itself.
USER_HOST_CASES = ["fork_wait_exit_status", "pipe_round_trip", "exec_missing_binary",
                   "pipe_dead_reader", "kill_mid_syscall", "stack_guard", "bad_memory_access",
                   "cpu_exceptions", "float_state_survives_switches", "fork_copies_memory",
                   "heap_and_mappings", "clocks_and_sleep", "affinity_pins_a_process",
                   "sendfile_sends_a_file_to_a_socket_and_a_file",
                   "open_flags_linux_lacks_are_refused", "signals_reach_the_kernel_as_named",
                   "errno_values_keep_their_names", "clocks_reach_the_kernel_as_named",
                   "fcntl_commands_reach_the_kernel_as_named",
                   "fcntl_locks_reach_the_kernel_as_named", "every_errno_has_a_message",
                   "a_handler_runs_for_raise", "siginfo_names_the_signal_the_newlib_way",
                   "a_blocked_signal_waits_until_unblocked", "resethand_runs_the_handler_once",
                   "signal_returns_the_previous_handler", "sigaction_refuses_an_unknown_flag",
                   "a_handler_keeps_the_interrupted_floating_point",
                   "sigsuspend_waits_for_a_childs_signal", "faults_go_to_their_handlers",
                   "a_broken_pipe_signals_the_writer", "a_program_can_single_step_itself",
                   "a_stack_overflow_is_caught_on_the_alternate_stack",
                   "sigaltstack_reports_and_refuses_as_linux",
                   "a_handler_runs_on_the_alternate_stack",
                   "ss_autodisarm_disarms_the_stack_while_its_handler_runs",
                   "sigreturn_sets_the_stack_uc_stack_names",
                   "a_frame_the_alternate_stack_cannot_take_ends_the_process",
                   "fork_keeps_and_exec_clears_the_alternate_stack"]
# The programs under the host's (Linux) kernel: (name, argv, what it must print).
USER_HOST_CHECKS = [
    ("echo", ["echo", "-n", "a", "b c"], "a b c"),
    ("cat", ["cat", "userland/rootfs/etc/motd"],
     read_text(os.path.join(ROOT, "userland/rootfs/etc/motd"))),
    ("ls", ["ls", "userland/rootfs"], "README\netc\nwww\n"),
    ("sh-pipeline", ["sh", "-c", "echo one two | cat | cat"], "one two\n"),
]
USERTESTS_SMP = 4  # usertests run again on this many CPUs
# Other programs that run as init and print KTAP: (name, qemu.py arguments,
# timeout, what they check).  rscfltest runs under -icount: guest time is
# instructions executed, so the relations between times (a sleep is mostly
# time off the CPU) do not depend on how long the host takes to translate
# freshly patched code or on its load.
KTAP_INITS = [
    ("scopetest", [], 120, "the shm and msg bindings end to end (same counts in every binding, "
     "relink under load, a killed monitor, a missed deadline, msg on sched.switch dropped "
     "and counted)"),
    ("rscfltest", ["--icount"], 120, "per-activity accounting end to end (a sleep is time off "
     "the CPU, a pipe shows pipe and vfs, bad calls are errors, switched tokens charge each "
     "request once, ACCT_NEXT, a private read-only results page, application metrics)"),
    ("sysfuzz", [], 240, "the crash corpus (tests/fuzz/corpus: hostile aspect objects loaded as "
     "root must be refused with a reason, sysfuzz seeds that once hung or were killed), then "
     "30000 random system calls with typed arguments from unprivileged processes: no panic, "
     "no hang (make fuzz makes 1 M)"),
    ("rscflnet", [], 120, "network work follows its activity (1 MiB over loopback TCP charged "
     "to the sender's and the receiver's activities, lwIP's work on it as asynchronous work, "
     "nothing charged outside one); the NIC case runs in the net group"),
]
ELF_MAGIC = b"\x7fELF"
PT_LOAD, PT_DYNAMIC, PT_INTERP, PF_X = 1, 2, 3, 1


def user_bin(build, name=""):
    return os.path.join(build, "user", "bin", name)


def elf_problems(path):
    """What makes path unfit to be a microScope program ([] when nothing)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != ELF_MAGIC or data[4] != 2 or data[5] != 1:
        return ["not a 64-bit little-endian ELF file"]
    e_type, e_machine, _, e_entry, e_phoff = struct.unpack_from("<HHIQQ", data, 16)
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    problems = []
    if e_type != 2:
        problems.append(f"e_type {e_type}, expected ET_EXEC (2)")
    if e_machine != 62:
        problems.append(f"e_machine {e_machine}, expected x86_64 (62)")
    entry_ok = False
    for i in range(e_phnum):
        p_type, p_flags, _, p_vaddr, _, _, p_memsz = struct.unpack_from(
            "<IIQQQQQ", data, e_phoff + i * e_phentsize)
        if p_type in (PT_DYNAMIC, PT_INTERP):
            problems.append("dynamically linked (PT_DYNAMIC or PT_INTERP)")
        if p_type == PT_LOAD and p_flags & PF_X and p_vaddr <= e_entry < p_vaddr + p_memsz:
            entry_ok = True
    if not entry_ok:
        problems.append(f"entry {e_entry:#x} is in no executable PT_LOAD segment")
    undefined = subprocess.run(["nm", "-u", path], capture_output=True, text=True).stdout.split()
    undefined = [u for u in undefined if u not in ("U", "w", "v")]
    if undefined:
        problems.append("undefined symbols: " + " ".join(undefined[:10]))
    return problems


def run_user_elf(args, reporter, name):
    problems = elf_problems(user_bin(args.build, name))
    reporter.report(Result(f"user/elf/{name}", "FAIL" if problems else "ok", 0.0,
                           "\n".join(problems), "; ".join(problems)))


def run_user_host_usertests(args, reporter):
    """USER_HOST_CASES of usertests on the host, one result per case."""
    start = time.monotonic()
    try:
        proc = subprocess.run([user_bin(args.build, "usertests")] + USER_HOST_CASES, cwd=ROOT,
                              capture_output=True, timeout=120, stdin=subprocess.DEVNULL)
        code, text = proc.returncode, proc.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        code, text = EXIT_HANG, (e.stdout or b"").decode(errors="replace")
    plan, top, cases = parse_ktap(text)
    report_cases(reporter, "user/host/usertests", cases)
    if code != 0 or plan != top or "ALL TESTS PASSED" not in text:
        reporter.report(Result("user/host/usertests", "FAIL", time.monotonic() - start, text,
                               f"exit status {code}, {top} of {plan} cases reported"))


def run_user_host(args, reporter):
    """The programs under the host's (Linux) kernel: the same ABI."""
    env = dict(os.environ, PATH=os.path.abspath(user_bin(args.build)))
    for name, argv, expected in USER_HOST_CHECKS:
        argv = [user_bin(args.build, argv[0])] + argv[1:]
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, env=env, timeout=30)
        output = proc.stdout.decode(errors="replace")
        ok = proc.returncode == 0 and output == expected
        reporter.report(Result(f"user/host/{name}", "ok" if ok else "FAIL", 0.0,
                               output + proc.stderr.decode(errors="replace"),
                               "" if ok else f"printed {output!r}, status {proc.returncode}"))
    run_user_host_usertests(args, reporter)


def boot_init(args, program, timeout, smp=1, qemu_args=(), watch=None):
    """SHIPPED_KERNEL with the initrd and /bin/program as init (exit=qemu):
    init's exit status becomes QEMU's, 33 for 0 and 35 otherwise."""
    return boot_and_collect_ktap(test_log(args, program + ("" if smp == 1 else f"-smp{smp}")),
                                 in_build(args, SHIPPED_KERNEL), timeout,
                                 initrd=in_build(args, INITRD),
                                 append=f"init=/bin/{program} exit=qemu", smp=smp,
                                 qemu_args=qemu_args, watch=watch)


def usertests_problem(run):
    """What is wrong with a run of usertests as init beyond its failed cases, or None."""
    failed = any_failed(run.cases)
    if not run.found:
        return "usertests printed nothing"
    if run.plan is None or run.plan != run.top:
        return f"{run.top} of {run.plan} cases reported"
    if "ALL TESTS PASSED" not in run.text and not failed:
        return "no ALL TESTS PASSED line"
    if run.code != (EXIT_FAILED if failed else EXIT_PASSED):
        return {EXIT_HANG: "the OS did not stop after usertests, its init, ended" if run.ended
                else "timed out (hang)",
                EXIT_PANIC: "kernel panic"}.get(run.code, f"exit status {run.code}, not what "
                                                          "usertests' results call for")
    return None


def run_usertests(args, reporter, smp=1):
    """usertests as init in the OS on smp CPUs: each KTAP case, then the OS
    must stop.  The console is read as it comes, so a kernel that cannot
    start the program is left at once instead of at the timeout."""
    prefix = "user/usertests" + ("" if smp == 1 else f"-smp{smp}")
    image, code, output = make_ext2_image(args, prefix.replace("/", "-"))
    if code != 0:
        reporter.report(Result(prefix + "/mke2fs", "FAIL", 0.0, output, "mke2fs failed"))
        return
    run = boot_init(args, "usertests", USER_TIMEOUT, smp=smp, watch=USERTESTS_WATCH,
                    qemu_args=["--disk", image])
    if run.aborted:
        reporter.report(Result(prefix, "FAIL", run.seconds, run.text, run.aborted))
        return
    report_cases(reporter, prefix, run.cases)
    report_run(reporter, f"{prefix} (run)", run, usertests_problem(run))
    host_e2fsck(reporter, prefix + "/host/e2fsck-after-shared-mmap", image)
    host_shared_mmap_file(reporter, prefix + "/host/shared-mmap-on-disk", image)


def host_shared_mmap_file(reporter, name, image):
    """What usertests' shared_file_mmap stored through its mappings is in the
    image (shared_byte in userland/usertests/files.c, and its stores)."""
    start = time.monotonic()
    want = bytearray(ord("a") + i % 23 for i in range(3 * 4096 + 100))
    for at, byte in ((10, "M"), (5000, "N"), (8192, "W"), (20, "C")):
        want[at] = ord(byte)
    hole = bytearray(2 * 4096)
    hole[4096 + 7] = ord("H")
    problems = []
    if debugfs(image, "cat /shared.bin") != bytes(want):
        problems.append("/shared.bin is not the file with the mapping's stores")
    if debugfs(image, "cat /shared-hole.bin") != bytes(hole):
        problems.append("/shared-hole.bin has not the store into its hole")
    reporter.report(Result(name, "FAIL" if problems else "ok", time.monotonic() - start,
                           "\n".join(problems), "; ".join(problems)))


def ktap_init_problem(run):
    """What is wrong with a run of a KTAP_INITS program beyond its failed cases, or None."""
    if not run.found or run.plan is None or run.plan != run.top:
        return f"{run.top} of {run.plan} cases reported"
    if run.code != (EXIT_FAILED if any_failed(run.cases) else EXIT_PASSED):
        return f"exit status {run.code}"
    return None


def run_ktap_init(args, reporter, program, qemu_args, timeout):
    """program (a KTAP_INITS entry) as init on one CPU; each KTAP case counts."""
    run = boot_init(args, program, timeout, qemu_args=qemu_args)
    report_cases(reporter, f"user/{program}", run.cases)
    report_run(reporter, f"user/{program} (run)", run, ktap_init_problem(run))


def reported_names(path):
    """The case names a KTAP program passes to report("...") in its source, in order."""
    return list(dict.fromkeys(re.findall(r'\breport\(\s*"(\w+)"', read_text(path))))


def usertests_cases():
    """The names in usertests' user_tests[] table (userland/usertests/tests.c)."""
    text = read_text(os.path.join(ROOT, "userland/usertests/tests.c"))
    table = text[text.find("user_tests[]"):]
    return re.findall(r'\{\s*"(\w+)"\s*,', table)


def user_listing(args):
    built = os.path.isdir(user_bin(args.build))
    programs = sorted(os.listdir(user_bin(args.build))) if built else []
    lines = ["user/elf/<program>: static x86_64 ET_EXEC, entry in PT_LOAD, nothing undefined"]
    lines += [f"user/elf/{p}" for p in programs]
    lines.append("user/host/...: the programs on the host")
    lines += [f"user/host/{name}  ({shlex.join(argv)})" for name, argv, _ in USER_HOST_CHECKS]
    lines += [f"user/host/usertests/{case}" for case in USER_HOST_CASES]
    lines += net_host_checks()
    lines.append(f"user/usertests/<case>, user/usertests-smp{USERTESTS_SMP}/<case>: usertests "
                 f"as init on 1 and {USERTESTS_SMP} CPUs, then `(run)`: the OS stops")
    lines += [f"user/usertests/{case}" for case in usertests_cases()]
    lines.append("user/usertests/host/e2fsck-after-shared-mmap, .../host/shared-mmap-on-disk: the "
                 "run's ext2 disk (at /disk) clean, and shared_file_mmap's stores on it")
    for program, _, _, what in KTAP_INITS:
        lines.append(f"user/{program}/<case>: {program} as init: {what}")
        source = os.path.join(ROOT, "userland", program, program + ".c")
        lines += [f"user/{program}/{case}" for case in reported_names(source)]
    return lines


@group("user", user_listing)
def user_jobs(args, reporter):
    """the user programs: each ELF is checked on the host (static x86_64
    executable, entry in a loaded segment, nothing undefined); the
    programs run on the host too (same system call ABI: a check of the
    libc glue; httpd, httpget and ping through tests/net/netsuite.py);
    then usertests runs as init in the OS (the shipped kernel,
    init=/bin/usertests exit=qemu) on 1 and on 4 CPUs, every KTAP case
    counts and the OS must stop by itself; so do scopetest, rscfltest and
    rscflnet on 1 CPU."""
    if missing(in_build(args, INITRD), reporter, "user", "run make initrd"):
        return []
    names = sorted(os.listdir(user_bin(args.build)))
    jobs = [lambda n=n: run_user_elf(args, reporter, n) for n in names]
    jobs.append(lambda: run_user_host(args, reporter))
    jobs.append(lambda: run_net_host(args, reporter))
    if missing(in_build(args, SHIPPED_KERNEL), reporter, "user/usertests", "run make kernel"):
        return jobs
    booted = [lambda: run_usertests(args, reporter),
              lambda: run_usertests(args, reporter, USERTESTS_SMP)]
    booted += [lambda p=p, q=q, t=t: run_ktap_init(args, reporter, p, q, t)
               for p, q, t, _ in KTAP_INITS]
    return booted + jobs


# ---------------------------------------------------------------- network


sys.path.insert(0, os.path.join(ROOT, "tests", "net"))
NET_NICS = ["e1000", "virtio"]  # one QEMU run each, in parallel
NETSUITE = os.path.join(ROOT, "tests", "net", "netsuite.py")


def net_report(reporter):
    return lambda name, status, seconds, log, note: reporter.report(
        Result(name, status, seconds, log, note))


def run_net_host(args, reporter):
    """httpd, httpget and ping on the Linux host (tests/net/netsuite.py)."""
    import netsuite
    netsuite.run_host(args.build, net_report(reporter))


def run_net(args, reporter, nic):
    import netsuite
    netsuite.run_guest(args.build, nic, net_report(reporter), test_log(args, f"net-{nic}"),
                       kernel=in_build(args, SHIPPED_KERNEL))


def net_host_checks():
    """The user/host/... names tests/net/netsuite.py reports, in its order."""
    return list(dict.fromkeys(re.findall(r'"(user/host/[\w-]+)"', read_text(NETSUITE))))


def net_listing(args):
    checks = ["boot"] + re.findall(r'prefix \+ "/([\w-]+)"', read_text(NETSUITE))
    return [f"net/{nic}/{check}" for nic in NET_NICS for check in dict.fromkeys(checks)]


@group("net", net_listing)
def net_jobs(args, reporter):
    """the OS (the shipped kernel) with an e1000, then a virtio-net NIC on
    QEMU's user network, httpd's port forwarded to 127.0.0.1: files
    byte-identical (curl), keep-alive, errors, hostile clients, a wrk load
    (bodies checked, free frames back where they were), interrupt/polling
    switches during downloads, ping, httpget, accounting (tests/net/);
    skipped while the kernel has no network stack."""
    for tool in ("curl", "wrk"):
        if not shutil.which(tool):
            reporter.report(Result("net", "FAIL", 0.0, None, f"no {tool}: run make deps"))
            return []
    if missing(in_build(args, SHIPPED_KERNEL), reporter, "net", "run make kernel") or \
            missing(in_build(args, INITRD), reporter, "net", "run make initrd"):
        return []
    return [lambda n=n: run_net(args, reporter, n) for n in NET_NICS]


# ---------------------------------------------------------------- trace stream


def trace_listing(args):
    sys.path.insert(0, os.path.join(ROOT, "tests", "trace"))
    import capture
    return [f"trace/{check}" for check in
            capture.CHECKS + capture.TCP_CHECKS + capture.FLIGHT_CHECKS + capture.MARK_CHECKS +
            capture.BROKEN_CHECKS]


def run_trace_capture(args, reporter):
    sys.path.insert(0, os.path.join(ROOT, "tests", "trace"))
    import capture
    capture.run_capture(os.path.join(ROOT, args.build), in_build(args, SHIPPED_KERNEL),
                        test_log(args, "trace-capture"), net_report(reporter))


def run_trace_tcp(args, reporter):
    sys.path.insert(0, os.path.join(ROOT, "tests", "trace"))
    import capture
    capture.run_tcp_capture(os.path.join(ROOT, args.build), in_build(args, SHIPPED_KERNEL),
                            test_log(args, "trace-tcp"), net_report(reporter))


def run_trace_flight(args, reporter):
    sys.path.insert(0, os.path.join(ROOT, "tests", "trace"))
    import capture
    capture.run_flight_capture(os.path.join(ROOT, args.build), in_build(args, SHIPPED_KERNEL),
                               test_log(args, "trace-flight"), net_report(reporter))


def run_trace_marks(args, reporter):
    sys.path.insert(0, os.path.join(ROOT, "tests", "trace"))
    import capture
    capture.run_marks_capture(os.path.join(ROOT, args.build), in_build(args, SHIPPED_KERNEL),
                              test_log(args, "trace-marks"), net_report(reporter))


def run_trace_broken_httpd(args, reporter):
    sys.path.insert(0, os.path.join(ROOT, "tests", "trace"))
    import capture
    capture.run_broken_httpd_capture(os.path.join(ROOT, args.build),
                                     in_build(args, SHIPPED_KERNEL),
                                     test_log(args, "trace-broken-httpd"), net_report(reporter))


@group("trace", trace_listing)
def trace_jobs(args, reporter):
    """the trace stream end to end (tests/trace/capture.py): the OS (the
    shipped kernel, e1000, a virtio console port) serves a file while
    tools/mscope records the kernel's events and net.*, vfs.* over the port;
    babeltrace2 must read the directory, the request's join points must come
    in order with increasing timestamps, the counts must add up, names must
    travel, and the Chrome JSON must pass the structural check; then an
    aspect is linked, relinked and unlinked over the same port (mscope
    aspect); the analyzer's checks (docs/ANALYSIS.md); and a capture over TCP
    (trace_tcp=PORT, mscope record --attach HOST:PORT); a flight-recorder
    capture (mscope record --flight); marks whose data stops short of a
    word ending packets (mscope and babeltrace2 read them without a
    complaint); and the deliberately broken httpd
    (httpd-slow) traced by name in a stacks-only capture, where mscope
    stacks must show the function that breaks it."""
    if missing(in_build(args, SHIPPED_KERNEL), reporter, "trace", "run make kernel") or \
            missing(in_build(args, INITRD), reporter, "trace", "run make initrd"):
        return []
    return [lambda: run_trace_capture(args, reporter), lambda: run_trace_tcp(args, reporter),
            lambda: run_trace_flight(args, reporter), lambda: run_trace_marks(args, reporter),
            lambda: run_trace_broken_httpd(args, reporter)]


# ---------------------------------------------------------------- main


def groups_help():
    """The images the groups boot and the groups' docstrings, for --help."""
    images = (f"What the groups boot: the shipped kernel {SHIPPED_KERNEL}, the test kernel "
              f"{TEST_KERNEL}, the self-test ISO {SELFTEST_ISO}.").replace("{build}", "<build>")
    lines = textwrap.wrap(images, 79, break_on_hyphens=False) + [
        "", "Groups (each can run alone with --only; --list shows their tests):"]
    for g in GROUPS.values():
        doc = g.doc.splitlines()
        lines.append(f"  {g.name:<6} {doc[0]}")
        lines += [" " * 9 + line for line in doc[1:]]
    return "\n".join(lines)


def list_tests(args):
    """Each group, the first sentence of its docstring, then its tests."""
    for g in GROUPS.values():
        summary = " ".join(g.doc.split()).split(". ")[0].rstrip(".")
        print(textwrap.fill(f"{g.name}: {summary}", 100, subsequent_indent="    "))
        for line in g.listing(args):
            print(textwrap.fill(line, 100, initial_indent="  ", subsequent_indent="      "))


def run_group(jobs):
    with concurrent.futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        for future in [pool.submit(job) for job in jobs]:
            future.result()


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, epilog=groups_help(),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default="build", help="build directory (default: build)")
    p.add_argument("--only", choices=list(GROUPS), action="append", metavar="GROUP",
                   help="run one group (may be repeated): " + ", ".join(GROUPS))
    p.add_argument("--list", action="store_true", help="list the groups and their tests, and exit")
    return p.parse_args()


def main():
    args = parse_args()
    os.chdir(ROOT)
    if args.list:
        list_tests(args)
        return 0
    os.makedirs(os.path.join(args.build, "test-logs"), exist_ok=True)
    reporter = Reporter()
    start = time.monotonic()
    for g in GROUPS.values():
        if not args.only or g.name in args.only:
            run_group(g.jobs(args, reporter))
    print(f"# {time.monotonic() - start:.0f}s, logs in {args.build}/test-logs/")
    print(reporter.summary())
    return 1 if reporter.counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
