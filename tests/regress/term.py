#!/usr/bin/env python3
"""Drives agent-lanectl exec -t / shell in a pty this test opens, as a user
at a terminal would. Usage: tty.py LANECTL SOCK LANE CASE. Prints one
result line for the shell test to compare."""
import fcntl
import os
import pty
import select
import signal
import struct
import sys
import termios
import time

LANECTL, SOCK, LANE, CASE = sys.argv[1:5]


def target():
    """SOCK is a socket path, or global options ("--context=NAME") that
    pick the daemon another way (tests/regress/remote.sh: through ssh)."""
    return [SOCK] if SOCK.startswith("--") else ["--socket", SOCK]


def spawn(args, rows=33, cols=101):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "vt100"
        os.execv(LANECTL, [LANECTL] + target() + args)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return pid, fd


class Term:
    def __init__(self, args, **kw):
        # The modes a new terminal has, read from a fresh pty of our own:
        # reading the child's after the fork would race with the client
        # switching it to raw (seen under load in make check).
        m, s = os.openpty()
        self.before = termios.tcgetattr(m)
        os.close(m)
        os.close(s)
        self.pid, self.fd = spawn(args, **kw)
        self.out = b""

    def read_until(self, want, t=20, since=0):
        """Reads until WANT is in the output from offset SINCE on."""
        end = time.time() + t
        while want not in self.out[since:] and time.time() < end:
            r, _, _ = select.select([self.fd], [], [], 0.1)
            if r:
                try:
                    d = os.read(self.fd, 4096)
                except OSError:
                    break
                if not d:
                    break
                self.out += d
        return want in self.out[since:]

    def send(self, b):
        os.write(self.fd, b)

    def wait(self, t=20):
        end = time.time() + t
        while time.time() < end:
            self.read_until(b"\0never", 0.1)
            p, st = os.waitpid(self.pid, os.WNOHANG)
            if p == self.pid:
                self.read_until(b"\0never", 0.2)
                return os.waitstatus_to_exitcode(st)
        sys.stderr.write("hung; output: %r\n" % self.out)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        return "hung"

    def lflags(self):
        """Local modes now, as the user's terminal has them."""
        return termios.tcgetattr(self.fd)[3]

    def restored(self):
        return termios.tcgetattr(self.fd) == self.before


def show(*parts):
    print(" ".join(str(p) for p in parts))


if CASE == "size":
    t = Term(["exec", "-t", LANE, "--", "sh", "-c", "stty size; test -t 0 && tty; echo TERM=$TERM"])
    rc = t.wait()
    lines = t.out.decode(errors="replace").split("\r\n")
    lines = [l.strip() for l in lines]
    show(rc, lines[0], lines[1].startswith("/dev/pts/"), lines[2])
elif CASE == "resize":
    t = Term(["exec", "-ti", LANE, "--", "sh", "-c", "echo ready; read x; stty size; read y; exit 3"])
    ok = t.read_until(b"ready\r\n")
    raw = not (t.lflags() & termios.ICANON) and not (t.lflags() & termios.ECHO) and not (t.lflags() & termios.ISIG)
    fcntl.ioctl(t.fd, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 132, 0, 0))
    os.kill(t.pid, signal.SIGWINCH)
    time.sleep(0.5)
    t.send(b"a\r")
    t.read_until(b"132\r\n")
    t.send(b"b\r")
    rc = t.wait()
    show(ok, raw, b"50 132" in t.out, rc, t.restored())
elif CASE == "ctrl-c":
    t = Term(["exec", "-ti", LANE, "--", "sh", "-c", "echo ready; exec sleep 100"])
    ok = t.read_until(b"ready\r\n")
    t.send(b"\x03")
    rc = t.wait()
    show(ok, rc, t.restored())
elif CASE == "ctrl-z":
    # Job control works in a guest shell: ^Z stops the job, the shell says
    # so, fg resumes it and ^C ends it.
    t = Term(["shell", LANE])
    t.send(b"PS1='$ '; echo sh-ready\r")
    ok = t.read_until(b"sh-ready\r\n")
    # The marker is printed just before sleep starts ($((...)) keeps the
    # echoed command line from matching). A ^Z that lands before sleep is
    # the terminal's foreground job goes to the shell, which ignores it, so
    # it is sent again until the shell reports the job stopped; likewise
    # ^C after fg, until the line typed behind it is answered.
    t.send(b"echo sl-$((1 + 1))go; sleep 100\r")
    t.read_until(b"sl-2go")
    stopped = False
    for _ in range(40):
        t.send(b"\x1a")
        if t.read_until(b"Stopped", 0.5):
            stopped = True
            break
    # fg names the job as it resumes it; a ^C before that would reach the
    # shell and flush the line typed after it, hence the retries with both.
    pos = len(t.out)
    t.send(b"fg\r")
    t.read_until(b"sleep 100", 20, pos)
    for _ in range(40):
        t.send(b"\x03")
        t.send(b"echo after-$((2 + 2))\r")
        if t.read_until(b"after-4", 0.5):
            break
    t.send(b"exit 4\r")
    rc = t.wait()
    show(ok, stopped, b"no job control" not in t.out, rc, t.restored())
elif CASE == "shell-exit":
    # A login shell: a command line in, its answer out, the exit status.
    t = Term(["shell", LANE])
    t.send(b"echo sh-$((6 * 7)); exit 5\r")
    ok = t.read_until(b"sh-42")
    rc = t.wait()
    show(ok, rc, t.restored())
elif CASE == "sigterm":
    t = Term(["exec", "-ti", LANE, "--", "sh", "-c", "echo ready; exec sleep 100"])
    ok = t.read_until(b"ready\r\n")
    raw = not (t.lflags() & termios.ICANON)
    os.kill(t.pid, signal.SIGTERM)
    rc = t.wait()
    show(ok, raw, rc, t.restored())
elif CASE == "error":
    t = Term(["exec", "-ti", "al-0000000000000000", "--", "true"])
    rc = t.wait()
    show(rc, b"NOT_FOUND" in t.out, t.restored())
else:
    sys.exit("unknown case " + CASE)
