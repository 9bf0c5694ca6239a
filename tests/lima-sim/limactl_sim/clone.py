"""clone (Lima 1.2+): copying a stopped instance's directory and disk
under a new name."""

import os

from .errors import ArgsError, Fatal, NotExist
from .quoting import gq
from . import fileio, runtime, faults, names, limayaml, guestfs, instances, create, start, yamlio


def _clone_skip(entry):
    """Lima's clone skips `protected`, `swtpm/` and runtime files; the
    simulator also leaves out its runtime dirs and the last run's logs."""
    return (entry in ('protected', 'swtpm', 'simrun', 'lima.yaml', 'cloud-config.yaml')
            or entry.endswith(('.pid', '.sock', '.tmp'))
            or entry.startswith(('ha.', 'serial')))


# Lima 2.2's clone of an instance whose lima.yaml does not load: its
# Config is nil, and clone.go:81 dereferences it.
CLONE_PANIC = (
    'panic: runtime error: invalid memory address or nil pointer dereference\n'
    '[signal SIGSEGV: segmentation violation code=0x1 addr=0x208 pc=0x1201cb0]\n\n'
    'goroutine 1 [running]:\n'
    'main.cloneOrRenameAction(...)\n'
    '\tgithub.com/lima-vm/lima/v2/cmd/limactl/clone.go:81 +0x2d0\n'
    'main.main()\n'
    '\tgithub.com/lima-vm/lima/v2/cmd/limactl/main.go:51 +0xca\n')


def cmd_clone(o, args):
    import subprocess
    if len(args) != 2:
        raise ArgsError('clone', 'accepts 2 arg(s), received %d' % len(args))
    old, new = args
    # Lima's checks, in CloneOrRename's order.
    try:
        src = instances.inspect(old, full=True)
    except NotExist:
        raise Fatal('instance %s not found' % gq(old))
    if new == old:
        raise Fatal('new instance name %s must be different from %s' % (gq(new), gq(old)))
    if src.status == 'Running':
        raise Fatal('cannot clone a running instance')
    names.validate_name(new)
    home = runtime.lima_home()
    d = os.path.join(home, new)
    if os.path.lexists(d):
        raise Fatal('instance %s already exists' % gq(new))
    create.check_sock_path(new, d)
    with open(os.path.join(src.dir, 'lima.yaml'), 'rb') as f:
        text = f.read().decode('utf-8', 'surrogateescape')
    if not yamlio.loads_strictly(text):
        import sys
        sys.stderr.write(CLONE_PANIC)
        return 2
    edited = limayaml.apply_edits(text, o, False)
    limayaml.validate_config(edited, new, guestfs.template_data(new))
    os.mkdir(d, 0o700)
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
            if faults.FAULT.die:
                faults.die_now()
            r = subprocess.run(['cp', '-a', '--reflink=auto', '--', sp, dst],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
            if r.returncode != 0:
                raise Fatal('failed to copy %s: %s' % (gq(sp), r.stderr.decode('utf-8', 'replace').strip()))
        create.write_cloud_config(d, new)
        fileio.write_file(os.path.join(d, 'lima.yaml'), edited)
        ok = True
    finally:
        if not ok:
            try:
                fileio.rmtree_safe(d)
            except (OSError, Fatal):
                pass
    if o.get('start'):
        start.start_instance(instances.inspect(new, http=False), o.get('timeout') or start.DEFAULT_START_TIMEOUT)
    return 0
