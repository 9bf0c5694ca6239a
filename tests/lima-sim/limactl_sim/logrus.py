"""A look-alike of the logrus logger limactl uses: text, terminal and JSON
formats, always on stderr, so that stdout carries data only."""

import os
import time

from .errors import GoErrors
from .quoting import go_json, json_str, logfmt, rfc3339
from . import fileio


START_TIME = time.time()
_NAMES = ['panic', 'fatal', 'error', 'warning', 'info', 'debug', 'trace']
_ABBR = ['PANI', 'FATA', 'ERRO', 'WARN', 'INFO', 'DEBU', 'TRAC']
LEVELS = {'panic': 0, 'fatal': 1, 'error': 2, 'warn': 3, 'warning': 3,
          'info': 4, 'debug': 5, 'trace': 6}
FATAL, ERROR, WARN, INFO, DEBUG = 1, 2, 3, 4, 5


class L:
    fmt = None        # 'json', 'text' or None (decided on first use)
    level = INFO


def _field_json(v):
    if isinstance(v, GoErrors):
        return go_json(v.json)
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, int):
        return str(v)
    if isinstance(v, (list, tuple)):
        return '[' + ','.join(_field_json(x) for x in v) + ']'
    return json_str(str(v))


def _field_text(v):
    if isinstance(v, GoErrors):
        v = v.text
    if isinstance(v, (list, tuple)):
        return logfmt('[' + ' '.join(str(x) for x in v) + ']')
    if isinstance(v, bool):
        return 'true' if v else 'false'
    return logfmt(str(v))


def log(lvl, msg, fields=None):
    if lvl > L.level:
        return
    now = time.time()
    fmt = L.fmt
    if fmt is None:
        fmt = L.fmt = 'tty' if isatty(2) else 'text'
    if fmt == 'json':
        items = {'level': _NAMES[lvl], 'msg': msg, 'time': rfc3339(now)}
        if fields:
            items.update(fields)
        line = '{' + ','.join('%s:%s' % (json_str(k), _field_json(items[k]))
                              for k in sorted(items)) + '}'
    elif fmt == 'tty':
        line = '%s[%04d] %s' % (_ABBR[lvl], int(now - START_TIME), msg)
        if fields:
            line = '%-44s ' % line + ' '.join(
                '%s=%s' % (k, _field_text(fields[k])) for k in sorted(fields))
    else:
        line = 'time=%s level=%s msg=%s' % (logfmt(rfc3339(now)), _NAMES[lvl], logfmt(msg))
        if fields:
            line += ''.join(' %s=%s' % (k, _field_text(fields[k])) for k in sorted(fields))
    try:
        fileio.write_all(2, (line + '\n').encode('utf-8', 'surrogateescape'))
    except OSError:
        pass


def isatty(fd):
    try:
        return os.isatty(fd)
    except OSError:
        return False
