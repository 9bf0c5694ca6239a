"""shell and copy: the remote script limactl builds, and an ssh-like
transport into the guest (stdio relayed through pipes)."""

import os
import _signal as signal          # the C module: `signal` would pull in enum

from .errors import ArgsError, Fatal, NotExist
from .quoting import ALNUM, go_quote, gq, sh_quote
from .logrus import DEBUG, ERROR, INFO, WARN, log
from . import fileio, faults, limayaml, enter, instances


RELAY_BUF = 256 * 1024


def ensure_std_fds():
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
                        fileio.write_all(dst, data)
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


# Lima 2.2's default block list for --preserve-env (pkg/envutil).
ENV_BLOCK_DEFAULT = ('BASH*', 'DISPLAY', 'DYLD_*', 'EUID', 'FPATH', 'GID', 'GROUP', 'HOME',
                     'HOSTNAME', 'LD_*', 'LOGNAME', 'OLDPWD', 'PATH', 'PWD', 'SHELL', 'SHLVL',
                     'SSH_*', 'TERM', 'TERMINFO', 'TMPDIR', 'UID', 'USER', 'XAUTHORITY', 'XDG_*',
                     'ZDOTDIR', 'ZSH*', '_*')


def _env_match(name, patterns):
    """envutil.matchesPattern: `*` matches any run of characters."""
    import re
    for pat in patterns:
        if pat == name or re.match('^' + pat.replace('*', '.*') + '$', name):
            return True
    return False


def _env_patterns(var):
    """The patterns of LIMA_SHELLENV_BLOCK / _ALLOW; a character outside
    [A-Za-z0-9_*] is fatal, as in Lima."""
    out = [x.strip() for x in os.environ.get(var, '').lstrip('+').split(',') if x.strip()]
    for pat in out:
        for i, ch in enumerate(pat):
            if not (ch in ALNUM or ch in '_*'):
                raise Fatal('Invalid %s pattern: pattern %s contains invalid character %s at position %d'
                            % (var, gq(pat), gq(ch), i))
    return out


def filtered_env():
    """envutil.FilterEnvironment: the environment in its own order, less the
    block list (LIMA_SHELLENV_BLOCK replaces it, or with a leading `+`
    extends it), except what LIMA_SHELLENV_ALLOW names."""
    block = os.environ.get('LIMA_SHELLENV_BLOCK', '')
    if not block:
        blist = list(ENV_BLOCK_DEFAULT)
    elif block.startswith('+'):
        blist = list(ENV_BLOCK_DEFAULT) + _env_patterns('LIMA_SHELLENV_BLOCK')
    else:
        blist = _env_patterns('LIMA_SHELLENV_BLOCK')
    allow = _env_patterns('LIMA_SHELLENV_ALLOW')
    out = []
    for k, v in os.environ.items():
        if allow and _env_match(k, allow):
            out.append('%s=%s' % (k, v))
        elif not _env_match(k, blist):
            out.append('%s=%s' % (k, v))
    return out


def build_script(o, cmd, user_shell=None):
    """The remote script of Lima's shellAction.  Without --workdir Lima cds
    to the host's directory only when a mount covers it; the simulator has
    no mounts, so that is always `false`.  USER_SHELL is lima.yaml's
    user.shell (Lima fills in /bin/bash)."""
    wd = o.get('workdir')
    change_dir = 'cd %s || exit 1' % sh_quote(wd) if wd else 'false'
    shell = sh_quote(o.get('shell') or user_shell or '/bin/bash')
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
    """The instance NAME for shell/copy (started first with --start, without
    the READY line, as Lima does when it launches a shell)."""
    try:
        inst = instances.inspect(name, http=False)
    except NotExist:
        raise Fatal('instance %s does not exist, run `limactl create %s` to create a new instance'
                    % (gq(name), name))
    try:
        with open(os.path.join(inst.dir, 'lima.yaml'), 'rb') as f:
            unembedded = limayaml.has_base(f.read().decode('utf-8', 'surrogateescape'))
    except OSError:
        unembedded = False
    if unembedded:
        # The one configuration error shell and copy check (they read
        # lima.yaml only for user.shell): Lima finds no configuration.
        log(ERROR, 'Instance %s has configuration errors' % gq(name),
            {'error': 'field `base` must be empty for YAML validation'})
        raise Fatal('instance %s has no configuration' % gq(name))
    if inst.status == 'Stopped':
        if not allow_start:
            raise Fatal('instance %s is stopped, run `limactl start %s` to start the instance'
                        % (gq(name), name))
        from . import start           # only here: most shells need no start
        start.start_instance(inst, start.DEFAULT_START_TIMEOUT, launching_shell=True)
        inst = instances.inspect(name, http=False)
    return inst


def cmd_shell(o, args):
    if o.get('instance'):
        name, cmd = o['instance'], list(args)
    else:
        if not args:
            raise Fatal('requires instance name as first argument')
        if len(args) >= 2 and args[1] == '--':
            args = args[:1] + args[2:]
        name, cmd = args[0], args[1:]
    if cmd and cmd[0] in ('create', 'start', 'delete', 'shell'):
        log(WARN, 'Perhaps you meant %s?' % gq('limactl ' + ' '.join(cmd)))
    if o.get('sync'):
        raise Fatal('--sync is not supported by the limactl simulator')
    inst = running_inst_for(name, o.get('start'))
    script = build_script(o, cmd, limayaml.user_shell(inst.dir))
    log(DEBUG, 'executing ssh (simulated) with the remote script %s' % go_quote(script))
    gpid = instances.guest_pid(inst.dir)
    if not gpid:
        return _transport_error(inst)
    ensure_std_fds()
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    for fd in (in_w, out_r, err_r):
        _set_pipe_size(fd)
    pid = enter.spawn_guest(gpid, ['/bin/bash', '-c', script], in_r, out_w, err_w)
    for fd in (in_r, out_w, err_w):
        os.close(fd)
    if faults.FAULT.die:
        faults.die_now()
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
        raise ArgsError('copy', 'requires at least 2 arg(s), only received %d' % len(args))
    if o.get('backend') not in (None, 'auto', 'scp', 'rsync'):
        raise Fatal('invalid backend %s, must be one of: scp, rsync, auto' % gq(o['backend']))
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
        if faults.FAULT.die:
            faults.die_now()
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
    gpid = instances.guest_pid(inst.dir)
    if not gpid:
        _transport_error(inst)
        return -1
    return enter.spawn_guest(gpid, argv, fd_in, fd_out, 2)
