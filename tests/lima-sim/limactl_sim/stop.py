"""stop (graceful and -f) and delete."""

import os
import time
import _signal as signal          # the C module: `signal` would pull in enum

from .errors import ArgsError, Fatal
from .quoting import go_quote, gq
from .logrus import INFO, WARN, log
from . import fileio, runtime, faults, procs, instances


def stop_forcibly(inst):
    d = inst.dir
    drv = procs.read_pid(os.path.join(d, runtime.VM_TYPE + '.pid'), 'drv')
    gpid = procs.read_pid(os.path.join(d, 'guest.pid'), 'guest')
    if drv:
        log(INFO, 'Sending SIGKILL to the %s driver process %d' % (runtime.VM_TYPE, drv))
        procs.kill9(drv)
    else:
        log(INFO, 'The %s driver process seems already stopped' % runtime.VM_TYPE)
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
    log(INFO, 'Removing *.pid *.sock *.tmp under %s' % go_quote(d))
    try:
        entries = os.listdir(d)
    except OSError:
        entries = []
    for e in sorted(entries):
        if e.endswith(('.pid', '.sock', '.tmp')):
            p = os.path.join(d, e)
            log(INFO, 'Removing %s' % go_quote(p))
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
    inst = instances.inspect(name)
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
                if b'"exiting":true' in f.read():
                    break
        except OSError:
            pass
        if not procs.pid_alive(inst.ha_pid, 'ha'):
            break
        time.sleep(0.002)
    else:
        raise Fatal('did not receive an event with the `exiting` status')
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if instances.inspect(name, http=False).status == 'Stopped':
            break
        time.sleep(0.002)
    else:
        raise Fatal('expected status %s, got %s' % (gq('Stopped'), gq(instances.inspect(name, http=False).status)))
    log(INFO, 'The instance %s has shut down' % gq(name))
    return 0


def cmd_delete(o, args):
    if not args:
        raise ArgsError('delete', 'requires at least 1 arg(s), only received 0')
    for name in args:
        d = instances.inst_dir(name)
        if not os.path.lexists(d):
            log(WARN, 'Ignoring non-existent instance %s' % gq(name))
            continue
        if not os.path.isfile(os.path.join(d, 'lima.yaml')):
            raise Fatal('instance %s directory %s exists but its %s could not be read; it was NOT '
                        'deleted, in case it is currently being cloned into. Remove the directory '
                        'manually if it is a leftover' % (gq(name), gq(d), gq('lima.yaml')))
        inst = instances.inspect(name)
        if os.path.exists(os.path.join(d, 'protected')):
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
    return 0
