"""make fuzz's system call part: boots the shipped kernel (no NIC), types
`sysfuzz CALLS SEED` at the user shell and waits for its summary line.
Passes when sysfuzz reports no hang and the kernel did not panic; the
console is kept in <build>/test-logs/sysfuzz.log (a hang names the seed that
reproduces it: `sysfuzz 2000 SEED`).

    python3 tests/fuzz/sysfuzz.py --build build --calls 1000000 --seed 7
"""
import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "net"))
from guest import PROMPT, Guest  # noqa: E402

SUMMARY = re.compile(r"# sysfuzz: (\d+) calls in (\d+) batches .*, (no hang, no panic|a hang)")
PROGRESS = re.compile(r"# sysfuzz: (\d+) calls so far, (\d+) batches")
PANIC = re.compile(r"panic|PANIC")


def wait_for_summary(guest, seconds):
    """The summary line, waiting up to seconds; the console log is written
    every half minute meanwhile, so a long run can be followed (and, if it is
    stopped, shows how far it got)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = guest.wait_for(SUMMARY, min(30, deadline - time.monotonic()))
        with guest.lock, open(guest.log, "w") as f:
            f.write(guest.text)
        if found or guest.proc.poll() is not None:
            return found
    return None


def how_far(text):
    """The last progress line's calls and batches, as text."""
    last = None
    for last in PROGRESS.finditer(text):
        pass
    return f"{last.group(1)} calls in {last.group(2)} batches" if last else "no progress line"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--calls", type=int, default=1000000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    log_dir = os.path.join(args.build, "test-logs")
    os.makedirs(log_dir, exist_ok=True)
    seconds = max(600, args.calls // 200)  # ~1000 calls/s under TCG, with room
    guest = Guest(args.build, "none", {}, os.path.join(log_dir, "sysfuzz.log"),
                  timeout=seconds + 120)
    start = time.monotonic()
    try:
        if not guest.wait_for(PROMPT, 120):
            print("sysfuzz: no shell prompt")
            return 1
        guest.type(f"sysfuzz {args.calls} {args.seed}")
        found = wait_for_summary(guest, seconds)
    finally:
        guest.stop()
    took = time.monotonic() - start
    if not found:
        what = "a kernel panic" if PANIC.search(guest.text) else "no summary (hang?)"
        print(f"sysfuzz: {what} after {took:.0f} s, reached {how_far(guest.text)}; "
              f"console in {guest.log}")
        return 1
    print(f"sysfuzz: {found.group(1)} calls in {found.group(2)} batches, {found.group(3)}, "
          f"{took:.0f} s (seed {args.seed})")
    return 0 if found.group(3).startswith("no hang") and int(found.group(1)) >= args.calls else 1


if __name__ == "__main__":
    sys.exit(main())
