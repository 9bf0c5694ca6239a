"""Processes: pid files and liveness probes (pid reuse, zombies), spawning
in a new session, exit descriptions, and the sweep of stray guest
processes."""

import os
import time
import _signal as signal          # the C module: `signal` would pull in enum


def _proc_state(pid):
    try:
        with open('/proc/%d/stat' % pid, 'rb') as f:
            st = f.read()
        return st[st.rindex(b')') + 2:st.rindex(b')') + 3]
    except (OSError, ValueError):
        return None


def pid_alive(pid, kind=None):
    """Signal-0 probe; zombies and processes that are not ours count as dead."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return kind is None
    state = _proc_state(pid)
    if state is None:
        return os.path.exists('/proc/%d' % pid) or not os.path.isdir('/proc/self')
    if state in (b'Z', b'X'):
        return False
    if kind == 'ha':
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                return b'\0hostagent\0' in f.read()
        except OSError:
            return False
    if kind == 'drv':
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                return b'\0' + DRIVER_MARK.encode() + b'\0' in f.read()
        except OSError:
            return False
    if kind == 'guest':
        try:
            with open('/proc/%d/comm' % pid, 'rb') as f:
                return f.read().strip() == b'bwrap'
        except OSError:
            return False
    return True


def read_pid(path, kind, remove_stale=True):
    """Lima's ReadPIDFile: 0 (and the file removed) when the process is gone."""
    try:
        with open(path, 'rb') as f:
            raw = f.read().strip()
    except OSError:
        return 0
    if not raw:
        return 0            # being written right now
    try:
        pid = int(raw)
    except ValueError:
        return 0
    if pid_alive(pid, kind):
        return pid
    if remove_stale:
        try:
            os.unlink(path)
        except OSError:
            pass
    return 0


def wait_dead(pids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(pid_alive(p) for p in pids if p):
            return True
        time.sleep(0.002)
    return False


# The $0 of the driver shell (driver.driver_shim), by which a live qemu.pid
# is told from a reused pid.
DRIVER_MARK = 'lima-sim-qemu'


def spawn_with(full, env, fds):
    """Fork FULL in its own session with FDS as stdin/stdout/stderr, umask
    022 and default signal dispositions."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            os.umask(0o022)
            dup = [os.dup(fd) for fd in fds]
            for i, fd in enumerate(dup):
                os.dup2(fd, i)
            os.closerange(3, 1 << 20)
            for sig in range(1, signal.NSIG):
                if sig not in (signal.SIGKILL, signal.SIGSTOP):
                    try:
                        signal.signal(sig, signal.SIG_DFL)
                    except (OSError, ValueError, RuntimeError):
                        pass
            os.execve(full[0], full, env)
        except BaseException:
            pass
        os._exit(255)
    return pid


def wait_code(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def killpg_wait(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


def exit_desc(rc):
    if rc is None:
        return 'still running'
    if rc < 0:
        return 'signal: %s' % {9: 'killed', 15: 'terminated', 2: 'interrupt', 1: 'hangup'}.get(-rc, str(-rc))
    return 'exit status %d' % rc


def sweep_guest_procs(d, exclude=()):
    """SIGKILL stray processes of this instance's guest: every process the
    driver starts writes to the instance's serial.log.  This catches a bwrap
    child orphaned while still setting up the sandbox (its parent-death
    signal is not armed yet), which nothing else would ever reap."""
    serial = os.path.join(d, 'serial.log')
    targets = (serial, serial + ' (deleted)')
    me = os.getpid()
    found = []
    try:
        pids = [int(p) for p in os.listdir('/proc') if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        if pid == me or pid in exclude:
            continue
        try:
            if os.readlink('/proc/%d/fd/1' % pid) in targets:
                os.kill(pid, signal.SIGKILL)
                found.append(pid)
        except OSError:
            pass
    return found


def kill9(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
