"""What runs as guest root on the hostagent's behalf (root mode only):
at each boot the identity step, cloud-init's sudo rule, the provision:
scripts and Lima's password for the user, and the service behind the
guest's sudo."""

import os
import _signal as signal          # the C module: `signal` would pull in enum

from .quoting import gq, sh_quote
from .logrus import DEBUG, INFO, WARN, log
from . import fileio, names, limayaml, guestfs, procs, enter, sudoers


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


# Lima's boot.Linux/05-guest-home.sh (not run with `plain: true`): the
# home before Lima 2.1, /home/USER.linux, becomes a link to USER.guest.
GUEST_HOME_SCRIPT = r"""#!/bin/sh
u=%(user)s
if [ -d "/home/$u.guest" ] && [ ! -e "/home/$u.linux" ]; then
  ln -s "$u.guest" "/home/$u.linux"
fi
"""
# cloud-init's users-groups module.  Lima gives every boot a new
# instance-id, so cloud-init runs it at every boot: the user's rule in
# /etc/sudoers.d/90-cloud-init-users comes back if it was removed, and with
# `lock_passwd: true` (passwordlessSudo) the password is locked again.
CLOUD_INIT_USERS_SCRIPT = r"""#!/bin/sh
set -e
u=%(user)s
rule=%(rule)s
f=/%(file)s
mkdir -p /etc/sudoers.d
chmod 0750 /etc/sudoers.d
if [ ! -e "$f" ]; then
  { printf '# Created by cloud-init v. 24.4 (limactl simulator) on %%s\n' "$(date -u '+%%a, %%d %%b %%Y %%H:%%M:%%S %%z')"
    printf '\n# User rules for %%s\n%%s %%s\n' "$u" "$u" "$rule"; } > "$f"
  chmod 0440 "$f"
elif ! grep -qxF "$u $rule" "$f"; then
  printf '\n# User rules for %%s\n%%s %%s\n' "$u" "$u" "$rule" >> "$f"
fi
[ -e /etc/shadow ] || : > /etc/shadow
grep -q "^$u:" /etc/shadow || echo "$u:!:%(day)d:0:99999:7:::" >> /etc/shadow
if [ %(lock)d = 1 ]; then
  awk -F: -v OFS=: -v u="$u" '$1 == u && $2 !~ /^!/ { $2 = "!" $2 } { print }' /etc/shadow > /etc/shadow.new
  chmod 0600 /etc/shadow.new
  mv -f /etc/shadow.new /etc/shadow
fi
"""
# Lima's boot.sh after the provision scripts (user.passwordlessSudo:
# false): once per home, a random password of 16 hex digits, set as the
# user's (chpasswd) and left for the user in ~/password.
LIMA_PASSWORD_SCRIPT = r"""#!/bin/sh
set -e
u=%(user)s
home=%(home)s
[ ! -f "$home/.lima-password-set" ] || exit 0
awk -F: -v OFS=: -v u="$u" -v h=%(hash)s '$1 == u { $2 = h } { print }' /etc/shadow > /etc/shadow.new
chmod 0600 /etc/shadow.new
mv -f /etc/shadow.new /etc/shadow
(umask 077 && : > "$home/password")
chown "$u:$u" "$home/password"
echo %(password)s > "$home/password"
touch "$home/.lima-password-set"
chown "$u:$u" "$home/.lima-password-set"
"""


def boot_steps(name, text):
    """[(what, mode, script)] that a boot runs as guest root (or as the
    user for `mode: user`), in Lima's order: cloud-init's identity and
    users, boot.sh's boot scripts (unless plain), its provision scripts,
    then its password block."""
    user = guestfs.guest_user()[0]
    nopasswd = limayaml.passwordless_sudo(text)
    hn = names.hostname_of(name)
    steps = [('identity', 'system', IDENTITY_SCRIPT % (hn, hn)),
             ('cloud-init users', 'system', CLOUD_INIT_USERS_SCRIPT % {
                 'user': sh_quote(user), 'rule': sh_quote('ALL=(ALL) NOPASSWD:ALL' if nopasswd else 'ALL=(ALL) ALL'),
                 'file': sudoers.CLOUD_INIT_RULES, 'day': guestfs.SHADOW_DAY, 'lock': int(nopasswd)})]
    if not limayaml.plain(text):
        steps.append(('guest home', 'system', GUEST_HOME_SCRIPT % {'user': sh_quote(user)}))
    for i, (mode, script) in enumerate(limayaml.provision_entries(text, guestfs.template_data(name))):
        if mode in ('system', 'user'):
            steps.append(('provision %d' % i, mode, script))
        else:
            log(WARN, 'provision mode %s is not simulated; skipping script %d' % (gq(mode), i))
    if not nopasswd:
        pw = os.urandom(8).hex()
        steps.append(('password', 'system', LIMA_PASSWORD_SCRIPT % {
            'user': sh_quote(user), 'home': sh_quote(guestfs.guest_home()),
            'hash': sh_quote(sudoers.hash_password(pw)), 'password': sh_quote(pw)}))
    return steps


class Provisioner(object):
    """Runs the boot steps (boot_steps), one at a time, as children the
    hostagent's loop reaps.  Only `system` and `user` provision modes are
    simulated; a failing step is logged and the boot goes on, as in Lima
    (boot.sh records the failure but still finishes)."""

    def __init__(self, d, name, text):
        self.d = d
        self.steps = boot_steps(name, text)
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
        if what.startswith('provision'):
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


class _SudoConn(object):
    """One sudo request: its socket, the caller's uid, the request, the
    caller's stdio (kept until the command runs), the matched rule, the
    password attempts so far, and the command's pid once it runs."""

    def __init__(self, sock, uid, req, fds):
        self.sock = sock
        self.uid = uid
        self.req = req
        self.fds = fds
        self.rule = None
        self.tries = 0
        self.buf = b''
        self.pid = 0

    def say(self, text):
        """Write TEXT to the caller's stderr, as sudo does."""
        try:
            fileio.write_all(self.fds[2], text.encode('utf-8', 'surrogateescape'))
        except OSError:
            pass

    def send(self, line):
        try:
            self.sock.setblocking(True)
            self.sock.sendall(line)
            return True
        except OSError:
            return False
        finally:
            self.sock.setblocking(False)

    def close(self):
        for fd in self.fds:
            os.close(fd)
        self.fds = []
        self.sock.close()


class SudoService(object):
    """The guest's sudo (see guest-sudo): a Unix socket bound into the guest
    at /run/lima-sim/sudo.sock.  A request carries argv, cwd, sudo's -n/-S/-p
    and the caller's three stdio descriptors.  Guest root may run anything;
    the guest user as the guest's sudoers rules (sudoers.rule_for) say:
    NOPASSWD runs at once, otherwise the service asks the client for the
    user's password (`AUTH`, answered with `PASS "…"` or `NOPASS`), up to
    three times, and a user that no rule names is refused after a right
    password, as sudo does.  The command runs as guest root (or as the
    guest user with -u) and the answer is `EXIT n`.  The client's
    disconnect kills the command's process group."""

    def __init__(self, d):
        import socket
        self.d = d
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
        except (OSError, ValueError, TypeError, KeyError):
            for fd in fds:
                os.close(fd)
            c.close()
            return
        c.setblocking(False)
        conn = _SudoConn(c, uid, req, fds)
        self.conns[c] = conn
        self._decide(conn)

    def _finish(self, conn, code):
        conn.send(b'EXIT %d\n' % code)
        conn.close()
        self.conns.pop(conn.sock, None)

    def _decide(self, conn):
        """The sudoers policy, up to running the command or asking for the
        password."""
        user, guid, ggid = guestfs.guest_user()
        if conn.uid == 0:
            return self._run(conn)
        if conn.uid != guid:
            conn.say('sudo: you are not in the sudoers file\n')
            return self._finish(conn, 1)
        try:
            conn.rule = sudoers.rule_for(self.d, user, guid, ggid)
        except sudoers.Unsupported as e:
            conn.say('sudo: the limactl simulator cannot read the sudoers rule %s\n' % e)
            return self._finish(conn, 1)
        if conn.rule == 'NOPASSWD':
            return self._run(conn)
        if conn.req.get('noninteractive'):
            conn.say('sudo: a password is required\n')
            return self._finish(conn, 1)
        if not conn.send(b'AUTH\n'):
            self._finish(conn, 1)

    def _on_password(self, conn, line):
        import json
        user = guestfs.guest_user()[0]
        pw = None
        if line.startswith(b'PASS '):
            try:
                pw = json.loads(line[5:].decode('utf-8', 'surrogateescape'))
            except ValueError:
                return self._finish(conn, 1)
        if pw is None:                 # the client read no password (EOF, no terminal)
            conn.say('sudo: %d incorrect password attempt%s\n' % (conn.tries, 's' if conn.tries > 1 else '')
                     if conn.tries else 'sudo: a password is required\n')
            return self._finish(conn, 1)
        if sudoers.password_ok(self.d, user, str(pw)):
            if conn.rule is None:
                conn.say('%s is not in the sudoers file.\n' % user)
                return self._finish(conn, 1)
            return self._run(conn)
        conn.tries += 1
        if conn.tries >= sudoers.PASSWD_TRIES:
            conn.say('sudo: %d incorrect password attempts\n' % conn.tries)
            return self._finish(conn, 1)
        conn.say('Sorry, try again.\n')
        if not conn.send(b'AUTH\n'):
            self._finish(conn, 1)

    def _run(self, conn):
        try:
            pid = self._spawn(conn.req, conn.uid, conn.fds)
        except (OSError, ValueError, TypeError) as e:
            conn.say('sudo: %s\n' % e)
            pid = -1
        for fd in conn.fds:
            os.close(fd)
        conn.fds = []
        if pid < 0:
            return self._finish(conn, -pid)
        conn.pid = pid

    def _spawn(self, req, uid, fds):
        user, guid, ggid = guestfs.guest_user()
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
        conn = self.conns[c]
        if not data:
            if conn.pid:
                procs.killpg_wait(conn.pid)
            conn.close()
            del self.conns[c]
            return
        if not conn.pid:
            conn.buf += data
            if len(conn.buf) > 65536:
                return self._finish(conn, 1)
            while b'\n' in conn.buf and not conn.pid and c in self.conns:
                line, conn.buf = conn.buf.split(b'\n', 1)
                self._on_password(conn, line)
            return
        for line in data.split(b'\n'):
            parts = line.split()
            if len(parts) == 2 and parts[0] == b'SIG' and parts[1].isdigit() \
                    and int(parts[1]) in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT):
                try:
                    os.killpg(conn.pid, int(parts[1]))
                except OSError:
                    pass

    def reap(self):
        for c, conn in list(self.conns.items()):
            if not conn.pid:
                continue
            try:
                r, st = os.waitpid(conn.pid, os.WNOHANG)
            except ChildProcessError:
                r, st = conn.pid, 255 << 8
            if not r:
                continue
            self._finish(conn, procs.wait_code(st))

    def close(self):
        for c, conn in list(self.conns.items()):
            if conn.pid:
                procs.killpg_wait(conn.pid)
            conn.close()
        self.conns = {}
        self.lsock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
