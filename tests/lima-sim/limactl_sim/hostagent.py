"""The hidden `limactl hostagent` subcommand that `start` runs in the
background: it writes ha.pid, serves ha.sock, starts the driver, waits
for the boot, provisions, and emits the hostagent events."""

import os
import time
import _signal as signal          # the C module: `signal` would pull in enum

from .errors import Fatal
from .quoting import go_quote, json_str, rfc3339
from .logrus import ERROR, FATAL, INFO, L, log
from . import fileio, runtime, names, limayaml, guestfs, procs, driver, guestroot


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
        fileio.write_all(1, line.encode())
    except OSError:
        pass


def write_ssh_config(d, name, port):
    user = guestfs.guest_user()[0]
    text = ('# This SSH config file can be passed to \'ssh -F\'.\n'
            '# This file is created by Lima, but not used by Lima itself currently.\n'
            '# Modifications to this file will be lost on restarting the Lima instance.\n'
            'Host %s\n'
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
            '  Port %d\n') % (names.hostname_of(name), os.path.join(runtime.lima_home(), '_config', 'user'),
                              user, os.path.join(d, 'ssh.sock'), port)
    fileio.write_file(os.path.join(d, 'ssh.config'), text, 0o600)


def serve_http(lsock, port):
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
    drv_pidfile = os.path.join(d, runtime.VM_TYPE + '.pid')
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
            guestfs.build_guestfs(os.path.join(d, 'guestfs'), name)
        with open(os.path.join(d, 'lima.yaml'), 'rb') as f:
            yaml_text = f.read().decode('utf-8', 'surrogateescape')
        if guestfs.writable_usr():
            guestfs.prepare_usrfs(d)
            prov = guestroot.Provisioner(d, name, yaml_text)
        bwrap = fileio.find_exe('bwrap')
        if not bwrap:
            raise Fatal('bwrap (bubblewrap) not found in PATH; the limactl simulator needs it')
        info_r, info_w = os.pipe()
        args_r, args_w = os.pipe()
        os.set_inheritable(info_w, True)
        os.set_inheritable(args_r, True)
        blob = ''.join(a + '\0' for a in driver.guest_bwrap_args(d, name, info_w)).encode('utf-8', 'surrogateescape')
        fileio.write_all(args_w, blob)           # far below the pipe capacity
        os.close(args_w)
        serial = os.open(os.path.join(d, 'serial.log'),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        log(INFO, 'Starting QEMU (hint: to watch the boot progress, see %s)'
            % go_quote(os.path.join(d, 'serial*.log')))
        try:
            # close_fds=False: like QEMU under Go, the guest inherits every
            # inheritable descriptor this process inherited.
            drv_argv = driver.driver_shim([info_w, args_r], d) + [bwrap, '--args', str(args_r), '--'] + driver.GUEST_INIT
            proc = subprocess.Popen(drv_argv,
                                    stdin=subprocess.DEVNULL, stdout=serial, stderr=serial,
                                    close_fds=False)
        finally:
            os.close(info_w)
            os.close(args_r)
            os.close(serial)
        fileio.write_file(drv_pidfile, '%d\n' % proc.pid)
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
        fileio.write_file(guest_pidfile, '%d\n' % cpid)
        if prov is not None:
            # after the driver started: the shim's `exec N<&-` takes one digit
            sudo = guestroot.SudoService(d)
            sudo.gpid = cpid
        # Lima quotes the name with Go's %#q: in backquotes.
        log(INFO, 'Waiting for the essential requirement 1 of 1: `ssh`')

        marker = '/proc/%d/root%s' % (cpid, driver.BOOT_MARKER)
        t0 = time.monotonic()
        booted = False
        while True:
            if stop_sig:
                log(INFO, 'Received %s, shutting down the host agent'
                    % ('SIGINT' if stop_sig[0] == signal.SIGINT else 'SIGTERM'))
                break
            if proc.poll() is not None:
                errors.append('the %s driver process exited (%s)' % (runtime.VM_TYPE, procs.exit_desc(proc.returncode)))
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
                serve_http(lsock, port)
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
        if cpid and procs.pid_alive(cpid, 'guest'):
            try:
                os.kill(cpid, signal.SIGKILL)
            except OSError:
                pass
        if proc is not None:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        strays = procs.sweep_guest_procs(d)
        procs.wait_dead([cpid] + strays, 5)
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
