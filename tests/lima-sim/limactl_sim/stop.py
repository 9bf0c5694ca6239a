"""stop (graceful and -f) and delete."""

import os
import time
import _signal as signal          # the C module: `signal` would pull in enum

from .errors import ArgsError, Fatal
from .quoting import gq
from .logrus import ERROR, INFO, WARN, log
from . import fileio, runtime, faults, procs, instances


def stop_forcibly(inst):
    """Lima's StopForcibly.  Unlike Lima, which knows no pids when lima.yaml
    does not load (and so kills nothing), the simulator always reads the
    pid files: a test's guest never outlives its directory."""
    d = inst.dir
    drv = procs.read_pid(os.path.join(d, runtime.VM_TYPE + '.pid'), 'drv')
    gpid = procs.read_pid(os.path.join(d, 'guest.pid'), 'guest')
    if drv:
        log(INFO, 'Sending SIGKILL to the %s driver process %d' % (inst.vm_type, drv))
        procs.kill9(drv)
    else:
        log(INFO, 'The %s driver process seems already stopped' % inst.vm_type)
    if gpid:
        procs.kill9(gpid)
    ha = procs.read_pid(os.path.join(d, 'ha.pid'), 'ha')
    if ha:
        log(INFO, 'Sending SIGKILL to the host agent process %d' % ha)
        procs.kill9(ha)
    else:
        log(INFO, 'The host agent process seems already stopped')
    strays = procs.sweep_guest_procs(d)
    if not procs.wait_dead([drv, gpid, ha] + strays, 10):
        log(WARN, 'some processes of instance %s did not die in 10s' % gq(inst.name))
    if faults.FAULT.die and faults.FAULT.sub == 'stop':
        faults.die_now()
    log(INFO, 'Removing *.pid *.sock *.tmp under %s' % gq(d))
    try:
        entries = os.listdir(d)
    except OSError:
        entries = []
    for e in sorted(entries):
        if e.endswith(('.pid', '.sock', '.tmp')):
            p = os.path.join(d, e)
            log(INFO, 'Removing %s' % gq(p))
            try:
                os.unlink(p)
            except IsADirectoryError:
                fileio.rmtree_safe(p)
            except OSError:
                pass


def cmd_stop(o, args):
    if len(args) > 1:
        raise ArgsError('stop', 'accepts at most 1 arg(s), received %d' % len(args))
    name = args[0] if args else 'default'
    inst = instances.inspect(name, full=True)
    if o.get('force'):
        stop_forcibly(inst)
        return 0
    if inst.status != 'Running':
        raise Fatal('expected status %s, got %s (maybe use `limactl stop -f`?)'
                    % (gq('Running'), gq(inst.status)))
    log(INFO, 'Sending SIGINT to hostagent process %d' % inst.ha_pid)
    try:
        os.kill(inst.ha_pid, signal.SIGINT)
    except OSError as e:
        raise Fatal('failed to send SIGINT to the host agent: %s' % e)
    if faults.FAULT.die:
        faults.die_now()
    log(INFO, 'Waiting for the host agent and the driver processes to shut down')
    outp = os.path.join(inst.dir, 'ha.stdout.log')
    deadline = time.monotonic() + 190
    while time.monotonic() < deadline:
        try:
            with open(outp, 'rb') as f:
                events = f.read()
        except OSError:
            events = b''
        if b'"exiting":true' in events:
            log_event_errors(events)
            break
        if not procs.pid_alive(inst.ha_pid, 'ha'):
            break
        time.sleep(0.002)
    else:
        raise Fatal('did not receive an event with the `exiting` status')
    log(INFO, 'Waiting for the instance to shut down')
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if instances.inspect(name, http=False).status == 'Stopped':
            break
        time.sleep(0.002)
    else:
        raise Fatal('timed out waiting for instance to shut down after 3 minutes')
    log(INFO, 'The instance %s has shut down' % name)
    return 0


def log_event_errors(events):
    """Lima logs the errors of every hostagent event it watches."""
    import json
    for line in events.splitlines():
        try:
            errs = json.loads(line).get('status', {}).get('errors')
        except (ValueError, AttributeError):
            continue
        if errs:
            log(ERROR, '[%s]' % ' '.join(str(e) for e in errs))


def cmd_delete(o, args):
    """Lima's deleteAction: a directory without lima.yaml is kept and
    reported, and the other names are still deleted; those reports end the
    command together.  Any other failure ends it at once."""
    if not args:
        raise ArgsError('delete', 'requires at least 1 arg(s), only received 0')
    errs = []
    for name in args:
        d = instances.inst_dir(name)
        if not os.path.lexists(d):
            log(WARN, 'Ignoring non-existent instance %s' % gq(name))
            continue
        if not os.path.isfile(os.path.join(d, 'lima.yaml')):
            errs.append('instance %s directory %s exists but its %s could not be read; it was NOT '
                        'deleted, in case it is currently being cloned into. If no `limactl` '
                        'operation is using it, remove it manually' % (gq(name), gq(d), gq('lima.yaml')))
            continue
        inst = instances.inspect(name, full=True)
        if inst.protected:
            raise Fatal('failed to delete instance %s: instance is protected to prohibit accidental '
                        'removal (Hint: use `limactl unprotect`)' % gq(name))
        if not o.get('force') and inst.status != 'Stopped':
            raise Fatal('failed to delete instance %s: expected status %s, got %s'
                        % (gq(name), gq('Stopped'), gq(inst.status)))
        stop_forcibly(inst)
        if faults.FAULT.die:
            faults.die_now()
        fileio.rmtree_safe(d)
        log(INFO, 'Deleted %s (%s)' % (gq(name), gq(d)))
    if errs:
        raise Fatal('\n'.join(errs))
    return 0
