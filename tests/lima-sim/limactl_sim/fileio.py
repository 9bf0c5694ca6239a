"""Small file and descriptor helpers: full writes, files with explicit
modes, a tree removal that never crosses a mount, and PATH look-ups."""

import os

from .errors import Fatal
from .quoting import gq


def write_all(fd, data):
    mv = memoryview(data)
    while mv:
        try:
            n = os.write(fd, mv)
        except BlockingIOError:
            import select
            select.select([], [fd], [], 1.0)
            continue
        mv = mv[n:]


def write_file(path, data, mode=0o644):
    if isinstance(data, str):
        data = data.encode('utf-8', 'surrogateescape')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, mode)
    try:
        write_all(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, mode)


def rmtree_safe(path):
    """Remove PATH without following symlinks or entering other mounts."""
    try:
        top = os.lstat(path)
    except FileNotFoundError:
        return
    import stat as S
    if not S.S_ISDIR(top.st_mode):
        os.unlink(path)
        return
    dev = top.st_dev
    stack = [(path, False)]
    while stack:
        p, scanned = stack.pop()
        if scanned:
            os.rmdir(p)
            continue
        try:
            entries = list(os.scandir(p))
        except PermissionError:
            os.chmod(p, 0o700)
            entries = list(os.scandir(p))
        stack.append((p, True))
        for e in entries:
            st = e.stat(follow_symlinks=False)
            if S.S_ISDIR(st.st_mode):
                if st.st_dev != dev:
                    raise Fatal('refusing to remove %s: it is a mount point' % gq(e.path))
                if not os.access(e.path, os.W_OK | os.X_OK):
                    try:
                        os.chmod(e.path, 0o700)
                    except OSError:
                        pass
                stack.append((e.path, False))
            else:
                os.unlink(e.path)


def find_exe(name):
    for p in (os.environ.get('PATH') or '/usr/bin:/bin').split(':') + ['/usr/bin', '/bin']:
        c = os.path.join(p or '.', name)
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None
