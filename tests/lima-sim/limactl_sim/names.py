"""Instance names: Lima's identifier rule and the guest hostname derived
from a name."""

from .errors import Fatal
from .quoting import ALNUM, gq


def ident_ok(s):
    # ^[A-Za-z0-9]+(?:[._-](?:[A-Za-z0-9]+))*$ without importing re
    after_sep = True
    for ch in s:
        if ch in ALNUM:
            after_sep = False
        elif ch in '._-' and not after_sep:
            after_sep = True
        else:
            return False
    return not after_sep


def name_error(name):
    if name == '':
        err = 'identifier must not be empty'
    elif len(name.encode('utf-8', 'surrogateescape')) > 76:
        err = 'identifier %s greater than maximum length (76 characters)' % gq(name)
    elif not ident_ok(name):
        err = 'identifier %s must match ^[A-Za-z0-9]+(?:[._-](?:[A-Za-z0-9]+))*$' % gq(name)
    else:
        low = name.lower()
        if low.endswith('.yml') or low.endswith('.yaml'):
            return 'instance name %s must not end with .yml or .yaml suffix' % gq(name)
        return None
    return 'instance name %s is not a valid identifier: %s' % (gq(name), err)


def validate_name(name):
    err = name_error(name)
    if err:
        raise Fatal(err)


def hostname_of(name):
    return 'lima-' + name.replace('.', '-').replace('_', '-')
