"""Reading YAML: PyYAML when it is installed, else a reader of top-level
scalars; and the docker/go-units byte sizes Lima uses."""

import os
import sys

from .errors import Fatal


_YAML = None


def yaml_mod():
    global _YAML
    if _YAML is None:
        _YAML = False
        if os.environ.get('LIMA_SIM_NO_YAML') != '1':
            for p in ('/usr/lib/python3/dist-packages',
                      '/usr/local/lib/python3.%d/dist-packages' % sys.version_info[1]):
                if p not in sys.path and os.path.isdir(p):
                    sys.path.append(p)
            try:
                import yaml
                _YAML = yaml
            except ImportError:
                pass
    return _YAML


def loads_strictly(text):
    """Whether TEXT loads as Lima's strict YAML does: a mapping key given
    twice is an error there, where PyYAML keeps the last. Without PyYAML
    the simulator cannot tell, and says it loads."""
    y = yaml_mod()
    if not y:
        return True

    class Strict(y.SafeLoader):
        pass

    def mapping(loader, node, deep=False):
        seen = set()
        for k, _ in node.value:
            key = loader.construct_object(k, deep=deep)
            if key in seen:
                raise y.YAMLError('mapping key %r already defined' % (key,))
            seen.add(key)
        return y.SafeLoader.construct_mapping(loader, node, deep)
    Strict.add_constructor(y.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    try:
        y.load(text, Loader=Strict)
    except y.YAMLError:
        return False
    return True


def _scalar(v):
    if v in ('true', 'True', 'TRUE'):
        return True
    if v in ('false', 'False', 'FALSE'):
        return False
    if v in ('null', 'Null', 'NULL', '~'):
        return None
    try:
        return int(v)
    except ValueError:
        pass
    try:
        return float(v)
    except ValueError:
        return v


def mini_yaml(text):
    """Top-level `key: scalar` pairs only."""
    out = {}
    for line in text.splitlines():
        if not line or line[0] in ' \t#-.':
            continue
        key, sep, val = line.partition(':')
        if not sep:
            continue
        key = key.strip().strip('"\'')
        val = val.strip()
        if val[:1] in ('"', "'"):
            end = val.find(val[0], 1)
            out[key] = val[1:end] if end > 0 else val[1:]
            continue
        cut = val.find(' #')
        if cut >= 0:
            val = val[:cut].rstrip()
        if val.startswith('#'):
            val = ''
        if val in ('', '|', '>', '|-', '>-'):
            continue
        out[key] = _scalar(val)
    return out


def parse_yaml(text, comment='main file `lima.yaml`'):
    """The mapping of a YAML document; COMMENT names it in errors the way
    Lima's limayaml.Unmarshal does ("main file `PATH`", or a locator)."""
    y = yaml_mod()
    if not y:
        return mini_yaml(text)
    loader = getattr(y, 'CSafeLoader', None) or y.SafeLoader
    try:
        data = y.load(text, Loader=loader)
    except y.YAMLError as e:
        raise Fatal('failed to unmarshal YAML (%s): %s' % (comment, str(e).replace('\n', ' ')))
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise Fatal('failed to unmarshal YAML (%s): expected a mapping at the top level' % comment)
    return data


def ram_in_bytes(v):
    """docker/go-units RAMInBytes (binary units)."""
    if isinstance(v, bool):
        raise ValueError(v)
    if isinstance(v, (int, float)):
        return int(v)
    s = str(v).strip()
    i = 0
    while i < len(s) and (s[i].isdigit() or s[i] == '.'):
        i += 1
    num, unit = s[:i], s[i:].strip().lower()
    if not num:
        raise ValueError("invalid size: '%s'" % v)
    mult = {'': 1, 'b': 1}
    for k, p in (('k', 1), ('m', 2), ('g', 3), ('t', 4), ('p', 5)):
        for suffix in (k, k + 'b', k + 'i', k + 'ib'):
            mult[suffix] = 1024 ** p
    if unit not in mult:
        raise ValueError("invalid size: '%s'" % v)
    return int(float(num) * mult[unit])


def bytes_size(n):
    """docker/go-units BytesSize."""
    units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB']
    f = float(n)
    i = 0
    while f >= 1024 and i < len(units) - 1:
        f /= 1024
        i += 1
    return '%s%s' % (('%.4g' % f), units[i])


def read_top_level(d):
    """Cheap read of lima.yaml's top-level scalars (no PyYAML)."""
    try:
        with open(os.path.join(d, 'lima.yaml'), 'rb') as f:
            return mini_yaml(f.read().decode('utf-8', 'surrogateescape'))
    except OSError:
        return {}
