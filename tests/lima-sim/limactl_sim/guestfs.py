"""The guest's disk: its user, its persistent root filesystem
($LIMA_HOME/NAME/guestfs), the per-instance writable /usr layer and the
simulated image download."""

import os
import time

from .errors import Fatal
from .quoting import gq
from .logrus import INFO, log
from . import fileio, names, yamlio, limayaml, gotemplate


UNSHARE = '/usr/bin/unshare'
GUEST_SUDO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'guest-sudo')
_GUSER = None


def guest_user():
    """(name, uid, gid): `lane`/1000 when running as root, else the host user."""
    global _GUSER
    if _GUSER is None:
        uid = os.geteuid()
        if uid == 0:
            _GUSER = ('lane', 1000, 1000)
        else:
            try:
                import pwd
                name = pwd.getpwuid(uid).pw_name
            except (ImportError, KeyError):
                name = os.environ.get('USER') or 'user'
            if not name or not names.ident_ok(name.replace('_', '-')):
                name = 'user'
            _GUSER = (name, uid, os.getegid())
    return _GUSER


def guest_home():
    """Lima 2.1+'s default `user.home`, /home/{{.User}}.guest."""
    return '/home/%s.guest' % guest_user()[0]


def template_data(name):
    """What Lima's guest templates ({{.User}} in a provision script) see."""
    user, uid, _ = guest_user()
    return gotemplate.guest_data(name, names.hostname_of(name), uid, user, guest_home())


SHADOW_DAY = 20000                # /etc/shadow's "last change" field (days since 1970)
MERGED_DIRS = ('bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32')
GUEST_PROFILE = """\
# /etc/profile of a limactl-simulator guest (read by login shells).
umask 022
if [ -d /etc/profile.d ]; then
  for i in /etc/profile.d/*.sh; do
    if [ -r "$i" ]; then . "$i"; fi
  done
  unset i
fi
"""


def build_guestfs(root, name):
    """Create (or complete) the persistent root filesystem of the guest.

    Its modes belong to the guest's disk, not to the host process that
    runs limactl: agent-laned runs limactl under umask 077."""
    old = os.umask(0o022)
    try:
        _build_guestfs(root, name)
    finally:
        os.umask(old)


def _build_guestfs(root, name):
    user, uid, gid = guest_user()
    home = guest_home()
    os.makedirs(root, 0o755, exist_ok=True)
    os.chmod(root, 0o755)
    for d, mode in (('etc', 0o755), ('etc/profile.d', 0o755), ('home', 0o755),
                    ('root', 0o700), ('tmp', 0o1777), ('var', 0o755),
                    ('var/tmp', 0o1777), ('var/log', 0o755), ('var/lib', 0o755),
                    ('var/cache', 0o755), ('opt', 0o755), ('mnt', 0o755),
                    ('srv', 0o755), ('media', 0o755), ('run', 0o755), ('usr', 0o755),
                    ('proc', 0o555), ('dev', 0o755)):
        p = os.path.join(root, d)
        if not os.path.isdir(p):
            os.mkdir(p)
            os.chmod(p, mode)
    for d in MERGED_DIRS:
        host = '/' + d
        p = os.path.join(root, d)
        if os.path.lexists(p):
            continue
        if os.path.islink(host):
            os.symlink(os.readlink(host), p)
        elif os.path.isdir(host):
            os.mkdir(p)          # mount point for a read-only bind
    hp = root + home
    if not os.path.isdir(hp):
        os.mkdir(hp)
        os.chmod(hp, 0o755)
        if os.geteuid() == 0:
            os.chown(hp, uid, gid)
    etc = os.path.join(root, 'etc')
    hn = names.hostname_of(name)
    files = {
        'passwd': 'root:x:0:0:root:/root:/bin/bash\n'
                  + ('' if uid == 65534 else 'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n')
                  + '%s:x:%d:%d:%s:%s:/bin/bash\n' % (user, uid, gid, user, home),
        'group': 'root:x:0:\nnogroup:x:65534:\n%s:x:%d:\n' % (user, gid),
        'hostname': hn + '\n',
        'hosts': '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' % hn,
        'profile': GUEST_PROFILE,
        'shells': '/bin/sh\n/bin/bash\n/usr/bin/sh\n/usr/bin/bash\n',
        'nsswitch.conf': 'passwd: files\ngroup: files\nshadow: files\nhosts: files\n',
        'resolv.conf': '# no network in the limactl simulator\n',
    }
    if gid in (0, 65534):
        files['group'] = 'root:x:0:\nnogroup:x:65534:\n'
    for fname, content in files.items():
        p = os.path.join(etc, fname)
        if not os.path.exists(p):
            fileio.write_file(p, content)
    p = os.path.join(etc, 'shadow')
    if not os.path.exists(p):
        # The user's password is locked ('!') until Lima's boot sets one
        # (user.passwordlessSudo: false; see guestroot).
        fileio.write_file(p, 'root:*:%d:0:99999:7:::\n%s:!:%d:0:99999:7:::\n'
                          % (SHADOW_DAY, user, SHADOW_DAY), 0o600)
    for link, target in (('os-release', '../usr/lib/os-release'),
                         ('mtab', '../proc/self/mounts'),
                         ('localtime', '/usr/share/zoneinfo/Etc/UTC')):
        p = os.path.join(etc, link)
        if not os.path.lexists(p):
            os.symlink(target, p)
    p = os.path.join(etc, 'ld.so.cache')
    if not os.path.exists(p) and os.path.isfile('/etc/ld.so.cache'):
        with open('/etc/ld.so.cache', 'rb') as f:
            fileio.write_file(p, f.read())
    alt = os.path.join(etc, 'alternatives')     # mount point: the host's is bound read-only
    if not os.path.isdir(alt):
        os.mkdir(alt)


def _guest_fd(d, rel, directory):
    """A descriptor of REL in instance D's guest root filesystem, or None
    when it is missing.  Every component is opened with O_NOFOLLOW from the
    root: guest root owns these files and may have made any of them a
    symlink, which must never lead the host's root elsewhere."""
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW
    try:
        fd = os.open(os.path.join(d, 'guestfs'), flags | os.O_DIRECTORY)
    except OSError:
        return None
    parts = [x for x in rel.split('/') if x]
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            nfd = os.open(part, flags | (os.O_DIRECTORY if not last or directory else os.O_NONBLOCK),
                          dir_fd=fd)
            os.close(fd)
            fd = nfd
    except OSError:
        os.close(fd)
        return None
    return fd


def read_guest_file(d, rel, limit=1 << 20):
    """The bytes of the regular file REL of the guest (at most LIMIT), or
    None when it is missing, not a regular file, or reached by a symlink."""
    import stat as S
    fd = _guest_fd(d, rel, False)
    if fd is None:
        return None
    try:
        if not S.S_ISREG(os.fstat(fd).st_mode):
            return None
        out = b''
        while len(out) < limit:
            chunk = os.read(fd, limit - len(out))
            if not chunk:
                break
            out += chunk
        return out
    finally:
        os.close(fd)


def list_guest_dir(d, rel):
    """The entries of the guest's directory REL, or None."""
    fd = _guest_fd(d, rel, True)
    if fd is None:
        return None
    try:
        return sorted(os.listdir(fd))
    finally:
        os.close(fd)


def image_location(d):
    """The image Lima would fetch for instance D: the first `images:` entry
    for the host's arch (an entry without arch is for the host's).  With no
    entry (a test fixture's instance) it is the Ubuntu image of Lima's
    templates."""
    arch = limayaml.host_arch()
    try:
        with open(os.path.join(d, 'lima.yaml'), 'rb') as f:
            cfg = yamlio.parse_yaml(f.read().decode('utf-8', 'surrogateescape'))
    except (OSError, Fatal):
        cfg = {}
    for img in cfg.get('images') or []:
        if isinstance(img, dict) and isinstance(img.get('location'), str) and \
                img.get('arch', arch) in (arch, None, '', 'default'):
            return img['location'], img.get('digest') or ''
    return ('https://cloud-images.ubuntu.com/releases/noble/release/ubuntu-24.04-server-cloudimg-%s.img'
            % ('arm64' if arch == 'aarch64' else 'amd64')), ''


def download_image(d):
    """Lima's fileutils.DownloadFile of the image (pkg/fileutils/download.go):
    "Attempting to download the image" with its location, arch and digest,
    then for a URL "Using cache ..." (the default here: a cached image), or
    after LIMA_SIM_DOWNLOAD_MS of a first, uncached download "Downloaded the
    image from ..."; a local file is always "Downloaded".  No byte is
    fetched; only the messages and the time."""
    arch = limayaml.host_arch()
    loc, digest = image_location(d)
    log(INFO, 'Attempting to download the image', {'arch': arch, 'digest': digest, 'location': loc})
    try:
        ms = max(0, int(os.environ.get('LIMA_SIM_DOWNLOAD_MS') or 0))
    except ValueError:
        ms = 0
    if ms > 0:
        time.sleep(ms / 1000.0)
    if ms > 0 or '://' not in loc or loc.startswith('file://'):
        log(INFO, 'Downloaded the image from %s' % gq(loc))
    else:
        import hashlib
        cache = os.path.join(os.environ.get('XDG_CACHE_HOME') or
                             os.path.join(os.path.expanduser('~'), '.cache'),
                             'lima', 'download', 'by-url-sha256',
                             hashlib.sha256(loc.encode()).hexdigest(), 'data')
        log(INFO, 'Using cache %s' % gq(cache))


def prepare_disk(d, name):
    download_image(d)
    build_guestfs(os.path.join(d, 'guestfs'), name)
    fileio.write_file(os.path.join(d, 'disk'),
                      'limactl-simulator disk placeholder; the guest filesystem is %s/guestfs\n' % d)


def writable_usr():
    """A writable per-instance /usr (and with it guest root and sudo) needs
    overlayfs, which the simulator mounts only when it runs as root (CI)."""
    return os.geteuid() == 0 and os.path.exists(UNSHARE)


def overlay_options(d):
    u = os.path.join(d, 'usrfs')
    paths = [os.path.join(u, 'layer'), '/usr', os.path.join(u, 'upper'), os.path.join(u, 'work')]
    for p in paths:
        if any(c in p for c in ',:\\\n'):
            raise Fatal('the limactl simulator cannot mount an overlay on %s (a comma, colon or '
                        'backslash in LIMA_HOME)' % gq(p))
    return 'lowerdir=%s:%s,upperdir=%s,workdir=%s' % tuple(paths)


def prepare_usrfs(d):
    """The instance's writable /usr: an overlay whose upper layer lives in
    the instance directory (so it survives stop/start and `clone` copies
    it, like a VM disk).  The lowest layers are the host's /usr and a tiny
    layer with the guest's `sudo`, refreshed at each start."""
    u = os.path.join(d, 'usrfs')
    # Explicit modes: a directory of a layer gives the merged /usr (and
    # /usr/bin) its mode, and agent-laned runs limactl under umask 077.
    for sub in ('', 'upper', 'work', 'merged', 'layer', 'layer/bin'):
        p = os.path.join(u, sub)
        if not os.path.isdir(p):
            os.mkdir(p)
        os.chmod(p, 0o755 if sub != 'work' else 0o700)
    with open(GUEST_SUDO, 'rb') as f:
        fileio.write_file(os.path.join(u, 'layer', 'bin', 'sudo'), f.read(), 0o755)
    run = os.path.join(d, 'simrun')
    if not os.path.isdir(run):
        os.mkdir(run, 0o755)
    os.chmod(run, 0o755)
