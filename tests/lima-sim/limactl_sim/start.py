"""start: spawning the hostagent, following its events, and the messages
Lima prints meanwhile."""

import os
import time

from .errors import ArgsError, Fatal
from .quoting import gq
from .logrus import ERROR, FATAL, INFO, LEVELS, WARN, log
from . import fileio, runtime, faults, names, yamlio, limayaml, guestfs, procs, create


DEFAULT_START_TIMEOUT = 600.0


def shell_cmd(name):
    """Lima's LimactlShellCmd."""
    return 'lima' if name == 'default' else 'limactl shell ' + name


def ready_message(inst):
    top = yamlio.read_top_level(inst.dir)
    if top.get('plain') is True:
        return 'READY. Run %s to open the shell.' % ('`ssh -F %s %s`' % (
            gq(os.path.join(inst.dir, 'ssh.config')), names.hostname_of(inst.name)))
    return 'READY. Run `%s` to open the shell.' % shell_cmd(inst.name)


def show_message(inst):
    """Lima's ShowMessage: lima.yaml's `message`, after READY, its lines
    written raw to stderr.  Go-template actions are not expanded."""
    msg = yamlio.read_top_level(inst.dir).get('message')
    if not isinstance(msg, str) or not msg:
        return
    log(INFO, 'Message from the instance %s:' % gq(inst.name))
    try:
        fileio.write_all(2, ''.join(ln + '\n' for ln in msg.splitlines()).encode('utf-8', 'surrogateescape'))
    except OSError:
        pass


def go_status(st):
    """An event's status as Go's %+v prints Lima's events.Status."""
    return ('{Running:%s Degraded:%s Exiting:%s Errors:[%s] SSHLocalPort:%d '
            'CloudInitProgress:<nil> PortForward:<nil> Vsock:<nil>}'
            % tuple(['true' if st.get(k) else 'false' for k in ('running', 'degraded', 'exiting')]
                    + [' '.join(str(e) for e in st.get('errors') or []), st.get('sshLocalPort') or 0]))


def _relay_ha_stderr(f, buf):
    import json
    buf[0] += f.read()
    while b'\n' in buf[0]:
        line, buf[0] = buf[0].split(b'\n', 1)
        if not line.strip():
            continue
        fields = None
        try:
            ev = json.loads(line)
            lvl = LEVELS[ev.get('level', 'info')]
            msg = str(ev.get('msg', ''))
            fields = dict((k, v) for k, v in ev.items() if k not in ('level', 'msg', 'time'))
        except (ValueError, AttributeError, KeyError):
            lvl, msg = INFO, line.decode('utf-8', 'replace')
        if lvl <= FATAL:
            # logrusutil.PropagateJSON: not fatal here; the clashing
            # "level" field comes out as "fields.level".
            fields = dict(fields or {}, **{'fields.level': ev.get('level')})
            lvl = ERROR
        log(lvl, '[hostagent] ' + msg, fields or None)


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
                if st.get('errors'):
                    log(ERROR, '[%s]' % ' '.join(str(e) for e in st['errors']))
                if st.get('exiting'):
                    _relay_ha_stderr(fe, ebuf)
                    raise Fatal('exiting, status=%s (hint: see %s)' % (go_status(st), gq(errp)))
                if st.get('running'):
                    _relay_ha_stderr(fe, ebuf)
                    if st.get('degraded'):
                        log(WARN, 'DEGRADED. The VM seems running, but file sharing and port forwarding '
                            'may not work. (hint: see %s)' % gq(errp))
                        raise Fatal('degraded, status=%s' % go_status(st))
                    return st
            _relay_ha_stderr(fe, ebuf)
            if rc is not None:
                raise Fatal('host agent process has exited: %s' % procs.exit_desc(rc))
            if time.monotonic() > deadline:
                raise Fatal('did not receive an event with the `running` status')
            time.sleep(0.002)
    finally:
        fo.close()
        fe.close()


def start_instance(inst, timeout, hang=False, die=False, launching_shell=False):
    import subprocess
    d = inst.dir
    name = inst.name
    if not os.path.exists(os.path.join(d, 'disk')):
        guestfs.prepare_disk(d, name)
    ha_pidfile = os.path.join(d, 'ha.pid')
    if os.path.exists(ha_pidfile):
        raise Fatal('instance %s seems running (hint: remove %s if the instance is not actually running)'
                    % (gq(name), gq(ha_pidfile)))
    procs.sweep_guest_procs(d)            # leftovers of an earlier, interrupted boot
    log(INFO, 'Starting the instance %s with internal VM driver %s' % (gq(name), gq(runtime.VM_TYPE)))
    out = os.open(os.path.join(d, 'ha.stdout.log'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    err = os.open(os.path.join(d, 'ha.stderr.log'), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    env = dict(os.environ)
    env['LIMA_HOME'] = runtime.lima_home()
    try:
        # close_fds=False on purpose: Go's os/exec hands every inheritable
        # descriptor down to the hostagent (and on to QEMU).
        proc = subprocess.Popen([runtime.SCRIPT, 'hostagent', '--pidfile', ha_pidfile,
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
            raise Fatal('hostagent (%s) did not start up in 5s (hint: see %s)'
                        % (gq(ha_pidfile), gq(os.path.join(d, 'ha.stderr.log'))))
        time.sleep(0.001)
    if die:
        faults.die_now()
    watch_events(d, proc, timeout)
    if hang:
        faults.hang_forever()
    if not launching_shell:
        log(INFO, ready_message(inst))
    show_message(inst)


def cmd_start(o, args):
    if len(args) > 1:
        raise ArgsError('start', 'accepts at most 1 arg(s), received %d' % len(args))
    if o.get('foreground'):
        raise Fatal('--foreground is not supported by the limactl simulator')
    if o.get('list-templates') or o.get('list-drivers'):
        return limayaml.list_templates_or_drivers(o)
    inst, created = create.load_or_create(o, args, 'start')
    if not created:
        log(INFO, 'Using the existing instance %s' % gq(inst.name))
        if any(k in o for k in limayaml.EDIT_FLAGS if k not in ('name', 'list-templates', 'list-drivers')):
            p = os.path.join(inst.dir, 'lima.yaml')
            with open(p, 'rb') as f:
                text = f.read().decode('utf-8', 'surrogateescape')
            new = limayaml.apply_edits(text, o, False)
            if new != text:
                limayaml.validate_config(new, p, guestfs.template_data(inst.name))
                fileio.write_file(p, new)
    if inst.errors:
        raise Fatal('errors inspecting instance: [%s]' % ' '.join(inst.errors))
    if inst.status == 'Running':
        log(INFO, 'The instance %s is already running. Run `%s` to open the shell.'
            % (gq(inst.name), shell_cmd(inst.name)))
        return 0
    if inst.status != 'Stopped':
        log(WARN, 'expected status %s, got %s' % (gq('Stopped'), gq(inst.status)))
    timeout = o.get('timeout') or DEFAULT_START_TIMEOUT
    start_instance(inst, timeout, hang=faults.FAULT.hang, die=faults.FAULT.die)
    return 0
