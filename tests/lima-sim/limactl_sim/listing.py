"""list (JSON, YAML, table and Go-template formats) and info."""

import os

from .errors import Fatal, NotExist
from .quoting import go_json, gq
from .logrus import WARN, log
from . import fileio, runtime, faults, names, yamlio, limayaml, instances


def inst_record(inst):
    rec = {'name': inst.name, 'hostname': names.hostname_of(inst.name), 'status': inst.status,
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
    inst = instances.Inst(name, d)
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
        fileio.write_all(1, ('\n'.join(sorted(_TEMPLATE_FIELDS)) + '\n').encode())
        return 0
    fmt = fmt or 'table'
    if o.get('quiet') and fmt != 'table':
        raise Fatal("option --quiet can only be used with '--format table'")
    all_names = instances.instance_names()
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
        err = names.name_error(n)
        if err:
            raise Fatal('unable to load instance %s: %s' % (n, err))
        try:
            insts.append(instances.inspect(n, full=True, use_yaml=fmt != 'table'))
        except NotExist as e:
            insts.append(broken_record(n, e.dir, str(e)))
    if faults.FAULT.die:
        faults.die_now()
    for inst in insts:
        if inst.errors:
            log(WARN, 'instance %s has errors' % gq(inst.name), {'errors': inst.errors})
    out = []
    if o.get('quiet'):
        out = [i.name + '\n' for i in insts]
    elif fmt == 'json':
        out = [go_json(inst_record(i)) + '\n' for i in insts]
    elif fmt == 'yaml':
        y = yamlio.yaml_mod()
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
        fileio.write_all(1, ''.join(out).encode('utf-8', 'surrogateescape'))
    if unmatched:
        raise Fatal('unmatched instances')
    return 0


def cmd_info(o, args):
    import json
    if o.get('yq'):
        raise Fatal('--yq is not supported by the limactl simulator')
    if faults.FAULT.die:
        faults.die_now()
    info = {'version': runtime.LIMA_VERSION,
            'templates': [{'name': t, 'location': 'template:' + t} for t in limayaml.TEMPLATES],
            'limaHome': runtime.lima_home(), 'vmTypes': [runtime.VM_TYPE],
            'hostOS': 'linux', 'hostArch': limayaml.host_arch(),
            'identityFile': os.path.join(runtime.lima_home(), '_config', 'user')}
    if runtime.GUEST_NETWORK is not None:
        info['guestNetwork'] = runtime.GUEST_NETWORK
    fileio.write_all(1, (json.dumps(info, indent=4) + '\n').encode())
    return 0
