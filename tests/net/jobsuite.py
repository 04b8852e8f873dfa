"""Job control and the shell, typed at the OS's console as a user would.

Boots the shipped system with a NIC (so /etc/rc starts httpd as a daemon),
links an aspect with the shm binding (so a monitor process runs), and checks
that ^C typed at the console ends the foreground program only: httpd and the
monitor live on.  Then ^Z, jobs, bg, kill of a background job, kill -l, and
the shell's lists, conditionals, variables and redirections, its line editor
(history on the arrow keys, Tab completion), scopectl's answers, and top's q.

    results = run(build, log)   # [(name, ok, detail)]
"""
import http.server
import os
import re
import shutil
import tempfile
import threading
import time

from guest import Guest

CTRL_C, CTRL_Z = "\x03", "\x1a"


def processes(guest, with_wait=False):
    """{pid: (state, name)} from ps; with_wait: {pid: (state, wait channel, name)}."""
    text = guest.run("ps") or ""
    found = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 5 and fields[0].isdigit():
            found[int(fields[0])] = ((fields[2], fields[3], fields[-1]) if with_wait
                                     else (fields[2], fields[-1]))
    return found


def pids_named(table, name):
    return [pid for pid, (_, n) in table.items() if n == name]


def press(guest, key):
    """Types one control key (no Enter); returns the text up to the next prompt."""
    with guest.lock:
        mark = len(guest.text)
    guest.proc.stdin.write(key.encode())
    guest.proc.stdin.flush()
    from guest import PROMPT
    m = guest.wait_for(PROMPT, 30, mark)
    with guest.lock:
        return guest.text[mark:m.start() + 1] if m else None


# A bound that only guards against a hang: waiting for a program's marker,
# a respawned shell, never decides a result by how long it took.
HANG_GUARD = 60
READY = re.compile(r"\nready (\d+)\n")


def start_foreground(guest, line):
    """Types line and waits for what it prints once it runs (its marker, a
    regular expression; hang-guarded).  Why: a key typed before the program
    owns the console is a plain byte, or reaches the shell.  The shell's
    stage takes the console itself before exec (sh.c run_stage), so a marker
    the program prints says it has it.  Returns the match, or None."""
    with guest.lock:
        mark = len(guest.text)
    guest.type(line)
    return guest.wait_for(READY, HANG_GUARD, mark + len(line))


def foreground_sleep(guest):
    """A foreground `sleep 100` that owns the console: sh -c prints its pid
    (which exec keeps) and execs sleep.  Returns the pid, or None."""
    m = start_foreground(guest, "sh -c 'echo ready $$; exec sleep 100'")
    return int(m.group(1)) if m else None


def shell_pid(guest):
    """The pid of the shell at the console (`echo $$`), or None."""
    m = re.search(r"\n(\d+)\n", guest.run("echo $$", timeout=HANG_GUARD) or "")
    return int(m.group(1)) if m else None


# (name, line, pattern its output must match)
SHELL_LINES = [
    ("semicolon", "echo one; echo two", r"one\ntwo\n"),
    ("and-or", "false && echo no; false || echo yes; true && echo yes2", r"^(?!.*no\n).*yes\nyes2\n"),
    ("status", "false; echo status $?", r"status 1\n"),
    ("variables", "X=5; export Y=6; echo \"x=$X y=${Y}\" '$X'", r"x=5 y=6 \$X\n"),
    ("redirect", "echo hello > /f; echo more >> /f; cat < /f", r"hello\nmore\n"),
    ("stderr", "cat /nonexistent 2>&1 | cat > /e; cat /e", r"nonexistent"),
    ("builtin-redirect", "pwd > /p; cat /p", r"/\n"),
    ("comment", "echo visible # echo hidden", r"visible\n(?!hidden)"),
    ("script", "echo 'echo script $1' > /s; sh /s arg", r"script arg\n"),
    ("kill-l", "kill -l", r"15 TERM"),
    ("exec-keeps-the-pid", "sh -c 'echo $$; exec sh -c \"echo \\$\\$\"'", r"\n(\d+)\n\1\n"),
    ("exec-ends-a-script", "sh -c 'exec echo replaced; echo not-reached'; echo st=$?",
     r"\nreplaced\nst=0\n"),
    ("exec-failure-ends-a-script", "sh -c 'exec /nothing; echo not-reached'; echo st=$?",
     r"\nsh: /nothing: No such file or directory\nst=127\n"),
    ("exec-redirects-the-shell", "sh -c 'exec > /x; echo into-x; echo more'; cat /x",
     r"\ninto-x\nmore\n"),
    ("exec-leaks-no-descriptor", "sh -c 'exec sh -c \"echo leaked >&3\" 2>/dev/null' || echo closed",
     r"\nclosed\n"),
    ("pipeline-stage-limit", "sh -c 'echo x" + " | cat" * 8 + "'; sh -c 'echo x | | cat'",
     r"\nsh: a pipeline has at most 8 commands\nsh: missing command before \|\n"),
    ("export-name-alone", "NOEQ=1; export NOEQ; echo st=$?; export 9x; echo st=$?",
     r"\nst=0\nexport: 9x: not a variable name\nst=1\n"),
    ("script-file-not-inherited",
     "echo \"sh -c 'echo leaked >&3' 2>/dev/null || echo closed\" > /c.sh; sh /c.sh",
     r"\nclosed\n"),
    ("backslash-in-double-quotes", "echo \"C:\\temp\" \"a\\$b\" 'c\\d' e\\f",
     r"\nC:\\temp a\$b c\\d ef\n"),
    ("jobs-reports-a-job-reaped-meanwhile", "true & sleep 2; jobs",
     r"^(?!.*running).*\[\d+\] done, status 0  true\n"),
    ("signal-numbers-are-linux", "sh -c 'kill -USR1 $$'; echo st=$?",
     r"killed by signal 10\nst=138\n"),
    ("assignment-before-command",
     "FOO=bar sh -c 'echo foo=$FOO'; echo after=$FOO; HOME=/etc cd; pwd; cd /; echo home=$HOME",
     r"\nfoo=bar\nafter=\n/etc\nhome=\S*\n"),
    ("descriptor-digit-redirects", "echo one 1>/o1; echo two 1>>/o1; cat 0</o1; cat /none 2>/o2 1>&2; cat /o2",
     r"\none\ntwo\n.*none"),
    ("script-background-pid", "sh -c 'sleep 1 & echo bg=$!'", r"\n\[1\] (\d+)\nbg=\1\n"),
    ("argument-count-and-name",
     "echo 'echo n=$# z=$0 a=$1' > /a.sh; sh /a.sh p q; sh -c 'echo $# $0 $1' x y; echo i=$#",
     r"\nn=2 z=/a\.sh a=p\n1 x y\ni=0\n"),
    ("foreground-needs-no-job-slot", "sh -c '" + "sleep 3 & " * 16 + "echo ran; kill -l | cat'",
     r"\nran\n.*15 TERM"),
    ("script-long-line-dropped",
     "X=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
     "xxx; Y=$X$X$X$X$X$X$X$X$X$X$X$X; echo \"echo $Y; echo INJECTED\" > /l; echo 'echo end' >> /l; "
     "sh /l",
     r"^(?!.*INJECTED\n)\nsh: line too long\nend\n"),
    ("script-line-of-1024-bytes-runs",
     "X=" + "x" * 101 + "; echo \"true $X$X$X$X$X$X$X$X$X$X; echo ok\" > /l1024; "
     "echo 'echo end' >> /l1024; sh /l1024",
     r"\nok\nend\n"),  # "true " + 1,010 x + "; echo ok": 1,024 bytes and its newline
    ("script-background-job-reads-none-of-the-script",
     "echo 'cat > /bg-in &' > /bg; echo 'echo line2' >> /bg; echo 'echo line3' >> /bg; "
     "echo 'echo line4' >> /bg; sh < /bg; cat /bg | sh; echo end",
     r"\nline2\nline3\nline4\n\[1\] \d+\nline2\nline3\nline4\nend\n"),
    ("stdin-pipe-exec-leaves-the-rest",
     "echo 'exec cat' > /in1; echo after-exec >> /in1; cat /in1 | sh", r"\nafter-exec\n"),
    ("stdin-pipe-command-reads-the-rest",
     "echo cat > /in2; echo read-by-cat >> /in2; cat /in2 | sh", r"\nread-by-cat\n"),
    ("stdin-file-exec-leaves-the-rest", "sh < /in1", r"\nafter-exec\n"),
    ("stdin-file-command-reads-the-rest", "sh < /in2; echo 'echo a; echo b' | sh",
     r"\nread-by-cat\na\nb\n"),
    ("builtin-redirect-above-2-closed-after", "sh -c 'true 4>/t4; echo leaked 2>/dev/null >&4 || echo closed'",
     r"\nclosed\n"),
    ("builtin-redirect-above-2-put-back",
     "sh -c 'exec 4>/a4; pwd 4>/b4; echo back >&4'; cat /a4", r"\nback\n"),
    ("script-survives-its-redirections",
     "echo 'exec 3</dev/null' > /r.sh; echo 'true " + "x" * 80 + "' > /p; cat /p /p > /q; "
     "cat /q /q > /p; cat /p /p > /q; cat /q /q > /p; cat /p /p > /q; cat /q /q > /p; "
     "cat /p >> /r.sh; echo 'echo script-end' >> /r.sh; sh /r.sh",
     r"\nscript-end\n"),  # 64 lines of 86 bytes: more than one 4 KiB read of the script
    ("stdin-turning-into-a-pipe-keeps-what-was-read",
     "echo 'exec 0>&3' > /f3; echo 'echo one' > /g3; echo 'echo two' >> /g3; "
     "cat /g3 | sh 3>&0 < /f3", r"\none\ntwo\n"),
    ("scopectl-list-pattern", "scopectl list 'vfs.op*'", r"vfs\.open\(.*\) -> "),
    ("scopectl-list-nothing", "scopectl list 'nothing.*' || echo refused",
     r"no join point matches 'nothing\.\*'\nrefused"),
    ("scopectl-unknown-name", "scopectl unlink nosuch || echo refused",
     r"no aspect called 'nosuch'.*\nrefused"),
    ("scopectl-show-live", "ls /www > /dev/null; scopectl show latency",
     r"aspect latency: live shm\n.*histogram vfs\.\w+_ns +count \d+ mean [\d.]+ [num]?s "
     r"p50<=[\d.]+ [num]?s p90<=[\d.]+ [num]?s p99<=[\d.]+ [num]?s max<=[\d.]+ [num]?s\n"),
    ("scopectl-counter-histogram", "scopectl counter latency vfs.open_ns",
     r"histogram vfs\.open_ns +count \d+ mean .* p50<="),
    ("scopectl-says-what-it-did", "scopectl unlink latency; scopectl unload latency",
     r"unlinked 'latency'.*unloaded 'latency'"),
    ("scopectl-show-unloaded", "scopectl show latency",
     r"aspect latency: unloaded; its last values\n.*histogram vfs\.\w+_ns +count \d+"),
    ("scopectl-clear", "scopectl clear latency; scopectl show latency || echo gone",
     r"cleared the values of 'latency'.*nor values kept of one.*\ngone"),
    ("history-line", "echo history-check", r"history-check\n"),
    ("history-arrow-up", "\x1b[A", r"history-check\n"),
    ("tab-command", "ech\t tabbed", r"tabbed\n"),
    ("tab-path", "cat /etc/mo\t", r"Welcome to microScope"),
    ("ctrl-c-drops-line", "echo dropped\x03echo kept", r"kept\n"),
    ("httpd-log-in-a-file", "httpget http://127.0.0.1/small.txt > /dev/null; tail -n 1 /tmp/httpd.log",
     r"httpd: 127\.0\.0\.1 GET /small\.txt 200 "),
    ("dmesg", "dmesg > /tmp/d; tail -n 400 /tmp/d", r"\] monitor: pid \d+ attached"),
    ("kcmd-redirect", "kcmd uptime > /k; echo saved; cat /k | cat", r"saved\n.*up \d+\.\d+ s"),
    ("uscope-program", "uscope trace cat --mode 2 --budget 3; uscope list; uscope untrace cat",
     r"tracing cat, mode 2, budget 3, events \* \(slot \d+\)\n"
     r"cat +mode 2 budget 3 events \* \(every user\)\nuscope: cat untraced"),
    ("uscope-program-refuses", "uscope trace cat --mode 9 || echo refused",
     r"cannot trace cat: .*\nrefused"),
    ("glob-paths", "echo /www/s*.txt /etc/[gm]* /*/motd /e?c/pass[a-z]d",
     r"\n/www/small\.txt /etc/group /etc/motd /etc/motd /etc/passwd\n"),
    ("glob-negation-and-ranges", "echo /etc/[!a-o]asswd /etc/[^p-z]* /etc/[q-s]?",
     r"\n/etc/passwd /etc/group /etc/motd /etc/rc\n"),
    ("glob-relative-and-an-argument", "cd /etc; echo pass* m*; cat mo*; cd /",
     r"\npasswd motd\nWelcome to microScope"),
    ("glob-no-match-stays", "echo /www/*.none /nodir/* x[", r"\n/www/\*\.none /nodir/\* x\[\n"),
    ("glob-unreadable-directory", "echo /etc/motd/* /etc/motd/*/x; echo st=$?",
     r"\n/etc/motd/\* /etc/motd/\*/x\nst=0\n"),
    ("glob-quoted-is-literal", "echo '/www/*' \"/www/*\" /www/\\* \"/w\"ww/s*.txt",
     r"\n/www/\* /www/\* /www/\* /www/small\.txt\n"),
    ("glob-leading-dot-only-explicitly",
     "echo h > /tmp/.gdot; echo v > /tmp/gvis; echo /tmp/*dot /tmp/.*dot /tmp/*vis",
     r"\n/tmp/\*dot /tmp/\.gdot /tmp/gvis\n"),
    ("substitution-fields-and-quotes", "echo $(echo one   two) \"$(echo 'a  b')\" x$(echo)y",
     r"\none two a  b xy\n"),
    ("substitution-nested", "echo $(echo $(echo deep) er)", r"\ndeep er\n"),
    ("substitution-backquoted", "echo `echo one   two` \"`echo 'a  b'`\" `echo \\`echo in\\``; "
     "sh -c 'echo `echo x'; echo st=$?", r"\none two a  b in\nsh: unterminated `\nst=2\n"),
    ("substitution-trailing-newlines", "echo \"[$(echo a; echo; echo)]\"", r"\n\[a\]\n"),
    ("substitution-status", "X=$(false); echo st=$?; X=$(true); echo st=$? x=$X",
     r"\nst=1\nst=0 x=\n"),
    ("substitution-splits-into-words", "for w in $(echo a b) c; do echo w=$w; done",
     r"\nw=a\nw=b\nw=c\n"),
    ("substitution-output-bounded", "echo $(cat /bin/sh) | cat; echo st=$?",
     r"\nsh: command substitution: output over 65536 bytes refused\nst=2\n"),
    ("substitution-unterminated", "sh -c 'echo ran $(echo x'; echo st=$?",
     r"^(?!.*ran).*\nsh: unterminated \$\(\nst=2\n"),
    ("if-elif-else", "if false; then echo a; elif true; then echo b; else echo c; fi; "
     "if false; then echo d; fi; echo st=$?", r"\nb\nst=0\n"),
    ("while-and-until", "echo > /wflag; while cat /wflag > /dev/null 2>&1; do echo round; "
     "mv /wflag /wdone; done; until cat /wdone > /dev/null; do echo never; done; echo end",
     r"\nround\nend\n"),
    ("nested-loops-break-continue",
     "for i in 1 2 3; do for j in a b c; do if true; then echo $i$j; break; fi; done; done; "
     "for i in 1 2; do for j in a b; do echo $i$j; continue 2; echo no; done; done; "
     "for i in 1 2; do for j in a b; do echo $i$j; break 2; done; done; echo st=$?",
     r"\n1a\n2a\n3a\n1a\n2a\n1a\nst=0\n"),
    ("break-outside-a-loop", "break; echo st=$?", r"\nbreak: only meaningful in a loop\nst=1\n"),
    ("compound-in-a-pipeline-and-redirected",
     "for x in b a; do echo $x; done | cat; if true; then echo into; fi > /cf; cat /cf",
     r"\nb\na\ninto\n"),
    ("for-over-the-arguments", "sh -c 'for a; do echo arg=$a; done' z p q", r"\narg=p\narg=q\n"),
    ("syntax-error-runs-nothing",
     "sh -c 'echo ran; fi'; echo st=$?; sh -c 'echo ran; while true; echo x; done'; echo st=$?; "
     "sh -c 'for 9 in a; do echo ran; done'; echo st=$?; sh -c 'if true; then echo ran'; echo st=$?",
     r"^(?!.*ran).*\nsh: syntax error: `fi' unexpected\nst=2\n"
     r"sh: syntax error: `done' where `do' belongs\nst=2\n.*`9' is no name.*\nst=2\n"
     r"sh: `if' is not closed at the end of the input\nst=2\n"),
    ("script-compound-over-lines",
     "echo 'for i in a b' > /m.sh; echo do >> /m.sh; echo '  echo i=$i' >> /m.sh; "
     "echo done >> /m.sh; echo 'if true' >> /m.sh; echo 'then echo yes' >> /m.sh; "
     "echo fi >> /m.sh; sh /m.sh; cat /m.sh | sh",
     r"\ni=a\ni=b\nyes\ni=a\ni=b\nyes\n"),
    ("script-ending-inside-a-compound",
     "echo 'echo first' > /o.sh; echo 'if true; then' >> /o.sh; echo 'echo inside' >> /o.sh; "
     "sh /o.sh; echo st=$?",
     r"^(?!.*inside).*\nfirst\nsh: line 2: `if' is not closed at the end of the input\nst=2\n"),
    ("script-syntax-error-drops-the-compound",
     "echo 'while true; do do' > /e.sh; echo 'echo inside' >> /e.sh; echo done >> /e.sh; "
     "echo 'echo after' >> /e.sh; sh /e.sh",
     r"^(?!.*inside).*\nsh: line 1: syntax error: `do' unexpected\nafter\n"),
    ("script-compound-over-the-limit",
     "echo 'for i in 1; do' > /big.sh; X=" + "x" * 100 + "; echo \"echo $X$X$X$X$X$X$X$X$X\" > /l1; "
     "cat /l1 /l1 /l1 /l1 /l1 /l1 /l1 /l1 > /l8; cat /l8 /l8 > /l16; cat /l16 /l16 >> /big.sh; "
     "echo 'echo INSIDE' >> /big.sh; echo done >> /big.sh; echo 'echo after' >> /big.sh; sh /big.sh",
     r"^(?!.*INSIDE)(?!.*xxxx).*\nsh: a command over 16384 bytes is refused\nafter\n"),
    # last: it leaves /echo, a link to a directory, for a PATH that names /
    ("exec-skips-a-directory-in-path",
     "ln -s /tmp /echo; sh -c 'PATH=/:/bin echo by-command; PATH=/:/bin exec echo by-exec'; "
     "echo st=$?", r"\nby-command\nby-exec\nst=0\n"),
]


def readme_programs():
    """The programs README.md's "Programs in `/bin`:" paragraph names."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "README.md")) as f:
        text = f.read()
    start = text.find("Programs in `/bin`:")
    paragraph = text[start:text.find("\n\n", start)]
    return set(re.findall(r"`([\w-]+)`", re.sub(r"\([^)]*\)", "", paragraph)))


# What each console example of README.md must print (a line of the example
# with no entry here fails: an example added to the README needs its check).
README_EXAMPLES = {
    "kcmd jp list 'vfs.*'": r"vfs\.open",
    "kcmd jp attach 'vfs.*' count": r"vfs\.",
    "ls /bin; kcmd jp stats 'vfs.*'": r"kcmd\n.*vfs\.\w+",
    "kcmd jp detach 'vfs.*'": r"vfs\.",
    "scopectl load /aspects/latency.o": r"loaded aspect 'latency'",
    "scopectl link latency --binding direct": r"linked 'latency' \(direct\)",
    "scopectl stats": r"latency state=live binding=direct",
    "scopectl relink latency --binding msg": r"relinked 'latency' \(msg\)",
    "scopectl unlink latency": r"unlinked 'latency'",
}
FAILURE_WORDS = re.compile(r"usage:|error|unknown|not found|No such|refused")


def readme_examples():
    """The commands of README.md's block under "Watching the kernel from the shell"."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "README.md")) as f:
        text = f.read()
    start = text.find("```sh", text.find("### Watching the kernel from the shell"))
    block = text[start + len("```sh"):text.find("```", start + 5)]
    return [line.split("  #")[0].strip() for line in block.strip().splitlines()]


def check(results, name, ok, detail=""):
    results.append(("jobs/" + name, bool(ok), "" if ok else detail))


def sigaction_calls_around(guest, line):
    """How many rt_sigaction calls the system made between two readings of
    the counter with line between them (the second kcmd's own child adds
    its resets), or None."""
    reading = "kcmd jp stats sys.rt_sigaction"
    out = guest.run(f"{reading}; {line}; {reading}") or ""
    counts = [int(n) for n in re.findall(r"sys\.rt_sigaction\s+(\d+)", out)]
    return counts[1] - counts[0] if len(counts) == 2 else None


CONTINUATION = re.compile(r"\n> $")


def type_compound(guest, lines):
    """Types a compound command spread over lines: each but the last must
    get the "> " prompt (the command is not closed yet), the last one the
    shell's prompt.  Returns (how many continuation prompts came, what the
    last line gave)."""
    prompts = 0
    for line in lines[:-1]:
        with guest.lock:
            mark = len(guest.text)
        guest.type(line)
        if not guest.wait_for(CONTINUATION, HANG_GUARD, mark + len(line)):
            break
        prompts += 1
    return prompts, guest.run(lines[-1]) or ""


def check_compound_over_lines_at_the_console(guest, results):
    """An open compound command makes the shell read more lines with a "> "
    prompt, then runs it whole; ^C at a "> " prompt drops the whole command."""
    prompts, out = type_compound(guest, ["for i in a b", "do", "  echo got-$i", "done"])
    check(results, "sh-compound-over-lines-at-the-console",
          prompts == 3 and re.search(r"\ngot-a\ngot-b\n", out), f"{prompts} prompts, {out!r}")
    with guest.lock:
        mark = len(guest.text)
    guest.type("if true; then echo NOT-RUN")
    continued = guest.wait_for(CONTINUATION, HANG_GUARD, mark)
    dropped = press(guest, CTRL_C) if continued else None
    line = "echo fresh; fi"
    after = guest.run(line) or ""
    after = after[len(line):] if after.startswith(line) else after
    check(results, "sh-ctrl-c-drops-an-open-compound",
          continued and dropped is not None and "NOT-RUN" not in dropped + after
          and "fresh" not in after and "syntax error: `fi' unexpected" in after,
          f"{dropped!r} then {after!r}")


def check_ctrl_c_ends_a_loop(guest, results):
    """^C typed while a foreground loop runs ends the program and the loop,
    as in bash: no next round, nothing after the loop on its line.  A next
    round's marker or the prompt, whichever comes first, answers; a loop
    that went on gets another ^C, so that the rest of the suite still runs."""
    from guest import PROMPT
    m = start_foreground(guest, "for i in 1 2; do sh -c 'echo ready $$; exec sleep 100'; "
                         "echo round-$i; done; echo after-loop")
    answer = None
    if m:
        with guest.lock:
            mark = len(guest.text)
        guest.proc.stdin.write(CTRL_C.encode())
        guest.proc.stdin.flush()
        came = guest.wait_for(re.compile(READY.pattern + "|" + PROMPT.pattern), HANG_GUARD, mark)
        with guest.lock:
            answer = guest.text[mark:came.end()] if came else None
        if answer is not None and READY.search(answer):
            press(guest, CTRL_C)
    check(results, "sh-ctrl-c-ends-a-loop",
          m and answer is not None and "round-" not in answer and "ready" not in answer
          and "after-loop" not in answer, f"started: {bool(m)}, after ^C: {answer!r}")


def check_ctrl_c_ends_a_substitution(guest, results):
    """^C while a command substitution runs ends it and the command it is
    part of (the shell itself ignores SIGINT, its child must not)."""
    m = start_foreground(guest, "echo NOT-RUN $(sh -c 'echo ready $$ >&2; exec sleep 100'); "
                         "echo NOT-RUN-EITHER")
    answer = press(guest, CTRL_C) if m else None
    if m and answer is None:
        guest.run(f"kill {m.group(1)}")
    status = guest.run("echo st=$?") or ""
    check(results, "sh-ctrl-c-ends-a-substitution",
          m and answer is not None and "NOT-RUN" not in answer and "st=130\n" in status,
          f"started: {bool(m)}, after ^C: {answer!r}, then {status!r}")


def check_background_compound_is_one_job(guest, results):
    """A loop run with & is one job (a child shell): jobs lists it, fg brings
    it back, and ^C then ends the whole loop."""
    with guest.lock:
        mark = len(guest.text)
    guest.type("for i in 1 2; do echo ready $i; sleep 100; done &")
    started = guest.wait_for(re.compile(r"ready 1\n"), HANG_GUARD, mark + 60)
    listing = guest.run("jobs") or ""
    with guest.lock:
        mark = len(guest.text)
    guest.type("fg")
    # fg gives the job the console, then prints its text
    resumed = guest.wait_for(re.compile(r"\nfor i in 1 2 ; do echo ready"), HANG_GUARD, mark + 2)
    answer = press(guest, CTRL_C) if resumed else None
    if resumed and answer is None:
        press(guest, CTRL_C)  # the loop went on: end it, for the checks after this one
    after = guest.run("jobs; echo listed") or ""
    check(results, "sh-background-compound-is-one-job",
          started and re.search(r"\[1\] running +\d+  for i in 1 2 ; do", listing) and resumed
          and answer is not None and "ready 2" not in answer and "[1]" not in after,
          f"started: {bool(started)}, jobs: {listing!r}, fg: {bool(resumed)}, "
          f"^C: {answer!r}, then {after!r}")


def check_failing_exec_keeps_signal_actions(guest, results):
    """An interactive shell's exec that runs no program must never reset the
    shell's signal actions: a ^C typed meanwhile would reach the shell.
    Counted: the rt_sigaction calls around a failing exec are those around
    `true`, for names never found and for a directory and a file that is no
    program (both found, neither runnable).  Then ^C must still end only the
    foreground program: the shell's pid is the same after it."""
    guest.run("echo not-a-program > /np; chmod 755 /np")
    guest.run("kcmd jp attach sys.rt_sigaction count")
    around_true = sigaction_calls_around(guest, "true")
    around = {line: sigaction_calls_around(guest, line)
              for line in ("exec nosuchprogram", "exec /nosuchprogram", "exec /tmp", "exec /np")}
    guest.run("kcmd jp detach sys.rt_sigaction")
    shell = shell_pid(guest)
    sleeper = foreground_sleep(guest)
    answer = press(guest, CTRL_C) if sleeper else None
    after = shell_pid(guest)
    check(results, "sh-failing-exec-keeps-signal-actions",
          around_true is not None and all(n == around_true for n in around.values())
          and answer is not None and shell is not None and after == shell,
          f"rt_sigaction calls around true {around_true}, around failing execs {around}; "
          f"^C then: {answer!r}, shell pid {shell} then {after}")


def check_failing_exec_keeps_stopped_jobs(guest, results):
    """An exec that finds no program to run leaves the shell's stopped jobs
    alone: a directory, then a file that is no program (the shell goes on,
    so must its jobs)."""
    guest.run("sh")
    sleeper = foreground_sleep(guest)
    stopped = (press(guest, CTRL_Z) if sleeper else None) or ""
    failed = (guest.run("exec /tmp") or "") + (guest.run("exec /np") or "")
    listing = guest.run("jobs") or ""
    if sleeper:
        guest.run(f"kill -9 {sleeper}")
    guest.run("exit")
    check(results, "sh-failing-exec-keeps-stopped-jobs",
          sleeper and "stopped" in stopped and "/tmp: Is a directory" in failed
          and "/np: Exec format error" in failed and re.search(r"\[1\] stopped", listing),
          f"sleep's pid {sleeper}, {stopped!r}, the execs: {failed!r}, then jobs: {listing!r}")


# A script line over the limit with a NUL byte first, a short line with a
# NUL in it, a last line that must run.
NUL_SCRIPT = b"\0" + b"x" * 1100 + b"; echo INJECTED\necho a\0; echo HIDDEN\necho end\n"


def check_nul_bytes_refused(guest, results):
    """A line holding a NUL byte is refused whole, read from a script or
    from standard input, and a NUL never hides the length of a line over
    the limit.  The script comes from the host (httpget; 10.0.2.2 is the
    host's 127.0.0.1 under slirp): nothing in the OS writes a NUL byte."""
    root = tempfile.mkdtemp(prefix="jobsuite-")
    with open(os.path.join(root, "nul.sh"), "wb") as f:
        f.write(NUL_SCRIPT)
    handler = lambda *a, **k: QuietHandler(*a, directory=root, **k)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        out = guest.run(f"httpget -o /nul.sh http://10.0.2.2:{port}/nul.sh; "
                        "sh /nul.sh; echo st=$?; sh < /nul.sh", timeout=HANG_GUARD) or ""
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(root)
    once = r"sh: line too long\nsh: a NUL byte in a line\nend\n"
    check(results, "sh-nul-byte-refused",
          re.search(r"^(?!.*INJECTED)(?!.*HIDDEN)(?!.*\na\n).*\n" + once + "st=0\n" + once,
                    out, re.S), f"{out!r}")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def check_exec_hangs_up_stopped_jobs(guest, results):
    """A shell that execs leaves no stopped job behind: the job hears SIGHUP
    and SIGCONT before the new program runs (here ps, in the shell's place)."""
    inner = guest.run("sh") or ""
    sleeper = foreground_sleep(guest)
    stopped = (press(guest, CTRL_Z) if sleeper else None) or ""
    listing = guest.run("exec ps") or ""
    state = next((line.split()[2] for line in listing.splitlines()
                  if sleeper and line.split()[:1] == [str(sleeper)]), None)
    check(results, "sh-exec-hangs-up-stopped-jobs",
          sleeper and "stopped" in stopped and "PID" in listing and state != "stopped",
          f"inner shell {inner!r}, sleep's pid {sleeper}, {stopped!r}, then exec ps: {listing!r}")


def check_console_cooked_after_shell_killed(guest, results):
    """The shell killed while it edits a line (the console raw): the shell
    init starts next must run programs on a cooked console (^D ends cat)."""
    old = shell_pid(guest)
    guest.run('sh -c "sleep 2; kill -9 $$" &')
    # The old shell killed, the next one at its prompt: its pid answers.
    deadline, new = time.monotonic() + HANG_GUARD, old
    while old is not None and new in (old, None) and time.monotonic() < deadline:
        time.sleep(0.5)
        new = shell_pid(guest)
    respawned = guest.run("echo respawned") or ""
    ran = start_foreground(guest, "sh -c 'echo ready $$; exec cat'")
    with guest.lock:
        mark = len(guest.text)
    guest.proc.stdin.write(b"typed\r\x04")
    guest.proc.stdin.flush()
    from guest import PROMPT
    ended = guest.wait_for(PROMPT, HANG_GUARD, mark)
    check(results, "sh-console-cooked-after-shell-killed",
          old is not None and new not in (old, None) and "respawned\n" in respawned and ran
          and ended, f"shell pid {old} then {new}, respawned: {respawned!r}, cat ran: "
          f"{bool(ran)}, cat ended by ^D: {bool(ended)}")


def check_foreground_pipeline_on_two_cpus(build, log, results):
    """On two CPUs a pipeline's stages may read the console before the shell
    hands it to their group: each must have it already (never stopped by
    SIGTTIN), and ^D must end `sh -c 'echo go; cat' | cat` (typed once "go"
    says both stages run)."""
    guest = Guest(build, "e1000", {}, log, timeout=180, smp=2)
    answers = []
    try:
        if not guest.boot():
            check(results, "smp2-boot", False, "no httpd line or no prompt")
            return
        from guest import PROMPT
        for _ in range(5):
            # The first stage says "go" through the second once both run.
            with guest.lock:
                mark = len(guest.text)
            line = "sh -c 'echo go; cat' | cat"
            guest.type(line)
            if not guest.wait_for(re.compile(r"\ngo\n"), HANG_GUARD, mark + len(line)):
                answers.append(None)
                break
            with guest.lock:
                mark = len(guest.text)
            guest.proc.stdin.write(b"piped\r\x04")
            guest.proc.stdin.flush()
            ended = guest.wait_for(PROMPT, 20, mark)
            with guest.lock:
                answers.append(guest.text[mark:ended.start() + 1] if ended else None)
            if not ended:
                break
    finally:
        guest.stop()
    check(results, "sh-smp2-foreground-pipeline-owns-the-console",
          answers and all(a is not None and "piped\npiped\n" in a and "stopped" not in a
                          for a in answers), f"{answers}")


def run(build, log):
    results = []
    check_foreground_pipeline_on_two_cpus(build, log + ".smp2", results)
    guest = Guest(build, "e1000", {}, log, timeout=240)
    try:
        if not guest.boot():
            check(results, "boot", False, "no httpd line or no prompt")
            return results
        linked = guest.run("scopectl load /aspects/latency.o; "
                           "scopectl link latency --binding shm") or ""
        before = processes(guest)
        httpd, monitor = pids_named(before, "httpd"), pids_named(before, "monitor")
        check(results, "scopectl-link-says-so", "scopectl: loaded aspect 'latency'" in linked and
              "scopectl: linked 'latency' (shm)" in linked, linked)
        check(results, "daemons-running", httpd and monitor,
              f"httpd {httpd}, monitor {monitor} in {before}; link said {linked!r}")
        waits = processes(guest, with_wait=True)
        check(results, "ps-wait-channels", waits.get(1, ("", ""))[1] == "wait4" and
              httpd and waits.get(httpd[0], ("", "", ""))[0] == "sleeping" and
              waits[httpd[0]][1] in ("accept", "poll", "recv"), f"{waits}")
        check(results, "ps-daemon-parent-is-init",
              (guest.run("ps") or "").count("\n") > 0 and httpd and
              re.search(rf"\n\s*{httpd[0]}\s+1\s", guest.run("ps") or ""), f"{waits}")
        full = guest.run("ps -f") or ""
        check(results, "ps-f-shows-command-lines", "COMMAND" in full and httpd and
              re.search(rf"\n\s*{httpd[0]}\s.*httpd -b -u www -l /tmp/httpd\.log", full),
              full)

        sleeper = foreground_sleep(guest)
        answer = press(guest, CTRL_C) if sleeper else None
        after = processes(guest)
        check(results, "ctrl-c-ends-foreground", answer is not None and sleeper not in after
              and not pids_named(after, "sleep"), f"sleep's pid {sleeper}; after ^C: {after}")
        check(results, "ctrl-c-spares-daemons",
              set(httpd) <= set(after) and set(monitor) <= set(after),
              f"before {before}, after {after}")

        sleeper = foreground_sleep(guest)
        stopped = (press(guest, CTRL_Z) if sleeper else None) or ""
        stop_status = guest.run("echo st=$?") or ""
        check(results, "ctrl-z-status-148", "st=148\n" in stop_status, stop_status)
        table = processes(guest)
        sleeping = [sleeper] if sleeper in table else []
        check(results, "ctrl-z-stops", "stopped" in stopped and sleeping and
              table[sleeper][0] == "stopped", f"{stopped!r}, sleep's pid {sleeper}, {table}")
        resumed = guest.run("bg; jobs") or ""
        check(results, "bg-continues", re.search(r"\[1\] running", resumed), resumed)

        started = guest.run("sleep 100 &") or ""
        m = re.search(r"\[(\d+)\] (\d+)", started)
        ended, table = "", {}
        if m:
            ended = (guest.run(f"kill {m.group(2)}") or "") + (guest.run("jobs") or "")
            table = processes(guest)
        check(results, "kill-ends-background-job", m and int(m.group(2)) not in table and
              "killed by signal 15" in ended, f"{started!r} {ended!r} {table}")
        for pid in sleeping:
            guest.run(f"kill {pid}")

        with guest.lock:
            mark = len(guest.text)
        guest.type("top -d 1")
        # top's first report ends "since boot": it runs and owns the console.
        reported = guest.wait_for(re.compile(r"since boot\n"), HANG_GUARD, mark)
        quit_answer = guest.run("q") if reported else None  # None: no prompt came back
        check(results, "top-quits-on-q", quit_answer is not None and
              not pids_named(processes(guest), "top"), repr(quit_answer))

        listed = set((guest.run("ls /bin") or "").split()[2:])
        named = readme_programs()
        check(results, "readme-bin-list", listed and listed <= named,
              f"in /bin but not in README.md: {sorted(listed - named)}")

        for name, line, pattern in SHELL_LINES:
            out = guest.run(line) or ""
            out = out[len(line):] if out.startswith(line) else out
            check(results, "sh-" + name, re.search(pattern, out, re.S), f"{line!r} gave {out!r}")
        check_compound_over_lines_at_the_console(guest, results)
        check_ctrl_c_ends_a_loop(guest, results)
        check_ctrl_c_ends_a_substitution(guest, results)
        check_background_compound_is_one_job(guest, results)
        check_failing_exec_keeps_signal_actions(guest, results)
        check_exec_hangs_up_stopped_jobs(guest, results)
        check_failing_exec_keeps_stopped_jobs(guest, results)
        check_nul_bytes_refused(guest, results)
        started = guest.run("tail -f /tmp/httpd.log &") or ""
        m = re.search(r"\[\d+\] (\d+)", started)
        guest.run("httpget http://127.0.0.1/index.html > /dev/null")
        followed = guest.wait_for(re.compile(r"GET /index\.html 200"), 10,
                                  len(guest.text) - 2000)
        if m:
            guest.run(f"kill {m.group(1)}")
        check(results, "tail-follows-the-access-log", m and followed, started)

        for line in readme_examples():
            out = guest.run(line) or ""
            pattern = README_EXAMPLES.get(line)
            ok = pattern and re.search(pattern, out, re.S) and not FAILURE_WORDS.search(out)
            check(results, "readme " + line, ok,
                  f"gave {out!r}" if pattern else "no check for this README example")
        out = guest.run("scopectl counter latency nosuch || echo refused") or ""
        check(results, "scopectl-unknown-counter",
              re.search(r"has no counter 'nosuch'.*\nrefused", out, re.S), out)
        check_console_cooked_after_shell_killed(guest, results)  # last: may leave it raw
    finally:
        guest.stop()
    return results
