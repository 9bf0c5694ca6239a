"""list (JSON, YAML, table and Go-template formats) and info."""

import os

from .errors import ArgsError, Fatal, NotExist
from .quoting import go_json, go_quote, gq
from .logrus import WARN, log
from . import fileio, runtime, faults, names, yamlio, limayaml, instances


def _drop_empty_maps(v):
    """What `limactl list` pipes its JSON through: yq's
    del(.. | select(tag == "!!map" and length == 0)), until nothing changes."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            x = _drop_empty_maps(x)
            if not (isinstance(x, dict) and not x):
                out[k] = x
        return out
    if isinstance(v, list):
        return [y for y in (_drop_empty_maps(x) for x in v) if not (isinstance(y, dict) and not y)]
    return v


def inst_record(inst):
    """store.FormatData of an instance: Lima's Instance fields in their
    order (omitempty as tagged), then the deprecated host fields."""
    rec = {'name': inst.name, 'hostname': inst.hostname, 'status': inst.status,
           'dir': inst.dir, 'vmType': inst.vm_type, 'arch': inst.arch}
    if inst.cpus:
        rec['cpus'] = inst.cpus
    if inst.memory:
        rec['memory'] = inst.memory
    if inst.disk:
        rec['disk'] = inst.disk
    if inst.message:
        rec['message'] = inst.message
    if inst.ssh_port:
        rec['sshLocalPort'] = inst.ssh_port
    if inst.config is not None:
        rec['sshConfigFile'] = os.path.join(inst.dir, 'ssh.config')
    if inst.ha_pid:
        rec['hostAgentPID'] = inst.ha_pid
    if inst.drv_pid:
        rec['driverPID'] = inst.drv_pid
    if inst.errors:
        rec['errors'] = inst.go_errors().json
    if inst.config is not None:
        rec['config'] = inst.config
        rec['sshAddress'] = '127.0.0.1'
    rec['protected'] = inst.protected
    rec['limaVersion'] = inst.lima_version
    param = (inst.config or {}).get('param')
    if isinstance(param, dict) and param:
        rec['param'] = dict((str(k), str(v)) for k, v in param.items())
    home = runtime.lima_home()
    rec.update({'HostOS': 'linux', 'HostArch': limayaml.host_arch(), 'LimaHome': home,
                'IdentityFile': os.path.join(home, '_config', 'user')})
    return _drop_empty_maps(rec)


def broken_record(name, d, err):
    """listAction's brokenInstance: a directory without lima.yaml."""
    inst = instances.Inst(name, d)
    inst.status = 'Broken'
    inst.hostname = inst.vm_type = inst.arch = ''
    inst.errors = [str(err)]
    inst.error_objs = [{'Op': 'open', 'Path': os.path.join(d, 'lima.yaml'), 'Err': 2}]
    return inst


_TEMPLATE_FIELDS = {
    'Name': 'name', 'Hostname': 'hostname', 'Status': 'status', 'Dir': 'dir',
    'VMType': 'vmType', 'Arch': 'arch', 'CPUs': 'cpus', 'Memory': 'memory', 'Disk': 'disk',
    'Message': 'message', 'SSHLocalPort': 'sshLocalPort', 'SSHConfigFile': 'sshConfigFile',
    'HostAgentPID': 'hostAgentPID', 'DriverPID': 'driverPID', 'SSHAddress': 'sshAddress',
    'Protected': 'protected', 'LimaVersion': 'limaVersion', 'Errors': 'errors', 'Config': 'config',
    'Param': 'param', 'HostOS': 'HostOS', 'HostArch': 'HostArch', 'LimaHome': 'LimaHome',
    'IdentityFile': 'IdentityFile',
}
# `list --list-fields`: Lima's Instance fields, sorted.
LIST_FIELDS = ('AdditionalDisks', 'Arch', 'AutoStartedIdentifier', 'CPUs', 'Config', 'Dir', 'Disk',
               'DriverPID', 'Errors', 'HostAgentPID', 'Hostname', 'LimaVersion', 'Memory', 'Message',
               'Name', 'Networks', 'Param', 'Protected', 'SSHAddress', 'SSHConfigFile', 'SSHLocalPort',
               'Status', 'VMType')
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
        addr = '127.0.0.1' if inst.config is not None else ''
        rows.append([inst.name, inst.status, '%s:%d' % (addr, inst.ssh_port), inst.vm_type,
                     inst.arch, str(inst.cpus), yamlio.bytes_size(inst.memory), yamlio.bytes_size(inst.disk), d])
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
        fileio.write_all(1, ('\n'.join(LIST_FIELDS) + '\n').encode())
        return 0
    fmt = fmt or 'table'
    if o.get('quiet') and fmt != 'table':
        raise Fatal("option --quiet can only be used with '--format table'")
    all_names = instances.instance_names()
    for n in all_names:
        # store.Validate: the first directory without lima.yaml
        y = os.path.join(runtime.lima_home(), n, 'lima.yaml')
        if not os.path.isfile(y):
            log(WARN, 'The directory %s does not look like a valid Lima directory: stat %s: '
                'no such file or directory' % (gq(runtime.lima_home()), y))
            break
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
    if o.get('quiet'):
        # Lima prints the names before it inspects anything.
        fileio.write_all(1, ''.join(n + '\n' for n in targets).encode('utf-8', 'surrogateescape'))
        if unmatched:
            raise Fatal('unmatched instances')
        return 0
    insts = []
    for n in targets:
        err = names.name_error(n)
        if err:
            raise Fatal('unable to load instance %s: %s' % (n, err))
        try:
            insts.append(instances.inspect(n, full=True, use_yaml=fmt != 'table'))
        except NotExist as e:
            if e.dir_exists:
                insts.append(broken_record(n, e.dir, str(e)))
                continue
            log(WARN, 'Skipping instance %s: %s (being cloned or deleted?)' % (gq(n), e))
            if args:
                unmatched = True
    if faults.FAULT.die:
        faults.die_now()
    for inst in insts:
        if inst.errors:
            log(WARN, 'instance %s has errors' % gq(inst.name), {'errors': inst.go_errors()})
    out = []
    if fmt == 'json':
        out = [go_json(inst_record(i)) + '\n' for i in insts]
    elif fmt == 'yaml':
        y = yamlio.yaml_mod()
        if not y:
            raise Fatal('--format yaml needs PyYAML (python3-yaml) in the limactl simulator')
        out = ['---\n' + y.safe_dump(inst_record(i), default_flow_style=False, sort_keys=False)
               for i in insts]
    elif fmt == 'table':
        out = [format_table(insts)]
    else:
        out = [render_template(fmt, inst_record(i)) + '\n' for i in insts]
    if out:
        fileio.write_all(1, ''.join(out).encode('utf-8', 'surrogateescape'))
    if unmatched:
        raise Fatal('unmatched instances')
    return 0


def cmd_info(o, args):
    import json
    if args:
        raise ArgsError('info', 'unknown command %s for %s' % (go_quote(args[0]), go_quote('limactl info')))
    if o.get('yq'):
        raise Fatal('--yq is not supported by the limactl simulator')
    if faults.FAULT.die:
        faults.die_now()
    from . import shell
    # template:default as data, without PyYAML: `info` is on the daemon's
    # start-up path, and importing PyYAML costs more than all the rest.
    ubuntu = 'https://cloud-images.ubuntu.com/releases/noble/release/ubuntu-24.04-server-cloudimg-%s.img'
    default = {'minimumLimaVersion': '2.0.0', 'vmType': runtime.VM_TYPE,
               'images': [{'location': ubuntu % 'amd64', 'arch': 'x86_64'},
                          {'location': ubuntu % 'arm64', 'arch': 'aarch64'}],
               'mounts': [{'location': '~'}]}
    # limainfo.Info's keys in its order; templates and defaultTemplate are
    # the simulator's stand-ins, and it has no share directory.
    info = {'version': runtime.VERSION,
            'templates': [{'name': t, 'location': 'template:' + t} for t in limayaml.TEMPLATES],
            'defaultTemplate': default,
            'limaHome': runtime.lima_home(), 'vmTypes': [runtime.VM_TYPE],
            'vmTypesEx': {runtime.VM_TYPE: {'location': 'internal'}}, 'guestAgents': {},
            'shellEnvBlock': list(shell.ENV_BLOCK_DEFAULT),
            'hostOS': 'linux', 'hostArch': limayaml.host_arch(),
            'identityFile': os.path.join(runtime.lima_home(), '_config', 'user'),
            'plugins': None, 'libexecPaths': None, 'sharePaths': []}
    if runtime.GUEST_NETWORK is not None:
        info['guestNetwork'] = runtime.GUEST_NETWORK
    fileio.write_all(1, (json.dumps(info, indent=4) + '\n').encode())
    return 0
