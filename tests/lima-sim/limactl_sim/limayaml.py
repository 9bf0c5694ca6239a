"""lima.yaml: the built-in templates, reading a template locator, the edit
flags of create/start/clone (--cpus, --set, ...), validation, and the
fields the hostagent reads (user.passwordlessSudo, provision)."""

import os
import sys

from .errors import Fatal
from .quoting import ALNUM, go_quote, gq, json_str
from .logrus import WARN, log
from . import fileio, runtime, yamlio, gotemplate


def host_arch():
    m = os.uname().machine
    return {'arm64': 'aarch64', 'amd64': 'x86_64', 'armv8l': 'armv7l'}.get(m, m)


def default_resources():
    cpus = min(4, os.cpu_count() or 1)
    try:
        mem = os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2
    except (ValueError, OSError):
        mem = 4 << 30
    return cpus, min(4 << 30, mem), 100 << 30


TEMPLATES = ('default', 'alpine', 'archlinux', 'debian', 'docker', 'docker-rootful',
             'fedora', 'ubuntu', 'ubuntu-lts', '_images/ubuntu', '_images/ubuntu-lts',
             '_images/debian', '_default/mounts')


def builtin_template(loc):
    if loc not in TEMPLATES:
        return None
    text = ('# Built-in template %s of the limactl simulator (stand-in for Lima\'s).\n'
            'minimumLimaVersion: 2.0.0\n'
            'vmType: qemu\n'
            'images:\n'
            '- location: "https://cloud-images.ubuntu.com/releases/noble/release/'
            'ubuntu-24.04-server-cloudimg-amd64.img"\n'
            '  arch: "x86_64"\n'
            '- location: "https://cloud-images.ubuntu.com/releases/noble/release/'
            'ubuntu-24.04-server-cloudimg-arm64.img"\n'
            '  arch: "aarch64"\n' % gq('template:' + loc))
    if not loc.startswith('_images/'):
        text += 'mounts:\n- location: "~"\n'
    if loc.startswith('docker'):
        text += 'containerd:\n  system: false\n  user: false\n'
    return text.encode()


def fmt_float(v):
    s = ('%.6f' % v).rstrip('0').rstrip('.')
    return s or '0'


def _set_top_level(text, key, value):
    """Replace (or append) the top-level KEY of a YAML document textually."""
    lines = text.splitlines(True)
    out = []
    i = 0
    done = False
    while i < len(lines):
        ln = lines[i]
        k, sep, _ = ln.partition(':')
        if not done and sep and ln[:1] not in (' ', '\t', '#', '-') and k.strip().strip('"\'') == key:
            i += 1
            while i < len(lines):
                nxt = lines[i]
                if nxt.startswith('---') or nxt.startswith('...'):
                    break
                if nxt.strip() == '' or nxt[:1] in (' ', '\t') or nxt.startswith('- ') or nxt.rstrip() == '-':
                    i += 1
                    continue
                break
            out.append('%s: %s\n' % (key, value))
            done = True
            continue
        out.append(ln)
        i += 1
    if not done:
        if out and not out[-1].endswith('\n'):
            out[-1] += '\n'
        out.append('%s: %s\n' % (key, value))
    return ''.join(out)


def _parse_set(expr):
    path, sep, value = expr.partition('=')
    path = path.strip()
    if not sep or path.endswith(('+', '|', '-', '*', '/')) or not path.startswith('.'):
        raise Fatal('--set %s: the limactl simulator only supports `.path = value` expressions' % gq(expr))
    keys = [k for k in path[1:].split('.')]
    if not keys or any(not k or not all(c in ALNUM or c in '_-' for c in k) for k in keys):
        raise Fatal('--set %s: the limactl simulator only supports `.path = value` expressions' % gq(expr))
    return keys, value.strip()


UNSUPPORTED_EDIT_FLAGS = ('param', 'mount', 'mount-only', 'mount-type', 'mount-writable',
                          'mount-inotify', 'network', 'port-forward', 'dns', 'video',
                          'rosetta', 'nested-virt', 'audio-device', 'audio-interface')
NEW_ONLY_FLAGS = ('plain', 'arch', 'containerd')


def apply_edits(text, o, new):
    for f in UNSUPPORTED_EDIT_FLAGS:
        if f in o:
            raise Fatal('flag --%s is not supported by the limactl simulator' % f)
    edits = []
    if 'cpus' in o:
        if o['cpus'] < 0:
            raise Fatal('cpus must be a non-negative number, got %d' % o['cpus'])
        edits.append((['cpus'], str(o['cpus'])))
    if 'memory' in o:
        edits.append((['memory'], '"%sGiB"' % fmt_float(o['memory'])))
    if o.get('mount-none'):
        edits.append((['mounts'], 'null'))
    if 'vm-type' in o:
        edits.append((['vmType'], json_str(o['vm-type'])))
    if 'ssh-port' in o:
        edits.append((['ssh', 'localPort'], str(o['ssh-port'])))
    for expr in o.get('set', []):
        edits.append(_parse_set(expr))
    if 'disk' in o:
        edits.append((['disk'], '"%sGiB"' % fmt_float(o['disk'])))
    if 'shell' in o:
        edits.append((['user', 'shell'], json_str(o['shell'])))
    for f in NEW_ONLY_FLAGS:
        if f not in o:
            continue
        if not new:
            log(WARN, 'Ignoring %s flag for an existing instance' % gq('--' + f))
            continue
        if f == 'plain':
            if o['plain']:
                edits.append((['plain'], 'true'))
        elif f == 'arch':
            edits.append((['arch'], json_str(o['arch'])))
        else:
            c = o['containerd']
            m = {'user': (False, True), 'system': (True, False), 'user+system': (True, True),
                 'system+user': (True, True), 'none': (False, False)}.get(c)
            if m is None:
                raise Fatal('unknown containerd mode %s' % gq(c))
            on = ['true' if x else 'false' for x in m]
            edits.append((['containerd'], '{system: %s, user: %s}' % (on[0], on[1])))
    if not edits:
        return text
    if all(len(p) == 1 for p, _ in edits):
        for p, v in edits:
            text = _set_top_level(text, p[0], v)
        return text
    y = yamlio.yaml_mod()
    if not y:
        raise Fatal('nested edits need PyYAML (python3-yaml) in the limactl simulator')
    data = yamlio.parse_yaml(text)
    for p, v in edits:
        node = data
        for k in p[:-1]:
            if not isinstance(node.get(k), dict):
                node[k] = {}
            node = node[k]
        node[p[-1]] = y.safe_load(v) if v else None
    return y.safe_dump(data, default_flow_style=False, sort_keys=False)


# The top-level keys of Lima 2.2's LimaYAML (pkg/limatype/lima_yaml.go).
LIMA_YAML_KEYS = frozenset((
    'base minimumLimaVersion vmType vmOpts os arch images cpuType cpus memory disk '
    'additionalDisks mounts mountTypesUnsupported mountType mountInotify ssh firmware '
    'audio video provision upgradePackages containerd guestInstallPrefix probes '
    'portForwards copyToHost message networks env param dns hostResolver '
    'propagateProxyEnv caCerts rosetta plain timezone nestedVirtualization user tpm '
    'osOpts').split())
ARCH_TYPES = ('x86_64', 'aarch64', 'armv7l', 'ppc64le', 'riscv64', 's390x')


def strict_warnings(text, cfg, comment):
    """Lima's Unmarshal warns, without failing, about keys its LimaYAML does
    not have.  Only top-level keys are checked here, and the warning has
    go-yaml's position but not its excerpt of the file."""
    for key in cfg:
        if key in LIMA_YAML_KEYS:
            continue
        line = 1
        for i, ln in enumerate(text.splitlines()):
            if ln.split(':', 1)[0].strip().strip('"\'') == key and ln[:1] not in ' \t#-':
                line = i + 1
                break
        log(WARN, 'Non-strict YAML detected; please check for typos',
            {'comment': comment, 'error': '[%d:1] unknown field %s' % (line, json_str(str(key)))})


def semver(s):
    """versionutil.Parse ("v" and a "-suffix" dropped, then coreos/go-semver):
    (version tuple, None) or (None, go-semver's error)."""
    s = str(s)
    if s.startswith('v'):
        s = s[1:]
    s = s.split('-', 1)[0]
    if s.endswith('.m'):
        s = s[:-2]
    parts = s.split('+', 1)[0].split('.', 2)
    if len(parts) != 3:
        return None, '%s is not in dotted-tri format' % s
    for p in parts:
        if not p.lstrip('+-').isdigit():
            return None, 'strconv.ParseInt: parsing %s: invalid syntax' % go_quote(p)
    return tuple(int(p) for p in parts), None


def version_at_least(minimum):
    """versionutil.GreaterEqual(version.Version, MINIMUM); an unparsable
    version on either side passes, as in Lima."""
    have, want = semver(runtime.VERSION)[0], semver(minimum)[0]
    return have is None or want is None or have >= want


class Invalid(Fatal):
    """lima.yaml loaded but did not pass Lima's Validate."""


def validation_errors(cfg):
    """The subset of Lima's limayaml.Validate that the simulator checks, in
    its order, each with Lima's message."""
    errs = []
    if cfg.get('base'):
        # Lima embeds the bases at create: an instance's lima.yaml has none.
        errs.append('field `base` must be empty for YAML validation')
    mv = cfg.get('minimumLimaVersion')
    if mv is not None:
        why = semver(mv)[1]
        if why:
            errs.append('field `minimumLimaVersion` must be a semvar value, got %s: %s' % (gq(mv), why))
        if not version_at_least(mv):
            errs.append('template requires Lima version %s; this is only %s' % (gq(mv), gq(runtime.VERSION)))
    arch = cfg.get('arch')
    if arch not in (None, '', 'default') and \
            {'amd64': 'x86_64', 'arm64': 'aarch64'}.get(arch, arch) not in ARCH_TYPES:
        errs.append('field `arch` must be one of [%s]; got %s' % (' '.join(ARCH_TYPES), gq(arch)))
    user = cfg.get('user') if isinstance(cfg.get('user'), dict) else {}
    shell = user.get('shell')
    if isinstance(shell, str) and not shell.startswith('/'):
        errs.append('field `user.shell` must be an absolute path, got %s' % gq(shell))
    # Not checked: `images` must be set.  Test fixtures make instances
    # without images (README.md, "Checked against Lima 2.2").
    if cfg.get('cpus') == 0 and not isinstance(cfg.get('cpus'), bool):
        errs.append('field `cpus` must be set')
    for k in ('memory', 'disk'):
        if cfg.get(k) is not None:
            try:
                yamlio.ram_in_bytes(cfg[k])
            except ValueError as e:
                errs.append('field %s has an invalid value: %s' % (gq(k), e))
    param = cfg.get('param') if isinstance(cfg.get('param'), dict) else {}
    for k in sorted(param, key=str):
        k = str(k)
        if not (k[:1].isascii() and k[:1].isalpha() and all(c.isascii() and (c.isalnum() or c == '_') for c in k)):
            errs.append('param %s name does not match regex %s' % (gq(k), gq('^[a-zA-Z][a-zA-Z0-9_]*$')))
    if user.get('passwordlessSudo') is False and cfg.get('plain') is not True:
        errs.append('`user.passwordlessSudo: false` requires `plain: true`')
    return errs


def _param_strings(cfg):
    """The strings of lima.yaml in which Lima looks for a param's use."""
    out = []

    def add(*vals):
        out.extend(v for v in vals if isinstance(v, str))
    for key, fields in (('provision', ('script', 'content', 'expression', 'owner', 'path', 'permissions')),
                        ('probes', ('script',)), ('copyToHost', ('guest', 'host')),
                        ('portForwards', ('guestSocket', 'hostSocket')), ('mounts', ('location', 'mountPoint'))):
        for e in cfg.get(key) or []:
            if isinstance(e, dict):
                add(*(e.get(f) for f in fields))
    return out


def param_error(cfg):
    """Lima's validateParamIsUsed (a load error, before any template is
    expanded): every `param` key must be used as {{.Param.KEY}} or
    $PARAM_KEY somewhere Lima expands or exports it."""
    param = cfg.get('param')
    if not isinstance(param, dict) or not param:
        return None
    import re
    texts = _param_strings(cfg)
    for key in param:
        key = str(key)
        if key == 'internal_netplanOptional':      # read by Lima's network-config
            continue
        try:
            rx = re.compile(r'{{[^}]*\.Param\.' + key + r'[^}]*}}|\bPARAM_' + key + r'\b')
        except re.error as e:
            return 'field to compile regexp for key %s: %s' % (gq(key), e)
        if not any(rx.search(t) for t in texts):
            return ('field `param` key %s is not used in any provision, probe, copyToHost, or portForward'
                    % gq(key))
    return None


def expand_guest_template(text, data, what):
    """Lima's executeGuestTemplate of one field: the expansion, or, when
    Go's text/template would not parse or execute it, TEXT as it is with
    Lima's warning.  An action the simulator does not implement is fatal."""
    try:
        return gotemplate.execute(text, data)
    except (gotemplate.ParseError, gotemplate.ExecError) as e:
        log(WARN, "Couldn't process %s %s as a template" % (what, gq(text)), {'error': str(e)})
        return text


def filled_provision(cfg, data):
    """FillDefault's provision entries (mode defaults to system; scripts
    expanded as guest templates), then Validate's warning about scripts
    that use the LIMA_CIDATA variables."""
    data = gotemplate.with_param(data, cfg.get('param'))
    out = []
    for p in cfg.get('provision') or []:
        if not isinstance(p, dict):
            out.append(p)
            continue
        p = dict(p)
        p['mode'] = p.get('mode') or 'system'
        if isinstance(p.get('script'), str) and p['script']:
            p['script'] = expand_guest_template(p['script'], data, 'provisioning script')
        out.append(p)
    for p in out:
        if isinstance(p, dict) and isinstance(p.get('script'), str) and 'LIMA_CIDATA' in p['script']:
            log(WARN, 'provisioning scripts should not reference the LIMA_CIDATA variables')
    return out


def validate_config(text, path, data=None):
    """Lima's load and Validate of a lima.yaml (PATH names it in messages,
    as Lima's comment does): unknown keys warn, the rest is fatal.  With
    DATA (gotemplate.guest_data) the guest templates are expanded too, with
    their warnings."""
    cfg = yamlio.parse_yaml(text, path)
    strict_warnings(text, cfg, path)
    cpus = cfg.get('cpus')
    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, int)):
        raise Fatal('failed to unmarshal YAML (%s): cannot unmarshal %s into Go struct field '
                    'LimaYAML.cpus of type int' % (path, type(cpus).__name__))
    err = param_error(cfg)
    if err:
        raise Fatal(err)
    if data is not None:
        filled_provision(cfg, data)
    errs = validation_errors(cfg)
    if errs:
        raise Invalid('\n'.join(errs))
    vt = cfg.get('vmType')
    if vt not in (None, '', runtime.VM_TYPE):
        raise Fatal('failed to create driver instance: unknown or unsupported VM type: %s' % vt)
    return cfg


def read_locator(arg):
    """Lima's limatmpl.Read of a template locator: (yaml bytes, the name
    derived from it or None, the locator that names it in YAML messages or
    None, the absolute locator)."""
    if arg == '-':
        return sys.stdin.buffer.read(), None, arg, arg
    if arg.startswith('template:'):
        loc = arg[len('template:'):]
        if loc.startswith('//'):
            loc = loc[2:]
            log(WARN, 'Template locator %s should be written %s since Lima v2.0'
                % (gq(arg), gq('template:' + loc)))
        data = builtin_template(loc)
        if data is None:
            raise Fatal('template %s not found' % gq(loc + '.yaml'))
        return data, loc.rsplit('/', 1)[-1], None, 'template:' + loc
    if arg.startswith('http://') or arg.startswith('https://'):
        raise Fatal('cannot fetch %s: the limactl simulator has no network access' % gq(arg))
    # Lima makes a file locator absolute before it reads it (UseAbsLocators).
    path = os.path.abspath(arg[len('file://'):] if arg.startswith('file://') else arg)
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except FileNotFoundError:
        raise Fatal('open %s: no such file or directory' % path)
    except OSError as e:
        raise Fatal('open %s: %s' % (path, (e.strerror or str(e)).lower()))
    base = os.path.basename(path).lower()
    for suffix in ('.yaml', '.yml'):
        if base.endswith(suffix):
            base = base[:-len(suffix)]
    return data, base, path, path


def read_template(arg, name_flag):
    """Returns (yaml bytes, name derived from the locator or None, the
    locator that names the template in YAML messages or None, the
    absolute locator)."""
    if arg == '-' and not name_flag:
        raise Fatal('must pass instance name with --name when reading template from stdin')
    return read_locator(arg)


def has_base(text):
    """Whether lima.yaml's text has a top-level `base` key (read without
    PyYAML: shell and copy are on the fast path)."""
    for ln in text.splitlines():
        if ln[:1] not in ('', ' ', '\t', '#', '-') and ln.split(':', 1)[0].strip().strip('"\'') == 'base':
            return True
    return False


def passwordless_sudo(text):
    """Lima's `user.passwordlessSudo` (default true)."""
    cfg = {}
    if yamlio.yaml_mod():
        try:
            cfg = yamlio.parse_yaml(text)
        except Fatal:
            cfg = {}
        u = cfg.get('user') if isinstance(cfg, dict) else None
        v = u.get('passwordlessSudo') if isinstance(u, dict) else None
        return v is not False
    import re
    return not re.search(r'(?m)^user:\s*\n(?:[ \t]+.*\n)*?[ \t]+passwordlessSudo:\s*false\s*$', text)


def plain(text):
    """lima.yaml's `plain` (default false)."""
    return yamlio.mini_yaml(text).get('plain') is True


def user_shell(d):
    """lima.yaml's user.shell in instance directory D, or None; read without
    PyYAML unless the file mentions a shell (shell is on the fast path)."""
    try:
        with open(os.path.join(d, 'lima.yaml'), 'rb') as f:
            text = f.read().decode('utf-8', 'surrogateescape')
    except OSError:
        return None
    if 'shell' not in text:
        return None
    try:
        cfg = yamlio.parse_yaml(text)
    except Fatal:
        return None
    u = cfg.get('user') if isinstance(cfg, dict) else None
    v = u.get('shell') if isinstance(u, dict) else None
    return v if isinstance(v, str) and v else None


def provision_entries(text, data):
    """[(mode, script)] of lima.yaml's `provision:` list, the scripts
    expanded as guest templates with DATA (whose Param is lima.yaml's)."""
    if yamlio.yaml_mod():
        try:
            cfg = yamlio.parse_yaml(text)
        except Fatal:
            return []
        return [(str(p['mode']), p['script']) for p in filled_provision(cfg, data)
                if isinstance(p, dict) and isinstance(p.get('script'), str)]
    # Without PyYAML: `- mode: M` / `script: |` items with literal blocks.
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines) and lines[i].rstrip() != 'provision:':
        i += 1
    i += 1
    cur = None
    while i < len(lines):
        ln = lines[i]
        if ln and not ln[0].isspace() and not ln.startswith('-'):
            break
        st = ln.strip()
        if st.startswith('- '):
            cur = {'mode': 'system'}
            out.append(cur)
            st = st[2:].strip()
        key, _, val = st.partition(':')
        val = val.strip()
        if cur is not None and key == 'mode':
            cur['mode'] = val.strip('"\'')
        elif cur is not None and key == 'script' and val in ('|', '|-', '|+'):
            ind = len(ln) - len(ln.lstrip()) + (2 if ln.lstrip().startswith('- ') else 0)
            body = []
            i += 1
            while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > ind):
                body.append(lines[i])
                i += 1
            cut = min((len(b) - len(b.lstrip()) for b in body if b.strip()), default=0)
            cur['script'] = '\n'.join(b[cut:] for b in body).rstrip('\n') + '\n'
            continue
        i += 1
    return [(c['mode'], expand_guest_template(c['script'], data, 'provisioning script'))
            for c in out if 'script' in c]


def list_templates_or_drivers(o):
    if o.get('list-templates'):
        names = [t for t in TEMPLATES if not t.startswith('_')]
    else:
        names = [runtime.VM_TYPE]
    fileio.write_all(1, ''.join(n + '\n' for n in names).encode())
    return 0


EDIT_FLAGS = {'cpus': 'int', 'memory': 'float', 'disk': 'float', 'set': 'list', 'param': 'list',
              'mount': 'list', 'mount-only': 'list', 'mount-none': 'bool', 'mount-type': 'str',
              'mount-writable': 'bool', 'mount-inotify': 'bool', 'network': 'list',
              'port-forward': 'list', 'plain': 'bool', 'containerd': 'str', 'arch': 'str',
              'vm-type': 'str', 'ssh-port': 'int', 'dns': 'list', 'video': 'bool',
              'rosetta': 'bool', 'nested-virt': 'bool', 'shell': 'str', 'audio-device': 'str',
              'audio-interface': 'str', 'name': 'str', 'list-templates': 'bool',
              'list-drivers': 'bool'}
