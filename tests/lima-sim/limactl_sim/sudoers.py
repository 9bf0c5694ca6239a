"""The guest's sudo policy (root mode): the guest user's rules in the
guest's /etc/sudoers and /etc/sudoers.d (cloud-init's
90-cloud-init-users), and the user's password in the guest's
/etc/shadow, which Lima's boot sets when user.passwordlessSudo is false.
Everything is read from the guest's disk without following symlinks."""

import hashlib
import hmac
import os

from .quoting import gq
from . import guestfs


PASSWD_TRIES = 3                  # sudo's passwd_tries
HASH_PREFIX = '$sim-sha256$'      # /etc/shadow's hash: $sim-sha256$SALT$HEX (no crypt(3) here)
SUDOERS = 'etc/sudoers'
SUDOERS_D = 'etc/sudoers.d'
CLOUD_INIT_RULES = SUDOERS_D + '/90-cloud-init-users'


class Unsupported(Exception):
    """A sudoers rule naming the user that the simulator cannot read."""


def hash_password(pw, salt=None):
    salt = salt or os.urandom(8).hex()
    return HASH_PREFIX + salt + '$' + hashlib.sha256((salt + '\0' + pw).encode()).hexdigest()


def _shadow_field(d, user):
    data = guestfs.read_guest_file(d, 'etc/shadow') or b''
    for line in data.decode('utf-8', 'replace').splitlines():
        f = line.split(':')
        if len(f) > 1 and f[0] == user:
            return f[1]
    return ''


def password_ok(d, user, pw):
    """Whether PW is USER's password.  A locked ('!…', '*') or empty field
    accepts nothing, as pam_unix does for sudo."""
    field = _shadow_field(d, user)
    if not field.startswith(HASH_PREFIX):
        return False
    salt, _, want = field[len(HASH_PREFIX):].partition('$')
    return hmac.compare_digest(hash_password(pw, salt), field) and bool(want)


def _groups(d, user, gid):
    out = set()
    data = guestfs.read_guest_file(d, 'etc/group') or b''
    for line in data.decode('utf-8', 'replace').splitlines():
        f = line.split(':')
        if len(f) >= 4 and (f[2] == str(gid) or user in f[3].split(',')):
            out.add(f[0])
    return out


def _strip_comment(line):
    """LINE without its comment ('#' not followed by a digit: #UID is a user)."""
    for i, c in enumerate(line):
        if c == '#' and not line[i + 1:i + 2].isdigit():
            return line[:i]
    return line


def _tag(rest, line, where):
    """NOPASSWD or PASSWD for the `ALL=(ALL) [TAG:] ALL` part of a rule; the
    subset of sudoers(5) that cloud-init and agent-laned's tests write."""
    hosts, eq, spec = rest.partition('=')
    spec = spec.strip()
    if not eq or hosts.strip() != 'ALL' or not spec.startswith('('):
        raise Unsupported('%s in %s' % (gq(line), where))
    runas, _, cmd = spec[1:].partition(')')
    if runas.replace(' ', '') not in ('ALL', 'ALL:ALL'):
        raise Unsupported('%s in %s' % (gq(line), where))
    tag = 'PASSWD'
    cmd = cmd.strip()
    while cmd.startswith(('NOPASSWD:', 'PASSWD:')):
        tag, _, cmd = cmd.partition(':')
        cmd = cmd.strip()
    if cmd != 'ALL':
        raise Unsupported('%s in %s' % (gq(line), where))
    return tag


def _rules_of(text, where, names):
    """The tags of TEXT's rules whose user list meets NAMES, in order."""
    out = []
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(('#include', '@include')):
            if line.split()[1:] != ['/etc/sudoers.d'] or 'includedir' not in line.split()[0]:
                raise Unsupported('%s in %s' % (gq(line), where))
            continue
        line = _strip_comment(line).strip()
        if not line or line.startswith('Defaults'):
            continue
        if line.endswith('\\') or line.split()[0].endswith('_Alias'):
            raise Unsupported('%s in %s' % (gq(line), where))
        who, _, rest = line.partition(' ')
        if not names.intersection(w.strip() for w in who.split(',')):
            continue
        out.append(_tag(rest, line, where))
    return out


def rule_for(d, user, uid, gid):
    """The guest user's sudo rule: 'NOPASSWD', 'PASSWD', or None when no
    rule names the user (sudo then says "not in the sudoers file").  The
    last matching rule wins, as in sudo.  /etc/sudoers.d is read whether
    or not /etc/sudoers includes it (the simulator's guests have no
    /etc/sudoers): its files, but those whose name has a dot or ends in ~."""
    names = {user, 'ALL', '#%d' % uid} | {'%' + g for g in _groups(d, user, gid)}
    tags = []
    data = guestfs.read_guest_file(d, SUDOERS)
    if data is not None:
        tags += _rules_of(data.decode('utf-8', 'replace'), '/' + SUDOERS, names)
    for e in guestfs.list_guest_dir(d, SUDOERS_D) or []:
        if '.' in e or e.endswith('~'):
            continue
        data = guestfs.read_guest_file(d, SUDOERS_D + '/' + e)
        if data is not None:
            tags += _rules_of(data.decode('utf-8', 'replace'), '/%s/%s' % (SUDOERS_D, e), names)
    return tags[-1] if tags else None
