"""`template copy` and `validate` (cmd/limactl/template.go)."""

import os

from .errors import ArgsError, Fatal
from .quoting import go_quote, gq
from .logrus import INFO, log
from . import fileio, runtime, faults, names, limayaml, guestfs, embed


SUBCOMMANDS = ('copy', 'validate', 'yq', 'url')


def _read(locator):
    data, name, _, absloc = limayaml.read_locator(locator)
    if not data:
        raise Fatal("don't know how to interpret %s as a template locator" % gq(locator))
    return data.decode('utf-8', 'surrogateescape'), name, absloc


def template_copy(o, args):
    if not 1 <= len(args) <= 2:
        raise ArgsError('template copy', 'accepts between 1 and 2 arg(s), received %d' % len(args))
    source = args[0]
    target = args[1] if len(args) > 1 else '-'
    if o.get('fill'):
        raise Fatal('template copy --fill is not supported by the limactl simulator')
    embed_all = bool(o.get('embed-all'))
    do_embed = embed_all or bool(o.get('embed'))
    if do_embed and o.get('verbatim'):
        raise Fatal('--verbatim cannot be used with any of --embed, --embed-all, or --fill')
    text, _, absloc = _read(source)
    if not o.get('verbatim'):
        text = embed.embed(text, absloc, embed_all) if do_embed else \
            embed.use_abs_locators(text, absloc, absloc)
    data = text.encode('utf-8', 'surrogateescape')
    if faults.FAULT.die:
        faults.die_now()               # LIMA_SIM_DIE=template: before any output
    if target == '-':
        fileio.write_all(1, data)
        return 0
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
    try:
        fileio.write_all(fd, data)
    finally:
        os.close(fd)
    return 0


def cmd_validate(o, args, cmd='validate'):
    if not args:
        raise ArgsError(cmd, 'requires at least 1 arg(s), only received 0')
    if o.get('fill'):
        raise Fatal('validate --fill is not supported by the limactl simulator')
    for arg in args:
        text, name, absloc = _read(arg)
        if not name:
            raise Fatal("can't determine instance name from template locator %s" % gq(arg))
        names.validate_name(name)
        text = embed.embed(text, absloc, True)
        path = os.path.join(runtime.lima_home(), name + '.yaml')
        try:
            limayaml.validate_config(text, 'main file %s' % gq(path), guestfs.template_data(name))
        except limayaml.Invalid as e:
            raise Fatal('failed to validate YAML file %s: %s' % (gq(arg), e))
        log(INFO, '%s: OK' % gq(arg))
    return 0


TEMPLATE_USAGE = """Lima template management (EXPERIMENTAL)

Usage:
  limactl template [command]

Aliases:
  template, tmpl

Available Commands:
  copy        Copy template
  validate    Validate YAML templates

Simulator: see tests/lima-sim/README.md
"""


def cmd_template(o, args):
    if not args:
        fileio.write_all(1, TEMPLATE_USAGE.encode())
        return 0
    if args[0] not in SUBCOMMANDS:
        raise Fatal('unknown command %s for %s' % (go_quote(args[0]), go_quote('limactl template')))
    sub, rest = args[0], args[1:]
    if sub == 'copy':
        return template_copy(o, rest)
    if sub == 'validate':
        return cmd_validate(o, rest, 'template validate')
    raise Fatal('limactl template %s is not supported by the limactl simulator' % sub)
