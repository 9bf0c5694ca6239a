"""What runs as guest root on the hostagent's behalf (root mode only):
the identity step and the provision: scripts at each boot, and the
service behind the guest's sudo."""

import os
import _signal as signal          # the C module: `signal` would pull in enum

from .quoting import gq, sh_quote
from .logrus import DEBUG, INFO, WARN, log
from . import fileio, names, limayaml, guestfs, procs, enter


# Runs one provisioning step inside the guest as root; the script arrives on
# stdin.  Output goes to the guest's /var/log/cloud-init-output.log, as with
# Lima, never to a host file (guest root may have planted symlinks there).
PROVISION_WRAPPER = r"""umask 022
f=$(mktemp /tmp/lima-provision.XXXXXX) || exit 1
cat > "$f" || exit 1
chmod 0755 "$f"
exec >>/var/log/cloud-init-output.log 2>&1
if [ "$1" = user ]; then
  chown "$3:$4" "$f"
  setpriv --reuid="$3" --regid="$4" --clear-groups -- env -i HOME="$5" USER="$2" LOGNAME="$2" \
    SHELL=/bin/bash PATH="$6" LIMA_CIDATA_USER="$2" LIMA_CIDATA_UID="$3" LIMA_CIDATA_HOME="$5" "$f"
else
  env -i HOME=/root USER=root LOGNAME=root SHELL=/bin/bash PATH="$6" \
    LIMA_CIDATA_USER="$2" LIMA_CIDATA_UID="$3" LIMA_CIDATA_HOME="$5" "$f"
fi
rc=$?
rm -f "$f"
exit $rc
"""
IDENTITY_SCRIPT = """#!/bin/sh
# the instance's identity (cloud-init sets it at every boot; a clone needs it)
printf '%%s\\n' %s > /etc/hostname
[ -f /etc/hosts ] && sed -i 's/^127\\.0\\.1\\.1[[:space:]].*/127.0.1.1\\t%s/' /etc/hosts
exit 0
"""


class Provisioner(object):
    """Runs the identity step and then the `provision:` scripts, one at a
    time, as children the hostagent's loop reaps.  Only `system` and `user`
    modes are simulated; a failing script is logged and the boot goes on,
    as in Lima (boot.sh records the failure but still finishes)."""

    def __init__(self, d, name, text):
        self.d = d
        hn = names.hostname_of(name)
        self.steps = [('identity', 'system', IDENTITY_SCRIPT % (hn, hn))]
        for i, (mode, script) in enumerate(limayaml.provision_entries(text, guestfs.template_data(name))):
            if mode in ('system', 'user'):
                self.steps.append(('provision %d' % i, mode, script))
            else:
                log(WARN, 'provision mode %s is not simulated; skipping script %d' % (gq(mode), i))
        self.pid = 0
        self.cur = None

    def done(self):
        return not self.steps and not self.pid

    def step(self, gpid):
        """Advance; returns True when every step has finished."""
        if self.pid:
            try:
                r, st = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                r, st = self.pid, 255 << 8
            if not r:
                return False
            code = procs.wait_code(st)
            if code != 0:
                log(WARN, '%s (mode %s) failed with exit code %d (see /var/log/cloud-init-output.log in the guest)'
                    % (self.cur[0], self.cur[1], code))
            else:
                log(DEBUG, '%s finished' % self.cur[0])
            self.pid = 0
        if not self.steps:
            return True
        self.cur = self.steps.pop(0)
        what, mode, script = self.cur
        if what != 'identity':
            log(INFO, 'Running %s (mode %s)' % (what, mode))
        tmp = os.path.join(self.d, 'usrfs', 'provision.tmp')
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.unlink(tmp)
            fileio.write_all(fd, script.encode('utf-8', 'surrogateescape'))
            os.lseek(fd, 0, 0)
            user, uid, gid = guestfs.guest_user()
            argv = enter.guest_root_argv(gpid, ['/bin/sh', '-c', PROVISION_WRAPPER, 'provision', mode, user,
                                                str(uid), str(gid), guestfs.guest_home(), enter.GUEST_PATH])
            null = os.open('/dev/null', os.O_WRONLY | os.O_CLOEXEC)
            try:
                self.pid = procs.spawn_with(argv, {'PATH': enter.GUEST_PATH}, (fd, null, null))
            finally:
                os.close(null)
        finally:
            os.close(fd)
        return False

    def kill(self):
        if self.pid:
            procs.killpg_wait(self.pid)
            self.pid = 0


class SudoService(object):
    """The guest's sudo (see guest-sudo): a Unix socket bound into the guest
    at /run/lima-sim/sudo.sock.  A request carries argv, cwd and the
    caller's three stdio descriptors; the command runs as guest root (or
    as the guest user with -u) and the answer is `EXIT n`.  The client's
    disconnect kills the command's process group."""

    def __init__(self, d, allow):
        import socket
        self.allow = allow
        self.gpid = 0
        self.conns = {}
        path = os.path.join(d, 'simrun', 'sudo.sock')
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        self.path = path
        self.lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lsock.bind(path)
        os.chmod(path, 0o666)
        self.lsock.listen(16)
        self.lsock.setblocking(False)

    def socks(self):
        return [self.lsock] + list(self.conns)

    def handle(self, readable):
        if self.lsock in readable:
            self._accept()
        for c in list(self.conns):
            if c in readable:
                self._on_data(c)
        self.reap()

    def _accept(self):
        import socket
        import struct
        import json
        try:
            c, _ = self.lsock.accept()
        except OSError:
            return
        fds = []
        try:
            c.settimeout(2)
            _, uid, _ = struct.unpack('3i', c.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                         struct.calcsize('3i')))
            msg, fds, _, _ = socket.recv_fds(c, 1 << 20, 3)
            req = json.loads(msg.decode('utf-8', 'surrogateescape'))
            if len(fds) != 3 or not isinstance(req, dict) or not self.gpid:
                raise ValueError('bad request')
            pid = self._spawn(req, uid, fds)
        except (OSError, ValueError, TypeError, KeyError):
            c.close()
            pid = None
        finally:
            for fd in fds:
                os.close(fd)
        if pid is None:
            return
        if pid < 0:
            try:
                c.sendall(b'EXIT %d\n' % -pid)
            except OSError:
                pass
            c.close()
            return
        c.setblocking(False)
        self.conns[c] = pid

    def _spawn(self, req, uid, fds):
        user, guid, ggid = guestfs.guest_user()
        if uid not in (0, guid):
            os.write(fds[2], b'sudo: you are not in the sudoers file\n')
            return -1
        if not self.allow and uid != 0:
            os.write(fds[2], b'sudo: a password is required\n')
            return -1
        target = str(req.get('user') or 'root')
        cmd = [str(a) for a in (req.get('argv') or [])]
        if target in ('root', '0', '#0'):
            home, tuser = '/root', 'root'
        elif target in (user, str(guid), '#%d' % guid):
            home, tuser = guestfs.guest_home(), user
        else:
            os.write(fds[2], ('sudo: unknown user %s\n' % target).encode())
            return -1
        if req.get('login') or req.get('shell'):
            cmd = ['/bin/bash'] + (['-l'] if req.get('login') else []) + \
                  (['-c', ' '.join(sh_quote(a) for a in cmd)] if cmd else [])
        cwd = home if req.get('login') else str(req.get('cwd') or '/')
        env = {}
        if isinstance(req.get('env'), dict):
            env.update({str(k): str(v) for k, v in req['env'].items()})
        caller = 'root' if uid == 0 else user
        env.update({'PATH': enter.GUEST_PATH, 'HOME': home, 'USER': tuser, 'LOGNAME': tuser,
                    'SHELL': '/bin/bash', 'SUDO_USER': caller, 'SUDO_UID': str(uid),
                    'SUDO_GID': str(0 if uid == 0 else ggid), 'SUDO_COMMAND': ' '.join(cmd)})
        env.setdefault('LANG', 'C.UTF-8')
        inner = ['/bin/sh', '-c', 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"', 'sudo', cwd] + cmd
        full = enter.guest_root_argv(self.gpid, inner) if tuser == 'root' else enter.guest_argv(self.gpid, inner)
        return procs.spawn_with(full, env, fds)

    def _on_data(self, c):
        try:
            data = c.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b''
        pid = self.conns[c]
        if not data:
            procs.killpg_wait(pid)
            del self.conns[c]
            c.close()
            return
        for line in data.split(b'\n'):
            parts = line.split()
            if len(parts) == 2 and parts[0] == b'SIG' and parts[1].isdigit() \
                    and int(parts[1]) in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
                try:
                    os.killpg(pid, int(parts[1]))
                except OSError:
                    pass

    def reap(self):
        for c, pid in list(self.conns.items()):
            try:
                r, st = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                r, st = pid, 255 << 8
            if not r:
                continue
            try:
                c.setblocking(True)
                c.sendall(b'EXIT %d\n' % procs.wait_code(st))
            except OSError:
                pass
            c.close()
            del self.conns[c]

    def close(self):
        for c, pid in list(self.conns.items()):
            procs.killpg_wait(pid)
            c.close()
        self.conns = {}
        self.lsock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
