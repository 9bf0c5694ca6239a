"""Entering the guest from the host: the nsenter + setpriv command lines
for the guest user and for guest root, and the clean environment a
guest session starts with."""

import os

from . import guestfs, procs


GUEST_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
NSENTER = '/usr/bin/nsenter'
SETPRIV = '/usr/bin/setpriv'

# Guest root (provision scripts, sudo): uid 0 inside the sandbox with only
# the file-ownership capabilities a root shell needs for installing files.
# No mknod, no sys_admin: with those a guest could reach host devices.
ROOT_CAPS = ('chown', 'dac_override', 'dac_read_search', 'fowner', 'fsetid', 'kill',
             'setgid', 'setuid', 'net_bind_service')


def guest_root_argv(gpid, argv):
    """nsenter into the guest as its root: uid 0 with ROOT_CAPS only."""
    return ([NSENTER, '-t', str(gpid), '-m', '-u', '-i', '-n', '-p', '-r', '-w', '--', SETPRIV,
             '--reuid=0', '--regid=0', '--clear-groups', '--inh-caps=-all',
             '--bounding-set=-all,' + ','.join('+' + c for c in ROOT_CAPS),
             '--no-new-privs', '--'] + argv)


def guest_env():
    user = guestfs.guest_user()[0]
    return {'HOME': guestfs.guest_home(), 'USER': user, 'LOGNAME': user, 'SHELL': '/bin/bash',
            'PATH': GUEST_PATH, 'LANG': 'C.UTF-8'}


def guest_argv(gpid, argv):
    """nsenter into the guest's namespaces as the guest user."""
    user, uid, gid = guestfs.guest_user()
    root = os.geteuid() == 0
    out = [NSENTER, '-t', str(gpid)]
    if not root:
        out += ['-U', '--preserve-credentials']
    out += ['-m', '-u', '-i', '-n', '-p', '-r', '-w']
    if os.path.exists(SETPRIV):
        out += ['--', SETPRIV]
        if root:
            out += ['--reuid=%d' % uid, '--regid=%d' % gid, '--clear-groups',
                    '--inh-caps=-all', '--bounding-set=-all']
        out += ['--no-new-privs', '--'] + argv
    else:
        if root:
            out += ['-S', str(uid), '-G', str(gid)]
        out += ['--'] + argv
    return out


def spawn_guest(gpid, argv, fd0, fd1, fd2):
    """Fork the guest-side process in its own session with the given stdio
    (spawn_with also gives it umask 022, as sshd gives its sessions)."""
    return procs.spawn_with(guest_argv(gpid, argv), guest_env(), (fd0, fd1, fd2))
