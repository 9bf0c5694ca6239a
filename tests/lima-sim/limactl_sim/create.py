"""create (and the create half of start): locating the template, writing
the instance directory, and Lima's loadOrCreateInstance."""

import os

from .errors import ArgsError, Fatal, NotExist
from .quoting import gq
from .logrus import INFO, WARN, log
from . import fileio, runtime, faults, names, limayaml, guestfs, instances


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
    names.validate_name(name)
    home = runtime.lima_home()
    d = os.path.join(home, name)
    if cmd == 'create' and os.path.isfile(os.path.join(d, 'lima.yaml')):
        raise Fatal('instance %s already exists' % gq(name))
    text = data.decode('utf-8', 'surrogateescape')
    edited = limayaml.apply_edits(text, o, True)
    if edited != text:
        data = edited.encode('utf-8', 'surrogateescape')
    limayaml.validate_config(edited, name)
    if not runtime.TTY.value:
        log(INFO, 'Terminal is not available, proceeding without opening an editor')
    sock = os.path.join(d, instances.LONGEST_SOCK)
    if len(sock) >= instances.UNIX_PATH_MAX:
        raise Fatal('instance name %s too long: %s must be less than UNIX_PATH_MAX=%d characters, but is %d'
                    % (gq(name), gq(sock), instances.UNIX_PATH_MAX, len(sock)))
    os.makedirs(home, 0o755, exist_ok=True)
    try:
        os.mkdir(d, 0o755)
    except FileExistsError:
        raise Fatal('instance %s already exists (%s)' % (gq(name), gq(d)))
    ok = False
    try:
        fileio.write_file(os.path.join(d, 'lima.yaml'), data)
        fileio.write_file(os.path.join(d, 'lima-version'), runtime.LIMA_VERSION, 0o444)
        user, uid, gid = guestfs.guest_user()
        fileio.write_file(os.path.join(d, 'cloud-config.yaml'),
                          CLOUD_CONFIG % (names.hostname_of(name), user, uid, guestfs.guest_home()))
        if faults.FAULT.die and faults.FAULT.sub == 'create':
            faults.die_now()
        guestfs.prepare_disk(d, name)
        ok = True
    finally:
        if not ok:
            try:
                fileio.rmtree_safe(d)
            except (OSError, Fatal):
                pass
    return instances.inspect(name, http=False)


def load_or_create(o, args, cmd):
    """Lima's loadOrCreateInstance: returns (inst, created)."""
    arg = args[0] if args else None
    name_flag = o.get('name')
    if arg is None:
        name = name_flag or 'default'
        if cmd == 'start':
            try:
                return instances.inspect(name), False
            except NotExist:
                pass
        return create_instance(o, name, limayaml.builtin_template('default'), cmd), True
    if names.name_error(arg) is None:
        if name_flag and name_flag != arg:
            raise Fatal('instance name %s and CLI flag --name=%s cannot be specified together'
                        % (gq(arg), gq(name_flag)))
        try:
            inst = instances.inspect(arg)
        except NotExist:
            pass
        else:
            if cmd == 'create':
                raise Fatal('instance %s already exists' % gq(arg))
            return inst, False
        log(WARN, 'Creating an instance %s from template:default (Not from template:%s)' % (gq(arg), arg))
        log(WARN, 'This form is deprecated. Use %s instead'
            % gq('limactl create --name=%s template:default' % arg))
        return create_instance(o, arg, limayaml.builtin_template('default'), cmd), True
    data, tname = limayaml.read_template(arg, name_flag)
    name = name_flag or tname
    return create_instance(o, name, data, cmd), True


def cmd_create(o, args):
    if len(args) > 1:
        raise ArgsError('create', 'accepts at most 1 arg(s), received %d' % len(args))
    if o.get('list-templates') or o.get('list-drivers'):
        return limayaml.list_templates_or_drivers(o)
    inst, _ = load_or_create(o, args, 'create')
    log(INFO, 'Run %s to start the instance.' % gq('limactl start ' + inst.name))
    return 0
