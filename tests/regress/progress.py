#!/usr/bin/env python3
"""Runs agent-lanectl create / cp in a pty this test opens, as at a user's
terminal, and prints one result line for progress.sh to compare.
Usage: progress.py LANECTL SOCK CASE [ARG...]"""
import os
import pty
import re
import select
import signal
import sys
import time

LANECTL, SOCK, CASE = sys.argv[1:4]


def target():
    """SOCK is a socket path, or global options ("--context=NAME") that
    pick the daemon another way (tests/regress/remote.sh: through ssh)."""
    return [SOCK] if SOCK.startswith("--") else ["--socket", SOCK]
ARGS = sys.argv[4:]


class Term:
    def __init__(self, args, cols=0):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.environ["TERM"] = "vt100"
            if cols:
                import fcntl, struct, termios
                fcntl.ioctl(0, termios.TIOCSWINSZ,
                            struct.pack("HHHH", 24, cols, 0, 0))
            os.execv(LANECTL, [LANECTL] + target() + args)
        self.out = b""

    def read_until(self, want, t=30):
        end = time.time() + t
        while want not in self.out and time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    d = os.read(self.fd, 4096)
                except OSError:
                    break
                if not d:
                    break
                self.out += d
        return want in self.out

    def wait(self, t=60):
        end = time.time() + t
        while time.time() < end:
            self.read_until(b"\0never", 0.1)
            p, st = os.waitpid(self.pid, os.WNOHANG)
            if p == self.pid:
                self.read_until(b"\0never", 0.3)
                return os.waitstatus_to_exitcode(st)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return "hung"


def show(*parts):
    print(" ".join(str(p) for p in parts))


def last_draw(out):
    """What the terminal shows last: the text after the last redraw."""
    return out.rsplit(b"\x1b[K", 1)[-1]


if CASE == "create":
    t = Term(["create"])
    rc = t.wait()
    o = t.out
    phases = [p for p in (b"registered", b"creating", b"starting", b"setup")
              if re.search(rb"[|/\\-] create: " + p + rb"( - [^\r]*)? \[\d+\.\ds\]", o)]
    ended = re.search(rb"  create: ready \[\d+\.\ds\]\r\nal-[0-9a-f]{16}\r\n$", o)
    show(rc, b"|".join(phases).decode(), bool(ended))
elif CASE == "width":
    # A terminal ARGS[0] columns wide: every redraw fits in it and ends
    # with the time taken; the text gave way where it had to. Prints the
    # exit status, whether each draw kept its time, whether each fit,
    # whether Lima's wait for ssh was explained whole, whether one was cut.
    cols = int(ARGS[0])
    t = Term(["create"], cols)
    rc = t.wait()
    draws = [d.split(b"\r")[0].decode("utf-8", "replace")
             for d in t.out.split(b"\x1b[K")[1:]]
    draws = [d for d in draws if d[:1] in "|/-\\"]
    show(rc, bool(draws) and all(re.search(r" \[\d+\.\ds\]$", d) for d in draws),
         all(len(d) <= cols - 1 for d in draws),
         any("booting (about a minute without KVM), step 1 of " in d for d in draws),
         any("..." in d for d in draws))
elif CASE in ("sigint", "sigterm"):
    t = Term(["create"])
    ok = t.read_until(b"create: starting")
    if CASE == "sigint":
        os.write(t.fd, b"\x03")       # ^C at the terminal: SIGINT to the job
    else:
        os.kill(t.pid, signal.SIGTERM)
    rc = t.wait()
    # The progress line ends with a newline before the next message.
    ended = re.search(rb"  create: interrupted \[\d+\.\ds\]\r\n"
                      rb"agent-lanectl: create interrupted; lane al-[0-9a-f]{16} "
                      rb"is being destroyed\r\n$", t.out)
    show(ok, rc, bool(ended))
elif CASE == "quiet":
    t = Term(["create", "-q"])
    rc = t.wait()
    show(rc, b"\x1b[K" not in t.out and b"create:" not in t.out,
         bool(re.fullmatch(rb"al-[0-9a-f]{16}\r\n", t.out)))
elif CASE == "download":
    t = Term(["create"])
    rc = t.wait()
    o = t.out
    said = re.search(rb"\r\x1b\[Kagent-lanectl: Lima is downloading the image "
                     rb"\(a first run[^\r]*\)\r\n", o)
    show(rc, b"create: downloading - the image [" in o, bool(said),
         bool(re.search(rb"  create: ready \[\d+\.\ds\]\r\n", o)))
elif CASE == "cp":
    t = Term(["cp"] + ARGS)
    rc = t.wait()
    o = t.out
    done = re.search(rb"  cp: done, 100% [\d.]+[KMGT]?i?B of [\d.]+[KMGT]?i?B, [\d.]+[KMGT]?i?B/s "
                     rb"\[\d+\.\ds\]\r\n$", o)
    show(rc, bool(done))
elif CASE == "cp-out":
    t = Term(["cp"] + ARGS)
    rc = t.wait()
    done = re.search(rb"  cp: done, [\d.]+[KMGT]?i?B, [\d.]+[KMGT]?i?B/s \[\d+\.\ds\]\r\n$",
                     t.out)
    show(rc, bool(done))
elif CASE == "cp-fail":
    # A failed cp: its progress line ends ("failed", with what had moved),
    # and the error follows on a line of its own. Prints the exit status,
    # whether it was so, the bytes on the failed line ("-": none) and the
    # error line.
    t = Term(["cp"] + ARGS)
    rc = t.wait()
    m = re.search(rb"\x1b\[K  cp: failed(?:, ([^\r\[]*))? \[[\d.]+s\]\r\n"
                  rb"(agent-lanectl: cp: [^\r\n]*)\r\n$", t.out)
    if m:
        show(rc, True, "|", (m.group(1) or b"-").decode(), "|", m.group(2).decode())
    else:
        show(rc, False, "|", "-", "|", repr(t.out[-400:]))
elif CASE == "raw":
    t = Term(ARGS)
    rc = t.wait()
    show(rc, repr(t.out))
else:
    sys.exit("unknown case " + CASE)
