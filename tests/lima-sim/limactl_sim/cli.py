"""The command line: global flags, pflag-style parsing, the command
table, dispatch, and main()."""

import os
import sys
import _signal as signal          # the C module: `signal` would pull in enum

from .errors import ArgsError, ExitCode, Fatal
from .quoting import go_quote, gq
from .logrus import DEBUG, FATAL, L, LEVELS, isatty, log
from . import fileio, runtime, faults, limayaml


GLOBAL_FLAGS = {'tty': 'bool', 'yes': 'bool', 'log-format': 'str', 'log-level': 'str',
                'debug': 'bool', 'help': 'bool'}
GLOBAL_SHORT = {'y': 'yes', 'h': 'help'}
START_FLAGS = dict(limayaml.EDIT_FLAGS, timeout='dur', foreground='bool', progress='bool')
# name: (flags, shorthands, flags after arguments?, usage, 'module.function').
# A command's module is imported only when it runs: each limactl call pays
# for the modules it uses.
COMMANDS = {
    'create': (limayaml.EDIT_FLAGS, {}, True, 'create FILE.yaml|URL', 'create.cmd_create'),
    'start': (START_FLAGS, {}, True, 'start NAME|FILE.yaml|URL', 'start.cmd_start'),
    'shell': ({'workdir': 'str', 'shell': 'str', 'start': 'bool', 'reconnect': 'bool',
               'preserve-env': 'bool', 'sync': 'str', 'instance': 'str'}, {}, False,
              'shell [flags] INSTANCE [COMMAND...]', 'shell.cmd_shell'),
    'stop': ({'force': 'bool'}, {'f': 'force'}, True, 'stop INSTANCE', 'stop.cmd_stop'),
    'delete': ({'force': 'bool'}, {'f': 'force'}, True, 'delete INSTANCE [INSTANCE, ...]', 'stop.cmd_delete'),
    'list': ({'format': 'str', 'json': 'bool', 'quiet': 'bool', 'all-fields': 'bool',
              'list-fields': 'bool', 'yq': 'list', 'filter': 'list'},
             {'f': 'format', 'q': 'quiet', 'l': 'filter'}, True, 'list [flags] [INSTANCE]...', 'listing.cmd_list'),
    'copy': ({'recursive': 'bool', 'verbose': 'bool', 'backend': 'str'},
             {'r': 'recursive', 'v': 'verbose'}, True, 'copy SOURCE ... TARGET', 'shell.cmd_copy'),
    'info': ({'yq': 'list'}, {}, True, 'info', 'listing.cmd_info'),
    'template': ({'embed': 'bool', 'embed-all': 'bool', 'fill': 'bool', 'verbatim': 'bool'}, {}, True,
                 'template', 'template.cmd_template'),
    'validate': ({'fill': 'bool'}, {}, True, 'validate TEMPLATE [TEMPLATE, ...]', 'template.cmd_validate'),
    'clone': (dict(((k, v) for k, v in limayaml.EDIT_FLAGS.items()
                    if k in ('cpus', 'memory', 'disk', 'set', 'mount-none', 'shell')),
                   start='bool', timeout='dur'),
              {}, True, 'clone OLDINST NEWINST', 'clone.cmd_clone'),
}
ALIASES = {'rm': 'delete', 'remove': 'delete', 'ls': 'list', 'cp': 'copy', 'tmpl': 'template'}
# Subcommands of a command (`template copy`): their cobra Use and Short.
SUB_USE = {'template copy': ('template copy [OPTIONS] TEMPLATE [DEST]', 'Copy template'),
           'template validate': ('template validate TEMPLATE [TEMPLATE, ...]', 'Validate YAML templates')}
BOOL_WORDS = {'1': True, 't': True, 'T': True, 'TRUE': True, 'true': True, 'True': True,
              '0': False, 'f': False, 'F': False, 'FALSE': False, 'false': False, 'False': False}


def command_fn(fn):
    """The function of a COMMANDS entry."""
    if callable(fn):
        return fn
    mod, _, name = fn.partition('.')
    return getattr(__import__(__package__ + '.' + mod, fromlist=[name]), name)


SHORT = {'create': 'Create an instance of Lima', 'start': 'Start an instance of Lima',
         'shell': 'Execute shell in Lima', 'stop': 'Stop an instance',
         'delete': 'Delete an instance of Lima', 'list': 'List instances of Lima',
         'copy': 'Copy files between host and guest', 'info': 'Show diagnostic information',
         'clone': 'Clone an instance of Lima', 'validate': 'Validate YAML templates',
         'template': 'Lima template management (EXPERIMENTAL)'}


def args_message(e):
    """Lima's WrapArgsError: the error, the help hint, cobra's UseLine (its
    Use plus " [flags]" unless Use names them) and the command's Short."""
    use, short = SUB_USE.get(e.cmd) or (COMMANDS[e.cmd][3], SHORT.get(e.cmd, ''))
    if '[flags]' not in use:
        use += ' [flags]'
    return ('`limactl %s` %s.\nSee `limactl %s --help`.\n\nUsage:  limactl %s\n\n%s'
            % (e.cmd, e.msg, e.cmd, use, short))


def parse_duration(s):
    """Go time.ParseDuration, in seconds."""
    units = {'ns': 1e-9, 'us': 1e-6, '\u00b5s': 1e-6, '\u03bcs': 1e-6, 'ms': 1e-3, 's': 1.0,
             'm': 60.0, 'h': 3600.0}
    orig = s
    neg = s.startswith('-')
    if s[:1] in '+-':
        s = s[1:]
    if s == '0':
        return 0.0
    if not s:
        raise ValueError(orig)
    total = 0.0
    while s:
        i = 0
        while i < len(s) and (s[i].isdigit() or s[i] == '.'):
            i += 1
        if i == 0 or s[:i] == '.':
            raise ValueError(orig)
        num = float(s[:i])
        s = s[i:]
        j = 0
        while j < len(s) and not (s[j].isdigit() or s[j] == '.'):
            j += 1
        unit = s[:j]
        s = s[j:]
        if unit not in units:
            raise ValueError(orig)
        total += num * units[unit]
    return -total if neg else total


def convert(typ, v, flag):
    try:
        if typ == 'bool':
            if v not in BOOL_WORDS:
                raise ValueError
            return BOOL_WORDS[v]
        if typ == 'int':
            return int(v, 0) if v.lower().startswith(('0x', '0o', '0b')) else int(v)
        if typ == 'float':
            return float(v)
        if typ == 'dur':
            return parse_duration(v)
        return v
    except ValueError:
        what = {'bool': 'strconv.ParseBool', 'int': 'strconv.ParseInt',
                'float': 'strconv.ParseFloat'}.get(typ)
        if typ == 'dur':
            raise Fatal('invalid argument %s for %s flag: time: invalid duration %s'
                        % (go_quote(v), go_quote(flag), go_quote(v)))
        raise Fatal('invalid argument %s for %s flag: %s: parsing %s: invalid syntax'
                    % (go_quote(v), go_quote(flag), what, go_quote(v)))


def parse_flags(args, spec, short, interspersed):
    opts = {}
    pos = []
    i = 0

    def store(name, val):
        if spec[name] != 'list':
            opts[name] = val
        elif name in ('mount', 'mount-only', 'network', 'dns'):     # pflag StringSlice
            opts.setdefault(name, []).extend(x for x in val.split(',') if x)
        else:                                                       # pflag StringArray
            opts.setdefault(name, []).append(val)

    while i < len(args):
        a = args[i]
        if a == '--':
            pos.extend(args[i + 1:])
            break
        if a.startswith('--'):
            name, eq, v = a[2:].partition('=')
            if name not in spec:
                raise Fatal('unknown flag: --%s' % name)
            typ = spec[name]
            if typ == 'bool':
                if eq:
                    val = convert('bool', v, '--' + name)
                elif name == 'tty' and i + 1 < len(args) and args[i + 1] in ('true', 'false'):
                    i += 1
                    val = args[i] == 'true'
                else:
                    val = True
            else:
                if not eq:
                    if i + 1 >= len(args):
                        raise Fatal('flag needs an argument: --%s' % name)
                    i += 1
                    v = args[i]
                val = convert(typ, v, '--' + name)
            store(name, val)
        elif a.startswith('-') and len(a) > 1:
            j = 1
            while j < len(a):
                c = a[j]
                name = short.get(c)
                if name is None:
                    raise Fatal("unknown shorthand flag: '%s' in %s" % (c, a))
                typ = spec[name]
                if typ == 'bool':
                    if a[j + 1:j + 2] == '=':
                        store(name, convert('bool', a[j + 2:], '-' + c))
                        break
                    store(name, True)
                    j += 1
                    continue
                if j + 1 < len(a):
                    v = a[j + 1:]
                    if v.startswith('='):
                        v = v[1:]
                else:
                    if i + 1 >= len(args):
                        raise Fatal("flag needs an argument: '%s' in -%s" % (c, c))
                    i += 1
                    v = args[i]
                store(name, convert(typ, v, '-' + c))
                break
        else:
            if not interspersed:
                pos.extend(args[i:])
                break
            pos.append(a)
        i += 1
    return opts, pos


def find_subcommand(argv):
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == '--' or a == '-' or not a.startswith('-'):
            return i
        if a.startswith('--'):
            name, eq, _ = a[2:].partition('=')
            if not eq:
                typ = GLOBAL_FLAGS.get(name) or ('bool' if name == 'version' else None)
                if typ == 'bool':
                    if name == 'tty' and i + 1 < len(argv) and argv[i + 1] in ('true', 'false'):
                        i += 1
                else:
                    i += 1
        elif len(a) == 2 and a[1] not in ('y', 'h', 'v'):
            i += 1
        i += 1
    return i


USAGE = """Lima: Linux virtual machines (limactl simulator for tests)

Usage:
  limactl [command]

Commands:
  create      Create an instance of Lima
  start       Start an instance of Lima
  shell       Execute shell in Lima
  stop        Stop an instance
  delete      Delete an instance of Lima (aliases: rm, remove)
  list        List instances of Lima (alias: ls)
  copy        Copy files between host and guest (alias: cp)
  info        Show diagnostic information
  clone       Clone an instance of Lima
  template    Lima template management (EXPERIMENTAL) (alias: tmpl)
  validate    Validate YAML templates

Flags:
      --debug               debug mode
  -h, --help                help for limactl
      --log-format string   Set the logging format [text, json] (default "text")
      --log-level string    Set the logging level [trace, debug, info, warn, error]
      --tty                 Enable TUI interactions such as opening an editor. Defaults to true when stdout is a terminal. Set to false for automation.
  -v, --version             version for limactl
  -y, --yes                 Alias of --tty=false

Simulator: see tests/lima-sim/README.md
"""


def apply_globals(o):
    fmt = o.get('log-format')
    if fmt is not None:
        if fmt not in ('text', 'json'):
            raise Fatal('unsupported log-format: %s' % gq(fmt))
        L.fmt = 'json' if fmt == 'json' else ('tty' if isatty(2) else 'text')
    lvl = o.get('log-level')
    if lvl is not None:
        if lvl.lower() not in LEVELS:
            raise Fatal('not a valid logrus Level: %s' % go_quote(lvl))
        L.level = LEVELS[lvl.lower()]
    if o.get('debug'):
        L.level = max(L.level, DEBUG)
    if 'tty' in o and 'yes' in o:
        raise Fatal('cannot use both --tty and --yes flags')
    if 'yes' in o:
        runtime.TTY.value = not o['yes']
    elif 'tty' in o:
        runtime.TTY.value = o['tty']
    else:
        runtime.TTY.value = isatty(1)


def prescan_log_format(argv):
    for i, a in enumerate(argv):
        if a == '--':
            break
        if a == '--log-format=json' or (a == '--log-format' and argv[i + 1:i + 2] == ['json']):
            L.fmt = 'json'


def dispatch(argv):
    prescan_log_format(argv)
    i = find_subcommand(argv)
    if i >= len(argv) or argv[i] == '--':
        spec = dict(GLOBAL_FLAGS, version='bool')
        o, pos = parse_flags(argv[:i], spec, dict(GLOBAL_SHORT, v='version'), True)
        apply_globals(o)
        if o.get('version'):
            fileio.write_all(1, ('limactl version %s\n' % runtime.LIMA_VERSION).encode())
            return 0
        fileio.write_all(1, USAGE.encode())
        return 0
    sub = argv[i]
    if sub == 'help':
        fileio.write_all(1, USAGE.encode())
        return 0
    canon = ALIASES.get(sub, sub)
    if canon not in COMMANDS:
        raise Fatal('unknown command %s for %s' % (go_quote(sub), go_quote('limactl')))
    flags, short, interspersed, use, fn = COMMANDS[canon]
    spec = dict(GLOBAL_FLAGS)
    spec.update(flags)
    sh = dict(GLOBAL_SHORT)
    sh.update(short)
    err = None
    try:
        o, pos = parse_flags(argv[:i] + argv[i + 1:], spec, sh, interspersed)
        apply_globals(o)
    except Fatal as e:
        err, o, pos = e, {}, []
    if o.get('help'):
        fileio.write_all(1, ('Usage:\n  limactl %s\n\nSimulator: see tests/lima-sim/README.md\n' % use).encode())
        return 0
    n = faults.count(canon)
    if err is not None:
        raise err
    faults.arm(canon, n, ALIASES)
    if canon == 'shell':
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, lambda *_: os._exit(255))
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    return command_fn(fn)(o, pos)


def main(launcher=None):
    if launcher:
        runtime.SCRIPT = launcher
    argv = sys.argv[1:]
    if argv[:1] == ['hostagent']:
        from . import hostagent
        return hostagent.hostagent_main(argv[1:])
    faults.log_invocation(argv)
    if os.environ.get('LIMA_SIM_REFUSE_ROOT', '') not in ('', '0', 'false') and os.geteuid() == 0 \
            and argv[:1] != ['generate-doc']:
        os.write(2, b'limactl: must not run as the root user\n')
        return 1
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        return dispatch(argv)
    except ExitCode as e:
        return e.code
    except ArgsError as e:
        log(FATAL, args_message(e))
        return 1
    except Fatal as e:
        log(FATAL, str(e))
        return 1
