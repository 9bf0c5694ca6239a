"""Go, logrus and shellescape look-alikes: the quoting and time formats
limactl's output uses, so that messages match Lima's byte for byte."""

import time


ALNUM = frozenset('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789')
SH_SAFE = ALNUM | frozenset('_@%+=:,./-')
LOGFMT_SAFE = ALNUM | frozenset('-._/@^+')


def go_quote(s):
    """Go strconv.Quote."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"' or ch == '\\':
            out.append('\\' + ch)
        elif 0xdc80 <= o <= 0xdcff:          # undecodable byte (surrogateescape)
            out.append('\\x%02x' % (o - 0xdc00))
        elif ch == ' ' or (o >= 0x20 and ch.isprintable()):
            out.append(ch)
        elif ch in '\a\b\f\n\r\t\v':
            out.append({'\a': '\\a', '\b': '\\b', '\f': '\\f', '\n': '\\n',
                        '\r': '\\r', '\t': '\\t', '\v': '\\v'}[ch])
        elif o < 0x80:
            out.append('\\x%02x' % o)
        elif o < 0x10000:
            out.append('\\u%04x' % o)
        else:
            out.append('\\U%08x' % o)
    out.append('"')
    return ''.join(out)


def gq(s):
    """Go's %#q verb: a raw `string` when possible, else strconv.Quote."""
    s = str(s)
    for ch in s:
        o = ord(ch)
        if ch == '`' or ch == '\ufeff' or o == 0x7f or (o < 0x20 and ch != '\t') \
                or 0xd800 <= o < 0xe000:
            return go_quote(s)
    return '`' + s + '`'


def json_str(s):
    """A JSON string the way Go's encoding/json writes it (HTML-safe)."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == '\\':
            out.append('\\\\')
        elif ch == '\n':
            out.append('\\n')
        elif ch == '\r':
            out.append('\\r')
        elif ch == '\t':
            out.append('\\t')
        elif o < 0x20 or ch in '<>&\u2028\u2029':
            out.append('\\u%04x' % o)
        elif 0xd800 <= o < 0xe000:
            out.append('\ufffd')
        else:
            out.append(ch)
    out.append('"')
    return ''.join(out)


def go_json(obj):
    """Compact JSON with Go's HTML escaping."""
    import json
    s = json.dumps(obj, ensure_ascii=False, separators=(',', ':'), default=str)
    return (s.replace('<', '\\u003c').replace('>', '\\u003e').replace('&', '\\u0026')
            .replace('\u2028', '\\u2028').replace('\u2029', '\\u2029'))


def logfmt(s):
    """logrus text formatter: quote only when needed."""
    for ch in s:
        if ch not in LOGFMT_SAFE:
            return go_quote(s)
    return s


def sh_quote(s):
    """al.essio.dev/pkg/shellescape.Quote."""
    if s == '':
        return "''"
    for ch in s:
        if ch not in SH_SAFE:
            return "'" + s.replace("'", "'\"'\"'") + "'"
    return s


def rfc3339(t=None, nano=False):
    if t is None:
        t = time.time()
    lt = time.localtime(t)
    s = time.strftime('%Y-%m-%dT%H:%M:%S', lt)
    if nano:
        frac = ('%.9f' % (t - int(t)))[1:].rstrip('0')
        if frac != '.':
            s += frac
    off = lt.tm_gmtoff or 0
    if off == 0:
        return s + 'Z'
    sign = '+' if off > 0 else '-'
    off = abs(off)
    return '%s%s%02d:%02d' % (s, sign, off // 3600, off % 3600 // 60)
