"""docs/ASPECTS.md's whole loop, host half and guest half, as a reader types it.

Takes the page's own text: the C example of section 1 becomes opens.c, the
gcc line of "The whole loop on one page" builds it on the host, the Makefile's
initrd rule with ASPECTS= (what `make run ASPECTS="opens.o"` runs before it
boots) puts it into an initrd of its own, the shipped kernel boots that
initrd, and each command of the page's in-OS block is typed at the shell and
checked against what the page's comment says it prints.

    results = run(build, log)   # [(name, ok, detail)]
"""
import os
import re
import shlex
import subprocess
import tempfile

from guest import Guest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOC = os.path.join(ROOT, "docs", "ASPECTS.md")

# What each in-OS line of the page must print (a line added to the page
# without an entry here fails: the page and its test move together).
EXPECTED = {
    "scopectl list 'vfs.*'": r"vfs\.open\(.*\) -> int",
    "scopectl load /aspects/opens.o": r"scopectl: loaded aspect 'opens'",
    "scopectl link opens --binding direct": r"scopectl: linked 'opens' \(direct\)",
    "ls /; cat /etc/motd > /dev/null": r"etc",
    "scopectl counter opens ls": r"opens ls [1-9]\d*\n",
    "scopectl relink opens --binding shm": r"scopectl: relinked 'opens' \(shm\)",
    "scopectl stats opens": r"opens state=live binding=shm events=\d+",
    "scopectl unlink opens; scopectl unload opens": r"unlinked 'opens'.*unloaded 'opens'",
}


def blocks(text, language, after):
    """The ``` blocks of language that follow the heading after, in order."""
    start = text.index(after)
    return re.findall(r"```" + language + r"\n(.*?)```", text[start:], re.S)


def doc_parts():
    """(the C example, the gcc command, the in-OS lines) from the page."""
    with open(DOC) as f:
        text = f.read()
    loop = blocks(text, "sh", "## The whole loop on one page")
    host = loop[0].replace("\\\n", " ")
    gcc = next(line for line in host.splitlines() if line.strip().startswith("gcc"))
    guest_lines = [line.split("  #")[0].strip() for line in loop[1].strip().splitlines()]
    example = blocks(text, "c", "## 1. Write it")[0]
    return example, gcc.split("  #")[0].strip(), guest_lines


def build_object(gcc, source_dir):
    """Runs the page's gcc line on the page's example, in the checkout (its
    -I is relative to it).  Returns (the object's path, error text or "")."""
    words = shlex.split(gcc)
    words = [os.path.join(source_dir, w) if w in ("opens.c", "opens.o") else w for w in words]
    proc = subprocess.run(words, cwd=ROOT, capture_output=True, text=True)
    path = os.path.join(source_dir, "opens.o")
    return path, proc.stderr if proc.returncode else ""


def build_initrd(build, obj, initrd):
    """The Makefile's initrd rule with ASPECTS= (make run's), into initrd."""
    proc = subprocess.run(["make", "-s", f"BUILD={build}", f"INITRD={initrd}",
                           f"ASPECTS={obj}", initrd], cwd=ROOT, capture_output=True, text=True)
    return proc.stdout + proc.stderr if proc.returncode else ""


def check(results, name, ok, detail=""):
    results.append(("aspects-doc/" + name, bool(ok), "" if ok else detail))


def run(build, log):
    results = []
    example, gcc, guest_lines = doc_parts()
    with tempfile.TemporaryDirectory(prefix="aspectloop-") as tmp:
        with open(os.path.join(tmp, "opens.c"), "w") as f:
            f.write(example)
        obj, error = build_object(gcc, tmp)
        check(results, "host-gcc-builds-the-example", not error and os.path.exists(obj), error)
        if error:
            return results
        initrd = os.path.join(tmp, "initrd.cpio")
        error = build_initrd(build, obj, initrd)
        listed = subprocess.run(["cpio", "-it", "--quiet"], stdin=open(initrd, "rb"),
                                capture_output=True, text=True).stdout if not error else ""
        check(results, "make-aspects-puts-it-in-the-initrd", "aspects/opens.o" in listed,
              error or listed[-500:])
        if "aspects/opens.o" not in listed:
            return results
        guest = Guest(build, "none", {}, log, timeout=240, initrd=initrd)
        try:
            from guest import PROMPT
            if not guest.wait_for(PROMPT, 120):
                check(results, "boot", False, "no shell prompt")
                return results
            for line in guest_lines:
                out = guest.run(line) or ""
                pattern = EXPECTED.get(line)
                ok = pattern and re.search(pattern, out, re.S)
                check(results, "os " + line, ok,
                      f"gave {out!r}" if pattern else "no check for this line of the page")
        finally:
            guest.stop()
    return results
