"""Fault injection (LIMA_SIM_FAIL / HANG / DIE / STALL), the
cross-process call counters they count with, and the invocation log
(LIMA_SIM_LOG).  See README.md, "Environment variables"."""

import os
import time
import _signal as signal          # the C module: `signal` would pull in enum

from .errors import Fatal
from .quoting import sh_quote
from .logrus import DEBUG, log
from . import runtime


class FAULT:
    """The current call: its subcommand, its number, and the faults that
    strike it.  Commands test FAULT.die / FAULT.hang where the README says
    those faults strike."""
    sub = None
    call = 0
    hang = False
    die = False
    stall = False


def hang_forever():
    while True:
        time.sleep(3600)


def die_now():
    os.kill(os.getpid(), signal.SIGKILL)
    hang_forever()


def _hit(var, sub, n, aliases):
    spec = os.environ.get(var, '')
    for item in spec.split(','):
        item = item.strip()
        if not item:
            continue
        name, _, num = item.partition(':')
        name = aliases.get(name.strip(), name.strip())
        if name != sub:
            continue
        num = num.strip()
        if num == '*':
            return True
        try:
            if n == int(num or '1'):
                return True
        except ValueError:
            pass
    return False


def count(sub):
    """Bump the cross-process call counter of SUB; return the new value."""
    import fcntl
    d = os.path.join(runtime.lima_home(), '_sim')
    try:
        os.makedirs(d, exist_ok=True)
        fd = os.open(os.path.join(d, sub + '.count'), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return 0
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.pread(fd, 64, 0).strip()
        n = (int(raw) if raw.isdigit() else 0) + 1
        os.ftruncate(fd, 0)
        os.pwrite(fd, b'%d\n' % n, 0)
    finally:
        os.close(fd)
    return n


def arm(sub, n, aliases):
    """Call N of SUB (ALIASES maps the accepted aliases of a subcommand to
    its canonical name): fail it now, hang it now (start hangs later, once
    the VM runs), or mark it to die where it strikes."""
    FAULT.sub = sub
    FAULT.call = n
    if _hit('LIMA_SIM_FAIL', sub, n, aliases):
        raise Fatal('simulated failure of `limactl %s` (LIMA_SIM_FAIL, call #%d)' % (sub, n))
    FAULT.hang = _hit('LIMA_SIM_HANG', sub, n, aliases)
    FAULT.die = _hit('LIMA_SIM_DIE', sub, n, aliases)
    FAULT.stall = _hit('LIMA_SIM_STALL', sub, n, aliases)
    if FAULT.hang and sub != 'start':
        log(DEBUG, 'LIMA_SIM_HANG: `limactl %s` call #%d hangs' % (sub, n))
        hang_forever()


def stall_now():
    """LIMA_SIM_STALL: wait LIMA_SIM_STALL_MS ms, or without it until killed."""
    ms = os.environ.get('LIMA_SIM_STALL_MS', '')
    if not ms:
        hang_forever()
    time.sleep(int(ms) / 1000)


def log_invocation(argv):
    path = os.environ.get('LIMA_SIM_LOG')
    if not path:
        return
    line = ' '.join(['limactl'] + [sh_quote(a) for a in argv]) + '\n'
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, line.encode('utf-8', 'surrogateescape'))
        finally:
            os.close(fd)
    except OSError:
        pass
