# limactl simulator: a test double of Lima's `limactl` (2.2.0) for Agent Lane's
# tests.  The daemon's real Lima driver runs against it on Linux CI machines,
# where no VM can boot.  Each "VM" is a bubblewrap sandbox whose root
# filesystem persists under $LIMA_HOME/NAME/guestfs; `shell` enters it with
# nsenter and relays stdio through pipes the way an ssh client would.
#
# Test code only: never installed.  Entry point: the `limactl` launcher next
# to this file (it keeps this module's bytecode cached).  See README.md.

import os
import sys
import time
import _signal as signal          # the C module: `signal` would pull in enum

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'limactl')
LIMA_VERSION = os.environ.get('LIMA_SIM_VERSION') or '2.2.0'
VM_TYPE = 'qemu'
# The guest's network, as `info` reports it: the simulator's guests have
# only `lo`, so no egress rule can be loaded or tested in them. Real Lima
# prints no such key; tests/lima-vm (real guests) sets it to None.
GUEST_NETWORK = 'none'
UNIX_PATH_MAX = 108
LONGEST_SOCK = 'ssh.sock.1234567890123456'
DEFAULT_START_TIMEOUT = 600.0
GUEST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
RELAY_BUF = 256 * 1024
START_TIME = time.time()
NSENTER = '/usr/bin/nsenter'
SETPRIV = '/usr/bin/setpriv'
BOOT_MARKER = '/run/lima-boot-done'
UNSHARE = '/usr/bin/unshare'
GUEST_SUDO = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'guest-sudo')
# Guest root (provision scripts, sudo): uid 0 inside the sandbox with only
# the file-ownership capabilities a root shell needs for installing files.
# No mknod, no sys_admin: with those a guest could reach host devices.
ROOT_CAPS = ('chown', 'dac_override', 'dac_read_search', 'fowner', 'fsetid', 'kill',
             'setgid', 'setuid', 'net_bind_service')

_ALNUM = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')
_SH_SAFE = _ALNUM | frozenset('_@%+=:,./-')
_LOGFMT_SAFE = _ALNUM | frozenset('-._/@^+')


# --------------------------------------------------------------------------
# errors


class Fatal(Exception):
    """Ends the command with a fatal log line and exit status 1."""


class NotExist(Fatal):
    """The instance directory or its lima.yaml is missing."""

    def __init__(self, name, d, dir_exists):
        Fatal.__init__(self, 'open %s: no such file or directory'
                       % os.path.join(d, 'lima.yaml'))
        self.name = name
        self.dir = d
        self.dir_exists = dir_exists


class ExitCode(Exception):
    def __init__(self, code):
        Exception.__init__(self, code)
        self.code = code


# --------------------------------------------------------------------------
# quoting helpers (Go / logrus / shellescape look-alikes)


def go_quote(s):
    """Go strconv.Quote."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"' or ch == '\\':
            out.append('\\' + ch)
        elif 0xdc80 <= o <= 0xdcff:          # undecodable byte (surrogateescape)
            out.append('\\x%02x' % (o - 0xdc00))
        elif ch == ' ' or (o >= 0x20 and ch.isprintable()):
            out.append(ch)
        elif ch in '\a\b\f\n\r\t\v':
            out.append({'\a': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n',
                        '\r': '\\r', '\t': '\\t', '\v': '\\v'}[ch])
        elif o < 0x80:
            out.append('\\x%02x' % o)
        elif o < 0x10000:
            out.append('\\u%04x' % o)
        else:
            out.append('\\U%08x' % o)
    out.append('"')
    return ''.join(out)


def gq(s):
    """Go's %#q verb: a raw `string` when possible, else strconv.Quote."""
    s = str(s)
    for ch in s:
        o = ord(ch)
        if ch == '`' or ch == '\ufeff' or o == 0x7f or (o < 0x20 and ch != '\t') \
                or 0xd800 <= o < 0xe000:
            return go_quote(s)
    return '`' + s + '`'


def json_str(s):
    """A JSON string the way Go's encoding/json writes it (HTML-safe)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == '\\':
            out.append('\\\\')
        elif ch == '\n':
            out.append('\\n')
        elif ch == '\r':
            out.append('\\r')
        elif ch == '\t':
            out.append('\\t')
        elif o < 0x20 or ch in '<>&\u2028\u2029':
            out.append('\\u%04x' % o)
        elif 0xd800 <= o < 0xe000:
            out.append('\ufffd')
        else:
            out.append(ch)
    out.append('"')
    return ''.join(out)


def go_json(obj):
    """Compact JSON with Go's HTML escaping."""
    import json
    s = json.dumps(obj, ensure_ascii=False, separators=(',', ':'), default=str)
    return (s.replace('<', '\\u003c').replace('>', '\\u003e').replace('&', '\\u0026')
            .replace('\u2028', '\\u2028').replace('\u2029', '\\u2029'))


def logfmt(s):
    """logrus text formatter: quote only when needed."""
    for ch in s:
        if ch not in _LOGFMT_SAFE:
            return go_quote(s)
    return s


def sh_quote(s):
    """al.essio.dev/pkg/shellescape.Quote."""
    if s == '':
        return "''"
    for ch in s:
        if ch not in _SH_SAFE:
            return "'" + s.replace("'", "'\"'\"'") + "'"
    return s


def rfc3339(t=None, nano=False):
    if t is None:
        t = time.time()
    lt = time.localtime(t)
    s = time.strftime('%Y-%m-%dT%H:%M:%S', lt)
    if nano:
        frac = ('%.9f' % (t - int(t)))[1:].rstrip('0')
        if frac != '.':
            s += frac
    off = lt.tm_gmtoff or 0
    if off == 0:
        return s + 'Z'
    sign = '+' if off > 0 else '-'
    off = abs(off)
    return '%s%s%02d:%02d' % (s, sign, off // 3600, off % 3600 // 60)


# --------------------------------------------------------------------------
# logging (logrus look-alike, always on stderr)

_NAMES = ['panic', 'fatal', 'error', 'warning', 'info', 'debug', 'trace']
_ABBR = ['PANI', 'FATA', 'ERRO', 'WARN', 'INFO', 'DEBU', 'TRAC']
_LEVELS = {'panic': 0, 'fatal': 1, 'error': 2, 'warn': 3, 'warning': 3,
           'info': 4, 'debug': 5, 'trace': 6}
FATAL, ERROR, WARN, INFO, DEBUG = 1, 2, 3, 4, 5


class L:
    fmt = None        # 'json', 'text' or None (decided on first use)
    level = INFO


def _field_json(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (list, tuple)):
        return '[' + ','.join(_field_json(x) for x in v) + ']'
    return json_str(str(v))


def _field_text(v):
    if isinstance(v, (list, tuple)):
        return logfmt('[' + ' '.join(str(x) for x in v) + ']')
    if isinstance(v, bool):
        return 'true' if v else 'false'
    return logfmt(str(v))


def log(lvl, msg, fields=None):
    if lvl > L.level:
        return
    now = time.time()
    fmt = L.fmt
    if fmt is None:
        fmt = L.fmt = 'tty' if _isatty(2) else 'text'
    if fmt == 'json':
        items = {'level': _NAMES[lvl], 'msg': msg, 'time': rfc3339(now)}
        if fields:
            items.update(fields)
        line = '{' + ','.join('%s:%s' % (json_str(k), _field_json(items[k]))
                              for k in sorted(items)) + '}'
    elif fmt == 'tty':
        line = '%s[%04d] %s' % (_ABBR[lvl], int(now - START_TIME), msg)
        if fields:
            line = '%-44s ' % line + ' '.join(
                '%s=%s' % (k, _field_text(fields[k])) for k in sorted(fields))
    else:
        line = 'time=%s level=%s msg=%s' % (logfmt(rfc3339(now)), _NAMES[lvl], logfmt(msg))
        if fields:
            line += ''.join(' %s=%s' % (k, _field_text(fields[k])) for k in sorted(fields))
    try:
        write_all(2, (line + '\n').encode('utf-8', 'surrogateescape'))
    except OSError:
        pass


def _isatty(fd):
    try:
        return os.isatty(fd)
    except OSError:
        return False


def write_all(fd, data):
    mv = memoryview(data)
    while mv:
        try:
            n = os.write(fd, mv)
        except BlockingIOError:
            import select
            select.select([], [fd], [], 1.0)
            continue
        mv = mv[n:]


def hang_forever():
    while True:
        time.sleep(3600)


def die_now():
    os.kill(os.getpid(), signal.SIGKILL)
    hang_forever()


# --------------------------------------------------------------------------
# fault injection and invocation log


class FAULT:
    sub = None
    call = 0
    hang = False
    die = False
    stall = False


def _fault_hit(var, sub, n):
    spec = os.environ.get(var, '')
    for item in spec.split(','):
        item = item.strip()
        if not item:
            continue
        name, _, num = item.partition(':')
        name = ALIASES.get(name.strip(), name.strip())
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


def sim_count(sub):
    """Bump the cross-process call counter of SUB; return the new value."""
    import fcntl
    d = os.path.join(lima_home(), '_sim')
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


def sim_log_invocation(argv):
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


# --------------------------------------------------------------------------
# names, directories, pid files

_HOME = None


def lima_home():
    global _HOME
    if _HOME is None:
        d = os.environ.get('LIMA_HOME') or os.path.join(os.path.expanduser('~'), '.lima')
        d = os.path.abspath(d)
        if os.path.exists(d):
            d = os.path.realpath(d)
        _HOME = d
    return _HOME


def _ident_ok(s):
    # ^[A-Za-z0-9]+(?:[._-](?:[A-Za-z0-9]+))*$ without importing re
    after_sep = True
    for ch in s:
        if ch in _ALNUM:
            after_sep = False
        elif ch in '._-' and not after_sep:
            after_sep = True
        else:
            return False
    return not after_sep


def name_error(name):
    if name == '':
        err = 'identifier must not be empty'
    elif len(name.encode('utf-8', 'surrogateescape')) > 76:
        err = 'identifier %s greater than maximum length (76 characters)' % gq(name)
    elif not _ident_ok(name):
        err = 'identifier %s must match ^[A-Za-z0-9]+(?:[._-](?:[A-Za-z0-9]+))*$' % gq(name)
    else:
        low = name.lower()
        if low.endswith('.yml') or low.endswith('.yaml'):
            return 'instance name %s must not end with .yml or .yaml suffix' % gq(name)
        return None
    return 'instance name %s is not a valid identifier: %s' % (gq(name), err)


def validate_name(name):
    err = name_error(name)
    if err:
        raise Fatal(err)


def inst_dir(name):
    validate_name(name)
    return os.path.join(lima_home(), name)


def hostname_of(name):
    return 'lima-' + name.replace('.', '-').replace('_', '-')


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


def write_file(path, data, mode=0o644):
    if isinstance(data, str):
        data = data.encode('utf-8', 'surrogateescape')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, mode)


def rmtree_safe(path):
    """Remove PATH without following symlinks or entering other mounts."""
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return
    import stat as S
    if not S.S_ISDIR(top.st_mode):
        os.unlink(path)
        return
    dev = top.st_dev
    stack = [(path, False)]
    while stack:
        p, scanned = stack.pop()
        if scanned:
            os.rmdir(p)
            continue
        try:
            entries = list(os.scandir(p))
        except PermissionError:
            os.chmod(p, 0o700)
            entries = list(os.scandir(p))
        stack.append((p, True))
        for e in entries:
            st = e.stat(follow_symlinks=False)
            if S.S_ISDIR(st.st_mode):
                if st.st_dev != dev:
                    raise Fatal('refusing to remove %s: it is a mount point' % gq(e.path))
                if not os.access(e.path, os.W_OK | os.X_OK):
                    try:
                        os.chmod(e.path, 0o700)
                    except OSError:
                        pass
                stack.append((e.path, False))
            else:
                os.unlink(e.path)


# --------------------------------------------------------------------------
# YAML (PyYAML if present, else a top-level-scalar reader)

_YAML = None


def yaml_mod():
    global _YAML
    if _YAML is None:
        _YAML = False
        if os.environ.get('LIMA_SIM_NO_YAML') != '1':
            for p in ('/usr/lib/python3/dist-packages',
                      '/usr/local/lib/python3.%d/dist-packages' % sys.version_info[1]):
                if p not in sys.path and os.path.isdir(p):
                    sys.path.append(p)
            try:
                import yaml
                _YAML = yaml
            except ImportError:
                pass
    return _YAML


def _scalar(v):
    if v in ('true', 'True', 'TRUE'):
        return True
    if v in ('false', 'False', 'FALSE'):
        return False
    if v in ('null', 'Null', 'NULL', '~'):
        return None
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


def mini_yaml(text):
    """Top-level `key: scalar` pairs only."""
    out = {}
    for line in text.splitlines():
        if not line or line[0] in ' \t#-.':
            continue
        key, sep, val = line.partition(':')
        if not sep:
            continue
        key = key.strip().strip('"\'')
        val = val.strip()
        if val[:1] in ('"', "'"):
            end = val.find(val[0], 1)
            out[key] = val[1:end] if end > 0 else val[1:]
            continue
        cut = val.find(' #')
        if cut >= 0:
            val = val[:cut].rstrip()
        if val.startswith('#'):
            val = ''
        if val in ('', '|', '>', '|-', '>-'):
            continue
        out[key] = _scalar(val)
    return out


def parse_yaml(text, path='lima.yaml'):
    y = yaml_mod()
    if not y:
        return mini_yaml(text)
    loader = getattr(y, 'CSafeLoader', None) or y.SafeLoader
    try:
        data = y.load(text, Loader=loader)
    except y.YAMLError as e:
        raise Fatal('failed to load YAML file %s: %s' % (gq(path), str(e).replace('\n', ' ')))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise Fatal('failed to load YAML file %s: expected a mapping at the top level' % gq(path))
    return data


def ram_in_bytes(v):
    """docker/go-units RAMInBytes (binary units)."""
    if isinstance(v, bool):
        raise ValueError(v)
    if isinstance(v, (int, float)):
        return int(v)
    s = str(v).strip()
    i = 0
    while i < len(s) and (s[i].isdigit() or s[i] == '.'):
        i += 1
    num, unit = s[:i], s[i:].strip().lower()
    if not num:
        raise ValueError(v)
    mult = {'': 1, 'b': 1}
    for k, p in (('k', 1), ('m', 2), ('g', 3), ('t', 4), ('p', 5)):
        for suffix in (k, k + 'b', k + 'i', k + 'ib'):
            mult[suffix] = 1024 ** p
    if unit not in mult:
        raise ValueError(v)
    return int(float(num) * mult[unit])


def bytes_size(n):
    """docker/go-units BytesSize."""
    units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB']
    f = float(n)
    i = 0
    while f >= 1024 and i < len(units) - 1:
        f /= 1024
        i += 1
    return '%s%s' % (('%.4g' % f), units[i])


def host_arch():
    m = os.uname().machine
    return {'arm64': 'aarch64', 'amd64': 'x86_64', 'armv8l': 'armv7l'}.get(m, m)


def default_resources():
    cpus = min(4, os.cpu_count() or 1)
    try:
        mem = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2
    except (ValueError, OSError):
        mem = 4 << 30
    return cpus, min(4 << 30, mem), 100 << 30


def read_top_level(d):
    """Cheap read of lima.yaml's top-level scalars (no PyYAML)."""
    try:
        with open(os.path.join(d, 'lima.yaml'), 'rb') as f:
            return mini_yaml(f.read().decode('utf-8', 'surrogateescape'))
    except OSError:
        return {}


# --------------------------------------------------------------------------
# the guest user and its filesystem

_GUSER = None


def guest_user():
    """(name, uid, gid): `lane`/1000 when running as root, else the host user."""
    global _GUSER
    if _GUSER is None:
        uid = os.geteuid()
        if uid == 0:
            _GUSER = ('lane', 1000, 1000)
        else:
            try:
                import pwd
                name = pwd.getpwuid(uid).pw_name
            except (ImportError, KeyError):
                name = os.environ.get('USER') or 'user'
            if not name or not _ident_ok(name.replace('_', '-')):
                name = 'user'
            _GUSER = (name, uid, os.getegid())
    return _GUSER


def guest_home():
    return '/home/%s.guest' % guest_user()[0]


MERGED_DIRS = ('bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32')

GUEST_PROFILE = """\
# /etc/profile of a limactl-simulator guest (read by login shells).
umask 022
if [ -d /etc/profile.d ]; then
  for i in /etc/profile.d/*.sh; do
    if [ -r "$i" ]; then . "$i"; fi
  done
  unset i
fi
"""


def build_guestfs(root, name):
    """Create (or complete) the persistent root filesystem of the guest.

    Its modes belong to the guest's disk, not to the host process that
    runs limactl: agent-laned runs limactl under umask 077."""
    old = os.umask(0o022)
    try:
        _build_guestfs(root, name)
    finally:
        os.umask(old)


def _build_guestfs(root, name):
    user, uid, gid = guest_user()
    home = guest_home()
    os.makedirs(root, 0o755, exist_ok=True)
    os.chmod(root, 0o755)
    for d, mode in (('etc', 0o755), ('etc/profile.d', 0o755), ('home', 0o755),
                    ('root', 0o700), ('tmp', 0o1777), ('var', 0o755),
                    ('var/tmp', 0o1777), ('var/log', 0o755), ('var/lib', 0o755),
                    ('var/cache', 0o755), ('opt', 0o755), ('mnt', 0o755),
                    ('srv', 0o755), ('media', 0o755), ('run', 0o755), ('usr', 0o755),
                    ('proc', 0o555), ('dev', 0o755)):
        p = os.path.join(root, d)
        if not os.path.isdir(p):
            os.mkdir(p)
            os.chmod(p, mode)
    for d in MERGED_DIRS:
        host = '/' + d
        p = os.path.join(root, d)
        if os.path.lexists(p):
            continue
        if os.path.islink(host):
            os.symlink(os.readlink(host), p)
        elif os.path.isdir(host):
            os.mkdir(p)          # mount point for a read-only bind
    hp = root + home
    if not os.path.isdir(hp):
        os.mkdir(hp)
        os.chmod(hp, 0o755)
        if os.geteuid() == 0:
            os.chown(hp, uid, gid)
    etc = os.path.join(root, 'etc')
    hn = hostname_of(name)
    files = {
        'passwd': 'root:x:0:0:root:/root:/bin/bash\n'
                  + ('' if uid == 65534 else 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n')
                  + '%s:x:%d:%d:%s:%s:/bin/bash\n' % (user, uid, gid, user, home),
        'group': 'root:x:0:\nnogroup:x:65534:\n%s:x:%d:\n' % (user, gid),
        'hostname': hn + '\n',
        'hosts': '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' % hn,
        'profile': GUEST_PROFILE,
        'shells': '/bin/sh\n/bin/bash\n/usr/bin/sh\n/usr/bin/bash\n',
        'nsswitch.conf': 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n',
        'resolv.conf': '# no network in the limactl simulator\n',
    }
    if gid in (0, 65534):
        files['group'] = 'root:x:0:\nnogroup:x:65534:\n'
    for fname, content in files.items():
        p = os.path.join(etc, fname)
        if not os.path.exists(p):
            write_file(p, content)
    for link, target in (('os-release', '../usr/lib/os-release'),
                         ('mtab', '../proc/self/mounts'),
                         ('localtime', '/usr/share/zoneinfo/Etc/UTC')):
        p = os.path.join(etc, link)
        if not os.path.lexists(p):
            os.symlink(target, p)
    p = os.path.join(etc, 'ld.so.cache')
    if not os.path.exists(p) and os.path.isfile('/etc/ld.so.cache'):
        with open('/etc/ld.so.cache', 'rb') as f:
            write_file(p, f.read())
    alt = os.path.join(etc, 'alternatives')     # mount point: the host's is bound read-only
    if not os.path.isdir(alt):
        os.mkdir(alt)


def download_image():
    """Lima's fileutils.DownloadFile of the image (pkg/fileutils/download.go):
    "Attempting to download the image" with its location, arch and digest,
    then "Using cache ..." (the default here: a cached image), or after
    LIMA_SIM_DOWNLOAD_MS of a first, uncached download "Downloaded the image
    from ...". No byte is fetched; only the messages and the time."""
    arch = host_arch()
    loc = ('https://cloud-images.ubuntu.com/releases/noble/release/'
           'ubuntu-24.04-server-cloudimg-%s.img'
           % ('arm64' if arch == 'aarch64' else 'amd64'))
    log(INFO, 'Attempting to download the image',
        {'arch': arch, 'digest': '', 'location': loc})
    try:
        ms = max(0, int(os.environ.get('LIMA_SIM_DOWNLOAD_MS') or 0))
    except ValueError:
        ms = 0
    if ms > 0:
        time.sleep(ms / 1000.0)
        log(INFO, 'Downloaded the image from %s' % go_quote(loc))
    else:
        import hashlib
        cache = os.path.join(os.environ.get('XDG_CACHE_HOME') or
                             os.path.join(os.path.expanduser('~'), '.cache'),
                             'lima', 'download', 'by-url-sha256',
                             hashlib.sha256(loc.encode()).hexdigest(), 'data')
        log(INFO, 'Using cache %s' % go_quote(cache))


def prepare_disk(d, name):
    download_image()
    build_guestfs(os.path.join(d, 'guestfs'), name)
    write_file(os.path.join(d, 'disk'),
               'limactl-simulator disk placeholder; the guest filesystem is %s/guestfs\n' % d)


# --------------------------------------------------------------------------
# instances

class Inst(object):
    def __init__(self, name, d):
        self.name = name
        self.dir = d
        self.status = ''
        self.ha_pid = 0
        self.drv_pid = 0
        self.errors = []
        self.ssh_port = 0
        self.config = None
        self.cpus = self.memory = self.disk = 0
        self.arch = host_arch()
        self.vm_type = VM_TYPE
        self.message = ''
        self.protected = False
        self.lima_version = ''


def _ssh_port_from_config(d):
    try:
        with open(os.path.join(d, 'ssh.config'), 'rb') as f:
            for line in f.read().decode('utf-8', 'replace').splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == 'Port' and parts[1].isdigit():
                    return int(parts[1])
    except OSError:
        pass
    return 0


def ha_info(d):
    """GET /v1/info on ha.sock; returns the sshLocalPort."""
    import socket
    path = os.path.join(d, 'ha.sock')
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect(path)
        s.sendall(b'GET /v1/info HTTP/1.1\r\nHost: lima-hostagent\r\nConnection: close\r\n\r\n')
        resp = b''
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            resp += chunk
    finally:
        s.close()
    head, _, body = resp.partition(b'\r\n\r\n')
    if not head.startswith(b'HTTP/1.1 200'):
        raise OSError('unexpected response %r' % head[:40])
    key = b'"sshLocalPort":'
    i = body.find(key)
    if i < 0:
        return 0
    j = i + len(key)
    k = j
    while k < len(body) and body[k:k + 1].isdigit():
        k += 1
    return int(body[j:k] or b'0')


def inspect(name, full=False, http=True, use_yaml=True):
    d = inst_dir(name)
    if not os.path.isfile(os.path.join(d, 'lima.yaml')):
        raise NotExist(name, d, os.path.isdir(d))
    inst = Inst(name, d)
    if full:
        _load_config(inst, use_yaml)
    inst.ha_pid = read_pid(os.path.join(d, 'ha.pid'), 'ha')
    inst.drv_pid = read_pid(os.path.join(d, VM_TYPE + '.pid'), 'drv')
    if inst.ha_pid and inst.drv_pid:
        inst.status = 'Running'
    elif not inst.ha_pid and not inst.drv_pid:
        inst.status = 'Stopped'
    elif inst.ha_pid:
        inst.status = 'Broken'
        inst.errors.append('host agent is running but driver is not')
    else:
        inst.status = 'Broken'
        inst.errors.append('%s driver is running but host agent is not' % VM_TYPE)
    if inst.ha_pid and http:
        try:
            inst.ssh_port = ha_info(d)
        except (OSError, ValueError) as e:
            inst.status = 'Broken'
            inst.errors.append('failed to get Info from %s: %s' % (go_quote(os.path.join(d, 'ha.sock')), e))
    if not inst.ssh_port:
        inst.ssh_port = _ssh_port_from_config(d)
    if full and inst.errors and inst.config is None:
        inst.status = 'Broken'
    return inst


def _load_config(inst, use_yaml=True):
    d = inst.dir
    try:
        with open(os.path.join(d, 'lima.yaml'), 'rb') as f:
            text = f.read().decode('utf-8', 'surrogateescape')
        cfg = parse_yaml(text, os.path.join(d, 'lima.yaml')) if use_yaml else mini_yaml(text)
    except (OSError, Fatal) as e:
        inst.errors.append(str(e))
        return
    cpus, mem, disk = default_resources()
    user, uid, gid = guest_user()
    try:
        inst.cpus = int(cfg.get('cpus') or cpus)
        inst.memory = ram_in_bytes(cfg.get('memory') or mem)
        inst.disk = ram_in_bytes(cfg.get('disk') or disk)
    except (TypeError, ValueError) as e:
        inst.errors.append('invalid resource in lima.yaml: %s' % e)
        return
    arch = cfg.get('arch')
    if isinstance(arch, str) and arch not in ('', 'default'):
        inst.arch = {'arm64': 'aarch64', 'amd64': 'x86_64'}.get(arch, arch)
    msg = cfg.get('message')
    inst.message = msg if isinstance(msg, str) else ''
    filled = dict(cfg)
    filled['vmType'] = cfg.get('vmType') or VM_TYPE
    filled['arch'] = inst.arch
    filled['cpus'] = inst.cpus
    filled['memory'] = cfg.get('memory') or bytes_size(inst.memory)
    filled['disk'] = cfg.get('disk') or bytes_size(inst.disk)
    filled.setdefault('plain', False)
    filled['user'] = dict(cfg.get('user') or {})
    for k, v in (('name', user), ('comment', user), ('home', guest_home()),
                 ('shell', '/bin/bash'), ('uid', uid)):
        filled['user'].setdefault(k, v)
    inst.config = filled
    inst.protected = os.path.exists(os.path.join(d, 'protected'))
    try:
        with open(os.path.join(d, 'lima-version'), 'rb') as f:
            inst.lima_version = f.read().decode('utf-8', 'replace').strip()
    except OSError:
        pass


# --------------------------------------------------------------------------
# templates and edit flags

TEMPLATES = ('default', 'alpine', 'archlinux', 'debian', 'docker', 'docker-rootful',
             'fedora', 'ubuntu', 'ubuntu-lts', '_images/ubuntu', '_images/ubuntu-lts',
             '_images/debian', '_default/mounts')


def builtin_template(loc):
    if loc not in TEMPLATES:
        return None
    text = ('# Built-in template %s of the limactl simulator (stand-in for Lima\'s).\n'
            'minimumLimaVersion: 2.0.0\n'
            'vmType: qemu\n'
            'images:\n'
            '- location: "https://cloud-images.ubuntu.com/releases/noble/release/'
            'ubuntu-24.04-server-cloudimg-amd64.img"\n'
            '  arch: "x86_64"\n'
            '- location: "https://cloud-images.ubuntu.com/releases/noble/release/'
            'ubuntu-24.04-server-cloudimg-arm64.img"\n'
            '  arch: "aarch64"\n' % gq('template:' + loc))
    if not loc.startswith('_images/'):
        text += 'mounts:\n- location: "~"\n'
    if loc.startswith('docker'):
        text += 'containerd:\n  system: false\n  user: false\n'
    return text.encode()


def fmt_float(v):
    s = ('%.6f' % v).rstrip('0').rstrip('.')
    return s or '0'


def _set_top_level(text, key, value):
    """Replace (or append) the top-level KEY of a YAML document textually."""
    lines = text.splitlines(True)
    out = []
    i = 0
    done = False
    while i < len(lines):
        ln = lines[i]
        k, sep, _ = ln.partition(':')
        if not done and sep and ln[:1] not in (' ', '\t', '#', '-') and k.strip().strip('"\'') == key:
            i += 1
            while i < len(lines):
                nxt = lines[i]
                if nxt.startswith('---') or nxt.startswith('...'):
                    break
                if nxt.strip() == '' or nxt[:1] in (' ', '\t') or nxt.startswith('- ') or nxt.rstrip() == '-':
                    i += 1
                    continue
                break
            out.append('%s: %s\n' % (key, value))
            done = True
            continue
        out.append(ln)
        i += 1
    if not done:
        if out and not out[-1].endswith('\n'):
            out[-1] += '\n'
        out.append('%s: %s\n' % (key, value))
    return ''.join(out)


def _parse_set(expr):
    path, sep, value = expr.partition('=')
    path = path.strip()
    if not sep or path.endswith(('+', '|', '-', '*', '/')) or not path.startswith('.'):
        raise Fatal('--set %s: the limactl simulator only supports `.path = value` expressions' % gq(expr))
    keys = [k for k in path[1:].split('.')]
    if not keys or any(not k or not all(c in _ALNUM or c in '_-' for c in k) for k in keys):
        raise Fatal('--set %s: the limactl simulator only supports `.path = value` expressions' % gq(expr))
    return keys, value.strip()


UNSUPPORTED_EDIT_FLAGS = ('param', 'mount', 'mount-only', 'mount-type', 'mount-writable',
                          'mount-inotify', 'network', 'port-forward', 'dns', 'video',
                          'rosetta', 'nested-virt', 'audio-device', 'audio-interface')
NEW_ONLY_FLAGS = ('plain', 'arch', 'containerd')


def apply_edits(text, o, new):
    for f in UNSUPPORTED_EDIT_FLAGS:
        if f in o:
            raise Fatal('flag --%s is not supported by the limactl simulator' % f)
    edits = []
    if 'cpus' in o:
        if o['cpus'] < 0:
            raise Fatal('cpus must be a non-negative number, got %d' % o['cpus'])
        edits.append((['cpus'], str(o['cpus'])))
    if 'memory' in o:
        edits.append((['memory'], '"%sGiB"' % fmt_float(o['memory'])))
    if o.get('mount-none'):
        edits.append((['mounts'], 'null'))
    if 'vm-type' in o:
        edits.append((['vmType'], json_str(o['vm-type'])))
    if 'ssh-port' in o:
        edits.append((['ssh', 'localPort'], str(o['ssh-port'])))
    for expr in o.get('set', []):
        edits.append(_parse_set(expr))
    if 'disk' in o:
        edits.append((['disk'], '"%sGiB"' % fmt_float(o['disk'])))
    if 'shell' in o:
        edits.append((['user', 'shell'], json_str(o['shell'])))
    for f in NEW_ONLY_FLAGS:
        if f not in o:
            continue
        if not new:
            log(WARN, 'Ignoring %s flag for an existing instance' % gq('--' + f))
            continue
        if f == 'plain':
            if o['plain']:
                edits.append((['plain'], 'true'))
        elif f == 'arch':
            edits.append((['arch'], json_str(o['arch'])))
        else:
            c = o['containerd']
            m = {'user': (False, True), 'system': (True, False), 'user+system': (True, True),
                 'system+user': (True, True), 'none': (False, False)}.get(c)
            if m is None:
                raise Fatal('unknown containerd mode %s' % gq(c))
            edits.append((['containerd'], '{system: %s, user: %s}' % ('true' if m[0] else 'false',
                                                                    'true' if m[1] else 'false')))
    if not edits:
        return text
    if all(len(p) == 1 for p, _ in edits):
        for p, v in edits:
            text = _set_top_level(text, p[0], v)
        return text
    y = yaml_mod()
    if not y:
        raise Fatal('nested edits need PyYAML (python3-yaml) in the limactl simulator')
    data = parse_yaml(text)
    for p, v in edits:
        node = data
        for k in p[:-1]:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]
        node[p[-1]] = y.safe_load(v) if v else None
    return y.safe_dump(data, default_flow_style=False, sort_keys=False)


def validate_config(text, path):
    cfg = parse_yaml(text, path)
    if 'cpus' in cfg and cfg['cpus'] is not None:
        if isinstance(cfg['cpus'], bool) or not isinstance(cfg['cpus'], int) or cfg['cpus'] < 0:
            raise Fatal('field `cpus` must be a non-negative integer, got %s' % gq(cfg['cpus']))
    for k in ('memory', 'disk'):
        if cfg.get(k) is not None:
            try:
                ram_in_bytes(cfg[k])
            except ValueError:
                raise Fatal('field %s has an invalid value %s' % (gq(k), gq(cfg[k])))
    vt = cfg.get('vmType')
    if vt not in (None, '', VM_TYPE):
        raise Fatal('vmType %s is not supported by the limactl simulator (only %s)' % (gq(vt), gq(VM_TYPE)))
    mv = cfg.get('minimumLimaVersion')
    if mv:
        def vt_(s):
            return tuple(int(x) if x.isdigit() else 0 for x in str(s).lstrip('v').split('-')[0].split('.'))
        if vt_(mv) > vt_(LIMA_VERSION):
            raise Fatal('template requires Lima version %s; this is only %s' % (mv, LIMA_VERSION))
    return cfg


def read_template(arg, name_flag):
    """Returns (yaml bytes, name derived from the locator or None)."""
    if arg == '-':
        if not name_flag:
            raise Fatal('must pass instance name with --name when reading template from stdin')
        return sys.stdin.buffer.read(), None
    if arg.startswith('template:'):
        loc = arg[len('template:'):]
        if loc.startswith('//'):
            loc = loc[2:]
            log(WARN, 'Template locator %s should be written %s since Lima v2.0'
                % (gq(arg), gq('template:' + loc)))
        data = builtin_template(loc)
        if data is None:
            raise Fatal('template %s not found' % gq(loc))
        return data, loc.rsplit('/', 1)[-1]
    if arg.startswith('http://') or arg.startswith('https://'):
        raise Fatal('cannot fetch %s: the limactl simulator has no network access' % gq(arg))
    path = arg[len('file://'):] if arg.startswith('file://') else arg
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except FileNotFoundError:
        raise Fatal('open %s: no such file or directory' % path)
    except OSError as e:
        raise Fatal('open %s: %s' % (path, (e.strerror or str(e)).lower()))
    base = os.path.basename(path).lower()
    for suffix in ('.yaml', '.yml'):
        if base.endswith(suffix):
            base = base[:-len(suffix)]
    return data, base


CLOUD_CONFIG = """\
#cloud-config
# Written by the limactl simulator for reference only.
hostname: %s
users:
  - name: %s
    uid: %d
    homedir: %s
    shell: /bin/bash
"""


def create_instance(o, name, data, cmd):
    validate_name(name)
    home = lima_home()
    d = os.path.join(home, name)
    if cmd == 'create' and os.path.isfile(os.path.join(d, 'lima.yaml')):
        raise Fatal('instance %s already exists' % gq(name))
    text = data.decode('utf-8', 'surrogateescape')
    edited = apply_edits(text, o, True)
    if edited != text:
        data = edited.encode('utf-8', 'surrogateescape')
    validate_config(edited, name)
    if not TTY.value:
        log(INFO, 'Terminal is not available, proceeding without opening an editor')
    sock = os.path.join(d, LONGEST_SOCK)
    if len(sock) >= UNIX_PATH_MAX:
        raise Fatal('instance name %s too long: %s must be less than UNIX_PATH_MAX=%d characters, but is %d'
                    % (gq(name), gq(sock), UNIX_PATH_MAX, len(sock)))
    os.makedirs(home, 0o755, exist_ok=True)
    try:
        os.mkdir(d, 0o755)
    except FileExistsError:
        raise Fatal('instance %s already exists (%s)' % (gq(name), gq(d)))
    if FAULT.stall and FAULT.sub == 'create':
        # LIMA_SIM_STALL: the directory is made, lima.yaml is not yet.
        ms = os.environ.get('LIMA_SIM_STALL_MS', '')
        if not ms:
            hang_forever()
        time.sleep(int(ms) / 1000)
    ok = False
    try:
        write_file(os.path.join(d, 'lima.yaml'), data)
        write_file(os.path.join(d, 'lima-version'), LIMA_VERSION, 0o444)
        user, uid, gid = guest_user()
        write_file(os.path.join(d, 'cloud-config.yaml'),
                   CLOUD_CONFIG % (hostname_of(name), user, uid, guest_home()))
        if FAULT.die and FAULT.sub == 'create':
            die_now()
        prepare_disk(d, name)
        ok = True
    finally:
        if not ok:
            try:
                rmtree_safe(d)
            except (OSError, Fatal):
                pass
    return inspect(name, http=False)


def load_or_create(o, args, cmd):
    """Lima's loadOrCreateInstance: returns (inst, created)."""
    arg = args[0] if args else None
    name_flag = o.get('name')
    if arg is None:
        name = name_flag or 'default'
        if cmd == 'start':
            try:
                return inspect(name), False
            except NotExist:
                pass
        return create_instance(o, name, builtin_template('default'), cmd), True
    if name_error(arg) is None:
        if name_flag and name_flag != arg:
            raise Fatal('instance name %s and CLI flag --name=%s cannot be specified together'
                        % (gq(arg), gq(name_flag)))
        try:
            inst = inspect(arg)
        except NotExist:
            pass
        else:
            if cmd == 'create':
                raise Fatal('instance %s already exists' % gq(arg))
            return inst, False
        log(WARN, 'Creating an instance %s from template:default (Not from template:%s)' % (gq(arg), arg))
        log(WARN, 'This form is deprecated. Use %s instead'
            % gq('limactl create --name=%s template:default' % arg))
        return create_instance(o, arg, builtin_template('default'), cmd), True
    data, tname = read_template(arg, name_flag)
    name = name_flag or tname
    return create_instance(o, name, data, cmd), True


# --------------------------------------------------------------------------
# hostagent (hidden subcommand run in the background by `start`)

def _status_json(port, running=False, exiting=False, errors=None):
    parts = []
    if running:
        parts.append('"running":true')
    if exiting:
        parts.append('"exiting":true')
    if errors:
        parts.append('"errors":[' + ','.join(json_str(e) for e in errors) + ']')
    if port:
        parts.append('"sshLocalPort":%d' % port)
    return '{' + ','.join(parts) + '}'


def emit_event(port, **kw):
    line = '{"time":%s,"status":%s}\n' % (json_str(rfc3339(nano=True)), _status_json(port, **kw))
    try:
        write_all(1, line.encode())
    except OSError:
        pass


def find_exe(name):
    for p in (os.environ.get('PATH') or '/usr/bin:/bin').split(':') + ['/usr/bin', '/bin']:
        c = os.path.join(p or '.', name)
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def guest_bwrap_args(d, name, info_fd):
    """bwrap options; they travel through --args so the guest's /proc/1/cmdline
    does not reveal host paths."""
    args = ['--info-fd', str(info_fd),
            '--bind', os.path.join(d, 'guestfs'), '/']
    if writable_usr():
        # The driver shim mounted the per-instance overlay (host /usr below,
        # the instance's own upper layer above) in its mount namespace.
        args += ['--bind', os.path.join(d, 'usrfs', 'merged'), '/usr']
    else:
        args += ['--ro-bind', '/usr', '/usr']
    for m in MERGED_DIRS:
        if not os.path.islink('/' + m) and os.path.isdir('/' + m):
            args += ['--ro-bind', '/' + m, '/' + m]
    # the /usr/bin/awk -> /etc/alternatives/awk -> /usr/bin/mawk kind of links
    args += ['--ro-bind-try', '/etc/alternatives', '/etc/alternatives']
    args += ['--proc', '/proc']
    if os.geteuid() == 0:
        args += ['--dev', '/dev']
    else:
        # Unprivileged, `--dev` (devpts) makes bwrap nest a second user
        # namespace that nsenter could not join; build /dev from binds.
        args += ['--unshare-user', '--tmpfs', '/dev']
        for dev in ('null', 'zero', 'full', 'random', 'urandom', 'tty'):
            args += ['--dev-bind', '/dev/' + dev, '/dev/' + dev]
        args += ['--symlink', '/proc/self/fd', '/dev/fd', '--tmpfs', '/dev/shm']
        for i, std in enumerate(('stdin', 'stdout', 'stderr')):
            args += ['--symlink', '/proc/self/fd/%d' % i, '/dev/' + std]
    args += ['--tmpfs', '/run']
    if writable_usr():
        args += ['--bind', os.path.join(d, 'simrun'), '/run/lima-sim']
    args += ['--unshare-pid', '--unshare-net', '--unshare-ipc', '--unshare-uts',
             '--unshare-cgroup-try', '--hostname', hostname_of(name),
             '--die-with-parent', '--new-session', '--chdir', guest_home()]
    return args


GUEST_INIT = ['/bin/sh', '-c', ': > %s && exec sleep infinity' % BOOT_MARKER]

# The driver process (qemu.pid) stands in for QEMU: a shell that keeps every
# descriptor it inherited and waits for bwrap.  bwrap's own processes close
# inherited descriptors, so they could not play that part.  bwrap's
# --die-with-parent takes the sandbox down when this shell dies.
DRIVER_MARK = 'lima-sim-qemu'


def writable_usr():
    """A writable per-instance /usr (and with it guest root and sudo) needs
    overlayfs, which the simulator mounts only when it runs as root (CI)."""
    return os.geteuid() == 0 and os.path.exists(UNSHARE)


def overlay_options(d):
    u = os.path.join(d, 'usrfs')
    paths = [os.path.join(u, 'layer'), '/usr', os.path.join(u, 'upper'), os.path.join(u, 'work')]
    for p in paths:
        if any(c in p for c in ',:\\\n'):
            raise Fatal('the limactl simulator cannot mount an overlay on %s (a comma, colon or '
                        'backslash in LIMA_HOME)' % gq(p))
    return 'lowerdir=%s:%s,upperdir=%s,workdir=%s' % tuple(paths)


def prepare_usrfs(d):
    """The instance's writable /usr: an overlay whose upper layer lives in
    the instance directory (so it survives stop/start and `clone` copies
    it, like a VM disk).  The lowest layers are the host's /usr and a tiny
    layer with the guest's `sudo`, refreshed at each start."""
    u = os.path.join(d, 'usrfs')
    # Explicit modes: a directory of a layer gives the merged /usr (and
    # /usr/bin) its mode, and agent-laned runs limactl under umask 077.
    for sub in ('', 'upper', 'work', 'merged', 'layer', 'layer/bin'):
        p = os.path.join(u, sub)
        if not os.path.isdir(p):
            os.mkdir(p)
        os.chmod(p, 0o755 if sub != 'work' else 0o700)
    with open(GUEST_SUDO, 'rb') as f:
        write_file(os.path.join(u, 'layer', 'bin', 'sudo'), f.read(), 0o755)
    run = os.path.join(d, 'simrun')
    if not os.path.isdir(run):
        os.mkdir(run, 0o755)
    os.chmod(run, 0o755)


def driver_shim(private_fds, d=None):
    """The shell that plays QEMU.  It runs bwrap in the background so that it
    can drop the pipes only bwrap needs before waiting, and keeps everything
    else it inherited.  When the hostagent dies it gets SIGTERM (setpriv
    --pdeathsig) and SIGKILLs its process group: the hostagent's group, where
    a bwrap child that is still setting up the sandbox (and has not armed its
    own parent-death signal yet) also lives.  A fully started sandbox dies
    through bwrap's --die-with-parent.  The $PPID test covers a hostagent
    that died before the parent-death signal was armed."""
    closes = ''.join(' %d<&-' % fd for fd in private_fds)
    mount = ''
    if d is not None and writable_usr():
        mount = ('mount -t overlay lima-sim-usr -o %s %s || exit 1; '
                 % (sh_quote(overlay_options(d)), sh_quote(os.path.join(d, 'usrfs', 'merged'))))
    script = ('trap "kill -KILL 0" TERM; [ "$PPID" = %d ] || exit 1; %s'
              '"$@" & exec%s; wait $!' % (os.getpid(), mount, closes))
    shim = ['/bin/sh', '-c', script, DRIVER_MARK]
    if mount:
        # unshare execs (no fork): the shell keeps the pid written to qemu.pid
        shim = [UNSHARE, '--mount', '--propagation', 'private', '--'] + shim
    if os.path.exists(SETPRIV):
        shim = [SETPRIV, '--pdeathsig', 'TERM', '--'] + shim
    return shim


def write_ssh_config(d, name, port):
    user = guest_user()[0]
    text = ('Host %s\n'
            '  IdentityFile "%s"\n'
            '  StrictHostKeyChecking no\n'
            '  UserKnownHostsFile /dev/null\n'
            '  NoHostAuthenticationForLocalhost yes\n'
            '  PreferredAuthentications publickey\n'
            '  Compression no\n'
            '  BatchMode yes\n'
            '  IdentitiesOnly yes\n'
            '  User %s\n'
            '  ControlMaster auto\n'
            '  ControlPath "%s"\n'
            '  ControlPersist yes\n'
            '  Hostname 127.0.0.1\n'
            '  Port %d\n') % (hostname_of(name), os.path.join(lima_home(), '_config', 'user'),
                              user, os.path.join(d, 'ssh.sock'), port)
    write_file(os.path.join(d, 'ssh.config'), text, 0o600)


def _serve_http(lsock, port):
    try:
        c, _ = lsock.accept()
    except OSError:
        return
    try:
        c.settimeout(0.5)
        req = b''
        while b'\r\n\r\n' not in req and len(req) < 65536:
            chunk = c.recv(4096)
            if not chunk:
                break
            req += chunk
        parts = req.split(b'\r\n', 1)[0].split()
        if len(parts) >= 2 and parts[0] == b'GET' and parts[1] == b'/v1/info':
            body = b'{"sshLocalPort":%d}' % port
            head = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n'
        else:
            body = b'404 page not found\n'
            head = b'HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n'
        c.sendall(head + b'Content-Length: %d\r\nConnection: close\r\n\r\n' % len(body) + body)
    except OSError:
        pass
    finally:
        c.close()


def guest_root_argv(gpid, argv):
    """nsenter into the guest as its root: uid 0 with ROOT_CAPS only."""
    return ([NSENTER, '-t', str(gpid), '-m', '-u', '-i', '-n', '-p', '-r', '-w', '--', SETPRIV,
             '--reuid=0', '--regid=0', '--clear-groups', '--inh-caps=-all',
             '--bounding-set=-all,' + ','.join('+' + c for c in ROOT_CAPS),
             '--no-new-privs', '--'] + argv)


def spawn_with(full, env, fds):
    """Fork FULL in its own session with FDS as stdin/stdout/stderr."""
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


def _wait_code(status):
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _killpg_wait(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


def passwordless_sudo(text):
    """Lima's `user.passwordlessSudo` (default true)."""
    cfg = {}
    if yaml_mod():
        try:
            cfg = parse_yaml(text)
        except Fatal:
            cfg = {}
        u = cfg.get('user') if isinstance(cfg, dict) else None
        v = u.get('passwordlessSudo') if isinstance(u, dict) else None
        return v is not False
    import re
    return not re.search(r'(?m)^user:\s*\n(?:[ \t]+.*\n)*?[ \t]+passwordlessSudo:\s*false\s*$', text)


def provision_entries(text):
    """[(mode, script)] of lima.yaml's `provision:` list."""
    if yaml_mod():
        try:
            cfg = parse_yaml(text)
        except Fatal:
            return []
        out = []
        for p in (cfg.get('provision') or []) if isinstance(cfg, dict) else []:
            if isinstance(p, dict) and isinstance(p.get('script'), str):
                out.append((str(p.get('mode') or 'system'), p['script']))
        return out
    # Without PyYAML: `- mode: M` / `script: |` items with literal blocks.
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines) and lines[i].rstrip() != 'provision:':
        i += 1
    i += 1
    cur = None
    while i < len(lines):
        ln = lines[i]
        if ln and not ln[0].isspace() and not ln.startswith('-'):
            break
        st = ln.strip()
        if st.startswith('- '):
            cur = {'mode': 'system'}
            out.append(cur)
            st = st[2:].strip()
        key, _, val = st.partition(':')
        val = val.strip()
        if cur is not None and key == 'mode':
            cur['mode'] = val.strip('"\'')
        elif cur is not None and key == 'script' and val in ('|', '|-', '|+'):
            ind = len(ln) - len(ln.lstrip()) + (2 if ln.lstrip().startswith('- ') else 0)
            body = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > ind):
                body.append(lines[i])
                i += 1
            cut = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
            cur['script'] = '\n'.join(b[cut:] for b in body).rstrip('\n') + '\n'
            continue
        i += 1
    return [(c['mode'], c['script']) for c in out if 'script' in c]


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
        hn = hostname_of(name)
        self.steps = [('identity', 'system', IDENTITY_SCRIPT % (hn, hn))]
        for i, (mode, script) in enumerate(provision_entries(text)):
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
            code = _wait_code(st)
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
            write_all(fd, script.encode('utf-8', 'surrogateescape'))
            os.lseek(fd, 0, 0)
            user, uid, gid = guest_user()
            argv = guest_root_argv(gpid, ['/bin/sh', '-c', PROVISION_WRAPPER, 'provision', mode, user,
                                          str(uid), str(gid), guest_home(), GUEST_PATH])
            null = os.open('/dev/null', os.O_WRONLY | os.O_CLOEXEC)
            try:
                self.pid = spawn_with(argv, {'PATH': GUEST_PATH}, (fd, null, null))
            finally:
                os.close(null)
        finally:
            os.close(fd)
        return False

    def kill(self):
        if self.pid:
            _killpg_wait(self.pid)
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
        user, guid, ggid = guest_user()
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
            home, tuser = guest_home(), user
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
        env.update({'PATH': GUEST_PATH, 'HOME': home, 'USER': tuser, 'LOGNAME': tuser,
                    'SHELL': '/bin/bash', 'SUDO_USER': caller, 'SUDO_UID': str(uid),
                    'SUDO_GID': str(0 if uid == 0 else ggid), 'SUDO_COMMAND': ' '.join(cmd)})
        env.setdefault('LANG', 'C.UTF-8')
        inner = ['/bin/sh', '-c', 'cd "$1" 2>/dev/null || cd /; shift; exec "$@"', 'sudo', cwd] + cmd
        full = guest_root_argv(self.gpid, inner) if tuser == 'root' else guest_argv(self.gpid, inner)
        return spawn_with(full, env, fds)

    def _on_data(self, c):
        try:
            data = c.recv(4096)
        except BlockingIOError:
            return
        except OSError:
            data = b''
        pid = self.conns[c]
        if not data:
            _killpg_wait(pid)
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
                c.sendall(b'EXIT %d\n' % _wait_code(st))
            except OSError:
                pass
            c.close()
            del self.conns[c]

    def close(self):
        for c, pid in list(self.conns.items()):
            _killpg_wait(pid)
            c.close()
        self.conns = {}
        self.lsock.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass


def hostagent_main(argv):
    import socket
    import select
    import subprocess
    L.fmt = 'json'
    pidfile = sockpath = name = None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ('--pidfile', '--socket') and i + 1 < len(argv):
            if a == '--pidfile':
                pidfile = argv[i + 1]
            else:
                sockpath = argv[i + 1]
            i += 2
            continue
        if a.startswith('--pidfile='):
            pidfile = a.split('=', 1)[1]
        elif a.startswith('--socket='):
            sockpath = a.split('=', 1)[1]
        elif not a.startswith('-'):
            name = a
        i += 1
    if not (pidfile and sockpath and name):
        log(FATAL, 'usage: limactl hostagent --pidfile FILE --socket SOCK INSTANCE')
        return 1
    d = os.path.dirname(pidfile)
    try:
        boot_s = max(0, int(os.environ.get('LIMA_SIM_BOOT_MS') or 50)) / 1000.0
    except ValueError:
        boot_s = 0.05

    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    stop_sig = []

    def on_stop(signum, frame):
        stop_sig.append(signum)

    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGCHLD, lambda s, f: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    try:
        fd = os.open(pidfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        log(FATAL, 'pidfile %s already exists' % go_quote(pidfile))
        return 1
    os.write(fd, b'%d\n' % os.getpid())
    os.close(fd)

    port = 0
    proc = None
    cpid = 0
    lsock = None
    sudo = prov = None
    errors = []
    code = 0
    drv_pidfile = os.path.join(d, VM_TYPE + '.pid')
    guest_pidfile = os.path.join(d, 'guest.pid')
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]
        finally:
            s.close()
        write_ssh_config(d, name, port)
        try:
            os.unlink(sockpath)
        except FileNotFoundError:
            pass
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsock.bind(sockpath)
        lsock.listen(16)
        lsock.setblocking(False)
        log(INFO, 'hostagent socket created at %s' % sockpath)
        emit_event(port)

        if not os.path.isdir(os.path.join(d, 'guestfs')):
            build_guestfs(os.path.join(d, 'guestfs'), name)
        with open(os.path.join(d, 'lima.yaml'), 'rb') as f:
            yaml_text = f.read().decode('utf-8', 'surrogateescape')
        if writable_usr():
            prepare_usrfs(d)
            prov = Provisioner(d, name, yaml_text)
        bwrap = find_exe('bwrap')
        if not bwrap:
            raise Fatal('bwrap (bubblewrap) not found in PATH; the limactl simulator needs it')
        info_r, info_w = os.pipe()
        args_r, args_w = os.pipe()
        os.set_inheritable(info_w, True)
        os.set_inheritable(args_r, True)
        blob = ''.join(a + '\0' for a in guest_bwrap_args(d, name, info_w)).encode('utf-8', 'surrogateescape')
        write_all(args_w, blob)           # far below the pipe capacity
        os.close(args_w)
        serial = os.open(os.path.join(d, 'serial.log'),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        log(INFO, 'Starting QEMU (hint: to watch the boot progress, see %s)'
            % go_quote(os.path.join(d, 'serial*.log')))
        try:
            # close_fds=False: like QEMU under Go, the guest inherits every
            # inheritable descriptor this process inherited.
            proc = subprocess.Popen(driver_shim([info_w, args_r], d) + [bwrap, '--args', str(args_r), '--'] + GUEST_INIT,
                                    stdin=subprocess.DEVNULL, stdout=serial, stderr=serial,
                                    close_fds=False)
        finally:
            os.close(info_w)
            os.close(args_r)
            os.close(serial)
        write_file(drv_pidfile, '%d\n' % proc.pid)
        data = b''
        deadline = time.monotonic() + 15
        while b'}' not in data and time.monotonic() < deadline:
            r, _, _ = select.select([info_r], [], [], 0.5)
            if r:
                chunk = os.read(info_r, 4096)
                if not chunk:
                    break
                data += chunk
        os.close(info_r)
        k = data.find(b'"child-pid":')
        if k >= 0:
            digits = data[k + 12:].lstrip().split(b',')[0].split(b'\n')[0].strip()
            cpid = int(digits) if digits.isdigit() else 0
        if not cpid:
            raise Fatal('bwrap did not start the guest (see %s)' % os.path.join(d, 'serial.log'))
        write_file(guest_pidfile, '%d\n' % cpid)
        if prov is not None:
            # after the driver started: the shim's `exec N<&-` takes one digit
            sudo = SudoService(d, passwordless_sudo(yaml_text))
            sudo.gpid = cpid
        log(INFO, 'Waiting for the essential requirement 1 of 1: "ssh"')

        marker = '/proc/%d/root%s' % (cpid, BOOT_MARKER)
        t0 = time.monotonic()
        booted = False
        while True:
            if stop_sig:
                log(INFO, 'Received %s, shutting down the host agent'
                    % ('SIGINT' if stop_sig[0] == signal.SIGINT else 'SIGTERM'))
                break
            if proc.poll() is not None:
                errors.append('the %s driver process exited (%s)' % (VM_TYPE, _exit_desc(proc.returncode)))
                log(ERROR, errors[-1])
                code = 1
                break
            timeout = None
            if not booted:
                elapsed = time.monotonic() - t0
                if elapsed >= boot_s and os.path.exists(marker) and \
                        (prov is None or prov.step(cpid)):
                    booted = True
                    log(INFO, 'The essential requirement 1 of 1 is satisfied')
                    emit_event(port, running=True)
                    continue
                if elapsed > 60 and not os.path.exists(marker):
                    raise Fatal('the guest did not boot within 60s')
                # provisioning: children wake the loop through SIGCHLD
                timeout = 0.02 if elapsed >= boot_s else max(0.001, min(0.005, boot_s - elapsed))
            try:
                r, _, _ = select.select([lsock, wake_r] + (sudo.socks() if sudo else []), [], [], timeout)
            except InterruptedError:
                continue
            if sudo is not None:
                sudo.handle(r)
            if wake_r in r:
                try:
                    while os.read(wake_r, 512):
                        pass
                except OSError:
                    pass
            if lsock in r:
                _serve_http(lsock, port)
    except Fatal as e:
        errors.append(str(e))
        log(ERROR, str(e))
        code = 1
    except Exception as e:           # keep the contract: always emit `exiting`
        errors.append('%s: %s' % (type(e).__name__, e))
        log(ERROR, errors[-1])
        code = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if prov is not None:
            prov.kill()
        if sudo is not None:
            sudo.close()
        if proc is not None and proc.poll() is None:
            log(INFO, 'Shutting down QEMU')
            proc.kill()
        if cpid and pid_alive(cpid, 'guest'):
            try:
                os.kill(cpid, signal.SIGKILL)
            except OSError:
                pass
        if proc is not None:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        strays = sweep_guest_procs(d)
        wait_dead([cpid] + strays, 5)
        for p in (drv_pidfile, guest_pidfile):
            try:
                os.unlink(p)
            except OSError:
                pass
        emit_event(port, exiting=True, errors=errors)
        if lsock is not None:
            lsock.close()
        for p in (sockpath, pidfile):
            try:
                os.unlink(p)
            except OSError:
                pass
    return code


def _exit_desc(rc):
    if rc is None:
        return 'still running'
    if rc < 0:
        return 'signal: %s' % {9: 'killed', 15: 'terminated', 2: 'interrupt', 1: 'hangup'}.get(-rc, str(-rc))
    return 'exit status %d' % rc


# --------------------------------------------------------------------------
# start

class TTY:
    value = False


def ready_message(inst):
    top = read_top_level(inst.dir)
    if top.get('plain') is True:
        return 'READY. Run %s to open the shell.' % ('`ssh -F %s %s`' % (
            gq(os.path.join(inst.dir, 'ssh.config')), hostname_of(inst.name)))
    if inst.name == 'default':
        return 'READY. Run `lima` to open the shell.'
    return 'READY. Run %s to open the shell.' % gq('limactl shell ' + inst.name)


def _relay_ha_stderr(f, buf):
    import json
    buf[0] += f.read()
    while b'\n' in buf[0]:
        line, buf[0] = buf[0].split(b'\n', 1)
        try:
            ev = json.loads(line)
            lvl = _LEVELS.get(ev.get('level', 'info'), INFO)
            msg = str(ev.get('msg', ''))
        except (ValueError, AttributeError):
            lvl, msg = INFO, line.decode('utf-8', 'replace')
        if lvl <= FATAL:
            lvl = ERROR
        log(lvl, '[hostagent] ' + msg)


def watch_events(d, proc, timeout):
    import json
    outp = os.path.join(d, 'ha.stdout.log')
    errp = os.path.join(d, 'ha.stderr.log')
    deadline = time.monotonic() + timeout
    fo = open(outp, 'rb')
    fe = open(errp, 'rb')
    obuf = b''
    ebuf = [b'']
    port_logged = False
    try:
        while True:
            rc = proc.poll() if proc is not None else None
            obuf += fo.read()
            while b'\n' in obuf:
                line, obuf = obuf.split(b'\n', 1)
                try:
                    st = json.loads(line).get('status') or {}
                except (ValueError, AttributeError):
                    continue
                if st.get('sshLocalPort') and not port_logged:
                    port_logged = True
                    log(INFO, 'SSH Local Port: %d' % st['sshLocalPort'])
                if st.get('exiting'):
                    _relay_ha_stderr(fe, ebuf)
                    raise Fatal('exiting, status={Running:%s Degraded:false Exiting:true Errors:[%s] SSHLocalPort:%d} (hint: see %s)'
                                % ('true' if st.get('running') else 'false', ' '.join(st.get('errors') or []),
                                   st.get('sshLocalPort') or 0, gq(errp)))
                if st.get('running'):
                    _relay_ha_stderr(fe, ebuf)
                    if st.get('degraded'):
                        log(WARN, 'DEGRADED. The VM seems running, but file sharing and port forwarding may not work.')
                        raise Fatal('degraded, status=%s' % line.decode('utf-8', 'replace'))
                    return st
            _relay_ha_stderr(fe, ebuf)
            if rc is not None:
                raise Fatal('host agent process has exited: %s' % _exit_desc(rc))
            if time.monotonic() > deadline:
                raise Fatal('did not receive an event with the `running` status')
            time.sleep(0.002)
    finally:
        fo.close()
        fe.close()


def start_instance(inst, timeout, hang=False, die=False):
    import subprocess
    d = inst.dir
    name = inst.name
    if not os.path.exists(os.path.join(d, 'disk')):
        prepare_disk(d, name)
    ha_pidfile = os.path.join(d, 'ha.pid')
    if os.path.exists(ha_pidfile):
        raise Fatal('instance %s seems running (hint: remove %s if the instance is not actually running)'
                    % (gq(name), gq(ha_pidfile)))
    sweep_guest_procs(d)            # leftovers of an earlier, interrupted boot
    log(INFO, 'Starting the instance %s with internal VM driver %s' % (gq(name), gq(VM_TYPE)))
    out = os.open(os.path.join(d, 'ha.stdout.log'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    err = os.open(os.path.join(d, 'ha.stderr.log'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    env = dict(os.environ)
    env['LIMA_HOME'] = lima_home()
    try:
        # close_fds=False on purpose: Go's os/exec hands every inheritable
        # descriptor down to the hostagent (and on to QEMU).
        proc = subprocess.Popen([SCRIPT, 'hostagent', '--pidfile', ha_pidfile,
                                 '--socket', os.path.join(d, 'ha.sock'), name],
                                stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                close_fds=False, process_group=0, env=env)
    finally:
        os.close(out)
        os.close(err)
    deadline = time.monotonic() + 5
    while not os.path.exists(ha_pidfile):
        if proc.poll() is not None:
            break
        if time.monotonic() > deadline:
            raise Fatal('hostagent (%s) did not start up in 5s' % gq(ha_pidfile))
        time.sleep(0.001)
    if die:
        die_now()
    watch_events(d, proc, timeout)
    if hang:
        hang_forever()
    log(INFO, ready_message(inst))


def cmd_start(o, args):
    if len(args) > 1:
        raise args_error('start', 'accepts at most 1 arg(s), received %d' % len(args))
    if o.get('foreground'):
        raise Fatal('--foreground is not supported by the limactl simulator')
    if o.get('list-templates') or o.get('list-drivers'):
        return list_templates_or_drivers(o)
    inst, created = load_or_create(o, args, 'start')
    if not created:
        log(INFO, 'Using the existing instance %s' % gq(inst.name))
        if any(k in o for k in EDIT_FLAGS if k not in ('name', 'list-templates', 'list-drivers')):
            p = os.path.join(inst.dir, 'lima.yaml')
            with open(p, 'rb') as f:
                text = f.read().decode('utf-8', 'surrogateescape')
            new = apply_edits(text, o, False)
            if new != text:
                validate_config(new, p)
                write_file(p, new)
    if inst.status == 'Running':
        log(INFO, 'The instance %s is already running. Run %s to open the shell.'
            % (gq(inst.name), gq('limactl shell ' + inst.name)))
        return 0
    if inst.status != 'Stopped':
        log(WARN, 'expected status %s, got %s' % (gq('Stopped'), gq(inst.status)))
    timeout = o.get('timeout') or DEFAULT_START_TIMEOUT
    start_instance(inst, timeout, hang=FAULT.hang, die=FAULT.die)
    return 0


# --------------------------------------------------------------------------
# shell / copy: run commands in the guest

def guest_pid(d):
    return read_pid(os.path.join(d, 'guest.pid'), 'guest', remove_stale=False)


def guest_env():
    user = guest_user()[0]
    return {'HOME': guest_home(), 'USER': user, 'LOGNAME': user, 'SHELL': '/bin/bash',
            'PATH': GUEST_PATH, 'LANG': 'C.UTF-8'}


def guest_argv(gpid, argv):
    """nsenter into the guest's namespaces as the guest user."""
    user, uid, gid = guest_user()
    root = os.geteuid() == 0
    out = [NSENTER, '-t', str(gpid)]
    if not root:
        out += ['-U', '--preserve-credentials']
    out += ['-m', '-u', '-i', '-n', '-p', '-r', '-w']
    if os.path.exists(SETPRIV):
        out += ['--', SETPRIV]
        if root:
            out += ['--reuid=%d' % uid, '--regid=%d' % gid, '--clear-groups',
                    '--inh-caps=-all', '--bounding-set=-all']
        out += ['--no-new-privs', '--'] + argv
    else:
        if root:
            out += ['-S', str(uid), '-G', str(gid)]
        out += ['--'] + argv
    return out


def spawn_guest(gpid, argv, fd0, fd1, fd2):
    """Fork the guest-side process in its own session with the given stdio."""
    full = guest_argv(gpid, argv)
    env = guest_env()
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            # sshd gives sessions its own umask, whatever the client's.
            os.umask(0o022)
            fds = [os.dup(fd) for fd in (fd0, fd1, fd2)]
            for i, fd in enumerate(fds):
                os.dup2(fd, i)
            os.closerange(3, 1 << 20)
            for s in range(1, signal.NSIG):
                if s not in (signal.SIGKILL, signal.SIGSTOP):
                    try:
                        signal.signal(s, signal.SIG_DFL)
                    except (OSError, ValueError, RuntimeError):
                        pass
            os.execve(full[0], full, env)
        except BaseException:
            pass
        os._exit(255)
    return pid


def _ensure_std_fds():
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            nfd = os.open('/dev/null', os.O_RDWR)
            if nfd != fd:
                os.dup2(nfd, fd)
                os.close(nfd)


def _set_pipe_size(fd):
    try:
        import fcntl
        fcntl.fcntl(fd, 1031, 1 << 20)      # F_SETPIPE_SZ
    except (OSError, ImportError):
        pass


def relay(pid, in_w, out_r, err_r):
    """ssh-like stdio relay; returns the wait status of PID."""
    import select
    POLLIN, POLLOUT = select.POLLIN, select.POLLOUT
    POLLERR, POLLHUP, POLLNVAL = select.POLLERR, select.POLLHUP, select.POLLNVAL
    os.set_blocking(in_w, False)
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = -1
    outs = {out_r: 1, err_r: 2}
    host_dead = set()
    stdin_open = True
    pending = None
    status = None
    while True:
        if status is None:
            wpid, st = os.waitpid(pid, os.WNOHANG)
            if wpid == pid:
                status = st
        if status is not None and not outs:
            break
        if in_w >= 0 and not stdin_open and not pending:
            os.close(in_w)
            in_w = -1
        p = select.poll()
        if in_w >= 0:
            if pending:
                p.register(in_w, POLLOUT)
            else:
                p.register(in_w, 0)           # POLLERR once the guest closed stdin
                if stdin_open:
                    p.register(0, POLLIN)
        for fd in outs:
            p.register(fd, POLLIN)
        timeout = None
        if status is None:
            if pidfd >= 0:
                p.register(pidfd, POLLIN)
            else:
                timeout = 20
        try:
            events = p.poll(timeout)
        except InterruptedError:
            continue
        for fd, ev in events:
            if fd == pidfd:
                continue
            if fd == 0 and in_w >= 0:
                try:
                    data = os.read(0, RELAY_BUF)
                except OSError:
                    data = b''
                if data:
                    pending = memoryview(data)
                else:
                    stdin_open = False
            elif fd == in_w:
                if pending and ev & POLLOUT:
                    try:
                        n = os.write(in_w, pending)
                        pending = pending[n:]
                    except BlockingIOError:
                        pass
                    except OSError:
                        pending = None
                        stdin_open = False
                        os.close(in_w)
                        in_w = -1
                elif ev & (POLLERR | POLLHUP | POLLNVAL):
                    pending = None
                    stdin_open = False
                    os.close(in_w)
                    in_w = -1
            elif fd in outs:
                try:
                    data = os.read(fd, RELAY_BUF)
                except OSError:
                    data = b''
                if not data:
                    os.close(fd)
                    del outs[fd]
                    continue
                dst = outs[fd]
                if dst not in host_dead:
                    try:
                        write_all(dst, data)
                    except OSError:
                        host_dead.add(dst)
    if in_w >= 0:
        os.close(in_w)
    if pidfd >= 0:
        os.close(pidfd)
    return status


def _transport_error(inst):
    msg = 'ssh: connect to host 127.0.0.1 port %d: Connection refused\r\n' % (inst.ssh_port or 22)
    try:
        os.write(2, msg.encode())
    except OSError:
        pass
    return 255


ENV_BLOCK_DEFAULT = ('BASH*', 'DISPLAY', 'DYLD_*', 'EUID', 'FPATH', 'GID', 'GROUP', 'HOME',
                     'HOSTNAME', 'LD_*', 'LOGNAME', 'OLDPWD', 'PATH', 'PPID', 'PWD', 'SHELL',
                     'SHELLOPTS', 'SHLVL', 'SSH_*', 'TERM_PROGRAM*', 'TERM_SESSION_ID', 'TMPDIR',
                     'UID', 'USER', 'XAUTHORITY', 'XDG_*', 'ZDOTDIR', 'ZSH*', '_*')


def _env_match(name, patterns):
    for pat in patterns:
        if pat.endswith('*') and name.startswith(pat[:-1]):
            return True
        if pat == name:
            return True
    return False


def filtered_env():
    block = os.environ.get('LIMA_SHELLENV_BLOCK')
    if block is None:
        blist = list(ENV_BLOCK_DEFAULT)
    elif block.startswith('+'):
        blist = list(ENV_BLOCK_DEFAULT) + [x.strip() for x in block[1:].split(',') if x.strip()]
    else:
        blist = [x.strip() for x in block.split(',') if x.strip()]
    allow = [x.strip() for x in (os.environ.get('LIMA_SHELLENV_ALLOW') or '').split(',') if x.strip()]
    out = []
    for k in sorted(os.environ):
        if not k or not all(c in _ALNUM or c == '_' for c in k) or k[0].isdigit():
            continue
        if allow and not _env_match(k, allow):
            continue
        if _env_match(k, blist):
            continue
        out.append('%s=%s' % (k, os.environ[k]))
    return out


def build_script(o, cmd):
    wd = o.get('workdir')
    change_dir = 'cd %s || exit 1' % sh_quote(wd) if wd else 'false'
    shell = sh_quote(o['shell']) if o.get('shell') else '/bin/bash'
    env_prefix = ''
    if o.get('preserve-env'):
        kv = filtered_env()
        if kv:
            env_prefix = 'env ' + ''.join(sh_quote(x) + ' ' for x in kv)
    script = '%s ; exec %s%s -l' % (change_dir, env_prefix, shell)
    if cmd:
        quoted = []
        parsing_env = True
        for a in cmd:
            if parsing_env and '=' in a:
                k, v = a.split('=', 1)
                quoted.append(k + '=' + sh_quote(v))
            else:
                parsing_env = False
                quoted.append(sh_quote(a))
        script += ' -c ' + sh_quote(' '.join(quoted))
    return script


def running_inst_for(name, allow_start=False):
    try:
        inst = inspect(name, http=False)
    except NotExist:
        raise Fatal('instance %s does not exist, run `limactl create %s` to create a new instance'
                    % (gq(name), name))
    if inst.status == 'Stopped':
        if not allow_start:
            raise Fatal('instance %s is stopped, run `limactl start %s` to start the instance'
                        % (gq(name), name))
        start_instance(inst, DEFAULT_START_TIMEOUT)
        inst = inspect(name, http=False)
    return inst


def cmd_shell(o, args):
    if o.get('instance'):
        name, cmd = o['instance'], list(args)
    else:
        if not args:
            raise args_error('shell', 'requires at least 1 arg(s), only received 0')
        if len(args) >= 2 and args[1] == '--':
            args = args[:1] + args[2:]
        name, cmd = args[0], args[1:]
    if cmd and cmd[0] in ('create', 'start', 'delete', 'shell'):
        log(WARN, 'Perhaps you meant %s?' % gq('limactl ' + ' '.join(cmd)))
    if o.get('sync'):
        raise Fatal('--sync is not supported by the limactl simulator')
    inst = running_inst_for(name, o.get('start'))
    script = build_script(o, cmd)
    log(DEBUG, 'executing ssh (simulated) with the remote script %s' % go_quote(script))
    gpid = guest_pid(inst.dir)
    if not gpid:
        return _transport_error(inst)
    _ensure_std_fds()
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    for fd in (in_w, out_r, err_r):
        _set_pipe_size(fd)
    pid = spawn_guest(gpid, ['/bin/bash', '-c', script], in_r, out_w, err_w)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    if FAULT.die:
        die_now()
    status = relay(pid, in_w, out_r, err_r)
    rc = os.waitstatus_to_exitcode(status)
    return 255 if rc < 0 else rc


COPY_SRC = r'''p=$1
if [ ! -e "$p" ] && [ ! -L "$p" ]; then echo "scp: $p: No such file or directory" >&2; exit 1; fi
if [ -d "$p" ] && [ "$2" != 1 ]; then echo "scp: $p: not a regular file" >&2; exit 1; fi
cd -- "$(dirname -- "$p")" && exec tar -cf - -- "$(basename -- "$p")"
'''

COPY_DST = r'''d=$1 b=$2
if [ -d "$d" ]; then exec tar -C "$d" -xf -; fi
t=$(mktemp -d "$(dirname -- "$d")/.lima-copy.XXXXXX") || exit 1
tar -C "$t" -xf - && mv -fT -- "$t/$b" "$d"; rc=$?
rm -rf -- "$t"; exit $rc
'''


def cmd_copy(o, args):
    if len(args) < 2:
        raise args_error('copy', 'requires at least 2 arg(s), only received %d' % len(args))
    if o.get('backend') not in (None, 'auto', 'scp', 'rsync'):
        raise Fatal('invalid backend %s' % gq(o['backend']))
    specs = []
    for a in args:
        inst_name, sep, path = a.partition(':')
        if sep:
            specs.append((running_inst_for(inst_name), path))
        else:
            specs.append((None, a))
    if all(s[0] is None for s in specs):
        raise Fatal('at least one path must be of the form INSTANCE:PATH')
    recursive = '1' if o.get('recursive') else '0'
    dst = specs[-1]
    rc = 0
    for src in specs[:-1]:
        base = os.path.basename(src[1].rstrip('/')) or src[1]
        r, w = os.pipe()
        p1 = _copy_side(src, ['/bin/bash', '-c', COPY_SRC, 'copy-src', src[1], recursive], 0, w)
        os.close(w)
        p2 = 0
        import select
        poller = select.poll()
        poller.register(r, select.POLLIN)
        if any(ev & select.POLLIN for _, ev in poller.poll()):   # the sender produced data
            p2 = _copy_side(dst, ['/bin/bash', '-c', COPY_DST, 'copy-dst', dst[1], base], r, 1)
        os.close(r)
        if FAULT.die:
            die_now()
        st1 = os.waitpid(p1, 0)[1] if p1 > 0 else 255 << 8
        st2 = os.waitpid(p2, 0)[1] if p2 > 0 else 255 << 8
        if st1 or st2:
            rc = 1
        elif o.get('verbose'):
            log(INFO, 'copied %s' % gq(src[1]))
    return rc


def _copy_side(spec, argv, fd_in, fd_out):
    inst, _ = spec
    if inst is None:
        pid = os.fork()
        if pid == 0:
            try:
                for i, fd in enumerate([os.dup(fd_in), os.dup(fd_out), os.dup(2)]):
                    os.dup2(fd, i)
                os.closerange(3, 1 << 20)
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)
                os.execv(argv[0], argv)
            except BaseException:
                pass
            os._exit(255)
        return pid
    gpid = guest_pid(inst.dir)
    if not gpid:
        _transport_error(inst)
        return -1
    return spawn_guest(gpid, argv, fd_in, fd_out, 2)


# --------------------------------------------------------------------------
# stop / delete

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


def stop_forcibly(inst):
    d = inst.dir
    drv = read_pid(os.path.join(d, VM_TYPE + '.pid'), 'drv')
    gpid = read_pid(os.path.join(d, 'guest.pid'), 'guest')
    if drv:
        log(INFO, 'Sending SIGKILL to the %s driver process %d' % (VM_TYPE, drv))
        _kill(drv)
    else:
        log(INFO, 'The %s driver process seems already stopped' % VM_TYPE)
    if gpid:
        _kill(gpid)
    ha = read_pid(os.path.join(d, 'ha.pid'), 'ha')
    if ha:
        log(INFO, 'Sending SIGKILL to the host agent process %d' % ha)
        _kill(ha)
    else:
        log(INFO, 'The host agent process seems already stopped')
    strays = sweep_guest_procs(d)
    if not wait_dead([drv, gpid, ha] + strays, 10):
        log(WARN, 'some processes of instance %s did not die in 10s' % gq(inst.name))
    if FAULT.die and FAULT.sub == 'stop':
        die_now()
    log(INFO, 'Removing *.pid *.sock *.tmp under %s' % go_quote(d))
    try:
        entries = os.listdir(d)
    except OSError:
        entries = []
    for e in sorted(entries):
        if e.endswith(('.pid', '.sock', '.tmp')):
            p = os.path.join(d, e)
            log(INFO, 'Removing %s' % go_quote(p))
            try:
                os.unlink(p)
            except IsADirectoryError:
                rmtree_safe(p)
            except OSError:
                pass


def _kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


def cmd_stop(o, args):
    if len(args) > 1:
        raise args_error('stop', 'accepts at most 1 arg(s), received %d' % len(args))
    name = args[0] if args else 'default'
    inst = inspect(name)
    if o.get('force'):
        stop_forcibly(inst)
        return 0
    if inst.status != 'Running':
        raise Fatal('expected status %s, got %s (maybe use `limactl stop -f`?)'
                    % (gq('Running'), gq(inst.status)))
    log(INFO, 'Sending SIGINT to hostagent process %d' % inst.ha_pid)
    try:
        os.kill(inst.ha_pid, signal.SIGINT)
    except OSError as e:
        raise Fatal('failed to send SIGINT to the host agent: %s' % e)
    if FAULT.die:
        die_now()
    log(INFO, 'Waiting for the host agent and the driver processes to shut down')
    outp = os.path.join(inst.dir, 'ha.stdout.log')
    deadline = time.monotonic() + 190
    while time.monotonic() < deadline:
        try:
            with open(outp, 'rb') as f:
                if b'"exiting":true' in f.read():
                    break
        except OSError:
            pass
        if not pid_alive(inst.ha_pid, 'ha'):
            break
        time.sleep(0.002)
    else:
        raise Fatal('did not receive an event with the `exiting` status')
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if inspect(name, http=False).status == 'Stopped':
            break
        time.sleep(0.002)
    else:
        raise Fatal('expected status %s, got %s' % (gq('Stopped'), gq(inspect(name, http=False).status)))
    log(INFO, 'The instance %s has shut down' % gq(name))
    return 0


def cmd_delete(o, args):
    if not args:
        raise args_error('delete', 'requires at least 1 arg(s), only received 0')
    for name in args:
        d = inst_dir(name)
        if not os.path.lexists(d):
            log(WARN, 'Ignoring non-existent instance %s' % gq(name))
            continue
        if not os.path.isfile(os.path.join(d, 'lima.yaml')):
            raise Fatal('instance %s directory %s exists but its %s could not be read; it was NOT '
                        'deleted, in case it is currently being cloned into. Remove the directory '
                        'manually if it is a leftover' % (gq(name), gq(d), gq('lima.yaml')))
        inst = inspect(name)
        if os.path.exists(os.path.join(d, 'protected')):
            raise Fatal('failed to delete instance %s: instance is protected to prohibit accidental '
                        'removal (Hint: use `limactl unprotect`)' % gq(name))
        if not o.get('force') and inst.status != 'Stopped':
            raise Fatal('failed to delete instance %s: expected status %s, got %s'
                        % (gq(name), gq('Stopped'), gq(inst.status)))
        stop_forcibly(inst)
        if FAULT.die:
            die_now()
        rmtree_safe(d)
        log(INFO, 'Deleted %s (%s)' % (gq(name), gq(d)))
    return 0


# --------------------------------------------------------------------------
# list / info

def instance_names():
    try:
        entries = sorted(os.listdir(lima_home()))
    except OSError:
        return []
    return [e for e in entries if not e.startswith(('.', '_'))
            and os.path.isdir(os.path.join(lima_home(), e))]


def inst_record(inst):
    rec = {'name': inst.name, 'hostname': hostname_of(inst.name), 'status': inst.status,
           'dir': inst.dir, 'vmType': inst.vm_type, 'arch': inst.arch}
    if inst.cpus:
        rec['cpus'] = inst.cpus
    if inst.memory:
        rec['memory'] = inst.memory
    if inst.disk:
        rec['disk'] = inst.disk
    if inst.message and inst.status == 'Running':
        rec['message'] = inst.message
    if inst.ssh_port:
        rec['sshLocalPort'] = inst.ssh_port
    if inst.config is not None:
        rec['sshConfigFile'] = os.path.join(inst.dir, 'ssh.config')
    if inst.ha_pid:
        rec['hostAgentPID'] = inst.ha_pid
    if inst.drv_pid:
        rec['driverPID'] = inst.drv_pid
    if inst.config is not None:
        rec['config'] = inst.config
        rec['sshAddress'] = '127.0.0.1'
    rec['protected'] = inst.protected
    rec['limaVersion'] = inst.lima_version
    if inst.errors:
        rec['errors'] = inst.errors
    return rec


def broken_record(name, d, err):
    inst = Inst(name, d)
    inst.status = 'Broken'
    inst.vm_type = ''
    inst.arch = ''
    inst.errors = [err]
    return inst


_TEMPLATE_FIELDS = {
    'Name': 'name', 'Hostname': 'hostname', 'Status': 'status', 'Dir': 'dir',
    'VMType': 'vmType', 'Arch': 'arch', 'CPUs': 'cpus', 'Memory': 'memory', 'Disk': 'disk',
    'Message': 'message', 'SSHLocalPort': 'sshLocalPort', 'SSHConfigFile': 'sshConfigFile',
    'HostAgentPID': 'hostAgentPID', 'DriverPID': 'driverPID', 'SSHAddress': 'sshAddress',
    'Protected': 'protected', 'LimaVersion': 'limaVersion', 'Errors': 'errors', 'Config': 'config',
}
_ZERO = {'cpus': 0, 'memory': 0, 'disk': 0, 'sshLocalPort': 0, 'hostAgentPID': 0,
         'driverPID': 0, 'errors': [], 'message': '', 'sshConfigFile': '', 'sshAddress': ''}


def render_template(tmpl, rec):
    out = []
    i = 0
    while True:
        j = tmpl.find('{{', i)
        if j < 0:
            out.append(tmpl[i:])
            break
        k = tmpl.find('}}', j)
        if k < 0:
            raise Fatal('template: unclosed action')
        out.append(tmpl[i:j])
        expr = tmpl[j + 2:k].strip().strip('-').strip()
        i = k + 2
        as_json = False
        if expr.startswith('json '):
            as_json, expr = True, expr[5:].strip()
        if expr == '.':
            val = rec
        elif expr.startswith('.') and expr[1:] in _TEMPLATE_FIELDS:
            key = _TEMPLATE_FIELDS[expr[1:]]
            val = rec.get(key, _ZERO.get(key))
        else:
            raise Fatal('template: the limactl simulator cannot evaluate %s' % gq(expr))
        if as_json:
            out.append(go_json(val))
        elif isinstance(val, bool):
            out.append('true' if val else 'false')
        elif isinstance(val, list):
            out.append('[' + ' '.join(str(x) for x in val) + ']')
        elif isinstance(val, dict):
            out.append('map[' + ' '.join('%s:%s' % (k2, v2) for k2, v2 in sorted(val.items())) + ']')
        elif val is None:
            out.append('<no value>')
        else:
            out.append(str(val))
    return ''.join(out)


def format_table(insts):
    home = os.path.expanduser('~')
    rows = [['NAME', 'STATUS', 'SSH', 'VMTYPE', 'ARCH', 'CPUS', 'MEMORY', 'DISK', 'DIR']]
    for inst in insts:
        d = inst.dir
        if home and home != '/' and (d == home or d.startswith(home + '/')):
            d = '~' + d[len(home):]
        rows.append([inst.name, inst.status, '127.0.0.1:%d' % inst.ssh_port, inst.vm_type,
                     inst.arch, str(inst.cpus), bytes_size(inst.memory), bytes_size(inst.disk), d])
    widths = [max(len(r[c]) for r in rows) + 4 for c in range(len(rows[0]) - 1)]
    lines = []
    for r in rows:
        lines.append(''.join(cell.ljust(widths[c]) for c, cell in enumerate(r[:-1])) + r[-1])
    return '\n'.join(lines) + '\n'


def cmd_list(o, args):
    fmt = o.get('format')
    if o.get('json'):
        if fmt is not None:
            raise Fatal('option --json conflicts with option --format')
        fmt = 'json'
    if o.get('yq') or o.get('filter') or o.get('all-fields'):
        raise Fatal('--yq, --filter and --all-fields are not supported by the limactl simulator')
    if o.get('list-fields'):
        write_all(1, ('\n'.join(sorted(_TEMPLATE_FIELDS)) + '\n').encode())
        return 0
    fmt = fmt or 'table'
    if o.get('quiet') and fmt != 'table':
        raise Fatal("option --quiet can only be used with '--format table'")
    all_names = instance_names()
    unmatched = False
    if args:
        targets = []
        for a in args:
            if a in all_names:
                targets.append(a)
            else:
                log(WARN, 'No instance matching %s found.' % a)
                unmatched = True
    else:
        targets = all_names
        if not targets:
            log(WARN, 'No instance found. Run %s to create an instance.' % gq('limactl create'))
            return 0
    insts = []
    for n in targets:
        err = name_error(n)
        if err:
            raise Fatal('unable to load instance %s: %s' % (n, err))
        try:
            insts.append(inspect(n, full=True, use_yaml=fmt != 'table'))
        except NotExist as e:
            insts.append(broken_record(n, e.dir, str(e)))
    if FAULT.die:
        die_now()
    for inst in insts:
        if inst.errors:
            log(WARN, 'instance %s has errors' % gq(inst.name), {'errors': inst.errors})
    out = []
    if o.get('quiet'):
        out = [i.name + '\n' for i in insts]
    elif fmt == 'json':
        out = [go_json(inst_record(i)) + '\n' for i in insts]
    elif fmt == 'yaml':
        y = yaml_mod()
        if not y:
            raise Fatal('--format yaml needs PyYAML (python3-yaml) in the limactl simulator')
        out = ['---\n' + y.safe_dump(inst_record(i), default_flow_style=False, sort_keys=False)
               for i in insts]
    elif fmt == 'table':
        if insts:
            out = [format_table(insts)]
    else:
        out = [render_template(fmt, inst_record(i)) + '\n' for i in insts]
    if out:
        write_all(1, ''.join(out).encode('utf-8', 'surrogateescape'))
    if unmatched:
        raise Fatal('unmatched instances')
    return 0


def cmd_info(o, args):
    import json
    if o.get('yq'):
        raise Fatal('--yq is not supported by the limactl simulator')
    if FAULT.die:
        die_now()
    info = {'version': LIMA_VERSION,
            'templates': [{'name': t, 'location': 'template:' + t} for t in TEMPLATES],
            'limaHome': lima_home(), 'vmTypes': [VM_TYPE],
            'hostOS': 'linux', 'hostArch': host_arch(),
            'identityFile': os.path.join(lima_home(), '_config', 'user')}
    if GUEST_NETWORK is not None:
        info['guestNetwork'] = GUEST_NETWORK
    write_all(1, (json.dumps(info, indent=4) + '\n').encode())
    return 0


def list_templates_or_drivers(o):
    if o.get('list-templates'):
        names = [t for t in TEMPLATES if not t.startswith('_')]
    else:
        names = [VM_TYPE]
    write_all(1, ''.join(n + '\n' for n in names).encode())
    return 0


def _clone_skip(entry):
    """Lima's clone skips `protected`, `swtpm/` and runtime files; the
    simulator also leaves out its runtime dirs and the last run's logs."""
    return (entry in ('protected', 'swtpm', 'simrun', 'lima.yaml', 'cloud-config.yaml')
            or entry.endswith(('.pid', '.sock', '.tmp'))
            or entry.startswith(('ha.', 'serial')))


def cmd_clone(o, args):
    import subprocess
    if len(args) != 2:
        raise args_error('clone', 'accepts 2 arg(s), received %d' % len(args))
    old, new = args
    validate_name(old)
    validate_name(new)
    try:
        src = inspect(old)
    except NotExist:
        raise Fatal('instance %s not found' % gq(old))
    if src.status == 'Running':
        raise Fatal('cannot clone a running instance')
    home = lima_home()
    d = os.path.join(home, new)
    if os.path.lexists(d):
        raise Fatal('instance %s already exists' % gq(new))
    sock = os.path.join(d, LONGEST_SOCK)
    if len(sock) >= UNIX_PATH_MAX:
        raise Fatal('instance name %s too long: %s must be less than UNIX_PATH_MAX=%d characters, but is %d'
                    % (gq(new), gq(sock), UNIX_PATH_MAX, len(sock)))
    with open(os.path.join(src.dir, 'lima.yaml'), 'rb') as f:
        text = f.read().decode('utf-8', 'surrogateescape')
    edited = apply_edits(text, o, False)
    validate_config(edited, new)
    os.mkdir(d, 0o755)
    ok = False
    try:
        # Like Lima: the directory exists without lima.yaml (Broken, and
        # `delete` refuses it) until the copy is complete.
        for e in sorted(os.listdir(src.dir)):
            if _clone_skip(e):
                continue
            sp = os.path.join(src.dir, e)
            if e == 'usrfs':
                os.mkdir(os.path.join(d, e), 0o755)
                sp = os.path.join(sp, 'upper')     # the layer; work/merged are per run
                if not os.path.isdir(sp):
                    continue
                dst = os.path.join(d, e, 'upper')
            else:
                dst = os.path.join(d, e)
            if FAULT.die:
                die_now()
            r = subprocess.run(['cp', '-a', '--reflink=auto', '--', sp, dst],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
            if r.returncode != 0:
                raise Fatal('failed to copy %s: %s' % (gq(sp), r.stderr.decode('utf-8', 'replace').strip()))
        user, uid, gid = guest_user()
        write_file(os.path.join(d, 'cloud-config.yaml'),
                   CLOUD_CONFIG % (hostname_of(new), user, uid, guest_home()))
        write_file(os.path.join(d, 'lima.yaml'), edited)
        ok = True
    finally:
        if not ok:
            try:
                rmtree_safe(d)
            except (OSError, Fatal):
                pass
    if o.get('start'):
        start_instance(inspect(new, http=False), o.get('timeout') or DEFAULT_START_TIMEOUT)
    return 0


def cmd_create(o, args):
    if len(args) > 1:
        raise args_error('create', 'accepts at most 1 arg(s), received %d' % len(args))
    if o.get('list-templates') or o.get('list-drivers'):
        return list_templates_or_drivers(o)
    inst, _ = load_or_create(o, args, 'create')
    log(INFO, 'Run %s to start the instance.' % gq('limactl start ' + inst.name))
    return 0


# --------------------------------------------------------------------------
# command line

GLOBAL_FLAGS = {'tty': 'bool', 'yes': 'bool', 'log-format': 'str', 'log-level': 'str',
                'debug': 'bool', 'help': 'bool'}
GLOBAL_SHORT = {'y': 'yes', 'h': 'help'}
EDIT_FLAGS = {'cpus': 'int', 'memory': 'float', 'disk': 'float', 'set': 'list', 'param': 'list',
              'mount': 'list', 'mount-only': 'list', 'mount-none': 'bool', 'mount-type': 'str',
              'mount-writable': 'bool', 'mount-inotify': 'bool', 'network': 'list',
              'port-forward': 'list', 'plain': 'bool', 'containerd': 'str', 'arch': 'str',
              'vm-type': 'str', 'ssh-port': 'int', 'dns': 'list', 'video': 'bool',
              'rosetta': 'bool', 'nested-virt': 'bool', 'shell': 'str', 'audio-device': 'str',
              'audio-interface': 'str', 'name': 'str', 'list-templates': 'bool',
              'list-drivers': 'bool'}
START_FLAGS = dict(EDIT_FLAGS, timeout='dur', foreground='bool', progress='bool')
COMMANDS = {
    'create': (EDIT_FLAGS, {}, True, 'create FILE.yaml|URL', cmd_create),
    'start': (START_FLAGS, {}, True, 'start NAME|FILE.yaml|URL', cmd_start),
    'shell': ({'workdir': 'str', 'shell': 'str', 'start': 'bool', 'reconnect': 'bool',
               'preserve-env': 'bool', 'sync': 'str', 'instance': 'str'}, {}, False,
              'shell [flags] INSTANCE [COMMAND...]', cmd_shell),
    'stop': ({'force': 'bool'}, {'f': 'force'}, True, 'stop INSTANCE', cmd_stop),
    'delete': ({'force': 'bool'}, {'f': 'force'}, True, 'delete INSTANCE [INSTANCE, ...]', cmd_delete),
    'list': ({'format': 'str', 'json': 'bool', 'quiet': 'bool', 'all-fields': 'bool',
              'list-fields': 'bool', 'yq': 'list', 'filter': 'list'},
             {'f': 'format', 'q': 'quiet', 'l': 'filter'}, True, 'list [flags] [INSTANCE]...', cmd_list),
    'copy': ({'recursive': 'bool', 'verbose': 'bool', 'backend': 'str'},
             {'r': 'recursive', 'v': 'verbose'}, True, 'copy SOURCE ... TARGET', cmd_copy),
    'info': ({'yq': 'list'}, {}, True, 'info', cmd_info),
    'clone': (dict((k, v) for k, v in EDIT_FLAGS.items()
                   if k in ('cpus', 'memory', 'disk', 'set', 'mount-none', 'shell'))
              or {}, {}, True, 'clone OLDINST NEWINST', None),
}
ALIASES = {'rm': 'delete', 'remove': 'delete', 'ls': 'list', 'cp': 'copy'}
BOOL_WORDS = {'1': True, 't': True, 'T': True, 'TRUE': True, 'true': True, 'True': True,
              '0': False, 'f': False, 'F': False, 'FALSE': False, 'false': False, 'False': False}


def args_error(cmd, msg):
    return Fatal('`limactl %s` %s.\nSee `limactl %s --help`.\n\nUsage:  limactl %s'
                 % (cmd, msg, cmd, COMMANDS[cmd][3]))


def parse_duration(s):
    """Go time.ParseDuration, in seconds."""
    units = {'ns': 1e-9, 'us': 1e-6, '\u00b5s': 1e-6, '\u03bcs': 1e-6, 'ms': 1e-3, 's': 1.0,
             'm': 60.0, 'h': 3600.0}
    orig = s
    neg = s.startswith('-')
    if s[:1] in '+-':
        s = s[1:]
    if s == '0':
        return 0.0
    if not s:
        raise ValueError(orig)
    total = 0.0
    while s:
        i = 0
        while i < len(s) and (s[i].isdigit() or s[i] == '.'):
            i += 1
        if i == 0 or s[:i] == '.':
            raise ValueError(orig)
        num = float(s[:i])
        s = s[i:]
        j = 0
        while j < len(s) and not (s[j].isdigit() or s[j] == '.'):
            j += 1
        unit = s[:j]
        s = s[j:]
        if unit not in units:
            raise ValueError(orig)
        total += num * units[unit]
    return -total if neg else total


def convert(typ, v, flag):
    try:
        if typ == 'bool':
            if v not in BOOL_WORDS:
                raise ValueError
            return BOOL_WORDS[v]
        if typ == 'int':
            return int(v, 0) if v.lower().startswith(('0x', '0o', '0b')) else int(v)
        if typ == 'float':
            return float(v)
        if typ == 'dur':
            return parse_duration(v)
        return v
    except ValueError:
        what = {'bool': 'strconv.ParseBool', 'int': 'strconv.ParseInt',
                'float': 'strconv.ParseFloat'}.get(typ)
        if typ == 'dur':
            raise Fatal('invalid argument %s for %s flag: time: invalid duration %s'
                        % (go_quote(v), go_quote(flag), go_quote(v)))
        raise Fatal('invalid argument %s for %s flag: %s: parsing %s: invalid syntax'
                    % (go_quote(v), go_quote(flag), what, go_quote(v)))


def parse_flags(args, spec, short, interspersed):
    opts = {}
    pos = []
    i = 0

    def store(name, val):
        if spec[name] != 'list':
            opts[name] = val
        elif name in ('mount', 'mount-only', 'network', 'dns'):     # pflag StringSlice
            opts.setdefault(name, []).extend(x for x in val.split(',') if x)
        else:                                                       # pflag StringArray
            opts.setdefault(name, []).append(val)

    while i < len(args):
        a = args[i]
        if a == '--':
            pos.extend(args[i + 1:])
            break
        if a.startswith('--'):
            name, eq, v = a[2:].partition('=')
            if name not in spec:
                raise Fatal('unknown flag: --%s' % name)
            typ = spec[name]
            if typ == 'bool':
                if eq:
                    val = convert('bool', v, '--' + name)
                elif name == 'tty' and i + 1 < len(args) and args[i + 1] in ('true', 'false'):
                    i += 1
                    val = args[i] == 'true'
                else:
                    val = True
            else:
                if not eq:
                    if i + 1 >= len(args):
                        raise Fatal('flag needs an argument: --%s' % name)
                    i += 1
                    v = args[i]
                val = convert(typ, v, '--' + name)
            store(name, val)
        elif a.startswith('-') and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                name = short.get(c)
                if name is None:
                    raise Fatal("unknown shorthand flag: '%s' in %s" % (c, a))
                typ = spec[name]
                if typ == 'bool':
                    if a[j + 1:j + 2] == '=':
                        store(name, convert('bool', a[j + 2:], '-' + c))
                        break
                    store(name, True)
                    j += 1
                    continue
                if j + 1 < len(a):
                    v = a[j + 1:]
                    if v.startswith('='):
                        v = v[1:]
                else:
                    if i + 1 >= len(args):
                        raise Fatal("flag needs an argument: '%s' in -%s" % (c, c))
                    i += 1
                    v = args[i]
                store(name, convert(typ, v, '-' + c))
                break
        else:
            if not interspersed:
                pos.extend(args[i:])
                break
            pos.append(a)
        i += 1
    return opts, pos


def find_subcommand(argv):
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == '--' or a == '-' or not a.startswith('-'):
            return i
        if a.startswith('--'):
            name, eq, _ = a[2:].partition('=')
            if not eq:
                typ = GLOBAL_FLAGS.get(name) or ('bool' if name == 'version' else None)
                if typ == 'bool':
                    if name == 'tty' and i + 1 < len(argv) and argv[i + 1] in ('true', 'false'):
                        i += 1
                else:
                    i += 1
        elif len(a) == 2 and a[1] not in ('y', 'h', 'v'):
            i += 1
        i += 1
    return i


USAGE = """Lima: Linux virtual machines (limactl simulator for tests)

Usage:
  limactl [command]

Commands:
  create      Create an instance of Lima
  start       Start an instance of Lima
  shell       Execute shell in Lima
  stop        Stop an instance
  delete      Delete an instance of Lima (aliases: rm, remove)
  list        List instances of Lima (alias: ls)
  copy        Copy files between host and guest (alias: cp)
  info        Show diagnostic information
  clone       Clone an instance of Lima

Flags:
      --debug               debug mode
  -h, --help                help for limactl
      --log-format string   Set the logging format [text, json] (default "text")
      --log-level string    Set the logging level [trace, debug, info, warn, error]
      --tty                 Enable TUI interactions such as opening an editor. Defaults to true when stdout is a terminal. Set to false for automation.
  -v, --version             version for limactl
  -y, --yes                 Alias of --tty=false

Simulator: see tests/lima-sim/README.md
"""


def apply_globals(o):
    fmt = o.get('log-format')
    if fmt is not None:
        if fmt not in ('text', 'json'):
            raise Fatal('unsupported log-format: %s' % go_quote(fmt))
        L.fmt = 'json' if fmt == 'json' else ('tty' if _isatty(2) else 'text')
    lvl = o.get('log-level')
    if lvl is not None:
        if lvl.lower() not in _LEVELS:
            raise Fatal('not a valid logrus Level: %s' % go_quote(lvl))
        L.level = _LEVELS[lvl.lower()]
    if o.get('debug'):
        L.level = max(L.level, DEBUG)
    if 'tty' in o and 'yes' in o:
        raise Fatal('cannot use both --tty and --yes flags')
    if 'yes' in o:
        TTY.value = not o['yes']
    elif 'tty' in o:
        TTY.value = o['tty']
    else:
        TTY.value = _isatty(1)


def prescan_log_format(argv):
    for i, a in enumerate(argv):
        if a == '--':
            break
        if a == '--log-format=json' or (a == '--log-format' and argv[i + 1:i + 2] == ['json']):
            L.fmt = 'json'


def dispatch(argv):
    prescan_log_format(argv)
    i = find_subcommand(argv)
    if i >= len(argv) or argv[i] == '--':
        spec = dict(GLOBAL_FLAGS, version='bool')
        o, pos = parse_flags(argv[:i], spec, dict(GLOBAL_SHORT, v='version'), True)
        apply_globals(o)
        if o.get('version'):
            write_all(1, ('limactl version %s\n' % LIMA_VERSION).encode())
            return 0
        write_all(1, USAGE.encode())
        return 0
    sub = argv[i]
    if sub == 'help':
        write_all(1, USAGE.encode())
        return 0
    canon = ALIASES.get(sub, sub)
    if canon not in COMMANDS:
        raise Fatal('unknown command %s for %s' % (go_quote(sub), go_quote('limactl')))
    flags, short, interspersed, use, fn = COMMANDS[canon]
    if canon == 'clone':
        flags = dict(flags, start='bool', timeout='dur')
        fn = cmd_clone
    spec = dict(GLOBAL_FLAGS)
    spec.update(flags)
    sh = dict(GLOBAL_SHORT)
    sh.update(short)
    err = None
    try:
        o, pos = parse_flags(argv[:i] + argv[i + 1:], spec, sh, interspersed)
        apply_globals(o)
    except Fatal as e:
        err, o, pos = e, {}, []
    if o.get('help'):
        write_all(1, ('Usage:\n  limactl %s\n\nSimulator: see tests/lima-sim/README.md\n' % use).encode())
        return 0
    FAULT.sub = canon
    FAULT.call = n = sim_count(canon)
    if err is not None:
        raise err
    if _fault_hit('LIMA_SIM_FAIL', canon, n):
        raise Fatal('simulated failure of `limactl %s` (LIMA_SIM_FAIL, call #%d)' % (canon, n))
    FAULT.hang = _fault_hit('LIMA_SIM_HANG', canon, n)
    FAULT.die = _fault_hit('LIMA_SIM_DIE', canon, n)
    FAULT.stall = _fault_hit('LIMA_SIM_STALL', canon, n)
    if FAULT.hang and canon != 'start':
        log(DEBUG, 'LIMA_SIM_HANG: `limactl %s` call #%d hangs' % (canon, n))
        hang_forever()
    if canon == 'shell':
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, lambda *_: os._exit(255))
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    return fn(o, pos)


def main(launcher=None):
    global SCRIPT
    if launcher:
        SCRIPT = launcher
    argv = sys.argv[1:]
    if argv[:1] == ['hostagent']:
        return hostagent_main(argv[1:])
    sim_log_invocation(argv)
    if os.environ.get('LIMA_SIM_REFUSE_ROOT', '') not in ('', '0', 'false') and os.geteuid() == 0 \
            and argv[:1] != ['generate-doc']:
        os.write(2, b'limactl: must not run as the root user\n')
        return 1
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return dispatch(argv)
    except ExitCode as e:
        return e.code
    except Fatal as e:
        log(FATAL, str(e))
        return 1
