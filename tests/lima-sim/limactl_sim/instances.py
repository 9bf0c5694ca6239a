"""The instance directory and its status: Lima's inspect (pid files plus
ha.sock's /v1/info), the parsed lima.yaml with defaults, and the list
of instances."""

import os

from .errors import Fatal, GoErrors, NotExist
from .quoting import go_quote, gq
from . import runtime, names, yamlio, limayaml, guestfs, procs


UNIX_PATH_MAX = 108
LONGEST_SOCK = 'ssh.sock.1234567890123456'


def inst_dir(name):
    names.validate_name(name)
    return os.path.join(runtime.lima_home(), name)


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
        self.arch = limayaml.host_arch()
        self.vm_type = runtime.VM_TYPE
        self.message = ''
        self.protected = False
        self.lima_version = ''
        self.hostname = names.hostname_of(name)
        self.error_objs = None      # JSON of the errors, when not all {}

    def go_errors(self):
        return GoErrors(self.errors, self.error_objs)


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
    if full and not _load_config(inst, use_yaml):
        # Lima's Inspect: a lima.yaml that does not load or validate leaves
        # the status unknown (""), with no VM type, arch or pids.
        inst.vm_type = inst.arch = ''
        return inst
    inst.ha_pid = procs.read_pid(os.path.join(d, 'ha.pid'), 'ha')
    inst.drv_pid = procs.read_pid(os.path.join(d, runtime.VM_TYPE + '.pid'), 'drv')
    if inst.ha_pid and inst.drv_pid:
        inst.status = 'Running'
    elif not inst.ha_pid and not inst.drv_pid:
        inst.status = 'Stopped'
    elif inst.ha_pid:
        inst.status = 'Broken'
        inst.errors.append('host agent is running but driver is not')
    else:
        inst.status = 'Broken'
        inst.errors.append('%s driver is running but host agent is not' % runtime.VM_TYPE)
    if inst.ha_pid and http:
        try:
            inst.ssh_port = ha_info(d)
        except (OSError, ValueError) as e:
            inst.status = 'Broken'
            inst.errors.append('failed to get Info from %s: %s' % (go_quote(os.path.join(d, 'ha.sock')), e))
    if not inst.ssh_port:
        inst.ssh_port = _ssh_port_from_config(d)
    return inst


def _load_config(inst, use_yaml=True):
    """Lima's LoadYAMLByFilePath (load, then Validate) and the defaults it
    fills in; False, with the error recorded, when it fails."""
    d = inst.dir
    path = os.path.join(d, 'lima.yaml')
    comment = 'main file %s' % gq(path)
    try:
        with open(path, 'rb') as f:
            text = f.read().decode('utf-8', 'surrogateescape')
        if use_yaml:
            cfg = yamlio.parse_yaml(text, comment)
            limayaml.strict_warnings(text, cfg, comment)
        else:
            cfg = yamlio.mini_yaml(text)
    except (OSError, Fatal) as e:
        inst.errors.append(str(e))
        return False
    if use_yaml:
        err = limayaml.param_error(cfg)
        if err:
            inst.errors.append(err)
            return False
        provision = limayaml.filled_provision(cfg, guestfs.template_data(inst.name))
        errs = limayaml.validation_errors(cfg)
        if errs:
            inst.errors.append('\n'.join(errs))
            return False
        if 'provision' in cfg:
            cfg = dict(cfg, provision=provision)
    cpus, mem, disk = limayaml.default_resources()
    user, uid, gid = guestfs.guest_user()
    try:
        inst.cpus = int(cfg.get('cpus') or cpus)
        inst.memory = yamlio.ram_in_bytes(cfg.get('memory') or mem)
        inst.disk = yamlio.ram_in_bytes(cfg.get('disk') or disk)
    except (TypeError, ValueError) as e:
        inst.errors.append('failed to unmarshal YAML (%s): %s' % (comment, e))
        return False
    arch = cfg.get('arch')
    if isinstance(arch, str) and arch not in ('', 'default'):
        inst.arch = {'arm64': 'aarch64', 'amd64': 'x86_64'}.get(arch, arch)
    msg = cfg.get('message')
    inst.message = msg if isinstance(msg, str) else ''
    filled = dict(cfg)
    filled['vmType'] = cfg.get('vmType') or runtime.VM_TYPE
    filled['arch'] = inst.arch
    filled['cpus'] = inst.cpus
    filled['memory'] = cfg.get('memory') or yamlio.bytes_size(inst.memory)
    filled['disk'] = cfg.get('disk') or yamlio.bytes_size(inst.disk)
    filled.setdefault('plain', False)
    filled['user'] = dict(cfg.get('user') or {})
    for k, v in (('name', user), ('comment', user), ('home', guestfs.guest_home()),
                 ('shell', '/bin/bash'), ('uid', uid)):
        filled['user'].setdefault(k, v)
    inst.config = filled
    inst.protected = os.path.exists(os.path.join(d, 'protected'))
    try:
        with open(os.path.join(d, 'lima-version'), 'rb') as f:
            inst.lima_version = f.read().decode('utf-8', 'replace').strip()
    except OSError:
        pass
    return True


def guest_pid(d):
    return procs.read_pid(os.path.join(d, 'guest.pid'), 'guest', remove_stale=False)


def instance_names():
    try:
        entries = sorted(os.listdir(runtime.lima_home()))
    except OSError:
        return []
    return [e for e in entries if not e.startswith(('.', '_'))
            and os.path.isdir(os.path.join(runtime.lima_home(), e))]
