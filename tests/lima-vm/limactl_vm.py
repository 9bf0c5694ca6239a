"""limactl over real QEMU VMs: the test double of Lima's limactl for the
real-VM test tier (see README.md here).

The command-line front end (flag parsing, logrus-style messages, names,
pid files, status, `list`, `start`/`stop`/`delete`/`clone` orchestration,
fault injection) is the simulator's, the package tests/lima-sim/limactl_sim,
so that both doubles keep one observable contract. This module replaces
what a real VM changes: the disk (a qcow2 overlay over the cached Debian
image), the hostagent (QEMU with Lima's user-mode network, cidata, ssh
readiness, QMP powerdown), and `shell` and `copy` (ssh and scp with Lima's
options and ControlMaster). install() puts the replacements into the
simulator's modules; those reach each other's functions as module
attributes, so every caller uses the VM versions.
"""
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import threading
import time

from limactl_sim.errors import ArgsError, Fatal
from limactl_sim.quoting import gq, go_quote, sh_quote
from limactl_sim.logrus import DEBUG, ERROR, FATAL, INFO, WARN, L, isatty, log
from limactl_sim import (cli, clone, faults, fileio, guestfs, hostagent, limayaml, names,
                         procs, runtime, shell, yamlio)

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_IMAGE = os.path.join(HERE, 'build-image.sh')
BOOT_MARKER = '/run/lima-boot-done'
# Lima's QEMU driver waits this long for system_powerdown before killing.
STOP_TIMEOUT = float(os.environ.get('LIMA_VM_STOP_TIMEOUT') or 180)
# Lima's user-mode network (QEMU slirp): guest .15, host loopback .2, DNS .3.
SUBNET = '192.168.5.0/24'


def env_flag(name):
    return os.environ.get(name, '') not in ('', '0', 'false')


# --------------------------------------------------------------------------
# host facilities

def qemu_binary():
    exe = os.environ.get('QEMU_SYSTEM_X86_64') or fileio.find_exe('qemu-system-x86_64')
    if not exe:
        raise Fatal('qemu-system-x86_64 not found in PATH (apt-get install qemu-system-x86)')
    return exe


def kvm_usable():
    """(usable, why). /dev/kvm existing is not enough: a PVM-backed KVM
    (kvm_pvm) only runs guest kernels built for it, and without vmx/svm
    there is no hardware virtualisation to use."""
    forced = os.environ.get('LIMA_VM_ACCEL')
    if forced in ('tcg', 'kvm'):
        return forced == 'kvm', 'LIMA_VM_ACCEL=%s' % forced
    try:
        fd = os.open('/dev/kvm', os.O_RDWR | os.O_CLOEXEC)
        os.close(fd)
    except OSError as e:
        return False, '/dev/kvm: %s' % (e.strerror or e)
    if os.path.exists('/sys/module/kvm_pvm'):
        return False, '/dev/kvm is PVM-backed (kvm_pvm loaded)'
    try:
        with open('/proc/cpuinfo', 'rb') as f:
            flags = f.read()
    except OSError:
        flags = b''
    if b' vmx' not in flags and b' svm' not in flags:
        return False, 'the CPU has no vmx/svm'
    return True, '/dev/kvm is usable'


def host_has_aes():
    try:
        with open('/proc/cpuinfo', 'rb') as f:
            return b' aes' in f.read()
    except OSError:
        return False


def iso_tool():
    for t in ('genisoimage', 'mkisofs', 'xorriso'):
        p = fileio.find_exe(t)
        if p:
            return t, p
    raise Fatal('genisoimage (or xorriso) not found in PATH; it makes the cidata ISO')


def image_dir(build=True):
    """The cached guest image; built on first use (like Lima's download)."""
    args = [BUILD_IMAGE] + ([] if build else ['--check'])
    if build:
        log(INFO, 'Preparing the guest image (tests/lima-vm/build-image.sh; the first build takes minutes)')
    p = subprocess.run(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    out = p.stdout.decode('utf-8', 'replace').strip()
    if p.returncode != 0 or not out:
        err = p.stderr.decode('utf-8', 'replace').strip().splitlines()
        raise Fatal('cannot build the guest image: %s' % (err[-1] if err else 'exit %d' % p.returncode))
    return out


def ensure_user_key():
    """Lima's shared identity: $LIMA_HOME/_config/user{,.pub}, made once."""
    cfg = os.path.join(runtime.lima_home(), '_config')
    key = os.path.join(cfg, 'user')
    if os.path.isfile(key) and os.path.isfile(key + '.pub'):
        return key
    os.makedirs(cfg, 0o755, exist_ok=True)
    # Concurrent creates must not mix the halves of two pairs.
    import fcntl
    lock = os.open(os.path.join(cfg, '.user.lock'), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(key) and os.path.isfile(key + '.pub'):
            return key
        return _make_user_key(key)
    finally:
        os.close(lock)


def _make_user_key(key):
    tmp = key + '.%d.tmp' % os.getpid()
    for p in (tmp, tmp + '.pub'):
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass
    p = subprocess.run(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'lima', '-f', tmp],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise Fatal('ssh-keygen failed: %s' % p.stderr.decode('utf-8', 'replace').strip())
    # The public half first: a key is only used once both exist.
    os.rename(tmp + '.pub', key + '.pub')
    os.rename(tmp, key)
    return key


def guest_home():
    # Lima before v2.1 (and the notes this double follows): /home/NAME.linux.
    return '/home/%s.linux' % guestfs.guest_user()[0]


def qemu_escape(path):
    if any(c in path for c in '\n\0'):
        raise Fatal('path %s cannot be passed to QEMU' % gq(path))
    return path.replace(',', ',,')


# --------------------------------------------------------------------------
# the YAML: every key is either honoured or refused

def _is_true(v):
    return v is True


def _empty(v):
    return v is None or v == [] or v == {} or v == ''


def _bases_ok(v):
    items = v if isinstance(v, list) else [v]
    for b in items:
        loc = b if isinstance(b, str) else None
        if loc is None:
            return False
        if loc.startswith('template://'):
            loc = 'template:' + loc[len('template://'):]
        if not loc.startswith('template:_images/'):
            return False
    return True


def check_config(cfg):
    """Refuses, loudly, any key this limactl cannot honour."""
    def refuse(key, why):
        raise Fatal('field %s: %s (the real-VM limactl of tests/lima-vm cannot honour it)' % (gq(key), why))

    known = {'minimumLimaVersion', 'base', 'vmType', 'arch', 'cpus', 'memory', 'disk', 'plain',
             'mounts', 'mountType', 'mountInotify', 'containerd', 'portForwards', 'ssh',
             'propagateProxyEnv', 'hostResolver', 'video', 'provision', 'user', 'networks',
             'message', 'probes', 'env', 'param', 'caCerts', 'copyToHost', 'additionalDisks',
             'timezone', 'images'}
    for k in cfg:
        if k not in known:
            refuse(k, 'unsupported key')
    if 'base' in cfg and not _bases_ok(cfg['base']):
        refuse('base', 'only image templates (template:_images/...) are supported; '
               'this limactl boots its own Debian image')
    if not _empty(cfg.get('images')):
        refuse('images', 'this limactl boots its own Debian image (build-image.sh)')
    arch = cfg.get('arch')
    if arch not in (None, '', 'default', 'x86_64', 'amd64'):
        refuse('arch', 'only x86_64')
    if cfg.get('plain') is not True:
        refuse('plain', 'only `plain: true` (no guest agent, no dynamic port forwarding)')
    if not _empty(cfg.get('mounts')):
        refuse('mounts', 'no host directory can be mounted')
    for pf in cfg.get('portForwards') or []:
        if isinstance(pf, dict) and pf.get('static'):
            refuse('portForwards', 'static port forwards are not implemented')
    sshc = cfg.get('ssh') or {}
    if not isinstance(sshc, dict):
        refuse('ssh', 'must be a map')
    for k, v in sshc.items():
        if k == 'localPort':
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 65536):
                refuse('ssh.localPort', 'must be a port number')
        elif k in ('loadDotSSHPubKeys', 'forwardAgent', 'forwardX11', 'forwardX11Trusted', 'overVsock'):
            if _is_true(v):
                refuse('ssh.' + k, 'only false')
        else:
            refuse('ssh.' + k, 'unsupported key')
    if cfg.get('propagateProxyEnv') is not False:
        prox = [k for k in ('http_proxy', 'https_proxy', 'ftp_proxy', 'no_proxy',
                            'HTTP_PROXY', 'HTTPS_PROXY', 'FTP_PROXY', 'NO_PROXY') if os.environ.get(k)]
        if prox:
            refuse('propagateProxyEnv', 'proxy variables are set (%s) and would not be propagated'
                   % ' '.join(prox))
    hr = cfg.get('hostResolver') or {}
    if not isinstance(hr, dict) or hr.get('enabled') is not False or not _empty(hr.get('hosts')):
        refuse('hostResolver', 'only `enabled: false` (the guest uses the user-mode DNS 192.168.5.3)')
    video = cfg.get('video') or {}
    if not isinstance(video, dict) or video.get('display') not in (None, 'none'):
        refuse('video', 'only `display: none`')
    for p in cfg.get('provision') or []:
        if not isinstance(p, dict) or p.get('mode', 'system') not in ('system', 'user') \
                or not isinstance(p.get('script'), str):
            refuse('provision', 'only `mode: system|user` entries with a `script`')
    user = cfg.get('user') or {}
    if not isinstance(user, dict):
        refuse('user', 'must be a map')
    for k, v in user.items():
        if k == 'passwordlessSudo':
            if not isinstance(v, bool):
                refuse('user.passwordlessSudo', 'must be a boolean')
        else:
            refuse('user.' + k, 'the guest user is derived from the host user')
    for k in ('networks', 'probes', 'env', 'param', 'caCerts', 'copyToHost', 'additionalDisks',
              'timezone'):
        if not _empty(cfg.get(k)):
            refuse(k, 'not implemented')


def vm_validate_config(text, path):
    cfg = _orig['validate_config'](text, path)
    check_config(cfg)
    return cfg


def vm_builtin_template(loc):
    """Image templates map to the Debian image; the others carry Lima's
    home-directory mount, which check_config refuses."""
    data = _orig['builtin_template'](loc)
    if data is None:
        return None
    text = ('# Built-in template %s of the real-VM limactl: a Debian bookworm image.\n'
            'minimumLimaVersion: 2.0.0\n'
            'vmType: qemu\n'
            'plain: true\n'
            'hostResolver:\n  enabled: false\n'
            'propagateProxyEnv: false\n' % gq('template:' + loc))
    if not loc.startswith('_images/'):
        text += 'mounts:\n- location: "~"\n'
    return text.encode()


def load_config(d):
    with open(os.path.join(d, 'lima.yaml'), 'rb') as f:
        text = f.read().decode('utf-8', 'surrogateescape')
    cfg = yamlio.parse_yaml(text, os.path.join(d, 'lima.yaml'))
    check_config(cfg)
    return cfg


def resources(cfg):
    cpus, mem, disk = limayaml.default_resources()
    return (int(cfg.get('cpus') or cpus), yamlio.ram_in_bytes(cfg.get('memory') or mem),
            yamlio.ram_in_bytes(cfg.get('disk') or disk))


# --------------------------------------------------------------------------
# disk

def qemu_img_size(path):
    p = subprocess.run(['qemu-img', 'info', '--output=json', '-U', path], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise Fatal('qemu-img info %s: %s' % (path, p.stderr.decode('utf-8', 'replace').strip()))
    return int(json.loads(p.stdout)['virtual-size'])


def run_checked(argv, what):
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        raise Fatal('%s: %s' % (what, p.stderr.decode('utf-8', 'replace').strip() or 'exit %d' % p.returncode))
    return p.stdout


def vm_prepare_disk(d, name):
    """`disk`: a qcow2 overlay over the cached base image, sized from the
    YAML. `vm-image` records which image (kernel and initrd live there)."""
    cfg = load_config(d)
    _, _, disk = resources(cfg)
    img = image_dir()
    base = os.path.join(img, 'disk.qcow2')
    if disk < qemu_img_size(base):
        raise Fatal('disk %s is smaller than the guest image (%d bytes)' % (gq(cfg.get('disk')), qemu_img_size(base)))
    ensure_user_key()
    tmp = os.path.join(d, 'disk.tmp')
    run_checked(['qemu-img', 'create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', base, tmp, str(disk)],
                'qemu-img create')
    fileio.write_file(os.path.join(d, 'vm-image'), img + '\n')
    os.rename(tmp, os.path.join(d, 'disk'))


def resize_disk(d, cfg):
    want = resources(cfg)[2]
    have = qemu_img_size(os.path.join(d, 'disk'))
    if want < have:
        raise Fatal('disk shrinking is not supported')
    if want > have:
        run_checked(['qemu-img', 'resize', '-q', os.path.join(d, 'disk'), str(want)], 'qemu-img resize')


# --------------------------------------------------------------------------
# cidata

def write_cidata(d, name, cfg, iid):
    """Lima's cidata as a read-only ISO labelled `cidata`, regenerated at
    every start (a new instance id makes the guest re-run provisioning)."""
    user, uid, _ = guestfs.guest_user()
    key = ensure_user_key()
    with open(key + '.pub', 'rb') as f:
        pub = f.read()
    sudo = (cfg.get('user') or {}).get('passwordlessSudo', True)
    src = os.path.join(d, 'cidata.tmp')
    if os.path.isdir(src):
        shutil.rmtree(src)
    os.mkdir(src, 0o755)
    env = {
        'LIMA_CIDATA_NAME': name,
        'LIMA_CIDATA_HOSTNAME': names.hostname_of(name),
        'LIMA_CIDATA_USER': user,
        'LIMA_CIDATA_UID': str(uid),
        'LIMA_CIDATA_COMMENT': user,
        'LIMA_CIDATA_HOME': guest_home(),
        'LIMA_CIDATA_PASSWORDLESS_SUDO': '1' if sudo else '0',
        'LIMA_CIDATA_IID': iid,
    }
    fileio.write_file(os.path.join(src, 'lima.env'),
                      ''.join('%s=%s\n' % (k, sh_quote(v)) for k, v in env.items()))
    fileio.write_file(os.path.join(src, 'ssh_authorized_keys'), pub)
    fileio.write_file(os.path.join(src, 'meta-data'),
                      'instance-id: %s\nlocal-hostname: %s\n' % (iid, names.hostname_of(name)))
    fileio.write_file(os.path.join(src, 'user-data'),
                      '#cloud-config\n# For reference; the guest applies lima.env.\nusers:\n'
                      '  - name: %s\n    uid: %d\n    homedir: %s\n    shell: /bin/bash\n'
                      '    lock_passwd: true\n    ssh-authorized-keys:\n      - %s\n'
                      % (user, uid, guest_home(), json.dumps(pub.decode().strip())))
    counts = {'system': 0, 'user': 0}
    for p in cfg.get('provision') or []:
        mode = p.get('mode', 'system')
        sub = os.path.join(src, 'provision.' + mode)
        os.makedirs(sub, 0o755, exist_ok=True)
        script = p['script']
        if not script.startswith('#!'):
            script = '#!/bin/sh\n' + script
        fileio.write_file(os.path.join(sub, '%08d' % counts[mode]), script, 0o755)
        counts[mode] += 1
    tool, exe = iso_tool()
    iso_tmp = os.path.join(d, 'cidata.iso.tmp')
    if tool == 'xorriso':
        argv = [exe, '-as', 'mkisofs']
    else:
        argv = [exe]
    argv += ['-quiet', '-V', 'cidata', '-J', '-R', '-o', iso_tmp, src]
    run_checked(argv, tool)
    os.rename(iso_tmp, os.path.join(d, 'cidata.iso'))
    shutil.rmtree(src)


# --------------------------------------------------------------------------
# ssh

def ssh_options(d, port, master=True):
    """Lima's ssh options (cmd/limactl/shell.go, pkg/sshutil), in its order."""
    key = os.path.join(runtime.lima_home(), '_config', 'user')
    opts = ['-o', 'IdentityFile="%s"' % key,
            '-o', 'StrictHostKeyChecking=no',
            '-o', 'UserKnownHostsFile=/dev/null',
            '-o', 'NoHostAuthenticationForLocalhost=yes',
            '-o', 'PreferredAuthentications=publickey',
            '-o', 'Compression=no',
            '-o', 'BatchMode=yes',
            '-o', 'IdentitiesOnly=yes']
    if host_has_aes():
        opts += ['-o', 'Ciphers="^aes128-gcm@openssh.com,aes256-gcm@openssh.com"']
    opts += ['-o', 'User=%s' % guestfs.guest_user()[0]]
    if master:
        opts += ['-o', 'ControlMaster=auto',
                 '-o', 'ControlPath="%s"' % os.path.join(d, 'ssh.sock'),
                 '-o', 'ControlPersist=yes']
    return opts


def ssh_argv(d, port, script, tty=False):
    argv = ['ssh', '-F', '/dev/null'] + ssh_options(d, port)
    if tty:
        argv.append('-t')
    argv += ['-o', 'LogLevel=ERROR', '-p', str(port), '127.0.0.1', '--', script]
    return argv


def ssh_banner(port, timeout=2.0):
    """True once the guest's sshd answers through the forward (slirp
    accepts the TCP connection before anything listens in the guest)."""
    try:
        s = socket.create_connection(('127.0.0.1', port), timeout)
    except OSError:
        return False
    try:
        s.settimeout(timeout)
        return s.recv(8).startswith(b'SSH-')
    except OSError:
        return False
    finally:
        s.close()


def ssh_run(d, port, script, timeout):
    try:
        p = subprocess.run(ssh_argv(d, port, script), stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 255, b'', b'timed out'
    return p.returncode, p.stdout, p.stderr


def stop_master(d, port):
    sock = os.path.join(d, 'ssh.sock')
    if os.path.exists(sock):
        subprocess.run(['ssh', '-F', '/dev/null', '-o', 'ControlPath="%s"' % sock, '-O', 'exit',
                        '-p', str(port or 22), '127.0.0.1'], stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)


# --------------------------------------------------------------------------
# the hostagent: QEMU, then the requirements, then wait for stop

def mac_of(d):
    h = hashlib.sha256(d.encode('utf-8', 'surrogateescape')).digest()
    return '52:55:55:%02x:%02x:%02x' % (h[0], h[1], h[2])


def qemu_argv(d, name, cfg, img, port):
    cpus, mem, _ = resources(cfg)
    kvm, why = kvm_usable()
    if kvm:
        accel, cpu = ['-accel', 'kvm'], 'host'
    else:
        # Lima would warn and fall back to TCG; a large translation-block
        # cache and one host thread per vCPU make TCG bearable.
        accel, cpu = ['-accel', 'tcg,thread=multi,tb-size=256'], 'max'
    log(INFO, 'QEMU acceleration: %s (%s)' % ('kvm' if kvm else 'tcg', why))
    q = qemu_escape
    return [qemu_binary(), '-name', 'lima-' + name,
            '-machine', 'q35'] + accel + [
            '-cpu', cpu, '-smp', str(cpus), '-m', str(max(256, mem // (1 << 20))),
            '-nodefaults', '-no-user-config', '-display', 'none', '-vga', 'none',
            '-rtc', 'base=utc',
            '-kernel', os.path.join(img, 'vmlinuz'), '-initrd', os.path.join(img, 'initrd.img'),
            '-append', 'root=/dev/vda rw rootfstype=ext4 console=ttyS0 quiet loglevel=4 '
                       'systemd.show_status=false net.ifnames=0 fsck.mode=skip',
            '-drive', 'file=%s,if=virtio,format=qcow2,discard=unmap' % q(os.path.join(d, 'disk')),
            '-drive', 'file=%s,if=virtio,format=raw,readonly=on' % q(os.path.join(d, 'cidata.iso')),
            '-netdev', 'user,id=net0,net=%s,dhcpstart=192.168.5.15,hostfwd=tcp:127.0.0.1:%d-:22'
                       % (SUBNET, port),
            '-device', 'virtio-net-pci,netdev=net0,mac=%s' % mac_of(d),
            '-device', 'virtio-rng-pci',
            '-serial', 'file:%s' % q(os.path.join(d, 'serial.log')),
            '-qmp', 'unix:%s,server=on,wait=off' % q(os.path.join(d, 'qmp.sock')),
            '-pidfile', os.path.join(d, 'qemu.pid')]


def qmp(d, command, timeout=5.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect(os.path.join(d, 'qmp.sock'))
        f = s.makefile('rwb')
        f.readline()                                    # greeting
        for cmd in ('qmp_capabilities', command):
            f.write(json.dumps({'execute': cmd}).encode() + b'\n')
            f.flush()
            while True:
                line = f.readline()
                if not line:
                    raise OSError('QMP closed the connection')
                msg = json.loads(line)
                if 'return' in msg:
                    break
                if 'error' in msg:
                    raise OSError('QMP %s: %s' % (cmd, msg['error'].get('desc')))
    finally:
        s.close()


def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]
    finally:
        s.close()


def serve_http_forever(lsock, port):
    while True:
        try:
            hostagent.serve_http(lsock, port)
        except Exception:               # never take the hostagent down
            pass
        if lsock.fileno() < 0:
            return


def hostagent_main(argv):
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
        if not a.startswith('-'):
            name = a
        i += 1
    if not (pidfile and sockpath and name):
        log(FATAL, 'usage: limactl hostagent --pidfile FILE --socket SOCK INSTANCE')
        return 1
    d = os.path.dirname(pidfile)

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

    def wait(secs):
        """Sleep up to SECS; False if a stop was asked for or QEMU died."""
        end = time.monotonic() + secs
        while not stop_sig and (proc is None or proc.poll() is None):
            left = end - time.monotonic()
            if left <= 0:
                return True
            try:
                import select
                select.select([wake_r], [], [], left)
                while os.read(wake_r, 512):
                    pass
            except (OSError, InterruptedError):
                pass
        return False

    port = 0
    proc = None
    lsock = None
    errors = []
    code = 0
    drv_pidfile = os.path.join(d, 'qemu.pid')
    try:
        cfg = load_config(d)
        port = (cfg.get('ssh') or {}).get('localPort') or free_port()
        hostagent.write_ssh_config(d, name, port)
        try:
            os.unlink(sockpath)
        except FileNotFoundError:
            pass
        lsock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        lsock.bind(sockpath)
        lsock.listen(16)
        threading.Thread(target=serve_http_forever, args=(lsock, port), daemon=True).start()
        log(INFO, 'hostagent socket created at %s' % sockpath)
        hostagent.emit_event(port)

        with open(os.path.join(d, 'vm-image'), 'rb') as f:
            img = f.read().decode().strip()
        if not os.path.isfile(os.path.join(img, 'disk.qcow2')):
            raise Fatal('the guest image %s is gone (rebuild it and re-create the instance)' % img)
        resize_disk(d, cfg)
        iid = 'iid-%d-%s' % (int(time.time()), secrets.token_hex(4))
        write_cidata(d, name, cfg, iid)
        for p in (drv_pidfile, os.path.join(d, 'qmp.sock')):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        argv = qemu_argv(d, name, cfg, img, port)
        log(INFO, 'Starting QEMU (hint: to watch the boot progress, see %s)'
            % go_quote(os.path.join(d, 'serial*.log')))
        qlog = os.open(os.path.join(d, 'qemu.log'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            # close_fds=False: QEMU under Lima (Go) inherits every
            # inheritable descriptor the hostagent inherited.
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=qlog, stderr=qlog,
                                    close_fds=False)
        finally:
            os.close(qlog)
        t_qemu = time.monotonic()
        while not os.path.exists(drv_pidfile):
            if proc.poll() is not None:
                with open(os.path.join(d, 'qemu.log'), 'rb') as f:
                    tail = f.read().decode('utf-8', 'replace').strip().splitlines()[-3:]
                raise Fatal('QEMU exited (%s): %s' % (procs.exit_desc(proc.returncode), ' / '.join(tail)))
            if time.monotonic() - t_qemu > 30:
                raise Fatal('QEMU did not write its pid file in 30s')
            time.sleep(0.02)

        log(INFO, 'Waiting for the essential requirement 1 of 2: "ssh"')
        while not ssh_banner(port):
            if not wait(0.5):
                raise Fatal('the %s driver process exited (%s)' % (runtime.VM_TYPE, procs.exit_desc(proc.poll()))
                            if proc.poll() is not None else 'stopped while booting')
        while True:
            rc, _, err = ssh_run(d, port, 'true', 30)
            if rc == 0:
                break
            log(DEBUG, 'ssh not ready: %s' % err.decode('utf-8', 'replace').strip())
            if not wait(1):
                raise Fatal('stopped while waiting for ssh')
        log(INFO, 'The essential requirement 1 of 2 is satisfied')
        log(INFO, 'Waiting for the essential requirement 2 of 2: "Explicitly start ssh ControlMaster"')
        log(INFO, 'The essential requirement 2 of 2 is satisfied')
        log(INFO, 'Waiting for the final requirement 1 of 1: "boot scripts must have finished"')
        while True:
            rc, out, _ = ssh_run(d, port, 'cat %s 2>/dev/null' % BOOT_MARKER, 30)
            if rc == 0 and out.strip() == iid.encode():
                break
            if not wait(1):
                raise Fatal('stopped while waiting for the boot scripts')
        log(INFO, 'The final requirement 1 of 1 is satisfied')
        log(INFO, 'boot time: %.1f s from QEMU start' % (time.monotonic() - t_qemu))
        hostagent.emit_event(port, running=True)
        while wait(3600):
            pass
        if proc.poll() is not None:
            errors.append('the %s driver process exited (%s)' % (runtime.VM_TYPE, procs.exit_desc(proc.returncode)))
            log(ERROR, errors[-1])
            code = 1
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
        if stop_sig:
            log(INFO, 'Received %s, shutting down the host agent'
                % ('SIGINT' if stop_sig[0] == signal.SIGINT else 'SIGTERM'))
        try:
            stop_master(d, port)
        except (OSError, subprocess.TimeoutExpired):
            pass
        if proc is not None and proc.poll() is None:
            try:
                log(INFO, 'Shutting down QEMU with ACPI (QMP system_powerdown)')
                qmp(d, 'system_powerdown')
                proc.wait(STOP_TIMEOUT)
            except (OSError, ValueError, subprocess.TimeoutExpired) as e:
                log(WARN, 'QEMU did not power down (%s); killing it' % e)
                proc.kill()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for p in (drv_pidfile, os.path.join(d, 'qmp.sock')):
            try:
                os.unlink(p)
            except OSError:
                pass
        hostagent.emit_event(port, exiting=True, errors=errors)
        if lsock is not None:
            lsock.close()
        for p in (sockpath, pidfile):
            try:
                os.unlink(p)
            except OSError:
                pass
    return code


# --------------------------------------------------------------------------
# process identification and clean-up (used by status, stop -f, delete)

def vm_pid_alive(pid, kind=None):
    if kind == 'drv':
        if not _orig['pid_alive'](pid, None):
            return False
        try:
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                argv0 = f.read().split(b'\0', 1)[0]
            return b'qemu-system' in os.path.basename(argv0)
        except OSError:
            return False
    return _orig['pid_alive'](pid, kind)


def vm_sweep_guest_procs(d, exclude=()):
    """SIGKILL what an interrupted start or a killed hostagent left for this
    instance: a QEMU whose pid file was never written, and the ssh
    ControlMaster (found by the instance's disk and by the title the master
    gives itself, "ssh: PATH [mux]")."""
    marks = (('file=%s,' % qemu_escape(os.path.join(d, 'disk'))).encode(),
             ('ssh: %s [mux]' % os.path.join(d, 'ssh.sock')).encode())
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
            with open('/proc/%d/cmdline' % pid, 'rb') as f:
                cmd = f.read()
        except OSError:
            continue
        if any(m in cmd for m in marks):
            try:
                os.kill(pid, signal.SIGKILL)
                found.append(pid)
            except OSError:
                pass
    return found


# --------------------------------------------------------------------------
# shell, copy

def cmd_shell(o, args):
    if o.get('instance'):
        name, cmd = o['instance'], list(args)
    else:
        if not args:
            raise ArgsError('shell', 'requires at least 1 arg(s), only received 0')
        if len(args) >= 2 and args[1] == '--':
            args = args[:1] + args[2:]
        name, cmd = args[0], args[1:]
    if cmd and cmd[0] in ('create', 'start', 'delete', 'shell'):
        log(WARN, 'Perhaps you meant %s?' % gq('limactl ' + ' '.join(cmd)))
    if o.get('sync'):
        raise Fatal('--sync is not supported by the real-VM limactl')
    inst = shell.running_inst_for(name, o.get('start'))
    script = shell.build_script(o, cmd)
    argv = ssh_argv(inst.dir, inst.ssh_port or 22, script, tty=isatty(1))
    log(DEBUG, 'executing ssh: %s' % ' '.join(sh_quote(a) for a in argv))
    shell.ensure_std_fds()
    # A child, not exec: like limactl, ssh's death by a signal becomes 255.
    try:
        p = subprocess.Popen(argv)
    except OSError as e:
        raise Fatal('failed to run ssh: %s' % e)
    if faults.FAULT.die:
        faults.die_now()
    while True:
        try:
            rc = p.wait()
            break
        except InterruptedError:
            continue
    return 255 if rc < 0 else rc


def cmd_copy(o, args):
    if len(args) < 2:
        raise ArgsError('copy', 'requires at least 2 arg(s), only received %d' % len(args))
    if o.get('backend') not in (None, 'auto', 'scp'):
        raise Fatal('backend %s is not supported by the real-VM limactl (scp only)' % gq(o['backend']))
    insts = {}
    paths = []
    for a in args:
        inst_name, sep, path = a.partition(':')
        if sep:
            if inst_name not in insts:
                insts[inst_name] = shell.running_inst_for(inst_name)
            paths.append((inst_name, path))
        else:
            paths.append((None, a))
    if not insts:
        raise Fatal('at least one path must be of the form INSTANCE:PATH')
    if len(insts) > 1:
        raise Fatal('copying between two instances is not supported by the real-VM limactl')
    inst = list(insts.values())[0]
    user = guestfs.guest_user()[0]
    argv = ['scp', '-F', '/dev/null'] + ssh_options(inst.dir, inst.ssh_port) + \
        ['-o', 'LogLevel=ERROR', '-v' if o.get('verbose') else '-q']
    if o.get('recursive'):
        argv.append('-r')
    argv += ['-3', '--']
    for iname, path in paths:
        if iname is None:
            argv.append(path)
        else:
            argv.append('scp://%s@127.0.0.1:%d/%s' % (user, inst.ssh_port, path))
    shell.ensure_std_fds()
    rc = subprocess.call(argv)
    return 255 if rc < 0 else rc


# --------------------------------------------------------------------------
# wiring

USAGE = cli.USAGE.replace('(limactl simulator for tests)', '(real QEMU VMs, for tests)') \
    .replace('  info        Show diagnostic information\n',
             '  clone       Clone an instance of Lima\n  info        Show diagnostic information\n') \
    .replace('Simulator: see tests/lima-sim/README.md', 'Real-VM limactl: see tests/lima-vm/README.md')

_orig = {}


def install():
    for mod, n in ((limayaml, 'validate_config'), (limayaml, 'builtin_template'),
                   (procs, 'pid_alive')):
        _orig[n] = getattr(mod, n)
    guestfs.guest_home = guest_home
    guestfs.prepare_disk = vm_prepare_disk
    limayaml.validate_config = vm_validate_config
    limayaml.builtin_template = vm_builtin_template
    procs.pid_alive = vm_pid_alive
    procs.sweep_guest_procs = vm_sweep_guest_procs
    hostagent.hostagent_main = hostagent_main
    cli.USAGE = USAGE
    # Real guests have Lima's network: no simulator guestNetwork key.
    runtime.GUEST_NETWORK = None
    c = cli.COMMANDS
    c['shell'] = c['shell'][:4] + (cmd_shell,)
    c['copy'] = c['copy'][:4] + (cmd_copy,)
    # The simulator's clone runs here (it always has: the monolithic
    # simulator's dispatch put it in place of any table entry); it copies
    # the qcow2 overlay as the disk.  Only the flags are this double's.
    c['clone'] = (dict(limayaml.EDIT_FLAGS, start='bool', timeout='dur'), {}, True,
                  'clone OLDINST NEWINST', clone.cmd_clone)


def main(launcher):
    install()
    return cli.main(launcher)
