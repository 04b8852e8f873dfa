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
PANIC = re.compile(r"panic|PANIC")


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
        found = guest.wait_for(SUMMARY, seconds)
    finally:
        guest.stop()
    took = time.monotonic() - start
    if not found:
        what = "a kernel panic" if PANIC.search(guest.text) else "no summary (hang?)"
        print(f"sysfuzz: {what} after {took:.0f} s; console in {guest.log}")
        return 1
    print(f"sysfuzz: {found.group(1)} calls in {found.group(2)} batches, {found.group(3)}, "
          f"{took:.0f} s (seed {args.seed})")
    return 0 if found.group(3).startswith("no hang") and int(found.group(1)) >= args.calls else 1


if __name__ == "__main__":
    sys.exit(main())
