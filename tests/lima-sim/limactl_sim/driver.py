"""The driver (what QEMU is to Lima): the bubblewrap sandbox of one guest
and the shell that plays the QEMU process (qemu.pid)."""

import os

from .quoting import sh_quote
from . import names, guestfs, procs, enter


BOOT_MARKER = '/run/lima-boot-done'


def guest_bwrap_args(d, name, info_fd):
    """bwrap options; they travel through --args so the guest's /proc/1/cmdline
    does not reveal host paths."""
    args = ['--info-fd', str(info_fd),
            '--bind', os.path.join(d, 'guestfs'), '/']
    if guestfs.writable_usr():
        # The driver shim mounted the per-instance overlay (host /usr below,
        # the instance's own upper layer above) in its mount namespace.
        args += ['--bind', os.path.join(d, 'usrfs', 'merged'), '/usr']
    else:
        args += ['--ro-bind', '/usr', '/usr']
    for m in guestfs.MERGED_DIRS:
        if not os.path.islink('/' + m) and os.path.isdir('/' + m):
            args += ['--ro-bind', '/' + m, '/' + m]
    # the /usr/bin/awk -> /etc/alternatives/awk -> /usr/bin/mawk kind of links
    args += ['--ro-bind-try', '/etc/alternatives', '/etc/alternatives']
    args += ['--proc', '/proc']
    if os.geteuid() == 0:
        args += ['--dev', '/dev']
    else:
        # Unprivileged, `--dev` (devpts) makes bwrap nest a second user
        # namespace that nsenter could not join; build /dev from binds.
        args += ['--unshare-user', '--tmpfs', '/dev']
        for dev in ('null', 'zero', 'full', 'random', 'urandom', 'tty'):
            args += ['--dev-bind', '/dev/' + dev, '/dev/' + dev]
        args += ['--symlink', '/proc/self/fd', '/dev/fd', '--tmpfs', '/dev/shm']
        for i, std in enumerate(('stdin', 'stdout', 'stderr')):
            args += ['--symlink', '/proc/self/fd/%d' % i, '/dev/' + std]
    args += ['--tmpfs', '/run']
    if guestfs.writable_usr():
        args += ['--bind', os.path.join(d, 'simrun'), '/run/lima-sim']
    args += ['--unshare-pid', '--unshare-net', '--unshare-ipc', '--unshare-uts',
             '--unshare-cgroup-try', '--hostname', names.hostname_of(name),
             '--die-with-parent', '--new-session', '--chdir', guestfs.guest_home()]
    return args


GUEST_INIT = ['/bin/sh', '-c', ': > %s && exec sleep infinity' % BOOT_MARKER]


def driver_shim(private_fds, d=None):
    """The command line of the driver process (qemu.pid), which stands in
    for QEMU: a shell that keeps every descriptor it inherited, as QEMU
    would, and waits for bwrap (bwrap's own processes close inherited
    descriptors, so they could not play that part).  It runs bwrap in the
    background so that it can drop the pipes only bwrap needs before
    waiting.  When the hostagent dies it gets SIGTERM (setpriv --pdeathsig)
    and SIGKILLs its process group: the hostagent's group, where a bwrap
    child that is still setting up the sandbox (and has not armed its own
    parent-death signal yet) also lives.  A fully started sandbox dies
    through bwrap's --die-with-parent.  The $PPID test covers a hostagent
    that died before the parent-death signal was armed."""
    closes = ''.join(' %d<&-' % fd for fd in private_fds)
    mount = ''
    if d is not None and guestfs.writable_usr():
        mount = ('mount -t overlay lima-sim-usr -o %s %s || exit 1; '
                 % (sh_quote(guestfs.overlay_options(d)), sh_quote(os.path.join(d, 'usrfs', 'merged'))))
    script = ('trap "kill -KILL 0" TERM; [ "$PPID" = %d ] || exit 1; %s'
              '"$@" & exec%s; wait $!' % (os.getpid(), mount, closes))
    shim = ['/bin/sh', '-c', script, procs.DRIVER_MARK]
    if mount:
        # unshare execs (no fork): the shell keeps the pid written to qemu.pid
        shim = [guestfs.UNSHARE, '--mount', '--propagation', 'private', '--'] + shim
    if os.path.exists(enter.SETPRIV):
        shim = [enter.SETPRIV, '--pdeathsig', 'TERM', '--'] + shim
    return shim
