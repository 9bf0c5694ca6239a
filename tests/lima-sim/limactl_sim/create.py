"""create (and the create half of start): locating the template, writing
the instance directory, and Lima's loadOrCreateInstance."""

import os

from .errors import ArgsError, Fatal, NotExist
from .quoting import go_quote, gq
from .logrus import ERROR, INFO, WARN, log
from . import fileio, runtime, faults, names, yamlio, limayaml, guestfs, instances


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


def write_cloud_config(d, name):
    """The instance's cloud-config.yaml (for reference: nothing reads it)."""
    user, uid, gid = guestfs.guest_user()
    fileio.write_file(os.path.join(d, 'cloud-config.yaml'),
                      CLOUD_CONFIG % (names.hostname_of(name), user, uid, guestfs.guest_home()), 0o444)


def check_sock_path(name, d):
    """The longest socket Lima puts in the instance directory must fit."""
    sock = os.path.join(d, instances.LONGEST_SOCK)
    if len(sock) >= instances.UNIX_PATH_MAX:
        raise Fatal('instance name %s too long: %s must be less than UNIX_PATH_MAX=%d characters, but is %d'
                    % (gq(name), gq(sock), instances.UNIX_PATH_MAX, len(sock)))


def create_instance(o, name, data, cmd, locator=None, absloc='template:default'):
    """Lima's loadOrCreateInstance from the template on, then instance.Create,
    in their order.  LOCATOR names a template read from a file or stdin
    (ABSLOC is its absolute locator, from which relative bases are found)."""
    names.validate_name(name)
    home = runtime.lima_home()
    d = os.path.join(home, name)
    text = data.decode('utf-8', 'surrogateescape')
    if locator is not None:
        limayaml.strict_warnings(text, yamlio.parse_yaml(text, locator), locator)
    if cmd == 'create' and os.path.isfile(os.path.join(d, 'lima.yaml')):
        raise Fatal('instance %s already exists' % gq(name))
    if limayaml.has_base(text):
        # Lima's tmpl.Embed(embedAll): the instance's lima.yaml holds its
        # bases merged in, and no `base:` (an instance's must have none).
        from . import embed
        text = embed.embed(text, absloc, True)
        data = text.encode('utf-8', 'surrogateescape')
    edited = limayaml.apply_edits(text, o, True)
    if edited != text:
        data = edited.encode('utf-8', 'surrogateescape')
    if not runtime.TTY.value:
        log(INFO, 'Terminal is not available, proceeding without opening an editor')
    check_sock_path(name, d)
    if os.path.lexists(d):
        raise Fatal('instance %s already exists (%s)' % (gq(name), gq(d)))
    main = 'main file %s' % gq(os.path.join(d, 'lima.yaml'))
    cfg = limayaml.validate_config(edited, main, guestfs.template_data(name))
    os.makedirs(home, 0o755, exist_ok=True)
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        raise Fatal('instance %s already exists (%s)' % (gq(name), gq(d)))
    if faults.FAULT.stall and faults.FAULT.sub == 'create':
        faults.stall_now()     # the directory is made, lima.yaml is not yet
    ok = False
    try:
        fileio.write_file(os.path.join(d, 'lima.yaml'), data)
        fileio.write_file(os.path.join(d, 'lima-version'), runtime.VERSION, 0o444)
        limayaml.strict_warnings(edited, cfg, main)       # Lima's Inspect loads it again
        write_cloud_config(d, name)
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


def existing_instance(name):
    """An instance loadOrCreateInstance found: its configuration errors are
    logged, and fatal when they left no configuration."""
    inst = instances.inspect(name, full=True)
    if inst.errors:
        log(ERROR, 'Instance %s has configuration errors' % go_quote(name),
            {'error': '\n'.join(inst.errors)})
        if inst.config is None:
            raise Fatal('instance %s has configuration errors: %s' % (go_quote(name), '\n'.join(inst.errors)))
    return inst


def load_or_create(o, args, cmd):
    """Lima's loadOrCreateInstance: returns (inst, created)."""
    arg = args[0] if args else None
    name_flag = o.get('name')
    if name_flag:
        names.validate_name(name_flag)
    if arg is None:
        name = name_flag or 'default'
        if cmd == 'start':
            try:
                return existing_instance(name), False
            except NotExist:
                pass
        return create_instance(o, name, limayaml.builtin_template('default'), cmd), True
    if names.name_error(arg) is None:
        if name_flag and name_flag != arg:
            raise Fatal('instance name %s and CLI flag --name=%s cannot be specified together'
                        % (gq(arg), gq(name_flag)))
        try:
            inst = existing_instance(arg)
        except NotExist:
            pass
        else:
            if cmd == 'create':
                raise Fatal('instance %s already exists' % gq(arg))
            return inst, False
        if arg != 'default':
            log(INFO, 'Creating an instance %s from template:default (Not from template:%s)' % (gq(arg), arg))
            log(WARN, 'This form is deprecated. Use %s instead'
                % gq('limactl create --name=%s template:default' % arg))
        return create_instance(o, arg, limayaml.builtin_template('default'), cmd), True
    data, tname, locator, absloc = limayaml.read_template(arg, name_flag)
    name = name_flag or tname
    return create_instance(o, name, data, cmd, locator, absloc), True


def cmd_create(o, args):
    if len(args) > 1:
        raise ArgsError('create', 'accepts at most 1 arg(s), received %d' % len(args))
    if o.get('list-templates') or o.get('list-drivers'):
        return limayaml.list_templates_or_drivers(o)
    inst, _ = load_or_create(o, args, 'create')
    log(INFO, 'Run %s to start the instance.' % gq('limactl start ' + inst.name))
    return 0
